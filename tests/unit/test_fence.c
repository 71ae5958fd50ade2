/* SPDX-License-Identifier: MIT */
/*
 * test_fence.c - the safety core around fencing (issue #16), on the
 * simulated hypervisor: Xen's counted pauses (the simulator's model and the
 * daemon never relying on pause/unpause being idempotent), failed pauses
 * that are never reported as paused, the failure verdict that keeps a
 * failed member from ever being adopted as a standby again (persisted
 * across a restart, cleared by the operator or a new instance), and the
 * fence audit that re-pauses a member unpaused behind our back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "pair_fixture.h"
#include "core/fencing.h"

/* `ms` of life in 10 ms steps where only `d` heartbeats. */
static void only_beats(struct fx *f, fo_domid_t d, uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += 10) {
		beat_if_running(f, d);
		fo_sim_advance(f->hv, 10 * MS);
		fx_loop_once(f);
	}
}

static bool has_event_with(struct fx *f, enum fo_event_kind kind, const char *text)
{
	const struct fo_event_ring *r = fo_manager_events(f->mgr);

	for (size_t i = 0; i < fo_event_ring_count(r); i++) {
		const struct fo_event *e = fo_event_ring_get(r, i);
		if (e->kind == kind && (!text || strstr(e->message, text)))
			return true;
	}
	return false;
}

static uint64_t ms_until_paused(struct fx *f, fo_domid_t d, uint64_t max);

/* ---------------------------------------------------- pause counting */

/* The simulator counts pauses as Xen's toolstack pause count does. */
static void test_sim_pause_count(void)
{
	struct fx f;
	struct fo_config cfg;
	fo_domid_t x, y;
	int r = 0;

	sim_base_config(&cfg);
	fx_new(&f, &cfg, FO_DOM_GONE, FO_DOM_GONE, false);
	x = fo_sim_add_domain(f.hv, "x", FO_DOM_RUNNING);
	CHECK(fo_sim_pause_count(f.hv, x) == 0, "a running domain has no pause");
	CHECK(f.hv->ops->unpause(f.hv, x) == -EINVAL, "unpause at 0: EINVAL, as Xen");
	CHECK(f.hv->ops->pause(f.hv, x) == 0 && fo_sim_state(f.hv, x) == FO_DOM_PAUSED, "paused");
	CHECK(fo_sim_external_pause(f.hv, x) == 0 && fo_sim_pause_count(f.hv, x) == 2, "a second pause counts");
	CHECK(f.hv->ops->unpause(f.hv, x) == 0 && fo_sim_state(f.hv, x) == FO_DOM_PAUSED,
	      "one unpause undoes one pause: still paused");
	CHECK(fo_sim_external_unpause(f.hv, x) == 0 && fo_sim_state(f.hv, x) == FO_DOM_RUNNING, "runs at 0");
	for (int i = 0; i < 254 && r == 0; i++)
		r = f.hv->ops->pause(f.hv, x);
	CHECK(r == 0 && fo_sim_pause_count(f.hv, x) == 254, "254 pauses: %d, count %u", r, fo_sim_pause_count(f.hv, x));
	CHECK(f.hv->ops->pause(f.hv, x) == -EOVERFLOW && fo_sim_pause_count(f.hv, x) == 254, "the 255th: EOVERFLOW");
	y = fo_sim_add_domain(f.hv, "y", FO_DOM_PAUSED);
	CHECK(fo_sim_pause_count(f.hv, y) == 1, "built paused: count 1");
	CHECK(fo_sim_external_unpause(f.hv, y) == 0 && fo_sim_state(f.hv, y) == FO_DOM_RUNNING, "its builder's unpause runs it");
	fx_free(&f);
}

/* A suspended domain (Xen's shutdown with reason suspend) is not fenced: a
 * resume runs it. The fence pauses it once, and then reads it paused; a
 * suspended domain already paused is not paused again (Xen counts). */
static void test_fence_suspended(void)
{
	struct fx f;
	struct fo_config cfg;
	enum fo_dom_state st = FO_DOM_GONE;
	fo_domid_t x;

	sim_base_config(&cfg);
	fx_new(&f, &cfg, FO_DOM_GONE, FO_DOM_GONE, false);
	x = fo_sim_add_domain(f.hv, "x", FO_DOM_RUNNING);
	fo_sim_shutdown(f.hv, x, FO_SIM_SHUTDOWN_SUSPEND, false);
	CHECK(!fo_dom_state_is_fenced(fo_sim_state(f.hv, x)) && !fo_dom_state_is_dead(fo_sim_state(f.hv, x)),
	      "suspended: neither fenced nor dead (%s)", fo_dom_state_name(fo_sim_state(f.hv, x)));
	CHECK(fo_fence(f.hv, x, &st) == 0 && st == FO_DOM_PAUSED && fo_sim_pause_count(f.hv, x) == 1,
	      "fenced by one pause (%s, count %u)", fo_dom_state_name(st), fo_sim_pause_count(f.hv, x));
	CHECK(fo_fence(f.hv, x, &st) == 0 && fo_sim_pause_count(f.hv, x) == 1, "not paused twice");
	fo_sim_resume(f.hv, x);
	CHECK(fo_sim_state(f.hv, x) == FO_DOM_PAUSED, "the resume leaves it paused");
	CHECK(fo_sim_external_unpause(f.hv, x) == 0 && fo_sim_state(f.hv, x) == FO_DOM_RUNNING, "one unpause runs it");
	fx_free(&f);
}

/* After a keep-paused failover the failed member holds exactly our one
 * pause: an operator's single `xl unpause` (after repairing it) runs it. */
static void test_keep_paused_holds_one_pause(void)
{
	struct fx f;

	fx_armed(&f);
	CHECK(fo_sim_pause_count(f.hv, f.b) == 1, "ARMED standby: one pause");
	advance(&f, 60);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_pause_count(f.hv, f.b) == 0, "new active at 0");
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1, "failed member: one pause, not %u", fo_sim_pause_count(f.hv, f.a));
	fx_free(&f);
}

/* Someone paused the active (`xl pause`): it stops heartbeating and is
 * switched away from. It is paused already: pausing it again would take
 * two unpauses to start it. */
static void test_paused_active_not_paused_again(void)
{
	struct fx f;

	fx_armed(&f);
	CHECK(fo_sim_external_pause(f.hv, f.a) == 0, "third party pauses the active");
	advance(&f, 60);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched to b");
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1, "a holds only the third party's pause, not %u",
	      fo_sim_pause_count(f.hv, f.a));
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.a) == 0, "no pause of a paused domain");
	fx_free(&f);
}

/* A manual switchover whose standby does not start gives the active back
 * only if our pause stopped it, and believes the domain info. */
static void test_give_back_confirms(void)
{
	struct fx f;
	char err[256];

	/* Ours alone: given back, and it really runs. */
	fx_armed(&f);
	fo_sim_fail(f.hv, FO_SIM_UNPAUSE, f.b, -EIO, 3);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) < 0, "switchover fails");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING && fo_pair_active(f.p)->state == FO_DOM_RUNNING,
	      "active given back");
	CHECK(fo_sim_pause_count(f.hv, f.a) == 0 && fo_sim_pause_count(f.hv, f.b) == 1, "counts %u %u",
	      fo_sim_pause_count(f.hv, f.a), fo_sim_pause_count(f.hv, f.b));
	fx_free(&f);

	/* Paused by someone else before: not ours to start, and the pair
	 * does not think it runs. */
	fx_armed(&f);
	fo_sim_external_pause(f.hv, f.a);
	fo_sim_fail(f.hv, FO_SIM_UNPAUSE, f.b, -EIO, 3);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) < 0, "switchover fails");
	CHECK(fo_pair_active(f.p)->state == fo_sim_state(f.hv, f.a), "the pair's view (%s) is Xen's (%s)",
	      fo_dom_state_name(fo_pair_active(f.p)->state), fo_dom_state_name(fo_sim_state(f.hv, f.a)));
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1, "the third party's pause is left alone: %u",
	      fo_sim_pause_count(f.hv, f.a));
	CHECK(fo_sim_pause_count(f.hv, f.b) == 1, "standby: one pause");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A standby created while arming is paused by libxl until its builder
 * unpauses it; a builder that never does leaves it paused, and the arm
 * wait's fence must not add a pause of ours on top. */
