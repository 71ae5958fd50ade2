/* SPDX-License-Identifier: MIT */
/*
 * test_hvwatch_release.c - the hypervisor switch path with issue #36's
 * Xen, on the simulator's model of our patched Xen's failover watch: a
 * RELEASE by another tool (after the watch fired, or while the daemon
 * waits for its outcome: the SPIN model's finding E), a standby paused
 * while Xen quiesces, an active that does not stop, and a stand-down that
 * takes the pair back from Xen first.
 */
#include "hvwatch_fixture.h"

/* RELEASE of a watch that had fired (rt-patches 0007, #36 item 4), by
 * another tool while the daemon is frozen: Xen hands its fence to the
 * toolstack, so the failed active stays paused; the daemon, finding the
 * watch gone (QUERY -ENOENT) and the old active silent, makes the same
 * switch itself (its standby already runs), and never starts the failed
 * member. */
static void test_release_by_another_tool_after_fired(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw = { .op = FO_FOWATCH_OP_RELEASE };
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	frozen = true;
	hv_live(&f, FO_DOMID_INVALID, 200);
	CHECK(fo_sim_fowatch_domctl(f.hv, f.a, &fw) == 0, "`fowatch-ctl release` of the fired watch");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_pause_count(f.hv, f.a) == 1 &&
		      !fo_sim_fowatch_fenced(f.hv, f.a),
	      "the failed active stays paused, by the toolstack pause Xen handed over (count %u)",
	      fo_sim_pause_count(f.hv, f.a));
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fo_sim_clear_calls(f.hv);
	frozen = false;
	hv_advance(&f, 1);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(f.p->active == 1 && e && e->result == FO_RESULT_OK && strcmp(e->path, "hypervisor") != 0,
	      "the daemon switched to b itself (path %s)", e ? e->path : "-");
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, f.a) == 0, "the failed member was not unpaused");
	prove(&f, f.b);
	hv_live(&f, f.b, 300);
	CHECK(f.p->state == FO_PAIR_DEGRADED && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED &&
		      fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING,
	      "DEGRADED, b runs, a paused (%s)", fo_pair_state_name(f.p->state));
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1 && fo_sim_violations(f.hv) == 0, "one switchover, never both running");
	fx_free(&f);
}

/* A third party pauses the standby while Xen quiesces the active (#36
 * item 5): Xen's check and consumption of the standby's pause are one
 * step, so it ends FAILED_STANDBY, unpauses nothing and keeps the active
 * fenced; the daemon takes its own pause, RELEASEs and ends DEGRADED with
 * nothing running (the third party holds the standby). */
static void test_standby_paused_while_quiescing(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw;
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	fo_sim_fowatch_quiesce_delay(f.hv, 5 * MS);
	hv_live(&f, f.a, 50);
	frozen = true;
	for (int i = 0; i < 100 && !(query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_QUIESCING); i++)
		hv_advance(&f, 1);
	CHECK(fw.state == FO_FOWATCH_STATE_QUIESCING && !(fw.flags & FO_FOWATCH_OUT_FENCED),
	      "quiescing, not reported fenced yet: %s, flags %#x", fo_fowatch_state_name(fw.state), fw.flags);
	CHECK(fo_sim_external_pause(f.hv, f.b) == 0, "xl pause of the standby while Xen quiesces");
	hv_advance(&f, 10);
	CHECK(query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_FAILED_STANDBY && (fw.flags & FO_FOWATCH_OUT_FENCED) &&
		      fw.t_switched == 0,
	      "FAILED_STANDBY, the active fenced: %s, flags %#x", fo_fowatch_state_name(fw.state), fw.flags);
	CHECK(fo_sim_pause_count(f.hv, f.b) == 2, "nothing unpaused: the standby's count %u", fo_sim_pause_count(f.hv, f.b));
	frozen = false;
	hv_advance(&f, 1);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") == 0 && e->result == FO_RESULT_FAILED, "Xen's failed switch adopted");
	CHECK(f.p->state == FO_PAIR_DEGRADED && query(&f, f.a, &fw) == -ENOENT, "DEGRADED, released (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_pause_count(f.hv, f.a) >= 1 &&
		      fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "nothing runs: a paused (count %u), b held by the third party", fo_sim_pause_count(f.hv, f.a));
	hv_live(&f, FO_DOMID_INVALID, 300);
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0 && fo_sim_violations(f.hv) == 0,
	      "the daemon unpaused nothing; never both running");
	fx_free(&f);
}

