/* SPDX-License-Identifier: MIT */
/*
 * members.c - a pair's two domains as Xen knows them: found by name and
 * watched (refresh_*), placed (fo_pair_check_placement), told their roles
 * (fo_pair_publish_roles) and, after a switch, the state handover those roles start
 * (fo_pair_state_report).
 */
#include "core/pair/pair_internal.h"

#include <stdio.h>
#include <string.h>

#include "core/placement.h"

#define STATE_REPORT_NS       (5000ull * 1000000ull) /* look for the relay's takeover report this long */
#define STATE_RESTORE_WAIT_NS (1000ull * 1000000ull) /* wait this long for the application's restore */

/* Re-read a known member's state: one domain-info hypercall, all a fault
 * path may do before its switch. A domain that is gone keeps its domid
 * (state GONE) until fo_pair_refresh_identity(). False: could not be read (the
 * last known state stays; the next change retries). */
bool fo_pair_refresh_state(struct fo_pair *p, struct fo_member *m)
{
	struct fo_hv *hv = p->env->hv;

	return m->domid == FO_DOMID_INVALID || hv->ops->get_state(hv, m->domid, &m->state) == 0;
}

/* The slow half, never before a switch: forget a member that is gone (the
 * unwatch unbinds, unmaps and talks to xenstore), find it by name when we
 * have no (live) domid (libxl reads every domain's name), watch it. */
void fo_pair_refresh_identity(struct fo_pair *p, struct fo_member *m)
{
	struct fo_hv *hv = p->env->hv;
	fo_domid_t domid;

	if (m->domid != FO_DOMID_INVALID) {
		if (m->state != FO_DOM_GONE)
			return;
		hv->ops->unwatch_member(hv, m->domid);
		m->domid = FO_DOMID_INVALID;
		m->agent_attached = false;
		fo_hb_reset(&m->hb);
	}
	m->state = FO_DOM_GONE;
	if (hv->ops->lookup(hv, m->name, &domid) < 0) {
		m->looked_up = true;
		return;
	}
	m->fresh = m->looked_up;
	m->paused_unproven = false; /* a new instance */
	m->looked_up = true;
	m->domid = domid;
	m->has_handle = hv->ops->get_handle && hv->ops->get_handle(hv, domid, m->handle) == 0;
	if (p->env->verdicts) {
		struct fo_instance in;

		/* Another instance of this name than the one that failed (it
		 * was destroyed and re-created): that one starts clean. */
		fo_pair_member_instance(m, &in);
		fo_verdicts_forget_other(p->env->verdicts, &in);
	}
	if (hv->ops->get_state(hv, domid, &m->state) < 0)
		m->state = FO_DOM_GONE;
	hv->ops->watch_member(hv, domid);
	/* Placed as soon as it is found (arming, a rebuild), so that a
	 * switch never has to move vCPUs on the real-time path. */
	if (fo_placement_pair_wants(&p->cfg)) {
		char why[160];

		if (fo_placement_apply_member(hv, &p->cfg, m->name, domid, why, sizeof(why)) < 0)
			fo_warn("pair %s: could not place %s (domain %u): %s", p->cfg.name, m->name, domid, why);
	}
}

/* Re-read a member's state; find it by name when we have no (live) domid.
 * Starts/stops following its agent as the domain comes and goes. */
void fo_pair_refresh_member(struct fo_pair *p, struct fo_member *m)
{
	if (fo_pair_refresh_state(p, m))
		fo_pair_refresh_identity(p, m);
}

