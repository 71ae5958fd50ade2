/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - Prometheus /metrics over HTTP from a non-real-time thread.
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
 *
 * The HTTP side: one listening socket, at most FO_METRICS_MAX_CLIENTS
 * connections at once (more are answered 503 and closed), each given
 * FO_METRICS_TIMEOUT_MS in total to send a request head of at most
 * FO_METRICS_REQUEST_MAX bytes and read the reply; one request per
 * connection (Connection: close). Only GET /metrics (a query string is
 * ignored): another path is 404, another method 405.
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/config/config.h"
#include "lib/log.h"
#include "../core/manager.h"
#include "core/pair/pair.h"

#ifndef FO_VERSION
#define FO_VERSION "unknown"
#endif

const double fo_metrics_bucket_bounds[FO_METRICS_NBUCKETS] = {
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025,   0.05,     0.1,     0.25,   0.5,     1,      2.5,   5,      10,
};

/* Histograms per pair and switch path. */
enum { H_FAULT_TO_RUNNING, H_DETECTED_TO_RUNNING, H_PAUSE, H_UNPAUSE, H_COUNT };
static const struct {
	const char *name, *help;
} hist_families[H_COUNT] = {
	{ "failoverd_fault_to_running_seconds",
	  "Fault (drill: injection; heartbeat loss: the expired deadline) to standby confirmed running, per switch." },
	{ "failoverd_detected_to_running_seconds", "Fault detected to standby confirmed running, per switch." },
	{ "failoverd_pause_seconds", "Pause of the old active: issued to confirmed not running, per switch." },
	{ "failoverd_unpause_seconds", "Unpause of the standby: issued to confirmed running, per switch." },
};

#define PATHS_MAX   4  /* "sim", "xenctrl", "kernel", one more */
#define NAME_WORDS  9  /* 72 bytes: a pair or domain name (64) and its NUL */
#define PATH_WORDS  2  /* 16 bytes: struct fo_event.path */
#define FAULTS      8  /* enum fo_fault: none .. heartbeat-stuck */
#define STATES      (FO_PAIR_REBUILDING + 1)

/* Everything shared is a uint64_t word, read and written atomically. */
struct hist {
	uint64_t bucket[FO_METRICS_NBUCKETS + 1]; /* non-cumulative; the last is +Inf */
	uint64_t count, sum_ns;
};

struct pair_snap {
	uint64_t used;
	uint64_t name[NAME_WORDS];
	uint64_t member[2][NAME_WORDS];
	uint64_t state, protected_;
	uint64_t switches, failed_switches;
	uint64_t beats[2], invalid[2], misses[2];
	uint64_t external_unpauses[2]; /* per member: found running by the fence audit */
	uint64_t over_deadline;  /* switches that missed deadline_ms or the fault budget */
	uint64_t deadline_ms;
	uint64_t by_fault[FAULTS];
	uint64_t path[PATHS_MAX][PATH_WORDS]; /* "" = unused */
	struct hist hist[PATHS_MAX][H_COUNT];
};

struct snap {
	uint64_t publish_ns; /* CLOCK_MONOTONIC of the loop's last publish; 0 = never */
	uint64_t start_s;    /* CLOCK_REALTIME at start */
	struct pair_snap pairs[FO_MAX_PAIRS];
};

