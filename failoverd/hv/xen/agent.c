/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the members and their agents: a watch on each member's `ready`
 * key, reads of its keys (on the reader thread, rate limited per member),
 * and the binding to what the guest published (its heartbeat page mapped
 * read-only, its event channel bound); lending that channel to the kernel
 * module and taking it back; letting go of members whose domain is dying or
 * gone (@releaseDomain).
 *
 * Lent channels (lend_channel/reclaim_channel, for kmod/hv_kmod.c): a
 * member's heartbeat port can have only one binding on dom0's side, and when
 * kmod-switch ARMs a pair the module binds the active's port in the kernel.
 * So before ARM we unbind ours and keep the page mapped; with no
 * notifications reaching us, the page is copied every poll_ms from a timerfd
 * and handed to cb.heartbeat exactly as a notification would, so the daemon
 * still sees sequence progress and application health. After DISARM (or the
 * module's switch, which unbinds too) we bind the port again. A lent member
 * whose keys are re-read maps its page but does not bind.
 */
#include "hv/xen/xen_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* Key reads per member: at most ATTACH_BURST per ATTACH_WINDOW_NS; watch
 * fires beyond that are coalesced and retried by the timerfd. */
#ifndef ATTACH_BURST
#define ATTACH_BURST       20u   /* overridable for lab builds that test the throttle */
#endif
#define ATTACH_WINDOW_NS   1000000000ull

struct xen_member *xen_member_find(struct xen_hv *x, fo_domid_t domid)
{
	size_t i;

	for (i = 0; i < XEN_MAX_MEMBERS; i++)
		if (x->members[i].in_use && x->members[i].domid == domid)
			return &x->members[i];
	return NULL;
}

struct xen_member *xen_member_by_port(struct xen_hv *x, evtchn_port_t port)
{
	size_t i;

	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		struct xen_member *m = &x->members[i];

		if (m->in_use && m->port_bound && m->local_port == port)
			return m;
	}
	return NULL;
}

void xen_member_detach(struct xen_hv *x, struct xen_member *m)
{
	if (m->port_bound)
		xenevtchn_unbind(x->xce, m->local_port);
	if (m->page)
		xengnttab_unmap(x->xgt, (void *)(uintptr_t)m->page, 1);
	m->page = NULL;
	m->port_bound = false;
	m->flood = (struct fo_notify_flood){ 0 };
	m->gref = 0;
	m->remote_port = 0;
	m->ready[0] = '\0';
}

static void member_report(struct xen_hv *x, struct xen_member *m, int err, const char *reason)
{
	/* A guest rewriting the same bad key over and over must not turn into
	 * a callback (and a log line upstairs) per rewrite. */
	if (err < 0 && m->reported && m->last_err == err && !strcmp(m->last_reason, reason))
		return;
	m->reported = true;
	m->last_err = err;
	snprintf(m->last_reason, sizeof(m->last_reason), "%s", reason);
	if (x->base.cb.agent)
		x->base.cb.agent(x->base.cb.ctx, m->domid, err, reason);
}

/* Ask the reader for a member's keys, within the member's rate limit. */
static void member_request_read(struct xen_hv *x, struct xen_member *m)
{
	uint64_t now = mono_ns();

	if (m->read_in_flight)
		return; /* m->dirty stays set: asked again when this read lands */
	if (now - m->window_start >= ATTACH_WINDOW_NS) {
		m->window_start = now;
		m->attempts = 0;
	}
	if (m->attempts >= ATTACH_BURST || !xen_reader_request(&x->reader, m->domid, m->gen)) {
		m->retry_pending = true;
		return;
	}
	m->attempts++;
	m->dirty = false;
	m->read_in_flight = true;
}

/*
 * Bring a member's binding in line with what its guest published (the keys
 * the reader just read).
 */
