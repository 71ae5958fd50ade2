/* SPDX-License-Identifier: MIT */
/*
 * test_hvwatch.c - the hypervisor switch path (daemon.hypervisor_watch) on
 * the simulator's model of our patched Xen's failover watch: the daemon's
 * manager and pairs, hv/fowatch/owner.c translating, the watch at the
 * domctl level (hv/sim/fowatch.c). What the daemon must do with an owner
 * that switches without it: hand ARMED pairs over, adopt Xen's switches
 * (also those made while it was frozen or dead), DISARM before its own,
 * RELEASE alone (Xen hands its pause over; the daemon never waits on a
 * synchronous pause of a fenced active), never run two members. What it
 * does with issue #36's Xen (a RELEASE by another tool, a standby paused
 * while Xen quiesces, an active that does not stop, a stand-down) is
 * test_hvwatch_release.c's.
 */
#include "hvwatch_fixture.h"

/* ---------------------------------------------------------------- tests */

static void test_handed_to_xen(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->kernel_armed, "ARMED and handed over (%s)", f.p->reason);
	CHECK(strcmp(owner_of(&f), "hypervisor") == 0, "status owner: %s", owner_of(&f));
	CHECK(query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_ARMED && fw.standby == f.b, "Xen has a -> b");
	CHECK(fw.period_us == FO_FOWATCH_DEFAULT_POLL_US && fw.timeout_us == 50000 && fw.offset == 8,
	      "Xen reads the sequence every 1 ms with the pair's timeout (%u us, %u us, offset %u)", fw.period_us,
	      fw.timeout_us, fw.offset);
	CHECK(fw.gref == fo_sim_agent_gref(f.hv, f.a), "on the page the agent granted");
	CHECK(fw.flags == FO_FOWATCH_F_EVENT && fw.port == fo_sim_agent_port(f.hv, f.a),
	      "in event mode on the agent's port (flags %#x, port %u, the agent's %u)", fw.flags, fw.port,
	      fo_sim_agent_port(f.hv, f.a));
	hv_live(&f, f.a, 500);
	CHECK(f.p->state == FO_PAIR_ARMED && watch_armed(&f, f.a, f.b), "a heartbeating active keeps it armed");
	CHECK(paused_or_unpaused_nothing(&f), "no domain action while healthy");
	CHECK(f.hv->ops->unpause(f.hv, f.b) == -EBUSY, "Xen refuses to unpause the armed standby (0008)");
	fo_pair_disarm(f.p);
	CHECK(!f.p->kernel_armed && query(&f, f.a, &fw) == -ENOENT, "operator disarm: DISARMed in Xen");
	fo_pair_arm(f.p);
	CHECK(f.p->kernel_armed && watch_armed(&f, f.a, f.b), "re-armed in Xen");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Heartbeat loss: Xen switches; the daemon adopts it with Xen's stamps,
 * RELEASEs, and Xen's pause of the old active becomes a toolstack pause. */
