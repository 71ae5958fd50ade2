/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - the backend's file descriptors, and heartbeats as they
 * arrive. xen_dispatch says which fd is whose: heartbeats are handled
 * here; the xenstore watches, the reader's results and the retry timer in
 * agent.c; the writer's and the builder's results in writer.c and
 * builder.c.
 *
 * File descriptors (get_fds): the xenstore watch fd, the event-channel fd,
 * a timerfd for throttled retries, the reader's and the builder's eventfds,
 * a timerfd that reads lent members' pages, the writer's eventfd; the set
 * is fixed for the life of the handle.
 *
 * A heartbeat arrives as an event-channel notification, or, for a member
 * whose channel is lent to the kernel module (see agent.c), as a tick of
 * the page poll timer; either way the page is copied and handed to
 * cb.heartbeat and to the state relay.
 *
 * A guest that notifies far more often than it beats (EVTCHNOP_send in a
 * loop) has its port left masked once over hv/notify_flood.h's budget; the
 * poll timer unmasks it when the back-off is over (a notification sent
 * meanwhile then comes at once), and a heartbeat deadline that runs out
 * meanwhile first takes a look at the page (xen_heartbeat_look): the loop
 * handles a few notifications per back-off for it, not every one, and a
 * beat held back is no heartbeat loss. Each back-off is counted and said
 * (rate-limited): a flooding guest is a fault signal.
 */
#include "hv/xen/xen_internal.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/*
 * Sequence first, then an acquire fence, then the rest: a copy that shows
 * sequence N carries the fields the agent wrote before publishing N. The
 * page is read through volatile so every field is loaded exactly once.
 */
static void hb_page_copy(const volatile struct fo_hb_page *src, struct fo_hb_page *dst)
{
	dst->sequence = src->sequence;
	atomic_thread_fence(memory_order_acquire);
	dst->magic = src->magic;
	dst->abi_version = src->abi_version;
	dst->period_ms = src->period_ms;
	dst->app_status = src->app_status;
	dst->flags = src->flags;
	dst->health_seq = src->health_seq;
	dst->boot_id = src->boot_id;
	dst->ext_magic = src->ext_magic;
	dst->ext_version = src->ext_version;
	dst->app_cycle = src->app_cycle;
	dst->app_flags = src->app_flags;
	dst->deadline_misses = src->deadline_misses;
	dst->restored_cycle = src->restored_cycle;
	dst->restore_result = src->restore_result;
}

static void deliver_beat(struct xen_hv *x, struct xen_member *m)
{
	struct fo_hb_page copy;
	fo_domid_t domid = m->domid;

	hb_page_copy(m->page, &copy);
	xen_state_relay_beat(x->state_relay, domid, &copy);
	if (x->base.cb.heartbeat)
		x->base.cb.heartbeat(x->base.cb.ctx, domid, &copy);
}

/* Over the budget: the port stays masked, the poll timer unmasks it. */
static void flood_backoff(struct xen_hv *x, struct xen_member *m, uint64_t now)
{
	const struct fo_notify_flood *f = &m->flood;

	if (fo_ratelimit_ok(&x->flood_rl, now))
		fo_warn("xen: domain %u floods its heartbeat channel (more than %u notifications without a new "
			"sequence, or %u in all, in %" PRIu64 " ms): port masked for %" PRIu64 " ms (%" PRIu64
			" back-offs, %" PRIu64 " of %" PRIu64 " notifications not handled)",
			m->domid, FO_FLOOD_IDLE_BURST, FO_FLOOD_BURST,
			fo_notify_flood_window_ns(m->page->period_ms) / 1000000u, (f->unmask_ns - now) / 1000000u,
			f->backoffs, f->suppressed, f->notifications);
	xen_poll_timer_arm(x);
}

