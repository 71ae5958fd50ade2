/* SPDX-License-Identifier: MIT */
/*
 * test_kernel.c - kernel-armed mode (kmod-switch's ARM) on the simulated
 * hypervisor's simulated module: the hand-over of an ARMED pair, adopting
 * the module's switch as our own event, manual switchover and drills
 * (DISARM first), the races between the module's switch and ours, a stuck
 * sequence under the module, the backstop; "never both running"
 * (fo_sim_guard) on all. Restarts and orphans: test_kernel_restart.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel_fixture.h"

/* ---------------------------------------------------------------- tests */

static void test_handover_on_armed(void)
{
	struct fx f;

	fx_kernel_armed(&f);
	CHECK(f.p->state == FO_PAIR_ARMED, "state %s", fo_pair_state_name(f.p->state));
	CHECK(f.p->kernel_ok && f.p->kernel_armed, "ARMED pair handed to the module");
	CHECK(f.p->kernel_id == fo_pair_kernel_id("brake"), "pair id is the name's hash");
	CHECK(kernel_has(&f, f.a, f.b), "module has a -> b");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "standby paused before the hand-over");
	/* While the module has it, a heartbeating active keeps it there and
	 * nothing is switched or re-armed. */
	live(&f, 500);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->kernel_armed, "still armed in the kernel");
	CHECK(count_calls(&f, FO_SIM_KERNEL_ARM, FO_SIM_ANY_DOMAIN) == 0, "no re-ARM churn");
	CHECK(paused_or_unpaused_nothing(&f),
	      "no domain action while healthy");
	/* The module's guard: unpausing its standby is refused. */
	CHECK(f.hv->ops->unpause(f.hv, f.b) == -EBUSY, "unpause of an armed pair's member: EBUSY");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "refused unpause did nothing");
	/* Operator disarm gives it back. */
	fo_pair_disarm(f.p);
	CHECK(!f.p->kernel_armed && !fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), "disarm -> DISARM in the module");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && kernel_has(&f, f.a, f.b), "re-armed: in the module again");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* First boot (both running, both heartbeat), the module refuses the first
 * ARM with `err`: the pair is ARMED and stays the daemon's. */
static void fx_arm_refused(struct fx *f, int err)
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_new(f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, true);
	fo_sim_fail(f->hv, FO_SIM_KERNEL_ARM, FO_SIM_ANY_DOMAIN, err, 1);
	prove(f, f->a);
	prove(f, f->b);
	fo_sim_guard(f->hv, f->a, f->b);
}

