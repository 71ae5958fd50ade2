/* SPDX-License-Identifier: MIT */
/*
 * hv_sim.h - the simulated hypervisor, for unit tests of our own logic and
 * for trying failoverd and failoverctl on a machine without Xen
 * (`failoverd --backend sim`). It never replaces a test on real Xen.
 *
 * In test mode the clock is virtual: it moves only when the test advances
 * it or when a call is told to be slow. Any call can be told to fail.
 */
#ifndef FO_HV_SIM_H
#define FO_HV_SIM_H

#include "hv/hv.h"
#include "../../../rt-patches/abi/xen_failover_watch.h"

enum fo_sim_op {
	FO_SIM_LOOKUP = 0,
	FO_SIM_GET_STATE,
	FO_SIM_PAUSE,
	FO_SIM_UNPAUSE,
	FO_SIM_SET_AFFINITY,
	FO_SIM_DESTROY,
	FO_SIM_CREATE,
	FO_SIM_SET_ROLE,
	FO_SIM_AGENT_COMMAND,
	FO_SIM_KERNEL_ARM,    /* the simulated kmod-switch (fo_sim_enable_kernel) */
	FO_SIM_KERNEL_DISARM,
	FO_SIM_KERNEL_SWITCH, /* logged when the simulated module switches a pair itself */
	FO_SIM_CPUPOOL_ENSURE, /* placement (cpupools, vCPU hard affinity) */
	FO_SIM_CPUPOOL_GET,
	FO_SIM_CPUPOOL_MOVE,
	FO_SIM_GET_PLACEMENT,
	FO_SIM_PIN_VCPU,
	FO_SIM_WATCH_MEMBER,   /* xenstore watch + key reads on Xen: never on the switch path */
	FO_SIM_UNWATCH_MEMBER, /* xenstore unwatch + unmap + unbind on Xen: likewise */
	FO_SIM_GET_HANDLE,
	FO_SIM_RECLAIM,        /* binding a member's channel again after DISARM (hv_kmod.c) */
	FO_SIM_FOWATCH,        /* XEN_DOMCTL_failover_watch (fo_sim_fowatch_domctl), any op */
	FO_SIM_OP_COUNT
};

#define FO_SIM_ANY_DOMAIN ((fo_domid_t)-1)
#define FO_SIM_LOG_MAX 65536

struct fo_sim_call {
	enum fo_sim_op op;
	fo_domid_t domid;
	uint64_t at_ns;
	int result;
};

/* Test mode: virtual clock starting at 1 s, no domains. */
int fo_hv_sim_new(const struct fo_hv_callbacks *cb, struct fo_hv **ret);

fo_domid_t fo_sim_add_domain(struct fo_hv *hv, const char *name, enum fo_dom_state state);
enum fo_dom_state fo_sim_state(struct fo_hv *hv, fo_domid_t domid);
/* Change a domain behind the daemon's back; `notify` fires domains_changed
 * (as xenstore's @releaseDomain would). */
void fo_sim_set_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state state, bool notify);

/*
 * Pause counting, as Xen's toolstack pause count: every pause (ours, the
 * module's, a third party's) adds one, every unpause takes one, the domain
 * runs only at 0; unpause at 0 is -EINVAL, a 255th pause -EOVERFLOW. A
 * domain added PAUSED starts at 1. fo_sim_set_state() forces the state
 * (RUNNING: count 0; PAUSED: at least 1). These two are a third party's
 * `xl pause` / `xl unpause`: not logged as our calls, no xenstore event.
 */
int fo_sim_external_pause(struct fo_hv *hv, fo_domid_t domid);
int fo_sim_external_unpause(struct fo_hv *hv, fo_domid_t domid);
unsigned fo_sim_pause_count(struct fo_hv *hv, fo_domid_t domid);

uint64_t fo_sim_now(struct fo_hv *hv);
void fo_sim_advance(struct fo_hv *hv, uint64_t ns);

/* The next `count` calls of `op` on `domid` (or any) return `err` without
 * doing anything. */
void fo_sim_fail(struct fo_hv *hv, enum fo_sim_op op, fo_domid_t domid, int err, int count);
/* Every call of `op` takes `ns` of virtual time. */
void fo_sim_delay(struct fo_hv *hv, enum fo_sim_op op, uint64_t ns);
/* When `op` is next called on `domid`, the domain vanishes first. */
void fo_sim_vanish_on(struct fo_hv *hv, enum fo_sim_op op, fo_domid_t domid);
/* pause returns 0 but the domain keeps running (a lying hypervisor). */
void fo_sim_pause_is_noop(struct fo_hv *hv, fo_domid_t domid, bool on);