struct fo_metrics {
	uint64_t seq; /* odd while the loop writes */
	struct snap shared;
	/* Loop-only: which slot each manager pair has. */
	int slot_of[FO_MAX_PAIRS];
	/* HTTP thread. */
	struct snap copy;
	bool started;
	pthread_t thread;
	int listen_fd, wake_fd[2];
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
static int snapshot_copy(struct fo_metrics *m)
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
	m->listen_fd = m->wake_fd[0] = m->wake_fd[1] = -1;
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
		int s = find_slot(m, fo_manager_pair(mgr, i)->cfg.name);
		m->slot_of[i] = s;
		if (s >= 0)
			keep[s] = true;
	}
	for (int s = 0; s < FO_MAX_PAIRS; s++)
		if (m->shared.pairs[s].used && !keep[s])
			clear_slot(&m->shared.pairs[s]);
	for (size_t i = 0; i < n; i++) {
		struct fo_pair *p = fo_manager_pair(mgr, i);

		if (m->slot_of[i] >= 0)
			continue;
		for (int s = 0; s < FO_MAX_PAIRS; s++)
			if (!m->shared.pairs[s].used) {
				store_str(m->shared.pairs[s].name, NAME_WORDS, p->cfg.name);
				ST(m->shared.pairs[s].used, 1);
				m->slot_of[i] = s;
				break;
			}
	}
	for (size_t i = n; i < FO_MAX_PAIRS; i++)
		m->slot_of[i] = -1;
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
		same = i < n ? s >= 0 && str_is(m->shared.pairs[s].name, NAME_WORDS, fo_manager_pair(mgr, i)->cfg.name)
			     : s < 0;
	}
	if (!same)
		reconcile(m, mgr, n);
	for (size_t i = 0; i < n; i++) {
		struct fo_pair *p = fo_manager_pair(mgr, i);
		const struct fo_member *sb = fo_pair_standby(p);
		struct pair_snap *ps;

		if (m->slot_of[i] < 0)
			continue;
		ps = &m->shared.pairs[m->slot_of[i]];
		ST(ps->state, p->state);
		/* Protected: ARMED, and the standby verified and paused, ready to take over. */
		ST(ps->protected_, p->state == FO_PAIR_ARMED && sb->usable && sb->state == FO_DOM_PAUSED);
		ST(ps->switches, p->stats.switches);
		ST(ps->deadline_ms, p->cfg.deadline_ms);
		ST(ps->failed_switches, p->stats.failed_switches);
		for (int j = 0; j < 2; j++) {
			store_str(ps->member[j], NAME_WORDS, p->m[j].name);
			ST(ps->beats[j], p->m[j].hb.beats);
			ST(ps->invalid[j], p->m[j].hb.invalid);
			ST(ps->misses[j], p->m[j].misses);
			ST(ps->external_unpauses[j], p->m[j].external_unpauses);
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

/* ---- rendering (HTTP thread, from m->copy) ------------------------------ */

void fo_metrics_escape_label(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '"')
			fputs("\\\"", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{pair="...",<key>="<value>"} : the series prefix, value follows. */
static void series(FILE *out, const char *name, const struct pair_snap *ps, const char *key, const char *value)
{
	fprintf(out, "%s{pair=\"", name);
	fo_metrics_escape_label(out, (const char *)ps->name);
	if (key) {
		fprintf(out, "\",%s=\"", key);
		fo_metrics_escape_label(out, value);
	}
	fputs("\"} ", out);
}

static void per_member(FILE *out, const struct snap *sn, const char *name, const char *type, const char *help,
		       size_t offset)
{
	family(out, name, type, help);
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];
		const uint64_t *v = (const uint64_t *)((const char *)ps + offset);

		if (!ps->used)
			continue;
		for (int j = 0; j < 2; j++) {
			series(out, name, ps, "member", (const char *)ps->member[j]);
			fprintf(out, "%llu\n", (unsigned long long)v[j]);
		}
	}
}

static void per_pair(FILE *out, const struct snap *sn, const char *name, const char *type, const char *help,
		     size_t offset)
{
	family(out, name, type, help);
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		series(out, name, ps, NULL, NULL);
		fprintf(out, "%llu\n", (unsigned long long)*(const uint64_t *)((const char *)ps + offset));
	}
}

static void render_hist(FILE *out, const struct snap *sn, int h)
{
	const char *name = hist_families[h].name;

	family(out, name, "histogram", hist_families[h].help);
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		for (int p = 0; p < PATHS_MAX; p++) {
			const struct hist *hi = &ps->hist[p][h];
			const char *path = (const char *)ps->path[p];
			uint64_t cum = 0;

			if (!path[0])
				continue;
			for (int b = 0; b <= FO_METRICS_NBUCKETS; b++) {
				cum += hi->bucket[b];
				fprintf(out, "%s_bucket{pair=\"", name);
				fo_metrics_escape_label(out, (const char *)ps->name);
				fputs("\",path=\"", out);
				fo_metrics_escape_label(out, path);
				if (b < FO_METRICS_NBUCKETS)
					fprintf(out, "\",le=\"%g\"} %llu\n", fo_metrics_bucket_bounds[b],
						(unsigned long long)cum);
				else
					fprintf(out, "\",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
			}
			fprintf(out, "%s_sum{pair=\"", name);
			fo_metrics_escape_label(out, (const char *)ps->name);
			fputs("\",path=\"", out);
			fo_metrics_escape_label(out, path);
			fprintf(out, "\"} %.9f\n", (double)hi->sum_ns / 1e9);
			fprintf(out, "%s_count{pair=\"", name);
			fo_metrics_escape_label(out, (const char *)ps->name);
			fputs("\",path=\"", out);
			fo_metrics_escape_label(out, path);
			fprintf(out, "\"} %llu\n", (unsigned long long)hi->count);
		}
	}
}

