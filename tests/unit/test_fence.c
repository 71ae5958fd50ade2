/* SPDX-License-Identifier: MIT */
/*
 * test_fence.c - the safety core around fencing (issue #16), on the
 * simulated hypervisor: Xen's counted pauses (the simulator's model and the
 * daemon never relying on pause/unpause being idempotent), failed pauses
 * that are never reported as paused, and the fence audit that re-pauses a
 * member unpaused behind our back. The failure verdicts are
 * test_verdicts.c's, the switches of one loop turn test_turn.c's.
 */
#include "fence_fixture.h"

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
	return check_summary("test_fence");
}