static void test_arm_wait_paused_standby_not_paused_again(void)
{
	struct fx f;
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_new(&f, &cfg, FO_DOM_RUNNING, FO_DOM_GONE, false);
	f.b = fo_sim_add_domain(f.hv, "brake-b", FO_DOM_PAUSED);
	fo_sim_set_state(f.hv, f.b, FO_DOM_PAUSED, true);
	only_beats(&f, f.a, 121000);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "gave up on it: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(fo_sim_pause_count(f.hv, f.b) == 1, "still its builder's one pause, not %u", fo_sim_pause_count(f.hv, f.b));
	fx_free(&f);
}

/* ------------------------------------------------------ failed pauses */

/* The first-boot standby never heartbeats and cannot be paused: the pair
 * says so (not "paused"), an event records it. */
static void test_arm_wait_fence_fails(void)
{
	struct fx f;
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_new(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	only_beats(&f, f.a, 119000);
	fo_sim_fail(f.hv, FO_SIM_PAUSE, f.b, -EIO, 1000000);
	only_beats(&f, f.a, 2000);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "DEGRADED: %s", fo_pair_state_name(f.p->state));
	CHECK(strstr(f.p->reason, "could not pause") != NULL, "reason says it is not paused: %s", f.p->reason);
	CHECK(fo_pair_standby(f.p)->state == FO_DOM_RUNNING, "the pair knows it runs: %s",
	      fo_dom_state_name(fo_pair_standby(f.p)->state));
	CHECK(has_event_with(&f, FO_EV_INFO, "could not pause brake-b"), "an event says so");
	fo_sim_fail(f.hv, FO_SIM_PAUSE, f.b, 0, 0);
	CHECK(ms_until_paused(&f, f.b, 100) <= 10, "the audit pauses it once it can");
	fx_free(&f);
}

/* A rebuilt member that does not heartbeat in time and cannot be paused. */
static void test_rebuild_timeout_fence_fails(void)
{
	struct fx f;
	struct fo_config cfg;
	fo_domid_t rebuilt;

	sim_base_config(&cfg);
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	fx_armed_cfg(&f, &cfg, false);
	advance(&f, 60);
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_REBUILDING, "rebuilding: %s", fo_pair_state_name(f.p->state));
	rebuilt = f.p->m[0].domid;
	fo_sim_fail(f.hv, FO_SIM_PAUSE, rebuilt, -EIO, 1000000);
	only_beats(&f, f.b, 121000);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "could not pause"), "%s: %s",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(f.p->m[0].state == FO_DOM_RUNNING, "known running");
	fx_free(&f);
}

/* Both running (seen through xenstore), the standby cannot be paused: the
 * pair is not ARMED with a standby it cannot keep paused, and no event
 * claims it was paused. */
static void test_both_running_fence_fails(void)
{
	struct fx f;

	fx_armed(&f);
	fo_sim_fail(f.hv, FO_SIM_PAUSE, f.b, -EIO, 1000000);
	fo_sim_set_state(f.hv, f.b, FO_DOM_RUNNING, true);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "DEGRADED: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(!has_event_with(&f, FO_EV_INFO, "paused it"), "no event claims it paused");
	CHECK(has_event_with(&f, FO_EV_INFO, "could not pause brake-b"), "an event says it is not");
	fx_free(&f);
}

/* ------------------------------------------------------ the fence audit */

/* ms until `d` is paused again (1 ms steps, the loop running), at most `max`. */
static uint64_t ms_until_paused(struct fx *f, fo_domid_t d, uint64_t max)
{
	uint64_t t = 0;

	while (fo_sim_state(f->hv, d) == FO_DOM_RUNNING && t < max) {
		advance(f, 1);
		t++;
	}
	return t;
}

static bool metrics_has(struct fx *f, const char *line)
{
	static char text[64 * 1024];

	fo_manager_metrics(f->mgr, text, sizeof(text));
	return strstr(text, line) != NULL;
}

/* `xl unpause` of the ARMED standby: no xenstore event says so; the audit
 * finds it within one heartbeat period and pauses it again. */
static void test_audit_repauses_armed_standby(void)
{
	struct fx f;
	const struct fo_event *e;
	uint64_t t;

	fx_armed(&f);
	live(&f, 30);
	CHECK(fo_sim_external_unpause(f.hv, f.b) == 0 && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "b unpaused");
	t = ms_until_paused(&f, f.b, 100);
	CHECK(t <= 10, "paused again within one period (10 ms): %llu ms", (unsigned long long)t);
	CHECK(fo_sim_pause_count(f.hv, f.b) == 1, "one pause");
	e = last_event_of(&f, FO_EV_EXTERNAL_UNPAUSE);
	CHECK(e && e->result == FO_RESULT_OK && strstr(e->message, "brake-b"), "event names it: %s",
	      e ? e->message : "(none)");
	CHECK(f.p->m[1].external_unpauses == 1, "counted");
	CHECK(metrics_has(&f, "failoverd_external_unpause_total{pair=\"brake\",member=\"brake-b\"} 1"), "metric");
	CHECK(f.p->state == FO_PAIR_ARMED, "still ARMED: %s", fo_pair_state_name(f.p->state));
	live(&f, 100);
	CHECK(count_events(&f, FO_EV_EXTERNAL_UNPAUSE) == 1, "once");
	fx_free(&f);
}

/* The ARMED standby unpaused and then suspended (saved), with no xenstore
 * event heard: not running, but a resume would run it. The audit pauses
 * it, so that the resume leaves it paused. */
static void test_audit_pauses_suspended_standby(void)
{
	struct fx f;

	fx_armed(&f);
	live(&f, 30);
	CHECK(fo_sim_external_unpause(f.hv, f.b) == 0, "b unpaused");
	fo_sim_shutdown(f.hv, f.b, FO_SIM_SHUTDOWN_SUSPEND, false);
	live(&f, 20);
	CHECK(fo_sim_pause_count(f.hv, f.b) == 1 && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "the audit paused the suspended standby (count %u, %s)", fo_sim_pause_count(f.hv, f.b),
	      fo_dom_state_name(fo_sim_state(f.hv, f.b)));
	CHECK(has_event_with(&f, FO_EV_EXTERNAL_UNPAUSE, "brake-b"), "said");
	fo_sim_resume(f.hv, f.b);
	live(&f, 20);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED && fo_sim_violations(f.hv) == 0, "the resume runs nothing");
	fx_free(&f);
}

/* After a keep-paused failover: the failed member is unpaused. */
static void test_audit_repauses_failed_member(void)
{
	struct fx f;
	uint64_t t;

	fx_armed(&f);
	advance(&f, 60);
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "keep-paused: %s", fo_pair_state_name(f.p->state));
	fo_sim_external_unpause(f.hv, f.a);
	t = ms_until_paused(&f, f.a, 100);
	CHECK(t <= 10, "failed member paused again within one period: %llu ms", (unsigned long long)t);
	CHECK(last_event_of(&f, FO_EV_EXTERNAL_UNPAUSE) &&
		      strstr(last_event_of(&f, FO_EV_EXTERNAL_UNPAUSE)->message, "brake-a"),
	      "event names it");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "the active untouched");
	fx_free(&f);

	/* Even when the active is gone: a member that failed never runs. */
	fx_armed(&f);
	advance(&f, 60);
	prove(&f, f.b);
	fo_sim_set_state(f.hv, f.b, FO_DOM_CRASHED, true);
	fo_sim_external_unpause(f.hv, f.a);
	CHECK(ms_until_paused(&f, f.a, 100) <= 10, "paused again");
	fx_free(&f);
}

