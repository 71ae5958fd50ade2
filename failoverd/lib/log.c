/* SPDX-License-Identifier: MIT */
/*
 * log.c - fo_log() and the queue that keeps stderr (journald's stream)
 * off the daemon's loop.
 *
 * Before fo_log_start_async() (start-up, config errors, a helper process)
 * a line is written at once, as before. After it, fo_log() only formats
 * the line into a slot of a bounded queue (Vyukov's bounded MPMC ring:
 * a CAS on the enqueue position, a sequence number per slot, no lock) and
 * one SCHED_OTHER thread writes the slots out. A stalled journald then
 * blocks that thread, never the SCHED_FIFO loop: a full queue drops the
 * line, counts it (fo_log_dropped(), exported as a metric) and the writer
 * says "N log lines dropped" as soon as it can write again. A producer
 * tries a bounded number of times and then drops, so fo_log() is
 * wait-free for the loop even against the helper threads logging at once.
 */
#include "log.h"


#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define LOGQ_SLOTS 256  /* a power of two; 256 KiB of lines, locked with the rest */
#define LOGQ_TRIES 8    /* CAS attempts before a producer gives the line up */

struct logq_slot {
	atomic_size_t seq;
	int level;
	bool has_data; /* fo_log_attached(): `data` goes to the attachment sink with the line */
	char line[FO_LOG_LINE_MAX];
	_Alignas(max_align_t) unsigned char data[FO_LOG_ATTACH_MAX];
};

static enum fo_log_level current_level = FO_LOG_INFO;
static atomic_ulong log_calls;

static struct {
	struct logq_slot slots[LOGQ_SLOTS];
	atomic_size_t enq;
	size_t deq;                  /* the writer thread's */
	atomic_ulong dropped;
	unsigned long reported;      /* the writer thread's */
	atomic_bool on;
	atomic_bool stop;
	int efd;
	pthread_t thread;
	fo_log_sink sink;
	void *sink_ctx;
	fo_log_attached_sink attached_sink;
} q = { .efd = -1 };

unsigned long fo_log_calls(void) { return atomic_load_explicit(&log_calls, memory_order_relaxed); }
unsigned long fo_log_dropped(void) { return atomic_load_explicit(&q.dropped, memory_order_relaxed); }

void fo_log_set_level(enum fo_log_level level) { current_level = level; }
enum fo_log_level fo_log_get_level(void) { return current_level; }

/* One write per line so concurrent writers (and journald) never see a line
 * torn in two. The "<N>" prefix is sd-daemon(3)'s priority prefix. */
static void write_line(int level, const char *line)
{
	if (q.sink) {
		q.sink(q.sink_ctx, level, line);
		return;
	}
	fprintf(stderr, "<%d>failoverd: %s\n", 3 + level, line);
}

void fo_log_set_sink(fo_log_sink sink, void *ctx)
{
	q.sink = sink;
	q.sink_ctx = ctx;
}

void fo_log_set_attached_sink(fo_log_attached_sink sink)
{
	q.attached_sink = sink;
}

/* Claim a slot: its index, or -1 (full, or contended LOGQ_TRIES times). */
static long claim(void)
{
	size_t pos = atomic_load_explicit(&q.enq, memory_order_relaxed);

	for (int i = 0; i < LOGQ_TRIES; i++) {
		struct logq_slot *s = &q.slots[pos % LOGQ_SLOTS];
		size_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		intptr_t diff = (intptr_t)seq - (intptr_t)pos;

		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(&q.enq, &pos, pos + 1, memory_order_relaxed,
								  memory_order_relaxed))
				return (long)pos;
		} else if (diff < 0) {
			return -1; /* full: the writer has not freed this slot */
		} else {
			pos = atomic_load_explicit(&q.enq, memory_order_relaxed);
		}
	}
	return -1;
}

static void publish(long pos)
{
	uint64_t one = 1;

	atomic_store_explicit(&q.slots[pos % LOGQ_SLOTS].seq, (size_t)pos + 1, memory_order_release);
	/* Never blocks: a non-blocking eventfd whose counter cannot fill. */
	(void)!write(q.efd, &one, sizeof(one));
}

static void drop(void)
{
	atomic_fetch_add_explicit(&q.dropped, 1, memory_order_relaxed);
}

/* Queue one line (and its attachment): the one producer. Returns false if
 * the queue was full (counted as dropped). */
static bool enqueue(int level, const char *line, size_t n, const void *data, size_t len)
{
	struct logq_slot *s;
	long pos = claim();

	if (pos < 0) {
		drop();
		return false;
	}
	s = &q.slots[pos % LOGQ_SLOTS];
	if (n >= FO_LOG_LINE_MAX)
		n = FO_LOG_LINE_MAX - 1;
	memcpy(s->line, line, n);
	s->line[n] = '\0';
	s->level = level;
	s->has_data = data != NULL;
	if (data)
		memcpy(s->data, data, len);
	publish(pos);
	return true;
}

