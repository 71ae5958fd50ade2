/* SPDX-License-Identifier: MIT */
/*
 * event.c - the names of an event's kinds, faults, results and phases, the
 * "within deadline" rule and the human line (see event.h).
 */
#include "proto/event.h"

#include <stdio.h>
#include <string.h>

const char *fo_event_kind_name(enum fo_event_kind k)
{
	static const char *const names[] = { "switchover", "drill", "armed", "disarmed", "degraded", "info", "placement",
					     "external-unpause" };
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

const char *fo_fault_name(enum fo_fault f)
{
	static const char *const names[] = { "none", "heartbeat-timeout", "unhealthy", "crashed",
					     "shutdown", "gone", "manual", "heartbeat-stuck",
					     "deadline-miss" };
	_Static_assert(sizeof(names) / sizeof(names[0]) == FO_FAULT_COUNT, "a name for every enum fo_fault");
	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "?";
}

const char *fo_event_result_name(enum fo_event_result r)
{
	static const char *const names[] = { "ok", "degraded", "aborted", "failed", "info" };
	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "?";
}

/* The phase table: its key (JSON, journal, metrics) and its label (tables). */
static const struct {
	const char *name;
	const char *label;
} phases[FO_PHASE_COUNT] = {
	[FO_PHASE_FAULT] = { "fault", "fault" },
	[FO_PHASE_DETECTED] = { "detected", "detected" },
	[FO_PHASE_DECIDED] = { "decided", "decided" },
	[FO_PHASE_PAUSE_ISSUED] = { "pause_issued", "pause issued" },
	[FO_PHASE_PAUSE_DONE] = { "pause_done", "pause done" },
	[FO_PHASE_UNPAUSE_ISSUED] = { "unpause_issued", "unpause issued" },
	[FO_PHASE_UNPAUSE_DONE] = { "unpause_done", "unpause done" },
	[FO_PHASE_FIRST_HEARTBEAT] = { "first_heartbeat", "first heartbeat" },
	[FO_PHASE_SERVICE_MOVED] = { "service_moved", "service moved" },
};

const char *fo_phase_name(enum fo_phase p)
{
	return (unsigned)p < FO_PHASE_COUNT ? phases[p].name : "?";
}

const char *fo_phase_label(enum fo_phase p)
{
	return (unsigned)p < FO_PHASE_COUNT ? phases[p].label : "?";
}

bool fo_proto_kind_is_switch(const char *kind)
{
	return strcmp(kind, fo_event_kind_name(FO_EV_SWITCHOVER)) == 0 ||
	       strcmp(kind, fo_event_kind_name(FO_EV_DRILL)) == 0;
}

/*
 * The daemon's rule. failoverctl used to fall back (when an event carried
 * no verdict) to "fault -> running <= deadline_ms", which fails nearly every
 * heartbeat-loss drill, whose fault -> detection alone is the heartbeat
 * timeout; the deadline is documented (failoverd.json(5)) as detection ->
 * running, with the budget covering the fault's side.
 */
bool fo_proto_within_deadline(int64_t detected_to_running_us, int64_t fault_to_running_us, unsigned deadline_ms,
			      unsigned budget_ms)
{
	if (detected_to_running_us < 0 || fault_to_running_us < 0)
		return false;
	return (uint64_t)detected_to_running_us <= (uint64_t)deadline_ms * 1000 &&
	       (uint64_t)fault_to_running_us <= (uint64_t)(budget_ms ? budget_ms : deadline_ms) * 1000;
}

void fo_proto_event_format(const struct fo_proto_event *v, char *buf, size_t len)
{
	int n;

	n = snprintf(buf, len, "event %llu %s pair=%s", (unsigned long long)v->id, v->kind, v->pair);
	if (fo_proto_kind_is_switch(v->kind)) {
		n += snprintf(buf + n, n < (int)len ? len - n : 0, " fault=%s %s->%s result=%s", v->fault, v->from,
			      v->to, v->result);
		for (int p = FO_PHASE_DETECTED; p < FO_PHASE_COUNT; p++) {
			int64_t us = v->phase_us[p];
			if (us >= 0)
				n += snprintf(buf + n, n < (int)len ? len - n : 0, " %s=%lldus", fo_phase_name(p),
					      (long long)us);
		}
		/* Not judged (no fault time) reads as missed, as the daemon
		 * always logged it: nothing proves the standby ran in time. */
		n += snprintf(buf + n, n < (int)len ? len - n : 0, " deadline=%ums %s", v->deadline_ms,
			      v->within_deadline > 0 ? "MET" : "MISSED");
		if (v->path[0])
			n += snprintf(buf + n, n < (int)len ? len - n : 0, " path=%s", v->path);
	}
	if (v->message[0])
		snprintf(buf + n, n < (int)len ? len - n : 0, ": %s", v->message);
}
