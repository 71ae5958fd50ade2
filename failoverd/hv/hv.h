/* SPDX-License-Identifier: MIT */
/*
 * hv.h - the hypervisor boundary: everything failoverd asks of Xen, as a
 * table of function pointers. The core (failoverd/core) sees only this file;
 * no Xen header is ever included above this line.
 *
 * Implementations:
 *   xen/      libxenctrl (pause/unpause/getinfo/affinity/destroy), libxenstore
 *             (watches, roles, drill commands), libxengnttab + libxenevtchn
 *             (heartbeat page and event channel), libxenlight (name lookup,
 *             domain creation), libxentoollog (Xen's log lines into ours);
 *             start at xen/backend.c.
 *   sim/      in-process, deterministic virtual clock, fault injection;
 *             start at sim/backend.c, the test API is sim/hv_sim.h.
 *   kmod/hv_kmod.c  a decorator around the Xen backend: domain actions and
 *             the fenced switch through /dev/fo_switch (kmod-switch/), the
 *             rest inner.
 *
 * Conventions: actions return 0 or -errno; output parameters are ret_* and
 * untouched on failure. A domain that does not exist is -ESRCH.
 */
#ifndef FO_HV_H
#define FO_HV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../guest-heartbeat/abi/fo_heartbeat.h"
#include "../../kmod-switch/fenced_sequence.h"
#include "lib/domid.h"


enum fo_dom_state {
	FO_DOM_RUNNING = 0, /* not paused, not dead: it may execute */
	FO_DOM_PAUSED,      /* paused by the toolstack: it cannot execute */
	FO_DOM_CRASHED,     /* shut down with reason crash (kept by on_crash=preserve) */
	FO_DOM_SHUTDOWN,    /* shut down for another reason */
	FO_DOM_DYING,       /* being destroyed */
	FO_DOM_GONE,        /* no such domain */
	FO_DOM_SUSPENDED,   /* shut down for suspend (xl save, a checkpoint, a migration, Remus/COLO)
			     * and not paused by the toolstack: libxl may resume it, and then
			     * it runs. Neither dead nor fenced. Suspended and paused is PAUSED:
			     * a resume leaves the toolstack's pause in place. */
};
/* The kernel module's uapi and the shared fenced sequence use the same
 * values (kmod-switch/uapi/fo_switch.h): states cross as plain numbers. */
_Static_assert(FO_SWITCH_DOM_RUNNING == (int)FO_DOM_RUNNING && FO_SWITCH_DOM_PAUSED == (int)FO_DOM_PAUSED &&
		       FO_SWITCH_DOM_CRASHED == (int)FO_DOM_CRASHED && FO_SWITCH_DOM_SHUTDOWN == (int)FO_DOM_SHUTDOWN &&
		       FO_SWITCH_DOM_DYING == (int)FO_DOM_DYING && FO_SWITCH_DOM_GONE == (int)FO_DOM_GONE &&
		       FO_SWITCH_DOM_SUSPENDED == (int)FO_DOM_SUSPENDED,
	       "fo_switch_dom_state and fo_dom_state must agree");

const char *fo_dom_state_name(enum fo_dom_state s);

/* True when a domain in this state cannot execute guest code, nor be made
 * to by anyone but us: the fencing test. A suspended domain does not
 * execute now, but the toolstack's resume starts it again: only a pause
 * fences it. */
static inline bool fo_dom_state_is_fenced(enum fo_dom_state s)
{
	return s != FO_DOM_RUNNING && s != FO_DOM_SUSPENDED;
}

/* True when the domain is dead for good (not merely paused, nor suspended:
 * a suspend is a save or a migration, and the domain may resume). */
static inline bool fo_dom_state_is_dead(enum fo_dom_state s)
{
	return s == FO_DOM_CRASHED || s == FO_DOM_SHUTDOWN || s == FO_DOM_DYING || s == FO_DOM_GONE;
}

/*
 * Kernel-armed mode (kmod-switch's ARM): the module owns a pair's heartbeat
 * deadline and switches it itself. What the module says about an armed pair:
 */
struct fo_hv_karm {
	uint32_t pair_id;
	fo_domid_t active, standby;
	uint64_t timeout_ns;
	uint64_t armed_ns, last_notify_ns, deadline_ns; /* CLOCK_MONOTONIC */
	uint64_t notifications;                         /* since ARM */
	bool firing;                                    /* deadline passed, switch running */
};

