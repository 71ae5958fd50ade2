/* SPDX-License-Identifier: MIT */
/*
 * kernel_owner.c - handing a pair to the kernel module (kmod-switch) and
 * taking it back: one owner per pair, the module or us.
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
 *   - Our heartbeat deadline becomes a look at the module, in a handler of
 *     its own (fo_pair_kernel_on_deadline, the backstop; timeout + period after the
 *     last progress we saw, when a silent agent has long been switched by
 *     the module): we ask it (PAIRINFO). Firing/just
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
#include "core/pair/pair_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A failed kernel ARM is retried no more often than this. */
#define FO_KERNEL_RETRY_NS (1000ull * 1000000ull)

uint32_t fo_pair_kernel_id(const char *name)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 16777619u;
	return h;
}

/* Who has the pair when it is armed, for messages. */
const char *fo_pair_owner_desc(const struct fo_pair *p)
{
	return p->kernel_owner_is_hv ? "Xen's failover watch" : "the kernel module";
}

/* Ask the owner whether it has the pair armed (PAIRINFO / QUERY). */
static int owner_adopt(struct fo_pair *p, struct fo_hv_karm *k)
{
	struct fo_hv *hv = p->env->hv;
	const fo_domid_t members[2] = { p->m[0].domid, p->m[1].domid };

	return hv->ops->kernel_adopt(hv, p->kernel_id, members, p->cfg.period_ms, k);
}

/* ARMED and the module can have it: hand it over. Failures leave the pair
 * ours (we switch it ourselves, as without the module) and are retried. */
void fo_pair_kernel_try_arm(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a = fo_pair_active(p), *s = fo_pair_standby(p);
	uint64_t now = now_ns(p);
	int r;

	if (!p->kernel_ok || p->kernel_armed || p->state != FO_PAIR_ARMED || now < p->kernel_retry_ns)
		return;
	if (a->domid == FO_DOMID_INVALID || s->domid == FO_DOMID_INVALID)
		return;
	/* Armed, the owner switches without us, and a restart learns of its
	 * switch from the file as much as from its event: the file names this
	 * active before it can switch away from it (fo_pair_persist). */
	fo_pair_persist_now(p);
	r = hv->ops->kernel_arm(hv, p->kernel_id, a->domid, s->domid, p->cfg.timeout_ms, p->cfg.period_ms);
	if (r == 0) {
		p->kernel_armed = true;
		p->kernel_firing = false;
		fo_pair_arm_active_deadline(p); /* now the backstop */
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
			       "armed in %s (pair id %u): it switches %s -> %s on heartbeat loss", fo_pair_owner_desc(p),
			       p->kernel_id, a->name, s->name);
		return;
	}
	p->kernel_retry_ns = now + FO_KERNEL_RETRY_NS;
	/* -ENOENT: the active's agent is not attached yet (no port to hand
	 * over); its attach retries at once (fo_pair_on_agent), a heartbeat
	 * after the delay. Anything else is worth a line. */
	if (r != -ENOENT && fo_ratelimit_ok(&a->garbage_rl, now))
		fo_warn("pair %s: cannot arm in %s (pair id %u, dom%u -> dom%u): %s; failoverd switches it itself",
			p->cfg.name, fo_pair_owner_desc(p), p->kernel_id, a->domid, s->domid, strerror(-r));
}

/* Take the pair back from the module. */
void fo_pair_kernel_disarm(struct fo_pair *p)
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
	fo_pair_arm_active_deadline_if_armed(p);
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
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
			       "the kernel module is switching dom%u -> dom%u under this pair's id %u; its event follows",
			       k->active, k->standby, k->pair_id);
		return;
	}
	r = hv->ops->kernel_disarm(hv, k->pair_id);
	fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
		       "the kernel module had this pair's id %u armed with dom%u -> dom%u, which failoverd did not arm (pair %s): %s",
		       k->pair_id, k->active, k->standby, fo_pair_state_name(p->state),
		       r == 0 ? "disarmed there, both left as they are" :
		       r == -EALREADY ? "it is switching; its event follows" :
		       r == -ENOENT ? "gone already" : strerror(-r));
	if (r == 0 || r == -ENOENT) {
		p->kernel_armed = p->kernel_firing = false;
		if (was_ours)
			fo_pair_arm_active_deadline_if_armed(p); /* ours again until re-armed */
		p->kernel_retry_ns = 0;
		fo_pair_kernel_try_arm(p);
	}
}

void fo_pair_kernel_release(struct fo_pair *p)
{
	if (p->kernel_armed && !p->kernel_firing)
		fo_pair_kernel_disarm(p);
}

