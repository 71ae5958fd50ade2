/* SPDX-License-Identifier: MIT */
/*
 * test_pair.c - the pair state machine and the fenced switchover, driven on
 * the simulated hypervisor with its virtual clock: every transition, the
 * fencing order, the invariant under injected failures, hostile heartbeat
 * pages, restart adoption, drills and policies.
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

static void test_unhealthy(void)
{
	struct fx f;
	struct fo_config cfg;

	fx_armed(&f);
	fo_sim_heartbeat_status(f.hv, f.a, FO_HB_APP_UNHEALTHY);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "unhealthy fails over");
	CHECK(last_event_of(&f, FO_EV_SWITCHOVER)->fault == FO_FAULT_UNHEALTHY, "fault unhealthy");
	fx_free(&f);

	sim_base_config(&cfg);
	cfg.pairs[0].fail_on_unhealthy = false;
	fx_setup_cfg(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING);
	prove(&f, f.b);
	fo_sim_heartbeat_status(f.hv, f.a, FO_HB_APP_UNHEALTHY);
	CHECK(f.p->state == FO_PAIR_ARMED, "ignored when fail_on_unhealthy is false");
	fx_free(&f);
}

static void test_disarm_and_arm(void)
{
	struct fx f;
	char err[256];

	fx_armed(&f);
	fo_pair_disarm(f.p);
	CHECK(f.p->state == FO_PAIR_DISARMED, "disarmed");
	advance(&f, 500);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "no automatic switch while disarmed");
	CHECK(fo_pair_request_drill(f.p, FO_DRILL_HANG, err, sizeof(err)) == -EBUSY, "drill refused");
	CHECK(strstr(err, "DISARMED") != NULL, "and says why: %s", err);
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED, "re-armed by adoption: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
}

static void test_drills(void)
{
	static const struct {
		enum fo_drill_kind kind;
		const char *cmd;
		enum fo_fault fault;
	} cases[] = {
		{ FO_DRILL_HEARTBEAT_LOSS, FO_HB_CMD_STOP, FO_FAULT_HEARTBEAT_TIMEOUT },
		{ FO_DRILL_HANG, FO_HB_CMD_FREEZE, FO_FAULT_HEARTBEAT_TIMEOUT },
		{ FO_DRILL_CRASH, FO_HB_CMD_CRASH, FO_FAULT_CRASHED },
		{ FO_DRILL_UNHEALTHY, FO_HB_CMD_UNHEALTHY, FO_FAULT_UNHEALTHY },
		{ FO_DRILL_DESTROY, NULL, FO_FAULT_GONE },
		{ FO_DRILL_MANUAL, NULL, FO_FAULT_MANUAL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fx f;
		char err[256];
		const struct fo_event *e;

		fx_armed(&f);
		uint64_t inject = fo_sim_now(f.hv);
		CHECK(fo_pair_request_drill(f.p, cases[i].kind, err, sizeof(err)) == 0, "%s", err);
		if (cases[i].cmd)
			CHECK(strcmp(fo_sim_last_command(f.hv, f.a), cases[i].cmd) == 0, "command %s",
			      fo_sim_last_command(f.hv, f.a));
		/* Play the guest: what the agent would do on that command. */
		advance(&f, 5);
		if (cases[i].kind == FO_DRILL_CRASH)
			fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
		if (cases[i].kind == FO_DRILL_UNHEALTHY)
			fo_sim_heartbeat_status(f.hv, f.a, FO_HB_APP_UNHEALTHY);
		/* The standby's agent heartbeats as soon as it runs. */
		for (int ms = 0; ms < 60 && fo_sim_state(f.hv, f.b) != FO_DOM_RUNNING; ms++)
			advance(&f, 1);
		advance(&f, 1);
		fo_sim_heartbeat(f.hv, f.b);
		e = last_event_of(&f, FO_EV_DRILL);
		CHECK(e != NULL, "drill %s recorded", fo_drill_kind_name(cases[i].kind));
		if (!e) {
			fx_free(&f);
			continue;
		}
		CHECK(e->fault == cases[i].fault, "drill %s fault %s", fo_drill_kind_name(cases[i].kind),
		      fo_fault_name(e->fault));
		CHECK(e->phase_ns[FO_PHASE_FAULT] == inject, "timeline starts at injection");
		CHECK(e->phase_ns[FO_PHASE_FIRST_HEARTBEAT] > e->phase_ns[FO_PHASE_UNPAUSE_DONE], "first heartbeat");
		CHECK(f.p->drill_done_id == e->id, "drill completion handed over");
		CHECK(fo_sim_violations(f.hv) == 0, "never both running");
		fx_free(&f);
	}
}

