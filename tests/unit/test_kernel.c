/* SPDX-License-Identifier: MIT */
/*
 * test_kernel.c - kernel-armed mode (kmod-switch's ARM) on the simulated
 * hypervisor's simulated module: the hand-over of an ARMED pair, adopting
 * the module's switch as our own event, manual switchover and drills
 * (DISARM first), the races between the module's switch and ours, restart
 * adoption, and a random walk; "never both running" (fo_sim_guard) on all.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pair_fixture.h"

static void fx_armed(struct fx *f)
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_armed_cfg(f, &cfg, true);
}

/* A daemon restart: the old manager is gone without a word (SIGKILL), Xen
 * and the module keep their state, a new manager starts on them. */
static void restart(struct fx *f)
{
	struct fo_hv_callbacks cb;

	fo_manager_free(f->mgr);
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_sim_set_callbacks(f->hv, &cb);
	fo_manager_attach_hv(f->mgr, f->hv);
	fo_manager_start(f->mgr);
	f->p = fo_manager_pair(f->mgr, 0);
}

static bool kernel_has(struct fx *f, fo_domid_t active, fo_domid_t standby)
{
	fo_domid_t ka, ks;
	return fo_sim_kernel_armed(f->hv, f->p->kernel_id, &ka, &ks) && ka == active && ks == standby;
}

static bool both_running(struct fx *f)
{
	return fo_sim_state(f->hv, f->a) == FO_DOM_RUNNING && fo_sim_state(f->hv, f->b) == FO_DOM_RUNNING;
}

/* ---------------------------------------------------------------- tests */

static void test_handover_on_armed(void)
{
	struct fx f;

	fx_armed(&f);
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

	fx_armed(&f);
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

	fx_armed(&f);
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

	fx_armed(&f);
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

	fx_armed(&f);
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

	fx_armed(&f);
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

	fx_armed(&f);
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

	fx_armed(&f);
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

	fx_armed(&f);
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
	fx_armed(f);
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

	fx_armed(&f);
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
static void test_restart_adopts_armed(void)
{
	struct fx f;
	char err[256] = "";

	fx_armed(&f);
	live(&f, 50);
	/* Switch once so that the module's roles differ from the config's. */
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "%s", err);
	prove(&f, f.b);
	CHECK(kernel_has(&f, f.b, f.a), "module has b -> a");
	fo_sim_clear_calls(f.hv);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED, "adopted: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(f.p->kernel_armed && f.p->active == 1, "kernel-armed, b active");
	CHECK(strstr(f.p->reason, "kernel module") != NULL, "reason says so: %s", f.p->reason);
	CHECK(count_calls(&f, FO_SIM_KERNEL_ARM, FO_SIM_ANY_DOMAIN) == 0 &&
		      count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 0,
	      "no DISARM/ARM churn");
	CHECK(paused_or_unpaused_nothing(&f),
	      "no domain action");
	/* And it still protects: heartbeat loss of b, the module switches. */
	live(&f, 30);
	for (int i = 0; i < 10; i++) {
		beat_if_running(&f, f.a);
		advance(&f, 10);
	}
	CHECK(f.p->active == 0 && fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING, "module switched b -> a");
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "no unpause of our own");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Killed while armed; the active stops; the module switches while no
 * daemon runs; the restarted daemon reads that event before arming and
 * adopts: b active, a failed (not a standby), then re-armed by operator. */
static void test_restart_after_kernel_switch(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_armed(&f);
	live(&f, 50);
	/* "SIGKILL": from here nobody reads the device or runs deadlines. */
	f.hold_delivery = true;
	for (int i = 0; i < 10; i++)
		fo_sim_advance(f.hv, 10 * MS);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING,
	      "the module switched with no daemon");
	CHECK(fo_sim_kernel_queued(f.hv) == 1, "event queued for the next reader");
	fo_sim_clear_calls(f.hv);
	f.hold_delivery = false;
	restart(&f);
	CHECK(fo_sim_kernel_queued(f.hv) == 0, "read at start");
	CHECK(f.p->state == FO_PAIR_SWITCHING && f.p->active == 1, "adopted the switch: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "kernel") == 0 && e->pending, "recorded as a kernel switch");
	CHECK(paused_or_unpaused_nothing(&f),
	      "no switch of its own");
	advance(&f, 20); /* grace counts from the restart, not from the old switch */
	CHECK(f.p->state == FO_PAIR_SWITCHING, "grace not expired at once (%s)", fo_pair_state_name(f.p->state));
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_DEGRADED && !f.p->m[0].usable, "keep-paused: no standby (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(!fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), "not armed while DEGRADED");
	/* `arm` alone does not adopt a, which the module switched away from:
	 * a failed member is never trusted again. */
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "clear-failed brake-a"),
	      "a failed member is no standby: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(!fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), "nothing armed in the module");
	/* The operator repaired it and clears the verdict: a is adopted as
	 * standby, module gets b -> a. */
	{
		struct fo_pair *cp = NULL;
		CHECK(fo_manager_clear_failed(f.mgr, "brake-a", &cp) == 1 && cp == f.p, "verdict cleared");
	}
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && kernel_has(&f, f.b, f.a), "ARMED again, module b -> a (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(fo_sim_violations(f.hv) == 0 && !both_running(&f), "never both running");
	fx_free(&f);
}

