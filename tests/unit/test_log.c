/* SPDX-License-Identifier: MIT */
/*
 * test_log.c - the log queue (core/log.c): a sink that blocks (a stalled
 * journald) never stalls the producer, and a loop logging on every turn
 * keeps its 10 ms deadline; what could not be queued is counted and said
 * ("N log lines dropped") once the sink writes again; order is kept.
 * Without the queue, the first line blocks the loop for good (alarm).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/events.h"
#include "lib/log.h"
#include "io/loop.h"

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER; /* held = the sink blocks */
static atomic_ulong n_written;
static char last_dropped_line[256];
static unsigned long next_expected;
static bool in_order = true;

static void blocking_sink(void *ctx, int level, const char *line)
{
	unsigned long k;

	(void)ctx;
	(void)level;
	pthread_mutex_lock(&gate);
	pthread_mutex_unlock(&gate);
	if (strstr(line, "log lines dropped"))
		snprintf(last_dropped_line, sizeof(last_dropped_line), "%s", line);
	else if (sscanf(line, "line %lu", &k) == 1) {
		in_order &= k >= next_expected;
		next_expected = k + 1;
	}
	atomic_fetch_add(&n_written, 1);
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

struct ticker {
	int tfd;
	uint64_t next, worst_late, worst_turn;
	unsigned ticks;
	unsigned long line;
};

static void on_tick(void *ctx, int fd, uint32_t events)
{
	struct ticker *t = ctx;
	uint64_t exp, now = mono_ns(), cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	(void)events;
	(void)!read(fd, &exp, sizeof(exp));
	if (now - t->next > t->worst_late)
		t->worst_late = now - t->next;
	t->ticks++;
	/* A turn that logs a lot: more than the queue holds over the run. */
	for (int i = 0; i < 20; i++)
		fo_info("line %lu", t->line++);
	/* The loop's own CPU time: a producer that spins on a full queue
	 * spends it; one that blocks on the sink never returns (the alarm and
	 * the 50 turns' bound below); a host that preempts us spends none. */
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	if (cpu > t->worst_turn)
		t->worst_turn = cpu;
	t->next += 10000000ull;
	fo_timerfd_set_abs(t->tfd, t->next);
}

static void test_stalled_sink_keeps_deadline(void)
{
	struct fo_loop *loop;
	struct ticker t = { 0 };
	unsigned long dropped;
	uint64_t t0;

	alarm(20); /* a producer that blocks on the sink never finishes: fail, do not hang */
	fo_log_set_sink(blocking_sink, NULL);
	pthread_mutex_lock(&gate); /* journald stalls */
	CHECK(fo_log_start_async() == 0, "writer thread started");
	CHECK(fo_loop_new(&loop) == 0, "loop");
	t.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	t.next = mono_ns() + 10000000ull;
	fo_timerfd_set_abs(t.tfd, t.next);
	fo_loop_add_rt(loop, t.tfd, EPOLLIN, on_tick, &t);
	t0 = mono_ns();
	while (t.ticks < 50)
		fo_loop_run_once_timeout(loop, 100);
	CHECK(mono_ns() - t0 < 700000000ull, "50 turns of 10 ms took %llu ms with the sink blocked",
	      (unsigned long long)((mono_ns() - t0) / 1000000ull));
	/* The turn's own logging is what a blocked sink would stretch; the
	 * wake-up's lateness is the machine's (a loaded CI box, no RT here). */
	CHECK(t.worst_turn < 5000000ull, "a turn's 20 log lines took up to %llu us of CPU",
	      (unsigned long long)(t.worst_turn / 1000));
	CHECK(t.worst_late < 100000000ull, "worst tick %llu us late", (unsigned long long)(t.worst_late / 1000));
	dropped = fo_log_dropped();
	CHECK(dropped > 0 && dropped < t.line, "%lu of %lu lines dropped, counted", dropped, t.line);

	pthread_mutex_unlock(&gate); /* journald is back */
	fo_log_stop_async();
	CHECK(atomic_load(&n_written) == t.line - dropped + 1, "written %lu = queued %lu + the drop line",
	      (unsigned long)atomic_load(&n_written), t.line - dropped);
	{
		char want[64];

		snprintf(want, sizeof(want), "%lu log lines dropped", dropped);
		CHECK(strncmp(last_dropped_line, want, strlen(want)) == 0, "said: \"%s\" (want \"%s\")",
		      last_dropped_line, want);
	}
	CHECK(in_order, "queued lines written in order");
	fo_loop_free(loop);
	close(t.tfd);
	alarm(0);
}

/* Many threads at once (the helper threads log too): nothing lost without
 * being counted, nothing duplicated. */
static void *spam(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5000; i++)
		fo_warn("spam %d", i);
	return NULL;
}

static atomic_ulong n_spam;

static void counting_sink(void *ctx, int level, const char *line)
{
	(void)ctx;
	(void)level;
	if (strncmp(line, "spam ", 5) == 0)
		atomic_fetch_add(&n_spam, 1);
}

static void test_concurrent_producers_accounted(void)
{
	pthread_t th[4];
	unsigned long d0 = fo_log_dropped();

	fo_log_set_sink(counting_sink, NULL);
	CHECK(fo_log_start_async() == 0, "writer thread started");
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, spam, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	fo_log_stop_async();
	CHECK(atomic_load(&n_spam) + (fo_log_dropped() - d0) == 20000, "written %lu + dropped %lu = 20000",
	      (unsigned long)atomic_load(&n_spam), fo_log_dropped() - d0);
}

/* The structured journal entry (sd_journal_sendv) blocks on a stalled
 * journald too: it is sent by the writer, with a copy of the event. */
static atomic_ulong n_events;
static bool event_intact = true;

static void blocking_event_sink(const struct fo_event *e, const char *line)
{
	pthread_mutex_lock(&gate);
	pthread_mutex_unlock(&gate);
	event_intact &= strcmp(e->pair, "brake") == 0 && strcmp(line, "switched") == 0;
	atomic_fetch_add(&n_events, 1);
}

static void test_stalled_journal_entry(void)
{
	struct fo_event e;
	uint64_t t0, worst = 0;

	alarm(20);
	memset(&e, 0, sizeof(e));
	snprintf(e.pair, sizeof(e.pair), "brake");
	fo_log_set_event_sink(blocking_event_sink);
	pthread_mutex_lock(&gate);
	CHECK(fo_log_start_async() == 0, "writer thread started");
	for (int i = 0; i < 10; i++) {
		t0 = mono_ns();
		fo_log_event(FO_LOG_NOTICE, &e, "switched");
		if (mono_ns() - t0 > worst)
			worst = mono_ns() - t0;
	}
	CHECK(worst < 1000000ull, "fo_log_event took up to %llu us with journald stalled",
	      (unsigned long long)(worst / 1000));
	pthread_mutex_unlock(&gate);
	fo_log_stop_async();
	CHECK(atomic_load(&n_events) == 10 && event_intact, "%lu events reached the sink intact",
	      (unsigned long)atomic_load(&n_events));
	fo_log_set_event_sink(NULL);
	alarm(0);
}

int main(void)
{
	RUN(test_stalled_sink_keeps_deadline);
	RUN(test_concurrent_producers_accounted);
	RUN(test_stalled_journal_entry);
	return check_summary("test_log");
}
