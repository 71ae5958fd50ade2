/* SPDX-License-Identifier: MIT */
/*
 * test_pair.c - the pair state machine and the fenced switchover, driven on
 * the simulated hypervisor with its virtual clock: arming and adoption at
 * start, heartbeats and their loss, every switch, the fencing order, the
 * invariant under injected failures, hostile heartbeat pages. What the
 * operator and the config do to a pair: test_pair_ops.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pair_fixture.h"

static void fx_setup(struct fx *f, enum fo_dom_state sa, enum fo_dom_state sb)
{
	struct fo_config cfg;
	sim_base_config(&cfg);
	fx_setup_cfg(f, &cfg, sa, sb);
}

static void test_arm_first_boot(void)
{
	struct fx f;

	fx_setup(&f, FO_DOM_RUNNING, FO_DOM_RUNNING);
	CHECK(f.p->state == FO_PAIR_ARMING, "state %s", fo_pair_state_name(f.p->state));
	CHECK(fo_sim_watched(f.hv, f.a) && fo_sim_watched(f.hv, f.b), "members watched");
	prove(&f, f.a);
	CHECK(f.p->state == FO_PAIR_ARMING, "active heartbeat alone does not arm");
	fo_sim_heartbeat(f.hv, f.b);
	/* A stopped agent leaves a valid page behind: one page is no proof. */
	CHECK(f.p->state == FO_PAIR_ARMING, "the standby's first page alone does not arm: %s",
	      fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "standby not paused on a baseline page");
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED, "state %s", fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "standby paused after its heartbeat");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING, "active runs");
	CHECK(strcmp(fo_sim_role(f.hv, f.a), "active") == 0, "role a=%s", fo_sim_role(f.hv, f.a));
	CHECK(strcmp(fo_sim_role(f.hv, f.b), "standby") == 0, "role b=%s", fo_sim_role(f.hv, f.b));
	CHECK(fo_manager_settled(f.mgr), "settled once armed");
	CHECK(last_event_of(&f, FO_EV_ARMED) != NULL, "armed event recorded");
	fx_free(&f);
}

static void test_arm_standby_never_heartbeats(void)
{
	struct fx f;

	fx_setup(&f, FO_DOM_RUNNING, FO_DOM_RUNNING);
	live(&f, 0);
	for (int i = 0; i < 130; i++) { /* 130 s of only the active heartbeating */
		for (int k = 0; k < 100; k++) {
			fo_sim_heartbeat(f.hv, f.a);
			fo_sim_advance(f.hv, 10 * MS);
			fo_manager_run_due(f.mgr);
		}
	}
	CHECK(f.p->state == FO_PAIR_DEGRADED, "state %s", fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "unverified standby still fenced");
	CHECK(strstr(f.p->reason, "did not heartbeat") != NULL, "reason: %s", f.p->reason);
	fx_free(&f);
}

static void test_adopt_running_and_paused(void)
{
	struct fx f;

	/* Restart of the daemon after a switch: b is the one running. This
	 * daemon knows no verdict on a (a manual switchover, or no state
	 * file): adopted. With a verdict it is not (test_fence.c). */
	fx_setup(&f, FO_DOM_PAUSED, FO_DOM_RUNNING);
	CHECK(f.p->state == FO_PAIR_ARMED, "state %s", fo_pair_state_name(f.p->state));
	CHECK(f.p->active == 1, "adopted b as active");
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.a) + count_calls(&f, FO_SIM_PAUSE, f.b) == 0, "nothing paused");
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, f.a) + count_calls(&f, FO_SIM_UNPAUSE, f.b) == 0,
	      "nothing unpaused on adoption");
	fx_free(&f);
}

/* The daemon starts while the running member is suspended (a checkpoint):
 * it is the active, the paused one the standby, nothing touched, no
 * verdict; libxl's resume, and it heartbeats on. */
static void test_adopt_suspended_active(void)
{
	struct fx f;

	fx_setup(&f, FO_DOM_SUSPENDED, FO_DOM_PAUSED);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0, "adopted a, suspended, as the active: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(!fo_pair_member_verdict(f.p, 0) && !fo_pair_member_verdict(f.p, 1), "no verdict");
	CHECK(paused_or_unpaused_nothing(&f), "nothing paused or unpaused");
	fo_sim_resume(f.hv, f.a);
	fo_sim_guard(f.hv, f.a, f.b);
	live(&f, 200);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0 && count_events(&f, FO_EV_SWITCHOVER) == 0,
	      "ARMED on, no switch (%s)", f.p->reason);
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* After a restart the adopted active's channel attaches late (reading the
 * agent's keys takes most of timeout_ms under emulation) and its first page
 * is only a baseline: it gets timeout + period from the attach, no less,
 * and a dead agent (stale page) still fails over within that. */
