/* SPDX-License-Identifier: MIT */
/*
 * owner.h - Xen's failover watch (our patched hypervisor's
 * XEN_DOMCTL_failover_watch, rt-patches/abi/xen_failover_watch.h) as the
 * armed owner of pairs: the translation between the watch's domctl and
 * hv.h's kernel_* ops, which the core already speaks to the kernel module.
 * Backend-independent: a backend gives it one function that issues the
 * domctl (the Xen backend through libxenctrl, the simulator through its
 * model of the watch), calls it from its ops, and calls fo_fowatch_poll()
 * when VIRQ_FAILOVER arrives.
 *
 * The watch and the module differ in ways the core must not see:
 *   - The watch is found by domain, the module's pairs by id: we keep the
 *     pair id -> domains map, and after a restart rebuild it from QUERY.
 *   - Xen fences the active with a pause of its own, invisible to
 *     getdomaininfo (the fenced active looks "running"). Before an event is
 *     handed up we take our toolstack pause of the old active and only then
 *     RELEASE the watch (model finding D): the core then sees what it sees
 *     after a module switch, a paused old active and a running standby.
 *   - An end state stays in Xen until RELEASE: a watch that fired while
 *     failoverd was away is adopted by QUERY at start.
 *   - Xen's stamps are its NOW(); a QUERY's t_now, bracketed by two reads
 *     of our clock, maps them onto it (error: half the bracket).
 */
#ifndef FO_HV_FOWATCH_OWNER_H
#define FO_HV_FOWATCH_OWNER_H

#include "hv/hv.h"
#include "lib/limits.h"
#include "../../../rt-patches/abi/xen_failover_watch.h"

/* The one thing a backend supplies: XEN_DOMCTL_failover_watch on `domid`.
 * 0 or -errno; *fw is IN and OUT, as the hypercall's union. */
typedef int (*fo_fowatch_domctl_fn)(void *ctx, fo_domid_t domid, struct fo_xen_failover_watch *fw);

struct fo_fowatch_slot {
	bool used;
	uint32_t pair_id;
	fo_domid_t active, standby;
	uint32_t timeout_ms;
	uint32_t period_ms; /* the pair's heartbeat period (caps poll_us) */
	uint32_t gref;      /* the page Xen pinned: the active's agent's grant when armed */
	uint32_t port;      /* the agent's port Xen listens to (event mode), 0 when Xen polls */
};

struct fo_fowatch_owner {
	struct fo_hv *hv;            /* the backend: clock, pause, get_state, agent_page, callbacks */
	fo_fowatch_domctl_fn domctl;
	void *ctx;
	uint16_t cpu;                /* the pCPU of Xen's watch timer */
	uint32_t poll_us;            /* how often Xen reads the sequence when it polls (at most the heartbeat period) */
	bool told_no_event;          /* warned once that Xen refused event mode (a series without 0012?) */
	struct fo_fowatch_slot slot[FO_MAX_PAIRS];
	/* Switches found by DISARM or QUERY, handed up by fo_fowatch_poll. */
	struct fo_hv_kevent queued[FO_MAX_PAIRS];
	size_t n_queued;
};

/*
 * Does the hypervisor have the watch? A QUERY of dom0 (which can never be
 * watched): a patched Xen says -ENOENT, a stock one -ENOSYS (unknown
 * domctl). 0: it has; -ENOSYS: it has not; other -errno: cannot tell.
 */
int fo_fowatch_probe(fo_fowatch_domctl_fn domctl, void *ctx);

/* Xen's reading of the sequence when it polls (a Xen without event mode,
 * or an agent without a port), by default: detection lags the deadline by
 * up to one such period, so it is far below a heartbeat period; each read
 * is one 64-bit load in a timer (daemon.hypervisor_watch_poll_us). In
 * event mode, the default, Xen reads the sequence when the agent notifies
 * and its timer runs at the deadline: no period is added. */
#define FO_FOWATCH_DEFAULT_POLL_US 1000u

void fo_fowatch_owner_init(struct fo_fowatch_owner *o, struct fo_hv *hv, fo_fowatch_domctl_fn domctl, void *ctx,
			   uint16_t cpu, uint32_t poll_us);

/* Make `o` the armed owner of `hv`: `ops` (the backend's own copy of its
 * table, which hv->ops then points at) gets the kernel_* ops and
 * armed_owner of the watch; kernel_list is NULL (Xen has no LIST: a watch
 * is found by domain). The backend still delivers VIRQ_FAILOVER to
 * fo_fowatch_poll and agent attaches to fo_fowatch_agent_attached. */
void fo_fowatch_install(struct fo_hv *hv, struct fo_fowatch_owner *o, struct fo_hv_ops *ops);

/* hv.h's kernel_* semantics (see there), for the watch. */
int fo_fowatch_arm(struct fo_fowatch_owner *o, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
		   uint32_t timeout_ms, uint32_t period_ms);
int fo_fowatch_disarm(struct fo_fowatch_owner *o, uint32_t pair_id);
int fo_fowatch_adopt(struct fo_fowatch_owner *o, uint32_t pair_id, const fo_domid_t members[2],
		     struct fo_hv_karm *ret);
/* QUERY every watch we armed or adopted; end states become events, and
 * every queued event is handed to cb.kernel_switched. What VIRQ_FAILOVER
 * and kernel_poll_events do. */
void fo_fowatch_poll(struct fo_fowatch_owner *o);
/* The backend (re)attached `domid`'s agent. If it is the active of a watch
 * pinned on another page or listening to another port (the agent restarted
 * and granted a new page, the old will never move again and Xen would fail
 * over a live agent; or it bound a new port, which Xen would not hear),
 * move the watch to the new binding: DISARM, ARM. A watch that fired
 * meanwhile is finished and its event queued, as by DISARM. */
void fo_fowatch_agent_attached(struct fo_fowatch_owner *o, fo_domid_t domid);

#endif
