/* SPDX-License-Identifier: MIT */
/*
 * writer.c - the xenstore writer thread. Publishing a role or a drill
 * command is a transaction (write + permissions, see xs_write_dom0_owned):
 * about 30 ms under emulation, and as long as xenstored likes when a guest
 * keeps it busy. On the loop that was time in which no other pair's
 * heartbeat loss or deadline could be seen, and the reply to a switchover
 * waited for it. So the loop queues the write here and returns; this thread
 * writes over its own connection and posts every outcome back through an
 * eventfd, where the loop logs it and reports a failure (cb.write_failed).
 *
 * One thread, one FIFO: writes to a domain land in the order they were
 * asked for (a role, then a drill command). A role asked for while the
 * domain's last queued write is a role not yet started replaces that one's
 * value: only the latest role matters, and nothing queued after it for the
 * domain is overtaken.
 *
 * Bounded: the loop never waits for room. When the queue is full a role
 * is kept loop-side (one per domain, the latest wins) and queued as soon as
 * results make room; a command is refused with -EAGAIN (a drill then fails
 * at once, saying so), and so is any command to a domain whose role is
 * still waiting for room, which would otherwise overtake it.
 */
#include "hv/xen/xen_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/*
 * Write a dom0-owned key under the guest's data/ directory: owner dom0, the
 * guest may only read. Write and permissions go in one transaction so the
 * guest never sees the new value with its own (inherited) write permission.
 *
 * The domain's home must still exist (-ESRCH otherwise): the writer thread
 * may get to a role after the builder's teardown removed the domain's
 * entries, and xenstored would create the whole path again, left behind
 * for a domain id that the next domain may get.
 */
static int xs_write_dom0_owned(struct xs_handle *xs, fo_domid_t domid, const char *key,
			       const char *value)
{
	struct xs_permissions perms[2] = {
		{ .id = DOM0_ID, .perms = XS_PERM_NONE },
		{ .id = domid, .perms = XS_PERM_READ },
	};
	char home[48], path[128];
	int attempt, rc = -EAGAIN;

	snprintf(home, sizeof(home), "/local/domain/%" PRIu32, domid);
	snprintf(path, sizeof(path), "%s/%s", home, key);
	for (attempt = 0; attempt < 8 && rc == -EAGAIN; attempt++) {
		xs_transaction_t t = xs_transaction_start(xs);
		unsigned len;
		char *exists;

		if (t == XBT_NULL)
			return neg_errno();
		exists = xs_read(xs, t, home, &len);
		if (!exists) {
			rc = errno == ENOENT ? -ESRCH : neg_errno();
			xs_transaction_end(xs, t, true);
			return rc;
		}
		free(exists);
		if (!xs_write(xs, t, path, value, (unsigned)strlen(value)) ||
		    !xs_set_permissions(xs, t, path, perms, 2)) {
			rc = neg_errno();
			xs_transaction_end(xs, t, true);
			return rc;
		}
		rc = xs_transaction_end(xs, t, false) ? 0 : neg_errno();
	}
	return rc;
}

static bool value_is_sane(const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++, n++)
		if (n >= VALUE_MAX || *s < 0x21 || *s > 0x7e)
			return false;
	return true;
}

static const char *writer_key_path(enum writer_key key)
{
	return key == WRITE_ROLE ? FO_HB_XS_ROLE : FO_HB_XS_CONTROL;
}

