/* SPDX-License-Identifier: MIT */
/*
 * switch_lifecycle.c - a switch of the pair around fo_switchover_execute(): the
 * automatic failover (fo_pair_fail_over), the one owner check, the event and its
 * phases, the failed member's verdict, the statistics, and the end of
 * SWITCHING (the new active's first heartbeat).
 * Ours and the kernel module's switches end the same way (fo_pair_after_switch).
 */
#include "core/pair/pair_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct fo_event *fo_pair_pending_switch_event(struct fo_pair *p)
{
	struct fo_event *e = (struct fo_event *)fo_event_ring_find(p->env->ring, p->switch_event_id);
	return e && e->pending ? e : NULL;
}

/* The event of a switch from `from` to `to`, ours or the module's, claimed
 * from the preallocated ring: on the real-time path, nothing is allocated
 * or logged. The caller fills in the phases. */
struct fo_event *fo_pair_claim_switch_event(struct fo_pair *p, uint64_t detected_ns, enum fo_fault fault, bool drill,
					    const struct fo_member *from, const struct fo_member *to)
{
	struct fo_event *e = fo_event_ring_claim(p->env->ring, detected_ns);

	e->kind = drill ? FO_EV_DRILL : FO_EV_SWITCHOVER;
	e->fault = fault;
	e->deadline_ms = p->cfg.deadline_ms;
	e->budget_ms = p->cfg.timeout_ms + p->cfg.period_ms + p->cfg.deadline_ms;
	e->pending = true;
	memcpy(e->pair, p->cfg.name, sizeof(e->pair));
	memcpy(e->from, from->name, sizeof(e->from));
	memcpy(e->to, to->name, sizeof(e->to));
	return e;
}

/* The switch is over: the new active heartbeated (or did not, in time). */
void fo_pair_finish_switch(struct fo_pair *p, bool heartbeated)
{
	struct fo_event *e;

	/* What follows (a rebuild of the failed member, a standby refused)
	 * builds on the switch's after-work having been done. */
	fo_pair_after_work(p);
	e = fo_pair_pending_switch_event(p);

	if (e) {
		if (heartbeated)
			e->phase_ns[FO_PHASE_FIRST_HEARTBEAT] = now_ns(p);
		else
			e->result = FO_RESULT_DEGRADED;
		e->pending = false;
		if (p->drill_active && p->drill_event_id == e->id) {
			p->drill_active = false;
			p->drill_done_id = e->id;
		}
	}
	p->switch_event_id = 0;

	if (!heartbeated) {
		set_deadline(fo_pair_active(p), FO_DL_NONE, 0);
		fo_pair_become(p, FO_PAIR_DEGRADED, "new active %s did not heartbeat within %u ms of the switch",
			       fo_pair_active(p)->name, p->cfg.grace_ms);
		/* It runs and may yet come up (its agent slow to notice it was
		 * unpaused): a late first heartbeat resumes from here
		 * (fo_pair_on_heartbeat). */
		p->late_since_ns = e && e->phase_ns[FO_PHASE_UNPAUSE_DONE] ? e->phase_ns[FO_PHASE_UNPAUSE_DONE]
									   : now_ns(p);
		return;
	}
	fo_pair_after_first_heartbeat(p);
}

/* The new active heartbeated (in its grace, or late): watch it, and give
 * the pair a standby again as its policy says. */
void fo_pair_after_first_heartbeat(struct fo_pair *p)
{
	struct fo_member *old = fo_pair_standby(p);

	p->late_since_ns = 0;
	/* The switch's move of the service network did not complete: the
	 * bridge as the roles say first, or DEGRADED until it can be. */
	if (p->net_stale && !fo_pair_service_enforce(p, true))
		return;
	fo_pair_arm_active_deadline(p);
	if (!p->switch_was_fault && old->usable && !fo_pair_verdict_of(p, old)) {
		fo_pair_become_armed(p, "roles swapped by switchover");
		return;
	}
	if (p->cfg.on_failover == FO_ON_FAILOVER_REBUILD) {
		fo_pair_start_rebuild(p, !p->active);
		return;
	}
	if (fo_pair_verdict_of(p, old)) {
		fo_pair_refuse_standby(p, old, fo_pair_verdict_of(p, old));
		return;
	}
	fo_pair_become(p, FO_PAIR_DEGRADED, "no standby: %s failed and was %s", old->name,
		       p->cfg.on_failover == FO_ON_FAILOVER_DESTROY ? "destroyed" : "kept paused");
}

