/* SPDX-License-Identifier: MIT */
#include "loop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define FO_LOOP_MAX_FDS 128

struct fo_loop_entry {
	int fd; /* -1 = free */
	fo_loop_handler handler;
	void *ctx;
	bool rt;    /* in rt_epfd: served before and between other handlers */
	bool again; /* fo_loop_again(): run on the next turn without waiting */
};

/*
 * Two epoll sets: rt_epfd holds the real-time fds (fo_loop_add_rt) and is
 * itself one member of epfd, next to everything else. A turn serves the
 * real-time set first, then each other ready handler followed by another
 * non-blocking look at the real-time set: a heartbeat or deadline that
 * becomes ready while the control socket is being served waits for one
 * handler, not for the rest of the batch.
 */
struct fo_loop {
	int epfd;
	int rt_epfd;
	struct fo_loop_entry rt_marker; /* epfd's entry for rt_epfd */
	struct fo_loop_entry entries[FO_LOOP_MAX_FDS];
	void (*rt_done)(void *ctx); /* fo_loop_set_rt_done */
	void *rt_done_ctx;
};

int fo_loop_new(struct fo_loop **ret)
{
	struct fo_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &l->rt_marker };

	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->rt_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0 || l->rt_epfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->rt_epfd, &ev) < 0) {
		int r = -errno;
		if (l->epfd >= 0)
			close(l->epfd);
		if (l->rt_epfd >= 0)
			close(l->rt_epfd);
		free(l);
		return r;
	}
	l->rt_marker.fd = -1; /* never called: its readiness means "look at rt_epfd" */
	for (int i = 0; i < FO_LOOP_MAX_FDS; i++)
		l->entries[i].fd = -1;
	*ret = l;
	return 0;
}

struct fo_loop *fo_loop_free(struct fo_loop *l)
{
	if (l) {
		close(l->epfd);
		close(l->rt_epfd);
		free(l);
	}
	return NULL;
}

static int add(struct fo_loop *l, int fd, uint32_t events, fo_loop_handler h, void *ctx, bool rt)
{
	for (int i = 0; i < FO_LOOP_MAX_FDS; i++) {
		struct fo_loop_entry *e = &l->entries[i];
		if (e->fd >= 0)
			continue;
		struct epoll_event ev = { .events = events, .data.ptr = e };
		if (epoll_ctl(rt ? l->rt_epfd : l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
			return -errno;
		*e = (struct fo_loop_entry){ .fd = fd, .handler = h, .ctx = ctx, .rt = rt };
		return 0;
	}
	return -ENOSPC;
}

int fo_loop_add(struct fo_loop *l, int fd, uint32_t events, fo_loop_handler h, void *ctx)
{
	return add(l, fd, events, h, ctx, false);
}

int fo_loop_add_rt(struct fo_loop *l, int fd, uint32_t events, fo_loop_handler h, void *ctx)
{
	return add(l, fd, events, h, ctx, true);
}

static struct fo_loop_entry *find(struct fo_loop *l, int fd)
{
	for (int i = 0; i < FO_LOOP_MAX_FDS; i++)
		if (l->entries[i].fd == fd)
			return &l->entries[i];
	return NULL;
}

int fo_loop_modify(struct fo_loop *l, int fd, uint32_t events)
{
	struct fo_loop_entry *e = find(l, fd);
	struct epoll_event ev = { .events = events, .data.ptr = e };

	if (!e)
		return -ENOENT;
	return epoll_ctl(e->rt ? l->rt_epfd : l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void fo_loop_again(struct fo_loop *l, int fd)
{
	struct fo_loop_entry *e = find(l, fd);

	if (e)
		e->again = true;
}

void fo_loop_remove(struct fo_loop *l, int fd)
{
	struct fo_loop_entry *e = find(l, fd);

	if (!e)
		return;
	epoll_ctl(e->rt ? l->rt_epfd : l->epfd, EPOLL_CTL_DEL, fd, NULL);
	e->fd = -1;
	e->again = false;
}

void fo_loop_set_rt_done(struct fo_loop *l, void (*fn)(void *ctx), void *ctx)
{
	l->rt_done = fn;
	l->rt_done_ctx = ctx;
}

/* Every ready real-time handler, without waiting; then, if any ran, the
 * work they left for after all of them (fo_loop_set_rt_done). */
static void serve_rt(struct fo_loop *l)
{
	struct epoll_event evs[FO_LOOP_MAX_FDS];
	int n = epoll_wait(l->rt_epfd, evs, FO_LOOP_MAX_FDS, 0);

	for (int i = 0; i < n; i++) {
		struct fo_loop_entry *e = evs[i].data.ptr;
		if (e->fd >= 0)
			e->handler(e->ctx, e->fd, evs[i].events);
	}
	if (n > 0 && l->rt_done)
		l->rt_done(l->rt_done_ctx);
}

int fo_loop_run_once_timeout(struct fo_loop *l, int timeout_ms)
{
	struct fo_loop_entry *again[FO_LOOP_MAX_FDS];
	struct epoll_event evs[16];
	size_t n_again = 0;
	int n;

	/* Handlers that asked to continue on this turn: taken now, so one
	 * that asks again runs on the next turn, not twice in this one. */
	for (int i = 0; i < FO_LOOP_MAX_FDS; i++) {
		if (l->entries[i].fd >= 0 && l->entries[i].again) {
			l->entries[i].again = false;
			again[n_again++] = &l->entries[i];
		}
	}
	n = epoll_wait(l->epfd, evs, 16, n_again ? 0 : timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	serve_rt(l);
	for (int i = 0; i < n; i++) {
		struct fo_loop_entry *e = evs[i].data.ptr;
		/* A handler earlier in this batch may have removed this fd. */
		if (e == &l->rt_marker || e->fd < 0)
			continue;
		e->handler(e->ctx, e->fd, evs[i].events);
		serve_rt(l);
	}
	for (size_t i = 0; i < n_again; i++) {
		if (again[i]->fd < 0)
			continue;
		again[i]->handler(again[i]->ctx, again[i]->fd, EPOLLIN);
		serve_rt(l);
	}
	return 0;
}

int fo_loop_run_once(struct fo_loop *l)
{
	return fo_loop_run_once_timeout(l, -1);
}

int fo_timerfd_set_abs(int tfd, uint64_t at_ns)
{
	struct itimerspec its = { { 0, 0 }, { (time_t)(at_ns / 1000000000ull), (long)(at_ns % 1000000000ull) } };

	if (at_ns == 0)
		its.it_value.tv_nsec = 0; /* all zero: disarm */
	return timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}
