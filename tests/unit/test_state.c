/* SPDX-License-Identifier: MIT */
/*
 * test_state.c - the state-handover region (guest-heartbeat/abi/fo_state.h):
 * round trips at every size, torn writes, sequence wrap, checksums, hostile
 * lengths and headers, a writer racing a reader, and the relay never
 * handing anything invalid (or older) to the standby.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../guest-heartbeat/abi/fo_state.h"
#include "check.h"

static _Alignas(4096) unsigned char region[FO_ST_REGION_SIZE];
static _Alignas(4096) unsigned char region2[FO_ST_REGION_SIZE];
static unsigned char buf[FO_ST_SLOT_SIZE];
static unsigned char tmp[FO_ST_SLOT_SIZE];

static struct fo_st_header *hdr(void *r)
{
	return (struct fo_st_header *)r;
}

static void fill(unsigned char *p, size_t len, uint64_t cycle)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(cycle * 31u + i * 7u);
}

static bool filled(const unsigned char *p, size_t len, uint64_t cycle)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(cycle * 31u + i * 7u))
			return false;
	return true;
}

static void test_crc32c(void)
{
	/* the standard check value of CRC-32C */
	CHECK(fo_crc32c("123456789", 9) == 0xe3069283u, "crc32c(123456789) = %08x", fo_crc32c("123456789", 9));
	CHECK(fo_crc32c("", 0) == 0, "crc32c of nothing");
	/* the table and (where there is one) the instruction agree, at every
	 * length and alignment */
	{
		static unsigned char b[300];
		size_t len, off;

		for (len = 0; len < sizeof(b); len++)
			b[len] = (unsigned char)(len * 131u + 7u);
		for (off = 0; off < 8; off++)
			for (len = 0; len + off <= sizeof(b); len += 13)
				CHECK(fo_crc32c_update(~0u, b + off, len) == fo_crc32c_sw(~0u, b + off, len),
				      "crc at %zu+%zu", off, len);
		CHECK(~fo_crc32c_sw(~0u, (const unsigned char *)"123456789", 9) == 0xe3069283u, "table path");
	}
}

static void test_empty(void)
{
	struct fo_st_found f;

	memset(region, 0, sizeof(region));
	CHECK(fo_st_read(region, buf, &f) == FO_ST_NONE, "zeroed region is no state");
	fo_st_init(region, 42);
	CHECK(fo_st_read(region, buf, &f) == FO_ST_NONE, "fresh region is no state");
	CHECK(hdr(region)->writer_id == 42, "writer id");
}

static void test_roundtrip_sizes(void)
{
	static const size_t sizes[] = { 1, 64, 1024, 4095, 4096, 4097, FO_ST_SLOT_SIZE };
	unsigned char src[FO_ST_SLOT_SIZE];
	struct fo_st_writer w = { 0 };
	struct fo_st_found f;
	size_t i;

	fo_st_init(region, 1);
	for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		fill(src, sizes[i], 100 + i);
		CHECK(fo_st_commit(region, &w, src, sizes[i], 100 + i) == 0, "commit %zu", sizes[i]);
		memset(buf, 0, sizeof(buf));
		CHECK(fo_st_read(region, buf, &f) == FO_ST_OK, "read %zu", sizes[i]);
		CHECK(f.len == sizes[i] && f.cycle == 100 + i && f.commit == i + 1, "record %zu: len %u cycle %llu",
		      sizes[i], f.len, (unsigned long long)f.cycle);
		CHECK(filled(buf, sizes[i], 100 + i), "data %zu", sizes[i]);
		CHECK(f.rejected == 0, "nothing rejected");
	}
	/* too big or empty: refused, the last commit stays */
	CHECK(fo_st_commit(region, &w, src, FO_ST_SLOT_SIZE + 1, 999) < 0, "oversized commit refused");
	CHECK(fo_st_commit(region, &w, src, 0, 999) < 0, "empty commit refused");
	CHECK(fo_st_read(region, buf, &f) == FO_ST_OK && f.cycle == 106, "last good commit still there");
}