static void test_arm_failure_retried(void)
{
	struct fx f;

	fx_arm_refused(&f, -EBUSY);
	CHECK(f.p->state == FO_PAIR_ARMED && !f.p->kernel_armed, "ARM refused: the pair stays ours");
	/* Ours means the daemon switches on heartbeat loss, as without module. */
	live(&f, 500);
	CHECK(!f.p->kernel_armed, "not retried before 1 s");
	live(&f, 600);
	CHECK(f.p->kernel_armed && kernel_has(&f, f.a, f.b), "retried on a heartbeat after 1 s");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* An ARM that finds no port to hand over (ENOENT: the active's agent is
 * not attached yet, as right after a restart) is retried at the active's
 * attach, not a second later: until the module has the pair only the
 * daemon's own wake-up path protects it. */
static void test_arm_at_attach(void)
{
	struct fx f;

	fx_arm_refused(&f, -ENOENT);
	CHECK(f.p->state == FO_PAIR_ARMED && !f.p->kernel_armed, "no port yet: the pair stays ours");
	fo_sim_agent_event(f.hv, f.a, 0, NULL);
	CHECK(f.p->kernel_armed && kernel_has(&f, f.a, f.b), "armed at the active's attach, not a second later");
	/* A standby's attach arms nothing, and an armed pair is not re-armed. */
	fo_sim_clear_calls(f.hv);
	fo_sim_agent_event(f.hv, f.b, 0, NULL);
	fo_sim_agent_event(f.hv, f.a, 0, NULL);
	CHECK(count_calls(&f, FO_SIM_KERNEL_ARM, FO_SIM_ANY_DOMAIN) == 0, "no ARM churn on attaches");
	fx_free(&f);

	/* Without an attach the one-second retry holds (no ARM per heartbeat
	 * while the port is missing). */
	fx_arm_refused(&f, -ENOENT);
	fo_sim_clear_calls(f.hv);
	live(&f, 500);
	CHECK(!f.p->kernel_armed && count_calls(&f, FO_SIM_KERNEL_ARM, FO_SIM_ANY_DOMAIN) == 0,
	      "no retry per heartbeat before the delay");
	live(&f, 600);
	CHECK(f.p->kernel_armed && kernel_has(&f, f.a, f.b), "retried on a heartbeat after the delay");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* `xl save -c` of the module's active while the daemon runs: @releaseDomain
 * of a suspend takes nothing from the module and switches nothing; the
 * resumed active heartbeats on, the module keeps the pair. */
static void test_kernel_suspend_not_a_death(void)
{
	struct fx f;

	fx_kernel_armed(&f);
	live(&f, 100);
	fo_sim_heartbeat(f.hv, f.a);
	fo_sim_clear_calls(f.hv);
	fo_sim_shutdown(f.hv, f.a, FO_SIM_SHUTDOWN_SUSPEND, true);
	advance(&f, 30); /* shorter than timeout_ms */
	fo_sim_resume(f.hv, f.a);
	live(&f, 200);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0 && kernel_has(&f, f.a, f.b),
	      "still ARMED in the module (%s: %s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 0 && count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 0,
	      "no switch");
	CHECK(!fo_pair_member_verdict(f.p, 0), "no verdict");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The module alone (the daemon stopped: its loop never turns, nobody hears
 * @releaseDomain) and a suspend beyond timeout_ms: the module's fenced
 * switch pauses the suspended active for real before it starts the standby,
 * so libxl's resume cannot run it beside the new active. */
static void test_kernel_suspend_beyond_timeout_alone(void)
{
	struct fx f;

	fx_kernel_armed(&f);
	live(&f, 100);
	fo_sim_heartbeat(f.hv, f.a);
	fo_sim_clear_calls(f.hv);
	fo_sim_shutdown(f.hv, f.a, FO_SIM_SHUTDOWN_SUSPEND, false);
	for (int ms = 0; ms < 100; ms++)
		fo_sim_advance(f.hv, MS);
	CHECK(count_calls(&f, FO_SIM_KERNEL_SWITCH, f.a) == 1 && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING,
	      "the module switched (b %s)", fo_dom_state_name(fo_sim_state(f.hv, f.b)));
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1 && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED,
	      "the module paused the suspended a (count %u, %s)", fo_sim_pause_count(f.hv, f.a),
	      fo_dom_state_name(fo_sim_state(f.hv, f.a)));
	fo_sim_resume(f.hv, f.a);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && !both_running(&f), "libxl's resume leaves a paused");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Heartbeat loss: the module switches at timeout_ms, the daemon does not
 * touch a domain, records the module's switch with its phases, and goes
 * on (first heartbeat, on_failover=rebuild, re-ARM with roles swapped). */
static void test_kernel_switch_adopted(void)
{
	struct fx f;
	struct fo_config cfg;
	const struct fo_event *e;
	uint64_t last;

	sim_base_config(&cfg);
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	fx_armed_cfg(&f, &cfg, true);
	live(&f, 100);
	fo_sim_heartbeat(f.hv, f.a);
	last = fo_sim_now(f.hv);
	fo_sim_clear_calls(f.hv);
	CHECK(kernel_has(&f, f.a, f.b), "armed in the module (%s, %s)", fo_pair_state_name(f.p->state), f.p->reason);
	advance(&f, 49);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "not before timeout");
	advance(&f, 1);
	/* a: paused by the module, then destroyed by on_failover=rebuild */
	CHECK(fo_dom_state_is_fenced(fo_sim_state(f.hv, f.a)) && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING,
	      "the module switched at timeout_ms (a %s, b %s, armed %d, calls %zu)", fo_dom_state_name(fo_sim_state(f.hv, f.a)),
	      fo_dom_state_name(fo_sim_state(f.hv, f.b)), fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN));
	CHECK(count_calls(&f, FO_SIM_KERNEL_SWITCH, f.a) == 1, "one kernel switch");
	CHECK(paused_or_unpaused_nothing(&f),
	      "the daemon paused/unpaused nothing itself");
	CHECK(f.p->state == FO_PAIR_SWITCHING && f.p->active == 1, "adopted: SWITCHING, b active (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(!f.p->kernel_armed && f.p->kernel_switches == 1, "module no longer owns it; one kernel switch counted");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "kernel") == 0, "event path kernel (%s)", e ? e->path : "-");
	CHECK(e && e->fault == FO_FAULT_HEARTBEAT_TIMEOUT && e->result == FO_RESULT_OK, "heartbeat-timeout, ok");
	CHECK(e && e->phase_ns[FO_PHASE_DETECTED] - last == 50 * MS, "kernel detection time kept (%llu)",
	      e ? (unsigned long long)(e->phase_ns[FO_PHASE_DETECTED] - last) : 0ull);
	for (int ph = FO_PHASE_FAULT; e && ph < FO_PHASE_UNPAUSE_DONE; ph++)
		CHECK(e->phase_ns[ph] && e->phase_ns[ph] <= e->phase_ns[ph + 1], "phase %d from the kernel, ordered", ph);
	CHECK(e && strcmp(e->from, "brake-a") == 0 && strcmp(e->to, "brake-b") == 0, "from a to b");
	CHECK(e && e->pending, "waits for the new active's first heartbeat");
	CHECK(strcmp(fo_sim_role(f.hv, f.b), "active") == 0, "roles published");
	advance(&f, 3);
	prove(&f, f.b);
	CHECK(e && !e->pending && e->phase_ns[FO_PHASE_FIRST_HEARTBEAT], "first heartbeat recorded");
	CHECK(e && fo_event_within_deadline(e), "within deadline");
	/* rebuild: old active destroyed and re-created; then ARMED, b -> a'. */
	CHECK(f.p->state == FO_PAIR_REBUILDING, "rebuilding (%s)", fo_pair_state_name(f.p->state));
	{
		fo_domid_t a2 = f.p->m[0].domid;
		CHECK(a2 != FO_DOMID_INVALID && a2 != f.a, "rebuilt member has a new domid");
		fo_sim_guard(f.hv, a2, f.b);
		prove(&f, a2);
		CHECK(f.p->state == FO_PAIR_ARMED, "ARMED again (%s)", fo_pair_state_name(f.p->state));
		CHECK(f.p->kernel_armed && kernel_has(&f, f.b, a2), "re-armed in the module with roles swapped");
	}
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "exactly one switchover");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The event is read late (loop busy): the daemon's backstop deadline finds
 * the module done (PAIRINFO: ENOENT), reads the event itself, adopts it. */
