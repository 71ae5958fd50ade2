// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fenced_sequence.c - the fenced switch's sequence (see fenced_sequence.h),
 * in the subset of C that builds both in the kernel and in userspace.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/stddef.h>
#else
#include <errno.h>
#include <stddef.h>
#endif

#include "fenced_sequence.h"

/* A suspended domain does not execute now, but the toolstack's resume
 * starts it again (a checkpoint, a failed migration): only our pause,
 * which the resume leaves counted, fences it. */
static bool state_is_fenced(uint32_t state)
{
	return state != FO_SWITCH_DOM_RUNNING && state != FO_SWITCH_DOM_SUSPENDED;
}

/* Shut down, dying or gone: no unpause starts it. A suspended domain is
 * not dead, but it cannot be started either until the toolstack resumes
 * it: as a standby, it is not one now. */
static bool state_cannot_start(uint32_t state)
{
	return state != FO_SWITCH_DOM_RUNNING && state != FO_SWITCH_DOM_PAUSED;
}

/* An unreadable state is not fenced. */
static bool confirm_fenced(const struct fo_fenced_ops *ops, void *ctx, uint32_t domid, uint32_t *state)
{
	if (ops->get_state(ctx, domid, state) < 0)
		return false;
	return state_is_fenced(*state);
}

int fo_fenced_fence(const struct fo_fenced_ops *ops, void *ctx, uint32_t domid, uint32_t *state, bool *paused)
{
	uint32_t st = FO_SWITCH_DOM_RUNNING;
	bool ours = false;
	int r = 0;
	int i;

	for (i = 0; i < FO_FENCED_TRIES; i++) {
		/* Pause only what runs (Xen counts pauses, see the header).
		 * The getdomaininfo this costs is the confirm's own. */
		if (confirm_fenced(ops, ctx, domid, &st))
			break;
		r = ops->pause(ctx, domid);
		ours |= r == 0;
		/* -ESRCH: the domain is gone, which fences it as well as a
		 * pause; -EOVERFLOW (paused 255 times already) and the rest:
		 * the domain's state decides. */
		if (confirm_fenced(ops, ctx, domid, &st))
			break;
		if (r == 0)
			r = -EIO; /* the hypercall said yes, the domain info says running */
	}
	if (state)
		*state = st;
	if (paused)
		*paused = ours;
	return state_is_fenced(st) ? 0 : (r < 0 ? r : -EIO);
}

/* The standby was left as it was (paused): say so from the hypervisor, not
 * "gone", so that the caller still knows it has one. */
static int abort_switch(const struct fo_fenced_ops *ops, void *ctx, uint32_t to, struct fo_fenced_outcome *out,
			uint32_t why)
{
	out->result = FO_SWITCH_ABORTED;
	out->why = why;
	if (ops->get_state(ctx, to, &out->to_state) < 0)
		out->to_state = FO_SWITCH_DOM_GONE;
	return -EIO;
}

int fo_fenced_switch(const struct fo_fenced_ops *ops, void *ctx, uint32_t from, bool from_gone, uint32_t to,
		     struct fo_fenced_outcome *out)
{
	uint32_t st = FO_SWITCH_DOM_GONE;
	int i;

	*out = (struct fo_fenced_outcome){ .result = FO_SWITCH_OK, .from_state = FO_SWITCH_DOM_GONE,
					   .to_state = FO_SWITCH_DOM_GONE };

	/* 1. Fence the old active. */
	out->pause_issued_ns = ops->now_ns(ctx);
	if (!from_gone && fo_fenced_fence(ops, ctx, from, &out->from_state, &out->paused_from) < 0)
		return abort_switch(ops, ctx, to, out, FO_FENCED_WHY_NOT_FENCED);
	out->pause_done_ns = ops->now_ns(ctx);
	if (ops->fenced)
		ops->fenced(ctx);

	/* 2. Start the standby, only now that the active cannot run. */
	out->unpause_issued_ns = ops->now_ns(ctx);
	for (i = 0; i < FO_FENCED_TRIES; i++) {
		int r = ops->unpause(ctx, to);

		if (ops->get_state(ctx, to, &st) == 0 && st == FO_SWITCH_DOM_RUNNING)
			break;
		if (r == -ESRCH || state_cannot_start(st))
			break; /* retrying cannot bring back a dead (or suspended) domain */
	}
	out->to_state = st;
	if (st != FO_SWITCH_DOM_RUNNING) {
		out->result = FO_SWITCH_FAILED;
		out->why = FO_FENCED_WHY_NOT_STARTED;
		return -EIO;
	}
	out->unpause_done_ns = ops->now_ns(ctx);

	/* 3. The invariant, once more: something outside us (an operator's
	 * `xl unpause`) may have started the old active meanwhile. The new
	 * active wins and the old one is fenced again; if that fails, both are
	 * stopped rather than both run. */
	if (!from_gone && !confirm_fenced(ops, ctx, from, &out->from_state)) {
		if (fo_fenced_fence(ops, ctx, from, &out->from_state, NULL) < 0) {
			out->result = FO_SWITCH_ABORTED;
			out->why = fo_fenced_fence(ops, ctx, to, &out->to_state, NULL) == 0 ? FO_FENCED_WHY_BOTH_PAUSED
											: FO_FENCED_WHY_BOTH_MAY_RUN;
			return -EIO;
		}
		out->why = FO_FENCED_WHY_REFENCED;
	}
	return 0;
}