/* The guest agent: a valid page with the next sequence number, or any page. */
void fo_sim_heartbeat(struct fo_hv *hv, fo_domid_t domid);
void fo_sim_heartbeat_status(struct fo_hv *hv, fo_domid_t domid, enum fo_hb_app_status status);
void fo_sim_raw_page(struct fo_hv *hv, fo_domid_t domid, const struct fo_hb_page *page);
void fo_sim_agent_event(struct fo_hv *hv, fo_domid_t domid, int err, const char *reason);
/* The backend holds the member's notifications back (the Xen backend's
 * flood back-off): its pages are kept, handed over only by heartbeat_look. */
void fo_sim_mask_port(struct fo_hv *hv, fo_domid_t domid, bool on);
/* The MAC of the domain's vif 0, as vif_mac reports it (none until set;
 * NULL: a vif whose MAC cannot be read, -EINVAL). */
void fo_sim_set_vif_mac(struct fo_hv *hv, fo_domid_t domid, const uint8_t mac[6]);
/* The last roles posted to the state relay (hv.h state_pair; the simulator
 * relays no state, it only records them): how many posts so far. */
unsigned fo_sim_state_roles(struct fo_hv *hv, char *pair, size_t len, fo_domid_t *active, fo_domid_t *standby,
			    bool *serving);

/*
 * The simulated kernel module (kmod-switch's ARM mode): after this the
 * backend offers kernel_arm/disarm/adopt/poll_events/list like hv_kmod.c does.
 * An armed pair's active "notifies" on every fo_sim_heartbeat*; when no
 * notification came for timeout_ms of virtual time, fo_sim_advance() runs
 * the module's fenced switch (logged as FO_SIM_KERNEL_SWITCH) and queues an
 * event, which the daemon gets from fo_sim_kernel_deliver() (the device fd
 * becoming readable) or kernel_poll_events. Unpause of a member of an
 * armed pair answers -EBUSY, as does a fenced switch of one (one owner).
 */
void fo_sim_enable_kernel(struct fo_hv *hv);
/* Is `pair_id` armed? Its members if so. */
bool fo_sim_kernel_armed(struct fo_hv *hv, uint32_t pair_id, fo_domid_t *ret_active, fo_domid_t *ret_standby);
/* Held: an expiring pair goes FIRING (DISARM says EALREADY) but its switch
 * waits until the hold is released. */
void fo_sim_kernel_hold(struct fo_hv *hv, bool on);
/* Stalled: the module's timers do not run (a broken module). */
void fo_sim_kernel_stall(struct fo_hv *hv, bool on);
/* A module from before LIST: kernel_list answers -EOPNOTSUPP. */
void fo_sim_kernel_without_list(struct fo_hv *hv, bool on);
/* The agent notifies its port without moving its page's sequence (the
 * module is satisfied, the daemon sees no progress). Without
 * fo_sim_kernel_poll_pages the daemon gets the unchanged page at once. */
void fo_sim_kernel_notify_only(struct fo_hv *hv, fo_domid_t domid);
/* As the Xen backend does: while the module holds the active's port, its
 * page reaches the daemon only by a poll every poll_ms (kernel_arm's or
 * kernel_adopt's), from fo_sim_advance, not on each fo_sim_heartbeat*.
 * Off by default (every page is delivered at once). */
void fo_sim_kernel_poll_pages(struct fo_hv *hv, bool on);
/* The next poll that comes due runs `ns` late (dom0 loaded), and the ones
 * after it keep that lag. */
void fo_sim_kernel_poll_late(struct fo_hv *hv, uint64_t ns);
/* Deliver queued kernel events (what the daemon's loop does when the
 * device is readable); returns how many. */
size_t fo_sim_kernel_deliver(struct fo_hv *hv);
size_t fo_sim_kernel_queued(struct fo_hv *hv);
/* Someone else armed a pair (e.g. fo-switch-test, a daemon with another config). */
int fo_sim_kernel_arm_external(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			       uint32_t timeout_ms);
/* A daemon restart: the backend (Xen and the module) keeps its state, the
 * callbacks now go to the new daemon's manager. */
void fo_sim_set_callbacks(struct fo_hv *hv, const struct fo_hv_callbacks *cb);

/*
 * Placement. The simulated host has 8 pCPUs (fo_sim_set_pcpus), all in
 * Pool-0 (scheduler credit2); a domain has 1 vCPU (fo_sim_set_vcpus),
 * hard affinity all pCPUs. As on Xen, moving a domain to another pool
 * resets its vCPUs' hard affinity to all, and a hard affinity with no
 * pCPU of the domain's pool is refused (-EINVAL). The setters below change
 * things behind the daemon's back (drift); they are not logged calls.
 */
