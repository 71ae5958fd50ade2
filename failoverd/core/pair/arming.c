/* SPDX-License-Identifier: MIT */
/*
 * arming.c - ARMING: deciding a pair's roles from what the hypervisor (and
 * the kernel module's queued events) say, without unpausing anything.
 *
 * Adoption: a restarted daemon takes roles from what Xen says (the running
 * member is the active) and never unpauses anything to arm. Both paused
 * (killed mid-switch) ends DEGRADED, waiting for an operator: resuming a
 * half-done switch without knowing which member failed could restart the
 * faulty one.
 */
#include "core/pair/pair_internal.h"

#include <string.h>

/* A switch the module did while no daemon ran is adopted at start, before
 * the new active's agent is attached: its first heartbeat may take this
 * much longer than grace_ms (xenstore read, grant map, bind; seconds under
 * the lab's emulation). */
#define FO_ATTACH_GRACE_NS (10000ull * 1000000ull)

/*
 * After a daemon start: we last left m[idx] active (the recorded active is
 * this very instance), and Xen has it paused with the other member
 * running. A switch happened that we did not record: a daemon killed
 * between the standby's unpause and writing the verdict (fo_pair_after_switch),
 * the kernel module while no daemon ran and its event lost, or someone
 * else. Which member failed is not known for sure; the safe guess is the
 * one switched away from. Returns its verdict, or NULL.
 */
static const struct fo_verdict *presume_switched_away(struct fo_pair *p, int idx)
{
	const struct fo_verdict *rec;
	struct fo_instance in;

	if (!p->started_blind || !p->env->verdicts)
		return NULL;
	rec = fo_verdicts_active(p->env->verdicts, p->cfg.name);
	fo_pair_member_instance(&p->m[idx], &in);
	if (!rec || !fo_instance_same(&rec->inst, &in))
		return NULL;
	fo_pair_mark_failed(p, &p->m[idx], "unrecorded-switch");
	fo_pair_persist(p);
	return fo_pair_verdict_of(p, &p->m[idx]);
}

/* Both running at arming: the active is the one we last left active, and
 * never a member with a verdict if the other has none. */
static void prefer_active(struct fo_pair *p)
{
	const struct fo_verdict *rec = p->env->verdicts ? fo_verdicts_active(p->env->verdicts, p->cfg.name) : NULL;

	for (int i = 0; rec && i < 2; i++) {
		struct fo_instance in;

		fo_pair_member_instance(&p->m[i], &in);
		if (fo_instance_same(&rec->inst, &in))
			p->active = i;
	}
	if (fo_pair_verdict_of(p, fo_pair_active(p)) && !fo_pair_verdict_of(p, fo_pair_standby(p)))
		p->active = !p->active;
}

/* ARMING: the standby must prove itself (heartbeat progress) within
 * FO_ARM_WAIT_NS; meanwhile the active is watched as usual. */
static void wait_for_standby(struct fo_pair *p, const char *what)
{
	struct fo_member *s = fo_pair_standby(p);

	if (s->deadline_kind != FO_DL_ARM_WAIT)
		set_deadline(s, FO_DL_ARM_WAIT, now_ns(p) + FO_ARM_WAIT_NS);
	fo_pair_arm_active_deadline(p);
	fo_pair_become(p, FO_PAIR_ARMING, "standby %s %s", s->name, what);
}

/*
 * ARMING, one member has no domain and the other runs: with
 * on_failover=rebuild, re-create the missing one now. A rebuild is two
 * steps (destroy the failed member, create it again); a daemon killed
 * between them finds the member gone after its restart, and without this
 * the pair would wait for it for ever, with no standby, until an operator
 * created it (seen in the chaos campaign). Other policies wait: the
 * domain is someone else's to create.
 */
static bool resume_rebuild(struct fo_pair *p, int missing)
{
	struct fo_member *o = &p->m[!missing];

	if (p->cfg.on_failover != FO_ON_FAILOVER_REBUILD || o->domid == FO_DOMID_INVALID ||
	    o->state != FO_DOM_RUNNING)
		return false;
	p->active = !missing;
	fo_pair_arm_active_deadline(p);
	fo_pair_publish_roles(p);
	fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO, "%s has no domain and %s runs: rebuilding %s (on_failover=rebuild)",
		       p->m[missing].name, o->name, p->m[missing].name);
	fo_pair_start_rebuild(p, missing);
	return true;
}