static void test_adopt_late_channel(void)
{
	struct fx f;

	fx_setup(&f, FO_DOM_RUNNING, FO_DOM_PAUSED);
	CHECK(f.p->state == FO_PAIR_ARMED, "adopted: %s", fo_pair_state_name(f.p->state));
	advance(&f, 45); /* timeout is 50 ms */
	fo_sim_agent_event(f.hv, f.a, 0, NULL);
	advance(&f, 10);
	fo_sim_heartbeat(f.hv, f.a); /* baseline, 55 ms after adoption */
	advance(&f, 10);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->stats.switches == 0,
	      "healthy active with a late channel not failed over: %s", fo_pair_state_name(f.p->state));
	fo_sim_heartbeat(f.hv, f.a); /* progress */
	live(&f, 200);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->stats.switches == 0, "stays armed");
	fx_free(&f);

	/* Same start, but the agent is dead: one stale page and nothing more. */
	fx_setup(&f, FO_DOM_RUNNING, FO_DOM_PAUSED);
	advance(&f, 45);
	fo_sim_agent_event(f.hv, f.a, 0, NULL);
	fo_sim_heartbeat(f.hv, f.a);
	advance(&f, 50 + 10 + 1);
	const struct fo_event *e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_HEARTBEAT_TIMEOUT, "dead agent failed over within timeout + period of the attach");
	fx_free(&f);
}

static void test_adopt_both_paused(void)
{
	struct fx f;

	/* Killed between pause and unpause: nothing runs. */
	fx_setup(&f, FO_DOM_PAUSED, FO_DOM_PAUSED);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "state %s", fo_pair_state_name(f.p->state));
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, f.a) + count_calls(&f, FO_SIM_UNPAUSE, f.b) == 0,
	      "never unpauses by itself");
	advance(&f, 1000);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "still both paused");
	/* The operator chooses: switchover starts the standby. */
	char err[256];
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "switchover from DEGRADED: %s", err);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "b runs");
	fx_free(&f);
}

static void test_adopt_member_missing_or_dead(void)
{
	struct fx f;

	fx_setup(&f, FO_DOM_RUNNING, FO_DOM_CRASHED);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "dead standby: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);

	fx_setup(&f, FO_DOM_RUNNING, FO_DOM_GONE);
	CHECK(f.p->state == FO_PAIR_ARMING, "missing standby: waits (%s)", f.p->reason);
	CHECK(strstr(f.p->reason, "brake-b") != NULL, "reason names it: %s", f.p->reason);
	/* It appears (xl create): @introduceDomain -> domains_changed. */
	f.b = fo_sim_add_domain(f.hv, "brake-b", FO_DOM_RUNNING);
	fo_sim_set_state(f.hv, f.b, FO_DOM_RUNNING, true);
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed once it exists and heartbeats: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);

	/* It appears paused: libxl builds a domain paused and unpauses it
	 * last. Adopting it as a verified paused standby would let libxl's
	 * unpause run it beside the active; it must prove itself first. */
	fx_setup(&f, FO_DOM_RUNNING, FO_DOM_GONE);
	f.b = fo_sim_add_domain(f.hv, "brake-b", FO_DOM_PAUSED);
	fo_sim_set_state(f.hv, f.b, FO_DOM_PAUSED, true);
	CHECK(f.p->state == FO_PAIR_ARMING, "a standby created while arming is not adopted paused: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(!f.p->m[1].usable, "and is not usable");
	CHECK(fo_pair_request_switchover(f.p, (char[128]){ 0 }, 128) < 0, "no switchover to it");
	fo_sim_clear_calls(f.hv);
	fo_sim_set_state(f.hv, f.b, FO_DOM_RUNNING, false); /* libxl's unpause: no xenstore event */
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_ARMING && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING,
	      "its first page is a baseline: still arming");
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "it heartbeated, then was paused: %s", fo_pair_state_name(f.p->state));
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, f.b) == 0 && count_calls(&f, FO_SIM_UNPAUSE, f.a) == 0,
	      "arming never unpauses");
	fx_free(&f);

	/* The same domain paused at daemon start (restart) is adopted. */
	fx_setup(&f, FO_DOM_RUNNING, FO_DOM_PAUSED);
	CHECK(f.p->state == FO_PAIR_ARMED, "paused standby found at start is adopted: %s",
	      fo_pair_state_name(f.p->state));
	fx_free(&f);
}