/* A pause that fails is said once and tried again every period. */
static void test_audit_retries_failed_pause(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_armed(&f);
	fo_sim_fail(f.hv, FO_SIM_PAUSE, f.b, -EIO, 9); /* three audits' worth of tries */
	fo_sim_external_unpause(f.hv, f.b);
	advance(&f, 25);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "not paused yet");
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "could not be paused again"), "%s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	e = last_event_of(&f, FO_EV_EXTERNAL_UNPAUSE);
	CHECK(count_events(&f, FO_EV_EXTERNAL_UNPAUSE) == 1 && e && e->result == FO_RESULT_FAILED,
	      "said once, as failed");
	advance(&f, 20);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "paused once the hypervisor lets it");
	e = last_event_of(&f, FO_EV_EXTERNAL_UNPAUSE);
	CHECK(e && e->result == FO_RESULT_OK, "and said so");
	fx_free(&f);
}

/* Not while ARMING (a first-boot standby runs until it heartbeats) or
 * DISARMED (maintenance), nor during a SWITCHING pair's grace. */
static void test_audit_leaves_alone(void)
{
	struct fx f;
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_new(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	only_beats(&f, f.a, 200);
	CHECK(f.p->state == FO_PAIR_ARMING && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING,
	      "first-boot standby runs until it heartbeats");
	fx_free(&f);

	fx_armed(&f);
	fo_pair_disarm(f.p);
	fo_sim_external_unpause(f.hv, f.b);
	fo_sim_clear_calls(f.hv);
	only_beats(&f, f.a, 100); /* (b's heartbeat would be seen: a standby running behind our back) */
	CHECK(count_calls(&f, FO_SIM_PAUSE, FO_SIM_ANY_DOMAIN) == 0 && count_events(&f, FO_EV_EXTERNAL_UNPAUSE) == 0,
	      "DISARMED: the audit keeps its hands off");
	fx_free(&f);
}

/* DEGRADED with no standby; an operator creates one (a new instance: libxl
 * builds it paused and unpauses it) beside the running active: the audit
 * pauses it before its agent could heartbeat. `failoverctl arm` then took
 * it for a member libxl still builds and waited 120 s for a heartbeat that
 * a paused domain cannot send (chaos campaign, rebuild-fault's recovery).
 * It must say at once that it cannot verify it, and why. */
static void test_arm_refuses_standby_paused_unproven(void)
{
	struct fx f;

	fx_armed(&f);
	fo_sim_set_state(f.hv, f.b, FO_DOM_GONE, true); /* xl destroy */
	only_beats(&f, f.a, 50);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "no standby: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	f.b = fo_sim_add_domain(f.hv, "brake-b", FO_DOM_PAUSED); /* xl create: built paused... */
	fo_sim_set_state(f.hv, f.b, FO_DOM_PAUSED, true);
	CHECK(fo_sim_external_unpause(f.hv, f.b) == 0, "...and unpaused last");
	only_beats(&f, f.a, 100);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "the audit paused it beside the running active");
	CHECK(has_event_with(&f, FO_EV_EXTERNAL_UNPAUSE, "brake-b"), "and said so");
	fo_sim_clear_calls(f.hv);
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "arm: DEGRADED at once, not waiting: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(strstr(f.p->reason, "brake-b") && strstr(f.p->reason, "before it heartbeated"), "says why: %s",
	      f.p->reason);
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0 && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "b stays paused");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);

	/* Arming first, then creating it: it boots and proves itself as on a
	 * first start (the audit leaves an ARMING pair alone). */
	fx_armed(&f);
	fo_sim_set_state(f.hv, f.b, FO_DOM_GONE, true);
	only_beats(&f, f.a, 50);
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMING, "arm waits for b to exist: %s", f.p->reason);
	f.b = fo_sim_add_domain(f.hv, "brake-b", FO_DOM_PAUSED);
	fo_sim_set_state(f.hv, f.b, FO_DOM_PAUSED, true);
	fo_sim_external_unpause(f.hv, f.b);
	only_beats(&f, f.a, 50);
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "armed with b verified: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

/* Kernel-armed: the module switches by itself; the audit never pauses the
 * member it just started, and takes the pair back before pausing. */
static void test_audit_kernel_not_fought(void)
{
	struct fx f;
	struct fo_config cfg;

	/* The module switched (heartbeat loss); the loop has not read its
	 * device: the audit sees the "standby" b running, reads the event
	 * first, and adopts the switch. */
	sim_base_config(&cfg);
	fx_armed_cfg(&f, &cfg, true);
	CHECK(f.p->kernel_armed, "kernel-armed");
	live(&f, 30);
	f.hold_delivery = true;
	fo_sim_clear_calls(f.hv);
	for (int i = 0; i < 80; i++) {
		beat_if_running(&f, f.b);
		advance(&f, 1);
	}
	CHECK(count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 1, "the module switched");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && count_calls(&f, FO_SIM_PAUSE, f.b) == 0,
	      "its new active is not paused");
	CHECK(f.p->active == 1 && count_events(&f, FO_EV_EXTERNAL_UNPAUSE) == 0, "adopted, no audit event");
	fx_free(&f);

	/* The module is switching (firing, held) while b runs: not ours. */
	fx_armed_cfg(&f, &cfg, true);
	live(&f, 30);
	fo_sim_kernel_hold(f.hv, true);
	advance(&f, 45); /* the module's deadline passed: firing */
	fo_sim_external_unpause(f.hv, f.b);
	fo_sim_clear_calls(f.hv);
	advance(&f, 20);
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.b) == 0, "no pause while the module switches");
	fo_sim_kernel_hold(f.hv, false);
	advance(&f, 2);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED,
	      "the module's switch stands");
	fx_free(&f);

	/* A real external unpause of the standby while the module owns the
	 * pair: DISARM, pause again, ARM again. */
	fx_armed_cfg(&f, &cfg, true);
	live(&f, 30);
	fo_sim_external_unpause(f.hv, f.b);
	CHECK(ms_until_paused(&f, f.b, 100) <= 10, "paused again within a period");
	CHECK(last_event_of(&f, FO_EV_EXTERNAL_UNPAUSE) != NULL, "event");
	live(&f, 20);
	{
		fo_domid_t ka, ks;
		CHECK(f.p->kernel_armed && fo_sim_kernel_armed(f.hv, f.p->kernel_id, &ka, &ks) && ka == f.a && ks == f.b,
		      "armed in the module again");
	}
	CHECK(f.p->state == FO_PAIR_ARMED && fo_sim_violations(f.hv) == 0, "ARMED, never both by us");
	fx_free(&f);
}

/* ----------------------------------------------------------- verdicts */

static char state_dir[64];
static char state_path[128];

/* A fresh state file for each test. */
static void state_reset(void)
{
	if (!state_dir[0]) {
		snprintf(state_dir, sizeof(state_dir), "/tmp/fo-test-fence.XXXXXX");
		if (!mkdtemp(state_dir))
			abort();
		snprintf(state_path, sizeof(state_path), "%s/failed-members", state_dir);
	}
	unlink(state_path);
	{
		char aside[160];
		snprintf(aside, sizeof(aside), "%s.corrupt", state_path);
		unlink(aside);
	}
}

static void state_cleanup(void)
{
	state_reset();
	rmdir(state_dir);
}

/* fx_new with the verdicts kept in state_path. */
static void fx_new_state(struct fx *f, const struct fo_config *cfg, enum fo_dom_state sa, enum fo_dom_state sb,
			 bool kernel)
{
	fx_new_in(f, cfg, sa, sb, kernel, state_path);
}

