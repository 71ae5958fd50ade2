/* SPDX-License-Identifier: MIT */
/*
 * audit.c - the fence audit: every period, a standby found running though it
 * should be paused (an operator's `xl unpause`, a toolstack) is paused again.
 */
#include "core/pair/pair_internal.h"

#include <errno.h>
#include <string.h>

/* Why `s`, the standby, must not run now; NULL if it may. */
static const char *audit_should_be_paused(struct fo_pair *p, const struct fo_member *a, const struct fo_member *s)
{
	if (member_verdict(p, s))
		return "it failed";
	if (p->state == FO_PAIR_ARMED)
		return "the pair's standby";
	if (a->state == FO_DOM_RUNNING)
		return "the active runs";
	return NULL;
}

/* The pair is the module's and its standby runs: the module must let go
 * before we pause anything, or a switch of its own could be undone (we
 * would pause the member it just started). True if the pair is ours now. */
static bool audit_take_from_kernel(struct fo_pair *p)
{
	uint64_t seen = p->kernel_switches;
	int r;

	if (!p->kernel_armed)
		return true;
	/* The module may have switched since we last read its device (then
	 * the running "standby" is its new active): its event first. */
	p->env->hv->ops->kernel_poll_events(p->env->hv);
	if (p->kernel_switches != seen || p->state != FO_PAIR_ARMED || !p->kernel_armed || p->kernel_firing)
		return false;
	r = take_from_kernel(p);
	if (r == -EALREADY)
		return false; /* it switched or is switching: its event decides */
	if (r < 0) {
		if (fo_ratelimit_ok(&fo_pair_standby(p)->garbage_rl, now_ns(p)))
			fo_warn("pair %s: standby %s runs while the kernel module has the pair, and the module would not give it back: %s",
				p->cfg.name, fo_pair_standby(p)->name, strerror(-r));
		return false;
	}
	arm_active_deadline_if_armed(p); /* ours until re-armed there */
	return true;
}

void fo_pair_audit(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a, *s;
	const char *why;
	int r;

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
	if (s->state != FO_DOM_RUNNING) {
		s->audit_failing = false;
		return;
	}
	why = audit_should_be_paused(p, a, s);
	if (!why || !audit_take_from_kernel(p))
		return;
	r = fo_fence(hv, s->domid, &s->state);
	if (r == 0) {
		s->external_unpauses++;
		record(p, FO_EV_EXTERNAL_UNPAUSE, FO_RESULT_OK,
		       "%s (domain %u) found running though it should be paused (%s); paused again",
		       s->name, s->domid, why);
		s->audit_failing = false;
		if (p->state == FO_PAIR_ARMED) {
			p->kernel_retry_ns = 0;
			kernel_try_arm(p);
		}
		return;
	}
	if (s->audit_failing)
		return; /* said already; tried again every period */
	s->audit_failing = true;
	s->external_unpauses++;
	fo_err("pair %s: %s (domain %u) runs though it should be paused (%s) and could not be paused: %s", p->cfg.name,
	       s->name, s->domid, why, strerror(-r));
	record(p, FO_EV_EXTERNAL_UNPAUSE, FO_RESULT_FAILED,
	       "%s (domain %u) found running though it should be paused (%s) and could not be paused: %s; retried every period",
	       s->name, s->domid, why, strerror(-r));
	if (p->state == FO_PAIR_ARMED)
		become(p, FO_PAIR_DEGRADED, "standby %s was unpaused outside failoverd and could not be paused again",
		       s->name);
}