static void test_heartbeat_keeps_armed(void)
{
	struct fx f;

	fx_armed(&f);
	live(&f, 2000);
	CHECK(f.p->state == FO_PAIR_ARMED, "state %s", fo_pair_state_name(f.p->state));
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.a) == 0, "no switch while heartbeating");
	CHECK(f.p->m[0].hb.beats >= 200, "beats %llu", (unsigned long long)f.p->m[0].hb.beats);
	fx_free(&f);
}

static void test_heartbeat_timeout_switch(void)
{
	struct fx f;
	const struct fo_event *e;
	uint64_t last_beat;

	fx_armed(&f);
	live(&f, 100);
	last_beat = fo_sim_now(f.hv);
	fo_sim_heartbeat(f.hv, f.a);
	advance(&f, 49);
	CHECK(f.p->state == FO_PAIR_ARMED, "not before timeout_ms");
	advance(&f, 1);
	CHECK(f.p->state == FO_PAIR_SWITCHING, "state %s", fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched");
	/* Fencing order: pause(a), a confirmed, then unpause(b). (a is read
	 * before the pause as well: a paused domain is not paused again.) */
	long pa = first_call(&f, FO_SIM_PAUSE, f.a), ga = call_after(&f, FO_SIM_GET_STATE, f.a, pa),
	     ub = first_call(&f, FO_SIM_UNPAUSE, f.b);
	CHECK(pa >= 0 && ga > pa && ub > ga, "order pause=%ld getstate=%ld unpause=%ld", pa, ga, ub);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_HEARTBEAT_TIMEOUT, "fault");
	CHECK(e && e->pending, "event waits for the first heartbeat");
	CHECK(e && e->phase_ns[FO_PHASE_DETECTED] - last_beat == 50 * MS, "detected at timeout");
	for (int ph = FO_PHASE_DETECTED; e && ph < FO_PHASE_UNPAUSE_DONE; ph++)
		CHECK(e->phase_ns[ph] && e->phase_ns[ph] <= e->phase_ns[ph + 1], "phase %d ordered", ph);
	fo_sim_advance(f.hv, 3 * MS);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(e && !e->pending && e->phase_ns[FO_PHASE_FIRST_HEARTBEAT] != 0, "first heartbeat recorded");
	CHECK(e && fo_event_within_deadline(e), "within deadline");
	CHECK(f.p->state == FO_PAIR_DEGRADED, "failed member kept paused: no standby (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "keep-paused");
	CHECK(strcmp(fo_sim_role(f.hv, f.b), "active") == 0, "b is active in xenstore");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A backend that holds the active's notifications back (the Xen backend's
 * port left masked for a flood, hv/notify_flood.h): when the deadline runs
 * out, its last look finds the beats and no switch happens; once the agent
 * really stops, the switch comes at a deadline: the one after the look
 * that saw its last beat. */
static void test_masked_port_no_false_timeout(void)
{
	struct fx f;
	const struct fo_event *e;
	uint64_t last_beat;

	fx_armed(&f);
	live(&f, 100);
	fo_sim_mask_port(f.hv, f.a, true);
	for (int i = 0; i < 50; i++) { /* 500 ms, timeout 50 ms */
		fo_sim_heartbeat(f.hv, f.a);
		advance(&f, 10);
	}
	CHECK(f.p->state == FO_PAIR_ARMED && count_calls(&f, FO_SIM_PAUSE, f.a) == 0,
	      "a beat held back is no heartbeat loss: %s", fo_pair_state_name(f.p->state));
	CHECK(f.p->m[0].misses == 0, "no miss counted: %llu", (unsigned long long)f.p->m[0].misses);
	last_beat = fo_sim_now(f.hv);
	fo_sim_heartbeat(f.hv, f.a);
	advance(&f, 200);
	CHECK(f.p->state == FO_PAIR_DEGRADED || f.p->state == FO_PAIR_SWITCHING, "stopped while masked: switched (%s)",
	      fo_pair_state_name(f.p->state));
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_HEARTBEAT_TIMEOUT, "fault heartbeat-timeout");
	/* Its last beat is seen by a look, up to one timeout late: the loss
	 * is found within two timeouts of it (the price of its flood). */
	CHECK(e && e->phase_ns[FO_PHASE_DETECTED] - last_beat <= 100 * MS, "detected %llu ms after the last beat",
	      e ? (unsigned long long)((e->phase_ns[FO_PHASE_DETECTED] - last_beat) / MS) : 0ull);
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

static void test_crash_is_immediate(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_armed(&f);
	live(&f, 20);
	uint64_t t = fo_sim_now(f.hv);
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "standby started at once");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_CRASHED, "fault crashed");
	CHECK(e && e->phase_ns[FO_PHASE_UNPAUSE_DONE] == t, "no waiting for the heartbeat timeout");
	fx_free(&f);

	fx_armed(&f);
	fo_sim_set_state(f.hv, f.a, FO_DOM_GONE, true);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "destroyed active -> switch");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_GONE && e->result == FO_RESULT_OK, "fault gone, ok");
	fx_free(&f);

	fx_armed(&f);
	fo_sim_set_state(f.hv, f.a, FO_DOM_SHUTDOWN, true);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_SHUTDOWN, "shutdown is a fault");
	fx_free(&f);
}