static void test_drill_that_causes_nothing(void)
{
	struct fx f;
	char err[256];

	fx_armed(&f);
	CHECK(fo_pair_request_drill(f.p, FO_DRILL_HEARTBEAT_LOSS, err, sizeof(err)) == 0, "%s", err);
	/* The agent ignores the command and keeps heartbeating. */
	live(&f, 6000);
	const struct fo_event *e = last_event_of(&f, FO_EV_DRILL);
	CHECK(e && e->result == FO_RESULT_FAILED, "drill without switchover fails");
	CHECK(f.p->drill_done_id == (e ? e->id : 0), "and completes");
	CHECK(f.p->state == FO_PAIR_ARMED, "pair still armed");
	fx_free(&f);
}

/* On Xen the drill's command is written by a helper thread after the
 * request returned; when that write fails the drill fails at once, saying
 * so, instead of after its budget. A role that did not land leaves it be. */
static void test_drill_command_not_written(void)
{
	struct fx f;
	char err[256];
	struct fo_hv_callbacks cb;
	const struct fo_event *e;

	fx_armed(&f);
	cb = fo_manager_hv_callbacks(f.mgr);
	CHECK(fo_pair_request_drill(f.p, FO_DRILL_HANG, err, sizeof(err)) == 0, "%s", err);
	cb.write_failed(cb.ctx, f.a, FO_HB_XS_ROLE, "active", -EIO);
	CHECK(f.p->drill_active && f.p->drill_done_id == 0, "a role write failure does not end the drill");
	cb.write_failed(cb.ctx, f.b, FO_HB_XS_CONTROL, FO_HB_CMD_FREEZE, -EIO);
	CHECK(f.p->drill_active, "nor a command to the standby");
	cb.write_failed(cb.ctx, f.a, FO_HB_XS_CONTROL, FO_HB_CMD_FREEZE, -EACCES);
	e = last_event_of(&f, FO_EV_DRILL);
	CHECK(!f.p->drill_active && e && e->result == FO_RESULT_FAILED, "the drill failed at once");
	CHECK(f.p->drill_done_id == (e ? e->id : 0), "and completes, for the waiting client");
	CHECK(e && strstr(e->message, "never reached the agent") && strstr(e->message, strerror(EACCES)),
	      "saying why: %s", e ? e->message : "(none)");
	CHECK(f.p->state == FO_PAIR_ARMED, "pair still armed");
	fx_free(&f);
}

static void test_policies(void)
{
	struct fx f;
	struct fo_config cfg;

	sim_base_config(&cfg);
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_DESTROY;
	fx_setup_cfg(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING);
	prove(&f, f.b);
	advance(&f, 60);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_GONE, "destroy policy destroyed the failed member");
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "destroyed"), "reason: %s", f.p->reason);
	fx_free(&f);

	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	fx_setup_cfg(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING);
	prove(&f, f.b);
	fo_sim_guard(f.hv, f.a, f.b);
	advance(&f, 60);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_REBUILDING, "rebuilding: %s", f.p->reason);
	fo_domid_t rebuilt = f.p->m[0].domid;
	CHECK(rebuilt != FO_DOMID_INVALID && rebuilt != f.a, "re-created with a new domid");
	fo_sim_heartbeat(f.hv, rebuilt);
	CHECK(f.p->state == FO_PAIR_REBUILDING && fo_sim_state(f.hv, rebuilt) == FO_DOM_RUNNING,
	      "one page of the rebuilt member is no proof: %s", fo_pair_state_name(f.p->state));
	fo_sim_heartbeat(f.hv, rebuilt);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed with the rebuilt standby: %s", fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, rebuilt) == FO_DOM_PAUSED, "rebuilt standby paused");
	CHECK(f.p->active == 1, "roles swapped (failback manual)");
	fx_free(&f);

	/* Rebuild that cannot create the domain: DEGRADED with the reason. */
	fx_setup_cfg(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING);
	prove(&f, f.b);
	fo_sim_fail(f.hv, FO_SIM_CREATE, FO_SIM_ANY_DOMAIN, -ENOMEM, 1);
	advance(&f, 60);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "rebuild"), "reason: %s", f.p->reason);
	fx_free(&f);
}

/* A reload that would remove or replace a pair in flight waits (issue #16:
 * a removed SWITCHING pair's event was never published; a replaced
 * REBUILDING pair's new domain was started beside an active nobody
 * watched). Once the pair settles, the same reload goes through and the
 * switch's event has been published. */