/*
 * Before a switch of our own: 0 if the pair is ours (never was the
 * module's, or DISARM succeeded, or the module lost it without switching);
 * -EALREADY if the module switched or is switching it (its event has been
 * or will be adopted: do nothing); another -errno if the module would not
 * say (it keeps the pair).
 */
int fo_pair_kernel_take_back(struct fo_pair *p)
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
 * We wait for the owner's outcome (kernel_firing): has it gone without
 * one? Another control-domain tool RELEASEd Xen's watch after it ended
 * (`fowatch-ctl release`: Xen keeps the fenced active paused, as a
 * toolstack pause) before we read the VIRQ, whose QUERY then finds nothing
 * (hv/fowatch/owner.c frees the slot and reports a domain change); or a
 * member's destruction tore the watch down. No event will ever come, and
 * the deadline, the fence audit and our own switches all wait for one: the
 * pair is ours again (the SPIN model's finding E, tests/model `watch_live`).
 * A QUERY (PAIRINFO) only while firing; an outcome still there is adopted
 * as usual. Returns true if the pair was given back.
 */
bool fo_pair_kernel_gone_while_firing(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a = fo_pair_active(p), *s = fo_pair_standby(p);
	uint64_t seen = p->kernel_switches;
	struct fo_hv_karm k;
	bool destroyed;

	if (!p->kernel_armed || !p->kernel_firing || owner_adopt(p, &k) != -ENOENT)
		return false;
	/* Ended and not released: QUERY finished it and queued its event. */
	hv->ops->kernel_poll_events(hv);
	if (p->kernel_switches != seen || !p->kernel_armed)
		return false; /* its outcome came after all, and was adopted */
	p->kernel_armed = false;
	p->kernel_firing = false;
	/* The owner had found the active failed and fenced it (Xen keeps it
	 * paused): as with its event, that instance is never a standby again
	 * (an operator's `arm` after a disarm would adopt it as one). */
	fo_pair_mark_failed(p, a, "fenced-by-owner");
	fo_pair_persist(p);
	fo_pair_refresh_state(p, a);
	fo_pair_refresh_state(p, s);
	destroyed = a->state == FO_DOM_DYING || a->state == FO_DOM_GONE || s->state == FO_DOM_DYING ||
		    s->state == FO_DOM_GONE;
	fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO, "%s was %s while switching %s -> %s: no outcome will come, the pair is failoverd's",
		       fo_pair_owner_desc(p), destroyed ? "torn down (a member destroyed)" : "released outside failoverd (fowatch-ctl release?)",
		       a->name, s->name);
	return true;
}

/* The pair is the owner's and its standby runs: the owner must let go
 * before we pause anything, or a switch of its own could be undone (we
 * would pause the member it just started). True if the pair is ours now.
 * Used by the fence audit and by the never-both-running check on a domain
 * change (the SPIN model's finding C). */
bool fo_pair_kernel_yield_for_fence(struct fo_pair *p)
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
	r = fo_pair_kernel_take_back(p);
	if (r == -EALREADY)
		return false; /* it switched or is switching: its event decides */
	if (r < 0) {
		if (fo_ratelimit_ok(&fo_pair_standby(p)->garbage_rl, now_ns(p)))
			fo_warn("pair %s: standby %s runs while %s has the pair, and it would not give it back: %s",
				p->cfg.name, fo_pair_standby(p)->name, fo_pair_owner_desc(p), strerror(-r));
		return false;
	}
	fo_pair_arm_active_deadline_if_armed(p); /* ours until re-armed there */
	return true;
}

/*
 * The owner hears the agent within timeout_ms (the module its
 * notifications, Xen a moving sequence), so it will not act, but no valid
 * page of it has progressed for timeout + period: a fault only we can see.
 * `k` is what the owner said at this look; `second`: a first look at the
 * same active found no progress either. Returns the fault to switch for
 * (its time in *fault_ns), or FO_FAULT_NONE if we look again.
 */