static void member_apply(struct xen_hv *x, struct xen_member *m, struct reader_res *res)
{
	struct agent_keys k = res->keys;
	char reason[REASON_MAX];
	struct fo_agent_binding binding;
	uint32_t gref, port;
	xenevtchn_port_or_error_t local;
	void *page;
	int r = res->err;

	fo_debug("xen: dom%" PRIu32 ": read agent keys in %" PRIu64 " us (attempt %u in this window)",
		 m->domid, res->took_ns / 1000, m->attempts);
	if (r == -EAGAIN) {
		/* The keys kept changing under us. Whatever changed them fired
		 * the watch again, so a retry is already queued; the current
		 * binding stays until a consistent snapshot says otherwise. */
		goto out;
	}
	if (r < 0) {
		snprintf(reason, sizeof(reason), "cannot read %s: %s", FO_HB_XS_DIR, strerror(-r));
		goto refuse;
	}
	if (!k.ready) {
		/* No agent (yet), or it went away. */
		if (m->page) {
			xen_member_detach(x, m);
			member_report(x, m, -ENOENT, "agent withdrew " FO_HB_XS_READY);
		}
		goto out;
	}

	r = fo_agent_keys_parse(k.ready, k.abi, k.gref, k.port, FO_HB_ABI_VERSION, &binding, reason,
				sizeof(reason));
	if (r < 0)
		goto refuse;
	gref = binding.gref, port = binding.port;

	if (m->page && m->gref == gref && m->remote_port == port && !strcmp(m->ready, k.ready))
		goto out; /* nothing changed */
	if (m->lent && port != m->lent_port) {
		/* Mapped below like any new agent; the daemon re-arms the module
		 * on the new port when it hears this. */
		snprintf(reason, sizeof(reason), "agent's port changed (%" PRIu32 " -> %" PRIu32
			 ") while the kernel module holds the old one", m->lent_port, port);
		m->lent_port = port;
		xen_member_detach(x, m);
		page = xengnttab_map_grant_ref(x->xgt, m->domid, gref, PROT_READ);
		if (page) {
			m->page = page;
			m->gref = gref;
			m->remote_port = port;
			snprintf(m->ready, sizeof(m->ready), "%s", k.ready);
		}
		m->reported = false;
		member_report(x, m, -ESTALE, reason);
		goto out;
	}

	/* One page per member, ever: drop the old binding before mapping. */
	xen_member_detach(x, m);

	page = xengnttab_map_grant_ref(x->xgt, m->domid, gref, PROT_READ);
	if (!page) {
		r = neg_errno();
		snprintf(reason, sizeof(reason), "cannot map %s %" PRIu32 ": %s", FO_HB_XS_GREF,
			 gref, strerror(-r));
		goto refuse;
	}
	if (m->lent) {
		/* The kernel module holds the port (it was lent before this
		 * re-read, or adopted from a module armed before we started):
		 * binding it would fail with EINVAL and is not ours to do. */
		m->page = page;
		local = -1;
		goto mapped;
	}
	local = xenevtchn_bind_interdomain(x->xce, m->domid, port);
	if (local < 0) {
		r = neg_errno();
		xengnttab_unmap(x->xgt, page, 1);
		snprintf(reason, sizeof(reason), "cannot bind %s %" PRIu32 ": %s", FO_HB_XS_PORT,
			 port, strerror(-r));
		goto refuse;
	}
	m->page = page;
	m->local_port = (evtchn_port_t)local;
	m->port_bound = true;
	m->flood = (struct fo_notify_flood){ 0 };
mapped:
	m->gref = gref;
	m->remote_port = port;
	snprintf(m->ready, sizeof(m->ready), "%s", k.ready);
	m->reported = false; /* a later failure is news again */
	snprintf(reason, sizeof(reason), "attached (gref %" PRIu32 ", port %" PRIu32 ", boot %s%s)",
		 gref, port, m->ready, m->lent ? ", port held by the kernel module" : "");
	if (x->base.fowatch)
		fo_fowatch_agent_attached(x->base.fowatch, m->domid); /* a new page: the watch must follow it */
	member_report(x, m, 0, reason);
	goto out;

refuse:
	/* What the guest publishes now is what counts: a stale binding would
	 * be listening to an agent that no longer claims it. */
	xen_member_detach(x, m);
	member_report(x, m, r, reason);
out:
	return; /* the caller frees the keys */
}

/* poll_fd ticks at the shortest poll_ms of the lent members, and at the
 * end of the soonest back-off of a port masked for flooding, or not at all. */
