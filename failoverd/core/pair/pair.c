/* SPDX-License-Identifier: MIT */
/*
 * pair.c - the pair state machine.
 *
 *                 start / `arm`
 *                      |
 *                      v
 *    +---------------ARMING----------------------------+
 *    | both found, one running + one paused (adopt)    |  standby never heartbeats,
 *    | or both running and the standby heartbeated     |  a member missing/dead,
 *    | -> standby fenced (paused, confirmed)           |  both paused
 *    v                                                 v
 *  ARMED --- fault on active -------------------> SWITCHING        DEGRADED
 *    ^  \--- `switchover` / drill --------------->  |  |  |           ^  ^
 *    |                                              |  |  |           |  |
 *    |   new active's first heartbeat, old active   |  |  |           |  |
 *    +------ was healthy (manual switchover) -------+  |  |           |  |
 *    |                                                 |  +-----------+  |
 *    |   new active's first heartbeat, old active      | fence failed (standby untouched),
 *    |   failed, on_failover=rebuild                   | standby did not start, no heartbeat
 *    |                       v                         | within grace, old active failed and
 *    +-------------- REBUILDING <----------------------+ is kept paused / destroyed
 *        rebuilt member heartbeated, then fenced          (-> DEGRADED: "no standby")
 *
 *  `disarm` from any state -> DISARMED (watched, never switched automatically);
 *  `arm` from DISARMED or DEGRADED -> ARMING.
 *
 * Invariant, in every state: two members of a pair never run at once. The
 * only way a member starts running through us is fo_switchover_execute(),
 * which unpauses only after the other is confirmed fenced. If we ever see
 * both running (an operator's `xl unpause`), the standby is fenced at once.
 * The one exception we accept is the first boot of a pair in ARMING: the
 * standby must run until it has heartbeated once (warm standby), then it is
 * paused; it never becomes active before that.
 *
 * The rest of the pair lives beside this file, one concern each:
 *   arming.c           ARMING: roles from what the hypervisor says (adoption)
 *   kernel_owner.c     one owner per pair: handing it to kmod-switch and
 *                      back, and the owner's own heartbeat deadline
 *   switch_lifecycle.c a pair's switch from its fault to the new active's
 *                      first heartbeat, around fo_switchover_execute():
 *                      its event, the failed member's verdict, SWITCHING
 *   policy.c           on_failover: what becomes of the failed member
 *   members.c          the two domains: found by name, watched, placed,
 *                      told their roles
 *   verdicts.c         a failed member is never trusted again
 *   audit.c            the fence audit: a standby running behind our back
 *   drill.c            drills: an injected fault, judged like a real one
 * Here: the transitions, the switch's entry points and the inputs of pair.h.
 */
