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
/* The kinds, faults, results and phases: names the control protocol
 * shares with failoverctl. */
#include "proto/event.h"
#include "lib/log.h"

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

/*
 * Every pair failing at once must not overwrite its own switch events
 * before they complete and are published: each pair records a switch, then
 * (on_failover) a degraded/armed/info event or two, all within one storm.
 * 4 per pair holds that with room for what came before; a reply to
 * `events` still carries only the newest FO_EVENT_REPLY_MAX.
 */
#define FO_EVENT_RING_SIZE (4 * FO_MAX_PAIRS)
#define FO_EVENT_REPLY_MAX 256

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

/* The event as the protocol's plain values (borrows e's strings). */
void fo_event_view(const struct fo_event *e, struct fo_proto_event *v);
/* One human line (for the log / journal): fo_proto_event_format's. */
void fo_event_format(const struct fo_event *e, char *buf, size_t len);

/* Log an event's line with the event attached (lib/log.h's
 * fo_log_attached): the event sink gets both from the log's writer thread
 * (the daemon's structured journal entry); without a sink, the line. */
typedef void (*fo_log_event_sink)(const struct fo_event *e, const char *line);
void fo_log_event(enum fo_log_level level, const struct fo_event *e, const char *line);
void fo_log_set_event_sink(fo_log_event_sink sink);

#endif