static void test_backstop_reads_late_event(void)
{
	struct fx f;

	fx_kernel_armed(&f);
	live(&f, 50);
	f.hold_delivery = true;
	fo_sim_clear_calls(f.hv);
	for (int i = 0; i < 200 && f.p->active == 0; i++)
		advance(&f, 1); /* timeout 50, backstop 50 + 25 + 10 */
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_kernel_queued(f.hv) == 0 && f.p->active == 1,
	      "the module switched; the backstop read its event");
	CHECK(f.p->state == FO_PAIR_SWITCHING, "adopted through the backstop (%s)", fo_pair_state_name(f.p->state));
	CHECK(fo_sim_kernel_queued(f.hv) == 0, "the backstop read the queue");
	CHECK(paused_or_unpaused_nothing(&f),
	      "no switch of our own");
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "one switchover event");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Manual switchover: DISARM first, then the fenced switch, then re-ARM
 * once the new active heartbeated; and back. */
static void test_manual_disarm_switch_rearm(void)
{
	struct fx f;
	char err[256] = "";
	const struct fo_event *e;

	fx_kernel_armed(&f);
	live(&f, 50);
	fo_sim_clear_calls(f.hv);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "switchover: %s", err);
	{
		long d = first_call(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN), pa = first_call(&f, FO_SIM_PAUSE, f.a),
		     ub = first_call(&f, FO_SIM_UNPAUSE, f.b);
		CHECK(d >= 0 && pa > d && ub > pa, "DISARM (%ld) before pause (%ld) before unpause (%ld)", d, pa, ub);
	}
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched");
	CHECK(!f.p->kernel_armed && !fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), "not armed while SWITCHING");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_MANUAL && strcmp(e->path, "sim") == 0, "our own switch");
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED && kernel_has(&f, f.b, f.a), "ARMED, re-armed b -> a");
	live(&f, 50);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "switch back: %s", err);
	prove(&f, f.a);
	CHECK(f.p->state == FO_PAIR_ARMED && kernel_has(&f, f.a, f.b), "back: ARMED, re-armed a -> b");
	/* Drill manual: the same path. */
	live(&f, 50);
	CHECK(fo_pair_request_drill(f.p, FO_DRILL_MANUAL, err, sizeof(err)) == 0, "drill: %s", err);
	e = last_event_of(&f, FO_EV_DRILL);
	CHECK(e && e->result == FO_RESULT_OK, "drill switched");
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED && kernel_has(&f, f.b, f.a), "after the drill: re-armed b -> a");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A drill of heartbeat loss with the module armed: the module switches, and
 * its event is the drill's. */