/* First boot, ARMED (a active, b standby), verdicts in state_path. */
static void fx_armed_state(struct fx *f)
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_new_state(f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	prove(f, f->a);
	prove(f, f->b);
	fo_sim_guard(f->hv, f->a, f->b);
	fo_sim_clear_calls(f->hv);
}

/* failoverd restarts (SIGKILL and start): Xen keeps its state, a new
 * manager reads the state file. */
static void restart(struct fx *f)
{
	struct fo_hv_callbacks cb;

	fo_manager_free(f->mgr);
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	fo_manager_set_state_file(f->mgr, state_path);
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_sim_set_callbacks(f->hv, &cb);
	fo_manager_attach_hv(f->mgr, f->hv);
	fo_manager_start(f->mgr);
	f->p = fo_manager_pair(f->mgr, 0);
}

/* Heartbeat loss, keep-paused: a failed; b active and heartbeating. */
static void fail_a(struct fx *f)
{
	advance(f, 60);
	prove(f, f->b);
}

static void test_restart_does_not_adopt_failed(void)
{
	struct fx f;

	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED && f.p->active == 1, "DEGRADED after keep-paused failover: %s",
	      fo_pair_state_name(f.p->state));
	CHECK(strstr(f.p->reason, "standby brake-a failed (heartbeat-timeout at ") &&
		      strstr(f.p->reason, "clear with failoverctl clear-failed brake-a"),
	      "status says why and what to do: %s", f.p->reason);
	CHECK(file_has(state_path, "failed brake brake-a "), "verdict on file");
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED && f.p->active == 1, "restart: not adopted (%s: %s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(strstr(f.p->reason, "standby brake-a failed (heartbeat-timeout at "), "reason: %s", f.p->reason);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "left as it was");
	/* And once more: the verdict is still on file. */
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "second restart: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
}

/* A stand-down is remembered across a restart (the SPIN model's finding
 * F): the pair stood down here (served from another host); someone starts
 * a member by hand; failoverd restarts. It stays DISARMED, hands off: that
 * member's heartbeat loss starts nothing. `arm` ends the stand-down (and
 * the file's record). Before, the restart adopted the running member,
 * armed the pair and switched to the other on its fault. */
static void test_stand_down_survives_restart(void)
{
	struct fx f;
	char err[256];

	state_reset();
	fx_armed_state(&f);
	CHECK(fo_pair_stand_down(f.p, err, sizeof(err)) == 0, "stand-down: %s", err);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "both paused");
	CHECK(file_has(state_path, "standdown brake -"), "the stand-down is on file");
	fo_sim_set_state(f.hv, f.a, FO_DOM_RUNNING, true); /* `xl unpause brake-a` */
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DISARMED && strstr(f.p->reason, "stood down before failoverd started"),
	      "restart: still stood down (%s: %s)", fo_pair_state_name(f.p->state), f.p->reason);
	live(&f, 100);
	advance(&f, 500); /* brake-a's agent silent: no heartbeat */
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "brake-b not started: %s",
	      fo_dom_state_name(fo_sim_state(f.hv, f.b)));
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 0, "no switch");
	fo_pair_arm(f.p);
	CHECK(!file_has(state_path, "standdown brake"), "arm ends the stand-down on file");
	CHECK(f.p->state != FO_PAIR_DISARMED, "armed again: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

static void test_arm_does_not_adopt_failed(void)
{
	struct fx f;
	char err[256];

	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "clear-failed brake-a"), "`arm`: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(!f.p->m[0].usable, "not usable");
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == -EPERM && strstr(err, "clear-failed brake-a"),
	      "no switchover to it either: %s", err);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "nothing touched");
	fx_free(&f);
}

static void test_clear_failed_allows_again(void)
{
	struct fx f;
	struct fo_pair *p = NULL;

	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	CHECK(fo_manager_clear_failed(f.mgr, "nobody", &p) == -ENOENT, "unknown member");
	CHECK(fo_manager_clear_failed(f.mgr, "brake-b", &p) == 0 && p == f.p, "nothing on b");
	CHECK(fo_manager_clear_failed(f.mgr, "brake-a", &p) == 1 && p == f.p, "cleared a");
	CHECK(!file_has(state_path, "failed brake brake-a"), "and on file");
	CHECK(has_event_with(&f, FO_EV_INFO, "cleared the failure verdict on brake-a"), "recorded");
	CHECK(f.p->state == FO_PAIR_DEGRADED, "clearing does not arm by itself");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1 && f.p->m[0].usable, "`arm` adopts it: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	/* A restart now adopts as well: b is the recorded active. */
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "restart adopts: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

/* The failed domain destroyed and created again (new domid, new handle):
 * a new instance, clean. */
static void test_new_instance_starts_clean(void)
{
	struct fx f;
	fo_domid_t a2;

	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	/* The operator destroys it and creates it again: libxl builds it
	 * paused and unpauses it last. */
	fo_sim_set_state(f.hv, f.a, FO_DOM_GONE, true);
	a2 = fo_sim_add_domain(f.hv, "brake-a", FO_DOM_PAUSED);
	fo_sim_set_state(f.hv, a2, FO_DOM_PAUSED, true);
	CHECK(f.p->m[0].domid == a2, "found the new brake-a");
	CHECK(!file_has(state_path, "failed brake brake-a"), "the old instance's verdict is gone from the file");
	fo_pair_arm(f.p);
	fo_sim_external_unpause(f.hv, a2);
	prove(&f, a2);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1 && fo_sim_state(f.hv, a2) == FO_DOM_PAUSED,
	      "armed with the new brake-a as standby: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "b untouched");
	fx_free(&f);

	/* The same, found by a restarted daemon with the new one paused. */
	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	fo_sim_set_state(f.hv, f.a, FO_DOM_GONE, false);
	a2 = fo_sim_add_domain(f.hv, "brake-a", FO_DOM_PAUSED);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1 && f.p->m[0].domid == a2,
	      "the new instance is adopted: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

static void test_corrupt_verdict_file(void)
{
	struct fx f;
	struct fo_config cfg;
	struct fo_pair *p;
	char aside[160];
	FILE *fp;

	state_reset();
	fp = fopen(state_path, "w");
	fputs("failoverd-verdicts 1\nfailed brake brake-b 2 - heartbeat-ti", fp); /* torn */
	fclose(fp);
	/* A restart that would adopt b as the paused standby. */
	sim_base_config(&cfg);
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "standby brake-b may have failed"),
	      "not adopted: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(strstr(f.p->reason, "clear-failed brake-b"), "says how to go on: %s", f.p->reason);
	CHECK(has_event_with(&f, FO_EV_INFO, state_path), "an event names the file");
	snprintf(aside, sizeof(aside), "%s.corrupt", state_path);
	CHECK(access(aside, F_OK) == 0, "the damaged file is kept aside");
	CHECK(file_has(state_path, "unknown brake brake-b") && file_has(state_path, "unknown brake brake-a"),
	      "and the new one says what is unknown");
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "a restart still does not know: %s", fo_pair_state_name(f.p->state));
	CHECK(fo_manager_clear_failed(f.mgr, "brake-b", &p) == 1, "operator clears b");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0, "then adopted: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "nothing unpaused");
	fx_free(&f);

	/* A file that is not ours at all, and one that cannot be read. */
	state_reset();
	fp = fopen(state_path, "w");
	fputs("{\"json\": true}\n", fp);
	fclose(fp);
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "foreign file: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
	state_reset();
	CHECK(mkdir(state_path, 0700) == 0, "a directory where the file should be");
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "unreadable file: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
	rmdir(state_path);
	{
		char x[160];
		snprintf(x, sizeof(x), "%s.corrupt", state_path);
		rmdir(x);
	}
}

/* failoverd restarts with its verdicts in `path` (a changed state_file). */
static void restart_at(struct fx *f, const char *path)
{
	char saved[sizeof(state_path)];

	snprintf(saved, sizeof(saved), "%s", state_path);
	snprintf(state_path, sizeof(state_path), "%s", path);
	restart(f);
	snprintf(state_path, sizeof(state_path), "%s", saved);
}

