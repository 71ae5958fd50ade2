/* SPDX-License-Identifier: MIT */
/*
 * threads.c - what the backend's helper threads (reader, writer, builder,
 * and the state relay's) share: starting one, the queue lock and wake-up,
 * stopping it, and the eventfd that tells the loop results are waiting.
 *
 * Helper threads run SCHED_OTHER, never the loop's SCHED_FIFO: their work
 * takes milliseconds to seconds and must not starve dom0, or the loop when
 * they share its CPU.
 */
#include "hv/xen/xen_internal.h"

#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

/*
 * A helper's stack. glibc's default is RLIMIT_STACK (8 MiB here), and
 * mlockall(MCL_FUTURE) faults every thread's stack in whole: four helpers
 * were 32 of the 52 MiB failoverd held resident and locked on real Xen
 * (bench/results/2026-11-28-scale-xen/notes.md). Their work is xenstore,
 * libxenctrl and cJSON calls (libxl runs in the forked fo-libxl process,
 * builder.c), far inside this; cJSON's nesting limit (1000 levels) bounds
 * the deepest parse.
 */
#define XEN_HELPER_STACK_BYTES (512u * 1024u)

/*
 * Start a helper thread at SCHED_OTHER whatever the caller runs at (the
 * loop is SCHED_FIFO once real-time setup ran, and threads inherit that),
 * with every signal blocked but `unblocked_signo` (0: none): the daemon
 * takes its signals through a signalfd, so they must stay blocked in every
 * thread, whatever the caller's mask is right now.
 */
int xen_start_helper_thread(pthread_t *thread, void *(*fn)(void *), void *arg, int unblocked_signo)
{
	struct sched_param sp = { .sched_priority = 0 };
	pthread_attr_t attr;
	sigset_t mask, old;
	int r;

	r = pthread_attr_init(&attr);
	if (r)
		return -r;
	r = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	if (!r)
		r = pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	if (!r)
		r = pthread_attr_setschedparam(&attr, &sp);
	if (!r)
		r = pthread_attr_setstacksize(&attr, XEN_HELPER_STACK_BYTES);
	if (r)
		goto out;
	sigfillset(&mask);
	if (unblocked_signo)
		sigdelset(&mask, unblocked_signo);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	r = pthread_create(thread, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
	pthread_attr_destroy(&attr);
	return -r;
}

/* The loop (SCHED_FIFO) takes every helper's lock (to queue work and
 * collect results), so it is priority-inheriting: while the helper holds
 * it, the helper runs at the loop's priority. Always paired with
 * xen_helper_destroy(), even when xen_helper_start() never ran. */
void xen_helper_init(struct xen_helper *h)
{
	pthread_mutexattr_t ma;

	h->event_fd = -1;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&h->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&h->wake, NULL);
}

int xen_helper_start(struct xen_helper *h, void *(*fn)(void *), void *arg, int unblocked_signo)
{
	int r;

	h->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->event_fd < 0)
		return neg_errno();
	r = xen_start_helper_thread(&h->thread, fn, arg, unblocked_signo);
	if (r < 0)
		return r;
	h->running = true;
	return 0;
}

/* Tell the thread to stop and wait for it (it finishes what it is doing). */
void xen_helper_join(struct xen_helper *h)
{
	if (!h->running)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	h->running = false;
}

void xen_helper_destroy(struct xen_helper *h)
{
	if (h->event_fd >= 0)
		close(h->event_fd);
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
}

/* Helper thread: results are waiting (the loop's fd becomes readable). */
void xen_helper_post(struct xen_helper *h)
{
	uint64_t one = 1;

	if (write(h->event_fd, &one, sizeof(one)) < 0) {
		/* cannot fail short of EAGAIN at 2^64-1 */
	}
}

/* Loop: the fd is quiet again; the results themselves are taken under the
 * lock, so clearing before taking never loses one. */
void xen_helper_clear(struct xen_helper *h)
{
	uint64_t count;

	if (read(h->event_fd, &count, sizeof(count)) < 0) {
		/* EAGAIN: a previous dispatch already took them */
	}
}
