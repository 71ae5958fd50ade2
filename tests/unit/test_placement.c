/* SPDX-License-Identifier: MIT */
/*
 * test_placement.c - cpupools, member pins and dom0's vCPU on the simulated
 * hypervisor: set up at start, verified at arm time, drift found by the
 * periodic check and reported once (found vs expected), put back with
 * placement.enforce, and never in the way of arming or switching.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "pair_fixture.h"

/* brake-a on pCPU 2, brake-b on 3, both in null pool "rt" (2-3);
 * failoverd on dom0 CPU 1, that vCPU pinned to pCPU 1. */
static void rt_config(struct fo_config *cfg)
{
	struct fo_pin_config *pin = &cfg->pairs[0].pin;

	sim_base_config(cfg);
	cfg->daemon.cpu = 1;
	cfg->daemon.dom0_vcpu_pcpu = 1;
	cfg->placement.check_ms = 1000;
	cfg->n_cpupools = 1;
	snprintf(cfg->cpupools[0].name, sizeof(cfg->cpupools[0].name), "rt");
	cfg->cpupools[0].scheduler = FO_SCHED_NULL;
	cfg->cpupools[0].pcpus[0] = 2;
	cfg->cpupools[0].pcpus[1] = 3;
	cfg->cpupools[0].n_pcpus = 2;
	snprintf(pin->cpupool, sizeof(pin->cpupool), "rt");
	pin->active_pcpus[0] = 2;
	pin->n_active_pcpus = 1;
	pin->standby_pcpus[0] = 3;
	pin->n_standby_pcpus = 1;
}

/* A manager on the simulator, attached, nothing set up or started yet. */
static void fx_attached(struct fx *f, const struct fo_config *cfg)
{
	struct fo_hv_callbacks cb;

	memset(f, 0, sizeof(*f));
	f->cfg = *cfg;
	if (fo_manager_new(&f->cfg, &f->mgr) < 0 || (cb = fo_manager_hv_callbacks(f->mgr), fo_hv_sim_new(&cb, &f->hv)) < 0)
		abort();
	fo_manager_attach_hv(f->mgr, f->hv);
}

/* fx_armed_cfg, with the daemon's placement set-up between attach and start. */
static int fx_placed(struct fx *f, const struct fo_config *cfg, char *err, size_t errlen)
{
	int r;

	fx_attached(f, cfg);
	f->a = fo_sim_add_domain(f->hv, "brake-a", FO_DOM_RUNNING);
	f->b = fo_sim_add_domain(f->hv, "brake-b", FO_DOM_RUNNING);
	r = fo_manager_setup_placement(f->mgr, err, errlen);
	if (r < 0)
		return r;
	fo_manager_start(f->mgr);
	f->p = fo_manager_pair(f->mgr, 0);
	prove(f, f->a);
	prove(f, f->b);
	fo_sim_guard(f->hv, f->a, f->b);
	return 0;
}

static struct fo_hv_placement pl;

static const struct fo_hv_placement *placement_of(struct fx *f, fo_domid_t d)
{
	memset(&pl, 0, sizeof(pl));
	f->hv->ops->get_placement(f->hv, d, &pl);
	return &pl;
}

static bool mask_is(const struct fo_cpumask *m, const char *want)
{
	char buf[64];

	fo_cpumask_format(m, buf, sizeof(buf));
	return strcmp(buf, want) == 0;
}

static size_t count_placement_events(struct fx *f, enum fo_event_result result)
{
	const struct fo_event_ring *r = fo_manager_events(f->mgr);
	size_t k = 0;

	for (size_t i = 0; i < fo_event_ring_count(r); i++)
		k += fo_event_ring_get(r, i)->kind == FO_EV_PLACEMENT && fo_event_ring_get(r, i)->result == result;
	return k;
}

