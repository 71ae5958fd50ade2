/* SPDX-License-Identifier: MIT */
/*
 * metrics_render.c - the snapshot as Prometheus' text exposition format
 * (HTTP thread, from a consistent copy: metrics.c's seqlock), written
 * through lib/prom.h like `failoverctl metrics`' text.
 */
#include "io/metrics_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "lib/log.h"
#include "lib/prom.h"
#include "stream/state_stream.h"

#ifndef FO_VERSION
#define FO_VERSION "unknown"
#endif

/* The histograms' families, by enum H_* (metrics_internal.h). */
static const struct {
	const char *name, *help;
} hist_families[H_COUNT] = {
	{ "failoverd_fault_to_running_seconds",
	  "Fault (drill: injection; heartbeat loss: the expired deadline) to standby confirmed running, per switch." },
	{ "failoverd_detected_to_running_seconds", "Fault detected to standby confirmed running, per switch." },
	{ "failoverd_pause_seconds", "Pause of the old active: issued to confirmed not running, per switch." },
	{ "failoverd_unpause_seconds", "Unpause of the standby: issued to confirmed running, per switch." },
};

void fo_metrics_escape_label(FILE *out, const char *s)
{
	fo_prom_label_value(out, s);
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fo_prom_family(out, name, type, help);
}

/* name{pair="...",<key>="<value>"} : the series prefix, value follows
 * (no second label when key is NULL). */
static void series(FILE *out, const char *name, const struct pair_snap *ps, const char *key, const char *value)
{
	fo_prom_series(out, name, "pair", (const char *)ps->name, key, value, NULL);
}

static void per_member(FILE *out, const struct snap *sn, const char *name, const char *type, const char *help,
		       size_t offset)
{
	family(out, name, type, help);
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];
		const uint64_t *v = (const uint64_t *)((const char *)ps + offset);

		if (!ps->used)
			continue;
		for (int j = 0; j < 2; j++) {
			series(out, name, ps, "member", (const char *)ps->member[j]);
			fprintf(out, "%llu\n", (unsigned long long)v[j]);
		}
	}
}

static void per_pair(FILE *out, const struct snap *sn, const char *name, const char *type, const char *help,
		     size_t offset)
{
	family(out, name, type, help);
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		series(out, name, ps, NULL, NULL);
		fprintf(out, "%llu\n", (unsigned long long)*(const uint64_t *)((const char *)ps + offset));
	}
}

static void render_hist(FILE *out, const struct snap *sn, int h)
{
	const char *name = hist_families[h].name;
	char bucket[96], sum[96], count[96];

	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	snprintf(sum, sizeof(sum), "%s_sum", name);
	snprintf(count, sizeof(count), "%s_count", name);
	family(out, name, "histogram", hist_families[h].help);
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		for (int p = 0; p < PATHS_MAX; p++) {
			const struct hist *hi = &ps->hist[p][h];
			const char *path = (const char *)ps->path[p];
			uint64_t cum = 0;

			if (!path[0])
				continue;
			for (int b = 0; b <= FO_METRICS_NBUCKETS; b++) {
				char le[32];

				cum += hi->bucket[b];
				if (b < FO_METRICS_NBUCKETS)
					snprintf(le, sizeof(le), "%g", fo_metrics_bucket_bounds[b]);
				else
					snprintf(le, sizeof(le), "+Inf");
				fo_prom_u64(out, bucket, cum, "pair", (const char *)ps->name, "path", path, "le", le,
					    NULL);
			}
			fo_prom_series(out, sum, "pair", (const char *)ps->name, "path", path, NULL);
			fprintf(out, "%.9f\n", (double)hi->sum_ns / 1e9);
			fo_prom_u64(out, count, hi->count, "pair", (const char *)ps->name, "path", path, NULL);
		}
	}
}

/* state_stream: from the stream itself (its lock, held for copies only). */
static void render_stream(FILE *out, struct fo_metrics *m, const struct snap *sn)
{
	struct fo_stream *s = __atomic_load_n(&m->stream, __ATOMIC_ACQUIRE);
	struct fo_stream_stats st;

	if (!s)
		return;
	fo_stream_stats(s, &st);
	family(out, "failoverd_state_stream_connected", "gauge",
	       "1 while the other host is connected and proved the key: direction in (it sends to us), out (we send "
	       "to it).");
	fo_prom_u64(out, "failoverd_state_stream_connected", (uint64_t)st.peer_in, "direction", "in", NULL);
	fo_prom_u64(out, "failoverd_state_stream_connected", (uint64_t)st.peer_out, "direction", "out", NULL);
	family(out, "failoverd_state_stream_states_total", "counter",
	       "Committed states sent to the other host (out) and received from it (in).");
	fo_prom_u64(out, "failoverd_state_stream_states_total", st.received, "direction", "in", NULL);
	fo_prom_u64(out, "failoverd_state_stream_states_total", st.sent, "direction", "out", NULL);
	family(out, "failoverd_state_stream_refused_total", "counter",
	       "Connections and messages the state stream refused, by what was wrong (each also said in the log).");
	for (int i = 0; i < FO_REFUSED_N; i++)
		fo_prom_u64(out, "failoverd_state_stream_refused_total", st.refused[i], "reason",
			    fo_wire_refusal_name((enum fo_wire_refusal)i), NULL);
	family(out, "failoverd_state_stream_lag_cycles", "gauge",
	       "Cycles between the other host's newest (its active's) and the newest state written into this "
	       "host's standby: what a takeover here would lose now.");
	for (int k = 0; k < FO_MAX_PAIRS; k++) {
		const struct pair_snap *ps = &sn->pairs[k];
		struct fo_stream_pair_stats pst;

		if (!ps->used)
			continue;
		fo_stream_pair_stats(s, (const char *)ps->name, &pst);
		series(out, "failoverd_state_stream_lag_cycles", ps, NULL, NULL);
		fprintf(out, "%llu\n", (unsigned long long)pst.lag_cycles);
	}
}

