/* SPDX-License-Identifier: MIT */
/*
 * test_pair_ops.c - what the operator, the guest's application and the
 * config do to a pair, on the simulated hypervisor with its virtual clock:
 * an unhealthy application, disarm and arm, drills, the failure policies,
 * reload and restart, and the invariant under a random walk. The state
 * machine's arming and switches: test_pair.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pair_fixture.h"

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

/* Every row of proto/drill_kinds.def, drilled on the simulator: injected
 * through its agent command or by failoverd, detected as the row's fault. */
static void test_drills(void)
{
	for (int kind = 0; kind < FO_DRILL_COUNT; kind++) {
		const struct fo_drill_kind_info *k = fo_drill_kind_info((enum fo_drill_kind)kind);
		struct fx f;
		char err[256];
		const struct fo_event *e;

		fx_armed(&f);
		uint64_t inject = fo_sim_now(f.hv);
		CHECK(fo_pair_request_drill(f.p, (enum fo_drill_kind)kind, err, sizeof(err)) == 0, "%s", err);
		if (k->agent_command)
			CHECK(strcmp(fo_sim_last_command(f.hv, f.a), k->agent_command) == 0, "command %s",
			      fo_sim_last_command(f.hv, f.a));
		/* Play the guest: what the agent would do on that command. */
		advance(&f, 5);
		if (k->agent_command && k->fault == FO_FAULT_CRASHED)
			fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
		if (k->agent_command && k->fault == FO_FAULT_UNHEALTHY)
			fo_sim_heartbeat_status(f.hv, f.a, FO_HB_APP_UNHEALTHY);
		/* The standby's agent heartbeats as soon as it runs. */
		for (int ms = 0; ms < 60 && fo_sim_state(f.hv, f.b) != FO_DOM_RUNNING; ms++)
			advance(&f, 1);
		advance(&f, 1);
		fo_sim_heartbeat(f.hv, f.b);
		e = last_event_of(&f, FO_EV_DRILL);
		CHECK(e != NULL, "drill %s recorded", k->name);
		if (!e) {
			fx_free(&f);
			continue;
		}
		CHECK(e->fault == k->fault, "drill %s fault %s, the table's %s", k->name, fo_fault_name(e->fault),
		      fo_fault_name(k->fault));
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

/* stand-down while a failed member is rebuilt is refused (the new domain
 * would appear, running, after the pauses); once the rebuild is over it
 * pauses the active and leaves the rebuilt standby paused. */
static void test_stand_down_waits_for_rebuild(void)
{
	struct fx f;
	struct fo_config cfg;
	char err[256] = "";
	fo_domid_t rebuilt;

	sim_base_config(&cfg);
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	fx_setup_cfg(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING);
	prove(&f, f.b);
	advance(&f, 60);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_REBUILDING, "rebuilding: %s", f.p->reason);
	CHECK(fo_pair_stand_down(f.p, err, sizeof(err)) == -EAGAIN && strstr(err, "rebuilding"), "refused: %s", err);
	CHECK(f.p->state == FO_PAIR_REBUILDING && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING,
	      "the rebuild goes on, the active still serves");
	rebuilt = f.p->m[0].domid;
	fo_sim_heartbeat(f.hv, rebuilt);
	fo_sim_heartbeat(f.hv, rebuilt);
	CHECK(f.p->state == FO_PAIR_ARMED, "rebuilt: %s", f.p->reason);
	CHECK(fo_pair_stand_down(f.p, err, sizeof(err)) == 0, "stand-down: %s", err);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED && fo_sim_state(f.hv, rebuilt) == FO_DOM_PAUSED &&
	      f.p->state == FO_PAIR_DISARMED, "both paused, DISARMED: %s", f.p->reason);
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
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
 * it re-creates it and arms, instead of waiting for ever (found by the chaos
 * campaign). Another policy waits for the domain, as before. */
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

/* An operator re-creates a pair whose members are both gone (the chaos
 * campaign's rebuild-fault: the new active destroyed while the failed
 * member was rebuilt) and arms it while ARMING waits for them to exist.
 * libxl builds the active paused and unpauses it last, which fires no
 * domain watch: the daemon still took it for paused and waited for the
 * standby for ever, the rebuild never resumed. Its heartbeat says it runs:
 * with on_failover=rebuild the missing standby is re-created then. */
static void test_created_active_heartbeat_resumes_rebuild(void)
{
	struct fo_config cfg;
	struct fx f;

	sim_base_config(&cfg);
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	fx_setup_cfg(&f, &cfg, FO_DOM_GONE, FO_DOM_GONE);
	CHECK(f.p->state == FO_PAIR_ARMING && strstr(f.p->reason, "to exist"), "both gone: waits (%s)", f.p->reason);
	f.a = fo_sim_add_domain(f.hv, "brake-a", FO_DOM_PAUSED);
	fo_sim_set_state(f.hv, f.a, FO_DOM_PAUSED, true); /* @introduceDomain, still being built */
	CHECK(f.p->state == FO_PAIR_ARMING, "a appeared paused: still arming (%s)", f.p->reason);
	CHECK(count_calls(&f, FO_SIM_CREATE, FO_SIM_ANY_DOMAIN) == 0, "no rebuild beside a paused member");
	fo_sim_set_state(f.hv, f.a, FO_DOM_RUNNING, false); /* libxl's unpause: no watch fires */
	fo_sim_heartbeat(f.hv, f.a);
	fo_sim_heartbeat(f.hv, f.a);
	CHECK(f.p->state == FO_PAIR_REBUILDING, "a's heartbeat resumed the rebuild: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(count_calls(&f, FO_SIM_CREATE, FO_SIM_ANY_DOMAIN) == 1, "b created once");
	CHECK(f.p->active == 0, "a is the active");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);

	/* Another policy: a's heartbeat is news too, but b is someone else's
	 * to create; the pair keeps waiting for it, once. */
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_KEEP_PAUSED;
	fx_setup_cfg(&f, &cfg, FO_DOM_GONE, FO_DOM_GONE);
	f.a = fo_sim_add_domain(f.hv, "brake-a", FO_DOM_PAUSED);
	fo_sim_set_state(f.hv, f.a, FO_DOM_PAUSED, true);
	fo_sim_set_state(f.hv, f.a, FO_DOM_RUNNING, false);
	fo_sim_heartbeat(f.hv, f.a);
	fo_sim_heartbeat(f.hv, f.a);
	CHECK(f.p->state == FO_PAIR_ARMING && strstr(f.p->reason, "brake-b"), "keep-paused waits for b: %s",
	      f.p->reason);
	CHECK(count_calls(&f, FO_SIM_CREATE, FO_SIM_ANY_DOMAIN) == 0, "nothing created");
	fx_free(&f);
}

/* The new active's first heartbeat comes after its grace (an agent slow to
 * notice the unpause, as under a loaded emulator in the chaos campaign):
 * DEGRADED at the grace, then, once it heartbeats, the pair goes on as
 * after a timely one: with on_failover=rebuild the failed member is
 * re-created. Before, the pair stayed DEGRADED with no standby for ever. */
static void test_late_first_heartbeat_resumes(void)
{
	struct fo_config cfg;
	const struct fo_event *e;
	struct fx f;

	sim_base_config(&cfg);
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	fx_setup_cfg(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING);
	prove(&f, f.b);
	advance(&f, 60); /* a's heartbeat timeout: switch to b */
	CHECK(f.p->state == FO_PAIR_SWITCHING, "switching: %s", fo_pair_state_name(f.p->state));
	advance(&f, 60); /* b says nothing within its 50 ms grace */
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "did not heartbeat"), "degraded: %s", f.p->reason);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->result == FO_RESULT_DEGRADED, "the switch's event says it missed the grace");
	CHECK(count_calls(&f, FO_SIM_CREATE, FO_SIM_ANY_DOMAIN) == 0, "no rebuild yet");
	fo_sim_heartbeat(f.hv, f.b); /* late, but alive */
	CHECK(f.p->state == FO_PAIR_REBUILDING, "resumed into the rebuild: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	CHECK(f.p->m[1].deadline_kind == FO_DL_HEARTBEAT, "the active is watched again");
	e = last_event_of(&f, FO_EV_INFO);
	CHECK(e && strstr(e->message, "heartbeated") && strstr(e->message, "resuming"), "said: %s", e ? e->message : "-");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);

	/* Another decision in between (an operator's disarm) ends the wait. */
	fx_setup_cfg(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING);
	prove(&f, f.b);
	advance(&f, 120);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "degraded: %s", f.p->reason);
	fo_pair_disarm(f.p);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(f.p->state == FO_PAIR_DISARMED, "a heartbeat after disarm changes nothing: %s", fo_pair_state_name(f.p->state));
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
	RUN(test_unhealthy);
	RUN(test_disarm_and_arm);
	RUN(test_drills);
	RUN(test_drill_that_causes_nothing);
	RUN(test_drill_command_not_written);
	RUN(test_policies);
	RUN(test_reload);
	RUN(test_late_first_heartbeat_resumes);
	RUN(test_restart_resumes_rebuild);
	RUN(test_created_active_heartbeat_resumes_rebuild);
	RUN(test_reload_waits_for_in_flight);
	RUN(test_stand_down_waits_for_rebuild);
	RUN(test_invariant_random);
	return check_summary("test_pair_ops");
}