#define FO_SIM_MAX_VCPUS 8
void fo_sim_set_pcpus(struct fo_hv *hv, int n);
void fo_sim_set_vcpus(struct fo_hv *hv, fo_domid_t domid, unsigned n);
/* A pool that exists before the daemon starts. 0 or -errno. */
int fo_sim_add_pool(struct fo_hv *hv, const char *name, const char *sched, const int *cpus, size_t n);
/* Move a pCPU from its pool back to Pool-0 (xl cpupool-cpu-remove). */
void fo_sim_pool_remove_cpu(struct fo_hv *hv, int cpu);
void fo_sim_move_domain(struct fo_hv *hv, fo_domid_t domid, const char *pool);
void fo_sim_pin(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const int *cpus, size_t n);

/*
 * The Xen failover watch (rt-patches/xen-4.17/0005-0008), at the domctl
 * level: fo_sim_fowatch_domctl() is XEN_DOMCTL_failover_watch issued by dom0
 * (the owner), with patch 0007's checks, states and errnos, so that a layer
 * that drives the domctl can be tested here as it talks to Xen. Off until
 * fo_sim_enable_fowatch(); off, every op is -ENOSYS (stock Xen 4.17's
 * answer to an unknown domctl, after its -ESRCH for a missing domain).
 *
 * The watch's timer runs on the virtual clock from fo_sim_advance (and
 * under a delayed call, as the kernel module's does): every period it reads
 * the 64-bit value at `offset` of the page the active's agent granted under
 * `gref` (the simulated agent's heartbeat page, struct fo_hb_page). A shutdown
 * of either member (fo_sim_set_state CRASHED/SHUTDOWN/SUSPENDED, fo_sim_shutdown) is
 * looked at at once; DYING or GONE tears the watch down (Xen's domain_kill).
 *
 * The fence is the watch's own pause of the active, not a toolstack pause
 * (its toolstack pause count is unchanged, an unpause cannot drop it). Once
 * the active's vCPUs stopped (fo_sim_fowatch_quiesce_delay after the fence)
 * it does not execute: its agent's heartbeats are no-ops, the guards do not
 * count it as running, and get_state / fo_sim_state say PAUSED and QUERY
 * FENCED, as on our patched Xen (rt-patches 0011 with issue #36 item 6);
 * before that it runs and reads so. RELEASE (by anyone) in an end state
 * hands the fence to the toolstack (one more toolstack pause; a vCPU that
 * had not stopped runs until it does); DISARM of a fenced watch is -EBUSY.
 *
 * Every stamp of a QUERY is Xen's NOW(): the virtual clock plus
 * FO_SIM_XEN_AHEAD_NS (Xen booted before dom0 started its monotonic clock),
 * so a layer that forgets to map Xen time onto its own is caught.
 */
#define FO_SIM_XEN_AHEAD_NS (3ull * 1000000000ull)
/* Xen's SHUTDOWN_* codes (public/sched.h). */
#define FO_SIM_SHUTDOWN_POWEROFF 0u
#define FO_SIM_SHUTDOWN_REBOOT   1u
#define FO_SIM_SHUTDOWN_SUSPEND  2u
#define FO_SIM_SHUTDOWN_CRASH    3u
#define FO_SIM_SHUTDOWN_WATCHDOG 4u
/* fo_sim_fowatch_quiesce_delay: the active's vCPUs never stop. */
#define FO_SIM_NEVER UINT64_MAX

void fo_sim_enable_fowatch(struct fo_hv *hv);
/* The hypervisor has no watch after all (a stock Xen): every op -ENOSYS. */
void fo_sim_fowatch_absent(struct fo_hv *hv, bool absent);
/* 0 and `fw` filled (QUERY), or -errno as patch 0007's fowatch_domctl; the
 * owner is always dom0. Logged as FO_SIM_FOWATCH on `domid`, faultable. */
int fo_sim_fowatch_domctl(struct fo_hv *hv, fo_domid_t domid, struct fo_xen_failover_watch *fw);
/* Xen's NOW() at this moment of the virtual clock. */
uint64_t fo_sim_xen_now(struct fo_hv *hv);
/* Xen's "fowatch-max" boot option (default and most: 64). */
void fo_sim_fowatch_set_max(struct fo_hv *hv, unsigned max);
/* A fenced active's vCPUs stop `ns` after the fence (default 0: at once);
 * FO_SIM_NEVER: never (FAILED_QUIESCE after quiesce_us). */
void fo_sim_fowatch_quiesce_delay(struct fo_hv *hv, uint64_t ns);
/* Does a watch hold `domid` fenced (paused by its own reference, its vCPUs
 * stopped or not)? */