static bool has_event_with(struct fx *f, enum fo_event_kind kind, const char *text)
{
	const struct fo_event_ring *r = fo_manager_events(f->mgr);

	for (size_t i = 0; i < fo_event_ring_count(r); i++) {
		const struct fo_event *e = fo_event_ring_get(r, i);
		if (e->kind == kind && strstr(e->message, text))
			return true;
	}
	return false;
}

/* `xl save -c` of the active (a checkpoint; a failed migration, Remus and
 * COLO suspend the same way): Xen shuts it down with reason suspend,
 * @releaseDomain fires, and libxl resumes it. Not a death: no switch, no
 * verdict, and the resumed active is still the pair's. */
static void test_suspend_is_not_a_death(void)
{
	struct fx f;

	fx_armed(&f);
	live(&f, 20);
	fo_sim_heartbeat(f.hv, f.a);
	fo_sim_clear_calls(f.hv);
	fo_sim_shutdown(f.hv, f.a, FO_SIM_SHUTDOWN_SUSPEND, true);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_SUSPENDED, "a reported suspended, not %s",
	      fo_dom_state_name(fo_sim_state(f.hv, f.a)));
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 0 && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "no switch on @releaseDomain of a suspend");
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0, "still ARMED, a active (%s: %s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(!fo_pair_member_verdict(f.p, 0), "a suspend is no verdict");
	CHECK(has_event_with(&f, FO_EV_INFO, "is suspended"), "the suspend is said");
	advance(&f, 30); /* the checkpoint, shorter than timeout_ms (50) */
	fo_sim_resume(f.hv, f.a);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING, "libxl's resume runs it");
	live(&f, 200);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0 && count_events(&f, FO_EV_SWITCHOVER) == 0,
	      "no switch after the resume (%s: %s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(paused_or_unpaused_nothing(&f), "no domain touched");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A suspend that outlasts timeout_ms is a heartbeat loss like any other:
 * the switch pauses the suspended active for real (Xen's counted pause)
 * before the standby runs, so that libxl's resume leaves it paused. */
static void test_suspend_beyond_timeout_pauses(void)
{
	struct fx f;
	const struct fo_event *e;
	long pause_a, unpause_b;

	fx_armed(&f);
	live(&f, 20);
	fo_sim_heartbeat(f.hv, f.a);
	fo_sim_clear_calls(f.hv);
	fo_sim_shutdown(f.hv, f.a, FO_SIM_SHUTDOWN_SUSPEND, true);
	live(&f, 100); /* the suspended a does not heartbeat */
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && f.p->active == 1, "switched on the heartbeat timeout");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_HEARTBEAT_TIMEOUT && e->result == FO_RESULT_OK, "fault %s",
	      e ? fo_fault_name(e->fault) : "none");
	CHECK(e && strstr(e->message, "suspended"), "the event says the active was suspended: %s", e ? e->message : "");
	pause_a = first_call(&f, FO_SIM_PAUSE, f.a);
	unpause_b = first_call(&f, FO_SIM_UNPAUSE, f.b);
	CHECK(pause_a >= 0 && unpause_b > pause_a, "a paused (call %ld) before b unpaused (call %ld)", pause_a,
	      unpause_b);
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1 && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED,
	      "one pause holds the suspended a (count %u, %s)", fo_sim_pause_count(f.hv, f.a),
	      fo_dom_state_name(fo_sim_state(f.hv, f.a)));
	fo_sim_resume(f.hv, f.a);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "libxl's resume leaves it paused");
	live(&f, 100);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "b alone runs");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A standby suspended behind our back (unpaused by someone, then saved) is
 * no standby: an unpause cannot start it, a resume would run it beside the
 * active. Paused, DEGRADED, no verdict; the active runs on. */
