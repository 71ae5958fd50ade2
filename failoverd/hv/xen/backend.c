/* SPDX-License-Identifier: MIT */
/*
 * backend.c - the hypervisor boundary on real Xen (4.17): the ops table,
 * and creating and freeing the backend. Start reading here.
 *
 *   pause / unpause / state   one preallocated domctl buffer through libxencall
 *                             (fast path), libxenctrl as the fallback
 *   affinity                  libxenctrl
 *   cpupools                  libxenlight (create, cpu remove, move domain),
 *                             libxenctrl (a domain's pool, vCPU affinity)
 *   name -> domid             libxenlight
 *   the boot note             libxenstore (at start only)
 *   create / destroy          libxenlight + libxlutil, in the builder's helper
 *                             process, waited for by the builder thread
 *                             (see builder.c)
 *   watches                   libxenstore
 *   role, control             libxenstore, on the writer thread
 *                             (see writer.c)
 *   heartbeat page / channel  libxengnttab (one page, mapped read-only) and
 *                             libxenevtchn (one interdomain port per member)
 *   Xen's own log lines       a xentoollog_logger that forwards to fo_log
 *
 * libxc/libxencall report -1 and errno; everything here returns 0 or -errno,
 * converted once, where the call is made.
 *
 * Everything a guest writes (xenstore keys, the page) is untrusted: keys are
 * parsed strictly, key reads are rate limited per member, at most one page
 * is ever mapped per member, and the reads themselves run on a helper thread
 * (see reader.c) so a guest that slows xenstored down cannot stall the
 * daemon's loop. Everything else, every callback included, runs on the
 * caller's thread inside dispatch().
 *
 * The files (hv/xen/):
 *   backend.c        this table, fo_hv_xen_new and xen_free
 *   domctl.c         pause / unpause / state / lookup, the domctl fast path
 *   placement.c      affinity, cpupools, vCPU pinning
 *   agent.c          members: watches, attaching to the agent, lent channels
 *   dispatch.c       the fds, and heartbeats as they arrive
 *   reader.c         the xenstore reader thread (a member's agent keys)
 *   writer.c         the xenstore writer thread (roles, drill commands)
 *   builder.c        create / destroy: the builder thread, the libxl helper
 *   xlcfg.c          xl config files, for the builder
 *   threads.c        what the helper threads share
 *   xtl.c            Xen's log lines into ours
 *   xen_state.c      the state relay (application state handover)
 *   xen_internal.h   struct xen_hv and what these files share
 */
#include "hv/xen/xen_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

static const char *xen_switch_path(struct fo_hv *hv)
{
	(void)hv;
	return "xenctrl";
}

static void xen_state_pair(struct fo_hv *hv, const char *pair, fo_domid_t active, fo_domid_t standby, bool serving)
{
	xen_state_relay_pair(to_xen(hv)->state_relay, pair, active, standby, serving);
}

static void xen_state_stream(struct fo_hv *hv, const struct fo_hv_state_stream *hooks, void *ctx)
{
	xen_state_relay_set_stream(to_xen(hv)->state_relay, hooks, ctx);
}

static bool xen_state_info(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_state_info *ret)
{
	return xen_state_relay_info(to_xen(hv)->state_relay, domid, ret);
}

/* The boot note (hv.h): dom0's own xenstore node, which xenstored keeps
 * until the host reboots and no guest may read or write. */
#define BOOT_NOTE_PATH "/tool/failoverd/verdict-file"

static int xen_boot_note_read(struct fo_hv *hv, char *buf, size_t len)
{
	unsigned n;
	char *v = xs_read(to_xen(hv)->xs, XBT_NULL, BOOT_NOTE_PATH, &n);

	if (!v)
		return neg_errno();
	snprintf(buf, len, "%.*s", (int)n, v);
	free(v);
	return 0;
}

static int xen_boot_note_write(struct fo_hv *hv, const char *text)
{
	struct xs_handle *xs = to_xen(hv)->xs;
	struct xs_permissions dom0_only = { .id = 0, .perms = XS_PERM_NONE };

	if (!xs_write(xs, XBT_NULL, BOOT_NOTE_PATH, text, (unsigned)strlen(text)) ||
	    !xs_set_permissions(xs, XBT_NULL, BOOT_NOTE_PATH, &dom0_only, 1))
		return neg_errno();
	return 0;
}