void fo_log(enum fo_log_level level, const char *fmt, ...)
{
	char line[FO_LOG_LINE_MAX];
	va_list ap;
	int n;

	atomic_fetch_add_explicit(&log_calls, 1, memory_order_relaxed);
	if (level > current_level)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (!atomic_load_explicit(&q.on, memory_order_acquire)) {
		write_line((int)level, line);
		return;
	}
	enqueue((int)level, line, strlen(line), NULL, 0);
}

void fo_log_attached(enum fo_log_level level, const void *data, size_t len, const char *line)
{
	atomic_fetch_add_explicit(&log_calls, 1, memory_order_relaxed);
	if (len > FO_LOG_ATTACH_MAX) {
		drop(); /* a caller's bug; its size is asserted where it is known */
		return;
	}
	if (!q.attached_sink && level > current_level)
		return;
	if (!atomic_load_explicit(&q.on, memory_order_acquire)) {
		if (q.attached_sink)
			q.attached_sink(data, line);
		else
			write_line((int)level, line);
		return;
	}
	enqueue((int)level, line, strlen(line), data, len);
}

void fo_log_signal_safe(enum fo_log_level level, const char *msg)
{
	if (!atomic_load_explicit(&q.on, memory_order_acquire)) {
		(void)!write(STDERR_FILENO, msg, strlen(msg));
		(void)!write(STDERR_FILENO, "\n", 1);
		return;
	}
	enqueue((int)level, msg, strlen(msg), NULL, 0);
}

/* The writer: everything queued, in order, then what was dropped. */
static bool drain(void)
{
	bool any = false;
	unsigned long d;

	for (;;) {
		struct logq_slot *s = &q.slots[q.deq % LOGQ_SLOTS];

		if (atomic_load_explicit(&s->seq, memory_order_acquire) != q.deq + 1)
			break;
		if (s->has_data && q.attached_sink)
			q.attached_sink(s->data, s->line);
		else
			write_line(s->level, s->line);
		atomic_store_explicit(&s->seq, q.deq + LOGQ_SLOTS, memory_order_release);
		q.deq++;
		any = true;
	}
	d = fo_log_dropped();
	if (d != q.reported) {
		char line[96];

		snprintf(line, sizeof(line), "%lu log lines dropped (the log queue was full: journald or stderr slow)",
			 d - q.reported);
		q.reported = d;
		write_line(FO_LOG_WARNING, line);
	}
	return any;
}

static void *writer_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pfd = { .fd = q.efd, .events = POLLIN };
		uint64_t n;
		bool stopping = atomic_load(&q.stop);

		drain();
		if (stopping)
			break;
		poll(&pfd, 1, 1000); /* the second is for a drop with nothing queued after it */
		(void)!read(q.efd, &n, sizeof(n));
	}
	return NULL;
}

int fo_log_start_async(void)
{
	pthread_attr_t attr;
	struct sched_param sp = { 0 };
	sigset_t all, old;
	int r;

	if (atomic_load(&q.on))
		return 0;
	for (size_t i = 0; i < LOGQ_SLOTS; i++)
		atomic_store(&q.slots[i].seq, i);
	atomic_store(&q.enq, 0);
	q.deq = 0;
	atomic_store(&q.stop, false);
	q.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q.efd < 0)
		return -errno;
	/* SCHED_OTHER whatever the caller is (the loop may already be
	 * SCHED_FIFO), all signals blocked: they are the loop's. */
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &sp);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&q.thread, &attr, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r) {
		close(q.efd);
		q.efd = -1;
		return -r;
	}
	pthread_setname_np(q.thread, "fo-log");
	atomic_store_explicit(&q.on, true, memory_order_release);
	return 0;
}

void fo_log_stop_async(void)
{
	uint64_t one = 1;

	if (!atomic_load(&q.on))
		return;
	atomic_store(&q.stop, true);
	(void)!write(q.efd, &one, sizeof(one));
	pthread_join(q.thread, NULL);
	/* Lines logged while it was stopping: written here, in order. */
	drain();
	atomic_store(&q.on, false);
	drain();
	close(q.efd);
	q.efd = -1;
}

bool fo_ratelimit_ok(struct fo_ratelimit *rl, uint64_t now_ns)
{
	if (now_ns - rl->window_start >= rl->interval_ns) {
		if (rl->suppressed)
			fo_log(FO_LOG_WARNING, "(%u similar messages suppressed)", rl->suppressed);
		rl->window_start = now_ns;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	if (rl->printed < rl->burst) {
		rl->printed++;
		return true;
	}
	rl->suppressed++;
	return false;
}
