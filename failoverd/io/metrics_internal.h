/* SPDX-License-Identifier: MIT */
/*
 * metrics_internal.h - what the files of the /metrics endpoint share and
 * nobody else uses: the snapshot's layout, written by the loop (metrics.c),
 * rendered as text (metrics_render.c) and served by the HTTP thread
 * (metrics_http.c). The interface is metrics.h.
 */
#ifndef FO_METRICS_INTERNAL_H
#define FO_METRICS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/metrics.h"
#include "core/pair/pair.h"

/* Histograms per pair and switch path. */
enum { H_FAULT_TO_RUNNING, H_DETECTED_TO_RUNNING, H_PAUSE, H_UNPAUSE, H_COUNT };

#define PATHS_MAX   4  /* "sim", "xenctrl", "kernel", "hypervisor" (Xen's watch) */
#define NAME_WORDS  9  /* 72 bytes: a pair or domain name (64) and its NUL */
#define PATH_WORDS  2  /* 16 bytes: struct fo_event.path */
#define FAULTS      FO_FAULT_COUNT /* by enum fo_fault, none included */
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
	uint64_t net_blocked;    /* pairs[].network: the bridge could not be set as the roles say */
	uint64_t net_recuts;     /* pairs[].network: cut-off ports found forwarding, cut off again */
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
	/* Set before the HTTP thread starts serving it; read by that thread
	 * only (the stream's own lock, never the loop's snapshot). */
	struct fo_stream *stream;
	/* HTTP thread. */
	struct snap copy;
	bool started;
	pthread_t thread;
	int listen_fd, wake_fd[2];
	int spare_fd; /* given up to shed a connection when out of descriptors (io/accept.h) */
};

/* metrics.c: the reader's side of the seqlock. HTTP thread: a consistent
 * copy into m->copy, or -EAGAIN. */
int fo_metrics_snapshot_copy(struct fo_metrics *m);

#endif
