/* SPDX-License-Identifier: MIT */
/*
 * policy.c - on_failover: what a switch leaves behind for the failed member
 * (kept paused, destroyed, or rebuilt from its xl config as the new
 * standby).
 */
#include "core/pair/pair_internal.h"

#include <errno.h>
#include <string.h>

/* What the switch leaves behind for the failed member. Off the real-time
 * path: the standby is already running. */
void fo_pair_apply_on_failover(struct fo_pair *p, struct fo_member *failed)
{
	struct fo_hv *hv = p->env->hv;
	int r;

	switch (p->cfg.on_failover) {
	case FO_ON_FAILOVER_KEEP_PAUSED:
		break;
	case FO_ON_FAILOVER_DESTROY:
	case FO_ON_FAILOVER_REBUILD:
		if (failed->domid == FO_DOMID_INVALID || failed->state == FO_DOM_GONE)
			break;
		r = hv->ops->destroy(hv, failed->domid);
		if (r < 0 && r != -ESRCH)
			fo_err("pair %s: could not destroy failed member %s (domain %u): %s", p->cfg.name,
			       failed->name, failed->domid, strerror(-r));
		hv->ops->unwatch_member(hv, failed->domid);
		failed->domid = FO_DOMID_INVALID;
		failed->state = FO_DOM_GONE;
		failed->agent_attached = false;
		fo_hb_reset(&failed->hb);
		break;
	}
}

void fo_pair_start_rebuild(struct fo_pair *p, int idx)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *m = &p->m[idx];
	const char *cfgpath = fo_pair_member_config(p, idx);
	int r;

	r = hv->ops->create(hv, cfgpath);
	if (r < 0) {
		fo_pair_become(p, FO_PAIR_DEGRADED, "rebuild of %s from %s failed: %s", m->name, cfgpath, strerror(-r));
		return;
	}
	/* Found again by name once it exists (domain_created or
	 * @introduceDomain), then watched like any member. We build it: a new
	 * instance, whatever was said about the old one or its name. */
	if (p->env->verdicts && fo_verdicts_clear(p->env->verdicts, m->name))
		fo_pair_persist(p);
	p->rebuild_member = idx;
	fo_pair_refresh_member(p, m);
	m->usable = false;
	set_deadline(m, FO_DL_REBUILD, now_ns(p) + FO_ARM_WAIT_NS);
	fo_pair_become(p, FO_PAIR_REBUILDING, "rebuilding %s as the new standby", m->name);
}

const char *fo_pair_member_config(const struct fo_pair *p, int idx)
{
	return strcmp(p->m[idx].name, p->cfg.active) == 0 ? p->cfg.active_config : p->cfg.standby_config;
}