static void test_drill_heartbeat_loss_by_kernel(void)
{
	struct fx f;
	char err[256] = "";
	const struct fo_event *e;

	fx_kernel_armed(&f);
	live(&f, 50);
	fo_sim_clear_calls(f.hv);
	CHECK(fo_pair_request_drill(f.p, FO_DRILL_HEARTBEAT_LOSS, err, sizeof(err)) == 0, "drill: %s", err);
	for (int i = 0; i < 20; i++) { /* the sim agent obeys: a stops */
		beat_if_running(&f, f.b);
		advance(&f, 10);
	}
	e = last_event_of(&f, FO_EV_DRILL);
	CHECK(e && strcmp(e->path, "kernel") == 0 && e->result == FO_RESULT_OK, "drill event from the kernel switch");
	CHECK(e && e->phase_ns[FO_PHASE_FAULT] < e->phase_ns[FO_PHASE_DETECTED], "fault = injection time");
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "no unpause of our own");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A domain-state fault the daemon sees first: DISARM, then our switch. */
static void test_crash_disarm_then_switch(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_kernel_armed(&f);
	live(&f, 50);
	fo_sim_clear_calls(f.hv);
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	CHECK(first_call(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) >= 0 &&
		      first_call(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) < first_call(&f, FO_SIM_UNPAUSE, f.b),
	      "DISARM before unpause");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && f.p->active == 1, "switched at once");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_CRASHED && strcmp(e->path, "sim") == 0, "our own crash switch");
	advance(&f, 200);
	CHECK(count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 0, "the module did not fire after DISARM");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Unhealthy (seen on the polled page): DISARM, then our switch. */
static void test_unhealthy_while_kernel_armed(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_kernel_armed(&f);
	live(&f, 50);
	fo_sim_heartbeat_status(f.hv, f.a, FO_HB_APP_UNHEALTHY);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_UNHEALTHY && e->result == FO_RESULT_OK, "switched on unhealthy");
	CHECK(!fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), "disarmed in the module");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Race: the module's deadline expired and it is switching (held FIRING)
 * just as the active crashes: DISARM says EALREADY, the daemon does nothing
 * itself, and adopts the module's switch when it lands. */
static void test_race_kernel_firing(void)
{
	struct fx f;
	char err[256] = "";

	fx_kernel_armed(&f);
	live(&f, 50);
	fo_sim_kernel_hold(f.hv, true);
	advance(&f, 60); /* module deadline passed: FIRING, not switched yet */
	fo_sim_clear_calls(f.hv);
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "no unpause while the module owns the switch");
	CHECK(f.p->kernel_firing && f.p->state == FO_PAIR_ARMED, "waiting for the module (%s)", fo_pair_state_name(f.p->state));
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == -EALREADY, "manual switchover refused: %s", err);
	CHECK(strstr(err, "kernel module switched it first") != NULL, "says why: %s", err);
	advance(&f, 200); /* backstop fires meanwhile: still waits */
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "still nothing of our own");
	fo_sim_kernel_hold(f.hv, false);
	advance(&f, 1);
	CHECK(f.p->state == FO_PAIR_SWITCHING && f.p->active == 1, "adopted the module's switch (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && !both_running(&f), "b runs alone");
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "one switchover");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Race: the module switched and forgot the pair, its event not read yet,
 * when the daemon decides to switch (crash): DISARM says ENOENT, the daemon
 * reads the queue, adopts, and switches nothing itself. */