#include "core/pair/pair_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *fo_pair_state_name(enum fo_pair_state s)
{
	static const char *const names[] = { "ARMING", "ARMED", "SWITCHING", "DEGRADED", "DISARMED", "REBUILDING" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

int fo_pair_member_by_domid(const struct fo_pair *p, fo_domid_t domid)
{
	for (int i = 0; i < 2; i++)
		if (p->m[i].domid == domid && domid != FO_DOMID_INVALID)
			return i;
	return -1;
}

struct fo_event *fo_pair_record(struct fo_pair *p, enum fo_event_kind kind, enum fo_event_result result,
			const char *fmt, ...)
{
	struct fo_event *e = fo_event_ring_claim(p->env->ring, now_ns(p));
	va_list ap;

	e->kind = kind;
	e->result = result;
	e->deadline_ms = p->cfg.deadline_ms;
	snprintf(e->pair, sizeof(e->pair), "%s", p->cfg.name);
	snprintf(e->from, sizeof(e->from), "%s", fo_pair_active(p)->name);
	snprintf(e->to, sizeof(e->to), "%s", fo_pair_standby(p)->name);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return e;
}

/* Enter a state, with the reason shown by `status`, and keep an event for
 * the states an operator must know about. */
void fo_pair_become(struct fo_pair *p, enum fo_pair_state s, const char *fmt, ...)
{
	enum fo_pair_state old = p->state;
	char old_reason[sizeof(p->reason)];
	va_list ap;

	memcpy(old_reason, p->reason, sizeof(old_reason));
	va_start(ap, fmt);
	vsnprintf(p->reason, sizeof(p->reason), fmt, ap);
	va_end(ap);
	p->state = s;
	p->late_since_ns = 0; /* any new decision ends a wait for a late heartbeat */
	p->net_blocked = false; /* fo_pair_service_enforce() sets it again when it is the reason */
	if (s != FO_PAIR_ARMING)
		p->started_blind = false; /* decided: from here on we watch */
	/* The module must not switch a pair we consider unprotected. */
	if (p->kernel_armed && (s == FO_PAIR_DEGRADED || s == FO_PAIR_DISARMED || s == FO_PAIR_REBUILDING))
		fo_pair_kernel_disarm(p);
	/* DEGRADED again is news when the reason is new; the same reason
	 * again (a retry every second that fails the same way) is not, and
	 * would push the events that matter out of the ring. */
	if (old == s && (s != FO_PAIR_DEGRADED || strcmp(old_reason, p->reason) == 0))
		return;
	switch (s) {
	case FO_PAIR_ARMED:
		fo_pair_record(p, FO_EV_ARMED, FO_RESULT_INFO, "active %s, standby %s%s%s", fo_pair_active(p)->name,
		       fo_pair_standby(p)->name, p->reason[0] ? ": " : "", p->reason);
		break;
	case FO_PAIR_DEGRADED:
		fo_pair_record(p, FO_EV_DEGRADED, FO_RESULT_INFO, "%s", p->reason);
		break;
	case FO_PAIR_DISARMED:
		fo_pair_record(p, FO_EV_DISARMED, FO_RESULT_INFO, "%s", p->reason);
		break;
	default:
		break;
	}
}

/* How long after its last progress the active's deadline fires. While the
 * module has the pair, it is the module that reacts at timeout_ms; ours is
 * one period later, so that a heartbeat loss finds the module already
 * switching (its deadline counts from the notification, ours from our
 * read of the page, which is never earlier), not a race with it; what we
 * do then is the backstop, fo_pair_kernel_on_deadline(). */
static uint64_t hb_timeout_ns(const struct fo_pair *p)
{
	uint64_t t = MS(p->cfg.timeout_ms);

	return p->kernel_armed ? t + MS(p->cfg.period_ms) : t;
}

/* The active must heartbeat within timeout_ms of its last progress (or of
 * now, if it has not heartbeated since we started watching it). */
void fo_pair_arm_active_deadline(struct fo_pair *p)
{
	struct fo_member *a = fo_pair_active(p);
	uint64_t now = now_ns(p);
	uint64_t t = hb_timeout_ns(p);
	uint64_t at = now + (t > MS(p->cfg.grace_ms) ? t : MS(p->cfg.grace_ms));

	p->kstuck.looked = false; /* a new deadline: the stuck check starts over */
	if (a->hb.progressed && a->hb.last_progress_ns + t > now)
		at = a->hb.last_progress_ns + t;
	set_deadline(a, FO_DL_HEARTBEAT, at);
}

/* The deadline follows who owns the pair (hb_timeout_ns). */
void fo_pair_arm_active_deadline_if_armed(struct fo_pair *p)
{
	if (p->state == FO_PAIR_ARMED)
		fo_pair_arm_active_deadline(p);
}

void fo_pair_become_armed(struct fo_pair *p, const char *how)
{
	/* Verified at arm time; a drift is reported, never a reason to leave
	 * the pair unprotected. */
	fo_pair_check_placement(p);
	p->m[0].fresh = p->m[1].fresh = false;
	p->m[0].paused_unproven = p->m[1].paused_unproven = false;
	set_deadline(fo_pair_standby(p), FO_DL_NONE, 0);
	/* The service network as the roles say, or DEGRADED with why (and
	 * tried again by the audit): the roles are still recorded. */
	if (!fo_pair_service_enforce(p, false)) {
		fo_pair_mark_active(p);
		fo_pair_persist(p);
		fo_pair_publish_roles(p);
		return;
	}
	fo_pair_arm_active_deadline(p);
	fo_pair_become(p, FO_PAIR_ARMED, "%s", how);
	fo_pair_mark_active(p);
	fo_pair_persist(p);
	fo_pair_publish_roles(p);
	fo_pair_kernel_try_arm(p);
}

/* Fence a member outside a switchover (arming, a standby started behind our
 * back). Returns true if it is confirmed fenced. A failure is logged and
 * kept as an event, m->state is what Xen says (never "paused" on trust),
 * and the caller says what it means for the pair; the fence audit
 * (fo_pair_audit) tries again every period. */
bool fo_pair_fence_member(struct fo_pair *p, struct fo_member *m)
{
	int r = fo_fence(p->env->hv, m->domid, &m->state);

	if (r < 0) {
		fo_err("pair %s: could not pause %s (domain %u): %s", p->cfg.name, m->name, m->domid, strerror(-r));
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_FAILED, "could not pause %s (domain %u): %s; it is %s", m->name,
		       m->domid, strerror(-r), fo_dom_state_name(m->state));
	}
	return r == 0;
}

void fo_pair_init(struct fo_pair *p, const struct fo_pair_config *cfg, struct fo_pair_env *env)
{
	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	p->env = env;
	p->active = 0;
	p->rebuild_member = -1;
	snprintf(p->m[0].name, sizeof(p->m[0].name), "%s", cfg->active);
	snprintf(p->m[1].name, sizeof(p->m[1].name), "%s", cfg->standby);
	for (int i = 0; i < 2; i++) {
		p->m[i].domid = FO_DOMID_INVALID;
		p->m[i].state = FO_DOM_GONE;
		p->m[i].garbage_rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(10000, 5);
	}
	p->state = FO_PAIR_ARMING;
}

void fo_pair_update_config(struct fo_pair *p, const struct fo_pair_config *cfg)
{
	bool rearm = p->kernel_armed && !p->kernel_firing && cfg->timeout_ms != p->cfg.timeout_ms;
	bool net_changed = memcmp(&cfg->net, &p->cfg.net, sizeof(cfg->net)) != 0;

	p->cfg = *cfg;
	/* A new or changed network section: the bridge as the roles say now
	 * (or DEGRADED with why), not at the next switch. */
	if (net_changed && p->state == FO_PAIR_ARMED && !fo_pair_service_enforce(p, false))
		return;
	if (rearm) {
		/* The module has the old timeout: ARM it anew. */
		fo_pair_kernel_disarm(p);
		p->kernel_retry_ns = 0;
		fo_pair_kernel_try_arm(p);
	}
	if (p->state == FO_PAIR_ARMED)
		fo_pair_arm_active_deadline(p);
}

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

static bool page_is_unhealthy(const struct fo_pair *p, const struct fo_member *m)
{
	return p->cfg.fail_on_unhealthy && m->hb.app_status == FO_HB_APP_UNHEALTHY;
}

void fo_pair_on_heartbeat(struct fo_pair *p, int idx, const struct fo_hb_page *page)
{
	struct fo_member *m = &p->m[idx];
	uint64_t now = now_ns(p);
	const char *why;
	enum fo_hb_verdict v = fo_hb_observe(&m->hb, page, now, &why);

	m->last_read_ns = now; /* whatever it says: no progress in it is news too */
	if (v == FO_HB_INVALID) {
		if (fo_ratelimit_ok(&m->garbage_rl, now))
			fo_warn("pair %s: member %s (domain %u) wrote an invalid heartbeat page: %s", p->cfg.name,
				m->name, m->domid, why);
		return;
	}
	if (v == FO_HB_STALE || v == FO_HB_BASELINE)
		return;

	if (idx == p->active) {
		m->suspend_seen = false; /* it runs: any suspend is over */
		fo_pair_state_report(p, m);
		/* ARMING, waiting for the other member to exist, this one seen
		 * paused: libxl builds a domain paused and unpauses it last,
		 * and an unpause fires no domain watch. Its heartbeat says it
		 * runs now: decide again (with on_failover=rebuild the missing
		 * member is re-created, resume_rebuild). Once: then it is seen
		 * running. */
		if (p->state == FO_PAIR_ARMING && m->state != FO_DOM_RUNNING &&
		    p->m[!idx].domid == FO_DOMID_INVALID) {
			fo_pair_arming_evaluate(p);
			if (p->state != FO_PAIR_ARMING)
				return;
		}
		switch (p->state) {
		case FO_PAIR_SWITCHING:
			if (m->deadline_kind == FO_DL_GRACE)
				fo_pair_finish_switch(p, true);
			break;
		case FO_PAIR_DEGRADED:
			/* Its first heartbeat came after the grace: it is alive
			 * after all, so carry on as after a timely one (the
			 * switch's event keeps its DEGRADED verdict). */
			if (p->late_since_ns) {
				fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
				       "new active %s heartbeated %" PRIu64 " ms after the switch (grace %u ms): resuming",
				       m->name, (now - p->late_since_ns) / 1000000u, p->cfg.grace_ms);
				fo_pair_after_first_heartbeat(p);
				return;
			}
			/* fall through */
		case FO_PAIR_ARMED:
			if (page_is_unhealthy(p, m)) {
				fo_pair_fail_over(p, FO_FAULT_UNHEALTHY, now, now);
				return;
			}
			if (p->cfg.deadline_miss_count &&
			    fo_hb_misses_within(&m->hb, p->cfg.deadline_miss_count, MS(p->cfg.deadline_miss_window_ms), now)) {
				fo_pair_fail_over(p, FO_FAULT_DEADLINE_MISS, now, now);
				return;
			}
			/* fall through */
		default:
			set_deadline(m, FO_DL_HEARTBEAT, now + hb_timeout_ns(p));
			p->kstuck.looked = false; /* it progressed: not stuck */
			break;
		}
		/* A kernel ARM that failed (agent not attached yet) is retried. */
		if (p->state == FO_PAIR_ARMED && !p->kernel_armed)
			fo_pair_kernel_try_arm(p);
		return;
	}

	/* The standby (or a member being rebuilt) heartbeated: it runs. */
	if (p->state == FO_PAIR_ARMING && m->deadline_kind == FO_DL_ARM_WAIT) {
		fo_pair_arming_evaluate(p);
		return;
	}
	if (p->state == FO_PAIR_REBUILDING && p->rebuild_member == idx) {
		if (!fo_pair_fence_member(p, m)) {
			fo_pair_become(p, FO_PAIR_DEGRADED, "could not pause rebuilt member %s", m->name);
			return;
		}
		p->rebuild_member = -1;
		m->usable = true;
		fo_pair_become_armed(p, "failed member rebuilt and paused as the new standby");
		return;
	}
	/* A standby that heartbeats outside arming is running behind our back. */
	fo_pair_on_domains_changed(p);
}

