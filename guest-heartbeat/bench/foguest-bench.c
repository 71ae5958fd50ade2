/* SPDX-License-Identifier: MIT */
/*
 * foguest-bench - what libfoguest's per-cycle calls cost in CPU time, on
 * any Linux machine (no Xen needed): the same code, on ordinary memory.
 *
 *   beat     the heartbeat page's writes, the release fence, the sequence
 *            (what foguest_beat does before its one system call, the
 *            event-channel notify, which this cannot measure without Xen)
 *   commit   fo_st_commit of 64 B, 1 KiB, 16 KiB (copy + CRC32C + 2 seqs)
 *   restore  fo_st_read of the same (copy + CRC32C, newest slot first)
 *   relay    fo_st_relay_pass with a new commit each time (dom0's cost per
 *            handed-over commit: read, verify, re-commit)
 * each with the hardware CRC32C (SSE4.2) where the CPU has it and with the
 * portable table. Prints one line per case: median and 99th percentile of
 * batches of 1000 calls, in ns per call.
 *
 *   foguest-bench [--iterations N]     (N batches per case, default 200)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi/fo_heartbeat.h"
#include "abi/fo_state.h"

#define BATCH 1000

static _Alignas(4096) unsigned char region[FO_ST_REGION_SIZE], region2[FO_ST_REGION_SIZE];
static unsigned char src[FO_ST_SLOT_SIZE], buf[FO_ST_SLOT_SIZE];
static _Alignas(4096) unsigned char hb[FO_HB_PAGE_SIZE];
static int use_table;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The checksum through the path chosen for this run. */
static uint32_t crc_of(uint32_t len, uint64_t cycle, uint64_t commit, const void *data)
{
	unsigned char rec[20];
	uint32_t c;
	unsigned i;

	if (!use_table)
		return fo_st_record_crc(len, cycle, commit, data);
	for (i = 0; i < 4; i++)
		rec[i] = (unsigned char)(len >> (8 * i));
	for (i = 0; i < 8; i++) {
		rec[4 + i] = (unsigned char)(cycle >> (8 * i));
		rec[12 + i] = (unsigned char)(commit >> (8 * i));
	}
	c = fo_crc32c_sw(~0u, rec, sizeof(rec));
	return ~fo_crc32c_sw(c, (const unsigned char *)data, len);
}

enum op { OP_BEAT, OP_COMMIT, OP_RESTORE, OP_RELAY, OP_CRC };

static void run(enum op op, size_t len, unsigned batches)
{
	static const char *const names[] = { "beat", "commit", "restore", "relay", "crc32c" };
	uint64_t *ns = calloc(batches, sizeof(*ns)), cycle = 0, sink = 0;
	struct fo_st_writer w = { 0 };
	struct fo_st_relay rs;
	struct fo_st_found f;
	volatile struct fo_hb_page *page = (volatile struct fo_hb_page *)hb;
	unsigned b, i;
	int copied;

	fo_st_init(region, 1);
	memset(region2, 0, sizeof(region2));
	fo_st_relay_attach(&rs, region2, 1, buf);
	for (i = 0; i < len; i++)
		src[i] = (unsigned char)i;
	fo_st_commit(region, &w, src, len ? len : 1, ++cycle);
	for (b = 0; b < batches; b++) {
		uint64_t t0 = now_ns();

		for (i = 0; i < BATCH; i++) {
			switch (op) {
			case OP_BEAT:
				page->app_status = FO_HB_APP_HEALTHY;
				page->flags = 0;
				page->ext_magic = FO_HB_EXT_MAGIC;
				page->ext_version = FO_HB_EXT_VERSION;
				page->app_cycle = ++cycle;
				page->app_flags = 0;
				page->deadline_misses = 0;
				page->restored_cycle = 0;
				page->restore_result = 0;
				atomic_thread_fence(memory_order_release);
				page->sequence = cycle;
				break;
			case OP_COMMIT:
				fo_st_commit(region, &w, src, len, ++cycle);
				break;
			case OP_RESTORE:
				sink += fo_st_read(region, buf, &f) == FO_ST_OK ? f.cycle : 0;
				break;
			case OP_RELAY:
				fo_st_commit(region, &w, src, len, ++cycle); /* the active's, not timed apart */
				fo_st_relay_pass(&rs, region, region2, cycle, buf, &f, &copied);
				sink += (uint64_t)copied;
				break;
			case OP_CRC:
				sink += crc_of((uint32_t)len, cycle, 1, src);
				break;
			}
		}
		ns[b] = now_ns() - t0;
	}
	qsort(ns, batches, sizeof(*ns), cmp_u64);
	printf("%-8s %6zu B  %-5s  median %8.1f ns  p99 %8.1f ns%s\n", names[op], len,
	       use_table ? "table" : (fo_crc32c_have_hw() ? "sse42" : "table"), ns[batches / 2] / (double)BATCH,
	       ns[batches * 99 / 100] / (double)BATCH, sink == 42 ? " " : "");
	free(ns);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1024, FO_ST_SLOT_SIZE };
	unsigned batches = 200;
	size_t i;
	int pass;

	if (argc == 3 && !strcmp(argv[1], "--iterations"))
		batches = (unsigned)strtoul(argv[2], NULL, 10);
	if (batches < 10)
		batches = 10;
	printf("foguest-bench: %u batches of %u calls per case; CPU has SSE4.2 crc32: %s\n", batches, BATCH,
	       fo_crc32c_have_hw() ? "yes" : "no");
	run(OP_BEAT, 0, batches);
	for (pass = 0; pass < 2; pass++) {
		/* pass 1: the table path, forced (what a CPU without the
		 * instruction, or another architecture, pays) */
		use_table = pass;
		for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++)
			run(OP_CRC, sizes[i], batches);
		if (pass)
			break; /* commit/restore/relay call fo_st_*: the detected path only */
		for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
			run(OP_COMMIT, sizes[i], batches);
			run(OP_RESTORE, sizes[i], batches);
			run(OP_RELAY, sizes[i], batches);
		}
	}
	return 0;
}
