/* SPDX-License-Identifier: MIT */
/*
 * sim_internal.h - what the simulator's files (hv/sim/) share: struct
 * fo_hv_sim and the domain, pool and armed-pair structs it holds, the
 * limits they are sized by, and the functions one file calls in another.
 * Not a public header: tests see the simulator through hv/sim/hv_sim.h,
 * the daemon through hv/hv.h (fo_hv_sim_new_for_daemon).
 */
#ifndef FO_SIM_INTERNAL_H
#define FO_SIM_INTERNAL_H

#include "hv/sim/hv_sim.h"
#include "hv/fowatch/owner.h"

#include "lib/limits.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_DOMAINS (2 * FO_MAX_PAIRS + 16) /* both members of every pair, dom0, rebuilds */
/*
 * Xen's toolstack pause count (struct domain's controller_pause_count, Xen
 * 4.17 common/domain.c): XEN_DOMCTL_pausedomain increments it, unpausedomain
 * decrements it, getdomaininfo says "paused" while it is above 0, and a new
 * domain starts at 1 (libxl unpauses it last). Unpausing at 0 is -EINVAL; a
 * pause that would take it to 255 is refused with -EOVERFLOW (the limit
 * keeps it from overflowing the domain's general pause_count). The limit and
 * its errno are from our reading of _domain_pause_by_systemcontroller, not
 * checked against the source here: what matters is that a pause is counted
 * and one unpause undoes only one pause.
 */
#define SIM_PAUSE_COUNT_MAX 255
#define SIM_MAX_GUARDS 32
#define SIM_MAX_KPAIRS 16
#define SIM_MAX_KEVENTS 64
#define SIM_MAX_POOLS 8
#define SIM_MAX_FOWATCH 64 /* Xen's default "fowatch-max" */

struct sim_fowatch;

struct sim_domain {
	bool used;
	char name[FO_DOMNAME_MAX + 1];
	fo_domid_t domid;
	enum fo_dom_state state;     /* RUNNING/PAUSED follow pause_count while alive */
	unsigned pause_count;        /* toolstack pauses not undone (see SIM_PAUSE_COUNT_MAX) */
	uint8_t handle[16];          /* Xen's domain handle (UUID): unique per instance */
	bool watched;
	bool pause_is_noop;
	uint64_t sequence;
	uint64_t boot_id;
	enum fo_hb_app_status app_status;
	bool agent_stopped; /* daemon mode: a drill told the agent to stop */
	bool port_masked;   /* beats reach the daemon only through heartbeat_look */
	bool has_page;      /* `page`: what the agent last wrote, for notify-only and polls */
	struct fo_hb_page page;
	char role[16];
	char command[32];
	int pool;                 /* index into pools[] */
	unsigned n_vcpus;
	struct fo_cpumask hard[FO_SIM_MAX_VCPUS];
	/* The Xen failover watch (fowatch.c). */
	unsigned shutdown_code;       /* Xen's SHUTDOWN_* while CRASHED, SHUTDOWN or SUSPENDED */
	uint32_t gref;                /* the ref the agent granted its page to dom0 under */
	bool granted;                 /* ... and has not ended that grant */
	uint32_t page_gen;            /* which page the agent writes: a re-grant is a new one */
	uint32_t port;                /* the agent's own event channel port (it notifies after each beat) */
	struct sim_fowatch *fowatch;  /* the watch this domain is active or standby of (Xen's d->fowatch) */
	uint64_t handed_vcpus_stop;   /* the watch's fence, handed to the toolstack: its vCPUs run until then */
	bool has_vif;                 /* fo_sim_set_vif_mac: vif 0's MAC (vif_mac) */
	uint8_t vif_mac[6];
	bool vif_mac_bad;             /* ... and it cannot be read (a malformed value) */
};

struct sim_pool {
	bool used;
	char name[FO_HV_POOL_NAME_MAX + 1];
	char sched[16];
	struct fo_cpumask cpus;
};

struct sim_fault {
	int err;
	int count;
	fo_domid_t domid;
};

