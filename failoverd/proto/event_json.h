/* SPDX-License-Identifier: MIT */
/*
 * event_json.h - an event as the control socket's JSON object, both ways:
 * the daemon writes it (io/control_status.c), failoverctl reads it back into the
 * same view to print the same line (proto/event.h).
 */
#ifndef FO_PROTO_EVENT_JSON_H
#define FO_PROTO_EVENT_JSON_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "proto/event.h"

/* A 64-bit integer as JSON number text (cJSON's numbers are doubles). */
void fo_proto_json_add_u64(cJSON *o, const char *key, uint64_t v);

/* {"id":..,"time_ns":..,"pair":..,...,"phases_us":{..}}; NULL when out of memory. */
cJSON *fo_proto_event_json(const struct fo_proto_event *v);

/*
 * The view of a received event object. Missing strings read as "?" (pair,
 * kind) or "" (the rest), missing numbers as 0 and missing phases as -1.
 * Strings point into `o`. time_ns passes through a double here (off by at
 * most 256 ns at today's wall clock): fine for a human line, not for
 * re-sending; failoverctl --json prints the daemon's raw text instead.
 */
void fo_proto_event_from_json(const cJSON *o, struct fo_proto_event *v);

#endif