static enum fo_fault stuck_check(struct fo_pair *p, const struct fo_hv_karm *k, bool second, uint64_t now,
				 uint64_t *fault_ns)
{
	struct fo_member *a = fo_pair_active(p);
	uint64_t period = MS(p->cfg.period_ms);
	bool heard;

	if (!second) {
		/* Not yet: progress the agent notified just now may sit in the
		 * page until the next poll. One period later, with a page read
		 * after this look, it cannot. */
		p->kstuck.looked = true;
		p->kstuck.member = p->active;
		p->kstuck.beats = a->hb.beats;
		p->kstuck.notifications = k->notifications;
		p->kstuck.last_notify_ns = k->last_notify_ns;
		p->kstuck.at_ns = now;
		/* The fault: timeout_ms without progress, one period before
		 * this deadline (hb_timeout_ns). */
		p->kstuck.fault_ns = *fault_ns > period ? *fault_ns - period : *fault_ns;
		set_deadline(a, FO_DL_HEARTBEAT, now + period);
		return FO_FAULT_NONE;
	}
	*fault_ns = p->kstuck.fault_ns;
	/* What the owner hears: the module counts notifications; Xen's watch
	 * reads the sequence itself and reports when it last moved. Xen hears
	 * a page full of garbage, whose "sequence" changes at random, as
	 * progress; we reject every such page, so only this check can take the
	 * pair back from Xen. */
	heard = k->notifications > p->kstuck.notifications || k->last_notify_ns > p->kstuck.last_notify_ns;
	if (heard && a->last_read_ns > p->kstuck.at_ns) {
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
			       "%s still hears active %s (%llu notifications, last progress it saw %llu ms ago) but no valid heartbeat progress reached failoverd in %llu ms (sequence %llu, %llu pages rejected); failoverd takes the pair back (unless the owner is switching it already)",
			       fo_pair_owner_desc(p), a->name, (unsigned long long)(k->notifications - p->kstuck.notifications),
			       (unsigned long long)(now > k->last_notify_ns ? (now - k->last_notify_ns) / 1000000ull : 0),
			       (unsigned long long)((now - p->kstuck.at_ns) / 1000000ull), (unsigned long long)a->hb.sequence,
			       (unsigned long long)a->hb.invalid);
		return FO_FAULT_HEARTBEAT_STUCK;
	}
	if (heard && now >= p->kstuck.at_ns + MS(p->cfg.timeout_ms / 2)) {
		/* Notifying, and no page of it has reached us for half a
		 * timeout: we cannot see progress it might make, and it made
		 * none we could see. As before this check existed. */
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
			       "%s still hears active %s but no page of it reached failoverd for %llu ms; failoverd takes the pair back",
			       fo_pair_owner_desc(p), a->name, (unsigned long long)((now - a->last_read_ns) / 1000000ull));
		return FO_FAULT_HEARTBEAT_STUCK;
	}
	/* No new notification (the agent may be going quiet: then the module
	 * fires at its deadline) or no page read yet: look again, keeping the
	 * first look. */
	p->kstuck.looked = true;
	set_deadline(a, FO_DL_HEARTBEAT, now + period);
	return FO_FAULT_NONE;
}

/*
 * The backstop: our heartbeat deadline passed while the owner has the pair
 * (`due`: when it was due). Returns the fault to switch for ourselves, with
 * its time in *fault_ns (the owner gave the pair up, cannot see the fault,
 * or does not act on it), or FO_FAULT_NONE if the owner is on it or we look
 * again (a new deadline is set).
 */
static enum fo_fault backstop_fault(struct fo_pair *p, uint64_t now, uint64_t due, uint64_t *fault_ns)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a = fo_pair_active(p);
	uint64_t seen = p->kernel_switches;
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
	r = owner_adopt(p, &k);
	if (r == -ENOENT) {
		hv->ops->kernel_poll_events(hv);
		if (p->kernel_switches != seen)
			return FO_FAULT_NONE; /* adopted its switch */
		p->kernel_armed = false;
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
			       "%s no longer has the pair armed (disarmed outside failoverd); failoverd switches it",
			       fo_pair_owner_desc(p));
		return FO_FAULT_HEARTBEAT_TIMEOUT;
	}
	if (r < 0) {
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO, "cannot ask %s about the pair: %s; it stays armed there",
			       fo_pair_owner_desc(p), strerror(-r));
		set_deadline(a, FO_DL_HEARTBEAT, now + MS(p->cfg.timeout_ms));
		return FO_FAULT_NONE;
	}
	if (k.firing) {
		p->kernel_firing = true;
		set_deadline(a, FO_DL_HEARTBEAT, now + MS(p->cfg.timeout_ms));
		return FO_FAULT_NONE;
	}
	if (now < k.deadline_ns)
		return stuck_check(p, &k, second, now, fault_ns);
	if (now < k.deadline_ns + MS(p->cfg.timeout_ms)) {
		set_deadline(a, FO_DL_HEARTBEAT, k.deadline_ns + MS(p->cfg.timeout_ms));
		return FO_FAULT_NONE;
	}
	fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
		       "%s has not switched %llu ms after its deadline; failoverd takes the pair back", fo_pair_owner_desc(p),
		       (unsigned long long)((now - k.deadline_ns) / 1000000ull));
	return FO_FAULT_HEARTBEAT_TIMEOUT;
}