/*
 * Fault or request -> fenced switch. Everything from here to
 * fo_switchover_execute() returning is the real-time path: the event slot
 * is claimed from the preallocated ring, nothing is logged.
 */
int fo_pair_begin_switchover(struct fo_pair *p, enum fo_fault fault, uint64_t fault_ns, uint64_t detected_ns)
{
	struct fo_member *from = fo_pair_active(p), *to = fo_pair_standby(p);
	struct fo_switch_outcome out;
	bool drill = p->drill_active && p->drill_event_id == 0;
	struct fo_event *e;
	int r;

	/* A switch of this pair earlier in the same turn is finished first
	 * (its roles, on_failover): this one starts from a whole pair. */
	fo_pair_after_work(p);
	/* A suspended standby is not dead, but no unpause starts it. */
	if (to->domid == FO_DOMID_INVALID || fo_dom_state_is_dead(to->state) || to->state == FO_DOM_SUSPENDED)
		return -ENODEV;
	/* One owner per pair: an armed owner lets go first, or it already
	 * acted. A refusal is -EBUSY to our callers, whatever the module said:
	 * -EIO from here means a switch that ran and did not end well. */
	if (p->kernel_armed) {
		r = fo_pair_kernel_take_back(p);
		if (r == -EALREADY)
			return r;
		if (r < 0) {
			fo_warn("pair %s: the kernel module would not give the pair back: %s", p->cfg.name,
				strerror(-r));
			return -EBUSY;
		}
	}

	e = fo_pair_claim_switch_event(p, detected_ns, fault, drill, from, to);
	e->phase_ns[FO_PHASE_FAULT] = drill ? p->drill_inject_ns : fault_ns;
	e->phase_ns[FO_PHASE_DETECTED] = detected_ns;
	e->phase_ns[FO_PHASE_DECIDED] = now_ns(p);
	p->state = FO_PAIR_SWITCHING;

	/* The service network moves between the fence and the unpause. */
	p->net_move_tried = false;
	/* An active found gone keeps its domid until fo_pair_refresh_identity() runs,
	 * after this: to the switch it is what a forgotten one is. */
	fo_switchover_execute(p->env->hv, from->state == FO_DOM_GONE ? FO_DOMID_INVALID : from->domid, to->domid,
			      e->phase_ns, &(struct fo_switch_hook){ .fenced = fo_pair_service_fenced, .arg = p }, &out);

	/* ---- the standby runs (or we stopped safely); the rest can take time ---- */
	if (p->env->hv->ops->switch_path)
		snprintf(e->path, sizeof(e->path), "%s", p->env->hv->ops->switch_path(p->env->hv));
	if (fault == FO_FAULT_HEARTBEAT_STUCK)
		snprintf(e->message, sizeof(e->message),
			 "%s still heard the agent, but as failoverd reads the page its sequence stuck at %llu for %llu ms (seen by failoverd only)",
			 fo_pair_owner_desc(p), (unsigned long long)from->hb.sequence,
			 (unsigned long long)((detected_ns - (from->hb.progressed ? from->hb.last_progress_ns : fault_ns)) /
					      1000000ull));
	return fo_pair_after_switch(p, e, &out, fault, drill);
}

/* An automatic failover: a fault on the active (its heartbeat deadline, an
 * unhealthy page, missed deadlines, its death), `fault_ns` when it began. */