static void *writer_main(void *arg)
{
	struct xen_writer *w = arg;

	pthread_mutex_lock(&w->h.lock);
	for (;;) {
		struct writer_req job;
		uint64_t t0;

		while (!w->h.stop && w->n_req == 0)
			pthread_cond_wait(&w->h.wake, &w->h.lock);
		if (w->n_req == 0)
			break; /* stopping, and everything queued is written */
		job = w->req[w->req_head];
		w->req_head = (w->req_head + 1) % WRITER_QUEUE;
		w->n_req--;
		pthread_mutex_unlock(&w->h.lock);

		t0 = mono_ns();
		job.err = xs_write_dom0_owned(w->xs, job.domid, writer_key_path(job.key), job.value);
		job.done_ns = mono_ns();
		job.write_ns = job.done_ns - t0;

		pthread_mutex_lock(&w->h.lock);
		/* outstanding counted this result in, so there is room */
		w->res[(w->res_head + w->n_res) % WRITER_QUEUE] = job;
		w->n_res++;
		pthread_mutex_unlock(&w->h.lock);
		xen_helper_post(&w->h);
		pthread_mutex_lock(&w->h.lock);
	}
	pthread_mutex_unlock(&w->h.lock);
	return NULL;
}

/* Always paired with xen_writer_stop(), even when xen_writer_start() never ran. */
void xen_writer_init(struct xen_writer *w)
{
	xen_helper_init(&w->h);
}

int xen_writer_start(struct xen_writer *w)
{
	w->xs = xs_open(0);
	if (!w->xs)
		return neg_errno();
	return xen_helper_start(&w->h, writer_main, w, 0);
}

/* Writes already queued are still written (a role published just before
 * SIGTERM must land); their results are dropped with the handle. Roles
 * still waiting for room are lost, and said so. */
void xen_writer_stop(struct xen_writer *w)
{
	size_t i;

	xen_helper_join(&w->h);
	for (i = 0; i < w->n_res; i++) {
		const struct writer_req *r = &w->res[(w->res_head + i) % WRITER_QUEUE];

		if (r->err < 0)
			fo_warn("xen: domain %" PRIu32 ": cannot write %s = \"%s\": %s", r->domid,
				writer_key_path(r->key), r->value, strerror(-r->err));
	}
	for (i = 0; i < w->n_deferred; i++)
		fo_warn("xen: domain %" PRIu32 ": role \"%s\" never written (writer queue full at exit)",
			w->deferred[i].domid, w->deferred[i].role);
	if (w->xs)
		xs_close(w->xs);
	xen_helper_destroy(&w->h);
}

/*
 * Queue one write: 0 (queued, or a role merged into the domain's last
 * queued write when that is a role not yet started), -EAGAIN (full).
 */
static int writer_submit(struct xen_writer *w, fo_domid_t domid, enum writer_key key, const char *value)
{
	int rc = -EAGAIN;
	size_t i;

	pthread_mutex_lock(&w->h.lock);
	if (key == WRITE_ROLE) {
		for (i = w->n_req; i-- > 0;) {
			struct writer_req *q = &w->req[(w->req_head + i) % WRITER_QUEUE];

			if (q->domid != domid)
				continue;
			if (q->key == WRITE_ROLE) {
				snprintf(q->value, sizeof(q->value), "%s", value);
				rc = 0;
			}
			break; /* anything else for the domain after it must not be overtaken */
		}
	}
	if (rc < 0 && w->outstanding < WRITER_QUEUE) {
		struct writer_req *q = &w->req[(w->req_head + w->n_req) % WRITER_QUEUE];

		memset(q, 0, sizeof(*q));
		q->domid = domid;
		q->key = key;
		snprintf(q->value, sizeof(q->value), "%s", value);
		q->queued_ns = mono_ns();
		w->n_req++;
		w->outstanding++;
		pthread_cond_signal(&w->h.wake);
		rc = 0;
	}
	pthread_mutex_unlock(&w->h.lock);
	return rc;
}

static bool writer_take(struct xen_writer *w, struct writer_req *ret)
{
	bool got = false;

	pthread_mutex_lock(&w->h.lock);
	if (w->n_res) {
		*ret = w->res[w->res_head];
		w->res_head = (w->res_head + 1) % WRITER_QUEUE;
		w->n_res--;
		w->outstanding--;
		got = true;
	}
	pthread_mutex_unlock(&w->h.lock);
	return got;
}

