/* SPDX-License-Identifier: MIT */
/*
 * domctl.c - the domain actions the switch path takes (pause, unpause,
 * state) and the lookups around them (name -> domid, handle), through one
 * preallocated domctl buffer (libxencall), libxenctrl as the fallback; and
 * the list of domains being destroyed ("doomed"), which these actions
 * honour.
 *
 * Why a fast path: libxenctrl bounces every domctl through a hypercall buffer
 * it gets and releases per call. A resident daemon allocates one
 * hypercall-safe buffer at start and reuses it, so pause/unpause/getinfo on
 * the switch path are one privcmd ioctl each and allocate nothing. (Under
 * QEMU/TCG the two paths measured the same within noise -- the hypervisor's
 * own work dominates there; the point is the allocation-free switch path.)
 * If libxencall cannot be opened or the probe fails, the xc_* calls are used
 * instead, with the same semantics.
 */
#include "hv/xen/xen_internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

int xen_domctl_fast(struct xen_hv *x, uint32_t cmd, fo_domid_t domid)
{
	return xen_domctl_union(x, cmd, domid, NULL, 0);
}

int xen_domctl_union(struct xen_hv *x, uint32_t cmd, fo_domid_t domid, void *u, size_t len)
{
	struct xen_domctl dc, *d = x->domctl ? x->domctl : &dc;
	int r;

	memset(d, 0, sizeof(*d));
	d->cmd = cmd;
	d->interface_version = XEN_DOMCTL_INTERFACE_VERSION;
	d->domain = (domid_t)domid;
	if (len)
		memcpy(&d->u, u, len);
	if (x->domctl)
		r = xencall1(x->xcall, __HYPERVISOR_domctl, (uint64_t)(uintptr_t)d) < 0 ? neg_errno() : 0;
	else
		r = xc_domctl(x->xch, d) < 0 ? neg_errno() : 0; /* bounces a copy of d per call */
	if (r == 0 && len)
		memcpy(u, &d->u, len);
	return r;
}

static enum fo_dom_state state_from_flags(uint32_t flags)
{
	unsigned reason = (flags >> XEN_DOMINF_shutdownshift) & XEN_DOMINF_shutdownmask;

	if (flags & XEN_DOMINF_dying)
		return FO_DOM_DYING;
	if ((flags & XEN_DOMINF_shutdown) && reason == SHUTDOWN_crash)
		return FO_DOM_CRASHED;
	/* A suspend (xl save, a checkpoint, a migration) is not a death:
	 * libxl may resume the domain. Only the toolstack's pause count,
	 * which a resume leaves alone, keeps it from running then. */
	if ((flags & XEN_DOMINF_shutdown) && reason == SHUTDOWN_suspend)
		return (flags & XEN_DOMINF_paused) ? FO_DOM_PAUSED : FO_DOM_SUSPENDED;
	if (flags & XEN_DOMINF_shutdown)
		return FO_DOM_SHUTDOWN;
	if (flags & XEN_DOMINF_paused)
		return FO_DOM_PAUSED;
	return FO_DOM_RUNNING;
}

/*
 * One domain's info. Xen 4.17's getdomaininfo (and the sysctl list) return
 * the first domain whose id is >= the one asked for, so the returned id is
 * checked: a neighbour must never be mistaken for the member.
 * Returns 0 with *ret_found false when the domain does not exist.
 */
int xen_get_dominfo(struct xen_hv *x, fo_domid_t domid, bool *ret_found,
		       xen_domctl_getdomaininfo_t *ret_info)
{
	xc_domaininfo_t info;
	int r;

	if (x->domctl) {
		r = xen_domctl_fast(x, XEN_DOMCTL_getdomaininfo, domid);
		if (r == -ESRCH) {
			*ret_found = false;
			return 0;
		}
		if (r < 0)
			return r;
		*ret_found = x->domctl->u.getdomaininfo.domain == domid;
		if (*ret_found && ret_info)
			*ret_info = x->domctl->u.getdomaininfo;
		return 0;
	}
	r = xc_domain_getinfolist(x->xch, domid, 1, &info);
	if (r < 0)
		return neg_errno();
	*ret_found = r == 1 && info.domain == domid;
	if (*ret_found && ret_info)
		*ret_info = info;
	return 0;
}

bool xen_doomed_has(const struct xen_hv *x, fo_domid_t domid) { return fo_doomed_has(&x->doomed, domid); }
bool xen_doomed_add(struct xen_hv *x, fo_domid_t domid) { return fo_doomed_add(&x->doomed, domid); }
void xen_doomed_remove(struct xen_hv *x, fo_domid_t domid) { fo_doomed_remove(&x->doomed, domid); }

