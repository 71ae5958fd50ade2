/* SPDX-License-Identifier: MIT */
/*
 * events.h - what happened to the pairs: a bounded ring of events, each with
 * the monotonic timestamps of every switchover phase, plus the counters the
 * metrics endpoint exports.
 *
 * The ring is allocated once at start. Recording an event on the switch path
 * only writes into a slot that is already there (no allocation, no syscall);
 * publishing it (log line, journal, control clients) happens after.
 */
#ifndef FO_EVENTS_H
#define FO_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config/config.h"

enum fo_event_kind {
	FO_EV_SWITCHOVER = 0, /* automatic failover or manual switchover */
	FO_EV_DRILL,          /* a switchover caused by an injected fault */
	FO_EV_ARMED,          /* pair became ARMED */
	FO_EV_DISARMED,
	FO_EV_DEGRADED,       /* pair lost its standby or cannot switch */
	FO_EV_INFO,           /* anything else worth keeping (adoption, rebuild progress) */
	FO_EV_PLACEMENT,      /* placement drifted (result degraded) or is as configured again (ok) */
	FO_EV_EXTERNAL_UNPAUSE, /* the fence audit found a member running that should be paused:
	                         * paused again (ok) or could not be (failed) */
};

enum fo_fault {
	FO_FAULT_NONE = 0,
	FO_FAULT_HEARTBEAT_TIMEOUT, /* no sequence progress within timeout_ms */
	FO_FAULT_UNHEALTHY,         /* agent reported the application unhealthy */
	FO_FAULT_CRASHED,           /* domain crashed */
	FO_FAULT_SHUTDOWN,          /* domain shut down */
	FO_FAULT_GONE,              /* domain destroyed / dying / vanished */
	FO_FAULT_MANUAL,            /* operator asked for a switchover */
	FO_FAULT_HEARTBEAT_STUCK,   /* kernel-armed: the agent notifies, its sequence does not move */
	FO_FAULT_DEADLINE_MISS,     /* the application overran its cycle too often (health.fail_on_deadline_miss) */
};

enum fo_event_result {
	FO_RESULT_OK = 0,
	FO_RESULT_DEGRADED, /* switched, but something after it failed (no heartbeat in grace...) */
	FO_RESULT_ABORTED,  /* could not fence the active: the standby was NOT unpaused */
	FO_RESULT_FAILED,   /* fenced, but the standby could not be started */
	FO_RESULT_INFO,
};

/* Phase timestamps (CLOCK_MONOTONIC ns; 0 = did not happen). */
enum fo_phase {
	FO_PHASE_FAULT = 0,       /* fault happened (drill: injection; heartbeat loss: the deadline that
	                           * expired, ours or the kernel module's; otherwise = detected) */
	FO_PHASE_DETECTED,        /* daemon saw it */
	FO_PHASE_DECIDED,         /* state machine chose to switch */
	FO_PHASE_PAUSE_ISSUED,
	FO_PHASE_PAUSE_DONE,      /* active confirmed not running */
	FO_PHASE_UNPAUSE_ISSUED,
	FO_PHASE_UNPAUSE_DONE,    /* standby confirmed running */
	FO_PHASE_FIRST_HEARTBEAT, /* new active's first heartbeat after the switch */
	FO_PHASE_COUNT
};

#define FO_EVENT_MSG_MAX 160

struct fo_event {
	uint64_t id;           /* 1, 2, ...; 0 = empty slot */
	uint64_t time_ns;      /* when it was recorded */
	enum fo_event_kind kind;
	enum fo_fault fault;
	enum fo_event_result result;
	char pair[FO_NAME_MAX + 1];
	char from[FO_DOMNAME_MAX + 1];
	char to[FO_DOMNAME_MAX + 1];
	unsigned deadline_ms;  /* detection -> standby running must fit in this */
	unsigned budget_ms;    /* fault -> standby running: timeout + period + deadline */
	uint64_t phase_ns[FO_PHASE_COUNT];
	char message[FO_EVENT_MSG_MAX];
	char path[16];  /* switch events: how the switch ran (hv switch_path: "kernel", "xenctrl", "sim"); else "" */
	bool pending;   /* still being completed (waiting for the new active's first heartbeat) */
	bool published; /* logged and sent to followers */
};

#define FO_EVENT_RING_SIZE 256

struct fo_event_ring {
	struct fo_event slots[FO_EVENT_RING_SIZE];
	uint64_t next_id;
};

void fo_event_ring_init(struct fo_event_ring *r);
/* Claim the next slot (overwrites the oldest); the caller fills it in. */
struct fo_event *fo_event_ring_claim(struct fo_event_ring *r, uint64_t now_ns);
/* Oldest first: i = 0 .. count-1. */
size_t fo_event_ring_count(const struct fo_event_ring *r);
const struct fo_event *fo_event_ring_get(const struct fo_event_ring *r, size_t i);
const struct fo_event *fo_event_ring_find(const struct fo_event_ring *r, uint64_t id);

/* Microseconds of phase p after the fault, or -1 if the phase did not happen. */
int64_t fo_event_phase_us(const struct fo_event *e, enum fo_phase p);
/* Met the pair's deadline: detection -> standby running <= deadline_ms, and
 * fault (or drill injection) -> standby running <= budget_ms, the worst case
 * for a heartbeat loss (timeout + period + deadline). False if not switched. */
bool fo_event_within_deadline(const struct fo_event *e);

const char *fo_event_kind_name(enum fo_event_kind k);
const char *fo_fault_name(enum fo_fault f);
const char *fo_event_result_name(enum fo_event_result r);
const char *fo_phase_name(enum fo_phase p);

/* One human line (for the log / journal). */
void fo_event_format(const struct fo_event *e, char *buf, size_t len);

#endif
