/* SPDX-License-Identifier: MIT */
/*
 * view.c - a pair as the world outside core/ sees it (struct fo_pair_view,
 * pair.h): the one place that reads struct fo_pair's fields for io/'s
 * status replies and metrics, so that io/ only shows what it is given.
 */
#include "core/pair/pair.h"

static void member_view(const struct fo_member *m, struct fo_member_view *v)
{
	v->name = m->name;
	v->domid = m->domid;
	v->state = m->state;
	v->usable = m->usable;
	v->progressed = m->hb.progressed;
	v->last_progress_ns = m->hb.last_progress_ns;
	v->beats = m->hb.beats;
	v->invalid = m->hb.invalid;
	v->misses = m->misses;
	v->external_unpauses = m->external_unpauses;
	v->ext = m->hb.ext;
	v->app_cycle = m->hb.app_cycle;
	v->deadline_misses = m->hb.deadline_misses;
	v->restore_result = m->hb.restore_result;
	v->restored_cycle = m->hb.restored_cycle;
}

void fo_pair_view(const struct fo_pair *p, struct fo_pair_view *v)
{
	const uint64_t *last = p->stats.last_switch_ns;

	v->name = p->cfg.name;
	v->state = p->state;
	v->reason = p->reason;
	for (int j = 0; j < 2; j++) {
		member_view(&p->m[j], &v->m[j]);
		v->m[j].failed = fo_pair_member_verdict(p, j) != NULL;
	}
	v->active = p->active;
	v->deadline_ms = p->cfg.deadline_ms;
	v->switches = p->stats.switches;
	v->failed_switches = p->stats.failed_switches;
	/* Meaningful once switches > 0 (the phases of the last switch). */
	v->last_switch_us = (last[FO_PHASE_UNPAUSE_DONE] - last[FO_PHASE_FAULT]) / 1000;
	v->last_switch_time_ns = p->stats.last_switch_time_ns;
	v->kernel_armed = p->kernel_armed;
	v->kernel_ok = p->kernel_ok;
	v->owner = !p->kernel_armed ? NULL : p->kernel_owner_is_hv ? "hypervisor" : "kernel";
	v->kernel_id = p->kernel_id;
	v->kernel_switches = p->kernel_switches;
	v->placement_wanted = p->cfg.pin.cpupool[0] || p->cfg.pin.n_active_pcpus || p->cfg.pin.n_standby_pcpus;
	v->placement_checked = p->placement_checked;
	v->placement_drift = p->placement_drift;
	v->placement = p->placement;
	v->net_enabled = p->cfg.net.enabled;
	v->net_bridge = p->cfg.net.bridge;
	v->net_active_port = p->net.port_domid[p->active] == p->m[p->active].domid ? p->net.port[p->active] : 0;
	v->net_blocked = p->net_blocked || p->net_stale;
	v->net_recuts = p->net_recuts;
}

const char *fo_pair_name(const struct fo_pair *p)
{
	return p->cfg.name;
}