/* After a keep-paused failover (a failed and paused, b active), with the
 * verdict on file: a restart after `damage` must not adopt a. */
static void expect_not_adopted(struct fx *f, const char *what)
{
	CHECK(f->p->state == FO_PAIR_DEGRADED && f->p->active == 1, "%s: not adopted (%s: %s)", what,
	      fo_pair_state_name(f->p->state), f->p->reason);
	CHECK(strstr(f->p->reason, "standby brake-a may have failed") != NULL, "%s: says why: %s", what, f->p->reason);
	CHECK(fo_sim_state(f->hv, f->a) == FO_DOM_PAUSED, "%s: a stays paused", what);
	CHECK(count_calls(f, FO_SIM_UNPAUSE, f->a) == 0, "%s: a never unpaused", what);
}

static void failed_a_on_file(struct fx *f)
{
	state_reset();
	fx_armed_state(f);
	fail_a(f);
	CHECK(file_has(state_path, "failed brake brake-a "), "verdict on file");
	fo_sim_clear_calls(f->hv);
}

/* The file is gone (a deleted /run/failoverd) or state_file now names
 * another one: this boot had verdicts, so a missing file is not "nothing
 * failed". */
static void test_lost_verdict_file_fails_closed(void)
{
	struct fx f;
	char moved[sizeof(state_path)], note[512];
	struct fo_pair *p;

	failed_a_on_file(&f);
	CHECK(f.hv->ops->boot_note_read(f.hv, note, sizeof(note)) == 0 && strstr(note, state_path),
	      "the boot note names the file: %s", note);
	unlink(state_path);
	restart(&f);
	expect_not_adopted(&f, "file deleted");
	CHECK(has_event_with(&f, FO_EV_INFO, "is missing, but this boot had one"), "an event says the file was lost");
	CHECK(file_has(state_path, "unknown brake brake-a"), "the new file keeps it unknown");
	restart(&f);
	expect_not_adopted(&f, "and restarted again");
	CHECK(fo_manager_clear_failed(f.mgr, "brake-a", &p) >= 1, "the operator clears it");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "then adopted: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);

	failed_a_on_file(&f);
	snprintf(moved, sizeof(moved), "%s/elsewhere", state_dir);
	unlink(moved);
	restart_at(&f, moved);
	expect_not_adopted(&f, "state_file changed");
	fx_free(&f);
	unlink(moved);

	/* A first start in a new boot (a new hypervisor): no file, no note. */
	state_reset();
	fx_armed_state(&f);
	CHECK(f.p->state == FO_PAIR_ARMED, "first start arms: %s", fo_pair_state_name(f.p->state));
	CHECK(file_has(state_path, "failoverd-verdicts 2 "), "and writes the file at once");
	fx_free(&f);
}

/* A file someone else could have written, or none at all behind a link:
 * never trusted, never written through. */
static void test_untrusted_verdict_file_fails_closed(void)
{
	struct fx f;
	char target[160], buf[64] = "";
	struct stat st;
	FILE *fp;

	snprintf(target, sizeof(target), "%s/target", state_dir);

	/* A link to a file of the right form that says nothing failed. */
	failed_a_on_file(&f);
	fp = fopen(target, "w");
	fputs("failoverd-verdicts 1\n", fp);
	fclose(fp);
	unlink(state_path);
	CHECK(symlink(target, state_path) == 0, "symlink");
	restart(&f);
	expect_not_adopted(&f, "a link");
	fp = fopen(target, "r");
	CHECK(fp && fgets(buf, sizeof(buf), fp) && strcmp(buf, "failoverd-verdicts 1\n") == 0 && !fgets(buf, sizeof(buf), fp),
	      "the link's target is untouched");
	if (fp)
		fclose(fp);
	CHECK(lstat(state_path, &st) == 0 && S_ISREG(st.st_mode), "the link was replaced by our own file");
	fx_free(&f);

	/* A dangling link: not "no file". */
	failed_a_on_file(&f);
	unlink(state_path);
	unlink(target);
	CHECK(symlink(target, state_path) == 0, "symlink");
	restart(&f);
	expect_not_adopted(&f, "a dangling link");
	CHECK(access(target, F_OK) != 0, "nothing written through the link");
	fx_free(&f);

	/* Writable by others. */
	failed_a_on_file(&f);
	fp = fopen(state_path, "w");
	fputs("failoverd-verdicts 1\n", fp);
	fclose(fp);
	chmod(state_path, 0666);
	restart(&f);
	expect_not_adopted(&f, "mode 0666");
	CHECK(has_event_with(&f, FO_EV_INFO, "mode 0666"), "the event names the mode");
	fx_free(&f);

	/* Another owner (root can make one; the suite runs as root in CI). */
	if (geteuid() == 0) {
		failed_a_on_file(&f);
		CHECK(chown(state_path, 1, 1) == 0, "chown");
		restart(&f);
		expect_not_adopted(&f, "owner uid 1");
		fx_free(&f);
	}

	/* Empty. */
	failed_a_on_file(&f);
	fp = fopen(state_path, "w");
	fclose(fp);
	restart(&f);
	expect_not_adopted(&f, "an empty file");
	fx_free(&f);

	/* A link planted where the temporary file is made: the save replaces
	 * it and never writes through it. */
	state_reset();
	{
		char tmp[200];
		snprintf(tmp, sizeof(tmp), "%s.tmp", state_path);
		unlink(tmp);
		unlink(target);
		CHECK(symlink(target, tmp) == 0, "symlink at the temporary file");
		fx_armed_state(&f);
		fail_a(&f);
		CHECK(file_has(state_path, "failed brake brake-a "), "verdict written all the same");
		CHECK(access(target, F_OK) != 0, "nothing written through the planted link");
		fx_free(&f);
		unlink(tmp);
	}
	unlink(target);
}

/* A file another boot wrote names instances that no longer exist: dropped,
 * not refused (a state_file kept on a disk across reboots). */
static void test_other_boot_verdict_file_dropped(void)
{
	struct fx f;
	struct fo_config cfg;
	FILE *fp;

	state_reset();
	fp = fopen(state_path, "w");
	fputs("failoverd-verdicts 2 00000000-0000-4000-8000-000000000000\n"
	      "failed brake brake-b 2 - heartbeat-timeout 1700000000\n",
	      fp);
	fclose(fp);
	chmod(state_path, 0600);
	sim_base_config(&cfg);
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0, "adopted: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	CHECK(!file_has(state_path, "failed brake brake-b") && !file_has(state_path, "00000000-0000-4000"),
	      "rewritten for this boot");
	fx_free(&f);

	/* The same record, written in this boot: it holds. */
	{
		struct fo_verdicts vs;
		fo_verdicts_init(&vs, state_path);
		CHECK(vs.boot_id[0], "this kernel has a boot id");
		fp = fopen(state_path, "w");
		fprintf(fp, "failoverd-verdicts 2 %s\nfailed brake brake-b 2 - heartbeat-timeout 1700000000\n", vs.boot_id);
		fclose(fp);
	}
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "this boot's verdict holds: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
}

/* Every record's key (what the lookups compare first) says what the
 * record says. */
static bool keys_match(const struct fo_verdicts *vs)
{
	for (size_t i = 0; i < FO_VERDICT_MAX; i++)
		if (vs->key[i].kind != vs->v[i].kind ||
		    (vs->v[i].kind != FO_VERDICT_NONE && vs->key[i].domid != vs->v[i].inst.domid))
			return false;
	return true;
}

/* The table's lookups read the records in use (v[0..n)) through their
 * keys, not the whole capacity: a dropped record leaves a hole that the
 * next one fills, a file read sets the bound and the keys, a full table
 * still finds every record; every change keeps the keys as the records. */