static void test_setup_and_arm(void)
{
	struct fo_config cfg;
	struct fo_hv_pool pool, pool0;
	char err[256];
	struct fx f;

	rt_config(&cfg);
	CHECK(fx_placed(&f, &cfg, err, sizeof(err)) == 0, "setup: %s", err);
	CHECK(f.p->state == FO_PAIR_ARMED, "state %s", fo_pair_state_name(f.p->state));
	CHECK(f.hv->ops->cpupool_get(f.hv, "rt", &pool) == 0, "pool rt exists");
	CHECK(strcmp(pool.sched, "null") == 0 && mask_is(&pool.cpus, "2-3"), "rt: %s", pool.sched);
	CHECK(pool.n_domains == 2, "both members in rt: %u", pool.n_domains);
	CHECK(f.hv->ops->cpupool_get(f.hv, "Pool-0", &pool0) == 0 && mask_is(&pool0.cpus, "0-1,4-7"),
	      "rt's pCPUs left Pool-0");
	CHECK(strcmp(placement_of(&f, f.a)->pool, "rt") == 0 && mask_is(&pl.hard[0], "2"), "brake-a placed");
	CHECK(strcmp(placement_of(&f, f.b)->pool, "rt") == 0 && mask_is(&pl.hard[0], "3"), "brake-b placed");
	placement_of(&f, 0);
	CHECK(mask_is(&pl.hard[1], "1"), "dom0 vCPU1 pinned to pCPU 1");
	CHECK(mask_is(&pl.hard[0], "0-7"), "dom0 vCPU0 left alone");
	/* Xen resets affinity on a pool move: move first, then pin. */
	CHECK(first_call(&f, FO_SIM_CPUPOOL_MOVE, f.a) >= 0 &&
	      first_call(&f, FO_SIM_CPUPOOL_MOVE, f.a) < first_call(&f, FO_SIM_SET_AFFINITY, f.a), "move, then pin");
	CHECK(f.p->placement_checked && !f.p->placement_drift, "verified at arm time: %s", f.p->placement);
	CHECK(count_events(&f, FO_EV_PLACEMENT) == 0, "nothing to report");
	fx_free(&f);

	/* A restart finds the pool it made: adopted, not made twice. */
	CHECK(fx_placed(&f, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(fo_manager_setup_placement(f.mgr, err, sizeof(err)) == 0, "second setup adopts: %s", err);
	fx_free(&f);
}

static void test_setup_refuses(void)
{
	struct fo_config cfg;
	char err[256];
	struct fx f;
	int r;

	/* A pCPU this host does not have. */
	rt_config(&cfg);
	cfg.cpupools[0].pcpus[1] = 9;
	r = fx_placed(&f, &cfg, err, sizeof(err));
	CHECK(r == -ENODEV, "returned %d", r);
	CHECK(strstr(err, "cpupools[0] (rt, null, pCPUs 2,9): pCPU 9 does not exist (this host has pCPUs 0-7)"),
	      "err: %s", err);
	fx_free(&f);

	/* A pool of that name that is not what the config says. */
	rt_config(&cfg);
	{
		fx_attached(&f, &cfg);
		CHECK(fo_sim_add_pool(f.hv, "rt", "credit2", (int[]){ 2, 3 }, 2) == 0, "pre-existing pool");
		r = fo_manager_setup_placement(f.mgr, err, sizeof(err));
		CHECK(r == -EEXIST, "returned %d", r);
		CHECK(strstr(err, "exists with scheduler credit2 and pCPUs 2-3"), "err: %s", err);
		fx_free(&f);
	}

	/* A pCPU held by somebody else's pool. */
	rt_config(&cfg);
	{
		fx_attached(&f, &cfg);
		fo_sim_add_pool(f.hv, "other", "credit", (int[]){ 3 }, 1);
		r = fo_manager_setup_placement(f.mgr, err, sizeof(err));
		CHECK(r == -EBUSY && strstr(err, "pCPU 3 is in cpupool other"), "%d: %s", r, err);
		fx_free(&f);
	}

	/* daemon.cpu names no dom0 vCPU (the simulated dom0 has two). */
	rt_config(&cfg);
	cfg.daemon.cpu = 3;
	r = fx_placed(&f, &cfg, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "daemon.cpu: dom0 has 2 vCPUs (0-1)"), "%d: %s", r, err);
	fx_free(&f);

	/* The backend's own failure is passed on with the pool named. */
	rt_config(&cfg);
	{
		fx_attached(&f, &cfg);
		fo_sim_fail(f.hv, FO_SIM_CPUPOOL_ENSURE, FO_SIM_ANY_DOMAIN, -EIO, 1);
		r = fo_manager_setup_placement(f.mgr, err, sizeof(err));
		CHECK(r == -EIO && strncmp(err, "cpupools[0] (rt,", 16) == 0, "%d: %s", r, err);
		fx_free(&f);
	}
}

static void test_drift_reported_once_and_cleared(void)
{
	struct fo_config cfg;
	const struct fo_event *e;
	char err[256];
	size_t pauses;
	struct fx f;

	rt_config(&cfg);
	CHECK(fx_placed(&f, &cfg, err, sizeof(err)) == 0, "%s", err);
	live(&f, 1500);
	CHECK(count_events(&f, FO_EV_PLACEMENT) == 0, "no drift while as configured");

	/* `xl vcpu-pin brake-a 0 3` behind our back. */
	fo_sim_pin(f.hv, f.a, 0, (int[]){ 3 }, 1);
	pauses = count_calls(&f, FO_SIM_PAUSE, FO_SIM_ANY_DOMAIN);
	live(&f, 1010);
	e = last_event_of(&f, FO_EV_PLACEMENT);
	CHECK(e && e->result == FO_RESULT_DEGRADED, "drift event within one check_ms");
	CHECK(e && strcmp(e->message, "drift: brake-a: vCPU0 hard affinity 3, expected 2") == 0, "message: %s",
	      e ? e->message : "(none)");
	CHECK(f.p->placement_drift && strstr(f.p->placement, "expected 2"), "status detail: %s", f.p->placement);
	/* Reported, not acted on: still armed, nothing paused, not re-pinned. */
	CHECK(f.p->state == FO_PAIR_ARMED, "state %s", fo_pair_state_name(f.p->state));
	CHECK(count_calls(&f, FO_SIM_PAUSE, FO_SIM_ANY_DOMAIN) == pauses, "placement never pauses");
	CHECK(mask_is(&placement_of(&f, f.a)->hard[0], "3"), "not re-pinned without enforce");
	live(&f, 3000);
	CHECK(count_placement_events(&f, FO_RESULT_DEGRADED) == 1, "reported once, not every second: %zu",
	      count_placement_events(&f, FO_RESULT_DEGRADED));

	/* A switchover still works with a drifted member, fenced. */
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "switchover: %s", err);
	live(&f, 200);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "switched");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");

	/* Put back by hand: one "as configured again". */
	fo_sim_pin(f.hv, f.a, 0, (int[]){ 2 }, 1);
	live(&f, 1010);
	e = last_event_of(&f, FO_EV_PLACEMENT);
	CHECK(e && e->result == FO_RESULT_OK && strcmp(e->message, "as configured again") == 0, "cleared: %s",
	      e ? e->message : "(none)");
	CHECK(!f.p->placement_drift && f.p->placement[0] == '\0', "status clear: %s", f.p->placement);
	fx_free(&f);
}