/* A vCPU of the active never stops (FAILED_QUIESCE): QUERY does not say
 * fenced (#36 item 6), so the daemon issues no pause that would wait for
 * it; RELEASE hands the fence to the toolstack, the standby is never
 * started, the pair ends DEGRADED. */
static void test_failed_quiesce_released(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw;
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	fo_sim_fowatch_quiesce_delay(f.hv, FO_SIM_NEVER);
	hv_live(&f, f.a, 50);
	frozen = true;
	hv_live(&f, FO_DOMID_INVALID, 200);
	CHECK(query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_FAILED_QUIESCE && !(fw.flags & FO_FOWATCH_OUT_FENCED),
	      "FAILED_QUIESCE, not reported fenced: flags %#x", fw.flags);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING, "its vCPU runs: not reported paused");
	fo_sim_clear_calls(f.hv);
	frozen = false;
	hv_advance(&f, 1);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") == 0 && e->result == FO_RESULT_ABORTED, "Xen's aborted switch adopted");
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.a) == 0, "no pause of a vCPU that does not stop");
	CHECK(query(&f, f.a, &fw) == -ENOENT && fo_sim_pause_count(f.hv, f.a) == 1, "released: the fence is the toolstack's");
	hv_live(&f, FO_DOMID_INVALID, 300);
	CHECK(f.p->state == FO_PAIR_DEGRADED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "DEGRADED, the standby left paused (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0 && fo_sim_violations(f.hv) == 0,
	      "nothing unpaused; never both running");
	fx_free(&f);
}

/*
 * A RELEASE by another tool while the daemon waits for the watch's outcome
 * (the SPIN model's finding E, tests/model `watch_live`). The daemon comes
 * to wait at one of these points while Xen quiesces the silent active:
 */
enum wait_point {
	WAIT_DEADLINE,   /* its own deadline's look (fo_pair_kernel_on_deadline) found the watch QUIESCING */
	WAIT_OWN_SWITCH, /* its own switch (an operator's switchover) was told EALREADY by DISARM */
	WAIT_DISARM,     /* `failoverctl disarm`: leaving ARMED, DISARM said EALREADY */
	WAIT_RESTART,    /* a daemon restarted meanwhile: arming found the watch QUIESCING */
};

static const char *const wait_point_name[] = { "deadline", "own switch", "disarm", "restart" };

static bool said(struct fx *f, const char *text)
{
	const struct fo_event_ring *r = fo_manager_events(f->mgr);

	for (size_t i = 0; i < fo_event_ring_count(r); i++)
		if (strstr(fo_event_ring_get(r, i)->message, text))
			return true;
	return false;
}

/*
 * The daemon waits at `at`; frozen, it misses the end of the watch (its
 * vCPUs stop `stop_ms` after the fence: FIRED under the 20 ms quiesce,
 * FAILED_QUIESCE above it) and another tool's RELEASE (`fowatch-ctl
 * release`) before it reads the VIRQ, whose QUERY then says ENOENT: the
 * outcome is gone with the watch. The pair must not wait for it for ever:
 * it is the daemon's again (its own switch away from the fenced active,
 * or left disarmed by the operator), never with both members running,
 * never with the failed member started.
 */
