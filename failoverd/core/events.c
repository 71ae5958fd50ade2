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
	uint64_t det = e->phase_ns[FO_PHASE_DETECTED], done = e->phase_ns[FO_PHASE_UNPAUSE_DONE];

	return fo_proto_within_deadline(det && done >= det ? (int64_t)((done - det) / 1000) : -1,
					fo_event_phase_us(e, FO_PHASE_UNPAUSE_DONE), e->deadline_ms, e->budget_ms);
}

void fo_event_view(const struct fo_event *e, struct fo_proto_event *v)
{
	bool is_switch = e->kind == FO_EV_SWITCHOVER || e->kind == FO_EV_DRILL;

	*v = (struct fo_proto_event){
		.id = e->id,
		.time_ns = e->time_ns,
		.pair = e->pair,
		.kind = fo_event_kind_name(e->kind),
		.fault = fo_fault_name(e->fault),
		.from = e->from,
		.to = e->to,
		.result = fo_event_result_name(e->result),
		.message = e->message,
		.path = e->path,
		.deadline_ms = e->deadline_ms,
		.budget_ms = e->budget_ms,
		/* Judged only for a switch that has a fault time. */
		.within_deadline = is_switch && e->phase_ns[FO_PHASE_FAULT] ? fo_event_within_deadline(e) : -1,
	};
	for (int p = 0; p < FO_PHASE_COUNT; p++)
		v->phase_us[p] = fo_event_phase_us(e, p);
}

void fo_event_format(const struct fo_event *e, char *buf, size_t len)
{
	struct fo_proto_event v;

	fo_event_view(e, &v);
	fo_proto_event_format(&v, buf, len);
}

_Static_assert(sizeof(struct fo_event) <= FO_LOG_ATTACH_MAX, "an event must fit the log's attachment");

static fo_log_event_sink event_sink;

/* The log queue copied the event into suitably aligned storage. */
static void attached_event(const void *data, const char *line)
{
	event_sink((const struct fo_event *)data, line);
}

void fo_log_set_event_sink(fo_log_event_sink sink)
{
	event_sink = sink;
	fo_log_set_attached_sink(sink ? attached_event : NULL);
}

void fo_log_event(enum fo_log_level level, const struct fo_event *e, const char *line)
{
	fo_log_attached(level, e, sizeof(*e), line);
}