static void test_pool_and_host_drift(void)
{
	struct fo_config cfg;
	const struct fo_event *e;
	const char *detail;
	char err[256];
	struct fx f;

	rt_config(&cfg);
	CHECK(fx_placed(&f, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(fo_manager_host_placement(f.mgr, &detail), "host verified ok at start: %s", detail);

	/* `xl cpupool-migrate brake-b Pool-0`: Xen resets its pins too. */
	fo_sim_move_domain(f.hv, f.b, "Pool-0");
	live(&f, 1010);
	CHECK(strcmp(f.p->placement, "brake-b: in cpupool Pool-0, expected rt; brake-b: vCPU0 hard affinity 0-7, "
		     "expected 3") == 0, "detail: %s", f.p->placement);

	/* dom0's vCPU unpinned, a pCPU taken out of the pool. */
	fo_sim_pin(f.hv, 0, 1, (int[]){ 0, 1 }, 2);
	fo_sim_pool_remove_cpu(f.hv, 3);
	live(&f, 1010);
	CHECK(!fo_manager_host_placement(f.mgr, &detail), "host drift");
	CHECK(strcmp(detail, "cpupool rt: pCPUs 2, expected 2-3; dom0: vCPU1 hard affinity 0-1, expected 1") == 0,
	      "host detail: %s", detail);
	e = last_event_of(&f, FO_EV_PLACEMENT);
	CHECK(e && strcmp(e->pair, "-") == 0 && e->result == FO_RESULT_DEGRADED, "host event");
	fx_free(&f);
}

static void test_enforce_reapplies(void)
{
	struct fo_config cfg;
	const struct fo_event *e;
	const char *detail;
	char err[256];
	struct fx f;

	rt_config(&cfg);
	cfg.placement.enforce = true;
	CHECK(fx_placed(&f, &cfg, err, sizeof(err)) == 0, "%s", err);
	fo_sim_move_domain(f.hv, f.a, "Pool-0");
	fo_sim_pin(f.hv, 0, 1, (int[]){ 0 }, 1);
	live(&f, 1010);
	CHECK(strcmp(placement_of(&f, f.a)->pool, "rt") == 0 && mask_is(&pl.hard[0], "2"), "brake-a put back");
	CHECK(mask_is(&placement_of(&f, 0)->hard[1], "1"), "dom0 vCPU1 put back");
	CHECK(!f.p->placement_drift && f.p->placement_reapplied == 1, "reapplied %llu",
	      (unsigned long long)f.p->placement_reapplied);
	CHECK(fo_manager_host_placement(f.mgr, &detail), "host ok: %s", detail);
	CHECK(count_placement_events(&f, FO_RESULT_DEGRADED) == 0, "no drift left to report");
	e = last_event_of(&f, FO_EV_PLACEMENT);
	CHECK(e && e->result == FO_RESULT_OK && strstr(e->message, "re-applied"), "event: %s", e ? e->message : "-");

	/* What cannot be put back stays reported. */
	fo_sim_move_domain(f.hv, f.a, "Pool-0");
	fo_sim_fail(f.hv, FO_SIM_CPUPOOL_MOVE, f.a, -EIO, 1000);
	live(&f, 1010);
	CHECK(f.p->placement_drift && strstr(f.p->placement, "brake-a: in cpupool Pool-0, expected rt"), "%s",
	      f.p->placement);
	fx_free(&f);
}

static void test_failed_placement_does_not_block_arming(void)
{
	struct fo_config cfg;
	char err[256];
	struct fx f;

	rt_config(&cfg);
	{
		fx_attached(&f, &cfg);
		f.a = fo_sim_add_domain(f.hv, "brake-a", FO_DOM_RUNNING);
		f.b = fo_sim_add_domain(f.hv, "brake-b", FO_DOM_RUNNING);
		CHECK(fo_manager_setup_placement(f.mgr, err, sizeof(err)) == 0, "%s", err);
		fo_sim_fail(f.hv, FO_SIM_SET_AFFINITY, f.b, -EINVAL, 1);
		fo_manager_start(f.mgr);
		f.p = fo_manager_pair(f.mgr, 0);
		prove(&f, f.a);
		prove(&f, f.b);
	}
	CHECK(f.p->state == FO_PAIR_ARMED, "armed anyway: %s", fo_pair_state_name(f.p->state));
	CHECK(f.p->placement_drift && strstr(f.p->placement, "brake-b: vCPU0 hard affinity 0-7, expected 3"),
	      "drift seen at arm time: %s", f.p->placement);
	fx_free(&f);
}

static void test_check_interval(void)
{
	struct fo_config cfg;
	char err[256];
	size_t reads;
	struct fx f;

	/* check_ms 0: no periodic check, only arm time and domain changes. */
	rt_config(&cfg);
	cfg.placement.check_ms = 0;
	CHECK(fx_placed(&f, &cfg, err, sizeof(err)) == 0, "%s", err);
	fo_sim_clear_calls(f.hv);
	fo_sim_pin(f.hv, f.a, 0, (int[]){ 3 }, 1);
	live(&f, 3000);
	CHECK(count_calls(&f, FO_SIM_GET_PLACEMENT, FO_SIM_ANY_DOMAIN) == 0, "no reads without check_ms");
	CHECK(!f.p->placement_drift, "not noticed yet");
	fo_sim_set_state(f.hv, f.b, FO_DOM_PAUSED, true); /* @introduceDomain/@releaseDomain fired */
	CHECK(f.p->placement_drift, "noticed when domains changed");
	fx_free(&f);

	/* check_ms 1000: one read per member and one of dom0 per second. */
	rt_config(&cfg);
	CHECK(fx_placed(&f, &cfg, err, sizeof(err)) == 0, "%s", err);
	fo_sim_clear_calls(f.hv);
	live(&f, 5000);
	reads = count_calls(&f, FO_SIM_GET_PLACEMENT, FO_SIM_ANY_DOMAIN);
	CHECK(reads >= 12 && reads <= 18, "%zu reads in 5 s", reads);
	fx_free(&f);

	/* No placement configured: nothing is read, ever. */
	sim_base_config(&cfg);
	CHECK(fx_placed(&f, &cfg, err, sizeof(err)) == 0, "%s", err);
	fo_sim_clear_calls(f.hv);
	live(&f, 3000);
	CHECK(count_calls(&f, FO_SIM_GET_PLACEMENT, FO_SIM_ANY_DOMAIN) == 0, "no placement, no reads");
	CHECK(fo_manager_next_deadline(f.mgr) != 0, "heartbeat deadlines still set");
	fx_free(&f);
}

int main(void)
{
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_setup_and_arm);
	RUN(test_setup_refuses);
	RUN(test_drift_reported_once_and_cleared);
	RUN(test_pool_and_host_drift);
	RUN(test_enforce_reapplies);
	RUN(test_failed_placement_does_not_block_arming);
	RUN(test_check_interval);
	return check_summary("test_placement");
}
