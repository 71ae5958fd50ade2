/* SPDX-License-Identifier: MIT */
#include "events.h"

#include <stdio.h>
#include <string.h>

void fo_event_ring_init(struct fo_event_ring *r)
{
	memset(r, 0, sizeof(*r));
	r->next_id = 1;
}

struct fo_event *fo_event_ring_claim(struct fo_event_ring *r, uint64_t now_ns)
{
	struct fo_event *e = &r->slots[(r->next_id - 1) % FO_EVENT_RING_SIZE];

	memset(e, 0, sizeof(*e));
	e->id = r->next_id++;
	e->time_ns = now_ns;
	return e;
}

size_t fo_event_ring_count(const struct fo_event_ring *r)
{
	uint64_t n = r->next_id - 1;
	return n < FO_EVENT_RING_SIZE ? (size_t)n : FO_EVENT_RING_SIZE;
}

const struct fo_event *fo_event_ring_get(const struct fo_event_ring *r, size_t i)
{
	uint64_t first = r->next_id - fo_event_ring_count(r); /* id of the oldest kept */
	return &r->slots[(first + i - 1) % FO_EVENT_RING_SIZE];
}

const struct fo_event *fo_event_ring_find(const struct fo_event_ring *r, uint64_t id)
{
	const struct fo_event *e;

	if (id == 0 || id >= r->next_id)
		return NULL;
	e = &r->slots[(id - 1) % FO_EVENT_RING_SIZE];
	return e->id == id ? e : NULL;
}

int64_t fo_event_phase_us(const struct fo_event *e, enum fo_phase p)
{
	uint64_t t0 = e->phase_ns[FO_PHASE_FAULT], t = e->phase_ns[p];

	if (!t || !t0 || t < t0)
		return -1;
	return (int64_t)((t - t0) / 1000);
}

bool fo_event_within_deadline(const struct fo_event *e)
{
	int64_t total_us = fo_event_phase_us(e, FO_PHASE_UNPAUSE_DONE);
	uint64_t det = e->phase_ns[FO_PHASE_DETECTED], done = e->phase_ns[FO_PHASE_UNPAUSE_DONE];

	if (total_us < 0 || !det || done < det)
		return false;
	return (done - det) / 1000 <= (uint64_t)e->deadline_ms * 1000 &&
	       (uint64_t)total_us <= (uint64_t)(e->budget_ms ? e->budget_ms : e->deadline_ms) * 1000;
}

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
	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "?";
}

const char *fo_event_result_name(enum fo_event_result r)
{
	static const char *const names[] = { "ok", "degraded", "aborted", "failed", "info" };
	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "?";
}

const char *fo_phase_name(enum fo_phase p)
{
	static const char *const names[] = { "fault", "detected", "decided", "pause_issued", "pause_done",
					     "unpause_issued", "unpause_done", "first_heartbeat" };
	return (unsigned)p < FO_PHASE_COUNT ? names[p] : "?";
}

void fo_event_format(const struct fo_event *e, char *buf, size_t len)
{
	int n;

	n = snprintf(buf, len, "event %llu %s pair=%s", (unsigned long long)e->id,
		     fo_event_kind_name(e->kind), e->pair);
	if (e->kind == FO_EV_SWITCHOVER || e->kind == FO_EV_DRILL) {
		n += snprintf(buf + n, n < (int)len ? len - n : 0, " fault=%s %s->%s result=%s",
			      fo_fault_name(e->fault), e->from, e->to, fo_event_result_name(e->result));
		for (int p = FO_PHASE_DETECTED; p < FO_PHASE_COUNT; p++) {
			int64_t us = fo_event_phase_us(e, p);
			if (us >= 0)
				n += snprintf(buf + n, n < (int)len ? len - n : 0, " %s=%lldus", fo_phase_name(p),
					      (long long)us);
		}
		n += snprintf(buf + n, n < (int)len ? len - n : 0, " deadline=%ums %s", e->deadline_ms,
			      fo_event_within_deadline(e) ? "MET" : "MISSED");
		if (e->path[0])
			n += snprintf(buf + n, n < (int)len ? len - n : 0, " path=%s", e->path);
	}
	if (e->message[0])
		snprintf(buf + n, n < (int)len ? len - n : 0, ": %s", e->message);
}
