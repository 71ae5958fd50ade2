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
 * Adoption: a restarted daemon takes roles from what Xen says (the running
 * member is the active) and never unpauses anything to arm. Both paused
 * (killed mid-switch) ends DEGRADED, waiting for an operator: resuming a
 * half-done switch without knowing which member failed could restart the
 * faulty one.
 *
 * Kernel-armed mode (the backend has kernel_arm: kmod-switch is loaded). One
 * owner per pair: an ARMED pair is also ARMed in the module, which then
 * alone switches it on heartbeat loss (from a kernel thread, no wake-up of
 * ours). We keep watching: domain state, the page (the backend polls it for
 * us, the module holds the event channel), and the module's events, which
 * we record as our own switch (kernel phase timestamps, path "kernel") and
 * follow with the usual post-switch logic (grace, first heartbeat,
 * on_failover, re-ARM with roles swapped once ARMED again).
 *
 *   - Our own switches (domain crashed/destroyed, unhealthy, manual, drills)
 *     first take the pair back: DISARM. EALREADY / ENOENT-with-an-event mean
 *     the module switched (or is switching) first: we do nothing and adopt
 *     its event. Only after a DISARM that succeeded do we pause/unpause.
 *     The module refuses unpause and SWITCH of an armed pair's members
 *     (EBUSY), so a stale view of ours can never start a second member.
 *   - Our heartbeat deadline becomes a look at the module (timeout +
 *     period after the last progress we saw, when a silent agent has long
 *     been switched by the module): we ask it (PAIRINFO). Firing/just
 *     switched: wait for its event. Its deadline long past and not firing:
 *     take it back and switch. Still hearing notifications while the
 *     page's sequence does not move (a stuck agent, something only we can
 *     see): look again one period later, and if it notified again and a
 *     page we read since still shows no progress, take it back and switch
 *     (fault heartbeat-stuck, about timeout + 2 periods). Not at the first
 *     look: the page is only polled once a period, so progress the agent
 *     notified may not have been read yet.
 *   - Leaving ARMED for DEGRADED / DISARMED / REBUILDING disarms it there.
 *   - Daemon stop or crash leaves it armed: the module keeps protecting the
 *     pair while we restart. A restarted daemon first reads the events
 *     queued meanwhile (before arming anything), then asks the module
 *     (PAIRINFO by the pair's id, a hash of its name) and adopts an armed
 *     pair's roles from it; the module never unpauses anything for us.
 */
#include "core/pair/pair.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/placement.h"
#include "core/switchover.h"

/* How long a freshly booted standby may take to heartbeat for the first time
 * before arming gives up on it. A PV guest boots in seconds natively; under
 * software emulation in the lab it takes up to ~30 s. */
#define FO_ARM_WAIT_NS (120ull * 1000000000ull)

#define MS(x) ((uint64_t)(x) * 1000000ull)
#define STATE_REPORT_NS       (5000ull * 1000000ull) /* look for the relay's takeover report this long */
#define STATE_RESTORE_WAIT_NS (1000ull * 1000000ull) /* wait this long for the application's restore */

/* A switch the module did while no daemon ran is adopted at start, before
 * the new active's agent is attached: its first heartbeat may take this
 * much longer than grace_ms (xenstore read, grant map, bind; seconds under
 * the lab's emulation). */
#define FO_ATTACH_GRACE_NS (10000ull * 1000000ull)

/* A failed kernel ARM is retried no more often than this. */
#define FO_KERNEL_RETRY_NS (1000ull * 1000000ull)

static void kernel_try_arm(struct fo_pair *p);
static void kernel_release(struct fo_pair *p);
static void arm_active_deadline_if_armed(struct fo_pair *p);

static uint64_t now_ns(struct fo_pair *p)
{
	return p->env->hv->ops->now_ns(p->env->hv);
}

const char *fo_pair_state_name(enum fo_pair_state s)
{
	static const char *const names[] = { "ARMING", "ARMED", "SWITCHING", "DEGRADED", "DISARMED", "REBUILDING" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static const char *const drill_names[FO_DRILL_COUNT] = { "heartbeat-loss", "hang", "crash",
							  "destroy", "unhealthy", "manual" };

const char *fo_drill_kind_name(enum fo_drill_kind k)
{
	return (unsigned)k < FO_DRILL_COUNT ? drill_names[k] : "?";
}

int fo_drill_kind_parse(const char *name, enum fo_drill_kind *ret)
{
	for (int i = 0; i < FO_DRILL_COUNT; i++)
		if (strcmp(name, drill_names[i]) == 0) {
			*ret = (enum fo_drill_kind)i;
			return 0;
		}
	return -EINVAL;
}

int fo_pair_member_by_domid(const struct fo_pair *p, fo_domid_t domid)
{
	for (int i = 0; i < 2; i++)
		if (p->m[i].domid == domid && domid != FO_DOMID_INVALID)
			return i;
	return -1;
}

static struct fo_event *record(struct fo_pair *p, enum fo_event_kind kind, enum fo_event_result result,
			       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct fo_event *record(struct fo_pair *p, enum fo_event_kind kind, enum fo_event_result result,
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
static void become(struct fo_pair *p, enum fo_pair_state s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void become(struct fo_pair *p, enum fo_pair_state s, const char *fmt, ...)
{
	enum fo_pair_state old = p->state;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->reason, sizeof(p->reason), fmt, ap);
	va_end(ap);
	p->state = s;
	if (s != FO_PAIR_ARMING)
		p->started_blind = false; /* decided: from here on we watch */
	/* The module must not switch a pair we consider unprotected. */
	if (p->kernel_armed && (s == FO_PAIR_DEGRADED || s == FO_PAIR_DISARMED || s == FO_PAIR_REBUILDING))
		kernel_release(p);
	if (old == s && s != FO_PAIR_DEGRADED)
		return;
	switch (s) {
	case FO_PAIR_ARMED:
		record(p, FO_EV_ARMED, FO_RESULT_INFO, "active %s, standby %s%s%s", fo_pair_active(p)->name,
		       fo_pair_standby(p)->name, p->reason[0] ? ": " : "", p->reason);
		break;
	case FO_PAIR_DEGRADED:
		record(p, FO_EV_DEGRADED, FO_RESULT_INFO, "%s", p->reason);
		break;
	case FO_PAIR_DISARMED:
		record(p, FO_EV_DISARMED, FO_RESULT_INFO, "%s", p->reason);
		break;
	default:
		break;
	}
}

static void set_deadline(struct fo_member *m, enum fo_deadline_kind kind, uint64_t at)
{
	m->deadline_kind = kind;
	m->deadline_ns = kind == FO_DL_NONE ? 0 : at;
}

/* ---- verdicts (verdict.h): a failed member is never trusted again ---- */

static void member_instance(const struct fo_member *m, struct fo_instance *in)
{
	memset(in, 0, sizeof(*in));
	snprintf(in->name, sizeof(in->name), "%s", m->name);
	in->domid = m->domid;
	in->has_handle = m->has_handle;
	memcpy(in->handle, m->handle, sizeof(in->handle));
}

const struct fo_verdict *fo_pair_member_verdict(const struct fo_pair *p, int idx)
{
	struct fo_instance in;

	if (!p->env->verdicts)
		return NULL;
	member_instance(&p->m[idx], &in);
	return fo_verdicts_find(p->env->verdicts, &in);
}

static const struct fo_verdict *member_verdict(const struct fo_pair *p, const struct fo_member *m)
{
	return fo_pair_member_verdict(p, (int)(m - p->m));
}

/* In memory only: no syscall but the wall clock, so that it can be
 * recorded the moment the switch is over; persist() writes it. */
static void mark_failed(struct fo_pair *p, struct fo_member *m, const char *why)
{
	struct fo_instance in;

	m->usable = false;
	if (!p->env->verdicts || m->domid == FO_DOMID_INVALID)
		return; /* gone: no instance left to distrust */
	member_instance(m, &in);
	fo_verdicts_set_failed(p->env->verdicts, p->cfg.name, &in, why);
}

static void mark_active(struct fo_pair *p)
{
	struct fo_instance in;

	if (!p->env->verdicts || fo_pair_active(p)->domid == FO_DOMID_INVALID)
		return;
	member_instance(fo_pair_active(p), &in);
	fo_verdicts_set_active(p->env->verdicts, p->cfg.name, &in);
}

/* Write what changed. Never between a fault and the standby's unpause:
 * callers run after the switch (or outside one). */
static void persist(struct fo_pair *p)
{
	char err[FO_PATH_MAX + 128];

	if (!p->env->verdicts || !p->env->verdicts->dirty)
		return;
	if (fo_verdicts_save(p->env->verdicts, err, sizeof(err)) < 0) {
		fo_err("pair %s: %s; a restarted failoverd would not know it", p->cfg.name, err);
		record(p, FO_EV_INFO, FO_RESULT_FAILED, "%s", err);
	}
}

/* Member m must not be the standby: DEGRADED, saying why and how to clear
 * it (status shows the reason). */
static void refuse_standby(struct fo_pair *p, struct fo_member *m, const struct fo_verdict *v)
{
	char what[96];

	m->usable = false;
	fo_verdict_describe(v, what, sizeof(what));
	become(p, FO_PAIR_DEGRADED, "standby %s %s; clear with failoverctl clear-failed %s", m->name, what, m->name);
}

/*
 * After a daemon start: we last left m[idx] active (the recorded active is
 * this very instance), and Xen has it paused with the other member
 * running. A switch happened that we did not record: a daemon killed
 * between the standby's unpause and writing the verdict (after_switch),
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
	member_instance(&p->m[idx], &in);
	if (!rec || !fo_instance_same(&rec->inst, &in))
		return NULL;
	mark_failed(p, &p->m[idx], "unrecorded-switch");
	persist(p);
	return member_verdict(p, &p->m[idx]);
}

/* Both running at arming: the active is the one we last left active, and
 * never a member with a verdict if the other has none. */
static void prefer_active(struct fo_pair *p)
{
	const struct fo_verdict *rec = p->env->verdicts ? fo_verdicts_active(p->env->verdicts, p->cfg.name) : NULL;

	for (int i = 0; rec && i < 2; i++) {
		struct fo_instance in;

		member_instance(&p->m[i], &in);
		if (fo_instance_same(&rec->inst, &in))
			p->active = i;
	}
	if (member_verdict(p, fo_pair_active(p)) && !member_verdict(p, fo_pair_standby(p)))
		p->active = !p->active;
}

int fo_pair_clear_failed(struct fo_pair *p, int idx)
{
	struct fo_member *m = &p->m[idx];
	int n = p->env->verdicts ? fo_verdicts_clear(p->env->verdicts, m->name) : 0;

	if (n) {
		record(p, FO_EV_INFO, FO_RESULT_INFO, "operator cleared the failure verdict on %s; `failoverctl arm %s` adopts it",
		       m->name, p->cfg.name);
		persist(p);
	}
	return n;
}

/* Re-read a known member's state: one domain-info hypercall, all a fault
 * path may do before its switch. A domain that is gone keeps its domid
 * (state GONE) until refresh_identity(). False: could not be read (the
 * last known state stays; the next change retries). */
static bool refresh_state(struct fo_pair *p, struct fo_member *m)
{
	struct fo_hv *hv = p->env->hv;

	return m->domid == FO_DOMID_INVALID || hv->ops->get_state(hv, m->domid, &m->state) == 0;
}

/* The slow half, never before a switch: forget a member that is gone (the
 * unwatch unbinds, unmaps and talks to xenstore), find it by name when we
 * have no (live) domid (libxl reads every domain's name), watch it. */
static void refresh_identity(struct fo_pair *p, struct fo_member *m)
{
	struct fo_hv *hv = p->env->hv;
	fo_domid_t domid;

	if (m->domid != FO_DOMID_INVALID) {
		if (m->state != FO_DOM_GONE)
			return;
		hv->ops->unwatch_member(hv, m->domid);
		m->domid = FO_DOMID_INVALID;
		m->agent_attached = false;
		fo_hb_reset(&m->hb);
	}
	m->state = FO_DOM_GONE;
	if (hv->ops->lookup(hv, m->name, &domid) < 0) {
		m->looked_up = true;
		return;
	}
	m->fresh = m->looked_up;
	m->looked_up = true;
	m->domid = domid;
	m->has_handle = hv->ops->get_handle && hv->ops->get_handle(hv, domid, m->handle) == 0;
	if (p->env->verdicts) {
		struct fo_instance in;

		/* Another instance of this name than the one that failed (it
		 * was destroyed and re-created): that one starts clean. */
		member_instance(m, &in);
		fo_verdicts_forget_other(p->env->verdicts, &in);
	}
	if (hv->ops->get_state(hv, domid, &m->state) < 0)
		m->state = FO_DOM_GONE;
	hv->ops->watch_member(hv, domid);
	/* Placed as soon as it is found (arming, a rebuild), so that a
	 * switch never has to move vCPUs on the real-time path. */
	if (fo_placement_pair_wants(&p->cfg)) {
		char why[160];

		if (fo_placement_apply_member(hv, &p->cfg, m->name, domid, why, sizeof(why)) < 0)
			fo_warn("pair %s: could not place %s (domain %u): %s", p->cfg.name, m->name, domid, why);
	}
}

/* Re-read a member's state; find it by name when we have no (live) domid.
 * Starts/stops following its agent as the domain comes and goes. */
static void refresh_member(struct fo_pair *p, struct fo_member *m)
{
	if (refresh_state(p, m))
		refresh_identity(p, m);
}

void fo_pair_check_placement(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	char found[sizeof(p->placement)] = "";
	bool ok = true;

	if (!fo_placement_pair_wants(&p->cfg))
		return;
	for (int i = 0; i < 2; i++)
		ok &= fo_placement_check_member(hv, &p->cfg, p->m[i].name, p->m[i].domid, found, sizeof(found));
	if (!ok && p->env->placement_enforce) {
		char why[160], again[sizeof(found)] = "";
		bool fixed = true;

		for (int i = 0; i < 2; i++) {
			if (p->m[i].domid == FO_DOMID_INVALID)
				continue;
			if (fo_placement_apply_member(hv, &p->cfg, p->m[i].name, p->m[i].domid, why, sizeof(why)) < 0)
				fo_warn("pair %s: could not re-place %s: %s", p->cfg.name, p->m[i].name, why);
			fixed &= fo_placement_check_member(hv, &p->cfg, p->m[i].name, p->m[i].domid, again,
							   sizeof(again));
		}
		if (fixed) {
			p->placement_reapplied++;
			record(p, FO_EV_PLACEMENT, FO_RESULT_OK, "drift re-applied (placement.enforce): was %s", found);
			found[0] = '\0';
			ok = true;
		} else {
			snprintf(found, sizeof(found), "%s", again);
		}
	}
	if (!ok && (!p->placement_drift || strcmp(found, p->placement) != 0))
		record(p, FO_EV_PLACEMENT, FO_RESULT_DEGRADED, "drift: %s", found);
	else if (ok && p->placement_drift)
		record(p, FO_EV_PLACEMENT, FO_RESULT_OK, "as configured again");
	p->placement_drift = !ok;
	p->placement_checked = true;
	snprintf(p->placement, sizeof(p->placement), "%s", found);
}

static void publish_roles(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;

	if (fo_pair_active(p)->domid != FO_DOMID_INVALID)
		hv->ops->set_role(hv, fo_pair_active(p)->domid, "active");
	if (fo_pair_standby(p)->domid != FO_DOMID_INVALID)
		hv->ops->set_role(hv, fo_pair_standby(p)->domid, "standby");
	if (hv->ops->state_pair) { /* state handover follows the published roles */
		hv->ops->state_pair(hv, fo_pair_active(p)->domid, fo_pair_standby(p)->domid);
		p->state_watch_until_ns = now_ns(p) + STATE_REPORT_NS;
	}
}

/*
 * The relay's report of a takeover (hv state_info), as an info event with
 * the cycles lost, and what the new active says it restored. The relay
 * sees the swap a few ms after the roles are published, the application
 * restores when its role reaches it (tens of ms): wait for the restore up
 * to STATE_RESTORE_WAIT_NS. Off the switch path: the new active's
 * heartbeats call this.
 */
static void state_report(struct fo_pair *p, const struct fo_member *m)
{
	static const char *const res[] = { "not reported", "ok", "no state", "corrupt", "too old" };
	struct fo_hv *hv = p->env->hv;
	struct fo_hv_state_info si;
	uint64_t now = now_ns(p);
	bool restored;

	if (!p->state_watch_until_ns || !hv->ops->state_info)
		return;
	if (now > p->state_watch_until_ns) {
		p->state_watch_until_ns = 0;
		return;
	}
	if (!hv->ops->state_info(hv, m->domid, &si) || !si.takeover || si.takeover_ns <= p->state_reported_ns)
		return;
	restored = m->hb.ext && m->hb.restore_result && m->hb.restored_cycle == si.handed_cycle;
	if (!restored && now < si.takeover_ns + STATE_RESTORE_WAIT_NS)
		return;
	p->state_reported_ns = si.takeover_ns;
	p->state_watch_until_ns = 0;
	record(p, FO_EV_INFO, FO_RESULT_INFO,
	       "state handover: %s restore %s (cycle %llu), handed over cycle %llu, the old active's last %llu: "
	       "%lld cycles lost",
	       m->name, m->hb.ext && m->hb.restore_result < 5 ? res[m->hb.restore_result] : "not reported",
	       (unsigned long long)m->hb.restored_cycle, (unsigned long long)si.handed_cycle,
	       (unsigned long long)si.old_last_cycle, (long long)si.cycles_lost);
}

/* How long after its last progress the active's deadline fires. While the
 * module has the pair, it is the module that reacts at timeout_ms; ours is
 * one period later, so that a heartbeat loss finds the module already
 * switching (its deadline counts from the notification, ours from our
 * read of the page, which is never earlier), not a race with it; what we
 * do then is kernel_backstop(). */
static uint64_t hb_timeout_ns(const struct fo_pair *p)
{
	uint64_t t = MS(p->cfg.timeout_ms);

	return p->kernel_armed ? t + MS(p->cfg.period_ms) : t;
}

/* The active must heartbeat within timeout_ms of its last progress (or of
 * now, if it has not heartbeated since we started watching it). */
static void arm_active_deadline(struct fo_pair *p)
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
static void arm_active_deadline_if_armed(struct fo_pair *p)
{
	if (p->state == FO_PAIR_ARMED)
		arm_active_deadline(p);
}

static void become_armed(struct fo_pair *p, const char *how)
{
	/* Verified at arm time; a drift is reported, never a reason to leave
	 * the pair unprotected. */
	fo_pair_check_placement(p);
	p->m[0].fresh = p->m[1].fresh = false;
	set_deadline(fo_pair_standby(p), FO_DL_NONE, 0);
	arm_active_deadline(p);
	become(p, FO_PAIR_ARMED, "%s", how);
	mark_active(p);
	persist(p);
	publish_roles(p);
	kernel_try_arm(p);
}

/* Fence a member outside a switchover (arming, a standby started behind our
 * back). Returns true if it is confirmed fenced. A failure is logged and
 * kept as an event, m->state is what Xen says (never "paused" on trust),
 * and the caller says what it means for the pair; the fence audit
 * (fo_pair_audit) tries again every period. */
static bool fence_member(struct fo_pair *p, struct fo_member *m)
{
	int r = fo_fence(p->env->hv, m->domid, &m->state);

	if (r < 0) {
		fo_err("pair %s: could not pause %s (domain %u): %s", p->cfg.name, m->name, m->domid, strerror(-r));
		record(p, FO_EV_INFO, FO_RESULT_FAILED, "could not pause %s (domain %u): %s; it is %s", m->name,
		       m->domid, strerror(-r), fo_dom_state_name(m->state));
	}
	return r == 0;
}

/* ---- kernel-armed mode (see the top of this file) ---- */

static void arming_evaluate(struct fo_pair *p);
static int after_switch(struct fo_pair *p, struct fo_event *e, const struct fo_switch_outcome *outp,
			enum fo_fault fault, bool drill);
static void start_rebuild(struct fo_pair *p, int idx);

uint32_t fo_pair_kernel_id(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 16777619u;
	return h;
}

/* ARMED and the module can have it: hand it over. Failures leave the pair
 * ours (we switch it ourselves, as without the module) and are retried. */
static void kernel_try_arm(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a = fo_pair_active(p), *s = fo_pair_standby(p);
	uint64_t now = now_ns(p);
	int r;

	if (!p->kernel_ok || p->kernel_armed || p->state != FO_PAIR_ARMED || now < p->kernel_retry_ns)
		return;
	if (a->domid == FO_DOMID_INVALID || s->domid == FO_DOMID_INVALID)
		return;
	r = hv->ops->kernel_arm(hv, p->kernel_id, a->domid, s->domid, p->cfg.timeout_ms, p->cfg.period_ms);
	if (r == 0) {
		p->kernel_armed = true;
		p->kernel_firing = false;
		arm_active_deadline(p); /* now the backstop */
		record(p, FO_EV_INFO, FO_RESULT_INFO,
		       "armed in the kernel module (pair id %u): it switches %s -> %s on heartbeat loss", p->kernel_id,
		       a->name, s->name);
		return;
	}
	p->kernel_retry_ns = now + FO_KERNEL_RETRY_NS;
	/* -ENOENT: the active's agent is not attached yet (no port to hand
	 * over); its attach retries at once (fo_pair_on_agent), a heartbeat
	 * after the delay. Anything else is worth a line. */
	if (r != -ENOENT && fo_ratelimit_ok(&a->garbage_rl, now))
		fo_warn("pair %s: cannot arm in the kernel module (pair id %u, dom%u -> dom%u): %s; failoverd switches it itself",
			p->cfg.name, p->kernel_id, a->domid, s->domid, strerror(-r));
}

/* Take the pair back from the module. */
static void kernel_release(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	int r = hv->ops->kernel_disarm(hv, p->kernel_id);

	if (r == -EALREADY) {
		p->kernel_firing = true; /* its event follows and is adopted */
		return;
	}
	if (r < 0 && r != -ENOENT)
		fo_err("pair %s: cannot disarm it in the kernel module: %s", p->cfg.name, strerror(-r));
	/* ENOENT: it fired (its event, if any, is read from the loop and
	 * adopted in whatever state we are in) or was disarmed by hand. */
	p->kernel_armed = false;
	p->kernel_firing = false;
	arm_active_deadline_if_armed(p);
}

bool fo_pair_kernel_holds(const struct fo_pair *p, const struct fo_hv_karm *k)
{
	int ai = fo_pair_member_by_domid(p, k->active), si = fo_pair_member_by_domid(p, k->standby);

	return p->kernel_ok && p->kernel_armed && k->pair_id == p->kernel_id && ai >= 0 && si >= 0 && ai != si;
}

void fo_pair_kernel_foreign(struct fo_pair *p, const struct fo_hv_karm *k)
{
	struct fo_hv *hv = p->env->hv;
	bool was_ours = p->kernel_armed;
	int r;

	if (k->firing) {
		record(p, FO_EV_INFO, FO_RESULT_INFO,
		       "the kernel module is switching dom%u -> dom%u under this pair's id %u; its event follows",
		       k->active, k->standby, k->pair_id);
		return;
	}
	r = hv->ops->kernel_disarm(hv, k->pair_id);
	record(p, FO_EV_INFO, FO_RESULT_INFO,
	       "the kernel module had this pair's id %u armed with dom%u -> dom%u, which failoverd did not arm (pair %s): %s",
	       k->pair_id, k->active, k->standby, fo_pair_state_name(p->state),
	       r == 0 ? "disarmed there, both left as they are" :
	       r == -EALREADY ? "it is switching; its event follows" :
	       r == -ENOENT ? "gone already" : strerror(-r));
	if (r == 0 || r == -ENOENT) {
		p->kernel_armed = p->kernel_firing = false;
		if (was_ours)
			arm_active_deadline_if_armed(p); /* ours again until re-armed */
		p->kernel_retry_ns = 0;
		kernel_try_arm(p);
	}
}

void fo_pair_kernel_release(struct fo_pair *p)
{
	if (p->kernel_armed && !p->kernel_firing)
		kernel_release(p);
}

/*
 * Before a switch of our own: 0 if the pair is ours (never was the
 * module's, or DISARM succeeded, or the module lost it without switching);
 * -EALREADY if the module switched or is switching it (its event has been
 * or will be adopted: do nothing); another -errno if the module would not
 * say (it keeps the pair).
 */
static int take_from_kernel(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	uint64_t seen = p->kernel_switches;
	int r;

	if (!p->kernel_armed)
		return 0;
	if (p->kernel_firing)
		return -EALREADY;
	r = hv->ops->kernel_disarm(hv, p->kernel_id);
	if (r == 0) {
		p->kernel_armed = false;
		return 0;
	}
	if (r == -EALREADY) {
		p->kernel_firing = true;
		return -EALREADY;
	}
	if (r != -ENOENT)
		return r;
	/* Not armed any more: it fired, and its event may be queued. Read it
	 * now; adopting it changes our state. (The module queues the event a
	 * moment after it forgets the pair: if it is not there yet, our own
	 * switch below goes the same way, A -> B, and changes nothing; the
	 * late event is then recognised as already done.) */
	hv->ops->kernel_poll_events(hv);
	if (p->kernel_switches != seen)
		return -EALREADY;
	p->kernel_armed = false;
	p->kernel_firing = false;
	return 0;
}

/*
 * Our heartbeat deadline passed while the module has the pair (`due`: when
 * it was due). Returns the fault to switch for ourselves, with its time in
 * *fault_ns (the module gave the pair up, cannot see the fault, or does not
 * act on it), or FO_FAULT_NONE if the module is on it or we look again
 * (a new deadline is set).
 */
static enum fo_fault kernel_backstop(struct fo_pair *p, uint64_t now, uint64_t due, uint64_t *fault_ns)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a = fo_pair_active(p);
	uint64_t seen = p->kernel_switches, period = MS(p->cfg.period_ms);
	/* A second look only counts for the same active with no progress
	 * since the first (progress sets a new deadline anyway). */
	bool second = p->kstuck.looked && p->kstuck.member == p->active && p->kstuck.beats == a->hb.beats;
	struct fo_hv_karm k;
	int r;

	*fault_ns = due && due <= now ? due : now;
	p->kstuck.looked = false;
	if (p->kernel_firing) {
		set_deadline(a, FO_DL_HEARTBEAT, now + MS(p->cfg.timeout_ms));
		return FO_FAULT_NONE;
	}
	r = hv->ops->kernel_adopt(hv, p->kernel_id, p->cfg.period_ms, &k);
	if (r == -ENOENT) {
		hv->ops->kernel_poll_events(hv);
		if (p->kernel_switches != seen)
			return FO_FAULT_NONE; /* adopted its switch */
		p->kernel_armed = false;
		record(p, FO_EV_INFO, FO_RESULT_INFO,
		       "the kernel module no longer has the pair armed (disarmed outside failoverd); failoverd switches it");
		return FO_FAULT_HEARTBEAT_TIMEOUT;
	}
	if (r < 0) {
		record(p, FO_EV_INFO, FO_RESULT_INFO, "cannot ask the kernel module about the pair: %s; it stays armed there",
		       strerror(-r));
		set_deadline(a, FO_DL_HEARTBEAT, now + MS(p->cfg.timeout_ms));
		return FO_FAULT_NONE;
	}
	if (k.firing) {
		p->kernel_firing = true;
		set_deadline(a, FO_DL_HEARTBEAT, now + MS(p->cfg.timeout_ms));
		return FO_FAULT_NONE;
	}
	if (now < k.deadline_ns) {
		/* The module hears the agent notify within timeout_ms, so it
		 * will not act, but the sequence on the page has not moved for
		 * timeout + period: a fault only we can see. */
		if (!second) {
			/* Not yet: progress the agent notified just now may sit
			 * in the page until the next poll. One period later,
			 * with a page read after this look, it cannot. */
			p->kstuck.looked = true;
			p->kstuck.member = p->active;
			p->kstuck.beats = a->hb.beats;
			p->kstuck.notifications = k.notifications;
			p->kstuck.at_ns = now;
			/* The fault: timeout_ms without progress, one period
			 * before this deadline (hb_timeout_ns). */
			p->kstuck.fault_ns = *fault_ns > period ? *fault_ns - period : *fault_ns;
			set_deadline(a, FO_DL_HEARTBEAT, now + period);
			return FO_FAULT_NONE;
		}
		*fault_ns = p->kstuck.fault_ns;
		if (k.notifications > p->kstuck.notifications && a->last_read_ns > p->kstuck.at_ns) {
			record(p, FO_EV_INFO, FO_RESULT_INFO,
			       "active %s notified the kernel module %llu times in %llu ms but its heartbeat sequence stays at %llu; failoverd takes the pair back (unless the module is switching it already)",
			       a->name, (unsigned long long)(k.notifications - p->kstuck.notifications),
			       (unsigned long long)((now - p->kstuck.at_ns) / 1000000ull), (unsigned long long)a->hb.sequence);
			return FO_FAULT_HEARTBEAT_STUCK;
		}
		if (k.notifications > p->kstuck.notifications && now >= p->kstuck.at_ns + MS(p->cfg.timeout_ms / 2)) {
			/* Notifying, and no page of it has reached us for half a
			 * timeout: we cannot see progress it might make, and it
			 * made none we could see. As before this check existed. */
			record(p, FO_EV_INFO, FO_RESULT_INFO,
			       "active %s notifies the kernel module but its heartbeat sequence does not move (no page read for %llu ms); failoverd takes the pair back",
			       a->name, (unsigned long long)((now - a->last_read_ns) / 1000000ull));
			return FO_FAULT_HEARTBEAT_STUCK;
		}
		/* No new notification (the agent may be going quiet: then the
		 * module fires at its deadline) or no page read yet: look
		 * again, keeping the first look. */
		p->kstuck.looked = true;
		set_deadline(a, FO_DL_HEARTBEAT, now + period);
		return FO_FAULT_NONE;
	}
	if (now < k.deadline_ns + MS(p->cfg.timeout_ms)) {
		set_deadline(a, FO_DL_HEARTBEAT, k.deadline_ns + MS(p->cfg.timeout_ms));
		return FO_FAULT_NONE;
	}
	record(p, FO_EV_INFO, FO_RESULT_INFO,
	       "the kernel module has not switched %llu ms after its deadline; failoverd takes the pair back",
	       (unsigned long long)((now - k.deadline_ns) / 1000000ull));
	return FO_FAULT_HEARTBEAT_TIMEOUT;
}

/* Record the module's switch as ours and go on from there. m[ai] was the
 * active, m[si] the standby. */
static void kernel_adopt_switch(struct fo_pair *p, const struct fo_hv_kevent *ev, int ai)
{
	struct fo_event *old = (struct fo_event *)fo_event_ring_find(p->env->ring, p->switch_event_id);
	bool drill = p->drill_active && p->drill_event_id == 0;
	struct fo_switch_outcome out = { .from_state = ev->active_state, .to_state = ev->standby_state };
	uint64_t det = ev->detected_ns ? ev->detected_ns : now_ns(p);
	struct fo_event *e;

	if (old && old->pending)
		old->pending = false;
	p->switch_event_id = 0;
	p->kernel_armed = false;
	p->kernel_firing = false;
	p->active = ai;

	e = fo_event_ring_claim(p->env->ring, det);
	e->kind = drill ? FO_EV_DRILL : FO_EV_SWITCHOVER;
	e->fault = FO_FAULT_HEARTBEAT_TIMEOUT; /* the only thing the module reacts to */
	e->deadline_ms = p->cfg.deadline_ms;
	e->budget_ms = p->cfg.timeout_ms + p->cfg.period_ms + p->cfg.deadline_ms;
	e->pending = true;
	memcpy(e->pair, p->cfg.name, sizeof(e->pair));
	memcpy(e->from, p->m[ai].name, sizeof(e->from));
	memcpy(e->to, p->m[!ai].name, sizeof(e->to));
	/* The module detects and decides in one step (its hrtimer); its times
	 * are CLOCK_MONOTONIC like ours. */
	e->phase_ns[FO_PHASE_FAULT] = drill ? p->drill_inject_ns : ev->deadline_ns && ev->deadline_ns <= det ? ev->deadline_ns : det;
	e->phase_ns[FO_PHASE_DETECTED] = det;
	e->phase_ns[FO_PHASE_DECIDED] = det;
	e->phase_ns[FO_PHASE_PAUSE_ISSUED] = ev->pause_issued_ns;
	e->phase_ns[FO_PHASE_PAUSE_DONE] = ev->pause_done_ns;
	e->phase_ns[FO_PHASE_UNPAUSE_ISSUED] = ev->unpause_issued_ns;
	e->phase_ns[FO_PHASE_UNPAUSE_DONE] = ev->unpause_done_ns;
	snprintf(e->path, sizeof(e->path), "kernel");
	snprintf(e->message, sizeof(e->message),
		 "switched by the kernel module: no notification for %llu ms (%llu while armed)%s",
		 (unsigned long long)((det - ev->last_notify_ns) / 1000000ull),
		 (unsigned long long)ev->notifications, ev->refenced ? "; old active ran again and was paused again" : "");
	switch (ev->result) {
	case FO_HV_KSWITCH_OK:
		out.result = FO_RESULT_OK;
		break;
	case FO_HV_KSWITCH_FAILED:
		out.result = FO_RESULT_FAILED;
		out.why = "standby could not be started";
		break;
	default:
		out.result = FO_RESULT_ABORTED;
		out.why = "could not confirm the active is paused; standby left paused";
		break;
	}
	p->state = FO_PAIR_SWITCHING;
	after_switch(p, e, &out, FO_FAULT_HEARTBEAT_TIMEOUT, drill);
}

void fo_pair_on_kernel_event(struct fo_pair *p, const struct fo_hv_kevent *ev)
{
	int ai = fo_pair_member_by_domid(p, ev->active), si = fo_pair_member_by_domid(p, ev->standby);

	if (p->state == FO_PAIR_ARMING && (ai < 0 || si < 0 || p->m[0].domid == FO_DOMID_INVALID ||
					   p->m[1].domid == FO_DOMID_INVALID)) {
		/* Read before our members are known (a restart reads what the
		 * module queued before arming anything): applied by arming. */
		p->kevent = *ev;
		p->kevent_stored = true;
		return;
	}
	if (ai < 0 || si < 0 || ai == si) {
		fo_warn("pair %s: the kernel module reports a switch dom%u -> dom%u under its id %u, but those are not its members; ignored",
			p->cfg.name, ev->active, ev->standby, ev->pair_id);
		return;
	}
	p->kernel_switches++;
	if (p->active == si) {
		/* We already have m[si] as the active: our own switch went the
		 * same way (DISARM said ENOENT before the event was queued) or
		 * arming adopted the outcome. m[ai] failed all the same. */
		mark_failed(p, &p->m[ai], fo_fault_name(FO_FAULT_HEARTBEAT_TIMEOUT));
		persist(p);
		if (p->kernel_firing && !p->kernel_armed)
			p->kernel_firing = false;
		record(p, FO_EV_INFO, FO_RESULT_INFO, "the kernel module switched %s -> %s as well (already done)",
		       p->m[ai].name, p->m[si].name);
		if (p->state == FO_PAIR_ARMED) {
			if (p->cfg.on_failover == FO_ON_FAILOVER_REBUILD)
				start_rebuild(p, ai);
			else
				become(p, FO_PAIR_DEGRADED, "no standby: %s failed (the kernel module switched away from it)",
				       p->m[ai].name);
		}
		return;
	}
	if (p->state == FO_PAIR_ARMING) {
		p->kevent = *ev;
		p->kevent_stored = true;
		arming_evaluate(p);
		return;
	}
	kernel_adopt_switch(p, ev, ai);
}

/*
 * ARMING with the module loaded: does the module have this pair armed (a
 * daemon before us armed it)? Then its roles are the truth. Returns true if
 * arming is decided here.
 */
static bool kernel_adopt_on_arming(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_hv_karm k;
	struct fo_member *a, *s;
	int ai, si, r;

	r = hv->ops->kernel_adopt(hv, p->kernel_id, p->cfg.period_ms, &k);
	if (r < 0) {
		if (r != -ENOENT)
			fo_warn("pair %s: cannot ask the kernel module about it: %s", p->cfg.name, strerror(-r));
		p->kernel_armed = p->kernel_firing = false;
		return false;
	}
	ai = fo_pair_member_by_domid(p, k.active);
	si = fo_pair_member_by_domid(p, k.standby);
	p->kernel_armed = true;
	p->kernel_firing = false;
	if (ai < 0 || si < 0 || ai == si) {
		/* Our pair id, other domains: what an earlier config of this
		 * name had. Ours is the config now: disarm theirs (the module
		 * leaves both domains paused or running as they are); arming
		 * goes on from Xen's state and ARMs ours once ARMED. */
		record(p, FO_EV_INFO, FO_RESULT_INFO,
		       "the kernel module had this pair's id %u armed with dom%u -> dom%u, not its members: disarmed there (both left as they are); re-armed with its own members once ARMED",
		       p->kernel_id, k.active, k.standby);
		kernel_release(p);
		p->kernel_armed = p->kernel_firing = false;
		return false;
	}
	p->active = ai;
	a = &p->m[ai];
	s = &p->m[si];
	if (k.firing) {
		p->kernel_firing = true;
		become(p, FO_PAIR_ARMING, "the kernel module is switching %s -> %s; waiting for its event", a->name, s->name);
		return true;
	}
	if (a->state == FO_DOM_RUNNING && s->state == FO_DOM_RUNNING) {
		/* Never both: PAUSE is allowed on an armed pair. */
		if (!fence_member(p, s)) {
			become(p, FO_PAIR_DEGRADED, "could not pause standby %s", s->name);
			return true;
		}
	}
	if (a->state == FO_DOM_RUNNING && s->state == FO_DOM_PAUSED) {
		const struct fo_verdict *v = member_verdict(p, s);

		if (v) {
			/* Never armed with a failed standby: DEGRADED takes
			 * it back from the module (become). */
			refuse_standby(p, s, v);
			arm_active_deadline(p);
			return true;
		}
		s->usable = true;
		become_armed(p, "adopted from the kernel module, which has it armed");
		return true;
	}
	/* The module's active is not running: it will switch when its deadline
	 * passes (a paused domain does not notify). Take the pair back and
	 * decide from Xen's state, as any restart does. */
	r = take_from_kernel(p);
	if (r == -EALREADY) {
		if (p->state == FO_PAIR_ARMING && p->kernel_firing)
			become(p, FO_PAIR_ARMING, "the kernel module is switching %s -> %s; waiting for its event",
			       a->name, s->name);
		return true;
	}
	p->kernel_armed = p->kernel_firing = false;
	return false;
}

/* ARMING: the standby must prove itself (heartbeat progress) within
 * FO_ARM_WAIT_NS; meanwhile the active is watched as usual. */
static void wait_for_standby(struct fo_pair *p, const char *what)
{
	struct fo_member *s = fo_pair_standby(p);

	if (s->deadline_kind != FO_DL_ARM_WAIT)
		set_deadline(s, FO_DL_ARM_WAIT, now_ns(p) + FO_ARM_WAIT_NS);
	arm_active_deadline(p);
	become(p, FO_PAIR_ARMING, "standby %s %s", s->name, what);
}

/* ARMING: decide from what the hypervisor says. Never unpauses. */
static void arming_evaluate(struct fo_pair *p)
{
	struct fo_member *m = p->m;
	const struct fo_verdict *v;
	bool run0, run1;

	refresh_member(p, &m[0]);
	refresh_member(p, &m[1]);
	for (int i = 0; i < 2; i++)
		if (m[i].domid == FO_DOMID_INVALID) {
			become(p, FO_PAIR_ARMING, "waiting for domain %s to exist", m[i].name);
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
			kernel_adopt_switch(p, &ev, ai);
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
	if (p->kernel_ok && kernel_adopt_on_arming(p))
		return;

	run0 = m[0].state == FO_DOM_RUNNING;
	run1 = m[1].state == FO_DOM_RUNNING;

	if (run0 != run1) {
		int r = run0 ? 0 : 1;
		p->active = r;
		if (fo_dom_state_is_dead(m[!r].state)) {
			m[!r].usable = false;
			become(p, FO_PAIR_DEGRADED, "no standby: %s is %s", m[!r].name,
			       fo_dom_state_name(m[!r].state));
			arm_active_deadline(p);
			publish_roles(p);
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
		v = member_verdict(p, &m[!r]);
		if (!v)
			v = presume_switched_away(p, !r);
		if (v) {
			refuse_standby(p, &m[!r], v);
			arm_active_deadline(p);
			publish_roles(p);
			return;
		}
		m[!r].usable = true;
		become_armed(p, "adopted from the hypervisor's state");
		return;
	}

	if (run0 && run1) {
		struct fo_member *s;

		prefer_active(p);
		s = fo_pair_standby(p);
		v = member_verdict(p, s);
		if (v) {
			/* A failed instance someone started again: it must not
			 * run beside the active, and heartbeating proves nothing
			 * about what made it fail. */
			if (!fence_member(p, s)) {
				become(p, FO_PAIR_DEGRADED, "standby %s failed earlier, runs, and could not be paused",
				       s->name);
				return;
			}
			refuse_standby(p, s, v);
			arm_active_deadline(p);
			publish_roles(p);
			return;
		}
		/* First boot: the standby runs until its agent's sequence moves
		 * (a page left by a stopped agent is not enough). */
		if (s->hb.progressed) {
			if (!fence_member(p, s)) {
				become(p, FO_PAIR_DEGRADED, "could not pause standby %s", s->name);
				return;
			}
			s->usable = true;
			become_armed(p, "standby heartbeated, then paused");
			return;
		}
		wait_for_standby(p, "waiting for it to heartbeat before pausing it");
		return;
	}

	/* Nothing runs. */
	if (fo_dom_state_is_dead(m[0].state) && fo_dom_state_is_dead(m[1].state))
		become(p, FO_PAIR_DEGRADED, "both members dead: %s is %s, %s is %s", m[0].name,
		       fo_dom_state_name(m[0].state), m[1].name, fo_dom_state_name(m[1].state));
	else
		become(p, FO_PAIR_DEGRADED, "nothing runs (%s %s, %s %s): choose with `failoverctl switchover`",
		       m[0].name, fo_dom_state_name(m[0].state), m[1].name, fo_dom_state_name(m[1].state));
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

/* ---- the fence audit ---- */

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

void fo_pair_update_config(struct fo_pair *p, const struct fo_pair_config *cfg)
{
	bool rearm = p->kernel_armed && !p->kernel_firing && cfg->timeout_ms != p->cfg.timeout_ms;

	p->cfg = *cfg;
	if (rearm) {
		/* The module has the old timeout: ARM it anew. */
		kernel_release(p);
		p->kernel_retry_ns = 0;
		kernel_try_arm(p);
	}
	if (p->state == FO_PAIR_ARMED)
		arm_active_deadline(p);
}

void fo_pair_arm(struct fo_pair *p)
{
	for (int i = 0; i < 2; i++)
		set_deadline(&p->m[i], FO_DL_NONE, 0);
	if (!p->audit_next_ns)
		p->audit_next_ns = now_ns(p) + MS(p->cfg.period_ms);
	p->state = FO_PAIR_ARMING;
	arming_evaluate(p);
}

void fo_pair_disarm(struct fo_pair *p)
{
	for (int i = 0; i < 2; i++)
		set_deadline(&p->m[i], FO_DL_NONE, 0);
	become(p, FO_PAIR_DISARMED, "disarmed by operator: no automatic switchover");
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

/* What the switch leaves behind for the failed member. Off the real-time
 * path: the standby is already running. */
static void apply_on_failover(struct fo_pair *p, struct fo_member *failed)
{
	struct fo_hv *hv = p->env->hv;
	int r;

	switch (p->cfg.on_failover) {
	case FO_ON_FAILOVER_KEEP_PAUSED:
		break;
	case FO_ON_FAILOVER_DESTROY:
	case FO_ON_FAILOVER_REBUILD:
		if (failed->domid == FO_DOMID_INVALID || failed->state == FO_DOM_GONE)
			break;
		r = hv->ops->destroy(hv, failed->domid);
		if (r < 0 && r != -ESRCH)
			fo_err("pair %s: could not destroy failed member %s (domain %u): %s", p->cfg.name,
			       failed->name, failed->domid, strerror(-r));
		hv->ops->unwatch_member(hv, failed->domid);
		failed->domid = FO_DOMID_INVALID;
		failed->state = FO_DOM_GONE;
		failed->agent_attached = false;
		fo_hb_reset(&failed->hb);
		break;
	}
}

static void start_rebuild(struct fo_pair *p, int idx)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *m = &p->m[idx];
	const char *cfgpath = fo_pair_member_config(p, idx);
	int r;

	r = hv->ops->create(hv, cfgpath);
	if (r < 0) {
		become(p, FO_PAIR_DEGRADED, "rebuild of %s from %s failed: %s", m->name, cfgpath, strerror(-r));
		return;
	}
	/* Found again by name once it exists (domain_created or
	 * @introduceDomain), then watched like any member. We build it: a new
	 * instance, whatever was said about the old one or its name. */
	if (p->env->verdicts && fo_verdicts_clear(p->env->verdicts, m->name))
		persist(p);
	p->rebuild_member = idx;
	refresh_member(p, m);
	m->usable = false;
	set_deadline(m, FO_DL_REBUILD, now_ns(p) + FO_ARM_WAIT_NS);
	become(p, FO_PAIR_REBUILDING, "rebuilding %s as the new standby", m->name);
}

static struct fo_event *pending_switch_event(struct fo_pair *p)
{
	struct fo_event *e = (struct fo_event *)fo_event_ring_find(p->env->ring, p->switch_event_id);
	return e && e->pending ? e : NULL;
}

/* The switch is over: the new active heartbeated (or did not, in time). */
static void finish_switch(struct fo_pair *p, bool heartbeated)
{
	struct fo_event *e = pending_switch_event(p);
	struct fo_member *old = fo_pair_standby(p);

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
		become(p, FO_PAIR_DEGRADED, "new active %s did not heartbeat within %u ms of the switch",
		       fo_pair_active(p)->name, p->cfg.grace_ms);
		return;
	}
	arm_active_deadline(p);
	if (!p->switch_was_fault && old->usable && !member_verdict(p, old)) {
		become_armed(p, "roles swapped by switchover");
		return;
	}
	if (p->cfg.on_failover == FO_ON_FAILOVER_REBUILD) {
		start_rebuild(p, !p->active);
		return;
	}
	if (member_verdict(p, old)) {
		refuse_standby(p, old, member_verdict(p, old));
		return;
	}
	become(p, FO_PAIR_DEGRADED, "no standby: %s failed and was %s", old->name,
	       p->cfg.on_failover == FO_ON_FAILOVER_DESTROY ? "destroyed" : "kept paused");
}

/*
 * Fault or request -> fenced switch. Everything from here to
 * fo_switchover_execute() returning is the real-time path: the event slot
 * is claimed from the preallocated ring, nothing is logged.
 */
static int begin_switchover(struct fo_pair *p, enum fo_fault fault, uint64_t fault_ns, uint64_t detected_ns)
{
	struct fo_member *from = fo_pair_active(p), *to = fo_pair_standby(p);
	struct fo_switch_outcome out;
	bool drill = p->drill_active && p->drill_event_id == 0;
	struct fo_event *e;
	int r;

	if (to->domid == FO_DOMID_INVALID || fo_dom_state_is_dead(to->state))
		return -ENODEV;
	/* One owner per pair: the module lets go first, or it already acted.
	 * A refusal is -EBUSY to our callers, whatever the module said: -EIO
	 * from here means a switch that ran and did not end well. */
	r = take_from_kernel(p);
	if (r == -EALREADY)
		return r;
	if (r < 0) {
		fo_warn("pair %s: the kernel module would not give the pair back: %s", p->cfg.name, strerror(-r));
		return -EBUSY;
	}

	e = fo_event_ring_claim(p->env->ring, detected_ns);
	e->kind = drill ? FO_EV_DRILL : FO_EV_SWITCHOVER;
	e->fault = fault;
	e->deadline_ms = p->cfg.deadline_ms;
	e->budget_ms = p->cfg.timeout_ms + p->cfg.period_ms + p->cfg.deadline_ms;
	e->pending = true;
	memcpy(e->pair, p->cfg.name, sizeof(e->pair));
	memcpy(e->from, from->name, sizeof(e->from));
	memcpy(e->to, to->name, sizeof(e->to));
	e->phase_ns[FO_PHASE_FAULT] = drill ? p->drill_inject_ns : fault_ns;
	e->phase_ns[FO_PHASE_DETECTED] = detected_ns;
	e->phase_ns[FO_PHASE_DECIDED] = now_ns(p);
	p->state = FO_PAIR_SWITCHING;

	/* An active found gone keeps its domid until refresh_identity() runs,
	 * after this: to the switch it is what a forgotten one is. */
	fo_switchover_execute(p->env->hv, from->state == FO_DOM_GONE ? FO_DOMID_INVALID : from->domid, to->domid,
			      e->phase_ns, &out);

	/* ---- the standby runs (or we stopped safely); the rest can take time ---- */
	if (p->env->hv->ops->switch_path)
		snprintf(e->path, sizeof(e->path), "%s", p->env->hv->ops->switch_path(p->env->hv));
	if (fault == FO_FAULT_HEARTBEAT_STUCK)
		snprintf(e->message, sizeof(e->message),
			 "agent notified, sequence stuck at %llu for %llu ms (seen by failoverd, not the kernel module)",
			 (unsigned long long)from->hb.sequence,
			 (unsigned long long)((detected_ns - (from->hb.progressed ? from->hb.last_progress_ns : fault_ns)) /
					      1000000ull));
	return after_switch(p, e, &out, fault, drill);
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
		arm_active_deadline(p);
		return;
	}
	fo_err("pair %s: could not start %s again after the failed switchover (unpause: %s); it is %s", p->cfg.name,
	       from->name, r < 0 ? strerror(-r) : "ok", fo_dom_state_name(from->state));
}

/* Everything after the fenced sequence, ours or the module's: `e` holds the
 * phases, `out` how it ended. The pair's active is still the old one. */
static int after_switch(struct fo_pair *p, struct fo_event *e, const struct fo_switch_outcome *outp,
			enum fo_fault fault, bool drill)
{
	struct fo_member *from = fo_pair_active(p), *to = fo_pair_standby(p);
	struct fo_switch_outcome out = *outp;
	uint64_t started;

	from->state = out.from_state;
	to->state = out.to_state;
	/*
	 * The verdict, in memory: the standby already runs (or we stopped
	 * safely), and writing it waits for the end of this function. A
	 * daemon killed in between leaves no verdict on file, but the
	 * recorded active is still `from`: a restarted daemon finding `from`
	 * paused and `to` running presumes `from` failed
	 * (presume_switched_away). A manual switch killed there is presumed
	 * failed too: the safe side, cleared by the operator.
	 */
	if (fault != FO_FAULT_MANUAL)
		mark_failed(p, from, fo_fault_name(fault));
	e->result = out.result;
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
		persist(p);
		become(p, FO_PAIR_DEGRADED, "switchover %s -> %s %s: %s", from->name, to->name,
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
	mark_active(p);
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
	publish_roles(p);
	persist(p);
	if (p->switch_was_fault)
		apply_on_failover(p, from);
	return 0;
}

/* An automatic failover: a fault on the active. */
static void fail_over(struct fo_pair *p, enum fo_fault fault, uint64_t fault_ns, uint64_t now)
{
	int r = begin_switchover(p, fault, fault_ns, now);

	if (r == -ENODEV) {
		mark_failed(p, fo_pair_active(p), fo_fault_name(fault));
		persist(p);
		become(p, FO_PAIR_DEGRADED, "active %s failed (%s) and there is no standby to take over",
		       fo_pair_active(p)->name, fo_fault_name(fault));
	}
	else if (r == -EBUSY)
		/* The module still has the pair and would not give it back:
		 * it stays the owner (it switches on heartbeat loss). */
		record(p, FO_EV_INFO, FO_RESULT_INFO, "active %s failed (%s) but the kernel module would not give the pair back",
		       fo_pair_active(p)->name, fo_fault_name(fault));
	/* -EIO: the switch ran and failed; its event and DEGRADED say why. */
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
		state_report(p, m);
		switch (p->state) {
		case FO_PAIR_SWITCHING:
			if (m->deadline_kind == FO_DL_GRACE)
				finish_switch(p, true);
			break;
		case FO_PAIR_ARMED:
			if (page_is_unhealthy(p, m)) {
				fail_over(p, FO_FAULT_UNHEALTHY, now, now);
				return;
			}
			if (p->cfg.deadline_miss_count &&
			    fo_hb_misses_within(&m->hb, p->cfg.deadline_miss_count, MS(p->cfg.deadline_miss_window_ms), now)) {
				fail_over(p, FO_FAULT_DEADLINE_MISS, now, now);
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
			kernel_try_arm(p);
		return;
	}

	/* The standby (or a member being rebuilt) heartbeated: it runs. */
	if (p->state == FO_PAIR_ARMING && m->deadline_kind == FO_DL_ARM_WAIT) {
		arming_evaluate(p);
		return;
	}
	if (p->state == FO_PAIR_REBUILDING && p->rebuild_member == idx) {
		if (!fence_member(p, m)) {
			become(p, FO_PAIR_DEGRADED, "could not pause rebuilt member %s", m->name);
			return;
		}
		p->rebuild_member = -1;
		m->usable = true;
		become_armed(p, "failed member rebuilt and paused as the new standby");
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
		kernel_try_arm(p);
		return;
	}
	if (err == -ESTALE && idx == p->active && p->kernel_armed && !p->kernel_firing) {
		/* The agent restarted with a new port while the module holds the
		 * old one, which will never notify again: the module would fail
		 * over a live agent. Hand it the new port (DISARM, ARM). */
		fo_info("pair %s: %s; re-arming the kernel module on the new port", p->cfg.name, reason);
		kernel_release(p);
		p->kernel_retry_ns = 0;
		kernel_try_arm(p);
		return;
	}
	if (err < 0 && fo_ratelimit_ok(&m->garbage_rl, now_ns(p)))
		fo_warn("pair %s: heartbeat channel of %s (domain %u) refused: %s", p->cfg.name, m->name, m->domid,
			reason);
}

const char *fo_pair_member_config(const struct fo_pair *p, int idx)
{
	return strcmp(p->m[idx].name, p->cfg.active) == 0 ? p->cfg.active_config : p->cfg.standby_config;
}

void fo_pair_on_created(struct fo_pair *p, int idx, int err, const char *reason)
{
	if (p->state != FO_PAIR_REBUILDING || p->rebuild_member != idx)
		return;
	if (err < 0) {
		p->rebuild_member = -1;
		set_deadline(&p->m[idx], FO_DL_NONE, 0);
		become(p, FO_PAIR_DEGRADED, "rebuild of %s failed: %s", p->m[idx].name, reason);
		return;
	}
	refresh_member(p, &p->m[idx]);
	snprintf(p->reason, sizeof(p->reason), "rebuilt %s (domain %u), waiting for its first heartbeat",
		 p->m[idx].name, p->m[idx].domid);
}

void fo_pair_on_deadline(struct fo_pair *p, int idx)
{
	struct fo_member *m = &p->m[idx];
	enum fo_deadline_kind kind = m->deadline_kind;
	uint64_t due = m->deadline_ns; /* a heartbeat loss is a fault from here on */
	uint64_t now = now_ns(p);

	set_deadline(m, FO_DL_NONE, 0);
	switch (kind) {
	case FO_DL_NONE:
		break;
	case FO_DL_HEARTBEAT:
		m->misses++;
		if (idx == p->active && p->state == FO_PAIR_ARMED) {
			/* The fault is the deadline, not our noticing it: the
			 * timer's lateness counts, as it does for the module. */
			enum fo_fault fault = FO_FAULT_HEARTBEAT_TIMEOUT;
			uint64_t fault_ns = due && due <= now ? due : now;

			if (p->kernel_armed && (fault = kernel_backstop(p, now, due, &fault_ns)) == FO_FAULT_NONE)
				return; /* the module has it, or we look again */
			fail_over(p, fault, fault_ns, now);
			return;
		}
		/* Not armed: nothing to switch to, but say so once. */
		if (p->state != FO_PAIR_DISARMED)
			record(p, FO_EV_INFO, FO_RESULT_INFO, "active %s missed its heartbeat deadline (%u ms) while %s",
			       m->name, p->cfg.timeout_ms, fo_pair_state_name(p->state));
		break;
	case FO_DL_GRACE:
		if (p->state == FO_PAIR_SWITCHING)
			finish_switch(p, false);
		break;
	case FO_DL_ARM_WAIT:
		if (p->state != FO_PAIR_ARMING)
			break;
		/* The standby never proved itself: it still must not run beside the active. */
		become(p, FO_PAIR_DEGRADED, "standby %s did not heartbeat within %llu s of arming; %s", m->name,
		       (unsigned long long)(FO_ARM_WAIT_NS / 1000000000ull),
		       fence_member(p, m) ? "paused" : "could not pause it (retried every period)");
		break;
	case FO_DL_REBUILD:
		if (p->state != FO_PAIR_REBUILDING)
			break;
		p->rebuild_member = -1;
		become(p, FO_PAIR_DEGRADED, "rebuilt member %s did not heartbeat in time; %s", m->name,
		       m->domid == FO_DOMID_INVALID ? "it does not exist"
		       : fence_member(p, m)          ? "paused"
						     : "could not pause it (retried every period)");
		break;
	case FO_DL_DRILL:
		if (!p->drill_active)
			break;
		p->drill_active = false;
		p->drill_done_id = record(p, FO_EV_DRILL, FO_RESULT_FAILED,
					  "drill %s: the fault caused no switchover in time",
					  fo_drill_kind_name(p->drill_kind))->id;
		if (p->state == FO_PAIR_ARMED)
			arm_active_deadline(p);
		break;
	}
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

	if (p->state != FO_PAIR_ARMED || !refresh_state(p, a) || !fo_dom_state_is_dead(a->state))
		return;
	refresh_state(p, fo_pair_standby(p));
	fail_over(p, fault_of_state(a->state), now, now);
}

void fo_pair_on_domains_changed(struct fo_pair *p)
{
	struct fo_member *a, *s;
	uint64_t now;

	fo_pair_domains_fault(p);
	now = now_ns(p);
	if (p->state == FO_PAIR_ARMING) {
		arming_evaluate(p);
		persist(p); /* a verdict on an instance that is gone, dropped */
		return;
	}
	refresh_member(p, &p->m[0]);
	refresh_member(p, &p->m[1]);
	a = fo_pair_active(p);
	s = fo_pair_standby(p);

	/* The invariant first, in every state. */
	if (a->state == FO_DOM_RUNNING && s->state == FO_DOM_RUNNING && p->rebuild_member != !p->active) {
		/* Nobody but us unpauses a standby: whoever did is a third
		 * party, reported like the fence audit's own finding (this
		 * path sees it first when the domain change is news already). */
		if (fence_member(p, s)) {
			s->external_unpauses++;
			record(p, FO_EV_EXTERNAL_UNPAUSE, FO_RESULT_OK,
			       "%s (domain %u) found running beside the active; paused again", s->name, s->domid);
		}
		else if (p->state == FO_PAIR_ARMED)
			/* A standby we cannot keep paused protects nothing. */
			become(p, FO_PAIR_DEGRADED, "standby %s runs beside the active and could not be paused",
			       s->name);
	}

	switch (p->state) {
	case FO_PAIR_ARMED:
		if (fo_dom_state_is_dead(a->state)) {
			fail_over(p, fault_of_state(a->state), now, now);
			return;
		}
		if (fo_dom_state_is_dead(s->state)) {
			s->usable = false;
			become(p, FO_PAIR_DEGRADED, "standby %s is %s", s->name, fo_dom_state_name(s->state));
		}
		break;
	case FO_PAIR_SWITCHING:
		if (fo_dom_state_is_dead(a->state)) {
			struct fo_event *e = pending_switch_event(p);
			if (e)
				e->pending = false;
			p->switch_event_id = 0;
			set_deadline(a, FO_DL_NONE, 0);
			become(p, FO_PAIR_DEGRADED, "new active %s is %s right after the switch", a->name,
			       fo_dom_state_name(a->state));
		}
		break;
	case FO_PAIR_REBUILDING:
		if (p->rebuild_member >= 0 && fo_dom_state_is_dead(a->state))
			become(p, FO_PAIR_DEGRADED, "active %s is %s while rebuilding the standby", a->name,
			       fo_dom_state_name(a->state));
		break;
	default:
		break;
	}
	/* A verdict on an instance that is gone (refresh_member dropped it):
	 * written here, after any switch above, never before one. */
	persist(p);
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
			refresh_member(p, &p->m[i]);
		else
			refresh_state(p, &p->m[i]);
	r = request_switchover(p, now, err, errlen);
	/* A member found gone is forgotten now, after any switch. */
	refresh_identity(p, &p->m[0]);
	refresh_identity(p, &p->m[1]);
	return r;
}

static int request_switchover(struct fo_pair *p, uint64_t now, char *err, size_t errlen)
{
	struct fo_member *to = fo_pair_standby(p);

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
	if (member_verdict(p, to)) {
		char what[96];

		fo_verdict_describe(member_verdict(p, to), what, sizeof(what));
		snprintf(err, errlen, "pair %s: standby %s %s; clear with failoverctl clear-failed %s first",
			 p->cfg.name, to->name, what, to->name);
		return -EPERM;
	}
	switch (begin_switchover(p, FO_FAULT_MANUAL, now, now)) {
	case 0:
		return 0;
	case -EALREADY:
		snprintf(err, errlen, "pair %s: the kernel module switched it first (heartbeat loss); see `events`",
			 p->cfg.name);
		return -EALREADY;
	case -ENODEV:
	case -EIO:
		snprintf(err, errlen, "pair %s: switchover failed: %s", p->cfg.name, p->reason);
		return -EIO;
	default:
		snprintf(err, errlen, "pair %s: the kernel module would not give the pair back; nothing done",
			 p->cfg.name);
		return -EBUSY;
	}
}

/* What the agent is told to do for a drill; NULL: the drill needs no agent. */
static const char *drill_command(enum fo_drill_kind kind)
{
	switch (kind) {
	case FO_DRILL_HEARTBEAT_LOSS:
		return FO_HB_CMD_STOP;
	case FO_DRILL_HANG:
		return FO_HB_CMD_FREEZE;
	case FO_DRILL_CRASH:
		return FO_HB_CMD_CRASH;
	case FO_DRILL_UNHEALTHY:
		return FO_HB_CMD_UNHEALTHY;
	default:
		return NULL;
	}
}

void fo_pair_on_write_failed(struct fo_pair *p, int member, const char *key, const char *value, int err)
{
	const char *cmd = p->drill_active ? drill_command(p->drill_kind) : NULL;

	/* A role that did not land is logged by the backend; the guest keeps
	 * the old one until the next switch publishes roles again. */
	if (strcmp(key, FO_HB_XS_CONTROL) != 0)
		return;
	/* The drill's command never reached the agent: nothing will fail, so
	 * do not let the operator wait for the drill's budget to say so. */
	if (!cmd || p->drill_event_id != 0 || member != p->active || strcmp(value, cmd) != 0)
		return;
	p->drill_active = false;
	set_deadline(fo_pair_standby(p), FO_DL_NONE, 0);
	p->drill_done_id = record(p, FO_EV_DRILL, FO_RESULT_FAILED,
				  "drill %s: command \"%s\" never reached the agent of %s: %s",
				  fo_drill_kind_name(p->drill_kind), cmd, p->m[member].name, strerror(-err))->id;
	arm_active_deadline_if_armed(p);
}

int fo_pair_request_drill(struct fo_pair *p, enum fo_drill_kind kind, char *err, size_t errlen)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a = fo_pair_active(p);
	uint64_t budget_ms;
	const char *cmd;
	int r;

	if (p->state != FO_PAIR_ARMED) {
		snprintf(err, errlen, "pair %s is %s (%s): a drill needs an ARMED pair", p->cfg.name,
			 fo_pair_state_name(p->state), p->reason);
		return -EBUSY;
	}
	if (p->drill_active) {
		snprintf(err, errlen, "pair %s: a drill is already running", p->cfg.name);
		return -EBUSY;
	}
	p->drill_active = true;
	p->drill_kind = kind;
	p->drill_event_id = 0;
	p->drill_done_id = 0;
	p->drill_inject_ns = now_ns(p);
	/* A drill must switch within what a real fault of its kind would take,
	 * with room for a slow guest; past that it failed. */
	budget_ms = (uint64_t)p->cfg.timeout_ms + p->cfg.period_ms + p->cfg.deadline_ms + 5000;
	/* The drill's own deadline rides on the standby's slot: it is paused
	 * and has no deadline of its own while ARMED. */
	set_deadline(fo_pair_standby(p), FO_DL_DRILL, p->drill_inject_ns + MS(budget_ms));

	cmd = drill_command(kind);
	if (cmd) {
		r = hv->ops->agent_command(hv, a->domid, cmd);
	} else if (kind == FO_DRILL_DESTROY) {
		r = hv->ops->destroy(hv, a->domid);
		if (r == 0)
			fo_pair_on_domains_changed(p);
	} else if (kind == FO_DRILL_MANUAL) {
		r = begin_switchover(p, FO_FAULT_MANUAL, p->drill_inject_ns, now_ns(p));
		if (r == -EALREADY)
			r = 0; /* the module switched first; its event is this drill's */
	} else {
		r = -EINVAL;
	}
	if (r < 0 && p->drill_event_id == 0) {
		p->drill_active = false;
		set_deadline(fo_pair_standby(p), FO_DL_NONE, 0);
		snprintf(err, errlen, "pair %s: could not inject %s: %s", p->cfg.name, fo_drill_kind_name(kind),
			 strerror(-r));
		return r;
	}
	return 0;
}