/* How a kernel switch ended (same meaning as the module's results). */
enum fo_hv_kresult {
	FO_HV_KSWITCH_OK = 0,      /* active fenced, standby confirmed running */
	FO_HV_KSWITCH_ABORTED = 1, /* active not confirmed fenced: standby left alone (or both paused) */
	FO_HV_KSWITCH_FAILED = 2,  /* active fenced, standby could not be started */
};

/* What made an armed owner switch. The kernel module reacts to heartbeat
 * loss only; Xen's failover watch also to the active's shutdown. */
enum fo_hv_ktrigger {
	FO_HV_KTRIGGER_TIMEOUT = 0, /* no progress (notification or sequence) for the timeout */
	FO_HV_KTRIGGER_CRASH,       /* the active crashed */
	FO_HV_KTRIGGER_SHUTDOWN,    /* the active shut down (poweroff, reboot, watchdog) */
};

/* The owner switched an armed pair. Phase times are CLOCK_MONOTONIC, the
 * clock now_ns() reads (Xen's own stamps mapped onto it, within
 * clock_err_ns); 0 = phase not reached. */
struct fo_hv_kevent {
	uint32_t pair_id;
	fo_domid_t active, standby;
	const char *owner;         /* "kernel" or "hypervisor": the event's path */
	enum fo_hv_ktrigger trigger;
	enum fo_hv_kresult result;
	int error;                 /* 0 or the -errno of the switch */
	enum fo_dom_state active_state, standby_state;
	bool refenced;             /* the old active ran again and was paused once more */
	uint64_t last_notify_ns, deadline_ns, detected_ns, notifications;
	uint64_t pause_issued_ns, pause_done_ns, unpause_issued_ns, unpause_done_ns;
	uint64_t clock_err_ns;     /* bound of the stamps' mapping onto now_ns()'s clock */
};

/*
 * What the backend tells the daemon. Called from dispatch(), never from a
 * signal handler or another thread.
 */
struct fo_hv_callbacks {
	void *ctx;
	/* A heartbeat notification arrived; `page` is a private copy of the
	 * guest's page, not yet validated. */
	void (*heartbeat)(void *ctx, fo_domid_t domid, const struct fo_hb_page *page);
	/* A heartbeat channel appeared (err == 0) or was lost / refused (err < 0,
	 * reason says why, e.g. "bad grant ref"). */
	void (*agent)(void *ctx, fo_domid_t domid, int err, const char *reason);
	/* Some domain changed state (@releaseDomain / @introduceDomain fired):
	 * the daemon re-reads the state of its members. */
	void (*domains_changed)(void *ctx);
	/* A create() started earlier finished: the domain exists (err == 0) or
	 * could not be built (err < 0, reason says why). */
	void (*domain_created)(void *ctx, const char *config_path, int err, const char *reason);
	/* The kernel module switched a pair it had armed (kernel_arm below);
	 * delivered from dispatch() or kernel_poll_events(). May be NULL. */
	void (*kernel_switched)(void *ctx, const struct fo_hv_kevent *ev);
	/* A set_role() or agent_command() that had returned 0 could not be
	 * written after all: `key` is FO_HB_XS_ROLE or FO_HB_XS_CONTROL,
	 * `value` what was to be written, err < 0. Only from backends that
	 * write asynchronously (Xen); the others fail the call. May be NULL. */
	void (*write_failed)(void *ctx, fo_domid_t domid, const char *key, const char *value, int err);
};

/*
 * Placement (cpupools, vCPU hard affinity). A set of pCPUs is a bitmap as
 * wide as the configuration allows (config.c's CPU_MAX + 1).
 */
#define FO_HV_MAX_CPUS  1024
#define FO_HV_MAX_VCPUS 32   /* vCPUs of one domain that are checked */
#define FO_HV_POOL_NAME_MAX 64

struct fo_cpumask {
	uint64_t w[FO_HV_MAX_CPUS / 64];
};

static inline void fo_cpumask_set(struct fo_cpumask *m, int cpu)
{
	if (cpu >= 0 && cpu < FO_HV_MAX_CPUS)
		m->w[cpu / 64] |= 1ull << (cpu % 64);
}

static inline bool fo_cpumask_test(const struct fo_cpumask *m, int cpu)
{
	return cpu >= 0 && cpu < FO_HV_MAX_CPUS && (m->w[cpu / 64] >> (cpu % 64)) & 1;
}

