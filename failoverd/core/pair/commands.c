/* SPDX-License-Identifier: MIT */
/*
 * commands.c - the operator's (and the cluster agent's) commands on a pair:
 * arm, start, disarm, stand-down and a manual switchover. Each decides from
 * what the hypervisor says now; the switch itself is switch_lifecycle.c's.
 */
#include "core/pair/pair_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The operator's (or the cluster agent's) decision that the pair serves
 * on this host again: a stand-down is forgotten. */
static void end_stand_down(struct fo_pair *p)
{
	if (p->env->verdicts && fo_verdicts_stood_down(p->env->verdicts, p->cfg.name)) {
		fo_verdicts_set_stood_down(p->env->verdicts, p->cfg.name, false);
		fo_pair_persist(p);
	}
}

/* Before a decision about the pair's state: no member deadline left from
 * before, and the fence audit running (it watches in every state). */
static void reset_watch(struct fo_pair *p)
{
	for (int i = 0; i < 2; i++)
		set_deadline(&p->m[i], FO_DL_NONE, 0);
	if (!p->audit_next_ns)
		p->audit_next_ns = now_ns(p) + MS(p->cfg.period_ms);
}

void fo_pair_arm(struct fo_pair *p)
{
	end_stand_down(p);
	reset_watch(p);
	p->state = FO_PAIR_ARMING;
	fo_pair_arming_evaluate(p);
}

void fo_pair_start(struct fo_pair *p)
{
	/* We did not watch what happened before: arming checks the last
	 * recorded active against what Xen shows. */
	p->started_blind = true;
	if (!p->env->verdicts || !fo_verdicts_stood_down(p->env->verdicts, p->cfg.name)) {
		fo_pair_arm(p);
		return;
	}
	/* Stood down before this start: hands off, as the cluster left it;
	 * the audit still watches (DISARMED). */
	fo_pair_refresh_member(p, &p->m[0]);
	fo_pair_refresh_member(p, &p->m[1]);
	reset_watch(p);
	fo_pair_become(p, FO_PAIR_DISARMED, "stood down before failoverd started: `switchover` or `arm` resumes it here");
}

void fo_pair_disarm(struct fo_pair *p)
{
	for (int i = 0; i < 2; i++)
		set_deadline(&p->m[i], FO_DL_NONE, 0);
	fo_pair_become(p, FO_PAIR_DISARMED, "disarmed by operator: no automatic switchover");
}

/*
 * `stand-down`: the pair stops serving on this host, because it is served
 * from another one (the cluster resource agent cluster/ocf/pair demotes or
 * stops it). Disarmed first: an armed owner (the kernel module, Xen's
 * watch) would take the active's pause for a failure and start the
 * standby. Then every member that runs is paused and confirmed, the fence
 * of a switch without the unpause: both members stay as they were, warm,
 * and nothing of the pair runs here. Nothing is ever unpaused; `switchover`
 * resumes the pair (the standby unpaused once the other is confirmed
 * paused), `arm` alone finds both paused and stays DEGRADED.
 */
int fo_pair_stand_down(struct fo_pair *p, char *err, size_t errlen)
{
	uint64_t seen = p->kernel_switches;

	/* A rebuilt member may still be on its way (its create is in the
	 * builder's hands): it would appear, running, after the pauses. */
	if (p->state == FO_PAIR_REBUILDING) {
		snprintf(err, errlen, "pair %s is rebuilding %s; retry once it is over", p->cfg.name,
			 p->rebuild_member >= 0 ? p->m[p->rebuild_member].name : "a member");
		return -EAGAIN;
	}
	if (p->kernel_armed && p->kernel_firing) {
		snprintf(err, errlen, "pair %s: %s is switching it; retry once its switch is in `events`",
			 p->cfg.name, fo_pair_owner_desc(p));
		return -EAGAIN;
	}
	/* The owner may have switched and its event not been read yet (Xen's
	 * standby already runs): that switch is adopted first, as for a
	 * `switchover`, and the caller retries once it is over. */
	if (p->kernel_armed) {
		p->env->hv->ops->kernel_poll_events(p->env->hv);
		if (p->kernel_switches != seen) {
			snprintf(err, errlen, "pair %s: %s switched it first; retry once the switch is over",
				 p->cfg.name, fo_pair_owner_desc(p));
			return -EAGAIN;
		}
	}
	for (int i = 0; i < 2; i++)
		set_deadline(&p->m[i], FO_DL_NONE, 0);
	fo_pair_become(p, FO_PAIR_DISARMED, "stood down: no member runs on this host");
	if (p->kernel_armed) {
		/* Its DISARM said EALREADY: it is switching, its event follows. */
		snprintf(err, errlen, "pair %s: %s is switching it; retry once its switch is in `events`",
			 p->cfg.name, fo_pair_owner_desc(p));
		return -EAGAIN;
	}
	for (int i = 0; i < 2; i++) {
		struct fo_member *m = &p->m[i];

		if (m->domid == FO_DOMID_INVALID)
			fo_pair_refresh_member(p, m);
		if (m->domid == FO_DOMID_INVALID)
			continue; /* no domain: nothing of it runs */
		if (!fo_pair_fence_member(p, m)) {
			fo_pair_become(p, FO_PAIR_DISARMED, "stand-down failed: %s could not be paused, it is %s", m->name,
				       fo_dom_state_name(m->state));
			snprintf(err, errlen, "pair %s: %s", p->cfg.name, p->reason);
			return -EIO;
		}
	}
	/* Remembered (the verdict file): a restarted failoverd keeps the pair
	 * DISARMED, where it would otherwise adopt a member someone started
	 * meanwhile and arm the pair again on this host (the SPIN model's
	 * finding F). `switchover` or `arm` ends it. */
	if (p->env->verdicts) {
		fo_verdicts_set_stood_down(p->env->verdicts, p->cfg.name, true);
		fo_pair_persist(p);
	}
	/* Served from the other host now: the standby's state comes from
	 * there (the state stream), not from the paused active here. */
	if (p->env->hv->ops->state_pair)
		p->env->hv->ops->state_pair(p->env->hv, p->cfg.name, fo_pair_active(p)->domid,
					    fo_pair_standby(p)->domid, false);
	return 0;
}