static void test_xen_switch_adopted(void)
{
	struct fx f;
	const struct fo_event *e;
	uint64_t last;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 100);
	fo_sim_heartbeat(f.hv, f.a);
	last = fo_sim_now(f.hv);
	fo_sim_clear_calls(f.hv);
	/* Silence past the deadline (50 ms), then the new active beats
	 * within its grace (it runs only once Xen switched). */
	hv_live(&f, FO_DOMID_INVALID, 60);
	hv_live(&f, f.b, 40);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "Xen started the standby");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_pause_count(f.hv, f.a) >= 1 &&
		      !fo_sim_fowatch_fenced(f.hv, f.a),
	      "old active held by the toolstack pause RELEASE handed over (count %u, fenced %d)",
	      fo_sim_pause_count(f.hv, f.a), fo_sim_fowatch_fenced(f.hv, f.a));
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "the daemon unpaused nothing");
	CHECK(f.p->active == 1 && f.p->kernel_switches == 1 && !f.p->kernel_armed, "adopted: b active");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") == 0 && e->fault == FO_FAULT_HEARTBEAT_TIMEOUT &&
		      e->result == FO_RESULT_OK,
	      "event: path %s, fault %s, result %d", e ? e->path : "-", e ? fo_fault_name(e->fault) : "-", e ? (int)e->result : -1);
	/* Xen's stamps mapped onto our clock: in event mode, detection at
	 * the deadline itself (the simulator's clock maps exactly). */
	CHECK(e && e->phase_ns[FO_PHASE_DETECTED] == last + 50 * MS,
	      "detected %lld ms after the last beat", e ? (long long)(e->phase_ns[FO_PHASE_DETECTED] - last) / 1000000 : -1);
	for (int ph = FO_PHASE_DETECTED; e && ph < FO_PHASE_UNPAUSE_DONE; ph++)
		CHECK(e->phase_ns[ph] && e->phase_ns[ph] <= e->phase_ns[ph + 1], "phase %d stamped, ordered", ph);
	CHECK(e && e->phase_ns[FO_PHASE_UNPAUSE_DONE] <= fo_sim_now(f.hv), "no stamp in the future");
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_DEGRADED && !f.p->kernel_armed, "keep-paused: DEGRADED, nothing armed (%s)",
	      fo_pair_state_name(f.p->state));
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "exactly one switchover");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The point of the path: dom0 userspace frozen for the whole fault. */
static void test_frozen_daemon(void)
{
	struct fx f;
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	frozen = true;
	hv_live(&f, FO_DOMID_INVALID, 300);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "Xen switched with the daemon frozen");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_fowatch_fenced(f.hv, f.a) &&
		      fo_sim_pause_count(f.hv, f.a) == 0,
	      "the fenced active is reported paused (0011) while only Xen holds it");
	CHECK(f.p->active == 0, "the frozen daemon knows nothing yet");
	frozen = false;
	hv_advance(&f, 1);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(f.p->active == 1 && e && strcmp(e->path, "hypervisor") == 0, "adopted at the first loop turn");
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1 && !fo_sim_fowatch_fenced(f.hv, f.a), "RELEASE alone: Xen's pause became a toolstack pause");
	/* No synchronous pause of the fenced active: in FAILED_QUIESCE it
	 * would wait in Xen, under the domctl lock, for a vCPU that runs. */
	CHECK(count_calls(&f, FO_SIM_PAUSE, f.a) == 0, "the daemon issued no pause of the fenced active (%zu)",
	      count_calls(&f, FO_SIM_PAUSE, f.a));
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Our own switch (manual) DISARMs Xen's watch first; re-armed the other
 * way once ARMED again. */
static void test_manual_switch_disarms_first(void)
{
	struct fx f;
	char err[256] = "";
	long d, pa, ub;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	fo_sim_clear_calls(f.hv);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "switchover: %s", err);
	d = first_call(&f, FO_SIM_FOWATCH, f.a);
	pa = first_call(&f, FO_SIM_PAUSE, f.a);
	ub = first_call(&f, FO_SIM_UNPAUSE, f.b);
	CHECK(d >= 0 && pa > d && ub > pa, "DISARM (%ld) before pause (%ld) before unpause (%ld)", d, pa, ub);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched");
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED && watch_armed(&f, f.b, f.a), "ARMED, re-armed in Xen b -> a");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Race: Xen fired and the VIRQ is not read yet when the operator asks for
 * a switchover: DISARM finds the fence, the daemon adopts Xen's switch and
 * makes none of its own. */
static void test_fired_before_own_switch(void)
{
	struct fx f;
	char err[256] = "";
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	frozen = true;
	hv_live(&f, FO_DOMID_INVALID, 200);
	frozen = false;
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && f.p->active == 0, "Xen switched, VIRQ unread");
	fo_sim_clear_calls(f.hv);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == -EALREADY, "refused: %s", err);
	CHECK(strstr(err, "failover watch") != NULL, "says who switched: %s", err);
	CHECK(f.p->active == 1 && count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "adopted, no unpause of ours");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") == 0 && count_events(&f, FO_EV_SWITCHOVER) == 1,
	      "one switchover, Xen's");
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1 && !fo_sim_fowatch_fenced(f.hv, f.a), "RELEASE alone: Xen's pause became a toolstack pause");
	hv_advance(&f, 5); /* the VIRQ that was pending finds nothing more */
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "still one");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The fence audit runs while Xen's switch is unread: it sees the old
 * active paused (0011) and the standby running, and must not pause Xen's
 * new active; the VIRQ's event decides. */