void xen_poll_timer_arm(struct xen_hv *x)
{
	struct itimerspec its = { 0 };
	uint64_t ns = 0;
	size_t i;

	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		const struct xen_member *m = &x->members[i];
		uint64_t p = (uint64_t)(m->poll_ms ? m->poll_ms : 1) * 1000000ull;

		if (m->in_use && m->lent && (!ns || p < ns))
			ns = p;
		if (m->in_use && m->port_bound && m->flood.masked) {
			uint64_t now = mono_ns();

			p = m->flood.unmask_ns > now + 1000000ull ? m->flood.unmask_ns - now : 1000000ull;
			if (!ns || p < ns)
				ns = p;
		}
	}
	if (ns == x->poll_interval_ns || x->poll_fd < 0)
		return;
	x->poll_interval_ns = ns;
	its.it_interval.tv_sec = its.it_value.tv_sec = (time_t)(ns / 1000000000ull);
	its.it_interval.tv_nsec = its.it_value.tv_nsec = (long)(ns % 1000000000ull);
	timerfd_settime(x->poll_fd, 0, &its, NULL);
}

static void retry_timer_arm(struct xen_hv *x)
{
	struct itimerspec its = { 0 };
	uint64_t earliest = UINT64_MAX;
	size_t i;

	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		struct xen_member *m = &x->members[i];

		if (m->in_use && m->retry_pending && m->window_start + ATTACH_WINDOW_NS < earliest)
			earliest = m->window_start + ATTACH_WINDOW_NS;
	}
	if (earliest == UINT64_MAX) {
		if (!x->timer_armed)
			return;
		x->timer_armed = false;
	} else {
		if (earliest == 0)
			earliest = 1; /* 0 would disarm */
		its.it_value.tv_sec = (time_t)(earliest / 1000000000ull);
		its.it_value.tv_nsec = (long)(earliest % 1000000000ull);
		x->timer_armed = true;
	}
	timerfd_settime(x->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void process_dirty_members(struct xen_hv *x)
{
	size_t i;

	/* Callbacks may unwatch members: re-check in_use each time. */
	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		struct xen_member *m = &x->members[i];

		if (m->in_use && m->dirty && !m->retry_pending && !m->read_in_flight)
			member_request_read(x, m);
	}
	retry_timer_arm(x);
}

static struct xen_member *member_by_gen(struct xen_hv *x, fo_domid_t domid, uint64_t gen)
{
	struct xen_member *m = xen_member_find(x, domid);

	return m && m->gen == gen ? m : NULL;
}

int xen_watch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m;
	char path[128];
	size_t i;

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (xen_doomed_has(x, domid))
		return -ESRCH;
	if (xen_member_find(x, domid))
		return 0;
	for (m = NULL, i = 0; i < XEN_MAX_MEMBERS && !m; i++)
		if (!x->members[i].in_use)
			m = &x->members[i];
	if (!m)
		return -ENOSPC;

	memset(m, 0, sizeof(*m));
	m->domid = domid;
	m->gen = ++x->next_gen;
	snprintf(m->token, sizeof(m->token), TOKEN_MEMBER "%" PRIu32, domid);
	snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, FO_HB_XS_READY);
	if (!xs_watch(x->xs, path, m->token))
		return neg_errno();
	m->in_use = true;
	/* Ask at once: an agent that is already up is attached without
	 * waiting for the watch's own first firing. */
	m->dirty = true;
	process_dirty_members(x);
	return 0;
}

void xen_unwatch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m = xen_member_find(x, domid);
	char path[128];

	if (!m)
		return;
	snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, FO_HB_XS_READY);
	xs_unwatch(x->xs, path, m->token);
	xen_member_detach(x, m);
	xen_state_relay_forget(x->state_relay, domid);
	m->in_use = false;
	m->lent = false;
	retry_timer_arm(x);
	xen_poll_timer_arm(x);
}

/* See "Lent channels" at the top. */
int xen_lend_channel(struct fo_hv *hv, fo_domid_t domid, uint32_t poll_ms, uint32_t *port)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m = xen_member_find(x, domid);
	bool adopt = *port != 0;

	if (!m)
		return -ENOENT;
	if (!adopt && !m->page)
		return -ENOENT; /* no agent attached: no port to hand over */
	if (m->port_bound) {
		xenevtchn_unbind(x->xce, m->local_port);
		m->port_bound = false;
		m->flood = (struct fo_notify_flood){ 0 }; /* the module's own back-off takes over */
	}
	m->lent = true;
	m->poll_ms = poll_ms ? poll_ms : 10;
	if (!adopt)
		*port = m->remote_port;
	m->lent_port = *port;
	if (adopt && !m->page) {
		/* Adopting a channel the module already holds: our own attach
		 * may have failed on it (EINVAL); read the keys again and map
		 * the page without binding. */
		m->reported = false;
		m->dirty = true;
		process_dirty_members(x);
	}
	xen_poll_timer_arm(x);
	return 0;
}

