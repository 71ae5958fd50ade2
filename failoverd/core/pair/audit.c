/* SPDX-License-Identifier: MIT */
/*
 * audit.c - the fence audit: every period, a standby found running (or
 * suspended, which a resume runs) though it should be paused (an operator's
 * `xl unpause`, a toolstack) is paused again.
 */
#include "core/pair/pair_internal.h"

#include <errno.h>
#include <string.h>

/* Why `s`, the standby, must not run now; NULL if it may. */
static const char *audit_should_be_paused(struct fo_pair *p, const struct fo_member *a, const struct fo_member *s)
{
	if (fo_pair_verdict_of(p, s))
		return "it failed";
	if (p->state == FO_PAIR_ARMED)
		return "the pair's standby";
	if (!fo_dom_state_is_fenced(a->state))
		return a->state == FO_DOM_RUNNING ? "the active runs" : "the active may resume";
	return NULL;
}

void fo_pair_audit(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a, *s;
	const char *why, *seen;
	int r;

	fo_pair_service_audit(p);
	/* ARMING: a first-boot standby runs until it heartbeats. SWITCHING:
	 * the switch checks its own members. REBUILDING: the new member
	 * boots. DISARMED: maintenance, hands off. */
	if ((p->state != FO_PAIR_ARMED && p->state != FO_PAIR_DEGRADED) || p->kernel_firing)
		return;
	a = fo_pair_active(p);
	s = fo_pair_standby(p);
	if (a->domid == FO_DOMID_INVALID || s->domid == FO_DOMID_INVALID)
		return;
	if (hv->ops->get_state(hv, a->domid, &a->state) < 0 || hv->ops->get_state(hv, s->domid, &s->state) < 0)
		return; /* unknown is not news: the next period reads again */
	/* Suspended is not fenced: libxl's resume would start it. */
	if (fo_dom_state_is_fenced(s->state)) {
		s->audit_failing = false;
		return;
	}
	why = audit_should_be_paused(p, a, s);
	if (!why || !fo_pair_kernel_yield_for_fence(p))
		return;
	seen = fo_dom_state_name(s->state);
	r = fo_fence(hv, s->domid, &s->state);
	if (r == 0) {
		/* A member created while we watched, paused before it ever
		 * heartbeated: arming must not take this pause for libxl's. */
		if (s->fresh && !s->hb.progressed)
			s->paused_unproven = true;
		s->external_unpauses++;
		fo_pair_record(p, FO_EV_EXTERNAL_UNPAUSE, FO_RESULT_OK,
			       "%s (domain %u) found %s though it should be paused (%s); paused again",
			       s->name, s->domid, seen, why);
		s->audit_failing = false;
		if (p->state == FO_PAIR_ARMED) {
			p->kernel_retry_ns = 0;
			fo_pair_kernel_try_arm(p);
		}
		return;
	}
	if (s->audit_failing)
		return; /* said already; tried again every period */
	s->audit_failing = true;
	s->external_unpauses++;
	fo_err("pair %s: %s (domain %u) runs though it should be paused (%s) and could not be paused: %s", p->cfg.name,
	       s->name, s->domid, why, strerror(-r));
	fo_pair_record(p, FO_EV_EXTERNAL_UNPAUSE, FO_RESULT_FAILED,
		       "%s (domain %u) found %s though it should be paused (%s) and could not be paused: %s; retried every period",
		       s->name, s->domid, seen, why, strerror(-r));
	if (p->state == FO_PAIR_ARMED)
		fo_pair_become(p, FO_PAIR_DEGRADED, "standby %s was unpaused outside failoverd and could not be paused again",
			       s->name);
}