static void test_suspended_standby(void)
{
	struct fx f;

	fx_armed(&f);
	live(&f, 20);
	CHECK(fo_sim_external_unpause(f.hv, f.b) == 0, "someone unpauses b");
	fo_sim_shutdown(f.hv, f.b, FO_SIM_SHUTDOWN_SUSPEND, true);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "no standby: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(strstr(f.p->reason, "suspended") != NULL, "says why: %s", f.p->reason);
	CHECK(fo_sim_pause_count(f.hv, f.b) == 1, "paused, so that a resume cannot run it (count %u)",
	      fo_sim_pause_count(f.hv, f.b));
	CHECK(!fo_pair_member_verdict(f.p, 1), "not failed");
	fo_sim_resume(f.hv, f.b);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "resumed, still paused");
	live(&f, 100);
	CHECK(f.p->active == 0 && fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING && count_events(&f, FO_EV_SWITCHOVER) == 0,
	      "the active runs on");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed again once it is back: %s", f.p->reason);
	fx_free(&f);
}

static void test_manual_there_and_back(void)
{
	struct fx f;
	char err[256];

	fx_armed(&f);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "%s", err);
	CHECK(f.p->state == FO_PAIR_SWITCHING, "switching until b heartbeats");
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == -EBUSY, "no second switch while SWITCHING");
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED, "manual: old active is a usable standby (%s)", f.p->reason);
	CHECK(f.p->active == 1, "b active");
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "%s", err);
	fo_sim_heartbeat(f.hv, f.a);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0, "back to a");
	CHECK(f.p->stats.switches == 2, "two switches");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

static void test_pause_fails_aborts(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_armed(&f);
	fo_sim_fail(f.hv, FO_SIM_PAUSE, f.a, -EIO, 100);
	advance(&f, 100);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "standby never unpaused when the active is not fenced");
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, f.b) == 0, "no unpause call at all");
	CHECK(f.p->state == FO_PAIR_DEGRADED, "degraded: %s", f.p->reason);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->result == FO_RESULT_ABORTED, "aborted");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	/* The standby is still there, paused: the pair must not think it gone
	 * (status, a later manual switch), and the abort is not blamed on the
	 * kernel module (there is none here). */
	CHECK(fo_pair_standby(f.p)->state == FO_DOM_PAUSED, "standby still known paused, not %s",
	      fo_dom_state_name(fo_pair_standby(f.p)->state));
	e = last_event_of(&f, FO_EV_INFO);
	CHECK(!e || !strstr(e->message, "kernel module"), "no kernel-module excuse: %s", e ? e->message : "");
	fx_free(&f);
}

static void test_pause_lies(void)
{
	struct fx f;

	/* The hypercall says yes, the domain info says still running. */
	fx_armed(&f);
	fo_sim_pause_is_noop(f.hv, f.a, true);
	advance(&f, 100);
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, f.b) == 0, "confirmation, not the return code, decides");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	CHECK(last_event_of(&f, FO_EV_SWITCHOVER)->result == FO_RESULT_ABORTED, "aborted");
	fx_free(&f);
}

static void test_pause_fails_once_then_retried(void)
{
	struct fx f;

	fx_armed(&f);
	fo_sim_fail(f.hv, FO_SIM_PAUSE, f.a, -EAGAIN, 1);
	advance(&f, 100);
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.a) == 2, "retried once");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "then switched");
	fx_free(&f);
}