/* A pair armed in the simulated module. */
struct sim_kpair {
	bool used;
	bool firing;
	uint32_t id;
	fo_domid_t active, standby;
	uint64_t timeout_ns, armed_ns, last_notify_ns, deadline_ns, notifications;
	uint64_t poll_ns, next_poll_ns; /* fo_sim_kernel_poll_pages: the active's page is read then */
};

struct fo_hv_sim {
	struct fo_hv base;
	bool kernel;
	struct fo_hv_ops kernel_ops; /* sim_ops + the module's ops (fo_sim_enable_kernel) */
	struct fo_hv_ops owner_ops;  /* the ops before + the watch as armed owner (owner.c) */
	const struct fo_hv_ops *owner_inner; /* the ops owner_ops was made from */
	struct fo_fowatch_owner *owner; /* fo_sim_enable_fowatch_owner */
	bool kernel_hold;
	bool kernel_stall;
	bool kernel_no_list; /* fo_sim_kernel_without_list */
	bool kernel_poll;    /* fo_sim_kernel_poll_pages */
	uint64_t poll_late_ns; /* fo_sim_kernel_poll_late: the next due poll waits this long */
	struct sim_kpair kpairs[SIM_MAX_KPAIRS];
	fo_domid_t reclaim[SIM_MAX_KPAIRS]; /* DISARMed actives whose channel settle() binds */
	size_t n_reclaim;
	struct fo_hv_kevent kevents[SIM_MAX_KEVENTS];
	size_t n_kevents;
	bool daemon_mode;
	char boot_note[512];   /* boot_note_write's text; "" = none (this "boot" has none) */
	struct {               /* the last state_pair (the roles the state relay would get) */
		unsigned calls;
		char pair[FO_NAME_MAX + 1];
		fo_domid_t active, standby;
		bool serving;
	} state_roles;
	uint64_t handle_seed;  /* first half of every domain handle: this simulator */
	uint64_t handles;      /* second half: domains made so far */
	uint64_t clock_ns;
	fo_domid_t next_domid;
	struct sim_domain doms[SIM_MAX_DOMAINS];
	struct sim_fault faults[FO_SIM_OP_COUNT];
	uint64_t delay_ns[FO_SIM_OP_COUNT];
	fo_domid_t vanish_domid[FO_SIM_OP_COUNT];
	bool vanish_armed[FO_SIM_OP_COUNT];
	struct fo_sim_call log[FO_SIM_LOG_MAX];
	size_t n_log;
	fo_sim_call_hook on_call; /* fo_sim_on_call */
	void *on_call_ctx;
	fo_domid_t guards[SIM_MAX_GUARDS][2];
	size_t n_guards;
	unsigned violations;
	int agent_tfd;
	bool fds_changed;
	int n_pcpus;
	struct sim_pool pools[SIM_MAX_POOLS]; /* [0] is Pool-0 */
	/* The Xen failover watch (fowatch.c). */
	bool fowatch_on;               /* fo_sim_enable_fowatch */
	bool fowatch_absent;           /* fo_sim_fowatch_absent: a stock Xen after all */
	bool fowatch_no_event;         /* fo_sim_fowatch_no_event: a series without 0012 */
	unsigned fowatch_max;          /* Xen's "fowatch-max" */
	uint64_t fowatch_quiesce_delay_ns; /* a fenced active's vCPUs stop this long after the fence */
	int fowatch_virq_fd;           /* eventfd: VIRQ_FAILOVER pending for dom0 */
	uint64_t fowatch_virqs;        /* VIRQs raised so far */
	struct sim_fowatch *fowatches; /* SIM_MAX_FOWATCH of them, allocated by fo_sim_enable_fowatch */
};

static inline struct fo_hv_sim *sim_of(struct fo_hv *hv) { return (struct fo_hv_sim *)hv; }

/* backend.c: the plain ops table (fo_sim_enable_kernel extends a copy). */
extern const struct fo_hv_ops sim_ops;
uint64_t sim_now(struct fo_hv *hv);

/* calls.c: every call's prologue (log, delay, vanish, injected failure). */
int sim_enter(struct fo_hv_sim *s, enum fo_sim_op op, fo_domid_t domid);
int sim_enter_dom(struct fo_hv_sim *s, enum fo_sim_op op, fo_domid_t domid, struct sim_domain **ret_d);
void sim_set_result(struct fo_hv_sim *s, int r);

