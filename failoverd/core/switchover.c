/* SPDX-License-Identifier: MIT */
#include "switchover.h"

#include <errno.h>

/* How often a failed pause/unpause is retried before giving up. Each try is
 * one hypercall (tens of microseconds), so a couple of retries cost far less
 * than the deadline; more would only hide a broken hypervisor. */
#define FO_SWITCH_TRIES 3

static bool confirm_fenced(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *state)
{
	if (hv->ops->get_state(hv, domid, state) < 0)
		return false; /* unknown is not fenced */
	return fo_dom_state_is_fenced(*state);
}

int fo_fence_counted(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state, bool *ret_paused)
{
	enum fo_dom_state st = FO_DOM_RUNNING;
	bool paused = false;
	int r = 0;

	for (int i = 0; i < FO_SWITCH_TRIES; i++) {
		/* Pause only what runs. Xen counts toolstack pauses and one
		 * unpause undoes one: a second pause of a paused domain would
		 * leave it paused after the one unpause that is meant to start
		 * it (our switch to it, an operator's `xl unpause` of a member
		 * kept paused). One getdomaininfo more; it is the confirm's. */
		if (confirm_fenced(hv, domid, &st))
			break;
		r = hv->ops->pause(hv, domid);
		paused |= r == 0;
		/* -ESRCH: the domain is gone, which fences it as well as a pause. */
		if ((r == 0 || r == -ESRCH) && confirm_fenced(hv, domid, &st))
			break;
		if (r == 0)
			r = -EIO; /* the hypercall said yes, the domain info says running */
	}
	if (ret_state)
		*ret_state = st;
	if (ret_paused)
		*ret_paused = paused;
	return fo_dom_state_is_fenced(st) ? 0 : (r < 0 ? r : -EIO);
}

int fo_fence(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state)
{
	return fo_fence_counted(hv, domid, ret_state, NULL);
}

/* An aborted switch leaves the standby as it was (paused): say so from the
 * hypervisor, not "gone", so that the pair still knows it has one. */
static void abort_switch(struct fo_hv *hv, fo_domid_t to, struct fo_switch_outcome *out, const char *why)
{
	out->result = FO_RESULT_ABORTED;
	out->why = why;
	if (hv->ops->get_state(hv, to, &out->to_state) < 0)
		out->to_state = FO_DOM_GONE;
}

void fo_switchover_execute(struct fo_hv *hv, fo_domid_t from, fo_domid_t to, uint64_t phase_ns[FO_PHASE_COUNT],
			   struct fo_switch_outcome *out)
{
	enum fo_dom_state st = FO_DOM_GONE;
	/* The pair forgets an active's domid once Xen no longer has the
	 * domain (destroyed, and seen only after its teardown): nothing is
	 * left that could run, so it is fenced already. Pausing or asking
	 * about an invalid domid would only fail, and abort a switch that
	 * must happen. */
	bool from_gone = from == FO_DOMID_INVALID;

	out->result = FO_RESULT_OK;
	out->why = NULL;
	out->to_state = FO_DOM_GONE;
	out->paused_from = false;

	if (hv->ops->switch_fenced && !from_gone) {
		int r = hv->ops->switch_fenced(hv, from, to, phase_ns, &out->from_state, &out->to_state);
		/* The module pauses `from` whatever its state: count it ours. */
		out->paused_from = r == 0 || r == -EAGAIN;
		if (r == 0)
			return;
		if (r == -EIO) {
			abort_switch(hv, to, out, "could not confirm the active is paused; standby left paused");
			return;
		}
		if (r == -EAGAIN) {
			out->result = FO_RESULT_FAILED;
			out->why = "standby could not be started";
			return;
		}
		if (r == -EBUSY) {
			/* The module has this pair (or one of its domains) armed:
			 * it alone may switch it. Doing the sequence here would
			 * pause the active and then be refused the unpause. */
			out->from_state = FO_DOM_RUNNING;
			hv->ops->get_state(hv, from, &out->from_state);
			abort_switch(hv, to, out, "the kernel module owns this pair (EBUSY); nothing done");
			return;
		}
		/* Anything else: the fast path did nothing; do it here. */
	}

	/* 1. Fence the old active. */
	phase_ns[FO_PHASE_PAUSE_ISSUED] = hv->ops->now_ns(hv);
	if (from_gone) {
		out->from_state = FO_DOM_GONE;
	} else if (fo_fence_counted(hv, from, &out->from_state, &out->paused_from) < 0) {
		abort_switch(hv, to, out, "could not confirm the active is paused; standby left paused");
		return;
	}
	phase_ns[FO_PHASE_PAUSE_DONE] = hv->ops->now_ns(hv);

	/* 2. Start the standby, only now that the active cannot run. */
	phase_ns[FO_PHASE_UNPAUSE_ISSUED] = hv->ops->now_ns(hv);
	for (int i = 0; i < FO_SWITCH_TRIES; i++) {
		int r = hv->ops->unpause(hv, to);
		if (hv->ops->get_state(hv, to, &st) == 0 && st == FO_DOM_RUNNING)
			break;
		if (r == -ESRCH || fo_dom_state_is_dead(st))
			break; /* retrying cannot bring back a dead domain */
	}
	out->to_state = st;
	if (st != FO_DOM_RUNNING) {
		out->result = FO_RESULT_FAILED;
		out->why = "standby could not be started";
		return;
	}
	phase_ns[FO_PHASE_UNPAUSE_DONE] = hv->ops->now_ns(hv);

	/* 3. The invariant, once more: something outside us (an operator's
	 * `xl unpause`) may have restarted the old active meanwhile. The new
	 * active wins; the old one is fenced again. */
	if (!from_gone && !confirm_fenced(hv, from, &out->from_state)) {
		if (fo_fence(hv, from, &out->from_state) < 0) {
			/* Never leave two running: stop the new one too. If
			 * that fails as well, say so: the caller must not
			 * believe either member paused (the audit retries). */
			out->result = FO_RESULT_ABORTED;
			out->why = fo_fence(hv, to, &out->to_state) == 0
					   ? "old active was restarted behind our back and could not be re-fenced; both paused"
					   : "old active was restarted behind our back and could not be re-fenced, nor the new one: both may run";
			return;
		}
		out->why = "old active was restarted behind our back; fenced again";
	}
}
