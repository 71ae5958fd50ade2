/* SPDX-License-Identifier: MIT */
/*
 * test_state_relay.c - the state relay's thread (hv/state_relay.c), without
 * Xen: the members' state-out and state-in regions are plain memory that the
 * test's fo_state_relay_ops "map", written the way libfoguest writes them
 * (fo_st_init, then fo_st_commit: foguest_commit() is that call on a granted
 * page, and needs Xen to open). The real relay thread runs on them.
 *
 * Checked: commits arrive in the standby's state-in in order; torn, garbage,
 * oversized, bad-header and bad-checksum state-outs are rejected, counted and
 * never copied; an older commit of the same writer (a replay) is never
 * copied; a role swap is a takeover with the cycles handed over and lost;
 * a dying old active's regions are given back; stopping the relay while it
 * copies is clean and bounded; a writer racing the relay never yields a
 * state-in that fails validation. Every wait is bounded polling.
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
#include "wait_until.h"
#include "hv/state_relay.h"

#define DOM_A     11u
#define DOM_B     12u
#define WAIT_MS   5000u  /* any wait: the relay idles 100 ms at most; ASan and a busy host */

struct fake_dom {
	fo_domid_t domid;
	unsigned char *out, *in;    /* FO_ST_REGION_SIZE each, page-aligned */
	struct fo_st_writer w;      /* the application's writer (libfoguest's g->w) */
	atomic_bool publish;        /* map() succeeds */
	atomic_bool dead;           /* alive() says no */
	atomic_int maps, unmaps, drops;
};

static struct fake_dom doms[2];
static atomic_bool release_pending;
static atomic_int ops_errors;    /* the ops' own findings (relay thread: no CHECK there) */
static unsigned char buf[FO_ST_SLOT_SIZE];

/* ------------------------------------------------------------- helpers */

static struct fake_dom *dom_of(fo_domid_t domid)
{
	return domid == DOM_A ? &doms[0] : domid == DOM_B ? &doms[1] : NULL;
}

static struct fo_st_header *hdr(unsigned char *region)
{
	return (struct fo_st_header *)region;
}

static void fill(unsigned char *p, size_t len, uint64_t cycle)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(cycle * 31u + i * 7u);
}

static bool filled(const unsigned char *p, size_t len, uint64_t cycle)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char)(cycle * 31u + i * 7u))
			return false;
	return true;
}

/* A fresh application instance in d (libfoguest's foguest_open). */
static void app_start(struct fake_dom *d, uint64_t writer_id)
{
	fo_st_init(d->out, writer_id);
	memset(&d->w, 0, sizeof(d->w));
}

/* libfoguest's foguest_commit(): one whole state of `cycle`. */
static void commit(struct fake_dom *d, uint64_t cycle, size_t len)
{
	static unsigned char src[FO_ST_SLOT_SIZE];

	fill(src, len, cycle);
	CHECK(fo_st_commit(d->out, &d->w, src, len, cycle) == 0, "commit %llu", (unsigned long long)cycle);
}

/* The loop's part: a heartbeat page with libfoguest's extension. */
static void beat(struct fo_state_relay *r, fo_domid_t domid, uint64_t cycle)
{
	struct fo_hb_page page;

	memset(&page, 0, sizeof(page));
	page.ext_magic = FO_HB_EXT_MAGIC;
	page.ext_version = FO_HB_EXT_VERSION;
	page.app_cycle = cycle;
	fo_state_relay_beat(r, domid, &page);
}

/* What the standby would restore now (libfoguest retries torn reads). */
static enum fo_st_result read_in(struct fake_dom *d, unsigned char *out, struct fo_st_found *f)
{
	enum fo_st_result res;
	int tries = 0;

	do
		res = fo_st_read(d->in, out, f);
	while (res == FO_ST_TORN && ++tries < 100);
	return res;
}