static void test_race_kernel_done_event_unread(void)
{
	struct fx f;

	fx_kernel_armed(&f);
	live(&f, 50);
	f.hold_delivery = true;
	/* The module fired at 40; our look at the module comes at 50. The
	 * loop does not run meanwhile: the fence audit would find b running
	 * and read the module's event first. */
	for (int i = 0; i < 45; i++)
		fo_sim_advance(f.hv, MS);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_kernel_queued(f.hv) == 1, "module switched, unread");
	fo_sim_clear_calls(f.hv);
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	CHECK(paused_or_unpaused_nothing(&f),
	      "no switch of our own");
	CHECK(f.p->state == FO_PAIR_SWITCHING && f.p->active == 1, "adopted (%s)", fo_pair_state_name(f.p->state));
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "one switchover");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Race: the module forgot the pair but its event is queued only after we
 * looked (the module's own window between the two): our switch goes the
 * same way and changes nothing; the late event is recognised as done. */
static void test_race_late_event_after_own_switch(void)
{
	struct fx f;
	struct fo_hv_kevent ev;

	fx_kernel_armed(&f);
	live(&f, 50);
	/* What the module does in that window: pair gone, event not queued. */
	CHECK(f.hv->ops->kernel_disarm(f.hv, f.p->kernel_id) == 0, "pair vanishes from the module");
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	CHECK(f.p->active == 1 && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "our switch");
	memset(&ev, 0, sizeof(ev));
	ev.pair_id = f.p->kernel_id;
	ev.active = f.a;
	ev.standby = f.b;
	ev.result = FO_HV_KSWITCH_OK;
	ev.detected_ns = fo_sim_now(f.hv);
	f.hv->cb.kernel_switched(f.hv->cb.ctx, &ev);
	CHECK(f.p->active == 1 && !both_running(&f), "late event changes nothing");
	CHECK(!f.p->m[0].usable, "the old active is not a usable standby");
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "one switchover");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A stale pair in the module (another pair id owns our domains): our ARM
 * is refused, and so is a switch: EBUSY, nothing paused, nothing lost. */
static void test_ebusy_foreign_owner(void)
{
	struct fx f;
	struct fo_config cfg;
	char err[256] = "";
	const struct fo_event *e;

	sim_base_config(&cfg);
	fx_new(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, true);
	prove(&f, f.a);
	prove(&f, f.b);
	fo_sim_guard(f.hv, f.a, f.b);
	fo_pair_disarm(f.p);
	CHECK(fo_sim_kernel_arm_external(f.hv, 4242, f.a, f.b, 60000) == 0, "someone else arms a -> b");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && !f.p->kernel_armed, "ours refused (EBUSY), the pair stays ARMED");
	fo_sim_clear_calls(f.hv);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) < 0, "switchover fails");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->result == FO_RESULT_ABORTED && strstr(e->message, "EBUSY"), "aborted: %s", e ? e->message : "-");
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.a) == 0, "the active was not paused for nothing");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "unchanged");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Kernel-armed as on Xen: while the module holds the active's port, its
 * page reaches us only by a poll every period. Returns the daemon's last
 * progress, read by a poll just now (the agent wrote it a period ago). */
static uint64_t fx_armed_polled(struct fx *f)
{
	fx_kernel_armed(f);
	fo_sim_kernel_poll_pages(f->hv, true);
	live(f, 50);
	CHECK(f->p->kernel_armed && f->p->m[0].hb.progressed && f->p->m[0].hb.last_progress_ns == fo_sim_now(f->hv),
	      "fixture: armed in the module, last beat read by the poll just now");
	return fo_sim_now(f->hv);
}

/* From the daemon's last progress `L` on, `ms` more of an agent whose app
 * loop is stuck: it notifies every period (3 ms after each poll) without
 * moving the sequence. Stops early once the pair switched. */
static void stuck_until(struct fx *f, uint64_t L, uint64_t ms)
{
	while (fo_sim_now(f->hv) - L < ms * MS && f->p->active == 0) {
		if ((fo_sim_now(f->hv) - L) / MS % 10 == 3)
			fo_sim_kernel_notify_only(f->hv, f->a);
		advance(f, 1);
	}
}

static int64_t call_at_ms(struct fx *f, enum fo_sim_op op, fo_domid_t d, uint64_t L)
{
	const struct fo_sim_call *c;
	long i = first_call(f, op, d);

	fo_sim_calls(f->hv, &c);
	return i < 0 ? -1 : (int64_t)((c[i].at_ns - L) / MS);
}

/* The agent notifies (the module is satisfied) but its sequence is stuck:
 * only the daemon sees it. First look at timeout + period (notifications
 * still coming), second one period later (more notifications, a page read
 * since, still no progress): DISARM, then our own fenced switch. */