bool fo_sim_fowatch_fenced(struct fo_hv *hv, fo_domid_t domid);
/* VIRQ_FAILOVER to dom0, raised on every end state and on every teardown by
 * a domain's death: the fd is readable while one is pending; take consumes
 * it (true if one was). Raises while one is pending coalesce, as a VIRQ's
 * pending bit does; the count counts every raise. -1 before enabling. */
int fo_sim_fowatch_virq_fd(struct fo_hv *hv);
bool fo_sim_fowatch_virq_take(struct fo_hv *hv);
uint64_t fo_sim_fowatch_virqs(struct fo_hv *hv);
/*
 * The agent's grant of its heartbeat page to dom0 (the gref it publishes
 * under data/failover/gref). A new domain's agent granted it under
 * fo_sim_agent_gref() (distinct per domain). fo_sim_agent_grant: the agent
 * grants a new page under `gref` (a restarted agent): a watch armed on the
 * old page keeps its pin on it, and it no longer moves. fo_sim_agent_revoke:
 * the agent ends its grant: an ARM now fails as Xen's pin does (-EACCES),
 * an armed watch keeps its pin and still reads the page.
 */
uint32_t fo_sim_agent_gref(struct fo_hv *hv, fo_domid_t domid);
/* The agent's own event channel port, which it notifies after each beat
 * (what an event-mode watch listens to); fo_sim_agent_grant binds a new
 * one too, as a restarted agent does. */
uint32_t fo_sim_agent_port(struct fo_hv *hv, fo_domid_t domid);
void fo_sim_agent_grant(struct fo_hv *hv, fo_domid_t domid, uint32_t gref);
/* The watch refuses XEN_DOMCTL_FOWATCH_F_EVENT (-EINVAL): a patch series
 * without 0012, where every watch polls. */
void fo_sim_fowatch_no_event(struct fo_hv *hv, bool on);
void fo_sim_agent_revoke(struct fo_hv *hv, fo_domid_t domid);
/* The domain shuts down with Xen's `code` (FO_SIM_SHUTDOWN_*): state CRASHED
 * for crash, SUSPENDED for suspend (PAUSED to get_state while the toolstack
 * pause count holds it, as getdomaininfo's flags say), SHUTDOWN for the
 * others. fo_sim_set_state(CRASHED) is code crash, (SUSPENDED) suspend,
 * (SHUTDOWN) poweroff. */
void fo_sim_shutdown(struct fo_hv *hv, fo_domid_t domid, unsigned code, bool notify);
/* libxl's resume of a suspended domain (`xl save -c`, a failed migration:
 * XEN_DOMCTL_resumedomain): it leaves its shutdown and runs unless the
 * toolstack's pause count holds it. No xenstore event. A resumed domain
 * running beside its guarded partner counts as a violation. */
void fo_sim_resume(struct fo_hv *hv, fo_domid_t domid);

/*
 * The watch as the pairs' armed owner, through hv/fowatch/owner.c, as the
 * Xen backend has it with daemon.hypervisor_watch: after this the backend's
 * kernel_* ops are the watch's, armed_owner() says "hypervisor", and the
 * VIRQ's fd is among get_fds (dispatch of it = a VIRQ arriving). Enables
 * the watch (fo_sim_enable_fowatch) if it is not. -ENOSYS when the watch
 * is absent (fo_sim_fowatch_absent), as the daemon's probe would find.
 */
int fo_sim_enable_fowatch_owner(struct fo_hv *hv, uint16_t cpu);
/* What the daemon's loop does when the VIRQ's fd is readable: true if a
 * VIRQ was pending (the owner then QUERYd its watches and handed up any
 * switch through cb.kernel_switched). */
bool fo_sim_fowatch_deliver(struct fo_hv *hv);

/* What happened. */
size_t fo_sim_calls(struct fo_hv *hv, const struct fo_sim_call **ret);
void fo_sim_clear_calls(struct fo_hv *hv);
/* `fn` runs as each call is issued (logged), before the call acts: a test
 * looks at what the daemon has done by then (NULL: none). */
typedef void (*fo_sim_call_hook)(void *ctx, const struct fo_sim_call *call);
void fo_sim_on_call(struct fo_hv *hv, fo_sim_call_hook fn, void *ctx);
const char *fo_sim_role(struct fo_hv *hv, fo_domid_t domid);
const char *fo_sim_last_command(struct fo_hv *hv, fo_domid_t domid);
bool fo_sim_watched(struct fo_hv *hv, fo_domid_t domid);
/* Times our own unpause left both domains of a guarded pair running. */
void fo_sim_guard(struct fo_hv *hv, fo_domid_t a, fo_domid_t b);
unsigned fo_sim_violations(struct fo_hv *hv);

#endif
