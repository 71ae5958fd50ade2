/* SPDX-License-Identifier: MIT */
/*
 * calls.c - what every simulated call goes through first: the call log a
 * test reads back (fo_sim_calls), and the faults a test injects into a call
 * (a delay, a failure, a domain that vanishes under it).
 */
#include "hv/sim/sim_internal.h"

#include <errno.h>

/* Common prologue of every call: log it, apply delay / vanish / injected
 * failure. Returns 0 to go on, or the injected -errno. */

int sim_enter(struct fo_hv_sim *s, enum fo_sim_op op, fo_domid_t domid)
{
	struct sim_fault *f = &s->faults[op];
	int r = 0;

	s->clock_ns += s->delay_ns[op];
	/* The module's hrtimer does not wait for our call to return: a pair
	 * may fire while a slow call (DISARM racing it) is under way. */
	if (s->delay_ns[op]) {
		sim_kernel_timers(s);
		sim_fowatch_timers(s); /* nor does Xen's */
	}
	if (s->vanish_armed[op] && s->vanish_domid[op] == domid) {
		struct sim_domain *d = sim_find_dom(s, domid);
		s->vanish_armed[op] = false;
		if (d)
			sim_drop_dom(s, d);
	}
	if (f->count > 0 && (f->domid == FO_SIM_ANY_DOMAIN || f->domid == domid)) {
		f->count--;
		r = f->err;
	}
	/* Like the Xen backend: no domain can have a reserved id (FO_DOMID_INVALID is
	 * Xen's DOMID_INVALID), so a call about one is refused, not answered
	 * "gone": a caller that passes one must have handled that itself. */
	if (!r && domid >= FO_DOMID_INVALID && (op == FO_SIM_GET_STATE || op == FO_SIM_PAUSE || op == FO_SIM_UNPAUSE))
		r = -EINVAL;
	if (s->n_log < FO_SIM_LOG_MAX)
		s->log[s->n_log++] = (struct fo_sim_call){ .op = op, .domid = domid, .at_ns = s->clock_ns, .result = r };
	if (s->on_call) {
		struct fo_sim_call c = { .op = op, .domid = domid, .at_ns = s->clock_ns, .result = r };
		s->on_call(s->on_call_ctx, &c);
	}
	return r;
}

void sim_set_result(struct fo_hv_sim *s, int r)
{
	if (s->n_log)
		s->log[s->n_log - 1].result = r;
}

/* sim_enter() for an operation on an existing domain: *ret_d is the domain, or
 * the call fails with the injected error or -ESRCH. */
int sim_enter_dom(struct fo_hv_sim *s, enum fo_sim_op op, fo_domid_t domid, struct sim_domain **ret_d)
{
	int r = sim_enter(s, op, domid);

	if (r < 0)
		return r;
	*ret_d = sim_find_dom(s, domid);
	if (!*ret_d) {
		sim_set_result(s, -ESRCH);
		return -ESRCH;
	}
	return 0;
}

void fo_sim_fail(struct fo_hv *hv, enum fo_sim_op op, fo_domid_t domid, int err, int count)
{
	sim_of(hv)->faults[op] = (struct sim_fault){ .err = err, .count = count, .domid = domid };
}

void fo_sim_delay(struct fo_hv *hv, enum fo_sim_op op, uint64_t ns) { sim_of(hv)->delay_ns[op] = ns; }

void fo_sim_vanish_on(struct fo_hv *hv, enum fo_sim_op op, fo_domid_t domid)
{
	sim_of(hv)->vanish_armed[op] = true;
	sim_of(hv)->vanish_domid[op] = domid;
}

size_t fo_sim_calls(struct fo_hv *hv, const struct fo_sim_call **ret)
{
	*ret = sim_of(hv)->log;
	return sim_of(hv)->n_log;
}

void fo_sim_clear_calls(struct fo_hv *hv) { sim_of(hv)->n_log = 0; }

void fo_sim_on_call(struct fo_hv *hv, fo_sim_call_hook fn, void *ctx)
{
	sim_of(hv)->on_call = fn;
	sim_of(hv)->on_call_ctx = ctx;
}
