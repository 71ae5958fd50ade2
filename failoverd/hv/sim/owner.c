/* SPDX-License-Identifier: MIT */
/*
 * owner.c - the simulated watch (fowatch.c) as the pairs' armed owner:
 * the simulator's half of what hv/xen/fowatch.c does on Xen. The
 * translation is hv/fowatch/owner.c, the same code the daemon runs on
 * Xen; here its domctl is fo_sim_fowatch_domctl and VIRQ_FAILOVER is the
 * simulated watch's eventfd.
 */
#include "hv/sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

static int owner_domctl(void *ctx, fo_domid_t domid, struct fo_xen_failover_watch *fw)
{
	return fo_sim_fowatch_domctl(ctx, domid, fw);
}

/* The gref of an attached agent's page and its port (-ENOENT before it
 * attached, as the Xen backend before it mapped the page). */
static int owner_agent_page(struct fo_hv *hv, fo_domid_t domid, uint32_t *ret_gref, uint32_t *ret_port)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (!d || !d->watched || !d->has_page)
		return -ENOENT;
	*ret_gref = d->gref;
	*ret_port = d->port;
	return 0;
}

static size_t owner_get_fds(struct fo_hv *hv, int *fds, size_t max)
{
	struct fo_hv_sim *s = sim_of(hv);
	size_t n = s->owner_inner->get_fds(hv, fds, max);

	if (n < max && s->fowatch_virq_fd >= 0)
		fds[n++] = s->fowatch_virq_fd;
	return n;
}

static void owner_dispatch(struct fo_hv *hv, int fd)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (fd == s->fowatch_virq_fd)
		fo_sim_fowatch_deliver(hv);
	else
		s->owner_inner->dispatch(hv, fd);
}

bool fo_sim_fowatch_deliver(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (!s->owner || !fo_sim_fowatch_virq_take(hv))
		return false;
	fo_fowatch_poll(s->owner);
	return true;
}

int fo_sim_enable_fowatch_owner(struct fo_hv *hv, uint16_t cpu)
{
	struct fo_hv_sim *s = sim_of(hv);
	int r;

	if (!s->fowatch_on)
		fo_sim_enable_fowatch(hv);
	r = fo_fowatch_probe(owner_domctl, hv);
	if (r < 0)
		return r;
	if (!s->owner) {
		s->owner = calloc(1, sizeof(*s->owner));
		if (!s->owner)
			return -ENOMEM;
	}
	/* Again after a simulated daemon restart: a fresh owner (the daemon's
	 * memory is gone; Xen's watches are not) over the same inner ops. */
	fo_fowatch_owner_init(s->owner, hv, owner_domctl, hv, cpu, 0);
	if (hv->ops != &s->owner_ops)
		s->owner_inner = hv->ops;
	s->owner_ops = *s->owner_inner;
	s->owner_ops.agent_page = owner_agent_page;
	s->owner_ops.get_fds = owner_get_fds;
	s->owner_ops.dispatch = owner_dispatch;
	fo_fowatch_install(hv, s->owner, &s->owner_ops);
	s->fds_changed = true;
	return 0;
}