static void release_while_waiting(enum wait_point at, uint64_t stop_ms)
{
	const char *how = wait_point_name[at];
	struct fo_xen_failover_watch fw = { 0 }, rel = { .op = FO_FOWATCH_OP_RELEASE };
	char err[256];
	uint32_t end;
	int i;

	struct fx f;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	fo_sim_fowatch_quiesce_delay(f.hv, stop_ms * MS);
	hv_live(&f, f.a, 50);
	/* a falls silent: Xen fires 50 ms after its last beat and quiesces */
	frozen = at != WAIT_DEADLINE;
	for (i = 0; i < 200 && !(query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_QUIESCING &&
				  (frozen || f.p->kernel_firing)); i++)
		hv_advance(&f, 1);
	switch (at) {
	case WAIT_DEADLINE:
		break;
	case WAIT_OWN_SWITCH:
		CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == -EALREADY, "%s: switchover refused: %s", how, err);
		break;
	case WAIT_DISARM:
		fo_pair_disarm(f.p);
		break;
	case WAIT_RESTART:
		hv_restart(&f);
		break;
	}
	frozen = true;
	CHECK(fw.state == FO_FOWATCH_STATE_QUIESCING && f.p->kernel_armed && f.p->kernel_firing,
	      "%s: the daemon waits for the watch's outcome (%s, pair %s, firing %d)", how,
	      fo_fowatch_state_name(fw.state), fo_pair_state_name(f.p->state), f.p->kernel_firing);
	for (i = 0; i < 300 && query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_QUIESCING; i++)
		hv_advance(&f, 1);
	end = fw.state;
	CHECK(end == (stop_ms < 20 ? FO_FOWATCH_STATE_FIRED : FO_FOWATCH_STATE_FAILED_QUIESCE), "%s: the watch ended %s",
	      how, fo_fowatch_state_name(end));
	CHECK(fo_sim_fowatch_domctl(f.hv, f.a, &rel) == 0 && query(&f, f.a, &fw) == -ENOENT,
	      "%s: `fowatch-ctl release` before the daemon read the VIRQ", how);
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1, "%s: the fence is a toolstack pause now", how);
	fo_sim_clear_calls(f.hv);
	frozen = false;
	/* The new active (if any runs) heartbeats; a's vCPUs stop meanwhile. */
	hv_live(&f, f.b, 400);
	CHECK(!f.p->kernel_armed && !f.p->kernel_firing && strcmp(owner_of(&f), "none") == 0,
	      "%s, %s: not waiting for the watch any more (pair %s, owner %s, firing %d: %s)", how,
	      fo_fowatch_state_name(end), fo_pair_state_name(f.p->state), owner_of(&f), f.p->kernel_firing, f.p->reason);
	CHECK(f.p->state == (at == WAIT_DISARM ? FO_PAIR_DISARMED : FO_PAIR_DEGRADED),
	      "%s, %s: a defined end: %s (%s)", how, fo_fowatch_state_name(end), fo_pair_state_name(f.p->state),
	      f.p->reason);
	CHECK(at == WAIT_RESTART || said(&f, "released outside failoverd"),
	      "%s, %s: an event names the release", how, fo_fowatch_state_name(end));
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && count_calls(&f, FO_SIM_UNPAUSE, f.a) == 0,
	      "%s, %s: the failed active stays paused, never unpaused", how, fo_fowatch_state_name(end));
	CHECK(end != FO_FOWATCH_STATE_FIRED || (fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING &&
						(at == WAIT_DISARM || f.p->active == 1)),
	      "%s: Xen's switch stands: b runs (%s), active %s", how, fo_dom_state_name(fo_sim_state(f.hv, f.b)),
	      fo_pair_active(f.p)->name);
	CHECK(!both_running(&f) && fo_sim_violations(f.hv) == 0, "%s, %s: never both running", how,
	      fo_fowatch_state_name(end));
	if (at == WAIT_DISARM) {
		/* The operator arms again: the member Xen fenced failed, and
		 * is no standby (as if its event had been read). */
		fo_pair_arm(f.p);
		hv_live(&f, f.b, 100);
		CHECK(f.p->state == FO_PAIR_DEGRADED && !f.p->kernel_armed && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED &&
			      count_calls(&f, FO_SIM_UNPAUSE, f.a) == 0 && fo_sim_violations(f.hv) == 0,
		      "disarm, %s: armed again, the fenced a is refused as a standby: %s (%s)",
		      fo_fowatch_state_name(end), fo_pair_state_name(f.p->state), f.p->reason);
	}
	fx_free(&f);
}

