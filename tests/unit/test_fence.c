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
#include <unistd.h>

#include "check.h"
#include "pair_fixture.h"

static void fx_armed(struct fx *f)
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_armed_cfg(f, &cfg, false);
}

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

int main(void)
{
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_sim_pause_count);
	RUN(test_keep_paused_holds_one_pause);
	RUN(test_paused_active_not_paused_again);
	RUN(test_give_back_confirms);
	RUN(test_arm_wait_paused_standby_not_paused_again);
	RUN(test_arm_wait_fence_fails);
	RUN(test_rebuild_timeout_fence_fails);
	RUN(test_both_running_fence_fails);
	return check_summary("test_fence");
}