/* Restart while the module is switching (FIRING): wait for its event. */
static void test_restart_while_firing(void)
{
	struct fx f;

	fx_armed(&f);
	live(&f, 50);
	f.hold_delivery = true;
	fo_sim_kernel_hold(f.hv, true);
	for (int i = 0; i < 6; i++)
		fo_sim_advance(f.hv, 10 * MS);
	f.hold_delivery = false;
	fo_sim_clear_calls(f.hv);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMING && f.p->kernel_firing, "waits for the module: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "no unpause");
	fo_sim_kernel_hold(f.hv, false);
	advance(&f, 1);
	CHECK(f.p->state == FO_PAIR_SWITCHING && f.p->active == 1, "adopted (%s)", fo_pair_state_name(f.p->state));
	CHECK(fo_sim_violations(f.hv) == 0 && !both_running(&f), "never both running");
	fx_free(&f);
}

/* Restart with a stale arming under our id (an old config's domains):
 * disarmed, then armed with ours. */
static void test_restart_stale_arming(void)
{
	struct fx f;
	fo_domid_t x, y;

	fx_armed(&f);
	fo_pair_disarm(f.p);
	x = fo_sim_add_domain(f.hv, "old-x", FO_DOM_RUNNING);
	y = fo_sim_add_domain(f.hv, "old-y", FO_DOM_PAUSED);
	CHECK(fo_sim_kernel_arm_external(f.hv, f.p->kernel_id, x, y, 60000) == 0, "stale arming");
	fo_sim_set_state(f.hv, f.b, FO_DOM_PAUSED, false);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED && kernel_has(&f, f.a, f.b), "ours armed, the stale one gone (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(fo_sim_state(f.hv, x) == FO_DOM_RUNNING && fo_sim_state(f.hv, y) == FO_DOM_PAUSED, "stale domains untouched");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The standby dies while the module has the pair: DEGRADED, and the module
 * must not switch to a dead standby: DISARMed. */
static void test_standby_dies_disarms(void)
{
	struct fx f;

	fx_armed(&f);
	live(&f, 50);
	fo_sim_set_state(f.hv, f.b, FO_DOM_CRASHED, true);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "DEGRADED");
	CHECK(!f.p->kernel_armed && !fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), "disarmed in the module");
	fx_free(&f);
}

/* The active's agent restarted with a new port while the module holds the
 * old one: re-ARM on the new port (else the module fails over a live
 * agent at its timeout). */