int fo_metrics_render(struct fo_metrics *m, FILE *out)
{
	const struct snap *sn = &m->copy;
	struct timespec ts;
	uint64_t now;

	if (snapshot_copy(m) < 0)
		return -EAGAIN;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;

	family(out, "failoverd_build_info", "gauge", "failoverd's version (always 1).");
	fprintf(out, "failoverd_build_info{version=\"");
	fo_metrics_escape_label(out, FO_VERSION);
	fprintf(out, "\"} 1\n");
	family(out, "failoverd_log_dropped_total", "counter",
	       "Log lines lost to a full log queue (journald or stderr slow); each loss is also said in the log.");
	fprintf(out, "failoverd_log_dropped_total %lu\n", fo_log_dropped());
	family(out, "failoverd_start_time_seconds", "gauge", "When failoverd started (Unix time).");
	fprintf(out, "failoverd_start_time_seconds %llu\n", (unsigned long long)sn->start_s);
	family(out, "failoverd_snapshot_age_seconds", "gauge",
	       "Since the real-time loop last published these numbers (it does after every event it handles).");
	fprintf(out, "failoverd_snapshot_age_seconds %.6f\n",
		sn->publish_ns && now >= sn->publish_ns ? (double)(now - sn->publish_ns) / 1e9 : 0.0);

	family(out, "failoverd_pair_state", "gauge", "Pair state (1 for the current state).");
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		for (int st = 0; st < STATES; st++) {
			series(out, "failoverd_pair_state", ps, "state", fo_pair_state_name((enum fo_pair_state)st));
			fprintf(out, "%d\n", ps->state == (uint64_t)st);
		}
	}
	per_pair(out, sn, "failoverd_pair_protected", "gauge",
		 "1 when the pair is ARMED with a verified, paused standby: a failure of the active is covered.",
		 offsetof(struct pair_snap, protected_));
	per_pair(out, sn, "failoverd_switchovers_total", "counter", "Switchovers that started the standby.",
		 offsetof(struct pair_snap, switches));
	per_pair(out, sn, "failoverd_switchovers_failed_total", "counter", "Switchovers aborted or failed.",
		 offsetof(struct pair_snap, failed_switches));
	family(out, "failoverd_switches_by_fault_total", "counter",
	       "Switches that started the standby, by the fault that caused them.");
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		for (int f = 1; f < FAULTS; f++) {
			series(out, "failoverd_switches_by_fault_total", ps, "fault", fo_fault_name((enum fo_fault)f));
			fprintf(out, "%llu\n", (unsigned long long)ps->by_fault[f]);
		}
	}
	per_pair(out, sn, "failoverd_switches_over_deadline_total", "counter",
		 "Switches that started the standby too late: detected to running over deadline_ms, or fault to "
		 "running over timeout + period + deadline (the event's MISSED).",
		 offsetof(struct pair_snap, over_deadline));
	family(out, "failoverd_pair_deadline_seconds", "gauge", "The pair's deadline_ms: detected to standby running.");
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		series(out, "failoverd_pair_deadline_seconds", ps, NULL, NULL);
		fprintf(out, "%.3f\n", (double)ps->deadline_ms / 1e3);
	}
	per_member(out, sn, "failoverd_heartbeats_total", "counter", "Valid heartbeats that made progress.",
		   offsetof(struct pair_snap, beats));
	per_member(out, sn, "failoverd_heartbeat_invalid_total", "counter", "Heartbeat pages rejected as invalid.",
		   offsetof(struct pair_snap, invalid));
	per_member(out, sn, "failoverd_heartbeat_misses_total", "counter", "Heartbeat deadlines that expired.",
		   offsetof(struct pair_snap, misses));
	per_member(out, sn, "failoverd_external_unpause_total", "counter",
		   "Times the fence audit found a member running that should be paused (unpaused outside failoverd).",
		   offsetof(struct pair_snap, external_unpauses));
	for (int h = 0; h < H_COUNT; h++)
		render_hist(out, sn, h);
	return 0;
}

