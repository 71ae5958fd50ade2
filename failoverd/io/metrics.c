/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - the /metrics snapshot: the real-time loop writes it, the
 * HTTP thread (metrics_http.c) copies it out to render it
 * (metrics_render.c).
 *
 * Why a seqlock, and why it can never block the loop
 * --------------------------------------------------
 * The loop (SCHED_FIFO, pinned, memory locked) is the only writer of the
 * snapshot; the HTTP thread is the only reader. The writer never waits for
 * anything: it makes the sequence odd, stores the values with relaxed
 * atomic stores, and makes the sequence even again (a release store). That
 * is a handful of plain stores into memory that is already there (allocated
 * once at start, locked by mlockall): no lock to contend for, no syscall, no
 * allocation, no priority inversion possible, because there is nothing the
 * loop could be made to wait on. The reader does all the waiting: it loads
 * the sequence (acquire), copies the snapshot with relaxed atomic loads,
 * fences (acquire), and keeps the copy only if the sequence is unchanged and
 * even; otherwise it retries (bounded; a scrape that still cannot get a
 * consistent copy gets 503). Every access to shared data is atomic, so there
 * is no data race in the C11 sense (Boehm, "Can seqlocks get along with
 * programming language memory models?", 2012). A mutex would make the loop
 * wait for a reader that the kernel preempted while it held the lock; a
 * trylock would make it skip publishing; both are worse.
 *
 * What the loop writes costs little: counters and gauges per pair after
 * each dispatch (a few dozen words per pair), a histogram's buckets only
 * when an event is published (after the switch, never on the switch path).
 */
#include "io/metrics_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/manager.h"

const double fo_metrics_bucket_bounds[FO_METRICS_NBUCKETS] = {
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025,   0.05,     0.1,     0.25,   0.5,     1,      2.5,   5,      10,
};

/* ---- the seqlock ---------------------------------------------------------- */

#define ST(field, v) __atomic_store_n(&(field), (uint64_t)(v), __ATOMIC_RELAXED)
#define LD(field)    __atomic_load_n(&(field), __ATOMIC_RELAXED)

static void write_begin(struct fo_metrics *m)
{
	ST(m->seq, m->seq + 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void write_end(struct fo_metrics *m)
{
	__atomic_store_n(&m->seq, m->seq + 1, __ATOMIC_RELEASE);
}

static void store_str(uint64_t *words, size_t nwords, const char *s)
{
	uint64_t w[NAME_WORDS] = { 0 };
	size_t n = strlen(s);

	if (n > nwords * 8 - 1)
		n = nwords * 8 - 1;
	memcpy(w, s, n);
	for (size_t i = 0; i < nwords; i++)
		if (words[i] != w[i]) /* the loop is the only writer: its own reads need no atomics */
			ST(words[i], w[i]);
}

static bool str_is(const uint64_t *words, size_t nwords, const char *s)
{
	return strncmp((const char *)words, s, nwords * 8) == 0;
}

/* HTTP thread: a consistent copy into m->copy, or -EAGAIN. */
int fo_metrics_snapshot_copy(struct fo_metrics *m)
{
	const uint64_t *src = (const uint64_t *)&m->shared;
	uint64_t *dst = (uint64_t *)&m->copy;
	const size_t n = sizeof(m->shared) / sizeof(uint64_t);

	for (int tries = 0; tries < 1000; tries++) {
		uint64_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 & 1) {
			sched_yield();
			continue;
		}
		for (size_t i = 0; i < n; i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&m->seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			return 0;
	}
	return -EAGAIN;
}

_Static_assert(sizeof(struct snap) % sizeof(uint64_t) == 0, "the snapshot is copied in words");

/* ---- the loop's side --------------------------------------------------- */

int fo_metrics_new(struct fo_metrics **ret)
{
	struct fo_metrics *m = calloc(1, sizeof(*m));
	struct timespec ts;

	if (!m)
		return -ENOMEM;
	m->listen_fd = m->wake_fd[0] = m->wake_fd[1] = m->spare_fd = -1;
	for (int i = 0; i < FO_MAX_PAIRS; i++)
		m->slot_of[i] = -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	m->shared.start_s = (uint64_t)ts.tv_sec;
	*ret = m;
	return 0;
}

static int find_slot(struct fo_metrics *m, const char *name)
{
	for (int s = 0; s < FO_MAX_PAIRS; s++)
		if (m->shared.pairs[s].used && str_is(m->shared.pairs[s].name, NAME_WORDS, name))
			return s;
	return -1;
}

/* Path slot of a pair for `path`, claimed if new; -1 when all are taken. */
static int path_slot(struct pair_snap *ps, const char *path)
{
	for (int i = 0; i < PATHS_MAX; i++)
		if (ps->path[i][0] && str_is(ps->path[i], PATH_WORDS, path))
			return i;
	for (int i = 0; i < PATHS_MAX; i++)
		if (!ps->path[i][0]) {
			store_str(ps->path[i], PATH_WORDS, path);
			return i;
		}
	return -1;
}

static void observe(struct hist *h, uint64_t from_ns, uint64_t to_ns)
{
	uint64_t d;
	size_t b;

	if (!from_ns || !to_ns || to_ns < from_ns)
		return;
	d = to_ns - from_ns;
	for (b = 0; b < FO_METRICS_NBUCKETS; b++)
		if ((double)d <= fo_metrics_bucket_bounds[b] * 1e9)
			break;
	ST(h->bucket[b], h->bucket[b] + 1);
	ST(h->count, h->count + 1);
	ST(h->sum_ns, h->sum_ns + d);
}

void fo_metrics_observe(struct fo_metrics *m, const struct fo_event *e)
{
	int s = find_slot(m, e->pair);
	struct pair_snap *ps;

	if (s < 0)
		return; /* a pair not (yet) published, or kernel:ID */
	ps = &m->shared.pairs[s];
	write_begin(m);
	if (e->kind == FO_EV_SWITCHOVER || e->kind == FO_EV_DRILL) {
		const uint64_t *ph = e->phase_ns;
		int p = path_slot(ps, e->path[0] ? e->path : "unknown");

		/* A switch counts when the standby was started (ok, or degraded
		 * afterwards); aborted and failed ones are in
		 * failoverd_switchovers_failed_total. */
		if ((e->result == FO_RESULT_OK || e->result == FO_RESULT_DEGRADED) && (unsigned)e->fault < FAULTS) {
			ST(ps->by_fault[e->fault], ps->by_fault[e->fault] + 1);
			/* The same verdict as the event's MET / MISSED. */
			if (!fo_event_within_deadline(e))
				ST(ps->over_deadline, ps->over_deadline + 1);
		}
		if (p >= 0) {
			observe(&ps->hist[p][H_FAULT_TO_RUNNING], ph[FO_PHASE_FAULT], ph[FO_PHASE_UNPAUSE_DONE]);
			observe(&ps->hist[p][H_DETECTED_TO_RUNNING], ph[FO_PHASE_DETECTED], ph[FO_PHASE_UNPAUSE_DONE]);
			observe(&ps->hist[p][H_PAUSE], ph[FO_PHASE_PAUSE_ISSUED], ph[FO_PHASE_PAUSE_DONE]);
			observe(&ps->hist[p][H_UNPAUSE], ph[FO_PHASE_UNPAUSE_ISSUED], ph[FO_PHASE_UNPAUSE_DONE]);
		}
	}
	write_end(m);
}

static void clear_slot(struct pair_snap *ps)
{
	uint64_t *w = (uint64_t *)ps;

	for (size_t i = 0; i < sizeof(*ps) / sizeof(uint64_t); i++)
		if (w[i])
			ST(w[i], 0);
}

/* Give every manager pair a slot (by name, so a reload that reorders or
 * removes pairs keeps the counters of those that stay). */
static void reconcile(struct fo_metrics *m, struct fo_manager *mgr, size_t n)
{
	bool keep[FO_MAX_PAIRS] = { false };

	for (size_t i = 0; i < n; i++) {
		int s = find_slot(m, fo_pair_name(fo_manager_pair(mgr, i)));
		m->slot_of[i] = s;
		if (s >= 0)
			keep[s] = true;
	}
	for (int s = 0; s < FO_MAX_PAIRS; s++)
		if (m->shared.pairs[s].used && !keep[s])
			clear_slot(&m->shared.pairs[s]);
	for (size_t i = 0; i < n; i++) {
		const char *name = fo_pair_name(fo_manager_pair(mgr, i));

		if (m->slot_of[i] >= 0)
			continue;
		for (int s = 0; s < FO_MAX_PAIRS; s++)
			if (!m->shared.pairs[s].used) {
				store_str(m->shared.pairs[s].name, NAME_WORDS, name);
				ST(m->shared.pairs[s].used, 1);
				m->slot_of[i] = s;
				break;
			}
	}
	for (size_t i = n; i < FO_MAX_PAIRS; i++)
		m->slot_of[i] = -1;
}

bool fo_pair_protected(const struct fo_pair_view *v)
{
	const struct fo_member_view *sb = &v->m[!v->active];

	return v->state == FO_PAIR_ARMED && sb->usable && sb->state == FO_DOM_PAUSED;
}

void fo_metrics_publish(struct fo_metrics *m, struct fo_manager *mgr)
{
	size_t n = fo_manager_pair_count(mgr);
	struct fo_hv *hv = fo_manager_hv(mgr);
	const char *path = hv && hv->ops->switch_path ? hv->ops->switch_path(hv) : NULL;
	bool same = true;
	struct timespec ts;

	write_begin(m);
	for (size_t i = 0; i < FO_MAX_PAIRS && same; i++) {
		int s = m->slot_of[i];
		same = i < n ? s >= 0 &&
				       str_is(m->shared.pairs[s].name, NAME_WORDS, fo_pair_name(fo_manager_pair(mgr, i)))
			     : s < 0;
	}
	if (!same)
		reconcile(m, mgr, n);
	for (size_t i = 0; i < n; i++) {
		struct fo_pair_view v;
		struct pair_snap *ps;

		if (m->slot_of[i] < 0)
			continue;
		fo_pair_view(fo_manager_pair(mgr, i), &v);
		ps = &m->shared.pairs[m->slot_of[i]];
		ST(ps->state, v.state);
		ST(ps->protected_, fo_pair_protected(&v));
		ST(ps->switches, v.switches);
		ST(ps->deadline_ms, v.deadline_ms);
		ST(ps->failed_switches, v.failed_switches);
		ST(ps->net_blocked, v.net_enabled && v.net_blocked);
		ST(ps->net_recuts, v.net_recuts);
		for (int j = 0; j < 2; j++) {
			store_str(ps->member[j], NAME_WORDS, v.m[j].name);
			ST(ps->beats[j], v.m[j].beats);
			ST(ps->invalid[j], v.m[j].invalid);
			ST(ps->misses[j], v.m[j].misses);
			ST(ps->external_unpauses[j], v.m[j].external_unpauses);
		}
		/* The backend's switch path has its histograms (at 0) before
		 * the first switch, so rate() and alerts see them from the start. */
		if (path)
			path_slot(ps, path);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ST(m->shared.publish_ns, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	write_end(m);
}

void fo_metrics_set_stream(struct fo_metrics *m, struct fo_stream *s)
{
	if (m)
		__atomic_store_n(&m->stream, s, __ATOMIC_RELEASE);
}

void fo_metrics_free(struct fo_metrics *m)
{
	if (!m)
		return;
	fo_metrics_http_stop(m);
	free(m);
}