/* d's state-in holds a valid commit of `cycle`. */
static bool in_holds(struct fake_dom *d, uint64_t cycle)
{
	struct fo_st_found f;

	return read_in(d, buf, &f) == FO_ST_OK && f.cycle == cycle;
}

static struct fo_hv_state_info info(struct fo_state_relay *r, fo_domid_t domid)
{
	struct fo_hv_state_info i;

	if (!fo_state_relay_info(r, domid, &i))
		memset(&i, 0, sizeof(i));
	return i;
}

/* ------------------------------------------------------------- the ops */

static int t_event_fd(void *ctx)
{
	return -1;
}

static bool t_events(void *ctx, struct fo_state_relay *r)
{
	return atomic_exchange(&release_pending, false);
}

static bool t_map(void *ctx, unsigned slot, fo_domid_t domid, volatile void **out, volatile void **in)
{
	struct fake_dom *d = dom_of(domid);

	if (slot >= FO_STATE_RELAY_MEMBERS)
		atomic_fetch_add(&ops_errors, 1);
	if (!d || !atomic_load(&d->publish))
		return false;
	*out = d->out;
	*in = d->in;
	atomic_fetch_add(&d->maps, 1);
	return true;
}

static void t_unmap(void *ctx, volatile void *out, volatile void *in)
{
	for (int i = 0; i < 2; i++)
		if (out == doms[i].out || in == doms[i].in) {
			if (out != doms[i].out || in != doms[i].in)
				atomic_fetch_add(&ops_errors, 1); /* half of a mapping */
			atomic_fetch_add(&doms[i].unmaps, 1);
			return;
		}
	atomic_fetch_add(&ops_errors, 1); /* never mapped */
}

static void t_drop(void *ctx, unsigned slot, fo_domid_t domid)
{
	struct fake_dom *d = dom_of(domid);

	if (d)
		atomic_fetch_add(&d->drops, 1);
}

static bool t_alive(void *ctx, fo_domid_t domid)
{
	struct fake_dom *d = dom_of(domid);

	return d && !atomic_load(&d->dead);
}

static const struct fo_state_relay_ops test_ops = {
	.name = "test",
	.event_fd = t_event_fd,
	.events = t_events,
	.map = t_map,
	.unmap = t_unmap,
	.drop = t_drop,
	.alive = t_alive,
};

static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg, int signo)
{
	return -pthread_create(t, NULL, fn, arg);
}

/* Two fresh members, both publishing, A active: the relay has mapped both. */
static struct fo_state_relay *setup(bool b_publishes)
{
	struct fo_state_relay *r = NULL;
	bool ok;

	for (int i = 0; i < 2; i++) {
		struct fake_dom *d = &doms[i];

		d->domid = i ? DOM_B : DOM_A;
		app_start(d, 0xa000u + d->domid);
		fo_st_init(d->in, 0); /* libfoguest: nothing handed over yet */
		atomic_store(&d->publish, i == 0 || b_publishes);
		atomic_store(&d->dead, false);
		atomic_store(&d->maps, 0);
		atomic_store(&d->unmaps, 0);
		atomic_store(&d->drops, 0);
	}
	atomic_store(&release_pending, false);
	CHECK(fo_state_relay_new(&test_ops, NULL, start_thread, &r) == 0 && r, "relay started");
	if (!r)
		exit(1);
	fo_state_relay_pair(r, "p", DOM_A, DOM_B, true);
	WAIT_UNTIL(ok, info(r, DOM_A).mapped && (info(r, DOM_B).mapped || !b_publishes) &&
			       fo_state_relay_info(r, DOM_B, &(struct fo_hv_state_info){ 0 }), WAIT_MS);
	CHECK(ok, "both members known, the publishing ones mapped");
	return r;
}

/* Commit `cycle` on d, beat, and wait until `to` holds it. */
static bool commit_arrives(struct fo_state_relay *r, struct fake_dom *d, struct fake_dom *to, uint64_t cycle,
			   size_t len)
{
	bool ok;

	commit(d, cycle, len);
	WAIT_UNTIL(ok, (beat(r, d->domid, cycle), in_holds(to, cycle)), WAIT_MS);
	return ok;
}