static void test_newest_wins(void)
{
	unsigned char src[64];
	struct fo_st_writer w = { 0 };
	struct fo_st_found f;

	fo_st_init(region, 1);
	fill(src, 64, 1);
	fo_st_commit(region, &w, src, 64, 1);
	fill(src, 64, 2);
	fo_st_commit(region, &w, src, 64, 2);
	CHECK(fo_st_read(region, buf, &f) == FO_ST_OK && f.cycle == 2 && f.slot == 1, "newest in slot 1");
	fill(src, 64, 3);
	fo_st_commit(region, &w, src, 64, 3);
	CHECK(fo_st_read(region, buf, &f) == FO_ST_OK && f.cycle == 3 && f.slot == 0, "newest in slot 0");
	CHECK(filled(buf, 64, 3), "data of the newest");
}

/* A writer stopped half-way (its guest was paused or crashed mid-commit). */
static void test_torn_write(void)
{
	unsigned char src[1024];
	struct fo_st_writer w = { 0 };
	struct fo_st_found f;
	struct fo_st_header *h = hdr(region);

	fo_st_init(region, 1);
	fill(src, sizeof(src), 10);
	fo_st_commit(region, &w, src, sizeof(src), 10);
	/* commit 2 begun: seq odd, half the data new, record still the old one */
	h->slot[1].seq |= 1u;
	fill(region + fo_st_slot_offset(1), 512, 11);
	CHECK(fo_st_read(region, buf, &f) == FO_ST_OK && f.cycle == 10, "torn slot skipped, previous commit read");
	CHECK(filled(buf, sizeof(src), 10), "previous data intact");
	/* the writer finished the data but "crashed" before the record/crc: a
	 * hostile or broken writer that made seq even anyway */
	h->slot[1].seq += 1u;
	h->slot[1].len = 512;
	h->slot[1].cycle = 11;
	h->slot[1].commit = 2;
	h->slot[1].crc = 0x12345678u;
	CHECK(fo_st_read(region, buf, &f) == FO_ST_OK && f.cycle == 10, "bad crc slot skipped");
	CHECK(f.rejected == 1 && f.why && !strcmp(f.why, "checksum mismatch"), "reported: %s", f.why ? f.why : "-");
	/* both slots being written: nothing to give now, try again later */
	h->slot[0].seq |= 1u;
	h->slot[1].seq |= 1u;
	CHECK(fo_st_read(region, buf, &f) == FO_ST_TORN, "both torn");
}

static void test_seq_wrap(void)
{
	unsigned char src[64];
	struct fo_st_writer w = { 0 };
	struct fo_st_found f;
	struct fo_st_header *h = hdr(region);
	int i;

	fo_st_init(region, 1);
	h->slot[0].seq = 0xfffffffeu;
	h->slot[1].seq = 0xffffffffu; /* a stray odd value: the writer steps past it */
	for (i = 1; i <= 6; i++) {
		fill(src, 64, (uint64_t)i);
		CHECK(fo_st_commit(region, &w, src, 64, (uint64_t)i) == 0, "commit %d", i);
		CHECK(fo_st_read(region, buf, &f) == FO_ST_OK && f.cycle == (uint64_t)i && filled(buf, 64, (uint64_t)i),
		      "read after wrap %d: cycle %llu", i, (unsigned long long)f.cycle);
		CHECK(i < 2 || ((h->slot[0].seq & 1u) == 0 && (h->slot[1].seq & 1u) == 0), "seqs even after commit %d", i);
	}
	/* the writer's commit counter decides, not the slot or the cycle */
	h->slot[1].commit = 0; /* the newest (slot 1): its crc fails too */
	CHECK(fo_st_read(region, buf, &f) == FO_ST_OK && f.cycle == 5, "the other slot: cycle %llu",
	      (unsigned long long)f.cycle);
}

