/* SPDX-License-Identifier: MIT */
/*
 * manager_kernel.c - the pairs' ids in an armed owner (the kernel module,
 * Xen's watch) and the sweep at start and reload: a pair armed there under
 * an id no configured pair has is disarmed, one of ours is adopted by its
 * pair (core/pair/kernel_owner.c).
 */
#include "core/manager_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* What one LIST asks for: the module's own limit on armed pairs. */
#define FO_KERNEL_LIST_MAX 64

/* Which pairs may be armed in the kernel: the backend must offer it, and
 * the module's pair id (a hash of the name) must be unique among ours. A
 * collision is left to failoverd alone, deterministically (config order),
 * so that a restart finds the same pairs in the module. */
void fo_manager_assign_kernel_ids(struct fo_manager *m)
{
	bool capable = m->env.hv && m->env.hv->ops->kernel_arm && m->env.hv->ops->kernel_disarm &&
		       m->env.hv->ops->kernel_adopt && m->env.hv->ops->kernel_poll_events;

	for (size_t i = 0; i < m->n_pairs; i++) {
		struct fo_pair *p = &m->pairs[i];

		p->kernel_id = fo_pair_kernel_id(p->cfg.name);
		p->kernel_ok = capable;
		p->kernel_owner_is_hv = capable && m->env.hv->ops->armed_owner &&
					!strcmp(m->env.hv->ops->armed_owner(m->env.hv), "hypervisor");
		for (size_t j = 0; j < i && capable; j++)
			if (m->pairs[j].kernel_id == p->kernel_id) {
				p->kernel_ok = false;
				fo_warn("pair %s: its kernel pair id %u is that of pair %s; it is not armed in the kernel module",
					p->cfg.name, p->kernel_id, m->pairs[j].cfg.name);
			}
	}
}

static struct fo_pair *pair_by_kernel_id(struct fo_manager *m, uint32_t id)
{
	for (size_t i = 0; i < m->n_pairs; i++)
		if (m->pairs[i].kernel_ok && m->pairs[i].kernel_id == id)
			return &m->pairs[i];
	return NULL;
}

/* What Xen says a domain is, for the record: the operator must be able to
 * see that disarming left it as it was. */
static const char *dom_state_str(struct fo_manager *m, fo_domid_t domid)
{
	enum fo_dom_state st;

	if (m->env.hv->ops->get_state(m->env.hv, domid, &st) < 0)
		return "state unknown";
	return fo_dom_state_name(st);
}

/* An armed pair no configured pair has the id of: nobody manages it, and the
 * module would switch domains we may be about to adopt under another name
 * (a renamed pair) or no longer watch at all. DISARM: the module unbinds
 * and forgets; every domain keeps the pause state it has. */
static void kernel_disarm_orphan(struct fo_manager *m, const struct fo_hv_karm *k)
{
	struct fo_hv *hv = m->env.hv;
	struct fo_event *e = fo_event_ring_claim(&m->ring, hv->ops->now_ns(hv));
	int r = k->firing ? -EALREADY : hv->ops->kernel_disarm(hv, k->pair_id);

	e->kind = FO_EV_INFO;
	e->result = FO_RESULT_INFO;
	/* Not a pair name (those are [A-Za-z0-9_.-]): cannot be mistaken for one. */
	snprintf(e->pair, sizeof(e->pair), "kernel:%" PRIu32, k->pair_id);
	snprintf(e->from, sizeof(e->from), "dom%" PRIu32, k->active);
	snprintf(e->to, sizeof(e->to), "dom%" PRIu32, k->standby);
	snprintf(e->message, sizeof(e->message),
		 "the kernel module had pair id %" PRIu32 " armed (dom%" PRIu32 " -> dom%" PRIu32
		 "), which is no configured pair: %s; dom%" PRIu32 " %s, dom%" PRIu32 " %s",
		 k->pair_id, k->active, k->standby,
		 r == 0 ? "disarmed, nothing paused or unpaused" :
		 r == -EALREADY ? "it is switching, its event follows" :
		 r == -ENOENT ? "gone already" : strerror(-r),
		 k->active, dom_state_str(m, k->active), k->standby, dom_state_str(m, k->standby));
}

/*
 * Armed pairs nobody here manages (kernel_list; a module without LIST is
 * said once). Orphans by id (`adopted` false) are done before arming, so
 * that a renamed pair's members are free when they are attached and armed
 * anew; a configured pair's id that it did not take up (`adopted` true:
 * after arming, where adoption happens) is given back to that pair.
 */
void fo_manager_kernel_sweep(struct fo_manager *m, bool adopted)
{
	struct fo_hv *hv = m->env.hv;
	struct fo_hv_karm armed[FO_KERNEL_LIST_MAX];
	int n;

	if (!hv->ops->kernel_list || !hv->ops->kernel_disarm)
		return;
	n = hv->ops->kernel_list(hv, armed, FO_KERNEL_LIST_MAX);
	if (n == -EOPNOTSUPP) {
		if (!adopted)
			fo_warn("the kernel module has no LIST (older than this failoverd): pairs it has armed under names "
				"no longer configured cannot be found; reload the module to be sure none is left");
		return;
	}
	if (n < 0) {
		fo_warn("cannot list the pairs the kernel module has armed: %s", strerror(-n));
		return;
	}
	for (int i = 0; i < n && i < FO_KERNEL_LIST_MAX; i++) {
		struct fo_pair *p = pair_by_kernel_id(m, armed[i].pair_id);

		if (!p) {
			if (!adopted)
				kernel_disarm_orphan(m, &armed[i]);
		} else if (adopted && !fo_pair_kernel_holds(p, &armed[i])) {
			fo_pair_kernel_foreign(p, &armed[i]);
		}
	}
}