/* ------------------------------------------------------------- in order */

static void test_in_order(void)
{
	struct fo_state_relay *r = setup(true);
	struct fake_dom *a = &doms[0], *b = &doms[1];
	struct fo_hv_state_info ib;
	struct fo_st_found f;
	uint64_t k, passes;
	bool ok;

	/* a pass over a state-out with nothing committed copies nothing */
	WAIT_UNTIL(ok, (beat(r, DOM_A, 0), hdr(b->in)->relay_passes >= 2), WAIT_MS);
	CHECK(ok, "the relay visits the standby's state-in");
	CHECK(fo_st_read(b->in, buf, &f) == FO_ST_NONE, "nothing handed over before a commit");
	CHECK(info(r, DOM_B).relayed == 0, "nothing counted");

	for (k = 1; k <= 40; k++) {
		size_t len = k == 20 ? FO_ST_SLOT_SIZE : 1 + (size_t)((k * 2654435761u) % FO_ST_SLOT_SIZE);

		if (!commit_arrives(r, a, b, k, len)) {
			CHECK(false, "cycle %llu never reached the standby", (unsigned long long)k);
			break;
		}
		CHECK(read_in(b, buf, &f) == FO_ST_OK && f.cycle == k && f.len == len && filled(buf, len, k),
		      "cycle %llu: the whole commit (%u bytes)", (unsigned long long)k, f.len);
		/* one relay commit per application commit: none skipped, none twice */
		CHECK(f.commit == k, "relay commit %llu for cycle %llu", (unsigned long long)f.commit,
		      (unsigned long long)k);
		CHECK(hdr(b->in)->src_domid == DOM_A && hdr(b->in)->src_last_cycle >= k, "source dom%u at %llu",
		      hdr(b->in)->src_domid, (unsigned long long)hdr(b->in)->src_last_cycle);
		WAIT_UNTIL(ok, (ib = info(r, DOM_B)).relayed == k, WAIT_MS);
		CHECK(ok && ib.state_cycle == k, "status: relayed %llu, standby cycle %llu", (unsigned long long)ib.relayed,
		      (unsigned long long)ib.state_cycle);
	}
	/* a burst: only the newest needs to arrive, never anything older after it */
	for (k = 41; k <= 60; k++)
		commit(a, k, 100);
	WAIT_UNTIL(ok, (beat(r, DOM_A, 60), in_holds(b, 60)), WAIT_MS);
	CHECK(ok && filled(buf, 100, 60), "the newest of a burst arrives");
	passes = hdr(b->in)->relay_passes;
	WAIT_UNTIL(ok, (beat(r, DOM_A, 60), hdr(b->in)->relay_passes >= passes + 3), WAIT_MS);
	CHECK(ok && in_holds(b, 60), "and stays");
	CHECK(info(r, DOM_A).rejected == 0 && !(hdr(b->in)->relay_flags & FO_ST_RELAY_SOURCE_BAD), "nothing rejected");
	CHECK(!info(r, DOM_B).takeover && !info(r, DOM_A).takeover, "no takeover");
	fo_state_relay_free(r);
	CHECK(a->maps == a->unmaps && b->maps == b->unmaps && a->drops == 1 && b->drops == 1,
	      "stopped: every mapping given back (A %d/%d, B %d/%d), both dropped", a->maps, a->unmaps, b->maps,
	      b->unmaps);
}

/* ------------------------------------------------------------- rejected */

static uint64_t xs64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Each spoils the active's state-out; called on every try (`it`), so a
 * spoiler can keep the region changing (no pass can skip it as unchanged). */
static void spoil_torn(unsigned char *out, unsigned it)
{
	/* a writer "always half-way" through both slots, moving */
	hdr(out)->slot[0].seq |= 1u;
	hdr(out)->slot[1].seq |= 1u;
	hdr(out)->writer_id = 0x70000u + it;
}