/* `stand-down` (the cluster agent's demote and stop) of a pair Xen's watch
 * has: DISARMed in Xen before the active is paused, so the watch never
 * takes that pause for a failure; nothing of the pair runs afterwards,
 * however long; `switchover` resumes it on the standby. */
static void test_stand_down_disarms_xen_first(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw;
	char err[256] = "";

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 100);
	fo_sim_clear_calls(f.hv);
	CHECK(fo_pair_stand_down(f.p, err, sizeof(err)) == 0, "stand-down: %s", err);
	CHECK(f.p->state == FO_PAIR_DISARMED && !f.p->kernel_armed && query(&f, f.a, &fw) == -ENOENT,
	      "DISARMED, and DISARMed in Xen (%s)", f.p->reason);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "both paused: a %s, b %s", fo_dom_state_name(fo_sim_state(f.hv, f.a)),
	      fo_dom_state_name(fo_sim_state(f.hv, f.b)));
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "nothing unpaused");
	hv_live(&f, FO_DOMID_INVALID, 1000);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED &&
	      count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0 && count_events(&f, FO_EV_SWITCHOVER) == 0,
	      "a second later still both paused, no switch");
	CHECK(fo_pair_stand_down(f.p, err, sizeof(err)) == 0, "stand-down again (idempotent): %s", err);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "switchover resumes it: %s", err);
	hv_live(&f, f.b, 200);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED &&
	      f.p->state == FO_PAIR_ARMED, "b serves, a its standby: %s", f.p->reason);
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Xen switched and the VIRQ is unread when the stand-down comes: its switch
 * is adopted first and the stand-down refused (retry), never a pause that
 * races Xen's; the retry, once the switch is over, pauses the new active. */
static void test_stand_down_after_xen_fired(void)
{
	struct fx f;
	char err[256] = "";

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	frozen = true;
	hv_live(&f, FO_DOMID_INVALID, 200);
	frozen = false;
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && f.p->active == 0, "Xen switched, VIRQ unread");
	CHECK(fo_pair_stand_down(f.p, err, sizeof(err)) == -EAGAIN && strstr(err, "switched it first"),
	      "refused: %s", err);
	CHECK(f.p->active == 1 && count_events(&f, FO_EV_SWITCHOVER) == 1, "Xen's switch adopted");
	hv_live(&f, f.b, 300);
	CHECK(f.p->state != FO_PAIR_SWITCHING, "the switch is over: %s", fo_pair_state_name(f.p->state));
	CHECK(fo_pair_stand_down(f.p, err, sizeof(err)) == 0, "stand-down: %s", err);
	hv_live(&f, FO_DOMID_INVALID, 500);
	CHECK(fo_sim_state(f.hv, f.a) != FO_DOM_RUNNING && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "nothing runs: a %s, b %s", fo_dom_state_name(fo_sim_state(f.hv, f.a)),
	      fo_dom_state_name(fo_sim_state(f.hv, f.b)));
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

static void test_release_while_waiting(void)
{
	char dir[] = "/tmp/fo-test-hvwatch.XXXXXX";

	/* As deployed: the verdicts survive a restart (a restart that found
	 * Xen's switch done, released, presumes the old active failed). */
	if (!mkdtemp(dir))
		abort();
	snprintf(state_path, sizeof(state_path), "%s/failed-members", dir);
	for (int at = WAIT_DEADLINE; at <= WAIT_RESTART; at++) {
		release_while_waiting(at, 15);  /* FIRED */
		unlink(state_path);
		release_while_waiting(at, 200); /* FAILED_QUIESCE, the vCPUs stop later */
		unlink(state_path);
	}
	state_path[0] = 0;
	rmdir(dir);
}

int main(void)
{
	RUN(test_release_by_another_tool_after_fired);
	RUN(test_standby_paused_while_quiescing);
	RUN(test_failed_quiesce_released);
	RUN(test_release_while_waiting);
	RUN(test_stand_down_disarms_xen_first);
	RUN(test_stand_down_after_xen_fired);
	return check_summary("test_hvwatch_release");
}