int fo_metrics_render(struct fo_metrics *m, FILE *out)
{
	const struct snap *sn = &m->copy;
	struct timespec ts;
	uint64_t now;

	if (fo_metrics_snapshot_copy(m) < 0)
		return -EAGAIN;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;

	family(out, "failoverd_build_info", "gauge", "failoverd's version (always 1).");
	fo_prom_u64(out, "failoverd_build_info", 1, "version", FO_VERSION, NULL);
	family(out, "failoverd_log_dropped_total", "counter",
	       "Log lines lost to a full log queue (journald or stderr slow); each loss is also said in the log.");
	fo_prom_u64(out, "failoverd_log_dropped_total", fo_log_dropped(), NULL);
	family(out, "failoverd_start_time_seconds", "gauge", "When failoverd started (Unix time).");
	fo_prom_u64(out, "failoverd_start_time_seconds", sn->start_s, NULL);
	family(out, "failoverd_snapshot_age_seconds", "gauge",
	       "Since the real-time loop last published these numbers (it does after every event it handles).");
	fo_prom_series(out, "failoverd_snapshot_age_seconds", NULL);
	fprintf(out, "%.6f\n",
		sn->publish_ns && now >= sn->publish_ns ? (double)(now - sn->publish_ns) / 1e9 : 0.0);

	family(out, "failoverd_pair_state", "gauge", "Pair state (1 for the current state).");
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		for (int st = 0; st < STATES; st++) {
			series(out, "failoverd_pair_state", ps, "state", fo_pair_state_name((enum fo_pair_state)st));
			fprintf(out, "%d\n", ps->state == (uint64_t)st);
		}
	}
	per_pair(out, sn, "failoverd_pair_protected", "gauge",
		 "1 when the pair is ARMED with a verified, paused standby: a failure of the active is covered.",
		 offsetof(struct pair_snap, protected_));
	per_pair(out, sn, "failoverd_switchovers_total", "counter", "Switchovers that started the standby.",
		 offsetof(struct pair_snap, switches));
	per_pair(out, sn, "failoverd_switchovers_failed_total", "counter", "Switchovers aborted or failed.",
		 offsetof(struct pair_snap, failed_switches));
	family(out, "failoverd_switches_by_fault_total", "counter",
	       "Switches that started the standby, by the fault that caused them.");
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		for (int f = 1; f < FAULTS; f++) {
			series(out, "failoverd_switches_by_fault_total", ps, "fault", fo_fault_name((enum fo_fault)f));
			fprintf(out, "%llu\n", (unsigned long long)ps->by_fault[f]);
		}
	}
	per_pair(out, sn, "failoverd_switches_over_deadline_total", "counter",
		 "Switches that started the standby too late: detected to running over deadline_ms, or fault to "
		 "running over timeout + period + deadline (the event's MISSED).",
		 offsetof(struct pair_snap, over_deadline));
	family(out, "failoverd_pair_deadline_seconds", "gauge", "The pair's deadline_ms: detected to standby running.");
	for (int s = 0; s < FO_MAX_PAIRS; s++) {
		const struct pair_snap *ps = &sn->pairs[s];

		if (!ps->used)
			continue;
		series(out, "failoverd_pair_deadline_seconds", ps, NULL, NULL);
		fprintf(out, "%.3f\n", (double)ps->deadline_ms / 1e3);
	}
	per_member(out, sn, "failoverd_heartbeats_total", "counter", "Valid heartbeats that made progress.",
		   offsetof(struct pair_snap, beats));
	per_member(out, sn, "failoverd_heartbeat_invalid_total", "counter", "Heartbeat pages rejected as invalid.",
		   offsetof(struct pair_snap, invalid));
	per_member(out, sn, "failoverd_heartbeat_misses_total", "counter", "Heartbeat deadlines that expired.",
		   offsetof(struct pair_snap, misses));
	per_member(out, sn, "failoverd_external_unpause_total", "counter",
		   "Times the fence audit found a member running that should be paused (unpaused outside failoverd).",
		   offsetof(struct pair_snap, external_unpauses));
	per_pair(out, sn, "failoverd_network_blocked", "gauge",
		 "1 when the pair's service network (pairs[].network) could not be set as its roles say (the pair's "
		 "reason says why).",
		 offsetof(struct pair_snap, net_blocked));
	per_pair(out, sn, "failoverd_network_recuts_total", "counter",
		 "Cut-off members (standby, failed) whose bridge port was found forwarding and cut off again.",
		 offsetof(struct pair_snap, net_recuts));
	for (int h = 0; h < H_COUNT; h++)
		render_hist(out, sn, h);
	render_stream(out, m, sn);
	return 0;
}