static void test_verdict_table_lookups(void)
{
	static struct fo_verdicts vs;
	struct fo_instance in[4], again;
	char err[256];

	state_reset();
	fo_verdicts_init(&vs, state_path);
	for (int i = 0; i < 4; i++) {
		memset(&in[i], 0, sizeof(in[i]));
		snprintf(in[i].name, sizeof(in[i].name), "m%d", i);
		in[i].domid = (fo_domid_t)(10 + i);
	}
	CHECK(vs.n == 0, "empty: bound %zu", vs.n);
	fo_verdicts_set_failed(&vs, "p", &in[0], "crashed");
	fo_verdicts_set_active(&vs, "p", &in[1]);
	fo_verdicts_set_failed(&vs, "q", &in[2], "heartbeat-timeout");
	fo_verdicts_set_active(&vs, "q", &in[3]);
	CHECK(vs.n == 4 && keys_match(&vs), "four records, bound %zu", vs.n);
	fo_verdicts_set_failed(&vs, "p", &in[0], "crashed");
	fo_verdicts_set_active(&vs, "p", &in[1]);
	CHECK(vs.n == 4, "recorded again: no new record, bound %zu", vs.n);
	CHECK(fo_verdicts_find(&vs, &in[0]) == &vs.v[0] && fo_verdicts_find(&vs, &in[2]) == &vs.v[2] &&
		      !fo_verdicts_find(&vs, &in[1]),
	      "the failed ones found, the active not");
	CHECK(fo_verdicts_active(&vs, "p") == &vs.v[1] && fo_verdicts_active(&vs, "q") == &vs.v[3] &&
		      !fo_verdicts_active(&vs, "r"),
	      "each pair's active found by its name");
	fo_verdicts_set_active(&vs, "p", &in[0]);
	CHECK(fo_verdicts_active(&vs, "p") == &vs.v[1] && vs.v[1].inst.domid == in[0].domid && keys_match(&vs),
	      "a new active replaces the pair's record");
	/* Another instance of m2 (re-created, another domid): the old one's
	 * verdict is forgotten, the new one has none. */
	again = in[2];
	again.domid = 42;
	CHECK(!fo_verdicts_find(&vs, &again), "the new m2 has no verdict of its own");
	fo_verdicts_forget_other(&vs, &again);
	CHECK(!fo_verdicts_find(&vs, &in[2]) && vs.v[2].kind == FO_VERDICT_NONE && keys_match(&vs),
	      "the old m2's verdict forgotten");
	CHECK(fo_verdicts_clear(&vs, "m0") == 1 && !fo_verdicts_find(&vs, &in[0]) && keys_match(&vs), "m0 cleared");
	fo_verdicts_set_failed(&vs, "r", &in[3], "gone");
	CHECK(vs.n == 4 && fo_verdicts_find(&vs, &in[3]) == &vs.v[0] && keys_match(&vs),
	      "the first hole reused: bound %zu", vs.n);
	fo_verdicts_set_unknown(&vs, "q", "m2");
	CHECK(vs.n == 4 && fo_verdicts_find(&vs, &again) == &vs.v[2] && keys_match(&vs),
	      "an unknown verdict on the name m2 applies to any m2");
	CHECK(fo_verdicts_save(&vs, err, sizeof(err)) == 0, "%s", err);
	memset(vs.key, 0xff, sizeof(vs.key)); /* the load must set every key */
	CHECK(fo_verdicts_load(&vs, err, sizeof(err)) == 0, "%s", err);
	CHECK(vs.n == 4 && keys_match(&vs) && fo_verdicts_find(&vs, &in[3]) && fo_verdicts_find(&vs, &again) &&
		      fo_verdicts_active(&vs, "p") && fo_verdicts_active(&vs, "q") && !fo_verdicts_find(&vs, &in[0]),
	      "read back: four records, bound %zu", vs.n);

	/* Full: every slot taken by a last active; a verdict then replaces
	 * one of them and is found, and every pair's record still is. */
	fo_verdicts_init(&vs, "");
	for (size_t i = 0; i < FO_VERDICT_MAX; i++) {
		char pair[32];

		snprintf(pair, sizeof(pair), "p%zu", i);
		fo_verdicts_set_active(&vs, pair, &in[1]);
	}
	{
		char last[32];

		snprintf(last, sizeof(last), "p%d", FO_VERDICT_MAX - 1);
		CHECK(vs.n == FO_VERDICT_MAX && fo_verdicts_active(&vs, "p0") == &vs.v[0] &&
			      fo_verdicts_active(&vs, last) == &vs.v[FO_VERDICT_MAX - 1] && keys_match(&vs),
		      "full: bound %zu", vs.n);
	}
	fo_verdicts_set_failed(&vs, "q", &in[2], "crashed");
	CHECK(vs.n == FO_VERDICT_MAX && fo_verdicts_find(&vs, &in[2]) && keys_match(&vs),
	      "a verdict in a full table is found");
	state_reset();
}

/* Killed after the switch and before the verdict was written (or the
 * switch was not ours): the last recorded active is found paused and the
 * other running. It is presumed failed. */
static void test_unrecorded_switch_presumed_failed(void)
{
	struct fx f;
	char err[256];

	state_reset();
	fx_armed_state(&f);
	CHECK(file_has(state_path, "active brake brake-a "), "the active is on record");
	/* What the switch did, without the daemon recording it. */
	fo_sim_external_pause(f.hv, f.a);
	fo_sim_external_unpause(f.hv, f.b);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED && f.p->active == 1, "not adopted: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(strstr(f.p->reason, "brake-a failed (unrecorded-switch at "), "reason: %s", f.p->reason);
	fx_free(&f);

	/* A recorded manual switchover is no such thing. */
	state_reset();
	fx_armed_state(&f);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "%s", err);
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "switched over");
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "adopted after a manual switchover: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

/* The verdict is written after the switch, never before the standby runs. */
static void test_verdict_written_after_unpause(void)
{
	struct fx f;
	const struct fo_event *e;

	state_reset();
	fx_armed_state(&f);
	fo_sim_delay(f.hv, FO_SIM_UNPAUSE, 5 * MS);
	advance(&f, 50);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->result == FO_RESULT_OK, "switched");
	CHECK(file_has(state_path, "failed brake brake-a "), "written once the switch returned");
	fx_free(&f);

	/* A state file that cannot be written: the switch still happens, the
	 * failure is said, and the verdict holds in memory. */
	state_reset();
	snprintf(state_path, sizeof(state_path), "/proc/fo-no-such-dir/failed-members");
	fx_armed_state(&f);
	advance(&f, 60);
	prove(&f, f.b);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched");
	CHECK(has_event_with(&f, FO_EV_INFO, "cannot"), "the write failure is an event");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "the verdict holds in memory: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
	snprintf(state_path, sizeof(state_path), "%s/failed-members", state_dir);
}

/* ------------------------------------------ two pairs faulting in one turn */

/* brake (as sim_base_config) and pump (pump-a active, pump-b standby). */
static void two_pair_config(struct fo_config *cfg)
{
	struct fo_pair_config *p = &cfg->pairs[1];

	sim_base_config(cfg);
	cfg->n_pairs = 2;
	*p = cfg->pairs[0];
	snprintf(p->name, sizeof(p->name), "pump");
	snprintf(p->active, sizeof(p->active), "pump-a");
	snprintf(p->standby, sizeof(p->standby), "pump-b");
	snprintf(p->active_config, sizeof(p->active_config), "/etc/xen/pump-a.cfg");
	snprintf(p->standby_config, sizeof(p->standby_config), "/etc/xen/pump-b.cfg");
}

/* First boot of both pairs, ARMED (brake-a and pump-a active), verdicts in
 * state_path; *pa, *pb: pump's domains. */
