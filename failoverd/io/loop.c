/* SPDX-License-Identifier: MIT */
#include "loop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define FO_LOOP_MAX_FDS 128

struct fo_loop_entry {
	int fd; /* -1 = free */
	fo_loop_handler handler;
	void *ctx;
};

struct fo_loop {
	int epfd;
	struct fo_loop_entry entries[FO_LOOP_MAX_FDS];
};

int fo_loop_new(struct fo_loop **ret)
{
	struct fo_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int r = -errno;
		free(l);
		return r;
	}
	for (int i = 0; i < FO_LOOP_MAX_FDS; i++)
		l->entries[i].fd = -1;
	*ret = l;
	return 0;
}

struct fo_loop *fo_loop_free(struct fo_loop *l)
{
	if (l) {
		close(l->epfd);
		free(l);
	}
	return NULL;
}

int fo_loop_add(struct fo_loop *l, int fd, uint32_t events, fo_loop_handler h, void *ctx)
{
	for (int i = 0; i < FO_LOOP_MAX_FDS; i++) {
		struct fo_loop_entry *e = &l->entries[i];
		if (e->fd >= 0)
			continue;
		struct epoll_event ev = { .events = events, .data.ptr = e };
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
			return -errno;
		e->fd = fd;
		e->handler = h;
		e->ctx = ctx;
		return 0;
	}
	return -ENOSPC;
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
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void fo_loop_remove(struct fo_loop *l, int fd)
{
	struct fo_loop_entry *e = find(l, fd);

	if (!e)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	e->fd = -1;
}

int fo_loop_run_once(struct fo_loop *l)
{
	struct epoll_event evs[16];
	int n = epoll_wait(l->epfd, evs, 16, -1);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		struct fo_loop_entry *e = evs[i].data.ptr;
		/* A handler earlier in this batch may have removed this fd. */
		if (e->fd >= 0)
			e->handler(e->ctx, e->fd, evs[i].events);
	}
	return 0;
}

int fo_timerfd_set_abs(int tfd, uint64_t at_ns)
{
	struct itimerspec its = { { 0, 0 }, { (time_t)(at_ns / 1000000000ull), (long)(at_ns % 1000000000ull) } };

	if (at_ns == 0)
		its.it_value.tv_nsec = 0; /* all zero: disarm */
	return timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}