/* The active's heartbeat deadline of an ARMED pair that an armed owner has
 * (pair.c: on_heartbeat_deadline dispatches here): the backstop decides,
 * and a fault it finds is switched as ours. */
void fo_pair_kernel_on_deadline(struct fo_pair *p, uint64_t due, uint64_t now)
{
	uint64_t fault_ns;
	enum fo_fault fault = backstop_fault(p, now, due, &fault_ns);

	if (fault != FO_FAULT_NONE)
		fo_pair_fail_over(p, fault, fault_ns, now);
}

/* The fault behind an owner's switch. */
static enum fo_fault kevent_fault(const struct fo_hv_kevent *ev)
{
	switch (ev->trigger) {
	case FO_HV_KTRIGGER_CRASH:
		return FO_FAULT_CRASHED;
	case FO_HV_KTRIGGER_SHUTDOWN:
		return FO_FAULT_SHUTDOWN;
	default:
		return FO_FAULT_HEARTBEAT_TIMEOUT;
	}
}

/* Record the owner's switch as ours and go on from there. m[ai] was the
 * active, m[si] the standby. */
void fo_pair_kernel_adopt_switch(struct fo_pair *p, const struct fo_hv_kevent *ev, int ai)
{
	struct fo_event *old = (struct fo_event *)fo_event_ring_find(p->env->ring, p->switch_event_id);
	bool drill = p->drill_active && p->drill_event_id == 0;
	struct fo_switch_outcome out = { .from_state = ev->active_state, .to_state = ev->standby_state };
	uint64_t det = ev->detected_ns ? ev->detected_ns : now_ns(p);
	enum fo_fault fault = kevent_fault(ev);
	bool hv_owner = ev->owner && !strcmp(ev->owner, "hypervisor");
	struct fo_event *e;

	fo_pair_after_work(p); /* our own switch earlier in this turn, finished first */
	if (old && old->pending)
		old->pending = false;
	p->switch_event_id = 0;
	p->kernel_armed = false;
	p->kernel_firing = false;
	p->active = ai;

	e = fo_pair_claim_switch_event(p, det, fault, drill, &p->m[ai], &p->m[!ai]);
	/* The owner detects and decides in one step (the module's hrtimer,
	 * Xen's watch timer); its times are on our clock (Xen's mapped). */
	e->phase_ns[FO_PHASE_FAULT] = drill ? p->drill_inject_ns : ev->deadline_ns && ev->deadline_ns <= det ? ev->deadline_ns : det;
	e->phase_ns[FO_PHASE_DETECTED] = det;
	e->phase_ns[FO_PHASE_DECIDED] = det;
	e->phase_ns[FO_PHASE_PAUSE_ISSUED] = ev->pause_issued_ns;
	e->phase_ns[FO_PHASE_PAUSE_DONE] = ev->pause_done_ns;
	e->phase_ns[FO_PHASE_UNPAUSE_ISSUED] = ev->unpause_issued_ns;
	e->phase_ns[FO_PHASE_UNPAUSE_DONE] = ev->unpause_done_ns;
	snprintf(e->path, sizeof(e->path), "%s", hv_owner ? "hypervisor" : "kernel");
	if (hv_owner)
		snprintf(e->message, sizeof(e->message),
			 "switched by Xen's failover watch: %s (stamps within %u us)",
			 fault == FO_FAULT_HEARTBEAT_TIMEOUT ? "no heartbeat progress for the timeout" :
			 fault == FO_FAULT_CRASHED ? "the active crashed" : "the active shut down",
			 (unsigned)(ev->clock_err_ns / 1000ull % 1000000u));
	else
		snprintf(e->message, sizeof(e->message),
			 "switched by the kernel module: no notification for %llu ms (%llu while armed)%s",
			 (unsigned long long)((det - ev->last_notify_ns) / 1000000ull),
			 (unsigned long long)ev->notifications,
			 ev->refenced ? "; old active ran again and was paused again" : "");
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
	fo_pair_after_switch(p, e, &out, fault, drill);
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
		fo_pair_mark_failed(p, &p->m[ai], fo_fault_name(kevent_fault(ev)));
		fo_pair_persist(p);
		if (p->kernel_firing && !p->kernel_armed)
			p->kernel_firing = false;
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO, "%s switched %s -> %s as well (already done)",
			       fo_pair_owner_desc(p), p->m[ai].name, p->m[si].name);
		if (p->state == FO_PAIR_ARMED) {
			if (p->cfg.on_failover == FO_ON_FAILOVER_REBUILD)
				fo_pair_start_rebuild(p, ai);
			else
				fo_pair_become(p, FO_PAIR_DEGRADED, "no standby: %s failed (%s switched away from it)",
					       p->m[ai].name, fo_pair_owner_desc(p));
		}
		return;
	}
	if (p->state == FO_PAIR_ARMING) {
		p->kevent = *ev;
		p->kevent_stored = true;
		fo_pair_arming_evaluate(p);
		return;
	}
	fo_pair_kernel_adopt_switch(p, ev, ai);
}

