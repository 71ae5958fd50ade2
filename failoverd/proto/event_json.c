/* SPDX-License-Identifier: MIT */
/*
 * event_json.c - an event as the control socket's JSON object, written by
 * the daemon and read by failoverctl (see event_json.h).
 */
#include "proto/event_json.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>

/* The largest doubles below 2^64 and 2^63: the casts' limits. */
#define U64_MAX_D 18446744073709549568.0
#define I64_MAX_D 9223372036854774784.0

/* A 64-bit integer as JSON number text: cJSON's numbers are doubles,
 * exact only up to 2^53 (time_ns, in ns of CLOCK_MONOTONIC, passes that
 * after ~104 days of uptime). */
void fo_proto_json_add_u64(cJSON *o, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cJSON_AddRawToObject(o, key, buf);
}

static void add_us_or_null(cJSON *o, const char *key, int64_t us)
{
	if (us < 0)
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, (double)us);
}

cJSON *fo_proto_event_json(const struct fo_proto_event *v)
{
	cJSON *o = cJSON_CreateObject(), *ph;

	fo_proto_json_add_u64(o, "id", v->id);
	fo_proto_json_add_u64(o, "time_ns", v->time_ns);
	cJSON_AddStringToObject(o, "pair", v->pair);
	cJSON_AddStringToObject(o, "kind", v->kind);
	cJSON_AddStringToObject(o, "fault", v->fault);
	cJSON_AddStringToObject(o, "from", v->from);
	cJSON_AddStringToObject(o, "to", v->to);
	cJSON_AddStringToObject(o, "result", v->result);
	cJSON_AddStringToObject(o, "message", v->message);
	if (v->path[0])
		cJSON_AddStringToObject(o, "path", v->path);
	else
		cJSON_AddNullToObject(o, "path");
	cJSON_AddNumberToObject(o, "deadline_ms", v->deadline_ms);
	cJSON_AddNumberToObject(o, "budget_ms", v->budget_ms);
	if (v->within_deadline >= 0)
		cJSON_AddBoolToObject(o, "within_deadline", v->within_deadline > 0);
	else
		cJSON_AddNullToObject(o, "within_deadline");
	/* The fault is the origin of the others: always 0, not sent. */
	ph = cJSON_AddObjectToObject(o, "phases_us");
	for (int p = FO_PHASE_DETECTED; p < FO_PHASE_COUNT; p++)
		add_us_or_null(ph, fo_phase_name(p), v->phase_us[p]);
	return o;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(it) ? it->valuestring : dflt;
}

/* A number in 0..max, else dflt: a double out of an integer type's range
 * must not reach the cast (undefined behaviour), whatever the daemon sent. */
static double num_or(const cJSON *o, const char *key, double max, double dflt)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(it) && it->valuedouble >= 0 && it->valuedouble <= max ? it->valuedouble : dflt;
}

void fo_proto_event_from_json(const cJSON *o, struct fo_proto_event *v)
{
	const cJSON *within = cJSON_GetObjectItemCaseSensitive(o, "within_deadline");
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phases_us");
	v->id = (uint64_t)num_or(o, "id", U64_MAX_D, 0);
	v->time_ns = (uint64_t)num_or(o, "time_ns", U64_MAX_D, 0);
	v->pair = str_or(o, "pair", "?");
	v->kind = str_or(o, "kind", "?");
	v->fault = str_or(o, "fault", "");
	v->from = str_or(o, "from", "");
	v->to = str_or(o, "to", "");
	v->result = str_or(o, "result", "");
	v->message = str_or(o, "message", "");
	v->path = str_or(o, "path", "");
	v->deadline_ms = (unsigned)num_or(o, "deadline_ms", UINT_MAX, 0);
	v->budget_ms = (unsigned)num_or(o, "budget_ms", UINT_MAX, 0);
	v->within_deadline = cJSON_IsBool(within) ? cJSON_IsTrue(within) : -1;
	v->phase_us[FO_PHASE_FAULT] = 0;
	for (int p = FO_PHASE_DETECTED; p < FO_PHASE_COUNT; p++)
		v->phase_us[p] = (int64_t)num_or(ph, fo_phase_name(p), I64_MAX_D, -1);
}