/* ---- HTTP ----------------------------------------------------------------- */

int fo_metrics_http_parse(const char *req, size_t len, int *status)
{
	const char *end = NULL, *sp1, *sp2, *eol;
	size_t mlen, tlen;

	for (size_t i = 0; i + 1 < len && !end; i++) {
		if (req[i] == '\n' && req[i + 1] == '\n')
			end = req + i;
		else if (i + 3 < len && memcmp(req + i, "\r\n\r\n", 4) == 0)
			end = req + i;
	}
	if (!end) {
		if (len >= FO_METRICS_REQUEST_MAX) {
			*status = 431;
			return 1;
		}
		if (memchr(req, '\0', len)) {
			*status = 400;
			return 1;
		}
		return 0;
	}
	/* The head ends in a blank line, so the request line has its '\n'
	 * (end points at the '\n' or '\r' that ends it, or before). */
	eol = memchr(req, '\n', len);
	sp1 = memchr(req, ' ', (size_t)(eol - req));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || (size_t)(eol - sp2) < 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		*status = 400;
		return 1;
	}
	mlen = (size_t)(sp1 - req);
	tlen = (size_t)(sp2 - sp1 - 1);
	for (size_t i = 0; i < mlen; i++)
		if (req[i] < 'A' || req[i] > 'Z') {
			*status = 400;
			return 1;
		}
	if (mlen != 3 || memcmp(req, "GET", 3) != 0)
		*status = 405;
	else if ((tlen == 8 && memcmp(sp1 + 1, "/metrics", 8) == 0) ||
		 (tlen > 8 && memcmp(sp1 + 1, "/metrics?", 9) == 0))
		*status = 200;
	else
		*status = 404;
	return 1;
}

struct client {
	int fd;           /* -1 = free */
	uint64_t deadline_ms;
	char in[FO_METRICS_REQUEST_MAX];
	size_t in_len;
	char *out;        /* response being written */
	size_t out_len, out_off;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void client_reset(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->in_len = c->out_len = c->out_off = 0;
}

static void respond(struct fo_metrics *m, struct client *c, int status)
{
	static const struct {
		int code;
		const char *reason, *body;
	} texts[] = {
		{ 400, "Bad Request", "bad request\n" },
		{ 404, "Not Found", "not found: the metrics are at /metrics\n" },
		{ 405, "Method Not Allowed", "method not allowed: GET /metrics\n" },
		{ 431, "Request Header Fields Too Large", "request too large\n" },
		{ 503, "Service Unavailable", "busy, try again\n" },
	};
	char *body = NULL, *resp = NULL;
	size_t body_len = 0, resp_len = 0;
	const char *reason = "OK", *ctype = "text/plain; version=0.0.4; charset=utf-8";
	FILE *f;

	if (status == 200) {
		f = open_memstream(&body, &body_len);
		if (!f || fo_metrics_render(m, f) < 0)
			status = 503;
		if (f)
			fclose(f);
	}
	if (status != 200) {
		free(body);
		body = NULL;
		ctype = "text/plain; charset=utf-8";
		for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
			if (texts[i].code == status) {
				reason = texts[i].reason;
				body = strdup(texts[i].body);
			}
		body_len = body ? strlen(body) : 0;
	}
	f = open_memstream(&resp, &resp_len);
	if (f) {
		fprintf(f, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
			status, reason, ctype, body_len, status == 405 ? "Allow: GET\r\n" : "");
		if (body)
			fwrite(body, 1, body_len, f);
		fclose(f);
	}
	free(body);
	c->out = resp;
	c->out_len = resp ? resp_len : 0;
	c->out_off = 0;
	if (!resp)
		client_reset(c);
}

static void client_io(struct fo_metrics *m, struct client *c, short revents)
{
	if (c->out) {
		while (c->out_off < c->out_len) {
			ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
					return;
				break;
			}
			c->out_off += (size_t)n;
		}
		/* Done (or the client went away): one request per connection. */
		client_reset(c);
		return;
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		int status;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			client_reset(c);
			return;
		}
		if (n < 0)
			return;
		c->in_len += (size_t)n;
		if (fo_metrics_http_parse(c->in, c->in_len, &status)) {
			shutdown(c->fd, SHUT_RD);
			respond(m, c, status);
			if (c->fd >= 0)
				client_io(m, c, 0);
		}
	}
}