static void fx_two_armed(struct fx *f, fo_domid_t *pa, fo_domid_t *pb)
{
	struct fo_config cfg;
	struct fo_pair *pump;

	two_pair_config(&cfg);
	fx_new_state(f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	*pa = fo_sim_add_domain(f->hv, "pump-a", FO_DOM_RUNNING);
	*pb = fo_sim_add_domain(f->hv, "pump-b", FO_DOM_RUNNING);
	fo_sim_set_state(f->hv, *pb, FO_DOM_RUNNING, true); /* xenstore's event: pump finds them */
	prove(f, f->a);
	prove(f, f->b);
	prove(f, *pa);
	prove(f, *pb);
	pump = fo_manager_find_pair(f->mgr, "pump");
	CHECK(f->p->state == FO_PAIR_ARMED && pump && pump->state == FO_PAIR_ARMED, "both ARMED: %s, %s (%s)",
	      fo_pair_state_name(f->p->state), pump ? fo_pair_state_name(pump->state) : "-", pump ? pump->reason : "");
	fo_sim_guard(f->hv, f->a, f->b);
	fo_sim_guard(f->hv, *pa, *pb);
	fo_sim_clear_calls(f->hv);
}

/* A failure verdict's record (the file's header mentions failed members). */
#define FAILED_RECORD "\nfailed "

/* What the verdict file said as each standby's unpause was issued. */
struct unpause_looks {
	size_t n;
	bool verdict_on_file[4];
};

static void look_at_file_on_unpause(void *ctx, const struct fo_sim_call *c)
{
	struct unpause_looks *l = ctx;

	if (c->op == FO_SIM_UNPAUSE && l->n < 4)
		l->verdict_on_file[l->n++] = file_has(state_path, FAILED_RECORD);
}

/* Both actives fall silent together, so that their deadlines come due in
 * the same turn of the loop. */
static void both_actives_silent(struct fx *f)
{
	fo_sim_advance(f->hv, 60 * MS);
}

/* Issue #37 (b, c): the verdict file's write (and fsync) after one pair's
 * switch delayed the next pair's switch. Now the turn's switches all come
 * first, and the file is written once, at the end of the turn. */
static void test_turn_switches_all_before_writing(void)
{
	struct fx f;
	struct unpause_looks look = { 0 };
	fo_domid_t pa, pb;

	state_reset();
	fx_two_armed(&f, &pa, &pb);
	CHECK(file_has(state_path, "active pump pump-a ") && !file_has(state_path, FAILED_RECORD),
	      "on file: the actives, no verdict");
	fo_sim_on_call(f.hv, look_at_file_on_unpause, &look);
	both_actives_silent(&f);
	fx_loop_once(&f);
	fo_sim_on_call(f.hv, NULL, NULL);
	CHECK(look.n == 2, "both standbys unpaused in one turn (%zu unpauses)", look.n);
	CHECK(!look.verdict_on_file[0] && !look.verdict_on_file[1],
	      "no verdict written between the first switch and the last (on file at the unpauses: %d, %d)",
	      look.verdict_on_file[0], look.verdict_on_file[1]);
	CHECK(file_has(state_path, "failed brake brake-a ") && file_has(state_path, "failed pump pump-a ") &&
		      file_has(state_path, "active brake brake-b ") && file_has(state_path, "active pump pump-b "),
	      "both pairs' verdicts and new actives written at the turn's end");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, pb) == FO_DOM_RUNNING &&
		      fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, pa) == FO_DOM_PAUSED,
	      "both switched");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Killed after both switches and before the turn's write: the file still
 * names the old actives, which Xen shows paused beside the running
 * standbys. The restart presumes them failed: neither is started again,
 * neither pair runs both. */
static void test_killed_before_the_turns_write(void)
{
	struct fx f;
	struct fo_pair *pump;
	fo_domid_t pa, pb;

	state_reset();
	fx_two_armed(&f, &pa, &pb);
	both_actives_silent(&f);
	fo_manager_turn_begin(f.mgr);
	fo_manager_run_due(f.mgr);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, pb) == FO_DOM_RUNNING,
	      "both switched");
	CHECK(!file_has(state_path, FAILED_RECORD) && file_has(state_path, "active brake brake-a ") &&
		      file_has(state_path, "active pump pump-a "),
	      "the turn has not ended: the file is as before it");
	restart(&f); /* SIGKILL: fo_manager_turn_end never ran */
	pump = fo_manager_find_pair(f.mgr, "pump");
	CHECK(f.p->state == FO_PAIR_DEGRADED && f.p->active == 1 &&
		      strstr(f.p->reason, "standby brake-a failed (unrecorded-switch at "),
	      "brake: the old active presumed failed: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(pump && pump->state == FO_PAIR_DEGRADED && pump->active == 1 &&
		      strstr(pump->reason, "standby pump-a failed (unrecorded-switch at "),
	      "pump: the old active presumed failed: %s (%s)", pump ? fo_pair_state_name(pump->state) : "-",
	      pump ? pump->reason : "");
	CHECK(file_has(state_path, "failed brake brake-a ") && file_has(state_path, "failed pump pump-a "),
	      "the presumption is on file (a second restart keeps it)");
	/* The new actives live on; the failed ones stay paused. */
	for (int t = 0; t < 20; t++) {
		fo_sim_heartbeat(f.hv, f.b);
		fo_sim_heartbeat(f.hv, pb);
		advance(&f, 10);
	}
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, pa) == FO_DOM_PAUSED &&
		      count_calls(&f, FO_SIM_UNPAUSE, f.a) == 0 && count_calls(&f, FO_SIM_UNPAUSE, pa) == 0,
	      "the failed members never started again");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, pb) == FO_DOM_RUNNING,
	      "the new actives run");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* pump's deadline comes due while brake switches (its unpause takes 5 ms):
 * pump switches in the same turn, not in the next one, which would come
 * after this turn's verdict write. */
static void test_deadline_due_during_a_switch_joins_the_turn(void)
{
	struct fx f;
	struct unpause_looks look = { 0 };
	struct fo_pair *pump;
	fo_domid_t pa, pb;

	state_reset();
	fx_two_armed(&f, &pa, &pb);
	pump = fo_manager_find_pair(f.mgr, "pump");
	/* pump's active beats 1 ms after brake's: its deadline is 1 ms later. */
	fo_sim_advance(f.hv, 1 * MS);
	fo_sim_heartbeat(f.hv, pa);
	fo_sim_delay(f.hv, FO_SIM_UNPAUSE, 5 * MS);
	fo_sim_on_call(f.hv, look_at_file_on_unpause, &look);
	fo_sim_advance(f.hv, 49 * MS + MS / 2); /* brake's deadline (50 ms after its beat) is due, pump's not yet */
	CHECK(pump->state == FO_PAIR_ARMED, "pump not due before the turn");
	fx_loop_once(&f);
	fo_sim_on_call(f.hv, NULL, NULL);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, pb) == FO_DOM_RUNNING,
	      "both switched in one turn: brake-b %s, pump-b %s", fo_dom_state_name(fo_sim_state(f.hv, f.b)),
	      fo_dom_state_name(fo_sim_state(f.hv, pb)));
	CHECK(look.n == 2 && !look.verdict_on_file[1], "no verdict written before pump's unpause (%zu unpauses)",
	      look.n);
	CHECK(file_has(state_path, "failed brake brake-a ") && file_has(state_path, "failed pump pump-a "),
	      "both written at the turn's end");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* ------------------------------------- the turn's two phases (issue #37) */

#define MANY 4
static const char *const many_names[MANY] = { "brake", "pump", "fan", "valve" };

/* MANY pairs (brake, then pump, fan, valve: NAME-a active, NAME-b
 * standby), on_failover destroy (so that each switch's after-work makes a
 * hypervisor call of its own), all ARMED; dom[i][0..1] pair i's domains. */