static void test_audit_leaves_xen_switch(void)
{
	struct fx f;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	frozen = true;
	hv_live(&f, FO_DOMID_INVALID, 200);
	frozen = false;
	fo_sim_clear_calls(f.hv);
	fo_pair_audit(f.p); /* before the loop reads the VIRQ */
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && count_calls(&f, FO_SIM_PAUSE, f.b) == 0,
	      "the audit did not pause Xen's new active");
	CHECK(f.p->active == 1, "it read Xen's switch first");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Xen switches while no daemon runs; the restarted one adopts it from
 * QUERY: RELEASE (Xen hands its pause over), the event, no switch of its own. */
static void test_restart_adopts_fired(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw;
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	frozen = true; /* SIGKILLed: nothing runs */
	hv_live(&f, FO_DOMID_INVALID, 200);
	CHECK(query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_FIRED, "Xen fired with no daemon");
	fo_sim_clear_calls(f.hv);
	hv_restart(&f);
	hv_advance(&f, 1);
	CHECK(f.p->active == 1 && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "restart: b active (%s, %s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(query(&f, f.a, &fw) == -ENOENT && fo_sim_pause_count(f.hv, f.a) == 1, "RELEASE alone: Xen's pause became a toolstack pause");
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "no unpause of ours");
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") == 0, "the adopted switch is an event, path hypervisor");
	prove(&f, f.b);
	hv_live(&f, f.b, 200);
	CHECK(f.p->active == 1 && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "the failed member never runs again");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The same with on_failover=rebuild: the adopted switch is followed by the
 * rebuild of the failed member, not undone by arming's own decision. */
static void test_restart_adopts_fired_rebuild(void)
{
	struct fx f;
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_REBUILD);
	hv_live(&f, f.a, 50);
	frozen = true;
	hv_live(&f, FO_DOMID_INVALID, 200);
	hv_restart(&f);
	hv_advance(&f, 1);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") == 0 && f.p->active == 1, "adopted: an event, path hypervisor");
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "one switchover");
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_REBUILDING, "rebuilding the failed member (%s: %s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	CHECK(e && !e->pending, "the adopted switch completed with b's first heartbeat");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A restart with the watch armed and nothing wrong: adopted, no churn. */
static void test_restart_adopts_armed(void)
{
	struct fx f;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	fo_sim_clear_calls(f.hv);
	hv_restart(&f);
	hv_live(&f, f.a, 200);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->kernel_armed && watch_armed(&f, f.a, f.b), "adopted armed (%s)",
	      f.p->reason);
	CHECK(paused_or_unpaused_nothing(&f), "no domain action");
	/* Still Xen's: it switches on heartbeat loss. */
	hv_live(&f, FO_DOMID_INVALID, 100);
	CHECK(f.p->active == 1 && strcmp(last_event_of(&f, FO_EV_SWITCHOVER)->path, "hypervisor") == 0,
	      "Xen switches the adopted pair");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The active's agent restarts and grants a new page: Xen's watch pinned the
 * old one, which will never move again; the watch must follow, or Xen
 * fails over a live agent. */