static void test_getinfo_errors(void)
{
	struct fx f;

	fx_armed(&f);
	fo_sim_fail(f.hv, FO_SIM_GET_STATE, f.a, -EIO, 100);
	advance(&f, 100);
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, f.b) == 0, "unconfirmed fence: standby stays paused");
	CHECK(f.p->state == FO_PAIR_DEGRADED, "degraded");
	fx_free(&f);
}

static void test_unpause_fails(void)
{
	struct fx f;
	char err[256];

	fx_armed(&f);
	fo_sim_fail(f.hv, FO_SIM_UNPAUSE, f.b, -EIO, 100);
	advance(&f, 100);
	CHECK(last_event_of(&f, FO_EV_SWITCHOVER)->result == FO_RESULT_FAILED, "failed");
	CHECK(f.p->state == FO_PAIR_DEGRADED, "degraded, loudly: %s", f.p->reason);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "failed active not restarted");
	fx_free(&f);

	/* Manual switchover that cannot start the standby gives the healthy
	 * active back (safe: the standby is confirmed not running). */
	fx_armed(&f);
	fo_sim_fail(f.hv, FO_SIM_UNPAUSE, f.b, -EIO, 3);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) < 0, "reported");
	CHECK(strstr(err, "could not be started") != NULL, "error says why: %s", err);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "active restored");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

static void test_vanish_mid_switch(void)
{
	struct fx f;

	fx_armed(&f);
	fo_sim_vanish_on(f.hv, FO_SIM_PAUSE, f.a);
	advance(&f, 60);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "a vanished = fenced: b runs");
	CHECK(last_event_of(&f, FO_EV_SWITCHOVER)->result == FO_RESULT_OK, "ok");
	fx_free(&f);

	/* The standby vanishes as we unpause it. */
	fx_armed(&f);
	fo_sim_vanish_on(f.hv, FO_SIM_UNPAUSE, f.b);
	advance(&f, 100);
	CHECK(last_event_of(&f, FO_EV_SWITCHOVER)->result == FO_RESULT_FAILED, "failed");
	CHECK(f.p->state == FO_PAIR_DEGRADED, "degraded");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

static void test_slow_calls(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_armed(&f);
	fo_sim_delay(f.hv, FO_SIM_PAUSE, 40 * MS);
	fo_sim_delay(f.hv, FO_SIM_UNPAUSE, 70 * MS);
	advance(&f, 50);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->result == FO_RESULT_OK, "slow but done");
	CHECK(e && fo_event_phase_us(e, FO_PHASE_PAUSE_DONE) >= 40000, "pause took 40 ms");
	CHECK(e && !fo_event_within_deadline(e), "deadline miss reported");
	fx_free(&f);
}

static void test_standby_started_behind_our_back(void)
{
	struct fx f;

	fx_armed(&f);
	fo_sim_set_state(f.hv, f.b, FO_DOM_RUNNING, true);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "fenced again at once");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING, "active untouched");
	fx_free(&f);

	/* Also when its heartbeat is how we notice. */
	fx_armed(&f);
	fo_sim_set_state(f.hv, f.b, FO_DOM_RUNNING, false);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "fenced on its heartbeat");
	fx_free(&f);
}

static void test_grace_expiry(void)
{
	struct fx f;

	fx_armed(&f);
	advance(&f, 50);
	CHECK(f.p->state == FO_PAIR_SWITCHING, "switched");
	advance(&f, 60);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "no heartbeat within grace: %s", f.p->reason);
	CHECK(last_event_of(&f, FO_EV_SWITCHOVER)->result == FO_RESULT_DEGRADED, "event says so");
	CHECK(strstr(f.p->reason, "did not heartbeat") != NULL, "reason: %s", f.p->reason);
	fx_free(&f);
}

