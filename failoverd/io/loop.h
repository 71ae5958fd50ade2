/* SPDX-License-Identifier: MIT */
/*
 * loop.h - the one event loop: epoll over every fd the daemon waits on
 * (signalfd, the deadline timerfd, the watchdog timerfd, the control
 * socket and its clients, the hypervisor backend's fds). No sleeps, no
 * polling: a handler runs only when its fd is ready (or asked to continue).
 * The fds a failover depends on are real-time: served first in each turn
 * and between the other handlers, so the control socket can never delay
 * a failover by more than one bounded handler.
 */
#ifndef FO_LOOP_H
#define FO_LOOP_H

#include <stdint.h>

struct fo_loop;
typedef void (*fo_loop_handler)(void *ctx, int fd, uint32_t events);

int fo_loop_new(struct fo_loop **ret);
struct fo_loop *fo_loop_free(struct fo_loop *l);
int fo_loop_add(struct fo_loop *l, int fd, uint32_t events, fo_loop_handler h, void *ctx);
/* A real-time fd (the deadline timer, the backend's event channels and
 * kernel-module fd): in every turn its handler runs before any other, and
 * again between any two others when it became ready meanwhile. */
int fo_loop_add_rt(struct fo_loop *l, int fd, uint32_t events, fo_loop_handler h, void *ctx);
/* After the ready real-time handlers have run (each time, before any other
 * handler): `fn` does what they left for after all of them (the daemon:
 * the switches' after-work, fo_manager_after_work), so that one fd's
 * after-work never comes before another ready fd's switch. */
void fo_loop_set_rt_done(struct fo_loop *l, void (*fn)(void *ctx), void *ctx);
int fo_loop_modify(struct fo_loop *l, int fd, uint32_t events);
void fo_loop_remove(struct fo_loop *l, int fd);
/* Run fd's handler (with EPOLLIN) on the next turn even if epoll does not
 * report it: for a handler that stops after its share of work (a control
 * client with more requests buffered) and must continue later. */
void fo_loop_again(struct fo_loop *l, int fd);
/* Wait for and run ready handlers once. 0 or -errno (not -EINTR). */
int fo_loop_run_once(struct fo_loop *l);
/* The same, waiting at most timeout_ms (-1: for ever). */
int fo_loop_run_once_timeout(struct fo_loop *l, int timeout_ms);

/* Arm a timerfd at an absolute CLOCK_MONOTONIC time (0 disarms). */
int fo_timerfd_set_abs(int tfd, uint64_t at_ns);

#endif