static void test_agent_new_port_rearms(void)
{
	struct fx f;

	fx_armed(&f);
	live(&f, 50);
	fo_sim_clear_calls(f.hv);
	fo_sim_agent_event(f.hv, f.a, -ESTALE, "agent's port changed (5 -> 7) while the kernel module holds the old one");
	{
		long d = first_call(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN), a = first_call(&f, FO_SIM_KERNEL_ARM, f.a);
		CHECK(d >= 0 && a > d, "DISARM (%ld) then ARM (%ld)", d, a);
	}
	CHECK(f.p->kernel_armed && kernel_has(&f, f.a, f.b) && f.p->state == FO_PAIR_ARMED, "armed again");
	/* The same for a standby's agent: nothing to do. */
	fo_sim_clear_calls(f.hv);
	fo_sim_agent_event(f.hv, f.b, -ESTALE, "x");
	CHECK(count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 0, "standby's agent: no re-arm");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Reload removing the pair: disarmed in the module. */
static void test_reload_removed_disarms(void)
{
	struct fx f;
	struct fo_config empty;
	uint32_t id;

	fx_armed(&f);
	id = f.p->kernel_id;
	sim_base_config(&empty);
	empty.n_pairs = 0;
	fo_manager_reload(f.mgr, &empty);
	CHECK(!fo_sim_kernel_armed(f.hv, id, NULL, NULL), "removed pair disarmed in the module");
	fx_free(&f);
}

static const struct fo_event *event_of_pair(struct fx *f, const char *pair)
{
	const struct fo_event_ring *r = fo_manager_events(f->mgr);
	const struct fo_event *found = NULL;

	for (size_t i = 0; i < fo_event_ring_count(r); i++)
		if (strcmp(fo_event_ring_get(r, i)->pair, pair) == 0)
			found = fo_event_ring_get(r, i);
	return found;
}

/* Killed while armed, restarted with the pair renamed (same members): the
 * old id is an orphan. It is disarmed before the renamed pair arms, nothing
 * is paused or unpaused for it, and the renamed pair ends up armed in the
 * module under its own id. */
static void test_restart_renamed_orphan_disarmed(void)
{
	struct fx f;
	uint32_t old_id;
	char name[32], dom[16];
	const struct fo_event *e;

	fx_armed(&f);
	live(&f, 50);
	old_id = f.p->kernel_id;
	CHECK(kernel_has(&f, f.a, f.b), "armed under the old name");
	snprintf(f.cfg.pairs[0].name, sizeof(f.cfg.pairs[0].name), "brake-renamed");
	fo_sim_clear_calls(f.hv);
	restart(&f);
	CHECK(!fo_sim_kernel_armed(f.hv, old_id, NULL, NULL), "orphan (old id %u) disarmed", old_id);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->kernel_armed && kernel_has(&f, f.a, f.b),
	      "renamed pair ARMED and armed in the module under its own id (%s: %s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	{
		long d = first_call(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN), a = first_call(&f, FO_SIM_KERNEL_ARM, f.a);
		CHECK(d >= 0 && a > d, "orphan DISARM (%ld) before the new ARM (%ld)", d, a);
	}
	CHECK(paused_or_unpaused_nothing(&f),
	      "no domain paused or unpaused");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "states unchanged");
	snprintf(name, sizeof(name), "kernel:%u", old_id);
	e = event_of_pair(&f, name);
	snprintf(dom, sizeof(dom), "dom%u", f.a);
	CHECK(e && e->kind == FO_EV_INFO && strstr(e->message, "no configured pair") && strstr(e->message, "disarmed") &&
		      strcmp(e->from, dom) == 0,
	      "event names the orphan: %s", e ? e->message : "-");
	CHECK(e && strstr(e->message, "running") && strstr(e->message, "paused"), "and its domains' states: %s",
	      e ? e->message : "-");
	/* Still protected: heartbeat loss, the module switches. */
	for (int i = 0; i < 10; i++)
		advance(&f, 10);
	CHECK(f.p->active == 1 && count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 1,
	      "the module switched the renamed pair");
	CHECK(fo_sim_violations(f.hv) == 0 && !both_running(&f), "never both running");
	fx_free(&f);
}

/* Restarted with the pair removed: the orphan is disarmed and its domains
 * are left exactly as they were (a running, b paused; none watched). */
static void test_restart_removed_orphan_disarmed(void)
{
	struct fx f;
	uint32_t id;

	fx_armed(&f);
	live(&f, 50);
	id = f.p->kernel_id;
	f.cfg.n_pairs = 0;
	fo_sim_clear_calls(f.hv);
	restart(&f);
	CHECK(!fo_sim_kernel_armed(f.hv, id, NULL, NULL), "orphan disarmed");
	CHECK(paused_or_unpaused_nothing(&f),
	      "no domain paused or unpaused");
	/* Nobody watches them now: time passes, nothing switches them. */
	fo_sim_advance(f.hv, 500 * MS);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "a still running, b still paused");
	CHECK(count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 0, "the module no longer switches them");
	fx_free(&f);
}

/* An orphan that is firing when we start cannot be disarmed: it is left to
 * finish, its event is reported as for no configured pair, nothing else. */
