/* SPDX-License-Identifier: MIT */
/*
 * monitor.h - what a member's heartbeat says, decided from untrusted input.
 *
 * The guest writes the page; we get a private copy per notification. Only a
 * sequence number that moved forward is progress. The first valid page after
 * the channel attaches (or of a new agent instance) is only a baseline: a
 * stopped agent leaves a valid page behind, and reading it once must not
 * make a dead member look alive. Garbage (bad magic,
 * unknown ABI, absurd period, unknown status) is never progress, is counted
 * and, rate-limited, logged by the caller.
 */
#ifndef FO_MONITOR_H
#define FO_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "../../guest-heartbeat/abi/fo_heartbeat.h"

#define FO_HB_MISS_RING 64 /* >= config's FO_DEADLINE_MISS_MAX */

struct fo_hb_tracker {
	bool have_seq;          /* seen one valid page since the channel attached */
	bool progressed;        /* ...and its sequence moved forward since then */
	uint64_t sequence;      /* last accepted sequence */
	uint64_t boot_id;       /* agent instance of `sequence` */
	uint64_t last_progress_ns;
	uint32_t app_status;    /* last valid app status */
	uint32_t flags;
	uint64_t beats;         /* valid progressing heartbeats */
	uint64_t invalid;       /* pages rejected as garbage */
	uint64_t stale;         /* notifications without progress */
	uint64_t restarts;      /* agent restarts seen (new boot_id) */

	/* The page's libfoguest extension (FO_HB_EXT_MAGIC), from the last
	 * accepted page; ext false: a plain agent (or an unknown extension). */
	bool ext;
	uint64_t app_cycle;
	uint32_t app_deadline_misses; /* the application's own running count */
	uint64_t restored_cycle;
	uint32_t restore_result;
	/* When the last FO_HB_MISS_RING overruns were seen (ring, newest at
	 * miss_head - 1): health.fail_on_deadline_miss counts them in a window. */
	uint64_t miss_ns[FO_HB_MISS_RING];
	unsigned miss_head, miss_n;
	uint64_t deadline_misses;     /* overruns seen by us (sum of the increments) */
};

enum fo_hb_verdict {
	FO_HB_PROGRESS = 0,  /* sequence moved forward: the member is alive */
	FO_HB_BASELINE,      /* first valid page of this channel or agent instance: not yet alive */
	FO_HB_STALE,         /* valid page, no progress (duplicate notify, stopped agent) */
	FO_HB_INVALID,       /* garbage: treated like a missed heartbeat */
};

/* Validate the copy and update the tracker. `why` (static) says what was wrong. */
enum fo_hb_verdict fo_hb_observe(struct fo_hb_tracker *t, const struct fo_hb_page *page, uint64_t now_ns,
				 const char **why);

/* At least `count` (1..FO_HB_MISS_RING) deadline misses within the last
 * window_ns before now_ns. */
bool fo_hb_misses_within(const struct fo_hb_tracker *t, unsigned count, uint64_t window_ns, uint64_t now_ns);

/* Forget the sequence (a new channel attached: the agent may have restarted). */
void fo_hb_reset(struct fo_hb_tracker *t);

/* Keep the last sequence as the baseline, but ask for progress beyond it
 * again (the member was paused and has just been unpaused). */
void fo_hb_require_progress(struct fo_hb_tracker *t);

#endif