static void test_hostile_lengths(void)
{
	static const uint32_t lens[] = { 0, FO_ST_SLOT_SIZE + 1, 0x7fffffffu, 0xffffffffu, 1u << 20 };
	struct fo_st_header *h = hdr(region);
	struct fo_st_found f;
	size_t i;

	for (i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
		fo_st_init(region, 1);
		h->slot[0].seq = 2;
		h->slot[0].len = lens[i];
		h->slot[0].cycle = 5;
		h->slot[0].commit = 1;
		/* a checksum that would match if the reader trusted the length
		 * far enough to compute it is irrelevant: the bound comes first */
		h->slot[0].crc = 0;
		CHECK(fo_st_read(region, buf, &f) == FO_ST_CORRUPT, "len %u refused", lens[i]);
		CHECK(f.rejected == 1, "counted");
	}
	/* a header that claims bigger slots is refused, not believed */
	fo_st_init(region, 1);
	h->slot_size = 1u << 30;
	CHECK(fo_st_read(region, buf, &f) == FO_ST_CORRUPT, "slot_size lie refused");
	fo_st_init(region, 1);
	h->n_slots = 1000;
	CHECK(fo_st_read(region, buf, &f) == FO_ST_CORRUPT, "n_slots lie refused");
	fo_st_init(region, 1);
	h->magic = 0xdeadbeefu;
	CHECK(fo_st_read(region, buf, &f) == FO_ST_CORRUPT, "bad magic refused");
}

static void test_checksum_covers_record(void)
{
	unsigned char src[256];
	struct fo_st_writer w = { 0 };
	struct fo_st_found f;
	struct fo_st_header *h = hdr(region);

	fo_st_init(region, 1);
	fill(src, sizeof(src), 7);
	fo_st_commit(region, &w, src, sizeof(src), 7);
	h->slot[0].cycle = 8; /* claim a newer cycle for the same bytes */
	CHECK(fo_st_read(region, buf, &f) == FO_ST_CORRUPT, "cycle is covered by the crc");
	h->slot[0].cycle = 7;
	h->slot[0].len = 128; /* a shorter prefix of valid data */
	CHECK(fo_st_read(region, buf, &f) == FO_ST_CORRUPT, "len is covered by the crc");
	h->slot[0].len = 256;
	region[fo_st_slot_offset(0) + 200] ^= 1;
	CHECK(fo_st_read(region, buf, &f) == FO_ST_CORRUPT, "one flipped bit");
	region[fo_st_slot_offset(0) + 200] ^= 1;
	CHECK(fo_st_read(region, buf, &f) == FO_ST_OK && f.cycle == 7, "repaired");
}

static uint64_t xs64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random bytes anywhere: never a crash (ASan), never a false OK. */
static void test_garbage(void)
{
	struct fo_st_found f;
	uint64_t s = 0x9e3779b97f4a7c15ull;
	int it, oks = 0;
	size_t i;

	for (it = 0; it < 2000; it++) {
		fo_st_init(region, 1);
		/* keep the header valid half the time so the slots get looked at */
		for (i = (it & 1) ? 16 : 0; i < FO_ST_PAGE_SIZE; i += 8) {
			uint64_t v = xs64(&s);

			memcpy(region + i, &v, 8);
		}
		if (it & 1)
			hdr(region)->slot[it & 2 ? 0 : 1].len = (uint32_t)(xs64(&s) % (FO_ST_SLOT_SIZE + 2));
		for (i = FO_ST_PAGE_SIZE; i < FO_ST_PAGE_SIZE + 256; i++)
			region[i] = (unsigned char)xs64(&s);
		if (fo_st_read(region, buf, &f) == FO_ST_OK)
			oks++;
	}
	CHECK(oks == 0, "%d garbage regions read as valid", oks);
}

/* ---- a writer racing a reader: every OK read is one whole commit */

static atomic_bool race_stop;

