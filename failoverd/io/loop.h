/* SPDX-License-Identifier: MIT */
/*
 * loop.h - the one event loop: epoll over every fd the daemon waits on
 * (signalfd, the deadline timerfd, the watchdog timerfd, the control
 * socket and its clients, the hypervisor backend's fds). No sleeps, no
 * polling: a handler runs only when its fd is ready.
 */
#ifndef FO_LOOP_H
#define FO_LOOP_H

#include <stdint.h>

struct fo_loop;
typedef void (*fo_loop_handler)(void *ctx, int fd, uint32_t events);

int fo_loop_new(struct fo_loop **ret);
struct fo_loop *fo_loop_free(struct fo_loop *l);
int fo_loop_add(struct fo_loop *l, int fd, uint32_t events, fo_loop_handler h, void *ctx);
int fo_loop_modify(struct fo_loop *l, int fd, uint32_t events);
void fo_loop_remove(struct fo_loop *l, int fd);
/* Wait for and run ready handlers once. 0 or -errno (not -EINTR). */
int fo_loop_run_once(struct fo_loop *l);

/* Arm a timerfd at an absolute CLOCK_MONOTONIC time (0 disarms). */
int fo_timerfd_set_abs(int tfd, uint64_t at_ns);

#endif