bool fo_cpumask_equal(const struct fo_cpumask *a, const struct fo_cpumask *b);
bool fo_cpumask_empty(const struct fo_cpumask *m);
void fo_cpumask_from_list(struct fo_cpumask *m, const int *cpus, size_t n);
/* "2-3,6" (as xl prints it); "none" when empty. */
void fo_cpumask_format(const struct fo_cpumask *m, char *buf, size_t len);

/* A cpupool as Xen has it. */
struct fo_hv_pool {
	char name[FO_HV_POOL_NAME_MAX + 1];
	char sched[16];           /* "null", "credit", "credit2", "rtds", ... */
	struct fo_cpumask cpus;
	unsigned n_domains;
};

/* Where a domain runs. */
struct fo_hv_placement {
	char pool[FO_HV_POOL_NAME_MAX + 1]; /* name of its cpupool */
	unsigned n_vcpus;                   /* max_vcpu_id + 1 */
	struct fo_cpumask hard[FO_HV_MAX_VCPUS]; /* the first min(n_vcpus, FO_HV_MAX_VCPUS) */
};

/*
 * The state stream across hosts as the relay uses it (stream/ implements
 * it; the daemon plugs one into the other, hv/ never sees stream/). Called
 * on the relay's thread; each returns at once.
 */
struct fo_hv_state_stream {
	/* A pair served here: its active's newest valid commit when it is new
	 * (data NULL: none new) and the active's newest heartbeat cycle. */
	void (*offer)(void *ctx, const char *pair, uint64_t newest_cycle, const void *data, uint32_t len,
		      uint64_t cycle);
	/* A pair not served here: the newest state that arrived from the
	 * other host if its arrival number is above `have` (buf:
	 * FO_ST_SLOT_SIZE bytes); false: nothing newer. */
	bool (*take)(void *ctx, const char *pair, uint64_t have, void *buf, uint32_t *len, uint64_t *arrival,
		     uint64_t *cycle, uint64_t *peer_cycle);
	/* That arrival is in the pair's standby's state-in now. */
	void (*applied)(void *ctx, const char *pair, uint64_t arrival, uint64_t cycle);
};

/* State handover (libfoguest), per member, as the backend's relay sees it. */
struct fo_hv_state_info {
	bool mapped;             /* its state regions are mapped */
	uint64_t relayed;        /* commits copied into its state-in */
	uint64_t rejected;       /* relay passes that found its state-out invalid */
	uint64_t state_cycle;    /* cycle of the newest state copied into its state-in */
	/* its last takeover (it was the standby, it is the active now) */
	bool takeover;
	uint64_t takeover_ns;    /* when the relay saw it (CLOCK_MONOTONIC, now_ns()) */
	uint64_t handed_cycle;   /* the newest state its state-in held then */
	uint64_t old_last_cycle; /* the old active's last valid commit then */
	int64_t cycles_lost;     /* old_last_cycle - handed_cycle */
	/* the state stream across hosts (daemon.state_stream) */
	uint64_t streamed;       /* states from the other host written into its state-in */
	bool takeover_streamed;  /* its takeover restored a state from the other host
	                          * (old_last_cycle: that host's newest cycle known) */
};

struct fo_hv;

struct fo_hv_ops {
	const char *name;

	/* ======== Mandatory: every backend implements these ======== */

	/* The clock every phase timestamp is taken from (CLOCK_MONOTONIC, ns;
	 * virtual in the simulator). */
	uint64_t (*now_ns)(struct fo_hv *hv);

	int (*lookup)(struct fo_hv *hv, const char *name, fo_domid_t *ret_domid);
	int (*get_state)(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state);
	int (*pause)(struct fo_hv *hv, fo_domid_t domid);
	int (*unpause)(struct fo_hv *hv, fo_domid_t domid);
	int (*set_affinity)(struct fo_hv *hv, fo_domid_t domid, const int *pcpus, size_t n_pcpus);
	int (*destroy)(struct fo_hv *hv, fo_domid_t domid);
	/* Start creating a domain from an xl-style config file; the new domain
	 * runs. Asynchronous: returns 0 once started, domain_created() reports
	 * the outcome; the domain is then found by name. Building a domain
	 * takes seconds and never runs on the daemon's loop. */
	int (*create)(struct fo_hv *hv, const char *config_path);

