/* SPDX-License-Identifier: MIT */
/*
 * manager_metrics.c - every pair's numbers in Prometheus' text format, for
 * `failoverctl metrics` (the control socket's, io/control_status.c; the
 * HTTP endpoint's text is io/metrics_render.c).
 */
#include "core/manager_internal.h"

#include "lib/prom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libfoguest: the active application's cycle and overruns, and the state
 * handover of each pair's last takeover (when the backend relays state). */
static void metrics_state_handover(const struct fo_manager *m, FILE *out)
{
	struct fo_hv *hv = m->env.hv;

	fo_prom_family(out, "failoverd_app_cycle", "gauge", "The active application's cycle (libfoguest).");
	for (size_t i = 0; i < m->n_pairs; i++) {
		const struct fo_member *a = &m->pairs[i].m[m->pairs[i].active];

		if (a->hb.ext)
			fo_prom_u64(out, "failoverd_app_cycle", a->hb.app_cycle, "pair", m->pairs[i].cfg.name, NULL);
	}
	fo_prom_family(out, "failoverd_app_deadline_misses_total", "counter",
		       "Cycle overruns the applications reported.");
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++)
			fo_prom_u64(out, "failoverd_app_deadline_misses_total", m->pairs[i].m[j].hb.deadline_misses,
				    "pair", m->pairs[i].cfg.name, "member", m->pairs[i].m[j].name, NULL);
	if (!hv || !hv->ops->state_info)
		return;
	fo_prom_family(out, "failoverd_state_cycles_lost", "gauge",
		       "Cycles lost at the last takeover (old active's last commit - handed over).");
	for (size_t i = 0; i < m->n_pairs; i++) {
		const struct fo_member *a = &m->pairs[i].m[m->pairs[i].active];
		struct fo_hv_state_info si;

		if (a->domid != FO_DOMID_INVALID && hv->ops->state_info(hv, a->domid, &si) && si.takeover) {
			fo_prom_series(out, "failoverd_state_cycles_lost", "pair", m->pairs[i].cfg.name, NULL);
			fprintf(out, "%lld\n", (long long)si.cycles_lost);
		}
	}
	fo_prom_family(out, "failoverd_state_rejected_total", "counter",
		       "Relay passes that found a member's state invalid.");
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++) {
			const struct fo_member *mb = &m->pairs[i].m[j];
			struct fo_hv_state_info si;

			if (mb->domid != FO_DOMID_INVALID && hv->ops->state_info(hv, mb->domid, &si))
				fo_prom_u64(out, "failoverd_state_rejected_total", si.rejected, "pair",
					    m->pairs[i].cfg.name, "member", mb->name, NULL);
		}
}

void fo_manager_metrics_write(const struct fo_manager *m, FILE *out)
{
	static const char *const what[] = { "pause", "unpause", "fault_to_running" };

	fo_prom_family(out, "failoverd_pair_state", "gauge", "Pair state (1 for the current state).");
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int s = 0; s <= FO_PAIR_REBUILDING; s++)
			fo_prom_u64(out, "failoverd_pair_state", m->pairs[i].state == (enum fo_pair_state)s, "pair",
				    m->pairs[i].cfg.name, "state", fo_pair_state_name(s), NULL);
	fo_prom_family(out, "failoverd_switchovers_total", "counter", "Switchovers that started the standby.");
	for (size_t i = 0; i < m->n_pairs; i++)
		fo_prom_u64(out, "failoverd_switchovers_total", m->pairs[i].stats.switches, "pair", m->pairs[i].cfg.name,
			    NULL);
	fo_prom_family(out, "failoverd_switchovers_failed_total", "counter", "Switchovers aborted or failed.");
	for (size_t i = 0; i < m->n_pairs; i++)
		fo_prom_u64(out, "failoverd_switchovers_failed_total", m->pairs[i].stats.failed_switches, "pair",
			    m->pairs[i].cfg.name, NULL);
	fo_prom_family(out, "failoverd_last_switch_phase_microseconds", "gauge",
		       "Phases of the last switchover, from the fault.");
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int ph = FO_PHASE_DETECTED; ph <= FO_PHASE_UNPAUSE_DONE; ph++) {
			uint64_t t0 = m->pairs[i].stats.last_switch_ns[FO_PHASE_FAULT];
			uint64_t t = m->pairs[i].stats.last_switch_ns[ph];

			if (t0 && t >= t0)
				fo_prom_u64(out, "failoverd_last_switch_phase_microseconds", (t - t0) / 1000, "pair",
					    m->pairs[i].cfg.name, "phase", fo_phase_name(ph), NULL);
		}
	fo_prom_family(out, "failoverd_max_switch_microseconds", "gauge",
		       "Longest pause, unpause and fault-to-running seen.");
	for (size_t i = 0; i < m->n_pairs; i++) {
		const struct fo_pair_stats *st = &m->pairs[i].stats;
		const uint64_t max[] = { st->max_pause_us, st->max_unpause_us, st->max_total_us };

		for (int w = 0; w < 3; w++)
			fo_prom_u64(out, "failoverd_max_switch_microseconds", max[w], "pair", m->pairs[i].cfg.name,
				    "what", what[w], NULL);
	}
	fo_prom_family(out, "failoverd_heartbeats_total", "counter", "Valid heartbeats that made progress.");
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++)
			fo_prom_u64(out, "failoverd_heartbeats_total", m->pairs[i].m[j].hb.beats, "pair",
				    m->pairs[i].cfg.name, "member", m->pairs[i].m[j].name, NULL);
	fo_prom_family(out, "failoverd_heartbeat_invalid_total", "counter", "Heartbeat pages rejected as invalid.");
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++)
			fo_prom_u64(out, "failoverd_heartbeat_invalid_total", m->pairs[i].m[j].hb.invalid, "pair",
				    m->pairs[i].cfg.name, "member", m->pairs[i].m[j].name, NULL);
	fo_prom_family(out, "failoverd_heartbeat_misses_total", "counter", "Heartbeat deadlines that expired.");
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++)
			fo_prom_u64(out, "failoverd_heartbeat_misses_total", m->pairs[i].m[j].misses, "pair",
				    m->pairs[i].cfg.name, "member", m->pairs[i].m[j].name, NULL);
	fo_prom_family(out, "failoverd_external_unpause_total", "counter",
		       "Times the fence audit found a member running that should be paused (unpaused outside failoverd).");
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++)
			fo_prom_u64(out, "failoverd_external_unpause_total", m->pairs[i].m[j].external_unpauses, "pair",
				    m->pairs[i].cfg.name, "member", m->pairs[i].m[j].name, NULL);
	metrics_state_handover(m, out);
}

size_t fo_manager_metrics(const struct fo_manager *m, char *buf, size_t len)
{
	char *text = NULL;
	size_t size = 0, n;
	FILE *out;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	out = open_memstream(&text, &size);
	if (!out)
		return 0;
	fo_manager_metrics_write(m, out);
	fclose(out);
	n = size < len ? size : len - 1;
	memcpy(buf, text, n);
	buf[n] = '\0';
	free(text);
	return n;
}