void fo_pair_on_agent(struct fo_pair *p, int idx, int err, const char *reason)
{
	struct fo_member *m = &p->m[idx];

	m->agent_attached = err == 0;
	/* A channel just attached to an active that has shown no progress yet
	 * (the daemon adopted the pair at start): its first page is only a
	 * baseline (monitor.h), so it gets timeout_ms plus one period from now.
	 * Without this, an adoption deadline of now + timeout_ms, most of it
	 * spent reading the agent's keys (~0.3 s under emulation), failed over
	 * a healthy active. A dead agent still misses the extended deadline. */
	if (err == 0 && idx == p->active && !m->hb.progressed && m->deadline_kind == FO_DL_HEARTBEAT) {
		uint64_t at = now_ns(p) + MS(p->cfg.timeout_ms + p->cfg.period_ms);
		if (at > m->deadline_ns)
			set_deadline(m, FO_DL_HEARTBEAT, at);
	}
	/* The active's channel is attached: now there is a port to hand to
	 * the module. A restarted daemon adopts the pair before the attach, and
	 * waiting out the retry delay would leave the pair to our own, slower
	 * wake-up path for up to a second. */
	if (err == 0 && idx == p->active && p->state == FO_PAIR_ARMED && !p->kernel_armed) {
		p->kernel_retry_ns = 0;
		fo_pair_kernel_try_arm(p);
		return;
	}
	if (err == -ESTALE && idx == p->active && p->kernel_armed && !p->kernel_firing) {
		/* The agent restarted with a new port while the module holds the
		 * old one, which will never notify again: the module would fail
		 * over a live agent. Hand it the new port (DISARM, ARM). */
		fo_info("pair %s: %s; re-arming the kernel module on the new port", p->cfg.name, reason);
		fo_pair_kernel_disarm(p);
		p->kernel_retry_ns = 0;
		fo_pair_kernel_try_arm(p);
		return;
	}
	if (err < 0 && fo_ratelimit_ok(&m->garbage_rl, now_ns(p)))
		fo_warn("pair %s: heartbeat channel of %s (domain %u) refused: %s", p->cfg.name, m->name, m->domid,
			reason);
}

