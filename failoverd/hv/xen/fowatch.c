/* SPDX-License-Identifier: MIT */
/*
 * fowatch.c - the Xen backend's half of the failover watch (our patched
 * hypervisor, rt-patches/xen-4.17/0005-0010): the domctl through
 * libxenctrl, VIRQ_FAILOVER bound on the backend's event-channel handle,
 * the members' grant references, and the ops table with the watch as the
 * pairs' armed owner. The translation itself is hv/fowatch/owner.c.
 *
 * Debian's libxenctrl knows neither the command nor its struct: the struct
 * (rt-patches/abi/xen_failover_watch.h, offsets pinned there) is copied
 * into struct xen_domctl's union and xc_domctl() issues it with the stock
 * interface version, which the series does not change.
 */
#include "hv/xen/xen_internal.h"

#include <string.h>

_Static_assert(sizeof(((struct xen_domctl *)0)->u) >= sizeof(struct fo_xen_failover_watch),
	       "the failover watch struct must fit xen_domctl.u");

static int fowatch_domctl(void *ctx, fo_domid_t domid, struct fo_xen_failover_watch *fw)
{
	struct xen_hv *x = ctx;
	struct xen_domctl dc;

	memset(&dc, 0, sizeof(dc));
	dc.cmd = FO_XEN_DOMCTL_FAILOVER_WATCH;
	dc.domain = (domid_t)domid;
	memcpy(&dc.u, fw, sizeof(*fw));
	if (xc_domctl(x->xch, &dc) < 0)
		return neg_errno();
	memcpy(fw, &dc.u, sizeof(*fw));
	return 0;
}

int xen_agent_gref(struct fo_hv *hv, fo_domid_t domid, uint32_t *ret_gref)
{
	struct xen_member *m = member_find(to_xen(hv), domid);

	if (!m || !m->page)
		return -ENOENT;
	*ret_gref = m->gref;
	return 0;
}

static int xen_fowatch_arm(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			   uint32_t timeout_ms, uint32_t period_ms)
{
	return fo_fowatch_arm(&to_xen(hv)->fowatch, pair_id, active, standby, timeout_ms, period_ms);
}

static int xen_fowatch_disarm(struct fo_hv *hv, uint32_t pair_id)
{
	return fo_fowatch_disarm(&to_xen(hv)->fowatch, pair_id);
}

static int xen_fowatch_adopt(struct fo_hv *hv, uint32_t pair_id, const fo_domid_t members[2], uint32_t poll_ms,
			     struct fo_hv_karm *ret)
{
	(void)poll_ms; /* Xen reads the page itself; our channel stays bound */
	return fo_fowatch_adopt(&to_xen(hv)->fowatch, pair_id, members, ret);
}

static void xen_fowatch_poll(struct fo_hv *hv)
{
	fo_fowatch_poll(&to_xen(hv)->fowatch);
}

static const char *xen_fowatch_owner(struct fo_hv *hv)
{
	(void)hv;
	return "hypervisor";
}

bool xen_fowatch_port(struct xen_hv *x, evtchn_port_t port)
{
	if (!x->fowatch_on || port != x->fowatch_virq_port)
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
	x->ops_fowatch.kernel_arm = xen_fowatch_arm;
	x->ops_fowatch.kernel_disarm = xen_fowatch_disarm;
	x->ops_fowatch.kernel_adopt = xen_fowatch_adopt;
	x->ops_fowatch.kernel_poll_events = xen_fowatch_poll;
	x->ops_fowatch.kernel_list = NULL; /* Xen has no LIST: orphans are found by domain */
	x->ops_fowatch.armed_owner = xen_fowatch_owner;
	x->fowatch_on = true;
	x->base.ops = &x->ops_fowatch;
	return 0;
}