static void test_hostile_pages(void)
{
	struct fx f;
	struct fo_hb_page pg;
	const struct fo_hb_page good = { .magic = FO_HB_MAGIC,
					 .abi_version = FO_HB_ABI_VERSION,
					 .sequence = 1000,
					 .period_ms = 10,
					 .boot_id = 0x5151000000000001ull };

	fx_armed(&f);
	uint64_t invalid0 = f.p->m[0].hb.invalid;
	uint64_t start = fo_sim_now(f.hv);
	/* 50 ms of garbage, every ms: none of it is progress. */
	for (int i = 0; i < 49; i++) {
		pg = good;
		switch (i % 7) {
		case 0: pg.magic = 0xdeadbeef; break;
		case 1: pg.abi_version = 99; break;
		case 2: pg.period_ms = 0; break;
		case 3: pg.app_status = 77; break;
		case 4: pg.flags = 0x80000000u; break;
		case 5: memset(&pg, 0xff, sizeof(pg)); break;
		case 6: pg.sequence = 0; break; /* backwards from the sim's sequence */
		}
		fo_sim_raw_page(f.hv, f.a, &pg);
		advance(&f, 1);
	}
	CHECK(f.p->m[0].hb.invalid - invalid0 >= 42, "garbage counted: %llu",
	      (unsigned long long)(f.p->m[0].hb.invalid - invalid0));
	advance(&f, 60);
	CHECK(f.p->state == FO_PAIR_SWITCHING || f.p->state == FO_PAIR_DEGRADED, "garbage is a missed heartbeat");
	const struct fo_event *e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->phase_ns[FO_PHASE_DETECTED] - start <= 50 * MS, "on time despite the storm");
	fx_free(&f);

	/* A guest flipping its boot id looks like an agent restarting every
	 * ms: each new instance is only a baseline, never progress. */
	fx_armed(&f);
	start = fo_sim_now(f.hv);
	for (int i = 0; i < 80 && f.p->state == FO_PAIR_ARMED; i++) {
		pg = good;
		pg.boot_id = 1 + (i & 1);
		fo_sim_raw_page(f.hv, f.a, &pg);
		advance(&f, 1);
	}
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_HEARTBEAT_TIMEOUT, "boot-id flipping is no heartbeat");
	CHECK(f.p->m[0].hb.restarts >= 20, "restarts counted: %llu", (unsigned long long)f.p->m[0].hb.restarts);
	fx_free(&f);

	/* A sequence that leaps ahead is not believed. */
	fx_armed(&f);
	pg = good;
	fo_sim_heartbeat(f.hv, f.a);
	pg.sequence = f.p->m[0].hb.sequence + 5000000ull;
	pg.boot_id = f.p->m[0].hb.boot_id;
	uint64_t inv = f.p->m[0].hb.invalid;
	fo_sim_raw_page(f.hv, f.a, &pg);
	CHECK(f.p->m[0].hb.invalid == inv + 1, "jump rejected");
	/* A restarted agent (new boot id) starts over and is accepted. */
	pg.sequence = 1;
	pg.boot_id = 42;
	fo_sim_raw_page(f.hv, f.a, &pg);
	CHECK(f.p->m[0].hb.restarts == 1 && f.p->m[0].hb.sequence == 1, "agent restart accepted");
	/* Heartbeats from a domain in no pair are ignored. */
	fo_domid_t other = fo_sim_add_domain(f.hv, "stranger", FO_DOM_RUNNING);
	fo_sim_raw_page(f.hv, other, &pg);
	fo_sim_agent_event(f.hv, other, -EINVAL, "bogus");
	fo_sim_agent_event(f.hv, f.a, -EINVAL, "bad grant ref 3");
	CHECK(f.p->state == FO_PAIR_ARMED, "still armed");
	fx_free(&f);
}


int main(void)
{
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_arm_first_boot);
	RUN(test_arm_standby_never_heartbeats);
	RUN(test_adopt_running_and_paused);
	RUN(test_adopt_late_channel);
	RUN(test_adopt_suspended_active);
	RUN(test_adopt_both_paused);
	RUN(test_adopt_member_missing_or_dead);
	RUN(test_heartbeat_keeps_armed);
	RUN(test_heartbeat_timeout_switch);
	RUN(test_masked_port_no_false_timeout);
	RUN(test_crash_is_immediate);
	RUN(test_suspend_is_not_a_death);
	RUN(test_suspend_beyond_timeout_pauses);
	RUN(test_suspended_standby);
	RUN(test_manual_there_and_back);
	RUN(test_pause_fails_aborts);
	RUN(test_pause_lies);
	RUN(test_pause_fails_once_then_retried);
	RUN(test_getinfo_errors);
	RUN(test_unpause_fails);
	RUN(test_vanish_mid_switch);
	RUN(test_slow_calls);
	RUN(test_standby_started_behind_our_back);
	RUN(test_grace_expiry);
	RUN(test_hostile_pages);
	return check_summary("test_pair");
}