static void dispatch_evtchn(struct xen_hv *x)
{
	int budget;

	/* Bounded so a guest notifying at full speed cannot starve the loop;
	 * the fd stays readable if more is pending. */
	for (budget = 0; budget < 4 * XEN_MAX_MEMBERS; budget++) {
		xenevtchn_port_or_error_t port = xenevtchn_pending(x->xce);
		struct xen_member *m;

		if (port < 0)
			break; /* EAGAIN: the fd is non-blocking */
		if (xen_fowatch_port(x, (evtchn_port_t)port))
			continue; /* VIRQ_FAILOVER: Xen's watch changed state */
		m = xen_member_by_port(x, (evtchn_port_t)port);
		if (m) {
			uint64_t now = mono_ns();
			uint64_t backoffs = m->flood.backoffs;

			if (!fo_notify_flood_note(&m->flood, now, m->page->period_ms, m->page->sequence)) {
				if (m->flood.backoffs != backoffs)
					flood_backoff(x, m, now);
				continue; /* left masked */
			}
			deliver_beat(x, m);
		}
		/* Unknown ports (just unbound, stale) are unmasked and dropped;
		 * an error here means the port is gone, which is fine. */
		xenevtchn_unmask(x->xce, (evtchn_port_t)port);
	}
}

/* Lent members: what a notification would have delivered. Members masked
 * for flooding: the port unmasked once the back-off is over (a
 * notification sent meanwhile comes at once). */
static void dispatch_poll(struct xen_hv *x)
{
	uint64_t expirations, now = mono_ns();
	bool rearm = false;
	size_t i;

	if (read(x->poll_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		fo_debug("xen: page poll timer read: %s", strerror(errno));
	/* Callbacks may unwatch members: re-check each time. */
	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		struct xen_member *m = &x->members[i];
		bool masked = m->in_use && m->port_bound && m->flood.masked;

		if (!m->in_use || !m->page || !(m->lent || masked))
			continue;
		if (masked) {
			if (fo_notify_flood_unmask_due(&m->flood, now)) {
				xenevtchn_unmask(x->xce, m->local_port);
				rearm = true;
			}
			continue;
		}
		deliver_beat(x, m);
	}
	if (rearm)
		xen_poll_timer_arm(x);
}

/* A deadline ran out: a member whose port we left masked may have beaten
 * meanwhile (hv.h heartbeat_look). */
void xen_heartbeat_look(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m = xen_member_find(x, domid);

	if (m && m->page && m->port_bound && m->flood.masked)
		deliver_beat(x, m);
}

size_t xen_get_fds(struct fo_hv *hv, int *fds, size_t max)
{
	struct xen_hv *x = to_xen(hv);
	int all[7] = { xs_fileno(x->xs), xenevtchn_fd(x->xce), x->timer_fd, x->reader.h.event_fd,
		       x->builder.h.event_fd, x->poll_fd, x->writer.h.event_fd };
	size_t i;

	for (i = 0; i < 7 && i < max; i++)
		fds[i] = all[i];
	return i;
}

/* What a failover waits on: heartbeat notifications, @releaseDomain, the
 * lent pages' poll. The helper threads' results and the retry timer are
 * bookkeeping, served after them. */
bool xen_fd_is_rt(struct fo_hv *hv, int fd)
{
	struct xen_hv *x = to_xen(hv);

	return fd == xenevtchn_fd(x->xce) || fd == xs_fileno(x->xs) || fd == x->poll_fd;
}

bool xen_fds_changed(struct fo_hv *hv)
{
	struct xen_hv *x = to_xen(hv);
	bool changed = x->fds_changed;

	x->fds_changed = false;
	return changed;
}

void xen_dispatch(struct fo_hv *hv, int fd)
{
	struct xen_hv *x = to_xen(hv);

	if (fd == xenevtchn_fd(x->xce))
		dispatch_evtchn(x);
	else if (fd == xs_fileno(x->xs))
		xen_dispatch_xenstore(x);
	else if (fd == x->reader.h.event_fd)
		xen_dispatch_reader(x);
	else if (fd == x->builder.h.event_fd)
		xen_dispatch_builder(x);
	else if (fd == x->writer.h.event_fd)
		xen_dispatch_writer(x);
	else if (fd == x->timer_fd)
		xen_dispatch_retry_timer(x);
	else if (fd == x->poll_fd)
		dispatch_poll(x);
}