static void test_stuck_sequence_detected(void)
{
	struct fx f;
	const struct fo_event *e;
	uint64_t L, dt;
	int64_t d, pa, ub;

	L = fx_armed_polled(&f);
	fo_sim_clear_calls(f.hv);
	stuck_until(&f, L, 300);
	dt = fo_sim_now(f.hv) - L;
	CHECK(f.p->active == 1 && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched by the daemon");
	CHECK(dt > 50 * MS, "not before timeout (%llu ms)", (unsigned long long)(dt / MS));
	CHECK(dt <= (50 + 2 * 10 + 2) * MS, "within timeout + 2 periods (+2 ms) of the last progress read (%llu ms)",
	      (unsigned long long)(dt / MS));
	d = call_at_ms(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN, L);
	pa = call_at_ms(&f, FO_SIM_PAUSE, f.a, L);
	ub = call_at_ms(&f, FO_SIM_UNPAUSE, f.b, L);
	CHECK(d >= 60, "nothing taken back at the first look (DISARM at %lld ms)", (long long)d);
	CHECK(first_call(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) >= 0 &&
	      first_call(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) < first_call(&f, FO_SIM_PAUSE, f.a) &&
	      first_call(&f, FO_SIM_PAUSE, f.a) < first_call(&f, FO_SIM_UNPAUSE, f.b),
	      "DISARM, then pause a, then unpause b (%lld %lld %lld ms)", (long long)d, (long long)pa, (long long)ub);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "old active kept paused");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_HEARTBEAT_STUCK && e->result == FO_RESULT_OK && strcmp(e->path, "sim") == 0,
	      "our own switch, fault heartbeat-stuck (%s)", e ? fo_fault_name(e->fault) : "-");
	CHECK(e && strcmp(fo_fault_name(e->fault), "heartbeat-stuck") == 0, "fault name");
	CHECK(e && strstr(e->message, "sequence stuck") != NULL, "says why: %s", e ? e->message : "-");
	CHECK(e && e->phase_ns[FO_PHASE_FAULT] == L + 50 * MS, "fault = timeout_ms without progress");
	CHECK(e && e->phase_ns[FO_PHASE_PAUSE_DONE] && e->phase_ns[FO_PHASE_PAUSE_DONE] <= e->phase_ns[FO_PHASE_UNPAUSE_ISSUED],
	      "old active confirmed paused before the standby was unpaused");
	CHECK(e && fo_event_within_deadline(e), "within the pair's budget");
	CHECK(count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 0, "the module did not switch");
	CHECK(!fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL) || kernel_has(&f, f.b, f.a),
	      "not armed with the old roles");
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "one switchover");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Why not at the first look: a live agent (progress within timeout_ms of
 * its last) whose page is read late (dom0 loaded, the poll more than a
 * period late) is still unread at timeout + period. The first look only
 * looks; the late read's progress ends it. Never switched. */
static void test_stuck_live_late_read_not_switched(void)
{
	struct fx f;
	uint64_t L;

	L = fx_armed_polled(&f); /* the agent wrote it at L - 10 */
	fo_sim_clear_calls(f.hv);
	stuck_until(&f, L, 39);                 /* a hiccup: notifies, no progress */
	fo_sim_heartbeat(f.hv, f.a);            /* L + 39: progress, 49 ms after the last */
	fo_sim_kernel_poll_late(f.hv, 23 * MS); /* due at L + 40, read at L + 63 */
	advance(&f, 22);
	CHECK(f.p->kstuck.looked, "the first look (L + 60) saw notifications without progress");
	CHECK(f.p->m[0].hb.last_progress_ns == L, "progress not read yet");
	advance(&f, 2);
	CHECK(f.p->m[0].hb.last_progress_ns == L + 63 * MS && !f.p->kstuck.looked, "late read: progress, look over");
	live(&f, 300);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0 && kernel_has(&f, f.a, f.b), "still armed, a active");
	CHECK(count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 0 && count_calls(&f, FO_SIM_PAUSE, FO_SIM_ANY_DOMAIN) == 0,
	      "never taken back, nothing paused");
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 0, "no switchover");
	fx_free(&f);
}

/* An agent stuck past timeout_ms whose progress comes back between the two
 * looks: not switched (at any moment in that period). */