static void *http_thread(void *arg)
{
	struct fo_metrics *m = arg;
	struct client cl[FO_METRICS_MAX_CLIENTS];

	for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++) {
		cl[i].fd = -1;
		cl[i].out = NULL;
	}
	for (;;) {
		struct pollfd pfd[2 + FO_METRICS_MAX_CLIENTS];
		int idx[FO_METRICS_MAX_CLIENTS], np = 2, timeout = -1;
		uint64_t now = mono_ms();

		pfd[0] = (struct pollfd){ .fd = m->wake_fd[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = m->listen_fd, .events = POLLIN };
		for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++) {
			idx[i] = -1;
			if (cl[i].fd < 0)
				continue;
			if (now >= cl[i].deadline_ms) { /* too slow to ask or to read */
				client_reset(&cl[i]);
				continue;
			}
			if (timeout < 0 || cl[i].deadline_ms - now < (uint64_t)timeout)
				timeout = (int)(cl[i].deadline_ms - now);
			idx[i] = np;
			pfd[np++] = (struct pollfd){ .fd = cl[i].fd, .events = cl[i].out ? POLLOUT : POLLIN };
		}
		if (poll(pfd, (nfds_t)np, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break; /* stop */
		for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++)
			if (idx[i] >= 0 && pfd[idx[i]].revents)
				client_io(m, &cl[i], pfd[idx[i]].revents);
		if (pfd[1].revents & POLLIN) {
			int fd = accept4(m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			struct client *c = NULL;

			if (fd < 0)
				continue;
			for (int i = 0; i < FO_METRICS_MAX_CLIENTS && !c; i++)
				if (cl[i].fd < 0)
					c = &cl[i];
			if (!c) {
				static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
							   "Connection: close\r\nRetry-After: 1\r\n\r\n";
				(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
				close(fd);
				continue;
			}
			c->fd = fd;
			c->in_len = 0;
			c->deadline_ms = mono_ms() + FO_METRICS_TIMEOUT_MS;
		}
	}
	for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++)
		client_reset(&cl[i]);
	return NULL;
}

int fo_metrics_http_start(struct fo_metrics *m, const char *listen_addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	unsigned sslen;
	pthread_attr_t attr;
	struct sched_param sp = { 0 };
	sigset_t all, old;
	int one = 1, r;

	if (fo_config_parse_listen(listen_addr, &ss, &sslen) < 0) {
		snprintf(err, errlen, "%s: not an address:port", listen_addr);
		return -EINVAL;
	}
	m->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->listen_fd < 0 || setsockopt(m->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(m->listen_fd, (struct sockaddr *)&ss, sslen) < 0 || listen(m->listen_fd, 8) < 0 ||
	    pipe2(m->wake_fd, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", listen_addr, strerror(errno));
		goto fail;
	}
	/* Explicitly SCHED_OTHER with a small stack (mlockall locks all of it):
	 * never the loop's real-time class, whatever the creator runs at.
	 * Every signal blocked: they belong to the loop's signalfd. */
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &sp);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&m->thread, &attr, http_thread, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		snprintf(err, errlen, "%s: thread: %s", listen_addr, strerror(-r));
		goto fail;
	}
	pthread_setname_np(m->thread, "fo-metrics");
	m->started = true;
	return 0;
fail:
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	m->listen_fd = -1;
	for (int i = 0; i < 2; i++) {
		if (m->wake_fd[i] >= 0)
			close(m->wake_fd[i]);
		m->wake_fd[i] = -1;
	}
	return r;
}

void fo_metrics_http_stop(struct fo_metrics *m)
{
	if (!m)
		return;
	if (m->started) {
		(void)!write(m->wake_fd[1], "x", 1);
		pthread_join(m->thread, NULL);
		m->started = false;
	}
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	for (int i = 0; i < 2; i++)
		if (m->wake_fd[i] >= 0)
			close(m->wake_fd[i]);
	m->listen_fd = m->wake_fd[0] = m->wake_fd[1] = -1;
}

void fo_metrics_free(struct fo_metrics *m)
{
	if (!m)
		return;
	fo_metrics_http_stop(m);
	free(m);
}