	/* Start / stop following a member's heartbeat agent (xenstore discovery,
	 * page mapping, event-channel binding). Idempotent. */
	int (*watch_member)(struct fo_hv *hv, fo_domid_t domid);
	void (*unwatch_member)(struct fo_hv *hv, fo_domid_t domid);

	/* Publish a role ("active"/"standby") and send a drill command to the
	 * agent. Never block the loop: a backend may return 0 once the write
	 * is queued (Xen: a helper thread writes, in order per domain) and
	 * report a later failure through cb.write_failed. A role may be
	 * merged with a later one for the same domain (the latest wins);
	 * -EAGAIN: a command could not be queued (the queue is full). */
	int (*set_role)(struct fo_hv *hv, fo_domid_t domid, const char *role);
	int (*agent_command)(struct fo_hv *hv, fo_domid_t domid, const char *cmd);

	/* File descriptors the daemon must watch for readability; when one is
	 * readable the daemon calls dispatch(fd). The set may change after any
	 * call into the backend; fds_changed() says so (cleared by reading). */
	size_t (*get_fds)(struct fo_hv *hv, int *fds, size_t max);
	bool (*fds_changed)(struct fo_hv *hv);
	void (*dispatch)(struct fo_hv *hv, int fd);

	void (*free)(struct fo_hv *hv);

	/* Which switch path this backend uses, for status and events ("xenctrl",
	 * "kernel", "sim"). */
	const char *(*switch_path)(struct fo_hv *hv);

	/* ======== Optional: NULL where a backend has no such thing ======== */

	/* Optional (NULL if absent): the domain's handle (Xen's UUID), which
	 * tells a re-created domain from the one that had its name and domid. */
	int (*get_handle)(struct fo_hv *hv, fo_domid_t domid, uint8_t ret[16]);
	/* Optional (NULL: all of them): is this fd one a failover waits on
	 * (served first in every loop turn) or bookkeeping (helper results)? */
	bool (*fd_is_rt)(struct fo_hv *hv, int fd);
	/* Optional (NULL if absent): the whole fenced sequence in one call, by a
	 * backend that can do it faster than pause + getinfo + unpause + getinfo
	 * from here (the kernel module, which runs the same fenced_sequence.c).
	 * `to` is never started unless `from` is confirmed fenced. Returns 0
	 * when the sequence ran, whatever its result (*out says it, with
	 * CLOCK_MONOTONIC phase stamps); -EBUSY if the module owns the pair;
	 * other -errno if nothing was done (the caller then runs the sequence
	 * itself). */
	int (*switch_fenced)(struct fo_hv *hv, fo_domid_t from, fo_domid_t to, struct fo_fenced_outcome *out);

	/*
	 * Optional (all NULL if absent): armed mode, with an owner below the
	 * daemon: the kernel module (hv_kmod.c) or Xen's failover watch
	 * (fowatch/owner.c, patched Xen). One owner per pair: while the owner
	 * has a pair armed, it alone switches it on heartbeat loss; unpause
	 * and switch_fenced of its members answer -EBUSY. The ops keep the
	 * module's names; armed_owner() says which owner answers them.
	 *
	 * kernel_arm: hand the active's heartbeat event channel over to the
	 *   module and ARM the pair. The channel can be bound only once on
	 *   dom0's side, so the backend first gives up its own binding (the
	 *   page stays mapped and is read every poll_ms instead, so heartbeat()
	 *   keeps coming), then ARMs; on failure it binds again. -ENOENT: the
	 *   active's agent is not attached (no port yet); -EBUSY: the pair id
	 *   or a member is armed already.
	 * kernel_disarm: DISARM, and bind the channel again at the next
	 *   settle() (DISARM runs on the switch path, before the pause; a bind
	 *   is an evtchn ioctl and may start xenstore reads). 0; -ENOENT (not
	 *   armed: it fired and its event is queued, or someone else disarmed
	 *   it); -EALREADY (firing: the switch is running, its event follows).
	 * kernel_adopt: is `pair_id` armed (PAIRINFO)? If so, the module holds
	 *   the active's channel: the backend stops trying to bind it and
	 *   reads its page every poll_ms. -ENOENT if not armed. `members` are
	 *   the pair's two domains (FO_DOMID_INVALID if unknown): Xen's watch
	 *   is found by domain, not by pair id.
	 * kernel_poll_events: deliver every queued kernel event now, through
	 *   kernel_switched (a daemon that needs to know before it acts).
	 * kernel_list: every pair the module has armed, whoever armed it
	 *   (LIST): the first `max` into ret[], returns how many are armed
	 *   (may be more than max); -EOPNOTSUPP if the module predates LIST.
	 *   Optional even when the four above are there. Changes nothing: a
	 *   listed pair that nobody adopted is given up with kernel_disarm.
	 */
	int (*kernel_arm)(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			  uint32_t timeout_ms, uint32_t poll_ms);
	int (*kernel_disarm)(struct fo_hv *hv, uint32_t pair_id);
	int (*kernel_adopt)(struct fo_hv *hv, uint32_t pair_id, const fo_domid_t members[2], uint32_t poll_ms,
			    struct fo_hv_karm *ret);
	void (*kernel_poll_events)(struct fo_hv *hv);
	int (*kernel_list)(struct fo_hv *hv, struct fo_hv_karm *ret, size_t max);
	/* Optional (NULL: "kernel"): who answers the kernel_* ops, for
	 * messages, status and events: "kernel" or "hypervisor". */
	const char *(*armed_owner)(struct fo_hv *hv);
	/* Optional (NULL if absent): the grant reference of the member's
	 * heartbeat page, as its agent published it and we mapped it (what
	 * Xen's watch pins), and the agent's own (guest-side) event channel
	 * port it notifies after each beat (what Xen's watch listens to in
	 * event mode). -ENOENT: no agent attached. */
	int (*agent_page)(struct fo_hv *hv, fo_domid_t domid, uint32_t *ret_gref, uint32_t *ret_port);

