/* SPDX-License-Identifier: MIT */
/*
 * fo_corr.h - fo-trace's correlation and reporting, free of BPF and of
 * the system: it takes failoverd's switchover events (as
 * `failoverctl events --json` prints them) and the trace records the BPF
 * side produced, both on CLOCK_MONOTONIC, and builds one breakdown per
 * switchover (and per traced `xl` run). Unit-tested in tests/test_corr.c.
 */
#ifndef FO_CORR_H
#define FO_CORR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "fo_trace.h"

/* failoverd's own phase stamps (failoverd/core/events.h), absolute ns. */
enum fo_cp {
	FO_CP_FAULT = 0,
	FO_CP_DETECTED,
	FO_CP_DECIDED,
	FO_CP_PAUSE_ISSUED,
	FO_CP_PAUSE_DONE,
	FO_CP_UNPAUSE_ISSUED,
	FO_CP_UNPAUSE_DONE,
	FO_CP_COUNT
};

struct fo_corr_event {
	uint64_t id;
	char pair[72], kind[16], fault[24], path[16], from[72], to[72], result[16];
	char message[160];        /* failoverd's own words (FO_EVENT_MSG_MAX) */
	uint64_t ph[FO_CP_COUNT]; /* CLOCK_MONOTONIC ns; 0: did not happen */
};

/* A switch event from failoverd's JSON. The daemon sends time_ns (= the
 * detection time, exact) and phases in integer us after the fault, so the
 * absolute fault time is time_ns - detected_us * 1000 and every phase is
 * known to +-1 us. Returns false (with why) when ev is not a usable switch. */
bool fo_corr_event_from_json(const cJSON *ev, struct fo_corr_event *out, char *why, size_t len);

/* Path "hypervisor": Xen's failover watch switched the pair inside its
 * timer softirq and failoverd adopted the switch afterwards. Its phases
 * are Xen's NOW() stamps mapped onto CLOCK_MONOTONIC (the bound of that
 * mapping is only in the event's message), and no dom0 process took part,
 * so the breakdown is Xen's steps alone (fo_corr_xen.c). */
bool fo_corr_switched_by_xen(const struct fo_corr_event *ev);

#define FO_CORR_MAX_SEG 16

struct fo_corr_seg {
	const char *from, *to; /* point labels */
	const char *what;      /* what the time is */
	const char *source;    /* whose stamps bound it: "daemon", "kernel", "xen", or two joined by '+' */
	uint64_t start_ns, end_ns;
	int64_t dur_ns;        /* end - start; negative = the two clocks' stamps disagree on order */
};

/* What is classified as what (pause / unpause / confirm) on either path. */
enum fo_corr_op { FO_OP_OTHER = 0, FO_OP_PAUSE, FO_OP_UNPAUSE, FO_OP_GETINFO, FO_OP_SWITCH };
enum fo_corr_op fo_corr_ioctl_op(const struct fo_trace_event *r);

struct fo_corr_switch {
	struct fo_corr_event ev;
	bool have_wake, wake_in_chain;
	struct fo_trace_event wake;   /* FO_EV_RUN: the daemon thread that saw the fault got its CPU */
	bool have_pause, have_unpause, have_switch_ioc;
	struct fo_trace_event pause_ioc, unpause_ioc, switch_ioc;
	unsigned pause_confirm_n, unpause_confirm_n;
	uint64_t pause_confirm_ns, unpause_confirm_ns; /* time inside those getinfo ioctls */
	unsigned preemptions;         /* daemon preempted between running and unpause_done */
	uint64_t preempted_ns;
	unsigned sleeps;              /* daemon asleep (blocked) between running and unpause_done */
	uint64_t slept_ns;
	unsigned n_ioctls;            /* every traced ioctl between detected and unpause_done */
	uint64_t ioctl_ns;
	size_t nseg;
	struct fo_corr_seg seg[FO_CORR_MAX_SEG];
	int64_t total_ns;             /* daemon's own: unpause_done - fault */
	int64_t sum_ns;               /* sum of the segments */
	int64_t worst_ns;             /* the most negative segment (0 if none) */
	bool consistent;              /* every segment >= -tol_ns */
};

/* Correlate one switch event with the trace records of daemon tgid.
 * tol_ns: how far a kernel stamp may fall outside the daemon's interval
 * before the breakdown is called inconsistent (the daemon's stamps are
 * rounded to 1 us). Returns 0, or -1 when the event has no unpause_done. */
int fo_corr_switch(const struct fo_corr_event *ev, const struct fo_trace_event *recs, size_t n,
		   uint32_t tgid, uint64_t tol_ns, struct fo_corr_switch *out);

/* One traced command run (xl pause/unpause): spawn -> exec -> first
 * hypercall ioctl -> the domctl that does the work -> exit. */
struct fo_corr_xl {
	uint32_t tgid;
	char comm[FO_TRACE_COMM_LEN];
	uint64_t spawn_ns, exec_ns, first_hc_ns, op_enter_ns, op_exit_ns, exit_ns;
	unsigned op_cmd;        /* XEN_DOMCTL_* of the working call (0: none found) */
	int exit_code;
	unsigned n_ioctls, n_hypercalls;
	uint64_t ioctl_ns;      /* all its privcmd ioctls */
	uint64_t runq_ns;       /* waiting for a CPU while runnable (wake -> run, preempted -> run) */
	unsigned n_runq;
	uint64_t blocked_ns;    /* asleep (xenstored replies, disk, ...) */
	size_t nseg;
	struct fo_corr_seg seg[FO_CORR_MAX_SEG];
	int64_t total_ns, sum_ns;
	bool complete;          /* exec, the working hypercall and exit all seen */
};

/* spawn_ns: when fo-trace forked it (0: not known, e.g. a grandchild). */
int fo_corr_xl(uint32_t tgid, uint64_t spawn_ns, const struct fo_trace_event *recs, size_t n,
	       struct fo_corr_xl *out);

/* Wake-ups of the daemon over the whole window (heartbeats, timers, requests). */
struct fo_corr_wakes {
	unsigned count, blocked, preempted, from_idle;
	uint64_t p50_ns, p99_ns, max_ns, mean_ns; /* wake -> run, every kind */
	unsigned cpu[8];         /* runs per CPU (CPUs >= 8 counted in cpu[7]) */
	struct { char comm[FO_TRACE_COMM_LEN]; unsigned n; } displaced[5]; /* most often displaced tasks */
	size_t ndisplaced;
};
void fo_corr_wakes(const struct fo_trace_event *recs, size_t n, uint32_t tgid, struct fo_corr_wakes *out);

/* Percentile (0..100) of n values, nearest rank; sorts v. */
uint64_t fo_corr_pct(uint64_t *v, size_t n, double pct);

/* Reports. */
void fo_corr_print_switch(FILE *f, const struct fo_corr_switch *s);
/* Table-6/7 shaped summary over several switches: per segment n, mean,
 * min, p50, max and share of the mean total. */
void fo_corr_print_summary(FILE *f, const struct fo_corr_switch *s, size_t n);
void fo_corr_print_xl(FILE *f, const struct fo_corr_xl *x, size_t n);
cJSON *fo_corr_switch_json(const struct fo_corr_switch *s);
cJSON *fo_corr_xl_json(const struct fo_corr_xl *x);
cJSON *fo_corr_wakes_json(const struct fo_corr_wakes *w);
cJSON *fo_corr_hist_json(const struct fo_trace_hist *h);
void fo_corr_print_hist(FILE *f, const char *title, const struct fo_trace_hist *h);

#endif