static ssize_t writer_deferred_find(const struct xen_writer *w, fo_domid_t domid)
{
	size_t i;

	for (i = 0; i < w->n_deferred; i++)
		if (w->deferred[i].domid == domid)
			return (ssize_t)i;
	return -1;
}

/* Queue the roles that found the queue full, oldest first, while it has room. */
static void writer_flush_deferred(struct xen_writer *w)
{
	while (w->n_deferred) {
		if (writer_submit(w, w->deferred[0].domid, WRITE_ROLE, w->deferred[0].role) < 0)
			return;
		fo_debug("xen: domain %" PRIu32 ": role \"%s\" queued (it had waited for room)",
			 w->deferred[0].domid, w->deferred[0].role);
		memmove(&w->deferred[0], &w->deferred[1], --w->n_deferred * sizeof(w->deferred[0]));
	}
}

int xen_set_role(struct fo_hv *hv, fo_domid_t domid, const char *role)
{
	struct xen_writer *w = &to_xen(hv)->writer;
	ssize_t d;

	if (!domid_is_valid(domid) || !value_is_sane(role))
		return -EINVAL;
	d = writer_deferred_find(w, domid);
	if (d >= 0) {
		/* Still waiting for room: the latest role wins, in its place. */
		snprintf(w->deferred[d].role, sizeof(w->deferred[d].role), "%s", role);
		return 0;
	}
	if (writer_submit(w, domid, WRITE_ROLE, role) == 0)
		return 0;
	if (w->n_deferred == XEN_MAX_MEMBERS) {
		/* More domains than members: not one of ours. */
		fo_warn("xen: domain %" PRIu32 ": cannot write %s = \"%s\": writer queue full", domid,
			FO_HB_XS_ROLE, role);
		return -EAGAIN;
	}
	w->deferred[w->n_deferred].domid = domid;
	snprintf(w->deferred[w->n_deferred].role, sizeof(w->deferred[0].role), "%s", role);
	w->n_deferred++;
	fo_warn("xen: domain %" PRIu32 ": xenstore writer queue full (xenstored slow?): role \"%s\" "
		"waits for room", domid, role);
	return 0;
}

int xen_agent_command(struct fo_hv *hv, fo_domid_t domid, const char *cmd)
{
	struct xen_writer *w = &to_xen(hv)->writer;

	if (!domid_is_valid(domid) || !value_is_sane(cmd))
		return -EINVAL;
	/* Its role first: a command queued now would overtake it. */
	if (writer_deferred_find(w, domid) >= 0 || writer_submit(w, domid, WRITE_CONTROL, cmd) < 0) {
		fo_warn("xen: domain %" PRIu32 ": command \"%s\" refused: xenstore writer queue full "
			"(xenstored slow?)", domid, cmd);
		return -EAGAIN;
	}
	return 0;
}

void xen_dispatch_writer(struct xen_hv *x)
{
	struct xen_writer *w = &x->writer;
	struct writer_req r;

	xen_helper_clear(&w->h);
	while (writer_take(w, &r)) {
		if (r.err == 0) {
			fo_debug("xen: domain %" PRIu32 ": %s = \"%s\" written in %" PRIu64 " us (%" PRIu64
				 " us after it was asked for)", r.domid, writer_key_path(r.key), r.value,
				 r.write_ns / 1000, (r.done_ns - r.queued_ns) / 1000);
			continue;
		}
		if (r.err == -ESRCH)
			fo_info("xen: domain %" PRIu32 " is gone: %s = \"%s\" not written", r.domid,
				writer_key_path(r.key), r.value);
		else
			fo_warn("xen: domain %" PRIu32 ": cannot write %s = \"%s\": %s", r.domid,
				writer_key_path(r.key), r.value, strerror(-r.err));
		if (x->base.cb.write_failed)
			x->base.cb.write_failed(x->base.cb.ctx, r.domid, writer_key_path(r.key), r.value, r.err);
	}
	writer_flush_deferred(w);
}
