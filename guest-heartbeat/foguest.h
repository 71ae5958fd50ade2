/* SPDX-License-Identifier: MIT */
/*
 * foguest.h - libfoguest: a protected application's side of failoverd.
 *
 * The application's control task calls foguest_beat() once per cycle: the
 * heartbeat page failoverd watches moves only then, so a stuck control loop
 * is a lost heartbeat even if the guest kernel is fine. With
 * FOGUEST_F_STATE it also hands its state to the standby: foguest_commit()
 * publishes up to FOGUEST_STATE_MAX bytes per cycle (atomically: a reader
 * sees a whole commit or the previous one), failoverd copies the newest
 * valid commit into the standby's memory, and the standby, once it is made
 * active, calls foguest_restore() and continues from there.
 *
 * Threads: foguest_open() starts one thread of its own (xenstore watches:
 * the role failoverd assigns, drill commands). foguest_beat(),
 * foguest_commit() and foguest_restore() must be called from one thread
 * (the control task); they do not allocate, do not block and make at most
 * one system call (the event-channel notify in foguest_beat()), except
 * under the test-only "regrant" command (FOGUEST_F_TEST_COMMANDS).
 * foguest_role() and foguest_role_fd() may be used from any thread.
 *
 * Errors are -errno. See foguest(3).
 */
#ifndef FOGUEST_H
#define FOGUEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FOGUEST_STATE_MAX (16u * 1024u) /* bytes one commit carries */

struct foguest;

enum foguest_role {
	FOGUEST_ROLE_UNKNOWN = 0, /* failoverd has not assigned one (yet) */
	FOGUEST_ROLE_STANDBY = 1,
	FOGUEST_ROLE_ACTIVE  = 2,
};

/* foguest_open() flags */
#define FOGUEST_F_STATE          (1u << 0) /* share the state-handover regions */
#define FOGUEST_F_TEST_COMMANDS  (1u << 1) /* TEST ONLY: obey "garbage-state", "garbage-page",
						     "regrant" (see foguest(3)) */

/* foguest_beat() flags */
#define FOGUEST_BEAT_DEADLINE_MISS (1u << 0) /* this cycle overran its period */
#define FOGUEST_BEAT_HEALTHY       (1u << 1) /* the application checked itself: fine */
#define FOGUEST_BEAT_UNHEALTHY     (1u << 2) /* ...and it is not (failoverd may fail over) */

struct foguest_options {
	unsigned period_ms;     /* the cycle, 1..60000; published for cross-checking */
	unsigned flags;         /* FOGUEST_F_* */
	/* Called from the library's thread when the role changes (may be NULL). */
	void (*on_role)(void *ctx, enum foguest_role role);
	void *ctx;
	/* Log lines (no newline); NULL: stderr, "<log_prefix>: <line>". */
	void (*log)(void *ctx, const char *line);
	const char *log_prefix; /* default "foguest" */
};

/* Share the pages, bind the event channel, publish them in xenstore. */
int foguest_open(const struct foguest_options *opt, struct foguest **ret);
/* An orderly exit: a last beat flagged STOPPING, keys withdrawn, pages unshared. */
void foguest_close(struct foguest *g);

/*
 * One cycle done: publish `cycle` and bump the heartbeat sequence, notify
 * dom0. Returns 1 when the sequence moved, 0 when a drill command holds it
 * back (stop-heartbeat, stuck-sequence), <0 on error. Under the "freeze"
 * drill it never returns (a hung application).
 */
int foguest_beat(struct foguest *g, uint64_t cycle, unsigned flags);

/* Publish `len` (1..FOGUEST_STATE_MAX) bytes as the state of `cycle`.
 * -EINVAL: bad length; -EOPNOTSUPP: opened without FOGUEST_F_STATE. */
int foguest_commit(struct foguest *g, const void *buf, size_t len, uint64_t cycle);

enum foguest_restore {
	FOGUEST_RESTORE_OK      = 1, /* buf holds the state of info->cycle */
	FOGUEST_RESTORE_NONE    = 2, /* nothing was handed over: start cold */
	FOGUEST_RESTORE_CORRUPT = 3, /* something, nothing valid: start cold */
	FOGUEST_RESTORE_TOO_OLD = 4, /* valid, but info->age_cycles > max_age: start cold */
	FOGUEST_RESTORE_TOO_BIG = 5, /* valid, longer than cap (info->len says how long) */
};

struct foguest_restore_info {
	uint64_t cycle;          /* the state's cycle */
	size_t len;              /* its length */
	uint64_t age_cycles;     /* the active's newest cycle dom0 saw minus `cycle` */
	uint64_t src_last_cycle; /* that newest cycle */
	uint32_t src_domid;      /* the domain the state came from (0: unknown) */
	const char *why;         /* CORRUPT: what was wrong (static) */
};

/*
 * The last complete state failoverd handed over (the standby's local copy;
 * treated as untrusted: bounds, checksum). max_age_cycles 0: any age. Also
 * reported to dom0 on the next beat (restored_cycle / restore_result).
 */
enum foguest_restore foguest_restore(struct foguest *g, void *buf, size_t cap, uint64_t max_age_cycles,
				     struct foguest_restore_info *info);
const char *foguest_restore_name(enum foguest_restore r);

/* The role failoverd assigned last. Also clears foguest_role_fd(). */
enum foguest_role foguest_role(struct foguest *g);
/*
 * +1 whenever the role changes, and also when failoverd makes this guest
 * active again after it stood by in between (paused as the standby while
 * the other member ran: its state arrived meanwhile, though the role key
 * reads "active" both before and after). A control task restores whenever
 * foguest_role() is ACTIVE and the epoch is not the one it last acted on.
 */
unsigned foguest_role_epoch(const struct foguest *g);
const char *foguest_role_name(enum foguest_role r);
/* Readable (poll/epoll) when the role changed since foguest_role() was last called. */
int foguest_role_fd(struct foguest *g);

/* This domain's id and the heartbeat's sequence (diagnostics). */
unsigned foguest_domid(const struct foguest *g);
uint64_t foguest_sequence(const struct foguest *g);

#ifdef __cplusplus
}
#endif

#endif