void fo_pair_on_created(struct fo_pair *p, int idx, int err, const char *reason)
{
	if (p->state != FO_PAIR_REBUILDING || p->rebuild_member != idx)
		return;
	if (err < 0) {
		p->rebuild_member = -1;
		set_deadline(&p->m[idx], FO_DL_NONE, 0);
		fo_pair_become(p, FO_PAIR_DEGRADED, "rebuild of %s failed: %s", p->m[idx].name, reason);
		return;
	}
	fo_pair_refresh_member(p, &p->m[idx]);
	snprintf(p->reason, sizeof(p->reason), "rebuilt %s (domain %u), waiting for its first heartbeat",
		 p->m[idx].name, p->m[idx].domid);
}

/* A last look at the page when a heartbeat deadline passes: a backend that
 * held this member's notifications back (a flooding guest's port, left
 * masked) hands it over now. True if a beat in it set a new deadline. */
static bool heartbeat_in_last_look(struct fo_pair *p, struct fo_member *m)
{
	if (!p->env->hv->ops->heartbeat_look || m->domid == FO_DOMID_INVALID)
		return false;
	p->env->hv->ops->heartbeat_look(p->env->hv, m->domid);
	return m->deadline_kind != FO_DL_NONE;
}

/*
 * A member's heartbeat deadline passed (`due`: when it was due; a heartbeat
 * loss is a fault from then on). The pair is ours or an armed owner's, and
 * each has its own handling:
 *   - ours: the fault is the deadline, not our noticing it (the timer's
 *     lateness counts, as it does for the module), and the fenced switch
 *     follows at once;
 *   - an armed owner's (the kernel module, Xen's watch): it switches at
 *     timeout_ms itself, and this deadline, one period later, is its
 *     backstop (kernel_owner.c: fo_pair_kernel_on_deadline).
 */