void fo_pair_fail_over(struct fo_pair *p, enum fo_fault fault, uint64_t fault_ns, uint64_t now)
{
	int r = fo_pair_begin_switchover(p, fault, fault_ns, now);

	if (r == -ENODEV) {
		fo_pair_mark_failed(p, fo_pair_active(p), fo_fault_name(fault));
		fo_pair_persist(p);
		fo_pair_become(p, FO_PAIR_DEGRADED, "active %s failed (%s) and there is no standby to take over",
			       fo_pair_active(p)->name, fo_fault_name(fault));
	}
	else if (r == -EBUSY)
		/* The module still has the pair and would not give it back:
		 * it stays the owner (it switches on heartbeat loss). */
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO, "active %s failed (%s) but the kernel module would not give the pair back",
			       fo_pair_active(p)->name, fo_fault_name(fault));
	/* -EIO: the switch ran and failed; its event and DEGRADED say why. */
}

/*
 * A manual switchover paused a healthy active and could not start the
 * standby: start the active again, but only once the standby is confirmed
 * fenced ("could not be started" may also mean "started, but we could not
 * confirm"), only if it was our pause that stopped it, and believing the
 * domain info, not the unpause's 0: Xen counts pauses, so a domain that
 * someone else paused as well stays paused after ours is undone.
 */
static void give_back(struct fo_pair *p, struct fo_member *from, struct fo_member *to, bool paused_by_us)
{
	struct fo_hv *hv = p->env->hv;
	int r;

	if (fo_fence(hv, to->domid, &to->state) < 0) {
		fo_err("pair %s: standby %s not confirmed paused after the failed switchover; %s stays paused",
		       p->cfg.name, to->name, from->name);
		return;
	}
	if (!paused_by_us) {
		fo_warn("pair %s: %s was paused before the switchover (not by failoverd); left paused", p->cfg.name,
			from->name);
		return;
	}
	r = hv->ops->unpause(hv, from->domid);
	if (hv->ops->get_state(hv, from->domid, &from->state) == 0 && from->state == FO_DOM_RUNNING) {
		fo_pair_arm_active_deadline(p);
		return;
	}
	fo_err("pair %s: could not start %s again after the failed switchover (unpause: %s); it is %s", p->cfg.name,
	       from->name, r < 0 ? strerror(-r) : "ok", fo_dom_state_name(from->state));
}

/* Everything after the fenced sequence, ours or the module's: `e` holds the
 * phases, `out` how it ended. The pair's active is still the old one. */
int fo_pair_after_switch(struct fo_pair *p, struct fo_event *e, const struct fo_switch_outcome *outp,
			 enum fo_fault fault, bool drill)
{
	struct fo_member *from = fo_pair_active(p), *to = fo_pair_standby(p);
	struct fo_switch_outcome out = *outp;
	bool service_followed = true;
	uint64_t started;

	/* First, still on the real-time path: the service's identity to the
	 * new active (pairs[].network), if it did not move between the fence
	 * and the unpause, and its announcement. */
	if (out.result == FO_RESULT_OK)
		service_followed = fo_pair_service_move(p, e, p->active);
	else
		fo_pair_service_switch_failed(p);
	from->state = out.from_state;
	to->state = out.to_state;
	/*
	 * The verdict, in memory: the standby already runs (or we stopped
	 * safely), and writing it waits for fo_pair_persist() below, which in the
	 * daemon's loop holds it to the end of the turn, so that other pairs
	 * whose faults are due in this turn switch first. A daemon killed in
	 * between leaves no verdict on file, but the recorded active is still
	 * `from`: a restarted daemon finding `from` paused and `to` running
	 * presumes `from` failed (presume_switched_away). A manual switch
	 * killed there is presumed failed too: the safe side, cleared by the
	 * operator.
	 */
	if (fault != FO_FAULT_MANUAL)
		fo_pair_mark_failed(p, from, fo_fault_name(fault));
	e->result = out.result == FO_RESULT_OK && !service_followed ? FO_RESULT_DEGRADED : out.result;
	if (from->suspend_seen) {
		/* Silent because the toolstack suspended it (the fence
		 * paused it, so that libxl's resume cannot start it). */
		snprintf(e->message + strlen(e->message), sizeof(e->message) - strlen(e->message),
			 "%s%s was suspended (a save, checkpoint or migration)", e->message[0] ? "; " : "", from->name);
		from->suspend_seen = false;
	}
	if (out.why)
		snprintf(e->message + strlen(e->message), sizeof(e->message) - strlen(e->message), "%s%s",
			 e->message[0] ? "; " : "", out.why);
	if (drill) {
		p->drill_event_id = e->id;
		snprintf(e->message + strlen(e->message), sizeof(e->message) - strlen(e->message), "%sdrill %s",
			 e->message[0] ? "; " : "", fo_drill_kind_name(p->drill_kind));
	}
	set_deadline(from, FO_DL_NONE, 0);