static void test_agent_new_page_followed(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	fo_sim_agent_grant(f.hv, f.a, fo_sim_agent_gref(f.hv, f.a) + 100);
	hv_live(&f, f.a, 300);
	CHECK(f.p->active == 0 && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "no failover of a live agent");
	CHECK(query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_ARMED &&
		      fw.gref == fo_sim_agent_gref(f.hv, f.a) && fw.port == fo_sim_agent_port(f.hv, f.a) &&
		      (fw.flags & FO_FOWATCH_F_EVENT),
	      "the watch follows the new page and port (gref %u port %u, the agent's %u %u)", fw.gref, fw.port,
	      fo_sim_agent_gref(f.hv, f.a), fo_sim_agent_port(f.hv, f.a));
	hv_live(&f, FO_DOMID_INVALID, 100);
	CHECK(f.p->active == 1 && strcmp(last_event_of(&f, FO_EV_SWITCHOVER)->path, "hypervisor") == 0,
	      "and still switches when the new page stops");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* An armed active turns hostile: garbage over its whole page, every
 * period, sequence included. Xen's watch only asks whether the sequence
 * moved, so it hears progress and never fires; we reject every page. Only
 * the daemon can take the pair back (kernel_owner.c's stuck_check,
 * fed by Xen's last-progress stamp), DISARMing first, and the garbage
 * member must not be handed to Xen again. */
static void test_garbage_page_while_armed(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw;
	const struct fo_event *e;
	struct fo_hb_page junk;
	uint64_t x = 0x9e3779b97f4a7c15ull, t0;
	long d, ub;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	fo_sim_clear_calls(f.hv);
	t0 = fo_sim_now(f.hv);
	for (int i = 0; i < 40 && f.p->active == 0; i++) {
		uint64_t *w = (uint64_t *)&junk;

		for (size_t j = 0; j < sizeof(junk) / sizeof(*w); j++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			w[j] = x;
		}
		fo_sim_raw_page(f.hv, f.a, &junk);
		hv_advance(&f, 10);
		if (i == 7)
			CHECK(query(&f, f.a, &fw) == 0 && fw.state == FO_FOWATCH_STATE_ARMED,
			      "80 ms in, past the 50 ms timeout: Xen still hears progress and stays armed");
	}
	CHECK(f.p->m[0].hb.invalid > 0, "the daemon rejected the pages (%llu)", (unsigned long long)f.p->m[0].hb.invalid);
	CHECK(f.p->active == 1 && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED,
	      "the daemon switched to b within %llu ms", (unsigned long long)((fo_sim_now(f.hv) - t0) / MS));
	CHECK(fo_sim_now(f.hv) - t0 <= 50 * MS + 3 * 10 * MS,
	      "within timeout + three periods (%llu ms)", (unsigned long long)((fo_sim_now(f.hv) - t0) / MS));
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") != 0 && e->fault == FO_FAULT_HEARTBEAT_STUCK && e->result == FO_RESULT_OK,
	      "our own switch: path %s, fault %s", e ? e->path : "-", e ? fo_fault_name(e->fault) : "-");
	CHECK(e && strstr(e->message, "Xen's failover watch still heard the agent") != NULL,
	      "the event names the owner that still heard it: %s", e ? e->message : "-");
	d = first_call(&f, FO_SIM_FOWATCH, f.a);
	ub = first_call(&f, FO_SIM_UNPAUSE, f.b);
	CHECK(d >= 0 && ub > d, "DISARM (%ld) before the standby's unpause (%ld)", d, ub);
	CHECK(query(&f, f.a, &fw) == -ENOENT, "no watch left on the garbage member");
	prove(&f, f.b);
	hv_live(&f, f.b, 200);
	CHECK(query(&f, f.a, &fw) == -ENOENT && query(&f, f.b, &fw) == -ENOENT, "nothing armed with the failed member");
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "the garbage member stays paused");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The active crashes: Xen fires on the shutdown (no timeout wait). */
static void test_crash_switched_by_xen(void)
{
	struct fx f;
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	frozen = true;
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	hv_advance(&f, 1);
	frozen = false;
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "Xen switched on the crash at once");
	hv_advance(&f, 1);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") == 0 && e->fault == FO_FAULT_CRASHED,
	      "event: path %s, fault %s, result %d", e ? e->path : "-", e ? fo_fault_name(e->fault) : "-", e ? (int)e->result : -1);
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 1, "one switchover");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The active suspends (xl save -c): Xen's watch aborts (a suspend is no
 * death), the daemon does not switch on the suspend either; held beyond
 * timeout_ms, the daemon's own deadline switches, pausing the suspended
 * active first, and libxl's resume leaves it paused. */
static void test_suspend_left_to_the_daemon(void)
{
	struct fx f;
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	fo_sim_shutdown(f.hv, f.a, FO_SIM_SHUTDOWN_SUSPEND, true);
	hv_advance(&f, 5);
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 0 && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED,
	      "no switch on the suspend");
	CHECK(!fo_pair_member_verdict(f.p, 0), "no verdict");
	hv_live(&f, FO_DOMID_INVALID, 200);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && e && strcmp(e->path, "hypervisor") != 0 &&
		      e->fault == FO_FAULT_HEARTBEAT_TIMEOUT,
	      "the daemon's own switch on the timeout (path %s, fault %s)", e ? e->path : "-",
	      e ? fo_fault_name(e->fault) : "-");
	CHECK(fo_sim_pause_count(f.hv, f.a) == 1, "the suspended active paused (count %u)", fo_sim_pause_count(f.hv, f.a));
	fo_sim_resume(f.hv, f.a);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "the resume leaves it paused");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The active is destroyed: Xen tears its watch down without a switch; the
 * daemon switches itself. */
