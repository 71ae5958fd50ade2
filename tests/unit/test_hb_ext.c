/* SPDX-License-Identifier: MIT */
/*
 * test_hb_ext.c - the heartbeat page's libfoguest extension as the monitor
 * reads it: old pages (no extension) unchanged, the application's cycle
 * and restore report taken, deadline misses counted into the window that
 * health.fail_on_deadline_miss looks at, hostile counters bounded.
 */
#include <string.h>

#include "core/monitor.h"
#include "check.h"

#define MS(x) ((uint64_t)(x) * 1000000ull)

static struct fo_hb_page page(uint64_t seq)
{
	struct fo_hb_page p;

	memset(&p, 0, sizeof(p));
	p.magic = FO_HB_MAGIC;
	p.abi_version = FO_HB_ABI_VERSION;
	p.period_ms = 5;
	p.sequence = seq;
	p.boot_id = 7;
	return p;
}

static struct fo_hb_page ext_page(uint64_t seq, uint64_t cycle, uint32_t misses)
{
	struct fo_hb_page p = page(seq);

	p.ext_magic = FO_HB_EXT_MAGIC;
	p.ext_version = FO_HB_EXT_VERSION;
	p.app_cycle = cycle;
	p.deadline_misses = misses;
	return p;
}

static void test_plain_agent(void)
{
	struct fo_hb_tracker t = { 0 };
	struct fo_hb_page p = page(1);
	const char *why;

	CHECK(fo_hb_observe(&t, &p, MS(1), &why) == FO_HB_BASELINE, "baseline");
	p = page(2);
	CHECK(fo_hb_observe(&t, &p, MS(2), &why) == FO_HB_PROGRESS, "progress");
	CHECK(!t.ext && t.deadline_misses == 0, "no extension");
	/* an unknown extension version is ignored, the page still counts */
	p = ext_page(3, 100, 5);
	p.ext_version = 99;
	CHECK(fo_hb_observe(&t, &p, MS(3), &why) == FO_HB_PROGRESS, "progress with unknown ext");
	CHECK(!t.ext, "unknown extension ignored");
}

static void test_cycle_and_restore(void)
{
	struct fo_hb_tracker t = { 0 };
	struct fo_hb_page p = ext_page(1, 10, 0);
	const char *why;

	fo_hb_observe(&t, &p, MS(1), &why);
	p = ext_page(2, 11, 0);
	p.restored_cycle = 9;
	p.restore_result = FO_HB_RESTORE_OK;
	CHECK(fo_hb_observe(&t, &p, MS(2), &why) == FO_HB_PROGRESS, "progress");
	CHECK(t.ext && t.app_cycle == 11 && t.restored_cycle == 9 && t.restore_result == FO_HB_RESTORE_OK,
	      "ext taken: cycle %llu", (unsigned long long)t.app_cycle);
}

static void test_miss_window(void)
{
	struct fo_hb_tracker t = { 0 };
	struct fo_hb_page p = ext_page(1, 1, 4); /* misses before we looked: baseline, not counted */
	const char *why;
	uint64_t seq = 1;

	fo_hb_observe(&t, &p, MS(0), &why);
	CHECK(t.deadline_misses == 0, "baseline misses not counted");
	/* one miss at 100 ms, one at 900 ms */
	p = ext_page(++seq, 2, 5);
	fo_hb_observe(&t, &p, MS(100), &why);
	p = ext_page(++seq, 3, 6);
	fo_hb_observe(&t, &p, MS(900), &why);
	CHECK(t.deadline_misses == 2, "two misses: %llu", (unsigned long long)t.deadline_misses);
	CHECK(fo_hb_misses_within(&t, 2, MS(1000), MS(950)), "2 within 1 s");
	CHECK(!fo_hb_misses_within(&t, 2, MS(500), MS(950)), "not 2 within 0.5 s");
	CHECK(!fo_hb_misses_within(&t, 3, MS(1000), MS(950)), "not 3");
	CHECK(!fo_hb_misses_within(&t, 2, MS(1000), MS(1200)), "the window moved on");
	/* a burst of three in one beat */
	p = ext_page(++seq, 4, 9);
	fo_hb_observe(&t, &p, MS(2000), &why);
	CHECK(fo_hb_misses_within(&t, 3, MS(1), MS(2000)), "burst of 3");
	/* the counter going back (new application instance): no misses added */
	p = ext_page(++seq, 5, 1);
	fo_hb_observe(&t, &p, MS(2001), &why);
	CHECK(t.deadline_misses == 5, "not counted backwards: %llu", (unsigned long long)t.deadline_misses);
	/* ...and counting resumes from the new base */
	p = ext_page(++seq, 6, 2);
	fo_hb_observe(&t, &p, MS(2002), &why);
	CHECK(t.deadline_misses == 6, "resumed: %llu", (unsigned long long)t.deadline_misses);
}

static void test_hostile_counter(void)
{
	struct fo_hb_tracker t = { 0 };
	struct fo_hb_page p = ext_page(1, 1, 0);
	const char *why;

	fo_hb_observe(&t, &p, MS(0), &why);
	p = ext_page(2, 2, 0xffffffffu);
	fo_hb_observe(&t, &p, MS(1), &why);
	CHECK(t.miss_n == FO_HB_MISS_RING, "ring bounded: %u", t.miss_n);
	CHECK(fo_hb_misses_within(&t, FO_HB_MISS_RING, MS(1), MS(1)), "a hostile count is a fault (its own)");
	CHECK(!fo_hb_misses_within(&t, FO_HB_MISS_RING + 1, MS(1), MS(1)), "count beyond the ring: never");
	CHECK(!fo_hb_misses_within(&t, 0, MS(1), MS(1)), "count 0: off");
	/* garbage pages never touch the extension */
	p = ext_page(3, 3, 0);
	p.magic = 0;
	CHECK(fo_hb_observe(&t, &p, MS(2), &why) == FO_HB_INVALID, "invalid");
	CHECK(t.app_cycle == 2, "cycle kept: %llu", (unsigned long long)t.app_cycle);
}

int main(void)
{
	RUN(test_plain_agent);
	RUN(test_cycle_and_restore);
	RUN(test_miss_window);
	RUN(test_hostile_counter);
	return check_summary("test_hb_ext");
}
