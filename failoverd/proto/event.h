/* SPDX-License-Identifier: MIT */
/*
 * event.h - an event as the protocol sees it: the names of its kinds,
 * faults, results and phases (the strings in the control socket's JSON, the
 * log line, the journal fields and the metric labels), the one "within
 * deadline" rule, and the one human line.
 *
 * The daemon (core/events.c) and failoverctl both link this, so the names
 * and the line cannot drift apart. Nothing here knows the event ring or the
 * daemon's config: an event reaches these functions as a struct
 * fo_proto_event, a view of plain values that the daemon fills from its
 * struct fo_event and the CLI from the JSON it received.
 */
#ifndef FO_PROTO_EVENT_H
#define FO_PROTO_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	FO_FAULT_COUNT              /* how many: what a table by fault is sized by */
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
	FO_PHASE_SERVICE_MOVED,   /* pairs[].network: the service's identity is on the new active's port
	                           * (after the unpause; on the module's and Xen's paths, when failoverd
	                           * learnt of the switch) */
	FO_PHASE_COUNT
};

const char *fo_event_kind_name(enum fo_event_kind k);
const char *fo_fault_name(enum fo_fault f);
const char *fo_event_result_name(enum fo_event_result r);
/* The phase's key in "phases_us", the journal field and the metric label
 * ("pause_issued"). */
const char *fo_phase_name(enum fo_phase p);
/* The phase for a human table ("pause issued"). */
const char *fo_phase_label(enum fo_phase p);

/* Switchover and drill events carry a switch: fault, members, phases, verdict. */
bool fo_proto_kind_is_switch(const char *kind);

/*
 * The one "within deadline" rule: the standby was running no later than
 * deadline_ms after detection AND no later than budget_ms after the fault
 * (or the drill's injection). The budget is the worst case of a heartbeat
 * loss (timeout + period + deadline): the fault -> detection part is the
 * heartbeat timeout, which the deadline alone cannot hold. A budget of 0
 * (an event that carries none) falls back to the deadline. Durations in us;
 * < 0 = that phase did not happen, which is not within anything.
 */
bool fo_proto_within_deadline(int64_t detected_to_running_us, int64_t fault_to_running_us, unsigned deadline_ms,
			      unsigned budget_ms);

/* An event as plain values. Strings are borrowed (never NULL). */
struct fo_proto_event {
	uint64_t id;
	uint64_t time_ns;
	const char *pair, *kind, *fault, *from, *to, *result, *message;
	const char *path;    /* how the switch ran ("kernel", "xenctrl", "sim"); "" = not a switch */
	unsigned deadline_ms;
	unsigned budget_ms;
	int within_deadline; /* 1 met, 0 missed, -1 not judged (not a switch, or no fault time) */
	int64_t phase_us[FO_PHASE_COUNT]; /* after the fault; -1 = did not happen */
};

/* The human line: the daemon's log and journal MESSAGE, failoverctl events. */
void fo_proto_event_format(const struct fo_proto_event *v, char *buf, size_t len);

#endif