static void test_stuck_recovers_between_looks(void)
{
	for (uint64_t at = 60; at < 70; at++) {
		struct fx f;
		uint64_t L = fx_armed_polled(&f);

		fo_sim_clear_calls(f.hv);
		stuck_until(&f, L, at);
		fo_sim_heartbeat(f.hv, f.a);
		stuck_until(&f, L, 75);
		CHECK(f.p->m[0].hb.last_progress_ns == L + 70 * MS, "progress read by the poll at L + 70 (at %llu)",
		      (unsigned long long)at);
		live(&f, 200);
		CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0 && kernel_has(&f, f.a, f.b),
		      "progress at L + %llu: still armed, a active", (unsigned long long)at);
		CHECK(count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 0 && count_events(&f, FO_EV_SWITCHOVER) == 0,
		      "progress at L + %llu: not taken back, not switched", (unsigned long long)at);
		fx_free(&f);
	}
}

/* Race: the stuck check decided, and the module fires while our DISARM is
 * under way (the agent went silent; the ioctl was slow). DISARM says ENOENT
 * (switched, event queued) or EALREADY (firing): the module's switch is
 * adopted, ours never runs. */
static void test_stuck_race_module_fires_during_disarm(void)
{
	for (int hold = 0; hold < 2; hold++) {
		struct fx f;
		const struct fo_event *e;
		uint64_t L = fx_armed_polled(&f);

		stuck_until(&f, L, 69); /* last notification at L + 63 */
		CHECK(f.p->kstuck.looked && f.p->active == 0, "first look done, second due at L + 70");
		fo_sim_clear_calls(f.hv);
		fo_sim_kernel_hold(f.hv, hold);
		fo_sim_delay(f.hv, FO_SIM_KERNEL_DISARM, 60 * MS); /* the module's deadline (L + 113) passes in it */
		advance(&f, 1);
		fo_sim_delay(f.hv, FO_SIM_KERNEL_DISARM, 0);
		CHECK(count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 1, "we tried to take it back (hold %d)", hold);
		if (hold) {
			CHECK(f.p->kernel_firing && f.p->state == FO_PAIR_ARMED && f.p->active == 0,
			      "EALREADY: waiting for the module's event (%s)", fo_pair_state_name(f.p->state));
			CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "nothing started meanwhile");
			advance(&f, 100);
			CHECK(count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 1, "no second DISARM while firing");
			fo_sim_kernel_hold(f.hv, false);
			advance(&f, 1);
		}
		CHECK(f.p->active == 1 && f.p->state == FO_PAIR_SWITCHING, "the module's switch adopted (hold %d, %s)", hold,
		      fo_pair_state_name(f.p->state));
		CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "b runs, a paused");
		CHECK(count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 1, "one switch, the module's");
		CHECK(paused_or_unpaused_nothing(&f),
		      "no pause/unpause of our own");
		e = last_event_of(&f, FO_EV_SWITCHOVER);
		CHECK(e && strcmp(e->path, "kernel") == 0 && count_events(&f, FO_EV_SWITCHOVER) == 1, "one switchover, path kernel");
		CHECK(fo_sim_violations(f.hv) == 0, "never both running");
		fx_free(&f);
	}
}

/* Notifications without progress, but no page of it reaches us after the
 * first look (the page poll is stuck): we cannot wait for a read forever;
 * half a timeout after the first look it is taken back as before. */
static void test_stuck_no_read_falls_back(void)
{
	struct fx f;
	uint64_t L = fx_armed_polled(&f), dt;
	const struct fo_event *e;

	fo_sim_kernel_poll_late(f.hv, 10000 * MS); /* the next poll, due at L + 10, never comes */
	stuck_until(&f, L, 300);
	dt = fo_sim_now(f.hv) - L;
	CHECK(f.p->active == 1 && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched by the daemon");
	CHECK(dt >= 85 * MS && dt <= 96 * MS, "at the first look + timeout/2 (%llu ms)", (unsigned long long)(dt / MS));
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_HEARTBEAT_STUCK && strcmp(e->path, "sim") == 0, "heartbeat-stuck, our switch");
	CHECK(count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 0, "the module did not switch");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A module whose timer never fires: the backstop waits one more timeout
 * past the module's deadline (it may merely be late), then takes the pair
 * back and switches. */
static void test_backstop_broken_module(void)
{
	struct fx f;
	const struct fo_event *e;
	uint64_t last;

	fx_kernel_armed(&f);
	live(&f, 50);
	fo_sim_heartbeat(f.hv, f.a);
	last = fo_sim_now(f.hv);
	fo_sim_kernel_stall(f.hv, true);
	for (int i = 0; i < 300 && f.p->active == 0; i++)
		advance(&f, 1);
	CHECK(f.p->active == 1 && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched by the daemon");
	CHECK(fo_sim_now(f.hv) - last >= 100 * MS && fo_sim_now(f.hv) - last <= 110 * MS,
	      "at the module's deadline + timeout (%llu ms after the last beat)",
	      (unsigned long long)((fo_sim_now(f.hv) - last) / MS));
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "sim") == 0, "our own switch");
	CHECK(!fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), "taken back (DISARM) first");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Restart with the pair armed in the module: adopted as is (no DISARM/ARM,
 * no domain action), roles from the module. */