static void spoil_garbage(unsigned char *out, unsigned it)
{
	uint64_t s = 0x9e3779b97f4a7c15ull + it;

	/* libfoguest's garbage-state: all but the header's first 16 bytes */
	for (size_t i = 16; i + 8 <= FO_ST_REGION_SIZE; i += 8) {
		uint64_t v = xs64(&s);

		memcpy(out + i, &v, 8);
	}
}

static void spoil_oversized(unsigned char *out, unsigned it)
{
	for (unsigned i = 0; i < FO_ST_SLOTS; i++) {
		struct fo_st_slot *s = &hdr(out)->slot[i];

		s->seq = (s->seq | 1u) + 1u; /* stable */
		s->len = FO_ST_SLOT_SIZE + 1u + it;
		s->commit = 1000u + i;
		s->cycle = 9999;
	}
}

static void spoil_header(unsigned char *out, unsigned it)
{
	hdr(out)->slot_size = 1u << 30; /* a region that claims bigger slots */
	hdr(out)->writer_id = 0x80000u + it;
}

/* A new commit (a slot changed: the relay reads again), and neither
 * slot's checksum matches. */
static void spoil_checksum(unsigned char *out, unsigned it)
{
	static unsigned char src[64];

	if (it)
		return;
	fill(src, sizeof(src), 7777);
	fo_st_commit(out, &doms[0].w, src, sizeof(src), 7777);
	for (unsigned i = 0; i < FO_ST_SLOTS; i++)
		hdr(out)->slot[i].crc ^= 0x10u;
}

static void test_rejected(void)
{
	static const struct {
		const char *what;
		void (*spoil)(unsigned char *out, unsigned it);
	} cases[] = {
		{ "torn for ever", spoil_torn },
		{ "garbage", spoil_garbage },
		{ "oversized", spoil_oversized },
		{ "bad header", spoil_header },
		{ "bad checksum", spoil_checksum },
	};
	struct fo_state_relay *r = setup(true);
	struct fake_dom *a = &doms[0], *b = &doms[1];
	struct fo_st_found f;
	uint64_t cycle = 100, rej, relayed, commit_no, passes;
	static unsigned char snap[FO_ST_REGION_SIZE];
	bool ok;

	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		unsigned it = 0;

		/* a good state first (a new application instance after the
		 * previous case): relayed again after a bad one */
		app_start(a, 0xb000u + c);
		CHECK(commit_arrives(r, a, b, ++cycle, 512), "%s: a good state before arrives", cases[c].what);
		CHECK(commit_arrives(r, a, b, ++cycle, 700), "%s: and the next", cases[c].what);
		WAIT_UNTIL(ok, info(r, DOM_B).relayed == (read_in(b, buf, &f), f.commit), WAIT_MS);
		rej = info(r, DOM_A).rejected;
		relayed = info(r, DOM_B).relayed;
		commit_no = f.commit;

		WAIT_UNTIL(ok, (cases[c].spoil(a->out, it++), beat(r, DOM_A, cycle + it), info(r, DOM_A).rejected > rej),
			   WAIT_MS);
		CHECK(ok, "%s: rejected and counted (%llu)", cases[c].what, (unsigned long long)info(r, DOM_A).rejected);
		/* the region stays as spoiled now: every pass finds it bad */
		WAIT_UNTIL(ok, (beat(r, DOM_A, cycle + it), hdr(b->in)->relay_flags & FO_ST_RELAY_SOURCE_BAD), WAIT_MS);
		CHECK(ok, "%s: flagged to the standby", cases[c].what);
		CHECK(read_in(b, buf, &f) == FO_ST_OK && f.cycle == cycle && f.commit == commit_no && filled(buf, 700, cycle),
		      "%s: never copied: the standby keeps cycle %llu (has %llu)", cases[c].what,
		      (unsigned long long)cycle, (unsigned long long)f.cycle);
		CHECK(info(r, DOM_B).relayed == relayed, "%s: nothing relayed", cases[c].what);
	}

	/* A valid but older commit of the same writer (a replay, the
	 * writer going backwards): never copied. Not counted as rejected:
	 * the relay counts invalid state-outs, and this one is valid. */
	app_start(a, 0xc000u);
	CHECK(commit_arrives(r, a, b, ++cycle, 300), "replay: the commit to be replayed arrives");
	memcpy(snap, a->out, sizeof(snap));
	CHECK(commit_arrives(r, a, b, ++cycle, 300), "replay: a newer one arrives");
	read_in(b, buf, &f);
	commit_no = f.commit;
	relayed = info(r, DOM_B).relayed;
	memcpy(a->out, snap, sizeof(snap));
	passes = hdr(b->in)->relay_passes;
	WAIT_UNTIL(ok, (beat(r, DOM_A, cycle), hdr(b->in)->relay_passes >= passes + 3), WAIT_MS);
	CHECK(ok, "replay: the relay looked at it");
	CHECK(read_in(b, buf, &f) == FO_ST_OK && f.cycle == cycle && f.commit == commit_no,
	      "replay: never copied, the standby keeps %llu (has %llu)", (unsigned long long)cycle,
	      (unsigned long long)f.cycle);
	CHECK(info(r, DOM_B).relayed == relayed, "replay: nothing relayed");

	/* By design the writer's commit counter orders states, not the cycle:
	 * an application that starts cold (fo-plant after a "too old"
	 * restore) commits cycle 1, 2... again, and its new standby must
	 * get those. */
	app_start(a, 0xd000u);
	CHECK(commit_arrives(r, a, b, 500, 64), "cold start: before");
	CHECK(commit_arrives(r, a, b, 1, 64), "cold start: a newer commit of an earlier cycle is relayed");
	fo_state_relay_free(r);
}

