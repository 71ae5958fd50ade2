/* SPDX-License-Identifier: MIT */
/*
 * fowatch.c - the Xen backend's half of the failover watch (our patched
 * hypervisor, rt-patches/xen-4.17/0005-0011): the domctl, VIRQ_FAILOVER
 * bound on the backend's event-channel handle, the members' grant
 * references, and the ops table with the watch as the pairs' armed owner.
 * The translation itself is hv/fowatch/owner.c.
 *
 * Debian's libxenctrl knows neither the command nor its struct: the struct
 * (rt-patches/abi/xen_failover_watch.h, offsets pinned there) is copied
 * into struct xen_domctl's union and issued with the stock interface
 * version, which the series does not change.
 */
#include "hv/xen/xen_internal.h"

#include <string.h>

_Static_assert(sizeof(((struct xen_domctl *)0)->u) >= sizeof(struct fo_xen_failover_watch),
	       "the failover watch struct must fit xen_domctl.u");

/* Through the backend's preallocated domctl buffer, as pause and unpause:
 * DISARM runs on our own switch path, where libxenctrl's per-call bounce
 * buffer would be an allocation. */
static int fowatch_domctl(void *ctx, fo_domid_t domid, struct fo_xen_failover_watch *fw)
{
	return xen_domctl_union(ctx, FO_XEN_DOMCTL_FAILOVER_WATCH, domid, fw, sizeof(*fw));
}

int xen_agent_page(struct fo_hv *hv, fo_domid_t domid, uint32_t *ret_gref, uint32_t *ret_port)
{
	struct xen_member *m = xen_member_find(to_xen(hv), domid);

	if (!m || !m->page)
		return -ENOENT;
	*ret_gref = m->gref;
	*ret_port = m->remote_port;
	return 0;
}

bool xen_fowatch_port(struct xen_hv *x, evtchn_port_t port)
{
	if (!x->base.fowatch || port != x->fowatch_virq_port)
		return false;
	xenevtchn_unmask(x->xce, port);
	fo_fowatch_poll(&x->fowatch);
	return true;
}

int fo_hv_xen_enable_fowatch(struct fo_hv *hv, uint16_t cpu, uint32_t poll_us, char *why, size_t whylen)
{
	struct xen_hv *x = to_xen(hv);
	xenevtchn_port_or_error_t port;
	int r;

	r = fo_fowatch_probe(fowatch_domctl, x);
	if (r < 0) {
		snprintf(why, whylen, "%s", r == -ENOSYS ?
			 "this Xen has no failover watch (XEN_DOMCTL_failover_watch unknown: not our patched Xen)" :
			 strerror(-r));
		return r;
	}
	if (cpu >= (uint16_t)xc_get_max_cpus(x->xch)) {
		snprintf(why, whylen, "hypervisor_watch_cpu %u: Xen has %d pCPUs", cpu, xc_get_max_cpus(x->xch));
		return -EINVAL;
	}
	port = xenevtchn_bind_virq(x->xce, FO_XEN_VIRQ_FAILOVER);
	if (port < 0) {
		r = neg_errno();
		snprintf(why, whylen, "cannot bind VIRQ_FAILOVER (%u): %s", FO_XEN_VIRQ_FAILOVER, strerror(-r));
		return r;
	}
	x->fowatch_virq_port = (evtchn_port_t)port;
	fo_fowatch_owner_init(&x->fowatch, hv, fowatch_domctl, x, cpu, poll_us);
	x->ops_fowatch = *hv->ops;
	fo_fowatch_install(hv, &x->fowatch, &x->ops_fowatch);
	return 0;
}
