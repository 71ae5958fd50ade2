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
 *   commands.c         the operator's: arm, start, disarm, stand-down,
 *                      switchover
 *   domains.c          a member's domain changed: died, suspended, started
 *                      behind our back
 * Here: the transitions, the active's deadline, and the heartbeat, agent
 * and deadline inputs of pair.h.
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