uint64_t xen_now_ns(struct fo_hv *hv)
{
	(void)hv;
	return mono_ns();
}

int xen_lookup(struct fo_hv *hv, const char *name, fo_domid_t *ret_domid)
{
	struct xen_hv *x = to_xen(hv);
	uint32_t domid;
	int r;

	if (!name || !*name || strlen(name) > FO_DOMNAME_MAX)
		return -EINVAL;
	r = libxl_name_to_domid(x->ctx, name, &domid);
	if (r == ERROR_INVAL)
		return -ESRCH; /* libxl's "no domain of that name" */
	if (r == ERROR_NOMEM)
		return -ENOMEM;
	if (r)
		return -EIO;
	/* Still named in xenstore until its teardown runs, but it is gone for
	 * the daemon: a rebuild must find the new domain, never this one. */
	if (xen_doomed_has(x, domid))
		return -ESRCH;
	*ret_domid = domid;
	return 0;
}

/* The domain's info, if it exists: -EINVAL for a reserved domid. */
static int dominfo_of(struct xen_hv *x, fo_domid_t domid, bool *found, xen_domctl_getdomaininfo_t *info)
{
	if (!domid_is_valid(domid))
		return -EINVAL;
	return xen_get_dominfo(x, domid, found, info);
}

int xen_get_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state)
{
	struct xen_hv *x = to_xen(hv);
	xen_domctl_getdomaininfo_t info;
	bool found;
	int r = dominfo_of(x, domid, &found, &info);

	if (r < 0)
		return r;
	if (!found)
		*ret_state = FO_DOM_GONE;
	else if (xen_doomed_has(x, domid))
		*ret_state = FO_DOM_DYING; /* paused, and destroyed as soon as the builder gets to it */
	else
		*ret_state = state_from_flags(info.flags);
	return 0;
}

int xen_get_handle(struct fo_hv *hv, fo_domid_t domid, uint8_t ret[16])
{
	xen_domctl_getdomaininfo_t info;
	bool found;
	int r = dominfo_of(to_xen(hv), domid, &found, &info);

	if (r < 0)
		return r;
	if (!found)
		return -ESRCH;
	memcpy(ret, info.handle, 16);
	return 0;
}

int xen_pause(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);

	/* Pausing ourselves would never return; Xen refuses it too. */
	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (xen_doomed_has(x, domid))
		return 0; /* paused by xen_destroy, and it stays so */
	int r;

	if (x->domctl)
		r = xen_domctl_fast(x, XEN_DOMCTL_pausedomain, domid);
	else
		r = xc_domain_pause(x->xch, domid) < 0 ? neg_errno() : 0;
	if (r == 0 && x->test_hold_after_pause_ns) {
		/* Sleep, not spin: the scenario's witness must get a CPU inside
		 * the window to see "active paused, standby not yet running";
		 * a SCHED_FIFO spin can starve it for the whole hold. */
		struct timespec ts = {
			.tv_sec = (time_t)(x->test_hold_after_pause_ns / 1000000000ull),
			.tv_nsec = (long)(x->test_hold_after_pause_ns % 1000000000ull),
		};
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
			;
	}
	return r;
}

int xen_unpause(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (xen_doomed_has(x, domid))
		return -ESRCH; /* destroyed as far as anyone is concerned */
	if (x->domctl)
		return xen_domctl_fast(x, XEN_DOMCTL_unpausedomain, domid);
	return xc_domain_unpause(x->xch, domid) < 0 ? neg_errno() : 0;
}

/* Set up the preallocated domctl; on any failure the xc_* path is used. */
void xen_fast_path_init(struct xen_hv *x)
{
	bool found;
	int r;

	x->xcall = xencall_open(&x->log_xen.vtable, 0);
	if (!x->xcall) {
		fo_notice("xen: libxencall unavailable (%s), using libxenctrl for pause/unpause",
			  strerror(errno));
		return;
	}
	x->domctl = xencall_alloc_buffer(x->xcall, sizeof(*x->domctl));
	if (!x->domctl) {
		fo_notice("xen: no hypercall buffer (%s), using libxenctrl for pause/unpause",
			  strerror(errno));
		return;
	}
	r = xen_get_dominfo(x, DOM0_ID, &found, NULL);
	if (r < 0 || !found) {
		/* e.g. -EACCES: the hypervisor speaks another domctl version */
		fo_notice("xen: domctl fast path probe failed (%s), using libxenctrl",
			  r < 0 ? strerror(-r) : "dom0 not found");
		xencall_free_buffer(x->xcall, x->domctl);
		x->domctl = NULL;
	}
}