static int request_switchover(struct fo_pair *p, uint64_t now, char *err, size_t errlen);

int fo_pair_request_switchover(struct fo_pair *p, char *err, size_t errlen)
{
	uint64_t now = now_ns(p);
	int r;

	/* Known members: their state only (a hypercall each); a missing one
	 * is looked up by name, since without it there is nothing to switch. */
	for (int i = 0; i < 2; i++)
		if (p->m[i].domid == FO_DOMID_INVALID)
			fo_pair_refresh_member(p, &p->m[i]);
		else
			fo_pair_refresh_state(p, &p->m[i]);
	r = request_switchover(p, now, err, errlen);
	/* A member found gone is forgotten now, after any switch. */
	fo_pair_refresh_identity(p, &p->m[0]);
	fo_pair_refresh_identity(p, &p->m[1]);
	return r;
}

static int request_switchover(struct fo_pair *p, uint64_t now, char *err, size_t errlen)
{
	struct fo_member *to = fo_pair_standby(p);
	uint64_t seen = p->kernel_switches;

	/* The owner may have switched and its event not been read yet (Xen's
	 * standby already runs): read it before judging the members. */
	if (p->kernel_armed && !p->kernel_firing) {
		p->env->hv->ops->kernel_poll_events(p->env->hv);
		if (p->kernel_switches != seen) {
			snprintf(err, errlen, "pair %s: %s switched it first; see `events`", p->cfg.name,
				 fo_pair_owner_desc(p));
			return -EALREADY;
		}
		to = fo_pair_standby(p);
	}

	switch (p->state) {
	case FO_PAIR_ARMED:
	case FO_PAIR_DISARMED:
	case FO_PAIR_DEGRADED:
		break;
	default:
		snprintf(err, errlen, "pair %s is %s: %s", p->cfg.name, fo_pair_state_name(p->state),
			 "wait until it is ARMED, DEGRADED or DISARMED");
		return -EBUSY;
	}
	if (to->domid == FO_DOMID_INVALID || to->state != FO_DOM_PAUSED) {
		snprintf(err, errlen, "pair %s: standby %s is %s, not a paused domain that can take over",
			 p->cfg.name, to->name, to->domid == FO_DOMID_INVALID ? "missing" : fo_dom_state_name(to->state));
		return -ENODEV;
	}
	if (fo_pair_verdict_of(p, to)) {
		char what[96];

		fo_verdict_describe(fo_pair_verdict_of(p, to), what, sizeof(what));
		snprintf(err, errlen, "pair %s: standby %s %s; clear with failoverctl clear-failed %s first",
			 p->cfg.name, to->name, what, to->name);
		return -EPERM;
	}
	end_stand_down(p);
	switch (fo_pair_begin_switchover(p, FO_FAULT_MANUAL, now, now)) {
	case 0:
		return 0;
	case -EALREADY:
		snprintf(err, errlen, "pair %s: %s switched it first; see `events`",
			 p->cfg.name, fo_pair_owner_desc(p));
		return -EALREADY;
	case -ENODEV:
	case -EIO:
		snprintf(err, errlen, "pair %s: switchover failed: %s", p->cfg.name, p->reason);
		return -EIO;
	default:
		snprintf(err, errlen, "pair %s: %s would not give the pair back; nothing done",
			 p->cfg.name, fo_pair_owner_desc(p));
		return -EBUSY;
	}
}