void fo_pair_check_placement(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;
	char found[sizeof(p->placement)] = "";
	bool ok = true;

	if (!fo_placement_pair_wants(&p->cfg))
		return;
	for (int i = 0; i < 2; i++)
		ok &= fo_placement_check_member(hv, &p->cfg, p->m[i].name, p->m[i].domid, found, sizeof(found));
	if (!ok && p->env->placement_enforce) {
		char why[160], again[sizeof(found)] = "";
		bool fixed = true;

		for (int i = 0; i < 2; i++) {
			if (p->m[i].domid == FO_DOMID_INVALID)
				continue;
			if (fo_placement_apply_member(hv, &p->cfg, p->m[i].name, p->m[i].domid, why, sizeof(why)) < 0)
				fo_warn("pair %s: could not re-place %s: %s", p->cfg.name, p->m[i].name, why);
			fixed &= fo_placement_check_member(hv, &p->cfg, p->m[i].name, p->m[i].domid, again,
							   sizeof(again));
		}
		if (fixed) {
			p->placement_reapplied++;
			fo_pair_record(p, FO_EV_PLACEMENT, FO_RESULT_OK, "drift re-applied (placement.enforce): was %s", found);
			found[0] = '\0';
			ok = true;
		} else {
			snprintf(found, sizeof(found), "%s", again);
		}
	}
	if (!ok && (!p->placement_drift || strcmp(found, p->placement) != 0))
		fo_pair_record(p, FO_EV_PLACEMENT, FO_RESULT_DEGRADED, "drift: %s", found);
	else if (ok && p->placement_drift)
		fo_pair_record(p, FO_EV_PLACEMENT, FO_RESULT_OK, "as configured again");
	p->placement_drift = !ok;
	p->placement_checked = true;
	snprintf(p->placement, sizeof(p->placement), "%s", found);
}

void fo_pair_publish_roles(struct fo_pair *p)
{
	struct fo_hv *hv = p->env->hv;

	if (fo_pair_active(p)->domid != FO_DOMID_INVALID)
		hv->ops->set_role(hv, fo_pair_active(p)->domid, "active");
	if (fo_pair_standby(p)->domid != FO_DOMID_INVALID)
		hv->ops->set_role(hv, fo_pair_standby(p)->domid, "standby");
	if (hv->ops->state_pair) { /* state handover follows the published roles */
		hv->ops->state_pair(hv, p->cfg.name, fo_pair_active(p)->domid, fo_pair_standby(p)->domid,
				    fo_pair_active(p)->state == FO_DOM_RUNNING);
		p->state_watch_until_ns = now_ns(p) + STATE_REPORT_NS;
	}
}

/*
 * The relay's report of a takeover (hv state_info), as an info event with
 * the cycles lost, and what the new active says it restored. The relay
 * sees the swap a few ms after the roles are published, the application
 * restores when its role reaches it (tens of ms): wait for the restore up
 * to STATE_RESTORE_WAIT_NS. Off the switch path: the new active's
 * heartbeats call this.
 */
void fo_pair_state_report(struct fo_pair *p, const struct fo_member *m)
{
	static const char *const res[] = { "not reported", "ok", "no state", "corrupt", "too old" };
	struct fo_hv *hv = p->env->hv;
	struct fo_hv_state_info si;
	uint64_t now = now_ns(p);
	bool restored;

	if (!p->state_watch_until_ns || !hv->ops->state_info)
		return;
	if (now > p->state_watch_until_ns) {
		p->state_watch_until_ns = 0;
		return;
	}
	if (!hv->ops->state_info(hv, m->domid, &si) || !si.takeover || si.takeover_ns <= p->state_reported_ns)
		return;
	restored = m->hb.ext && m->hb.restore_result && m->hb.restored_cycle == si.handed_cycle;
	if (!restored && now < si.takeover_ns + STATE_RESTORE_WAIT_NS)
		return;
	p->state_reported_ns = si.takeover_ns;
	p->state_watch_until_ns = 0;
	fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO,
		       "state handover: %s restore %s (cycle %llu), handed over cycle %llu, the old active's last %llu: "
		       "%lld cycles lost",
		       m->name, m->hb.ext && m->hb.restore_result < 5 ? res[m->hb.restore_result] : "not reported",
		       (unsigned long long)m->hb.restored_cycle, (unsigned long long)si.handed_cycle,
		       (unsigned long long)si.old_last_cycle, (long long)si.cycles_lost);
}
