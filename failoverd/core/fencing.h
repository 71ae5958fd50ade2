/* SPDX-License-Identifier: MIT */
/*
 * fencing.h - fencing on a hypervisor backend, and nothing else: the fenced
 * switch (fo_switchover_execute: the backend's one-call switch if it has
 * one, the kernel module's ioctl, else kmod-switch/fenced_sequence.c over
 * the backend's operations) and a fence outside a switch (fo_fence):
 *
 *   pause(from) -> confirm `from` cannot run -> unpause(to) -> confirm `to` runs
 *   -> confirm `from` still cannot run
 *
 * `to` is never unpaused unless `from` was confirmed fenced (paused, crashed,
 * shut down, dying or gone). This is the real-time path: it allocates
 * nothing, logs nothing and spawns nothing; it only calls the hypervisor and
 * reads the clock. The caller logs the outcome afterwards.
 */
#ifndef FO_FENCING_H
#define FO_FENCING_H

#include "../hv/hv.h"
#include "events.h"

struct fo_switch_outcome {
	enum fo_event_result result; /* OK, ABORTED (standby untouched) or FAILED (fenced, standby not running) */
	const char *why;             /* static string: what went wrong, or NULL */
	enum fo_dom_state from_state; /* last seen */
	enum fo_dom_state to_state;
	bool paused_from;             /* our pause fenced `from` (it was running): ours to undo */
};

/* Called once `from` is confirmed fenced, before the unpause (the service
 * network's move, core/pair/service.c): real-time rules apply. Not called
 * when the backend's switch_fenced ran the whole sequence (the kernel
 * module's fast path, one ioctl): the caller then does it afterwards. */
struct fo_switch_hook {
	void (*fenced)(void *arg);
	void *arg;
};

/* Fills phase_ns[PAUSE_ISSUED .. UNPAUSE_DONE]; hook may be NULL. */
void fo_switchover_execute(struct fo_hv *hv, fo_domid_t from, fo_domid_t to, uint64_t phase_ns[FO_PHASE_COUNT],
			   const struct fo_switch_hook *hook, struct fo_switch_outcome *out);

/* Pause `domid` and confirm it cannot run (used for fencing outside a switch:
 * arming, a standby that was started behind our back). 0 or -errno. */
int fo_fence(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state);
/* The same; *ret_paused says whether a pause of ours took effect. A domain
 * found fenced is not paused again: Xen counts pauses (see fo_fence). */
int fo_fence_counted(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state, bool *ret_paused);

#endif