static void on_heartbeat_deadline(struct fo_pair *p, int idx, uint64_t due, uint64_t now)
{
	struct fo_member *m = &p->m[idx];

	if (heartbeat_in_last_look(p, m))
		return;
	m->misses++;
	if (idx != p->active || p->state != FO_PAIR_ARMED) {
		/* Not armed: nothing to switch to, but say so once. */
		if (p->state != FO_PAIR_DISARMED)
			fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO, "active %s missed its heartbeat deadline (%u ms) while %s",
			       m->name, p->cfg.timeout_ms, fo_pair_state_name(p->state));
		return;
	}
	if (p->kernel_armed) {
		fo_pair_kernel_on_deadline(p, due, now);
		return;
	}
	fo_pair_fail_over(p, FO_FAULT_HEARTBEAT_TIMEOUT, due && due <= now ? due : now, now);
}

void fo_pair_on_deadline(struct fo_pair *p, int idx)
{
	struct fo_member *m = &p->m[idx];
	enum fo_deadline_kind kind = m->deadline_kind;
	uint64_t due = m->deadline_ns;
	uint64_t now = now_ns(p);

	set_deadline(m, FO_DL_NONE, 0);
	switch (kind) {
	case FO_DL_NONE:
		break;
	case FO_DL_HEARTBEAT:
		on_heartbeat_deadline(p, idx, due, now);
		break;
	case FO_DL_GRACE:
		if (p->state == FO_PAIR_SWITCHING)
			fo_pair_finish_switch(p, false);
		break;
	case FO_DL_ARM_WAIT:
		if (p->state != FO_PAIR_ARMING)
			break;
		/* The standby never proved itself: it still must not run beside the active. */
		fo_pair_become(p, FO_PAIR_DEGRADED, "standby %s did not heartbeat within %llu s of arming; %s", m->name,
		       (unsigned long long)(FO_ARM_WAIT_NS / 1000000000ull),
		       fo_pair_fence_member(p, m) ? "paused" : "could not pause it (retried every period)");
		break;
	case FO_DL_REBUILD:
		if (p->state != FO_PAIR_REBUILDING)
			break;
		p->rebuild_member = -1;
		fo_pair_become(p, FO_PAIR_DEGRADED, "rebuilt member %s did not heartbeat in time; %s", m->name,
		       m->domid == FO_DOMID_INVALID ? "it does not exist"
		       : fo_pair_fence_member(p, m)          ? "paused"
						     : "could not pause it (retried every period)");
		break;
	case FO_DL_DRILL:
		if (!p->drill_active)
			break;
		p->drill_active = false;
		p->drill_done_id = fo_pair_record(p, FO_EV_DRILL, FO_RESULT_FAILED,
					  "drill %s: the fault caused no switchover in time",
					  fo_drill_kind_name(p->drill_kind))->id;
		if (p->state == FO_PAIR_ARMED)
			fo_pair_arm_active_deadline(p);
		break;
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