static void test_destroy_switched_by_daemon(void)
{
	struct fx f;
	const struct fo_event *e;

	hv_armed(&f, FO_ON_FAILOVER_KEEP_PAUSED);
	hv_live(&f, f.a, 50);
	fo_sim_set_state(f.hv, f.a, FO_DOM_GONE, true);
	hv_advance(&f, 2);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && e && strcmp(e->path, "hypervisor") != 0 &&
		      e->fault == FO_FAULT_GONE,
	      "the daemon's own switch (path %s, fault %s)", e ? e->path : "-", e ? fo_fault_name(e->fault) : "-");
	{
		struct fo_xen_failover_watch fw;

		CHECK(query(&f, f.b, &fw) == -ENOENT, "no watch left");
	}
	fx_free(&f);
}

/* A stock Xen: the probe says there is no watch. */
/* A series without event mode (0012) refuses the flag: the pair is armed
 * all the same, Xen polling every poll_us; detection lags the deadline by
 * up to that period, no more. */
static void test_xen_without_event_mode(void)
{
	struct fx f;
	struct fo_xen_failover_watch fw;
	const struct fo_event *e;
	uint64_t last;

	hv_armed_on(&f, FO_ON_FAILOVER_KEEP_PAUSED, true);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->kernel_armed && strcmp(owner_of(&f), "hypervisor") == 0,
	      "armed, owner %s", owner_of(&f));
	CHECK(query(&f, f.a, &fw) == 0 && fw.flags == 0 && fw.port == 0 && fw.period_us == FO_FOWATCH_DEFAULT_POLL_US,
	      "polling every %u us (flags %#x, port %u)", fw.period_us, fw.flags, fw.port);
	/* Not remembered: a refusal may be one port's (an agent that just
	 * rebound), so the next ARM asks again. */
	fo_sim_fowatch_no_event(f.hv, false);
	fo_pair_disarm(f.p);
	fo_pair_arm(f.p);
	CHECK(query(&f, f.a, &fw) == 0 && fw.flags == FO_FOWATCH_F_EVENT, "re-armed in event mode once Xen takes it");
	fo_sim_fowatch_no_event(f.hv, true);
	fo_pair_disarm(f.p);
	fo_pair_arm(f.p);
	CHECK(query(&f, f.a, &fw) == 0 && fw.flags == 0 && f.p->kernel_armed, "and polling again when refused");
	hv_live(&f, f.a, 95);
	fo_sim_heartbeat(f.hv, f.a);
	last = fo_sim_now(f.hv);
	hv_live(&f, FO_DOMID_INVALID, 60);
	hv_live(&f, f.b, 40);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && strcmp(e->path, "hypervisor") == 0 && e->result == FO_RESULT_OK, "switched by Xen");
	CHECK(e && e->phase_ns[FO_PHASE_DETECTED] >= last + 50 * MS &&
		      e->phase_ns[FO_PHASE_DETECTED] <= last + 50 * MS + FO_FOWATCH_DEFAULT_POLL_US * 1000ull,
	      "detected %lld us after the last beat: within a poll period of the deadline",
	      e ? (long long)(e->phase_ns[FO_PHASE_DETECTED] - last) / 1000 : -1);
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

static void test_stock_xen(void)
{
	struct fo_hv_callbacks cb = { 0 };
	struct fo_hv *hv;

	if (fo_hv_sim_new(&cb, &hv) < 0)
		abort();
	fo_sim_enable_fowatch(hv);
	fo_sim_fowatch_absent(hv, true);
	CHECK(fo_sim_enable_fowatch_owner(hv, 0) == -ENOSYS, "no watch: -ENOSYS");
	CHECK(hv->ops->kernel_arm == NULL && hv->ops->armed_owner == NULL, "the backend is unchanged");
	fo_hv_free(hv);
}

int main(void)
{
	RUN(test_handed_to_xen);
	RUN(test_xen_switch_adopted);
	RUN(test_frozen_daemon);
	RUN(test_manual_switch_disarms_first);
	RUN(test_fired_before_own_switch);
	RUN(test_audit_leaves_xen_switch);
	RUN(test_restart_adopts_fired);
	RUN(test_restart_adopts_fired_rebuild);
	RUN(test_restart_adopts_armed);
	RUN(test_agent_new_page_followed);
	RUN(test_garbage_page_while_armed);
	RUN(test_crash_switched_by_xen);
	RUN(test_suspend_left_to_the_daemon);
	RUN(test_destroy_switched_by_daemon);
	RUN(test_xen_without_event_mode);
	RUN(test_stock_xen);
	return check_summary("test_hvwatch");
}