static int xen_vif_mac(struct fo_hv *hv, fo_domid_t domid, unsigned device, uint8_t ret_mac[6])
{
	char path[96];
	unsigned n, m[6];
	char *v;
	int ok;

	snprintf(path, sizeof(path), "/local/domain/0/backend/vif/%u/%u/mac", (unsigned)domid, device);
	v = xs_read(to_xen(hv)->xs, XBT_NULL, path, &n);
	if (!v)
		return errno == ENOENT ? -ENOENT : neg_errno();
	ok = n == 17 && sscanf(v, "%2x:%2x:%2x:%2x:%2x:%2x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) == 6;
	free(v);
	if (!ok)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		ret_mac[i] = (uint8_t)m[i];
	return 0;
}

static void xen_free(struct fo_hv *hv)
{
	struct xen_hv *x = to_xen(hv);
	size_t i;

	if (!x)
		return;
	/* Waits for a running job (a create takes seconds); queued destroys
	 * still run, queued creates are dropped. */
	xen_builder_stop(&x->builder);
	xen_reader_stop(&x->reader);
	xen_state_relay_free(x->state_relay);
	x->state_relay = NULL;
	xen_writer_stop(&x->writer);
	for (i = 0; i < XEN_MAX_MEMBERS; i++)
		if (x->members[i].in_use)
			xen_unwatch_member(hv, x->members[i].domid);
	if (x->xs) {
		xs_unwatch(x->xs, "@releaseDomain", TOKEN_RELEASE);
		xs_unwatch(x->xs, "@introduceDomain", TOKEN_INTRODUCE);
		xs_close(x->xs);
	}
	if (x->ctx)
		libxl_ctx_free(x->ctx);
	if (x->domctl)
		xencall_free_buffer(x->xcall, x->domctl);
	if (x->xcall)
		xencall_close(x->xcall);
	if (x->xce)
		xenevtchn_close(x->xce);
	if (x->xgt)
		xengnttab_close(x->xgt);
	if (x->xch)
		xc_interface_close(x->xch);
	if (x->timer_fd >= 0)
		close(x->timer_fd);
	if (x->poll_fd >= 0)
		close(x->poll_fd);
	free(x);
}

/* What the rest of failoverd calls (hv/hv.h), and where each lives
 * (no file named: here). */
static const struct fo_hv_ops xen_ops = {
	.name = "xen",
	.now_ns = xen_now_ns,			/* domctl.c */
	.lookup = xen_lookup,			/* domctl.c */
	.get_state = xen_get_state,		/* domctl.c */
	.get_handle = xen_get_handle,		/* domctl.c */
	.pause = xen_pause,			/* domctl.c */
	.unpause = xen_unpause,			/* domctl.c */
	.set_affinity = xen_set_affinity,	/* placement.c */
	.destroy = xen_destroy,			/* builder.c */
	.switch_path = xen_switch_path,
	.create = xen_create,			/* builder.c */
	.watch_member = xen_watch_member,	/* agent.c */
	.unwatch_member = xen_unwatch_member,	/* agent.c */
	.set_role = xen_set_role,		/* writer.c */
	.agent_command = xen_agent_command,	/* writer.c */
	.get_fds = xen_get_fds,			/* dispatch.c */
	.fds_changed = xen_fds_changed,		/* dispatch.c */
	.fd_is_rt = xen_fd_is_rt,		/* dispatch.c */
	.dispatch = xen_dispatch,		/* dispatch.c */
	.free = xen_free,
	.lend_channel = xen_lend_channel,	/* agent.c */
	.reclaim_channel = xen_reclaim_channel,	/* agent.c */
	.cpupool_ensure = xen_cpupool_ensure,	/* placement.c */
	.cpupool_get = xen_cpupool_get,		/* placement.c */
	.cpupool_move = xen_cpupool_move,	/* placement.c */
	.get_placement = xen_get_placement,	/* placement.c */
	.pin_vcpu = xen_pin_vcpu,		/* placement.c */
	.state_pair = xen_state_pair,
	.state_info = xen_state_info,
	.state_stream = xen_state_stream,
	.heartbeat_look = xen_heartbeat_look,	/* dispatch.c */
	.agent_page = xen_agent_page,		/* fowatch.c */
	.boot_note_read = xen_boot_note_read,
	.boot_note_write = xen_boot_note_write,
	.vif_mac = xen_vif_mac,
};

int fo_hv_xen_new(const struct fo_hv_callbacks *cb, struct fo_hv **ret)
{
	struct xen_hv *x;
	int rc, fd;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->base.ops = &xen_ops;
	if (cb)
		x->base.cb = *cb;
	x->timer_fd = -1;
	x->poll_fd = -1;
	xen_reader_init(&x->reader);
	xen_writer_init(&x->writer);
	xen_builder_init(&x->builder);
	x->fds_changed = true;
	x->guest_rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(10000, 10);
	x->flood_rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(60000, 3);
	{
		const char *hold = getenv("FAILOVERD_TEST_HOLD_AFTER_PAUSE_US");
		if (hold && *hold) {
			x->test_hold_after_pause_ns = strtoull(hold, NULL, 10) * 1000ull;
			fo_warn("xen: TEST ONLY: every pause is held %s us before it returns "
				"(FAILOVERD_TEST_HOLD_AFTER_PAUSE_US)", hold);
		}
	}
	xen_logger_init(&x->log_xen, NULL);
	xen_logger_init(&x->log_guest, &x->guest_rl);

	/* Before anything else: a fork of a process with no thread, no
	 * handle and no locked memory yet (see builder.c). */
	rc = xen_builder_fork(&x->builder);
	if (rc < 0) {
		fo_err("xen: cannot start the libxl helper process: %s", strerror(-rc));
		goto fail;
	}
	x->xch = xc_interface_open(&x->log_xen.vtable, &x->log_xen.vtable, 0);
	if (!x->xch) {
		rc = neg_errno();
		fo_err("xen: cannot open libxenctrl (is this dom0, is privcmd loaded?): %s",
		       strerror(-rc));
		goto fail;
	}
	rc = libxl_ctx_alloc(&x->ctx, LIBXL_VERSION, 0, &x->log_xen.vtable);
	if (rc) {
		x->ctx = NULL;
		fo_err("xen: cannot create a libxl context (error %d)", rc);
		rc = -EIO;
		goto fail;
	}
	x->xs = xs_open(0);
	if (!x->xs) {
		rc = neg_errno();
		fo_err("xen: cannot connect to xenstore: %s", strerror(-rc));
		goto fail;
	}
	x->xce = xenevtchn_open(&x->log_guest.vtable, 0);
	if (!x->xce) {
		rc = neg_errno();
		fo_err("xen: cannot open event channels (xen-evtchn loaded?): %s", strerror(-rc));
		goto fail;
	}
	/* xenevtchn_pending blocks on an empty blocking fd (see xenevtchn.h);
	 * we drain until EAGAIN instead. */
	fd = xenevtchn_fd(x->xce);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		rc = neg_errno();
		fo_err("xen: cannot make the event-channel fd non-blocking: %s", strerror(-rc));
		goto fail;
	}
	x->xgt = xengnttab_open(&x->log_guest.vtable, 0);
	if (!x->xgt) {
		rc = neg_errno();
		fo_err("xen: cannot open grant tables (xen-gntdev loaded?): %s", strerror(-rc));
		goto fail;
	}
	x->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	x->poll_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (x->timer_fd < 0 || x->poll_fd < 0) {
		rc = neg_errno();
		fo_err("xen: timerfd: %s", strerror(-rc));
		goto fail;
	}
	if (!xs_watch(x->xs, "@releaseDomain", TOKEN_RELEASE) ||
	    !xs_watch(x->xs, "@introduceDomain", TOKEN_INTRODUCE)) {
		rc = neg_errno();
		fo_err("xen: cannot watch domain introduction/release: %s", strerror(-rc));
		goto fail;
	}
	rc = xen_reader_start(&x->reader);
	if (rc < 0) {
		fo_err("xen: cannot start the xenstore reader: %s", strerror(-rc));
		goto fail;
	}
	rc = xen_writer_start(&x->writer);
	if (rc < 0) {
		fo_err("xen: cannot start the xenstore writer: %s", strerror(-rc));
		goto fail;
	}
	/* State handover is an addition: without it failover still works. */
	rc = xen_state_relay_new(xen_start_helper_thread, &x->state_relay);
	if (rc < 0)
		fo_warn("xen: no state handover (cannot start the state relay: %s)", strerror(-rc));
	rc = xen_builder_start(&x->builder);
	if (rc < 0) {
		fo_err("xen: cannot start the domain builder thread: %s", strerror(-rc));
		goto fail;
	}
	xen_fast_path_init(x);
	fo_info("xen: backend ready (%s pause path)", x->domctl ? "preallocated domctl" : "libxenctrl");
	*ret = &x->base;
	return 0;

fail:
	xen_free(&x->base);
	return rc;
}
