/* SPDX-License-Identifier: MIT */
/*
 * fo_xentrace.h - fo-trace --xentrace: run Xen's xentrace for scheduler
 * events while fo-trace traces, parse its binary output, convert Xen's TSC
 * stamps to dom0's CLOCK_MONOTONIC and merge the events of chosen domains.
 */
#ifndef FO_XENTRACE_H
#define FO_XENTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "fo_corr.h"

/* One (TSC, CLOCK_MONOTONIC) pair; the monotonic value is the midpoint of
 * two clock reads around the rdtsc, err_ns half their distance. */
struct fo_tsc_anchor {
	uint64_t tsc, ns, err_ns;
};

struct fo_xt_doms {
	unsigned ids[32];
	size_t n;
};

#define FO_XT_MAX_ANCHORS 8192

struct fo_xentrace {
	pid_t pid;
	char path[256];
	struct fo_tsc_anchor *anchors; /* taken through the whole trace, by time */
	size_t nanchors;
	struct fo_xt_doms doms;
};

/* Take one more (rdtsc, CLOCK_MONOTONIC) anchor; fo-trace calls it every
 * time it drains the ring buffer (every 20-100 ms) while xentrace runs. */
void fo_xentrace_anchor(struct fo_xentrace *x);

/* Starts xentrace; doms (names or ids, comma separated) are resolved at the
 * end (fo_xentrace_finish). */
int fo_xentrace_start(struct fo_xentrace *x, const char *bin, const char *doms, char *err, size_t len);
/* Stops xentrace, parses, converts, keeps the events within [t0, t1] of the
 * domains named, plus extra ids (the domains the
 * traced switches paused and unpaused: a drill with on_failover=rebuild
 * re-creates a member under a new id), plus dom0's vCPU switches, wakes
 * and blocks.
 * NULL with err on failure. */
cJSON *fo_xentrace_finish(struct fo_xentrace *x, const char *doms, const unsigned *extra, size_t nextra,
			  uint64_t t0, uint64_t t1, char *err, size_t len);
/* Per switch, Xen's view: the active's vCPU put to sleep / off its pCPU, the
 * standby's woken / on a pCPU, and how long the daemon's dom0 vCPU was
 * itself descheduled by Xen during the switch. */
cJSON *fo_xentrace_switch(const cJSON *xj, const struct fo_corr_switch *s);
void fo_xentrace_print(FILE *f, const cJSON *xj, const struct fo_corr_switch *sw, size_t nsw);

/* TSC -> ns, piecewise linear between the two anchors around tsc (the
 * first or last pair outside them). Exposed for the unit test. */
uint64_t fo_tsc_to_ns(const struct fo_tsc_anchor *a, size_t n, uint64_t tsc);
/* Parse xentrace's binary stream; calls cb for every record with its TSC
 * (0 when the record has none) and pCPU. Returns the record count or -1. */
typedef void (*fo_xt_cb)(void *ctx, unsigned cpu, uint32_t event, uint64_t tsc, const uint32_t *extra,
			 unsigned nextra);
long fo_xentrace_parse(const unsigned char *buf, size_t len, fo_xt_cb cb, void *ctx);

#endif