static void fx_many_armed(struct fx *f, fo_domid_t dom[MANY][2])
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	cfg.n_pairs = MANY;
	for (int i = 0; i < MANY; i++) {
		struct fo_pair_config *p = &cfg.pairs[i];

		*p = cfg.pairs[0];
		snprintf(p->name, sizeof(p->name), "%s", many_names[i]);
		snprintf(p->active, sizeof(p->active), "%s-a", many_names[i]);
		snprintf(p->standby, sizeof(p->standby), "%s-b", many_names[i]);
		snprintf(p->active_config, sizeof(p->active_config), "/etc/xen/%s-a.cfg", many_names[i]);
		snprintf(p->standby_config, sizeof(p->standby_config), "/etc/xen/%s-b.cfg", many_names[i]);
		p->on_failover = FO_ON_FAILOVER_DESTROY;
	}
	fx_new_state(f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	dom[0][0] = f->a;
	dom[0][1] = f->b;
	for (int i = 1; i < MANY; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%s-a", many_names[i]);
		dom[i][0] = fo_sim_add_domain(f->hv, name, FO_DOM_RUNNING);
		snprintf(name, sizeof(name), "%s-b", many_names[i]);
		dom[i][1] = fo_sim_add_domain(f->hv, name, FO_DOM_RUNNING);
	}
	fo_sim_set_state(f->hv, dom[MANY - 1][1], FO_DOM_RUNNING, true); /* xenstore's event: the pairs find them */
	for (int i = 0; i < MANY; i++) {
		prove(f, dom[i][0]);
		prove(f, dom[i][1]);
	}
	for (int i = 0; i < MANY; i++) {
		struct fo_pair *p = fo_manager_find_pair(f->mgr, many_names[i]);

		CHECK(p && p->state == FO_PAIR_ARMED, "%s ARMED: %s (%s)", many_names[i],
		      p ? fo_pair_state_name(p->state) : "-", p ? p->reason : "");
		fo_sim_guard(f->hv, dom[i][0], dom[i][1]);
	}
	fo_sim_clear_calls(f->hv);
}

/* Index in the call log of the first call of the after-work (a role
 * published, a failed member destroyed), or -1. */
static long first_after_work_call(struct fx *f)
{
	long r = first_call(f, FO_SIM_SET_ROLE, FO_SIM_ANY_DOMAIN), d = first_call(f, FO_SIM_DESTROY, FO_SIM_ANY_DOMAIN);

	return r < 0 ? d : d < 0 ? r : r < d ? r : d;
}

/* Issue #37 (b): every pair whose fault is due in a turn is switched
 * (fence, confirm, unpause) before any pair's after-work (its roles, its
 * on_failover) starts. */
static void test_turn_switches_all_before_after_work(void)
{
	fo_domid_t dom[MANY][2];
	long first_aw, unpause[MANY];
	struct fx f;

	state_reset();
	fx_many_armed(&f, dom);
	fo_sim_advance(f.hv, 60 * MS); /* every active silent past its timeout */
	fx_loop_once(&f);
	first_aw = first_after_work_call(&f);
	CHECK(first_aw >= 0, "the after-work ran in the turn");
	for (int i = 0; i < MANY; i++) {
		unpause[i] = first_call(&f, FO_SIM_UNPAUSE, dom[i][1]);
		CHECK(unpause[i] >= 0 && unpause[i] < first_aw,
		      "%s's standby unpaused (call %ld) before any pair's after-work (call %ld)", many_names[i],
		      unpause[i], first_aw);
	}
	for (int i = 0; i < MANY; i++) {
		CHECK(fo_sim_state(f.hv, dom[i][1]) == FO_DOM_RUNNING &&
			      count_calls(&f, FO_SIM_DESTROY, dom[i][0]) == 1 &&
			      !strcmp(fo_sim_role(f.hv, dom[i][1]), "active"),
		      "%s: switched, its failed member destroyed, the new active's role published in the turn",
		      many_names[i]);
	}
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A fault that comes due while the after-work runs (each destroy takes
 * 5 ms here) switches before the rest of the after-work: brake and pump
 * are due together, fan 1 ms later, during brake's destroy. fan's standby
 * runs before pump's after-work, not after it (nor in the next turn). */
static void test_deadline_due_during_after_work_switches_first(void)
{
	fo_domid_t dom[MANY][2];
	long fan_unpause, pump_aw;
	struct fx f;

	state_reset();
	fx_many_armed(&f, dom);
	fo_sim_advance(f.hv, 1 * MS);
	fo_sim_heartbeat(f.hv, dom[2][0]); /* fan's deadline: 1 ms after brake's and pump's */
	fo_sim_heartbeat(f.hv, dom[3][0]);
	fo_sim_advance(f.hv, 19 * MS);
	fo_sim_heartbeat(f.hv, dom[3][0]); /* valve stays healthy */
	fo_sim_delay(f.hv, FO_SIM_DESTROY, 5 * MS);
	fo_sim_advance(f.hv, 30 * MS + MS / 2); /* brake's and pump's deadlines due, fan's not yet */
	CHECK(fo_manager_find_pair(f.mgr, "fan")->state == FO_PAIR_ARMED, "fan not due before the turn");
	fx_loop_once(&f);
	fan_unpause = first_call(&f, FO_SIM_UNPAUSE, dom[2][1]);
	pump_aw = first_call(&f, FO_SIM_DESTROY, dom[1][0]);
	CHECK(first_call(&f, FO_SIM_UNPAUSE, dom[1][1]) < first_call(&f, FO_SIM_DESTROY, dom[0][0]),
	      "pump switched before brake's after-work");
	CHECK(fan_unpause >= 0, "fan switched in the same turn");
	CHECK(fan_unpause >= 0 && pump_aw >= 0 && fan_unpause < pump_aw,
	      "fan's standby unpaused (call %ld) before pump's after-work (destroy: call %ld)", fan_unpause, pump_aw);
	CHECK(count_calls(&f, FO_SIM_DESTROY, dom[2][0]) == 1, "fan's after-work done in the turn too");
	CHECK(fo_sim_state(f.hv, dom[3][0]) == FO_DOM_RUNNING && count_calls(&f, FO_SIM_UNPAUSE, dom[3][1]) == 0,
	      "valve untouched");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

int main(void)
{
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_sim_pause_count);
	RUN(test_fence_suspended);
	RUN(test_keep_paused_holds_one_pause);
	RUN(test_paused_active_not_paused_again);
	RUN(test_give_back_confirms);
	RUN(test_arm_wait_paused_standby_not_paused_again);
	RUN(test_arm_wait_fence_fails);
	RUN(test_rebuild_timeout_fence_fails);
	RUN(test_both_running_fence_fails);
	RUN(test_audit_repauses_armed_standby);
	RUN(test_audit_pauses_suspended_standby);
	RUN(test_audit_repauses_failed_member);
	RUN(test_audit_retries_failed_pause);
	RUN(test_audit_leaves_alone);
	RUN(test_arm_refuses_standby_paused_unproven);
	RUN(test_audit_kernel_not_fought);
	RUN(test_restart_does_not_adopt_failed);
	RUN(test_stand_down_survives_restart);
	RUN(test_arm_does_not_adopt_failed);
	RUN(test_clear_failed_allows_again);
	RUN(test_new_instance_starts_clean);
	RUN(test_corrupt_verdict_file);
	RUN(test_lost_verdict_file_fails_closed);
	RUN(test_untrusted_verdict_file_fails_closed);
	RUN(test_other_boot_verdict_file_dropped);
	RUN(test_unrecorded_switch_presumed_failed);
	RUN(test_verdict_written_after_unpause);
	RUN(test_verdict_table_lookups);
	RUN(test_turn_switches_all_before_writing);
	RUN(test_killed_before_the_turns_write);
	RUN(test_deadline_due_during_a_switch_joins_the_turn);
	RUN(test_turn_switches_all_before_after_work);
	RUN(test_deadline_due_during_after_work_switches_first);
	state_cleanup();
	return check_summary("test_fence");
}
