/* SPDX-License-Identifier: MIT */
/*
 * domains.c - a change of the members' domains (@releaseDomain, a domain
 * found running, crashed, suspended or gone): a dead active fails over, a
 * standby found running beside the active is fenced at once (the
 * invariant), a suspended one is no standby.
 */
#include "core/pair/pair_internal.h"

#include <stdio.h>
#include <string.h>

static enum fo_fault fault_of_state(enum fo_dom_state s)
{
	switch (s) {
	case FO_DOM_CRASHED:
		return FO_FAULT_CRASHED;
	case FO_DOM_SHUTDOWN:
		return FO_FAULT_SHUTDOWN;
	default:
		return FO_FAULT_GONE;
	}
}

/*
 * A suspended active (xl save -c, a migration, Remus/COLO: Xen's shutdown
 * with reason suspend, and @releaseDomain) is not a fault: libxl resumes
 * it, or destroys it once saved (then it is gone, a fault). Its heartbeat
 * deadline still runs: a suspend that outlasts timeout_ms fails over like
 * any silence, and the fenced switch pauses it first, as a resume would
 * start it. Said once per suspend.
 */
static void note_suspend(struct fo_pair *p, struct fo_member *a)
{
	if (a->state != FO_DOM_SUSPENDED) {
		a->suspend_seen = false;
		return;
	}
	if (a->suspend_seen || (p->state != FO_PAIR_ARMED && p->state != FO_PAIR_DEGRADED))
		return;
	a->suspend_seen = true;
	fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
		       "active %s (domain %u) is suspended (a save, checkpoint or migration): no switchover unless it stays silent beyond timeout_ms (%u ms)",
		       a->name, a->domid, p->cfg.timeout_ms);
}

/*
 * A suspended standby is not dead, and has not failed, but it is no standby
 * either: an unpause does not start it, and libxl's resume would run it
 * beside the active unless it is paused. Paused, then DEGRADED until an
 * operator arms the pair again (`failoverctl arm`).
 */
void fo_pair_suspended_standby(struct fo_pair *p, struct fo_member *s)
{
	s->usable = false;
	fo_pair_become(p, FO_PAIR_DEGRADED, "standby %s is suspended (a save, checkpoint or migration); %s; arm again once it is back",
		       s->name, fo_pair_fence_member(p, s) ? "paused" : "could not pause it (retried every period)");
}

/*
 * @releaseDomain, first half: an ARMED pair whose active is dead switches
 * now, on two domain-info reads (the standby's too: a dead one is no
 * standby). Nothing else before the switch: forgetting a gone member,
 * name lookups and the invariant check are fo_pair_on_domains_changed()'s,
 * which the manager runs for every pair after every pair's first half.
 */
void fo_pair_domains_fault(struct fo_pair *p)
{
	uint64_t now = now_ns(p);
	struct fo_member *a = fo_pair_active(p);

	if (p->state != FO_PAIR_ARMED || !fo_pair_refresh_state(p, a) || !fo_dom_state_is_dead(a->state))
		return;
	fo_pair_refresh_state(p, fo_pair_standby(p));
	fo_pair_fail_over(p, fault_of_state(a->state), now, now);
}

void fo_pair_on_domains_changed(struct fo_pair *p)
{
	struct fo_member *a, *s;
	uint64_t now;

	fo_pair_domains_fault(p);
	now = now_ns(p);
	/* An owner we wait for may be gone without its outcome (a RELEASE by
	 * another tool): the pair is ours again. ARMED, the owner had found
	 * the active failed and fenced it: its heartbeat deadline, long past,
	 * is due now, and our own switch away from it runs first thing in the
	 * next turn, before a fence audit could take a standby Xen started
	 * for one running behind our back. Any other state goes on as it is
	 * (ARMING decides again below; DEGRADED is audited again). */
	if (fo_pair_kernel_gone_while_firing(p) && p->state == FO_PAIR_ARMED)
		set_deadline(fo_pair_active(p), FO_DL_HEARTBEAT, now);
	if (p->state == FO_PAIR_ARMING) {
		fo_pair_arming_evaluate(p);
		fo_pair_persist(p); /* a verdict on an instance that is gone, dropped */
		return;
	}
	fo_pair_refresh_member(p, &p->m[0]);
	fo_pair_refresh_member(p, &p->m[1]);
	a = fo_pair_active(p);
	s = fo_pair_standby(p);

	/* The invariant first, in every state. An owner (the kernel module,
	 * Xen's watch) may have started the standby itself: its switch is
	 * read first, and a firing owner is left to finish (SPIN model,
	 * finding C). */
	if (a->state == FO_DOM_RUNNING && s->state == FO_DOM_RUNNING && p->rebuild_member != !p->active) {
		uint64_t seen = p->kernel_switches;

		if (!fo_pair_kernel_yield_for_fence(p)) {
			if (p->kernel_switches != seen)
				return; /* its switch was adopted: that decided */
		}
		/* Nobody but us unpauses a standby: whoever did is a third
		 * party, reported like the fence audit's own finding (this
		 * path sees it first when the domain change is news already). */
		else if (fo_pair_fence_member(p, s)) {
			s->external_unpauses++;
			fo_pair_record(p, FO_EV_EXTERNAL_UNPAUSE, FO_RESULT_OK,
				       "%s (domain %u) found running beside the active; paused again", s->name, s->domid);
		}
		else if (p->state == FO_PAIR_ARMED)
			/* A standby we cannot keep paused protects nothing. */
			fo_pair_become(p, FO_PAIR_DEGRADED, "standby %s runs beside the active and could not be paused",
				       s->name);
	}

	note_suspend(p, a);
	switch (p->state) {
	case FO_PAIR_ARMED:
		if (fo_dom_state_is_dead(a->state)) {
			fo_pair_fail_over(p, fault_of_state(a->state), now, now);
			return;
		}
		if (fo_dom_state_is_dead(s->state)) {
			s->usable = false;
			fo_pair_become(p, FO_PAIR_DEGRADED, "standby %s is %s", s->name, fo_dom_state_name(s->state));
		}
		else if (s->state == FO_DOM_SUSPENDED)
			fo_pair_suspended_standby(p, s);
		break;
	case FO_PAIR_SWITCHING:
		if (fo_dom_state_is_dead(a->state)) {
			struct fo_event *e = fo_pair_pending_switch_event(p);
			if (e)
				e->pending = false;
			p->switch_event_id = 0;
			set_deadline(a, FO_DL_NONE, 0);
			fo_pair_become(p, FO_PAIR_DEGRADED, "new active %s is %s right after the switch", a->name,
				       fo_dom_state_name(a->state));
		}
		break;
	case FO_PAIR_REBUILDING:
		if (p->rebuild_member >= 0 && fo_dom_state_is_dead(a->state))
			fo_pair_become(p, FO_PAIR_DEGRADED, "active %s is %s while rebuilding the standby", a->name,
				       fo_dom_state_name(a->state));
		break;
	default:
		break;
	}
	/* A verdict on an instance that is gone (fo_pair_refresh_member dropped it):
	 * written here, after any switch above, never before one. */
	fo_pair_persist(p);
}