/* ------------------------------------------------------------- takeovers */

static void test_takeover(void)
{
	struct fo_state_relay *r = setup(true);
	struct fake_dom *a = &doms[0], *b = &doms[1];
	struct fo_hv_state_info ia, ib, ib_first;
	struct fo_st_found f;
	uint64_t k, t_before;
	bool ok;

	for (k = 1; k <= 50; k++)
		commit(a, k, 1000);
	CHECK(commit_arrives(r, a, b, 51, 1000), "A's state reaches B");
	/* the last cycles before the fault: committed, the loop saw no beat of them */
	for (k = 52; k <= 55; k++)
		commit(a, k, 1000);
	/* ...and A is fenced half-way through committing 56 */
	{
		struct fo_st_slot *s = &hdr(a->out)->slot[a->w.next % FO_ST_SLOTS];

		s->seq |= 1u;
		fill(a->out + fo_st_slot_offset(a->w.next % FO_ST_SLOTS), 500, 56);
	}
	t_before = (uint64_t)now_ms() * 1000000u;
	fo_state_relay_pair(r, "p", DOM_B, DOM_A, true); /* the switch published the swap */
	WAIT_UNTIL(ok, (ib = info(r, DOM_B)).takeover, WAIT_MS);
	CHECK(ok, "the swap is seen as B's takeover");
	CHECK(ib.handed_cycle == 55 && ib.old_last_cycle == 55 && ib.cycles_lost == 0,
	      "B was handed A's last complete commit: handed %llu, old last %llu, lost %lld",
	      (unsigned long long)ib.handed_cycle, (unsigned long long)ib.old_last_cycle, (long long)ib.cycles_lost);
	CHECK(ib.takeover_ns >= t_before - 1000000u, "takeover time %llu", (unsigned long long)ib.takeover_ns);
	CHECK(read_in(b, buf, &f) == FO_ST_OK && f.cycle == 55 && filled(buf, 1000, 55), "B restores cycle 55");
	CHECK(!info(r, DOM_A).takeover, "A took nothing over");
	ib_first = ib;

	/* B continues from 55; A, the standby now, gets B's state */
	for (k = 56; k <= 59; k++)
		commit(b, k, 800);
	CHECK(commit_arrives(r, b, a, 60, 800), "B's state reaches A");
	CHECK(hdr(a->in)->src_domid == DOM_B, "from dom%u", hdr(a->in)->src_domid);
	WAIT_UNTIL(ok, (ia = info(r, DOM_A)).relayed >= 1 && ia.state_cycle == 60, WAIT_MS);
	CHECK(ok, "A's status: relayed %llu, cycle %llu", (unsigned long long)ia.relayed, (unsigned long long)ia.state_cycle);

	/* and back */
	commit(b, 61, 800);
	fo_state_relay_pair(r, "p", DOM_A, DOM_B, true);
	WAIT_UNTIL(ok, (ia = info(r, DOM_A)).takeover, WAIT_MS);
	CHECK(ok && ia.handed_cycle == 61 && ia.old_last_cycle == 61 && ia.cycles_lost == 0,
	      "A took over back: handed %llu, old last %llu, lost %lld", (unsigned long long)ia.handed_cycle,
	      (unsigned long long)ia.old_last_cycle, (long long)ia.cycles_lost);
	ib = info(r, DOM_B);
	CHECK(ib.takeover_ns == ib_first.takeover_ns && ib.handed_cycle == 55, "B's takeover record unchanged");

	/* the old active (B) is destroyed: its regions are given back at
	 * once (and its keys are gone: nothing to map again) */
	atomic_store(&b->publish, false);
	atomic_store(&b->dead, true);
	atomic_store(&release_pending, true);
	WAIT_UNTIL(ok, (beat(r, DOM_A, 61), !info(r, DOM_B).mapped && b->unmaps == b->maps), WAIT_MS);
	CHECK(ok, "a dying domain's regions unmapped (maps %d, unmaps %d)", b->maps, b->unmaps);
	CHECK(info(r, DOM_A).mapped, "the survivor's stay mapped");
	fo_state_relay_free(r);

	/* a standby that never shared its regions: it takes over cold, and
	 * everything the old active committed counts as lost */
	r = setup(false);
	for (k = 1; k <= 10; k++)
		commit(a, k, 64);
	beat(r, DOM_A, 10);
	fo_state_relay_pair(r, "p", DOM_B, DOM_A, true);
	WAIT_UNTIL(ok, (ib = info(r, DOM_B)).takeover, WAIT_MS);
	CHECK(ok && ib.handed_cycle == 0 && ib.old_last_cycle == 10 && ib.cycles_lost == 10 && !ib.mapped,
	      "cold takeover: handed %llu, old last %llu, lost %lld", (unsigned long long)ib.handed_cycle,
	      (unsigned long long)ib.old_last_cycle, (long long)ib.cycles_lost);
	fo_state_relay_free(r);
}