static void test_reload_waits_for_in_flight(void)
{
	struct fo_config cfg, gone, other;
	const struct fo_event_ring *r;
	struct fx f;
	char why[256] = "";

	sim_base_config(&cfg);
	gone = cfg;
	gone.n_pairs = 0;
	other = cfg;
	snprintf(other.pairs[0].standby, sizeof(other.pairs[0].standby), "brake-c");

	/* SWITCHING: waiting for the new active's first heartbeat. */
	fx_armed(&f);
	fo_pair_request_switchover(f.p, NULL, 0);
	CHECK(f.p->state == FO_PAIR_SWITCHING, "switching: %s", fo_pair_state_name(f.p->state));
	CHECK(fo_manager_reload_must_wait(f.mgr, &gone, why, sizeof(why)) && strstr(why, "brake") &&
		      strstr(why, "removes") && strstr(why, "switching"),
	      "removing a switching pair waits: %s", why);
	CHECK(fo_manager_reload_must_wait(f.mgr, &other, why, sizeof(why)) && strstr(why, "other members"),
	      "replacing it too: %s", why);
	CHECK(!fo_manager_reload_must_wait(f.mgr, &cfg, why, sizeof(why)), "keeping it does not wait");
	fo_sim_heartbeat(f.hv, f.b);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED, "settled: %s", fo_pair_state_name(f.p->state));
	CHECK(!fo_manager_reload_must_wait(f.mgr, &gone, why, sizeof(why)), "settled: the reload may go");
	r = fo_manager_events(f.mgr);
	for (size_t i = 0; i < fo_event_ring_count(r); i++)
		CHECK(!fo_event_ring_get(r, i)->pending, "event %zu complete before the pair goes", i);
	fo_manager_reload(f.mgr, &gone);
	CHECK(fo_manager_pair_count(f.mgr) == 0, "removed once settled");
	fx_free(&f);

	/* REBUILDING: the failed member is being re-created. */
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	fx_setup_cfg(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING);
	prove(&f, f.b);
	advance(&f, 60);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_REBUILDING, "rebuilding: %s", f.p->reason);
	other.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	CHECK(fo_manager_reload_must_wait(f.mgr, &other, why, sizeof(why)) && strstr(why, "rebuilding"),
	      "replacing a rebuilding pair waits: %s", why);
	fx_free(&f);

	/* A drill in progress. */
	fx_armed(&f);
	CHECK(fo_pair_request_drill(f.p, FO_DRILL_HANG, why, sizeof(why)) == 0, "drill: %s", why);
	CHECK(fo_manager_reload_must_wait(f.mgr, &gone, why, sizeof(why)) && strstr(why, "drill"),
	      "removing a drilling pair waits: %s", why);
	fx_free(&f);
}

/* A daemon killed between a rebuild's two steps (destroy the failed member,
 * create it again) restarts with the member gone: with on_failover=rebuild
 * it re-creates it and arms, instead of waiting for ever (chaos campaign,
 * 2026-11-25). Another policy waits for the domain, as before. */