/* ARMING: decide from what the hypervisor says. Never unpauses. */
void fo_pair_arming_evaluate(struct fo_pair *p)
{
	struct fo_member *m = p->m;
	const struct fo_verdict *v;
	bool run0, run1;

	fo_pair_refresh_member(p, &m[0]);
	fo_pair_refresh_member(p, &m[1]);
	for (int i = 0; i < 2; i++)
		if (m[i].domid == FO_DOMID_INVALID) {
			if (resume_rebuild(p, i))
				return;
			fo_pair_become(p, FO_PAIR_ARMING, "waiting for domain %s to exist", m[i].name);
			return;
		}

	if (p->kevent_stored) {
		struct fo_hv_kevent ev = p->kevent;
		int ai = fo_pair_member_by_domid(p, ev.active), si = fo_pair_member_by_domid(p, ev.standby);

		p->kevent_stored = false;
		if (ai >= 0 && si >= 0 && ai != si) {
			/* The module switched while no daemon watched (or just
			 * now, while arming): that is how this pair got here. */
			p->kernel_switches++;
			fo_pair_kernel_adopt_switch(p, &ev, ai);
			/* Its agent is not attached yet (we just started):
			 * reading its keys, mapping, binding come before any
			 * heartbeat can prove it runs. */
			if (p->state == FO_PAIR_SWITCHING && fo_pair_active(p)->deadline_kind == FO_DL_GRACE)
				set_deadline(fo_pair_active(p), FO_DL_GRACE,
					     fo_pair_active(p)->deadline_ns + FO_ATTACH_GRACE_NS);
			return;
		}
		fo_warn("pair %s: the kernel module reported a switch dom%u -> dom%u, not its members; ignored",
			p->cfg.name, ev.active, ev.standby);
	}
	if (p->kernel_ok && fo_pair_kernel_adopt_on_arming(p))
		return;

	run0 = m[0].state == FO_DOM_RUNNING;
	run1 = m[1].state == FO_DOM_RUNNING;
	/* A member suspended (a checkpoint, a migration) as we start, beside
	 * a paused one, was the running one, and libxl resumes it: it is the
	 * active (its heartbeat deadline runs from now), as if running. */
	if (!run0 && !run1) {
		run0 = m[0].state == FO_DOM_SUSPENDED && m[1].state == FO_DOM_PAUSED;
		run1 = m[1].state == FO_DOM_SUSPENDED && m[0].state == FO_DOM_PAUSED;
	}

	if (run0 != run1) {
		int r = run0 ? 0 : 1;
		p->active = r;
		if (fo_dom_state_is_dead(m[!r].state)) {
			m[!r].usable = false;
			fo_pair_become(p, FO_PAIR_DEGRADED, "no standby: %s is %s", m[!r].name,
				       fo_dom_state_name(m[!r].state));
			fo_pair_arm_active_deadline(p);
			fo_pair_publish_roles(p);
			return;
		}
		if (m[!r].state == FO_DOM_SUSPENDED) {
			fo_pair_suspended_standby(p, &m[!r]);
			fo_pair_arm_active_deadline(p);
			fo_pair_publish_roles(p);
			return;
		}
		if (m[!r].fresh && m[!r].paused_unproven) {
			/* Created beside the running active while we were not
			 * arming: the fence audit paused it before its first
			 * heartbeat. Nobody will unpause it, and it cannot prove
			 * itself paused: say so now rather than wait for it. */
			m[!r].usable = false;
			fo_pair_become(p, FO_PAIR_DEGRADED,
				       "standby %s was paused by failoverd before it heartbeated (created beside the running "
				       "active %s): cannot verify it; destroy it and arm again%s, or arm first, then create it",
				       m[!r].name, m[r].name,
				       p->cfg.on_failover == FO_ON_FAILOVER_REBUILD ? " (on_failover=rebuild re-creates it)" : "");
			fo_pair_arm_active_deadline(p);
			fo_pair_publish_roles(p);
			return;
		}
		if (m[!r].fresh) {
			/* It appeared while we watched: paused because libxl is
			 * still building it, not because anyone verified it. It
			 * will be unpaused by its creator; then it must heartbeat
			 * like a first-boot standby before we pause it. */
			wait_for_standby(p, "created while arming; waiting for it to run and heartbeat");
			return;
		}
		/* One running, one paused: adopt. A paused standby cannot show
		 * a heartbeat; it was verified by whoever paused it (us, before
		 * a restart), so we trust it rather than unpause to check -
		 * unless we know (or cannot rule out) that it failed. */
		v = fo_pair_verdict_of(p, &m[!r]);
		if (!v)
			v = presume_switched_away(p, !r);
		if (v) {
			fo_pair_refuse_standby(p, &m[!r], v);
			fo_pair_arm_active_deadline(p);
			fo_pair_publish_roles(p);
			return;
		}
		m[!r].usable = true;
		fo_pair_become_armed(p, "adopted from the hypervisor's state");
		return;
	}

	if (run0 && run1) {
		struct fo_member *s;

		prefer_active(p);
		s = fo_pair_standby(p);
		v = fo_pair_verdict_of(p, s);
		if (v) {
			/* A failed instance someone started again: it must not
			 * run beside the active, and heartbeating proves nothing
			 * about what made it fail. */
			if (!fo_pair_fence_member(p, s)) {
				fo_pair_become(p, FO_PAIR_DEGRADED, "standby %s failed earlier, runs, and could not be paused",
					       s->name);
				return;
			}
			fo_pair_refuse_standby(p, s, v);
			fo_pair_arm_active_deadline(p);
			fo_pair_publish_roles(p);
			return;
		}
		/* First boot: the standby runs until its agent's sequence moves
		 * (a page left by a stopped agent is not enough). */
		if (s->hb.progressed) {
			if (!fo_pair_fence_member(p, s)) {
				fo_pair_become(p, FO_PAIR_DEGRADED, "could not pause standby %s", s->name);
				return;
			}
			s->usable = true;
			fo_pair_become_armed(p, "standby heartbeated, then paused");
			return;
		}
		wait_for_standby(p, "waiting for it to heartbeat before pausing it");
		return;
	}

	/* Nothing runs. */
	if (fo_dom_state_is_dead(m[0].state) && fo_dom_state_is_dead(m[1].state))
		fo_pair_become(p, FO_PAIR_DEGRADED, "both members dead: %s is %s, %s is %s", m[0].name,
			       fo_dom_state_name(m[0].state), m[1].name, fo_dom_state_name(m[1].state));
	else
		fo_pair_become(p, FO_PAIR_DEGRADED, "nothing runs (%s %s, %s %s): choose with `failoverctl switchover`",
			       m[0].name, fo_dom_state_name(m[0].state), m[1].name, fo_dom_state_name(m[1].state));
}