/*
 * ARMING with the module loaded: does the module have this pair armed (a
 * daemon before us armed it)? Then its roles are the truth. Returns true if
 * arming is decided here.
 */
bool fo_pair_kernel_adopt_on_arming(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_hv_karm k;
	struct fo_member *a, *s;
	int ai, si, r;

	r = owner_adopt(p, &k);
	if (r < 0) {
		if (r != -ENOENT)
			fo_warn("pair %s: cannot ask the kernel module about it: %s", p->cfg.name, strerror(-r));
		p->kernel_armed = p->kernel_firing = false;
		/* Not armed (any more): the module may have switched since
		 * arming read the domains' states, its event queued. Read the
		 * events now, as fo_pair_kernel_take_back() does, and arm from the
		 * switch rather than from the stale states (the SPIN model,
		 * tests/model, finding B: otherwise the new active is taken
		 * for a standby and paused). */
		if (r == -ENOENT && hv->ops->kernel_poll_events && !p->kevent_stored) {
			uint64_t seen = p->kernel_switches;

			hv->ops->kernel_poll_events(hv);
			if (p->kevent_stored) {
				fo_pair_arming_evaluate(p);
				return true;
			}
			/* Adopted already: an event for our members, read
			 * while ARMING, runs fo_pair_arming_evaluate itself (Xen's
			 * watch is found only now, by QUERY). Deciding again
			 * from the states read before would undo it. */
			if (p->kernel_switches != seen)
				return true;
		}
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
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
			       "the kernel module had this pair's id %u armed with dom%u -> dom%u, not its members: disarmed there (both left as they are); re-armed with its own members once ARMED",
			       p->kernel_id, k.active, k.standby);
		fo_pair_kernel_disarm(p);
		p->kernel_armed = p->kernel_firing = false;
		return false;
	}
	p->active = ai;
	a = &p->m[ai];
	s = &p->m[si];
	if (k.firing) {
		p->kernel_firing = true;
		fo_pair_become(p, FO_PAIR_ARMING, "%s is switching %s -> %s; waiting for its event", fo_pair_owner_desc(p), a->name,
			       s->name);
		return true;
	}
	if (a->state == FO_DOM_RUNNING && s->state == FO_DOM_RUNNING) {
		/* Never both: PAUSE is allowed on an armed pair. */
		if (!fo_pair_fence_member(p, s)) {
			fo_pair_become(p, FO_PAIR_DEGRADED, "could not pause standby %s", s->name);
			return true;
		}
	}
	/* A suspended active (a checkpoint) is still the module's: its
	 * deadline runs, and its switch pauses the suspended domain. */
	if ((a->state == FO_DOM_RUNNING || a->state == FO_DOM_SUSPENDED) && s->state == FO_DOM_PAUSED) {
		const struct fo_verdict *v = fo_pair_verdict_of(p, s);

		if (v) {
			/* Never armed with a failed standby: DEGRADED takes
			 * it back from the module (fo_pair_become). */
			fo_pair_refuse_standby(p, s, v);
			fo_pair_arm_active_deadline(p);
			return true;
		}
		s->usable = true;
		fo_pair_become_armed(p, p->kernel_owner_is_hv ? "adopted from Xen's failover watch, which has it armed" :
							"adopted from the kernel module, which has it armed");
		return true;
	}
	/* The module's active is not running: it will switch when its deadline
	 * passes (a paused domain does not notify). Take the pair back and
	 * decide from Xen's state, as any restart does. */
	r = fo_pair_kernel_take_back(p);
	if (r == -EALREADY) {
		if (p->state == FO_PAIR_ARMING && p->kernel_firing)
			fo_pair_become(p, FO_PAIR_ARMING, "%s is switching %s -> %s; waiting for its event",
				       fo_pair_owner_desc(p), a->name, s->name);
		return true;
	}
	p->kernel_armed = p->kernel_firing = false;
	return false;
}