/* ------------------------------------------------------------- writers running */

struct writer {
	struct fo_state_relay *r;
	struct fake_dom *d;
	atomic_bool stop;
	atomic_uint_fast64_t cycle;  /* the last one committed */
	size_t fixed_len;            /* 0: random lengths */
	/* The beats are the daemon loop's posts, and the loop stops posting
	 * before it frees the relay (the same thread does both): set
	 * no_beats, wait for beats_stopped, then free. */
	atomic_bool no_beats, beats_stopped;
};

/* The active's control task: commit and beat as fast as it can. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t cycle = 0;

	while (!atomic_load(&w->stop)) {
		size_t len = w->fixed_len ? w->fixed_len : 1 + (size_t)((cycle * 2654435761u) % FO_ST_SLOT_SIZE);

		static unsigned char src[FO_ST_SLOT_SIZE];

		fill(src, len, ++cycle);
		fo_st_commit(w->d->out, &w->d->w, src, len, cycle);
		atomic_store(&w->cycle, cycle);
		if (!atomic_load(&w->no_beats))
			beat(w->r, w->d->domid, cycle);
		else
			atomic_store(&w->beats_stopped, true);
	}
	return NULL;
}

static void *stopper_main(void *arg)
{
	fo_state_relay_free(arg);
	return NULL;
}

/* Stopping while the relay copies 16 KiB states: the thread ends within
 * the bound, gives every mapping back, and leaves a valid state-in. */