static void test_restart_resumes_rebuild(void)
{
	struct fo_config cfg;
	struct fx f;
	fo_domid_t rebuilt;

	sim_base_config(&cfg);
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	fx_setup_cfg(&f, &cfg, FO_DOM_GONE, FO_DOM_RUNNING);
	CHECK(f.p->state == FO_PAIR_REBUILDING, "rebuilding the missing member: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(f.p->active == 1, "the running member is the active");
	CHECK(count_calls(&f, FO_SIM_CREATE, FO_SIM_ANY_DOMAIN) == 1, "created once");
	rebuilt = f.p->m[0].domid;
	CHECK(rebuilt != FO_DOMID_INVALID, "the re-created member was found");
	fo_sim_heartbeat(f.hv, f.b);
	fo_sim_heartbeat(f.hv, rebuilt);
	fo_sim_heartbeat(f.hv, rebuilt);
	CHECK(f.p->state == FO_PAIR_ARMED && fo_sim_state(f.hv, rebuilt) == FO_DOM_PAUSED,
	      "armed with the rebuilt standby paused: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);

	cfg.pairs[0].on_failover = FO_ON_FAILOVER_KEEP_PAUSED;
	fx_setup_cfg(&f, &cfg, FO_DOM_GONE, FO_DOM_RUNNING);
	CHECK(f.p->state == FO_PAIR_ARMING && strstr(f.p->reason, "to exist"), "keep-paused waits: %s", f.p->reason);
	CHECK(count_calls(&f, FO_SIM_CREATE, FO_SIM_ANY_DOMAIN) == 0, "nothing created");
	fx_free(&f);
}

static void test_reload(void)
{
	struct fx f;
	struct fo_config cfg;

	fx_armed(&f);
	sim_base_config(&cfg);
	cfg.pairs[0].timeout_ms = 200;
	cfg.n_pairs = 2;
	cfg.pairs[1] = cfg.pairs[0];
	snprintf(cfg.pairs[1].name, sizeof(cfg.pairs[1].name), "pump");
	snprintf(cfg.pairs[1].active, sizeof(cfg.pairs[1].active), "pump-a");
	snprintf(cfg.pairs[1].standby, sizeof(cfg.pairs[1].standby), "pump-b");
	fo_manager_reload(f.mgr, &cfg);
	f.p = fo_manager_find_pair(f.mgr, "brake");
	CHECK(f.p && f.p->state == FO_PAIR_ARMED, "kept its state");
	CHECK(fo_manager_find_pair(f.mgr, "pump") != NULL, "new pair added");
	advance(&f, 150);
	CHECK(f.p->state == FO_PAIR_ARMED, "new timeout applies (no switch at 150 ms)");
	advance(&f, 60);
	CHECK(f.p->state == FO_PAIR_SWITCHING, "switch at 200 ms");
	cfg.n_pairs = 1;
	cfg.pairs[0] = cfg.pairs[1];
	fo_manager_reload(f.mgr, &cfg);
	CHECK(fo_manager_pair_count(f.mgr) == 1 && fo_manager_find_pair(f.mgr, "brake") == NULL, "removed");
	fx_free(&f);
}

/* Random faults, requests and hostile input for many rounds: whatever
 * happens, the simulator's guard never sees both members running. */
static void test_invariant_random(void)
{
	unsigned seed = 12345;
	unsigned total_switches = 0;

	for (int round = 0; round < 200; round++) {
		struct fx f;
		char err[256];

		fx_armed(&f);
		for (int step = 0; step < 200; step++) {
			seed = seed * 1103515245u + 12345u;
			unsigned r = (seed >> 16) % 100;
			fo_domid_t d = (seed >> 8) & 1 ? f.a : f.b;
			if (r < 40)
				live(&f, 10);
			else if (r < 50)
				advance(&f, 30);
			else if (r < 55)
				fo_pair_request_switchover(f.p, err, sizeof(err));
			else if (r < 60)
				fo_sim_fail(f.hv, (enum fo_sim_op)((seed >> 4) % FO_SIM_OP_COUNT), d, -EIO, 1 + (seed % 3));
			else if (r < 63)
				fo_sim_set_state(f.hv, d, FO_DOM_RUNNING, (seed >> 3) & 1);
			else if (r < 65)
				fo_sim_set_state(f.hv, d, FO_DOM_CRASHED, true);
			else if (r < 70)
				fo_pair_arm(f.p);
			else if (r < 72)
				fo_pair_disarm(f.p);
			else if (r < 75)
				fo_pair_request_drill(f.p, (enum fo_drill_kind)((seed >> 5) % FO_DRILL_COUNT), err,
						      sizeof(err));
			else if (r < 80)
				fo_sim_delay(f.hv, FO_SIM_PAUSE, ((seed >> 7) % 20) * MS);
			else if (r < 85)
				fo_sim_vanish_on(f.hv, (enum fo_sim_op)((seed >> 6) % 4), d);
			else {
				struct fo_hb_page junk;
				memset(&junk, (int)(seed & 0xff), sizeof(junk));
				fo_sim_raw_page(f.hv, d, &junk);
			}
		}
		total_switches += (unsigned)f.p->stats.switches;
		CHECK(fo_sim_violations(f.hv) == 0, "round %d: both running %u times", round, fo_sim_violations(f.hv));
		fx_free(&f);
	}
	CHECK(total_switches > 100, "the random walk really switched (%u)", total_switches);
}

int main(void)
{
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_arm_first_boot);
	RUN(test_arm_standby_never_heartbeats);
	RUN(test_adopt_running_and_paused);
	RUN(test_adopt_late_channel);
	RUN(test_adopt_both_paused);
	RUN(test_adopt_member_missing_or_dead);
	RUN(test_heartbeat_keeps_armed);
	RUN(test_heartbeat_timeout_switch);
	RUN(test_crash_is_immediate);
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
	RUN(test_unhealthy);
	RUN(test_disarm_and_arm);
	RUN(test_drills);
	RUN(test_drill_that_causes_nothing);
	RUN(test_drill_command_not_written);
	RUN(test_policies);
	RUN(test_reload);
	RUN(test_restart_resumes_rebuild);
	RUN(test_reload_waits_for_in_flight);
	RUN(test_invariant_random);
	return check_summary("test_pair");
}