static void *race_writer(void *arg)
{
	static unsigned char src[FO_ST_SLOT_SIZE];
	struct fo_st_writer w = { 0 };
	uint64_t cycle = 0;

	(void)arg;
	while (!atomic_load(&race_stop)) {
		size_t len = 1 + (size_t)((cycle * 2654435761u) % FO_ST_SLOT_SIZE);

		cycle++;
		fill(src, len, cycle);
		fo_st_commit(region, &w, src, len, cycle);
	}
	return NULL;
}

/*
 * One read is not linearisable against a writer that laps it (slot 0 read
 * just before it is rewritten, slot 1 torn: the read returns an older commit
 * than the previous read did). What a standby gets comes through the relay,
 * which never copies an older commit: the destination never goes back.
 */
static void test_race(void)
{
	pthread_t t;
	struct fo_st_found f;
	struct fo_st_relay rs;
	struct timespec t0, now;
	uint64_t last = 0, oks = 0, torn = 0, bad = 0, back = 0, raw_back = 0, raw_last = 0;
	int copied;

	fo_st_init(region, 1);
	memset(region2, 0, sizeof(region2));
	fo_st_relay_attach(&rs, region2, 1, tmp);
	atomic_store(&race_stop, false);
	pthread_create(&t, NULL, race_writer, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		enum fo_st_result r = fo_st_relay_pass(&rs, region, region2, 0, tmp, &f, &copied);

		if (r == FO_ST_OK) {
			if (f.cycle < raw_last)
				raw_back++;
			raw_last = f.cycle;
		}
		r = fo_st_read(region2, buf, &f);
		if (r == FO_ST_OK) {
			oks++;
			if (!filled(buf, f.len, f.cycle))
				bad++;
			if (f.cycle < last)
				back++;
			last = f.cycle;
		} else if (r == FO_ST_TORN) {
			torn++;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000000000ll + (now.tv_nsec - t0.tv_nsec) < 300000000ll);
	atomic_store(&race_stop, true);
	pthread_join(t, NULL);
	printf("race: %llu relayed reads, %llu torn, last cycle %llu, %llu raw reads older than the one before\n",
	       (unsigned long long)oks, (unsigned long long)torn, (unsigned long long)last,
	       (unsigned long long)raw_back);
	CHECK(oks > 0, "some reads succeeded");
	CHECK(bad == 0, "%llu reads returned mixed data", (unsigned long long)bad);
	CHECK(back == 0, "%llu reads went backwards", (unsigned long long)back);
}

/* ---- the relay */

static void test_relay(void)
{
	unsigned char src[2048];
	struct fo_st_writer w = { 0 };
	struct fo_st_relay rs;
	struct fo_st_found f;
	struct fo_st_header *sh = hdr(region), *dh = hdr(region2);
	int copied;

	memset(region2, 0, sizeof(region2));
	fo_st_init(region, 7);
	fo_st_relay_attach(&rs, region2, 5, tmp);
	CHECK(fo_st_read(region2, buf, &f) == FO_ST_NONE, "nothing relayed yet");
	CHECK(fo_st_relay_pass(&rs, region, region2, 0, tmp, &f, &copied) == FO_ST_NONE && !copied, "empty source");

	fill(src, sizeof(src), 50);
	fo_st_commit(region, &w, src, sizeof(src), 50);
	CHECK(fo_st_relay_pass(&rs, region, region2, 52, tmp, &f, &copied) == FO_ST_OK && copied, "copied");
	CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 50 && filled(buf, sizeof(src), 50),
	      "standby holds cycle 50");
	CHECK(dh->src_last_cycle == 52 && dh->src_domid == 5, "source's cycle %llu",
	      (unsigned long long)dh->src_last_cycle);
	CHECK(fo_st_relay_pass(&rs, region, region2, 53, tmp, &f, &copied) == FO_ST_OK && !copied, "same commit not copied again");

	/* data scribbled behind an unchanged record: the relay has that
	 * commit already (it skips the read), the standby keeps it */
	memset(region + FO_ST_PAGE_SIZE, 0x5a, FO_ST_SLOT_SIZE * 2);
	CHECK(fo_st_relay_pass(&rs, region, region2, 60, tmp, &f, &copied) == FO_ST_OK && !copied, "skipped");
	CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 50 && filled(buf, sizeof(src), 50), "kept 50");

	/* the active turns hostile: garbage everywhere but the magic (as
	 * libfoguest's garbage-state does). The standby keeps 50. */
	memset(region + 16, 0xa4, FO_ST_REGION_SIZE - 16);
	CHECK(fo_st_relay_pass(&rs, region, region2, 90, tmp, &f, &copied) == FO_ST_CORRUPT && !copied, "garbage refused");
	CHECK(dh->relay_flags & FO_ST_RELAY_SOURCE_BAD, "flagged");
	CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 50 && filled(buf, sizeof(src), 50), "still 50");
	CHECK(dh->src_last_cycle == 90, "age visible to the standby: %llu", (unsigned long long)dh->src_last_cycle);
	/* slots kept odd (a writer "always half-way"): torn for a while, then rejected */
	{
		int k;
		enum fo_st_result rr = FO_ST_OK;

		memset(region + 16, 0xa5, FO_ST_REGION_SIZE - 16);
		for (k = 0; k < FO_ST_TORN_LIMIT; k++) {
			hdr(region)->writer_id = 1000 + (uint64_t)k; /* defeat the skip: a changing region */
			rr = fo_st_relay_pass(&rs, region, region2, 91, tmp, &f, &copied);
			CHECK(!copied, "never copied");
		}
		CHECK(rr == FO_ST_CORRUPT && f.why && !strcmp(f.why, "slots stay torn"), "torn for ever is corrupt");
		CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 50, "still 50");
		hdr(region)->writer_id = 7;
	}

	/* a valid but older commit of the same writer (replayed): refused */
	fo_st_init(region, 7);
	w.commit = 0;
	w.next = 0;
	fill(src, 64, 10);
	fo_st_commit(region, &w, src, 64, 10);
	CHECK(fo_st_relay_pass(&rs, region, region2, 91, tmp, &f, &copied) == FO_ST_OK && !copied, "replay refused");
	CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 50, "standby did not go backwards");

	/* a restarted writer (new id) starts a new history: relayed */
	sh->writer_id = 8;
	CHECK(fo_st_relay_pass(&rs, region, region2, 11, tmp, &f, &copied) == FO_ST_OK && copied, "new writer");
	CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 10, "new writer's state");

	/* a restarted relay continues the destination's commit numbers */
	{
		struct fo_st_relay rs2;
		uint64_t before;

		CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK, "read");
		before = f.commit;
		fo_st_relay_attach(&rs2, region2, 5, tmp);
		CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 10, "attach kept the state");
		fill(src, 64, 12);
		fo_st_commit(region, &w, src, 64, 12);
		CHECK(fo_st_relay_pass(&rs2, region, region2, 12, tmp, &f, &copied) == FO_ST_OK && copied, "copied");
		CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 12 && f.commit == before + 1,
		      "commit %llu after %llu", (unsigned long long)f.commit, (unsigned long long)before);
	}
	/* the destination itself scribbled on (the standby is its owner): the
	 * relay's next commit still produces a readable region */
	memset(region2 + FO_ST_PAGE_SIZE, 0, FO_ST_SLOT_SIZE * 2);
	fill(src, 64, 13);
	fo_st_commit(region, &w, src, 64, 13);
	fo_st_relay_pass(&rs, region, region2, 13, tmp, &f, &copied);
	CHECK(fo_st_read(region2, buf, &f) == FO_ST_OK && f.cycle == 13, "recovered");
}

int main(void)
{
	RUN(test_crc32c);
	RUN(test_empty);
	RUN(test_roundtrip_sizes);
	RUN(test_newest_wins);
	RUN(test_torn_write);
	RUN(test_seq_wrap);
	RUN(test_hostile_lengths);
	RUN(test_checksum_covers_record);
	RUN(test_garbage);
	RUN(test_race);
	RUN(test_relay);
	return check_summary("test_state");
}