void xen_reclaim_channel(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m = xen_member_find(x, domid);
	xenevtchn_port_or_error_t local;

	if (!m || !m->lent)
		return;
	m->lent = false;
	xen_poll_timer_arm(x);
	if (!m->page) {
		/* Nothing mapped (the agent moved on and its new page could
		 * not be mapped): read its keys again, bind as usual. */
		m->dirty = true;
		process_dirty_members(x);
		return;
	}
	local = xenevtchn_bind_interdomain(x->xce, m->domid, m->remote_port);
	if (local >= 0) {
		m->local_port = (evtchn_port_t)local;
		m->port_bound = true;
		m->flood = (struct fo_notify_flood){ 0 };
		return;
	}
	/* Still held (the module unbinds only after its switch), or the agent
	 * moved on: start over from the keys, as for a new agent. */
	fo_debug("xen: dom%" PRIu32 ": re-binding port %" PRIu32 " after the kernel module: %s", m->domid,
		 m->remote_port, strerror(errno));
	xen_member_detach(x, m);
	m->reported = false;
	m->dirty = true;
	process_dirty_members(x);
}

/* @releaseDomain: members that are dying or gone give their page back now,
 * so the domain is not kept as a zombie by our mapping. */
static void release_dead_members(struct xen_hv *x)
{
	size_t i;

	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		struct xen_member *m = &x->members[i];
		enum fo_dom_state st;

		if (!m->in_use || !m->page)
			continue;
		if (xen_get_state(&x->base, m->domid, &st) < 0)
			continue;
		if (st == FO_DOM_DYING || st == FO_DOM_GONE) {
			xen_member_detach(x, m);
			member_report(x, m, -ESRCH, st == FO_DOM_GONE ? "domain gone" : "domain dying");
		}
	}
}

void xen_dispatch_xenstore(struct xen_hv *x)
{
	bool domains_changed = false;
	char **vec;
	size_t i;

	/* Drain everything first: a storm of fires for one member becomes one
	 * key read, and xenstored's queue for us never backs up. */
	while ((vec = xs_check_watch(x->xs)) != NULL) {
		const char *token = vec[XS_WATCH_TOKEN];

		if (!strcmp(token, TOKEN_RELEASE) || !strcmp(token, TOKEN_INTRODUCE)) {
			domains_changed = true;
		} else if (!strncmp(token, TOKEN_MEMBER, strlen(TOKEN_MEMBER))) {
			for (i = 0; i < XEN_MAX_MEMBERS; i++)
				if (x->members[i].in_use && !strcmp(x->members[i].token, token))
					x->members[i].dirty = true;
		}
		free(vec);
	}
	if (domains_changed) {
		/* The daemon's switch first (domain-info reads, pause,
		 * unpause); dropping a dead member's page and binding (unmap,
		 * unbind, the agent callback that logs) after it. */
		if (x->base.cb.domains_changed)
			x->base.cb.domains_changed(x->base.cb.ctx);
		release_dead_members(x);
	}
	process_dirty_members(x);
}

void xen_dispatch_reader(struct xen_hv *x)
{
	struct reader_res res[READER_QUEUE];
	size_t i, n = xen_reader_collect(&x->reader, res);

	for (i = 0; i < n; i++) {
		/* NULL: unwatched (or re-watched) while the read was in flight */
		struct xen_member *m = member_by_gen(x, res[i].domid, res[i].gen);

		if (m) {
			m->read_in_flight = false;
			member_apply(x, m, &res[i]);
		}
		xen_agent_keys_free(&res[i].keys);
	}
	/* Fires that came in during the reads are asked for now. */
	process_dirty_members(x);
}

void xen_dispatch_retry_timer(struct xen_hv *x)
{
	uint64_t expirations, now = mono_ns();
	size_t i;

	if (read(x->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		fo_debug("xen: retry timer read: %s", strerror(errno));
	x->timer_armed = false;
	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		struct xen_member *m = &x->members[i];

		if (m->in_use && m->retry_pending && now - m->window_start >= ATTACH_WINDOW_NS) {
			m->retry_pending = false;
			m->dirty = true;
		}
	}
	process_dirty_members(x);
}