	if (out.result != FO_RESULT_OK) {
		p->stats.failed_switches++;
		e->pending = false;
		if (drill) {
			p->drill_active = false;
			p->drill_done_id = e->id;
		}
		if (out.result == FO_RESULT_FAILED && fault == FO_FAULT_MANUAL)
			give_back(p, from, to, out.paused_from);
		fo_pair_persist(p);
		fo_pair_become(p, FO_PAIR_DEGRADED, "switchover %s -> %s %s: %s", from->name, to->name,
			       fo_event_result_name(out.result), out.why);
		return -EIO;
	}

	p->stats.switches++;
	memcpy(p->stats.last_switch_ns, e->phase_ns, sizeof(p->stats.last_switch_ns));
	p->stats.last_switch_time_ns = e->phase_ns[FO_PHASE_UNPAUSE_DONE];
	{
		uint64_t pause_us = (e->phase_ns[FO_PHASE_PAUSE_DONE] - e->phase_ns[FO_PHASE_PAUSE_ISSUED]) / 1000;
		uint64_t unpause_us =
			(e->phase_ns[FO_PHASE_UNPAUSE_DONE] - e->phase_ns[FO_PHASE_UNPAUSE_ISSUED]) / 1000;
		uint64_t total_us = (e->phase_ns[FO_PHASE_UNPAUSE_DONE] - e->phase_ns[FO_PHASE_FAULT]) / 1000;
		if (pause_us > p->stats.max_pause_us)
			p->stats.max_pause_us = pause_us;
		if (unpause_us > p->stats.max_unpause_us)
			p->stats.max_unpause_us = unpause_us;
		if (total_us > p->stats.max_total_us)
			p->stats.max_total_us = total_us;
	}

	p->active = !p->active;
	p->switch_event_id = e->id;
	p->switch_was_fault = fault != FO_FAULT_MANUAL;
	from->usable = !p->switch_was_fault;
	fo_pair_mark_active(p);
	/* Only a sequence beyond the one it had before it was paused proves
	 * the new active runs; the old one stays as the baseline so that the
	 * first beat after the unpause already counts. */
	fo_hb_require_progress(&to->hb);
	/* From now at the earliest: a switch the module did while no daemon
	 * ran is only learnt at restart. */
	started = e->phase_ns[FO_PHASE_UNPAUSE_DONE];
	if (started < now_ns(p))
		started = now_ns(p);
	set_deadline(to, FO_DL_GRACE, started + MS(p->cfg.grace_ms));
	fo_pair_persist(p);
	/*
	 * What is left can wait for the other switches due in this turn of
	 * the loop: the roles (xenstore writes) and on_failover (destroy, by
	 * hypercall, on Xen a millisecond or more). The manager runs it once
	 * every pair whose fault is due has switched (fo_manager_after_work).
	 * The pair is whole without it: the verdict and the new active are
	 * recorded, the new active has its grace deadline.
	 */
	p->after_work_pending = true;
	p->after_work_failed = p->switch_was_fault ? (int)(from - p->m) : -1;
	if (p->env->in_turn) {
		p->env->after_work_held = true;
		return 0;
	}
	fo_pair_after_work(p);
	return 0;
}

void fo_pair_after_work(struct fo_pair *p)
{
	if (!p->after_work_pending)
		return;
	p->after_work_pending = false;
	fo_pair_publish_roles(p);
	if (p->after_work_failed >= 0)
		fo_pair_apply_on_failover(p, &p->m[p->after_work_failed]);
}
