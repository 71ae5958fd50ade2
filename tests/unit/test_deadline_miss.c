/* SPDX-License-Identifier: MIT */
/*
 * test_deadline_miss.c - health.fail_on_deadline_miss on the simulated
 * hypervisor: an active whose application (libfoguest) reports `count`
 * cycle overruns within `window_ms` is failed over (fault deadline-miss);
 * fewer, or spread wider, are not; off by default.
 */
#include "pair_fixture.h"
#include "check.h"

/* One beat of the active's application, sequence after the tracker's. */
static void app_beat(struct fx *f, uint64_t cycle, uint32_t misses)
{
	const struct fo_hb_tracker *t = &f->p->m[f->p->active].hb;
	struct fo_hb_page pg;

	memset(&pg, 0, sizeof(pg));
	pg.magic = FO_HB_MAGIC;
	pg.abi_version = FO_HB_ABI_VERSION;
	pg.period_ms = 10;
	pg.app_status = FO_HB_APP_HEALTHY;
	pg.sequence = t->sequence + 1;
	pg.boot_id = t->boot_id;
	pg.ext_magic = FO_HB_EXT_MAGIC;
	pg.ext_version = FO_HB_EXT_VERSION;
	pg.app_cycle = cycle;
	pg.deadline_misses = misses;
	fo_sim_raw_page(f->hv, f->p->m[f->p->active].domid, &pg);
}

/* `ms` of life, beating every 5 ms; a miss every `every_ms` (0: none). */
static void run(struct fx *f, uint64_t ms, uint64_t every_ms, uint32_t *misses, uint64_t *cycle)
{
	for (uint64_t t = 1; t <= ms / 5 && f->p->state == FO_PAIR_ARMED; t++) {
		if (every_ms && (t * 5) % every_ms == 0)
			++*misses;
		app_beat(f, ++*cycle, *misses);
		advance(f, 5);
	}
}

static void cfg_with(struct fo_config *cfg, unsigned count, unsigned window_ms)
{
	sim_base_config(cfg);
	cfg->pairs[0].deadline_miss_count = count;
	cfg->pairs[0].deadline_miss_window_ms = window_ms;
}

static void test_off_by_default(void)
{
	struct fo_config cfg;
	struct fx f;
	uint32_t misses = 0;
	uint64_t cycle = 0;

	cfg_with(&cfg, 0, 0);
	fx_armed_cfg(&f, &cfg, false);
	run(&f, 300, 5, &misses, &cycle); /* every cycle overruns */
	CHECK(f.p->state == FO_PAIR_ARMED, "no policy: still ARMED (%s)", f.p->reason);
	CHECK(f.p->m[0].hb.deadline_misses >= 50, "misses seen anyway: %llu",
	      (unsigned long long)f.p->m[0].hb.deadline_misses);
	CHECK(f.p->m[0].hb.app_cycle == cycle, "cycle %llu", (unsigned long long)f.p->m[0].hb.app_cycle);
	fx_free(&f);
}

static void test_spread_out(void)
{
	struct fo_config cfg;
	struct fx f;
	uint32_t misses = 0;
	uint64_t cycle = 0;

	cfg_with(&cfg, 3, 100);
	fx_armed_cfg(&f, &cfg, false);
	run(&f, 600, 60, &misses, &cycle); /* 3 misses need 120 ms > 100 */
	CHECK(f.p->state == FO_PAIR_ARMED, "misses 60 ms apart: still ARMED (%s)", f.p->reason);
	CHECK(misses >= 9, "misses sent: %u", misses);
	fx_free(&f);
}

static void test_fault(void)
{
	struct fo_config cfg;
	struct fx f;
	const struct fo_event *e;
	uint32_t misses = 0;
	uint64_t cycle = 0;

	cfg_with(&cfg, 3, 100);
	fx_armed_cfg(&f, &cfg, false);
	run(&f, 200, 0, &misses, &cycle);
	CHECK(f.p->state == FO_PAIR_ARMED, "healthy: ARMED");
	run(&f, 300, 30, &misses, &cycle); /* 3 within 60 ms */
	CHECK(f.p->state != FO_PAIR_ARMED || f.p->active == 1, "failed over: %s", fo_pair_state_name(f.p->state));
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->fault == FO_FAULT_DEADLINE_MISS, "fault %s", e ? fo_fault_name(e->fault) : "none");
	CHECK(e && strcmp(fo_fault_name(e->fault), "deadline-miss") == 0, "named");
	CHECK(misses == 3, "on the third miss: %u", misses);
	fx_free(&f);
}

int main(void)
{
	RUN(test_off_by_default);
	RUN(test_spread_out);
	RUN(test_fault);
	return check_summary("test_deadline_miss");
}
