/* SPDX-License-Identifier: MIT */
/*
 * fencing.c - the fenced sequence on a hypervisor backend (see fencing.h).
 */
#include "fencing.h"

#include <errno.h>

#include "../../kmod-switch/fenced_sequence.h"

/* The sequence itself is kmod-switch/fenced_sequence.c, the one the kernel
 * module runs and the simulator's model of the module: these adapt it to a
 * backend's operations (enum fo_dom_state has the uapi's values). */
struct seq_ctx {
	struct fo_hv *hv;
	const struct fo_switch_hook *hook; /* NULL: none */
};

static struct fo_hv *hv_of(void *ctx) { return ((struct seq_ctx *)ctx)->hv; }
static int op_pause(void *ctx, uint32_t domid) { return hv_of(ctx)->ops->pause(hv_of(ctx), domid); }
static int op_unpause(void *ctx, uint32_t domid) { return hv_of(ctx)->ops->unpause(hv_of(ctx), domid); }
static uint64_t op_now_ns(void *ctx) { return hv_of(ctx)->ops->now_ns(hv_of(ctx)); }

static int op_get_state(void *ctx, uint32_t domid, uint32_t *state)
{
	enum fo_dom_state st;
	int r = hv_of(ctx)->ops->get_state(hv_of(ctx), domid, &st);

	if (r == 0)
		*state = (uint32_t)st;
	return r;
}

static void op_fenced(void *ctx)
{
	const struct fo_switch_hook *h = ((struct seq_ctx *)ctx)->hook;

	if (h && h->fenced)
		h->fenced(h->arg);
}

static const struct fo_fenced_ops hv_fenced_ops = {
	.pause = op_pause,
	.unpause = op_unpause,
	.get_state = op_get_state,
	.now_ns = op_now_ns,
	.fenced = op_fenced,
};

int fo_fence_counted(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state, bool *ret_paused)
{
	struct seq_ctx ctx = { .hv = hv };
	uint32_t st;
	int r = fo_fenced_fence(&hv_fenced_ops, &ctx, domid, &st, ret_paused);

	if (ret_state)
		*ret_state = (enum fo_dom_state)st;
	return r;
}

int fo_fence(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state)
{
	return fo_fence_counted(hv, domid, ret_state, NULL);
}

static const char *why_text(uint32_t why)
{
	switch (why) {
	case FO_FENCED_WHY_NOT_FENCED: return "could not confirm the active is paused; standby left paused";
	case FO_FENCED_WHY_NOT_STARTED: return "standby could not be started";
	case FO_FENCED_WHY_REFENCED: return "old active was restarted behind our back; fenced again";
	case FO_FENCED_WHY_BOTH_PAUSED:
		return "old active was restarted behind our back and could not be re-fenced; both paused";
	case FO_FENCED_WHY_BOTH_MAY_RUN:
		return "old active was restarted behind our back and could not be re-fenced, nor the new one: both may run";
	default: return NULL;
	}
}

static enum fo_event_result result_of(uint32_t result)
{
	return result == FO_SWITCH_OK ? FO_RESULT_OK : result == FO_SWITCH_FAILED ? FO_RESULT_FAILED : FO_RESULT_ABORTED;
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
			   const struct fo_switch_hook *hook, struct fo_switch_outcome *out)
{
	struct seq_ctx ctx = { .hv = hv, .hook = hook };
	/* The pair forgets an active's domid once Xen no longer has the
	 * domain (destroyed, and seen only after its teardown): nothing is
	 * left that could run, so it is fenced already. Pausing or asking
	 * about an invalid domid would only fail, and abort a switch that
	 * must happen. */
	bool from_gone = from == FO_DOMID_INVALID;
	struct fo_fenced_outcome o;
	int r = -EOPNOTSUPP;

	out->paused_from = false;

	if (hv->ops->switch_fenced && !from_gone)
		r = hv->ops->switch_fenced(hv, from, to, &o);
	if (r == -EBUSY) {
		/* The module has this pair (or one of its domains) armed: it
		 * alone may switch it. Doing the sequence here would pause the
		 * active and then be refused the unpause. */
		out->from_state = FO_DOM_RUNNING;
		hv->ops->get_state(hv, from, &out->from_state);
		abort_switch(hv, to, out, "the kernel module owns this pair (EBUSY); nothing done");
		return;
	}
	/* Anything else but 0: the fast path did nothing; do it here. */
	if (r != 0)
		fo_fenced_switch(&hv_fenced_ops, &ctx, from, from_gone, to, &o);
	out->result = result_of(o.result);
	out->why = why_text(o.why);
	out->from_state = from_gone ? FO_DOM_GONE : (enum fo_dom_state)o.from_state;
	out->to_state = (enum fo_dom_state)o.to_state;
	out->paused_from = o.paused_from;
	phase_ns[FO_PHASE_PAUSE_ISSUED] = o.pause_issued_ns;
	phase_ns[FO_PHASE_PAUSE_DONE] = o.pause_done_ns;
	phase_ns[FO_PHASE_UNPAUSE_ISSUED] = o.unpause_issued_ns;
	phase_ns[FO_PHASE_UNPAUSE_DONE] = o.unpause_done_ns;
}