static void test_stop_while_copying(void)
{
	for (int round = 0; round < 10; round++) {
		struct writer w = { .d = &doms[0], .fixed_len = FO_ST_SLOT_SIZE };
		struct fake_dom *a = &doms[0], *b = &doms[1];
		struct fo_st_found f;
		struct timespec deadline;
		pthread_t wt, st;
		bool ok;

		w.r = setup(true);
		pthread_create(&wt, NULL, writer_main, &w);
		WAIT_UNTIL(ok, info(w.r, DOM_B).relayed >= 3 + (uint64_t)round, WAIT_MS);
		CHECK(ok, "round %d: relaying (%llu)", round, (unsigned long long)info(w.r, DOM_B).relayed);
		/* the loop's last post; the application goes on committing */
		atomic_store(&w.no_beats, true);
		WAIT_UNTIL(ok, atomic_load(&w.beats_stopped), WAIT_MS);
		CHECK(ok, "round %d: the writer stopped beating", round);
		/* a post wakes the relay into a pass over a state-out that keeps
		 * changing (16 KiB copies), and the stop follows at once */
		fo_state_relay_pair(w.r, "p", DOM_A, DOM_B, true);
		pthread_create(&st, NULL, stopper_main, w.r);
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += WAIT_MS / 1000;
		if (pthread_timedjoin_np(st, NULL, &deadline) != 0) {
			CHECK(false, "round %d: the relay did not stop within %u ms", round, WAIT_MS);
			exit(check_summary("test_state_relay"));
		}
		atomic_store(&w.stop, true);
		pthread_join(wt, NULL);
		CHECK(a->maps == a->unmaps && b->maps == b->unmaps && a->maps >= 1 && b->maps >= 1,
		      "round %d: mappings given back (A %d/%d, B %d/%d)", round, a->maps, a->unmaps, b->maps, b->unmaps);
		CHECK(a->drops == 1 && b->drops == 1, "round %d: both members dropped once", round);
		/* nobody writes it now: one read, not torn */
		CHECK(fo_st_read(b->in, buf, &f) == FO_ST_OK && f.len == FO_ST_SLOT_SIZE && filled(buf, f.len, f.cycle),
		      "round %d: the standby's state-in is valid (cycle %llu)", round, (unsigned long long)f.cycle);
	}
}

/* A writer racing the relay, a standby reading its state-in all along:
 * every read is a whole commit or torn (retry), never invalid. */