/* domains.c: domains, Xen's counted pauses, the guarded pairs. */
struct sim_domain *sim_find_dom(struct fo_hv_sim *s, fo_domid_t domid);
struct sim_domain *sim_add_dom(struct fo_hv_sim *s, const char *name, enum fo_dom_state st);
int sim_count_pause(struct sim_domain *d);
int sim_count_unpause(struct sim_domain *d);
int sim_domctl_unpause(struct sim_domain *d);
void sim_drop_dom(struct fo_hv_sim *s, struct sim_domain *d);
void sim_check_guards(struct fo_hv_sim *s);
int sim_lookup(struct fo_hv *hv, const char *name, fo_domid_t *ret);
int sim_get_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret);
int sim_get_handle(struct fo_hv *hv, fo_domid_t domid, uint8_t ret[16]);
int sim_pause(struct fo_hv *hv, fo_domid_t domid);
int sim_unpause(struct fo_hv *hv, fo_domid_t domid);
int sim_destroy(struct fo_hv *hv, fo_domid_t domid);
int sim_create(struct fo_hv *hv, const char *config_path);

/* placement.c: pCPUs, cpupools, vCPU hard affinity. */
void sim_all_cpus(struct fo_hv_sim *s, struct fo_cpumask *m);
void sim_reset_affinity(struct fo_hv_sim *s, struct sim_domain *d);
int sim_set_affinity(struct fo_hv *hv, fo_domid_t domid, const int *pcpus, size_t n);
int sim_cpupool_ensure(struct fo_hv *hv, const char *name, const char *sched, const struct fo_cpumask *cpus,
		       char *why, size_t whylen);
int sim_cpupool_get(struct fo_hv *hv, const char *name, struct fo_hv_pool *ret);
int sim_cpupool_move(struct fo_hv *hv, fo_domid_t domid, const char *name);
int sim_get_placement(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_placement *ret);
int sim_pin_vcpu(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const struct fo_cpumask *hard);

/* agent.c: the guest agents, their pages and keys, the daemon mode's timer. */
void sim_deliver_page(struct fo_hv *hv, struct sim_domain *d);
int sim_watch_member(struct fo_hv *hv, fo_domid_t domid);
void sim_unwatch_member(struct fo_hv *hv, fo_domid_t domid);
int sim_set_role(struct fo_hv *hv, fo_domid_t domid, const char *role);
int sim_agent_command(struct fo_hv *hv, fo_domid_t domid, const char *cmd);
size_t sim_get_fds(struct fo_hv *hv, int *fds, size_t max);
bool sim_fds_changed(struct fo_hv *hv);
void sim_dispatch(struct fo_hv *hv, int fd);
void sim_heartbeat_look(struct fo_hv *hv, fo_domid_t domid);

/* kernel.c: the simulated kmod-switch. */
struct sim_kpair *sim_kpair_owning(struct fo_hv_sim *s, fo_domid_t domid);
bool sim_kernel_holds_port(struct fo_hv_sim *s, fo_domid_t domid);
void sim_kernel_notified(struct fo_hv_sim *s, fo_domid_t domid);
void sim_kernel_timers(struct fo_hv_sim *s);
void sim_kernel_page_polls(struct fo_hv *hv);

/* fowatch.c: the Xen failover watch (rt-patches/xen-4.17/0007, 0008). */
void sim_fowatch_new_dom(struct sim_domain *d);
void sim_fowatch_free(struct fo_hv_sim *s);
bool sim_dom_fence_stopped(const struct fo_hv_sim *s, const struct sim_domain *d);
bool sim_dom_still_runs(const struct fo_hv_sim *s, const struct sim_domain *d);
int sim_fowatch_may_unpause(const struct sim_domain *d);
void sim_fowatch_domain_shutdown(struct fo_hv_sim *s, struct sim_domain *d);
void sim_fowatch_domain_kill(struct fo_hv_sim *s, struct sim_domain *d);
void sim_fowatch_timers(struct fo_hv_sim *s);
/* The agent of `domid` notified its port (EVTCHNOP_send): 0012's hook. */
void sim_fowatch_notified(struct fo_hv_sim *s, fo_domid_t domid);

#endif
