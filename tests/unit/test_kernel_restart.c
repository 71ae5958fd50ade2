/* SPDX-License-Identifier: MIT */
/*
 * test_kernel_restart.c - kernel-armed mode (kmod-switch's ARM) across a
 * daemon restart and the pair's life around the module: adopting what the
 * module holds (armed, firing, switched while we were away, stale), pairs
 * given back when a member dies, its agent moves or the config drops it,
 * orphans and foreign pairs under our ids, a module without LIST, and a
 * random walk; "never both running" (fo_sim_guard) on all. The hand-over,
 * switches and races: test_kernel.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel_fixture.h"

/* ---------------------------------------------------------------- tests */

static void test_restart_adopts_armed(void)
{
	struct fx f;
	char err[256] = "";

	fx_kernel_armed(&f);
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

/* Restarted while the module's active is suspended (a checkpoint): the pair
 * stays the module's (no DISARM), nothing is touched; resumed, it runs on. */
static void test_restart_active_suspended(void)
{
	struct fx f;

	fx_kernel_armed(&f);
	live(&f, 50);
	fo_sim_heartbeat(f.hv, f.a);
	fo_sim_shutdown(f.hv, f.a, FO_SIM_SHUTDOWN_SUSPEND, false);
	fo_sim_clear_calls(f.hv);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->kernel_armed && f.p->active == 0 && kernel_has(&f, f.a, f.b),
	      "adopted from the module with a active: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(count_calls(&f, FO_SIM_KERNEL_DISARM, FO_SIM_ANY_DOMAIN) == 0 && paused_or_unpaused_nothing(&f),
	      "no DISARM, no domain action");
	fo_sim_resume(f.hv, f.a);
	live(&f, 200);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0 && kernel_has(&f, f.a, f.b) &&
		      count_calls(&f, FO_SIM_KERNEL_SWITCH, FO_SIM_ANY_DOMAIN) == 0,
	      "armed on, no switch (%s)", f.p->reason);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

	fx_kernel_armed(&f);
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

		fx_kernel_armed(&f);
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


int main(void)
{
	RUN(test_restart_adopts_armed);
	RUN(test_restart_active_suspended);
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
	return check_summary("test_kernel_restart");
}