static void test_restart_orphan_firing_left(void)
{
	struct fx f;
	uint32_t id;

	fx_armed(&f);
	live(&f, 50);
	id = f.p->kernel_id;
	f.hold_delivery = true;
	fo_sim_kernel_hold(f.hv, true);
	for (int i = 0; i < 6; i++)
		fo_sim_advance(f.hv, 10 * MS);
	f.hold_delivery = false;
	f.cfg.n_pairs = 0;
	fo_sim_clear_calls(f.hv);
	restart(&f);
	CHECK(fo_sim_kernel_armed(f.hv, id, NULL, NULL), "firing orphan left to the module");
	CHECK(count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 0, "no DISARM tried");
	fo_sim_kernel_hold(f.hv, false);
	advance(&f, 1);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING,
	      "the module finished its switch");
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "no unpause of ours");
	CHECK(fo_sim_violations(f.hv) == 0 && !both_running(&f), "never both running");
	fx_free(&f);
}

/* Our id armed with other domains while our pair cannot arm (a member does
 * not exist): adoption never looked (it waits for the member), the sweep
 * after arming disarms it; the unrelated domains are left as they are. */
static void test_foreign_under_our_id_not_adopted(void)
{
	struct fx f;
	struct fo_config cfg;
	fo_domid_t x, y;
	const struct fo_event *e;

	sim_base_config(&cfg);
	fx_new(&f, &cfg, FO_DOM_RUNNING, FO_DOM_GONE, true);
	CHECK(f.p->state == FO_PAIR_ARMING, "waiting for brake-b (%s)", f.p->reason);
	x = fo_sim_add_domain(f.hv, "old-x", FO_DOM_RUNNING);
	y = fo_sim_add_domain(f.hv, "old-y", FO_DOM_PAUSED);
	CHECK(fo_sim_kernel_arm_external(f.hv, f.p->kernel_id, x, y, 60000) == 0, "stale arming under our id");
	fo_sim_clear_calls(f.hv);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMING, "still waiting for brake-b (%s)", f.p->reason);
	CHECK(!fo_sim_kernel_armed(f.hv, f.p->kernel_id, NULL, NULL), "stale arming under our id disarmed");
	e = last_event_of(&f, FO_EV_INFO);
	CHECK(e && strcmp(e->pair, "brake") == 0 && strstr(e->message, "did not arm") && strstr(e->message, "disarmed"),
	      "recorded on the pair: %s", e ? e->message : "-");
	CHECK(paused_or_unpaused_nothing(&f),
	      "no domain action");
	CHECK(fo_sim_state(f.hv, x) == FO_DOM_RUNNING && fo_sim_state(f.hv, y) == FO_DOM_PAUSED, "stale domains untouched");
	fx_free(&f);
}

/* Restart with a stale arming under our id: the adoption's event says so. */
static void test_restart_stale_arming_recorded(void)
{
	struct fx f;
	fo_domid_t x, y;
	const struct fo_event *e;
	const struct fo_event_ring *r;
	bool seen = false;

	fx_armed(&f);
	fo_pair_disarm(f.p);
	x = fo_sim_add_domain(f.hv, "old-x", FO_DOM_RUNNING);
	y = fo_sim_add_domain(f.hv, "old-y", FO_DOM_PAUSED);
	CHECK(fo_sim_kernel_arm_external(f.hv, f.p->kernel_id, x, y, 60000) == 0, "stale arming");
	restart(&f);
	r = fo_manager_events(f.mgr);
	for (size_t i = 0; i < fo_event_ring_count(r); i++) {
		e = fo_event_ring_get(r, i);
		seen = seen || (e->kind == FO_EV_INFO && strstr(e->message, "not its members") &&
				strstr(e->message, "re-armed"));
	}
	CHECK(seen, "event: other domains under our id, disarmed, re-armed");
	CHECK(f.p->state == FO_PAIR_ARMED && kernel_has(&f, f.a, f.b), "ours armed (%s)", fo_pair_state_name(f.p->state));
	fx_free(&f);
}

/* A module without LIST: nothing is swept (said in the log), nothing else
 * changes; the configured pair is adopted as before. */
static void test_module_without_list(void)
{
	struct fx f;

	fx_armed(&f);
	live(&f, 50);
	CHECK(fo_sim_kernel_arm_external(f.hv, 777, fo_sim_add_domain(f.hv, "o-x", FO_DOM_RUNNING),
					 fo_sim_add_domain(f.hv, "o-y", FO_DOM_PAUSED), 60000) == 0,
	      "an orphan");
	fo_sim_kernel_without_list(f.hv, true);
	fo_sim_clear_calls(f.hv);
	restart(&f);
	CHECK(fo_sim_kernel_armed(f.hv, 777, NULL, NULL), "orphan not found without LIST");
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->kernel_armed, "ours adopted as before");
	CHECK(count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 0, "no DISARM");
	fx_free(&f);
}