	/*
	 * Optional, implemented by the Xen backend for the decorator above it:
	 * give the member's heartbeat event channel up (unbind it, keep the
	 * page mapped and read it every poll_ms), and take it back (bind it
	 * again, stop polling). *port == 0: lend the current binding and
	 * return its guest port (-ENOENT if no agent is attached); *port != 0:
	 * the module already holds that port (adoption after a restart): only
	 * stop binding it. While lent, an agent that publishes another port
	 * (it restarted) is reported through cb.agent with -ESTALE: the module
	 * holds a port that will never notify again.
	 */
	int (*lend_channel)(struct fo_hv *hv, fo_domid_t domid, uint32_t poll_ms, uint32_t *port);
	void (*reclaim_channel)(struct fo_hv *hv, fo_domid_t domid);

	/*
	 * Optional (all NULL if absent): placement. Slow (libxl, xenstore,
	 * one hypercall per vCPU): called at start, when a member appears and
	 * from the periodic check, never on the switch path.
	 *
	 * cpupool_ensure: make pool `name` exist with scheduler `sched` and
	 *   exactly `cpus`: adopt one that matches, else take the pCPUs out of
	 *   Pool-0 and create it. -EEXIST: a pool of that name differs;
	 *   -ENODEV: a pCPU does not exist; -EBUSY: a pCPU is in another pool
	 *   or cannot leave Pool-0; `why` says which and what was found.
	 * cpupool_get: the pool of that name; -ENOENT if there is none.
	 * cpupool_move: move a domain into the pool (no-op if it is there).
	 * get_placement: the domain's pool and each vCPU's hard affinity.
	 * pin_vcpu: one vCPU's hard affinity (set_affinity does them all).
	 */
	int (*cpupool_ensure)(struct fo_hv *hv, const char *name, const char *sched, const struct fo_cpumask *cpus,
			      char *why, size_t whylen);
	int (*cpupool_get)(struct fo_hv *hv, const char *name, struct fo_hv_pool *ret);
	int (*cpupool_move)(struct fo_hv *hv, fo_domid_t domid, const char *name);
	int (*get_placement)(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_placement *ret);
	int (*pin_vcpu)(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const struct fo_cpumask *hard);