static void test_race(void)
{
	struct writer w = { .d = &doms[0] };
	struct fake_dom *b = &doms[1];
	static unsigned char rbuf[FO_ST_SLOT_SIZE];
	uint64_t oks = 0, torn = 0, invalid = 0, mixed = 0, none_after = 0, back = 0, last = 0, t0;
	struct fo_hv_state_info ib;
	pthread_t wt;
	bool ok;

	w.r = setup(true);
	pthread_create(&wt, NULL, writer_main, &w);
	t0 = now_ms();
	while (now_ms() - t0 < 400) {
		struct fo_st_found f;
		enum fo_st_result res = fo_st_read(b->in, rbuf, &f);

		if (res == FO_ST_OK) {
			oks++;
			if (!filled(rbuf, f.len, f.cycle))
				mixed++;
			if (f.cycle < last)
				back++; /* a read lapped by the relay: not an invalid state */
			last = f.cycle;
		} else if (res == FO_ST_TORN) {
			torn++;
		} else if (res == FO_ST_CORRUPT) {
			invalid++;
		} else if (oks) {
			none_after++;
		}
	}
	atomic_store(&w.stop, true);
	pthread_join(wt, NULL); /* its beats too: from here the test is the loop */
	ib = info(w.r, DOM_B);
	printf("race: %llu valid reads (%llu torn, %llu older than the one before), %llu relayed, %llu rejected, "
	       "writer at %llu\n", (unsigned long long)oks, (unsigned long long)torn, (unsigned long long)back,
	       (unsigned long long)ib.relayed, (unsigned long long)info(w.r, DOM_A).rejected,
	       (unsigned long long)atomic_load(&w.cycle));
	CHECK(invalid == 0, "%llu reads of the state-in failed validation", (unsigned long long)invalid);
	CHECK(mixed == 0, "%llu reads returned mixed data", (unsigned long long)mixed);
	CHECK(none_after == 0, "%llu reads found no state after one was there", (unsigned long long)none_after);
	CHECK(oks > 0 && ib.relayed >= 10, "the relay kept up: %llu relayed, %llu valid reads",
	      (unsigned long long)ib.relayed, (unsigned long long)oks);
	/* once the writer stops, its last commit arrives */
	WAIT_UNTIL(ok, (beat(w.r, DOM_A, atomic_load(&w.cycle)), in_holds(b, atomic_load(&w.cycle))), WAIT_MS);
	CHECK(ok, "the writer's last commit (cycle %llu) arrives", (unsigned long long)atomic_load(&w.cycle));
	fo_state_relay_free(w.r);
}

/* ------------------------------------------------------------- a flood */

/* A guest notifying in a loop hands the loop beat after beat of the same
 * cycle: they wake the relay thread once a period, not once each. A new
 * cycle still wakes it at once. */
static void test_flood_wakeups(void)
{
	struct fo_state_relay *r = setup(true);
	struct fo_hb_page page;
	struct timespec t0, t1;
	uint64_t before, woke, ms;
	bool ok;

	memset(&page, 0, sizeof(page));
	page.ext_magic = FO_HB_EXT_MAGIC;
	page.ext_version = FO_HB_EXT_VERSION;
	page.period_ms = 10;
	page.app_cycle = 7;
	fo_state_relay_beat(r, DOM_A, &page);
	before = fo_state_relay_beat_wakeups(r);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 100000; i++)
		fo_state_relay_beat(r, DOM_A, &page);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	woke = fo_state_relay_beat_wakeups(r) - before;
	ms = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
	CHECK(woke <= ms / page.period_ms + 1, "100000 beats of one cycle in %llu ms woke the relay %llu times",
	      (unsigned long long)ms, (unsigned long long)woke);
	page.app_cycle = 8;
	before = fo_state_relay_beat_wakeups(r);
	fo_state_relay_beat(r, DOM_A, &page);
	CHECK(fo_state_relay_beat_wakeups(r) == before + 1, "a new cycle wakes it at once");
	commit(&doms[0], 8, 100);
	WAIT_UNTIL(ok, (fo_state_relay_beat(r, DOM_A, &page), in_holds(&doms[1], 8)), WAIT_MS);
	CHECK(ok, "a commit made after its cycle's beat still arrives");
	fo_state_relay_free(r);
}

int main(void)
{
	for (int i = 0; i < 2; i++) {
		doms[i].out = aligned_alloc(FO_ST_PAGE_SIZE, FO_ST_REGION_SIZE);
		doms[i].in = aligned_alloc(FO_ST_PAGE_SIZE, FO_ST_REGION_SIZE);
		if (!doms[i].out || !doms[i].in)
			return 1;
	}
	RUN(test_in_order);
	RUN(test_rejected);
	RUN(test_takeover);
	RUN(test_stop_while_copying);
	RUN(test_race);
	RUN(test_flood_wakeups);
	CHECK(atomic_load(&ops_errors) == 0, "%d bad map/unmap calls", atomic_load(&ops_errors));
	for (int i = 0; i < 2; i++) {
		free(doms[i].out);
		free(doms[i].in);
	}
	return check_summary("test_state_relay");
}