/* Random walk with the module: faults, heartbeats or not, delivery late or
 * not, the module held, restarts, operator actions; never both running, as
 * seen after every step and by the guard on every unpause. */
static void test_random_walk_kernel(void)
{
	unsigned seed = 777;
	unsigned kernel_switches = 0, own_switches = 0, both = 0;

	for (int round = 0; round < 150; round++) {
		struct fx f;
		char err[256];

		fx_armed(&f);
		for (int step = 0; step < 150; step++) {
			seed = seed * 1103515245u + 12345u;
			unsigned r = (seed >> 16) % 100;
			fo_domid_t d = (seed >> 8) & 1 ? f.a : f.b;
			if (r < 35)
				live(&f, 10);
			else if (r < 45)
				advance(&f, 30); /* silence: the module fires */
			else if (r < 50)
				fo_pair_request_switchover(f.p, err, sizeof(err));
			else if (r < 53)
				fo_sim_set_state(f.hv, d, FO_DOM_CRASHED, true);
			else if (r < 58)
				fo_pair_arm(f.p);
			else if (r < 60)
				fo_pair_disarm(f.p);
			else if (r < 65)
				fo_pair_request_drill(f.p, (enum fo_drill_kind)((seed >> 5) % FO_DRILL_COUNT), err,
						      sizeof(err));
			else if (r < 70)
				f.hold_delivery = !f.hold_delivery;
			else if (r < 75)
				fo_sim_kernel_hold(f.hv, (seed >> 3) & 1);
			else if (r < 78) {
				kernel_switches += (unsigned)f.p->kernel_switches;
				own_switches += (unsigned)f.p->stats.switches;
				restart(&f);
			} else if (r < 83)
				fo_sim_kernel_notify_only(f.hv, d);
			else if (r < 86)
				fo_sim_fail(f.hv, (enum fo_sim_op)((seed >> 4) % FO_SIM_OP_COUNT), d, -EIO, 1);
			else if (r < 90)
				fo_sim_heartbeat_status(f.hv, d, FO_HB_APP_UNHEALTHY);
			else
				advance(&f, 1);
			both += both_running(&f);
		}
		fo_sim_kernel_hold(f.hv, false);
		advance(&f, 5);
		kernel_switches += (unsigned)f.p->kernel_switches;
		own_switches += (unsigned)f.p->stats.switches;
		CHECK(fo_sim_violations(f.hv) == 0, "round %d: our or the module's unpause left both running %u times",
		      round, fo_sim_violations(f.hv));
		fx_free(&f);
	}
	CHECK(both == 0, "both running seen after %u steps", both);
	CHECK(kernel_switches > 20 && own_switches > 50, "the walk switched both ways (kernel %u, own %u)",
	      kernel_switches, own_switches);
}

/* A third party paused the active (`xl pause`): its heartbeat stops and
 * the module switches. The module runs fenced_switch.c, which pauses only
 * what runs: the active keeps the third party's one pause and no second
 * one of the module's, so one `xl unpause` is all it takes to start it
 * again (before, the module paused it whatever its state: count 2). */
static void test_kernel_switch_paused_active_not_paused_twice(void)
{
	struct fx f;
	const struct fo_event *e;

	fx_armed(&f);
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
	RUN(test_stuck_recovers_between_looks);
	RUN(test_stuck_race_module_fires_during_disarm);
	RUN(test_stuck_no_read_falls_back);
	RUN(test_backstop_broken_module);
	RUN(test_restart_adopts_armed);
	RUN(test_restart_after_kernel_switch);
	RUN(test_restart_while_firing);
	RUN(test_restart_stale_arming);
	RUN(test_standby_dies_disarms);
	RUN(test_agent_new_port_rearms);
	RUN(test_reload_removed_disarms);
	RUN(test_restart_renamed_orphan_disarmed);
	RUN(test_restart_removed_orphan_disarmed);
	RUN(test_restart_orphan_firing_left);
	RUN(test_foreign_under_our_id_not_adopted);
	RUN(test_restart_stale_arming_recorded);
	RUN(test_module_without_list);
	RUN(test_random_walk_kernel);
	return check_summary("test_kernel");
}