	/* Optional (NULL if absent): work the backend kept off the real-time
	 * path (binding a channel the kernel module gave back). The daemon
	 * calls it after every loop turn, once the switch of that turn is done. */
	void (*settle)(struct fo_hv *hv);
	/*
	 * Optional (NULL if absent): state handover (libfoguest). The pair's
	 * roles as just published (after an arm or a switch; standby may be
	 * FO_DOMID_INVALID): from now on the backend relays the active's
	 * application state to the standby. Never on the switch path; returns
	 * at once (the Xen backend's relay thread does the work). `serving`:
	 * the active runs on this host (false after a stand-down: the pair is
	 * served from another host, whose state the state stream brings).
	 */
	void (*state_pair)(struct fo_hv *hv, const char *pair, fo_domid_t active, fo_domid_t standby,
			   bool serving);
	/* Optional: what the relay knows about a member's state handover
	 * (status, metrics); false: nothing (no regions, not a member). */
	bool (*state_info)(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_state_info *ret);
	/* Optional: the state stream across hosts (daemon.state_stream)
	 * plugged into the relay; hooks NULL unplugs it. Once, at start. */
	void (*state_stream)(struct fo_hv *hv, const struct fo_hv_state_stream *hooks, void *ctx);
	/*
	 * Optional (NULL if absent): a short note that lives exactly as long
	 * as the host's boot, outside the daemon's files and across its
	 * restarts (Xen: xenstore's /tool/failoverd/verdict-file, which only
	 * dom0 may read or write). failoverd notes there which file holds
	 * this boot's failure verdicts, so that a file deleted, or a
	 * state_file changed, is told from a first start (core/manager.c).
	 * Slow (a xenstore round trip): at start only, never on the switch
	 * path. boot_note_read: 0 and the text; -ENOENT if none was written.
	 */
	int (*boot_note_read)(struct fo_hv *hv, char *buf, size_t len);
	int (*boot_note_write)(struct fo_hv *hv, const char *text);
	/*
	 * Optional (NULL if absent): a heartbeat deadline ran out; if the
	 * backend holds the member's notifications back (a port left masked
	 * for flooding, hv/notify_flood.h), it hands over the page as it is
	 * now, through cb.heartbeat, before returning: a beat it held back is
	 * then no heartbeat loss. Otherwise nothing. On the real-time path:
	 * no allocation, no log, no xenstore.
	 */
	void (*heartbeat_look)(struct fo_hv *hv, fo_domid_t domid);
	/*
	 * Optional (NULL if absent): the MAC of a domain's vif `device` as
	 * its backend was given it (Xen: the vif backend's xenstore key
	 * `mac`), for pairs[].network's check that both members carry the
	 * service MAC. 0, -ENOENT when the domain has no such vif, or -errno.
	 * A xenstore round trip: when the roles are set, never on the switch
	 * path.
	 */
	int (*vif_mac)(struct fo_hv *hv, fo_domid_t domid, unsigned device, uint8_t ret_mac[6]);
};

/* Every backend's handle starts with this. */
struct fo_fowatch_owner;
struct fo_hv {
	const struct fo_hv_ops *ops;
	struct fo_hv_callbacks cb;
	/* Xen's failover watch as the armed owner, when this backend has it
	 * (fowatch/owner.c, fo_fowatch_install); NULL otherwise. */
	struct fo_fowatch_owner *fowatch;
};

/* Backends. */
/* The Xen backend (xen/backend.c). */
int fo_hv_xen_new(const struct fo_hv_callbacks *cb, struct fo_hv **ret);
/* Make Xen's failover watch (our patched hypervisor) the armed owner of
 * pairs, its timer on pCPU `cpu`, in event mode where Xen has it, else
 * reading the sequence every `poll_us` (0: the default,
 * hv/fowatch/owner.h): probes the hypervisor (-ENOSYS: a Xen without the
 * watch), binds VIRQ_FAILOVER. On failure `why` says what. */
int fo_hv_xen_enable_fowatch(struct fo_hv *hv, uint16_t cpu, uint32_t poll_us, char *why, size_t whylen);
/* sim/hv_sim.h declares the simulator's test API; this is its daemon entry. */
int fo_hv_sim_new_for_daemon(const struct fo_hv_callbacks *cb, struct fo_hv **ret);
/* The kernel-module fast path (kmod/hv_kmod.c): wraps `inner` so that get_state,
 * pause, unpause and switch_fenced go through `device` (NULL:
 * /dev/fo_switch) and everything else to `inner`, with inner's callbacks.
 * On success *ret owns `inner` (fo_hv_free frees both). On failure `inner`
 * is untouched and still the caller's: -ENOENT (module not loaded),
 * -EACCES, -ENOTTY or -EPROTO (not the fo_switch device). */
int fo_hv_kmod_wrap(struct fo_hv *inner, const char *device, struct fo_hv **ret);

static inline void fo_hv_free(struct fo_hv *hv)
{
	if (hv)
		hv->ops->free(hv);
}

#endif
