/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - the optional Prometheus endpoint (daemon.metrics_listen):
 * GET /metrics in the text exposition format, served by a thread of its
 * own (SCHED_OTHER, never pinned to the loop's CPU by us) from a snapshot
 * the real-time loop publishes under a seqlock.
 *
 * Who does what:
 *   loop thread   fo_metrics_observe() for every published event (histograms,
 *                 switches by fault), fo_metrics_publish() after every
 *                 dispatch (counters, gauges). Both only store into the
 *                 shared snapshot: no lock, no syscall, no allocation, never
 *                 a wait (see the seqlock argument in metrics.c).
 *   HTTP thread   copies the snapshot out (retrying while the loop writes),
 *                 renders the text and answers the client.
 */
#ifndef FO_METRICS_H
#define FO_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/events.h"

struct fo_manager;
struct fo_metrics;
struct fo_pair_view;

/* Upper bounds (seconds) of the histogram buckets: 10 us .. 10 s, then +Inf. */
#define FO_METRICS_NBUCKETS 19
extern const double fo_metrics_bucket_bounds[FO_METRICS_NBUCKETS];

/* Bounds of the HTTP side. */
#define FO_METRICS_MAX_CLIENTS   4     /* at most this many connections at once */
#define FO_METRICS_REQUEST_MAX   4096  /* request line + headers; more is 431 */
#define FO_METRICS_TIMEOUT_MS    5000  /* a client has this long to send its request and read the reply */
/* With every slot taken, a new connection takes the slot of the oldest
 * client connected at least this long ago (that client is closed); only
 * when all of them are younger is it answered 503. So clients that hold
 * slots (idle, slow, or not reading the reply) turn scrapes away for at
 * most this long after they connect. */
#define FO_METRICS_EVICT_AFTER_MS 1000
/* Out of descriptors with no spare to shed a connection with: the
 * listener is not polled for this long (instead of spinning on it). */
#define FO_METRICS_ACCEPT_PAUSE_MS 100

/* The snapshot and nothing else (no socket): the unit tests use this. */
int fo_metrics_new(struct fo_metrics **ret);
void fo_metrics_free(struct fo_metrics *m);

/* Protected: ARMED, and the standby verified and paused, ready to take
 * over. What failoverd_pair_protected says and the status reply's
 * "protected": one definition for both. */
bool fo_pair_protected(const struct fo_pair_view *v);

/* The state stream (state_stream) whose numbers /metrics shows: its
 * links, refusals and each pair's lag. Read by the HTTP thread from the
 * stream itself, never through the loop. Set once, before the loop runs. */
struct fo_stream;
void fo_metrics_set_stream(struct fo_metrics *m, struct fo_stream *s);

/* Loop thread only. */
void fo_metrics_observe(struct fo_metrics *m, const struct fo_event *e);
void fo_metrics_publish(struct fo_metrics *m, struct fo_manager *mgr);

/* Any thread: a consistent copy of the snapshot rendered as the text
 * exposition format. -EAGAIN if the loop kept writing through every retry. */
int fo_metrics_render(struct fo_metrics *m, FILE *out);

/* Writes `s` as a label value: backslash, double quote and newline escaped
 * (\\, \", \n), everything else as is. */
void fo_metrics_escape_label(FILE *out, const char *s);

/* Parse "HTTP/1.x" request bytes: fills status (200, 400, 404, 405, 431)
 * for a complete head; returns 0 while the head is incomplete, 1 when it
 * is complete (or can never become valid). Exposed for the unit tests. */
int fo_metrics_http_parse(const char *req, size_t len, int *status);

/* Start the HTTP thread on `listen_addr` ("127.0.0.1:9464", "[::1]:9464").
 * Binds before returning (an error names the address). Call before the
 * loop goes real-time: the thread is created SCHED_OTHER explicitly. */
int fo_metrics_http_start(struct fo_metrics *m, const char *listen_addr, char *err, size_t errlen);
/* Stop and join the thread (if started), free everything. */
void fo_metrics_http_stop(struct fo_metrics *m);

#endif