/* A third party paused the active (`xl pause`): its heartbeat stops and
 * the module switches. The module runs fenced_sequence.c, which pauses only
 * what runs: the active keeps the third party's one pause and no second
 * one of the module's, so one `xl unpause` is all it takes to start it
 * again (before, the module paused it whatever its state: count 2). */
static void test_kernel_switch_paused_active_not_paused_twice(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_kernel_armed(&f);
	live(&f, 50);
	CHECK(fo_sim_external_pause(f.hv, f.a) == 0, "third-party pause of the active");
	for (int i = 0; i < 100 && fo_sim_state(f.hv, f.b) != FO_DOM_RUNNING; i++) {
		beat_if_running(&f, f.b);
		advance(&f, 10);
	}
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "kernel") == 0 && e->result == FO_RESULT_OK, "the module switched");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "standby runs");
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1, "old active paused once (the third party's), count %u",
	      fo_sim_pause_count(f.hv, f.a));
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* SPIN model, finding C: the module switched, its event is unread, and a
 * third party unpauses the old active: the domain change shows both
 * running. The never-both-running check must read the module's switch
 * first (and pause the old active), not pause the module's new active as
 * "the standby". */
static void test_both_running_reads_owner_first(void)
{
	struct fx f;

	fx_kernel_armed(&f);
	live(&f, 50);
	fo_sim_heartbeat(f.hv, f.a);
	/* The daemon's loop does not run (no audit, no device read) while
	 * the module's deadline passes and it switches. */
	for (int i = 0; i < 100 && fo_sim_state(f.hv, f.b) != FO_DOM_RUNNING; i++)
		fo_sim_advance(f.hv, MS);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && f.p->active == 0, "module switched, event unread (b %s, active %d, %s)",
	      fo_dom_state_name(fo_sim_state(f.hv, f.b)), f.p->active, fo_pair_state_name(f.p->state));
	CHECK(fo_sim_external_unpause(f.hv, f.a) == 0 && both_running(&f), "a third party starts the old active");
	fo_sim_clear_calls(f.hv);
	fo_pair_on_domains_changed(f.p);
	CHECK(f.p->active == 1, "the module's switch was read first: b is the active");
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.b) == 0, "the module's new active was not paused");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "b runs");
	prove(&f, f.b);
	advance(&f, 20); /* the audit: the failed member is paused again */
	CHECK(fo_sim_state(f.hv, f.a) != FO_DOM_RUNNING, "the failed old active is stopped again (%s)",
	      fo_dom_state_name(fo_sim_state(f.hv, f.a)));
	fx_free(&f);
}

int main(void)
{
	RUN(test_handover_on_armed);
	RUN(test_arm_failure_retried);
	RUN(test_arm_at_attach);
	RUN(test_kernel_switch_adopted);
	RUN(test_backstop_reads_late_event);
	RUN(test_manual_disarm_switch_rearm);
	RUN(test_drill_heartbeat_loss_by_kernel);
	RUN(test_kernel_switch_paused_active_not_paused_twice);
	RUN(test_crash_disarm_then_switch);
	RUN(test_unhealthy_while_kernel_armed);
	RUN(test_race_kernel_firing);
	RUN(test_race_kernel_done_event_unread);
	RUN(test_race_late_event_after_own_switch);
	RUN(test_ebusy_foreign_owner);
	RUN(test_stuck_sequence_detected);
	RUN(test_stuck_live_late_read_not_switched);
	RUN(test_kernel_suspend_not_a_death);
	RUN(test_kernel_suspend_beyond_timeout_alone);
	RUN(test_stuck_recovers_between_looks);
	RUN(test_stuck_race_module_fires_during_disarm);
	RUN(test_stuck_no_read_falls_back);
	RUN(test_backstop_broken_module);
	RUN(test_both_running_reads_owner_first);
	return check_summary("test_kernel");
}
