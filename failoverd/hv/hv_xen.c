/* SPDX-License-Identifier: MIT */
/*
 * hv_xen.c - the hypervisor boundary on real Xen (4.17).
 *
 *   pause / unpause / state   one preallocated domctl buffer through libxencall
 *                             (fast path), libxenctrl as the fallback
 *   affinity / destroy        libxenctrl
 *   name -> domid             libxenlight
 *   watches, role, control    libxenstore
 *   heartbeat page / channel  libxengnttab (one page, mapped read-only) and
 *                             libxenevtchn (one interdomain port per member)
 *   Xen's own log lines       a xentoollog_logger that forwards to fo_log
 *
 * libxc/libxencall report -1 and errno; everything here returns 0 or -errno,
 * converted once, where the call is made.
 *
 * Why a fast path: libxenctrl bounces every domctl through a hypercall buffer
 * it gets and releases per call. A resident daemon allocates one
 * hypercall-safe buffer at start and reuses it, so pause/unpause/getinfo on
 * the switch path are one privcmd ioctl each and allocate nothing. (Under
 * QEMU/TCG the two paths measured the same within noise -- the hypervisor's
 * own work dominates there; the point is the allocation-free switch path.)
 * If libxencall cannot be opened or the probe fails, the xc_* calls are used
 * instead, with the same semantics.
 *
 * Everything a guest writes (xenstore keys, the page) is untrusted: keys are
 * parsed strictly, key reads are rate limited per member, at most one page is
 * ever mapped per member, and the reads themselves run on a helper thread
 * (see struct xen_reader) so a guest that slows xenstored down cannot stall
 * the daemon's loop. Everything else, every callback included, runs on the
 * caller's thread inside dispatch().
 *
 * File descriptors (get_fds): the xenstore watch fd, the event-channel fd,
 * a timerfd for throttled retries and the reader's eventfd; the set is
 * fixed for the life of the handle.
 */
#include "hv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/*
 * Xen's public headers are GNU C: they #error (hvm/save.h) or emit "FIXME"
 * (foreign/x86_64.h) when __STRICT_ANSI__ is set, which -std=c11 does, even
 * though anonymous unions are plain C11. Include them as the GNU C they are;
 * nothing else in this file depends on strict mode.
 */
#ifdef __STRICT_ANSI__
#undef __STRICT_ANSI__
#endif
#include <xenctrl.h>
#include <xencall.h>
#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>
#include <xentoollog.h>
#include <libxl.h>
#include <libxl_utils.h>

#include "../core/config.h"
#include "../core/log.h"

#define XEN_MAX_MEMBERS    (FO_MAX_PAIRS * 2)
#define DOM0_ID            0u     /* the daemon runs in the control domain */

/* Grant entries 0..7 are reserved for the toolstack (console, xenstore). */
#define GREF_FIRST_GUEST   8u
#define EVTCHN_PORT_MAX    ((1u << 17) - 1) /* FIFO ABI limit */

/* Key reads per member: at most ATTACH_BURST per ATTACH_WINDOW_NS; watch
 * fires beyond that are coalesced and retried by the timerfd. */
#ifndef ATTACH_BURST
#define ATTACH_BURST       20u   /* overridable for lab builds that test the throttle */
#endif
#define ATTACH_WINDOW_NS   1000000000ull

#define READY_MAX_HEX      16     /* boot_id is 64 bits */
#define VALUE_MAX          64     /* role / command strings */
#define REASON_MAX         160

#define TOKEN_RELEASE      "fo-release"
#define TOKEN_INTRODUCE    "fo-introduce"
#define TOKEN_MEMBER       "fo-member-"

struct xen_logger {
	xentoollog_logger vtable;
	/* NULL: unlimited. Set for the handles a guest can make fail at will
	 * (grant mapping, event-channel binding) so a key storm cannot flood
	 * the journal through libxengnttab's own error lines. */
	struct fo_ratelimit *rl;
};

struct xen_member {
	bool in_use;
	fo_domid_t domid;
	char token[32];

	/* Binding in force: page != NULL <=> port_bound. */
	const volatile struct fo_hb_page *page;
	evtchn_port_t local_port;
	bool port_bound;
	uint32_t gref;
	uint32_t remote_port;
	char ready[READY_MAX_HEX + 1];

	/* Key reads: rate limit and the one read in flight. */
	uint64_t gen;         /* tells a stale read (member re-watched) from a current one */
	uint64_t window_start;
	unsigned attempts;
	bool dirty;           /* watch fired, keys not read since */
	bool read_in_flight;  /* the reader thread has our request */
	bool retry_pending;   /* throttled; the timerfd will retry */

	/* Last outcome reported through cb.agent: report changes only. */
	int last_err;
	char last_reason[REASON_MAX];
	bool reported;
};

struct agent_keys {
	char *ready, *gref, *port, *abi;
};

/*
 * The xenstore reader thread. A guest can make xenstored slow (key storms,
 * big transactions), and reading a member's four keys takes six round trips,
 * so that never happens on the daemon's loop: the loop queues a request, this
 * thread reads over its own connection and posts the keys back through an
 * eventfd. Mapping, binding and every callback stay on the loop thread; the
 * thread shares nothing but these two queues.
 */
#define READER_QUEUE (2 * XEN_MAX_MEMBERS) /* a re-watched member may briefly have two reads */

struct reader_req {
	fo_domid_t domid;
	uint64_t gen;
};

struct reader_res {
	fo_domid_t domid;
	uint64_t gen;
	int err;
	uint64_t took_ns;
	struct agent_keys keys; /* owned by whoever holds the result */
};

struct xen_reader {
	pthread_t thread;
	bool running;
	struct xs_handle *xs;   /* the thread's own connection */
	int event_fd;           /* readable when results are waiting */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* under lock: */
	bool stop;
	unsigned outstanding;   /* queued + being read + unconsumed results */
	struct reader_req req[READER_QUEUE];
	size_t n_req;
	struct reader_res res[READER_QUEUE];
	size_t n_res;
};

struct xen_hv {
	struct fo_hv base;

	struct xen_logger log_xen;    /* libxc, libxl, libxencall */
	struct xen_logger log_guest;  /* libxengnttab, libxenevtchn */
	struct fo_ratelimit guest_rl;

	xc_interface *xch;
	xencall_handle *xcall;
	struct xen_domctl *domctl;    /* hypercall-safe, allocated once; NULL = no fast path */
	libxl_ctx *ctx;
	struct xs_handle *xs;
	xenevtchn_handle *xce;
	xengnttab_handle *xgt;
	int timer_fd;
	bool timer_armed;
	bool fds_changed;
	struct xen_reader reader;
	uint64_t next_gen;

	struct xen_member members[XEN_MAX_MEMBERS];
};

static inline struct xen_hv *to_xen(struct fo_hv *hv)
{
	return (struct xen_hv *)hv;
}

/* libxc & co. return -1 and set errno; never turn that into 0 by accident. */
static inline int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool domid_is_valid(fo_domid_t domid)
{
	return domid < DOMID_FIRST_RESERVED;
}

/* ------------------------------------------------------------------ logging */

static enum fo_log_level map_xtl_level(xentoollog_level level)
{
	switch (level) {
	case XTL_CRITICAL:
	case XTL_ERROR:
		return FO_LOG_ERR;
	case XTL_WARN:
		return FO_LOG_WARNING;
	case XTL_NOTICE:
		return FO_LOG_NOTICE;
	case XTL_INFO:
		return FO_LOG_INFO;
	default: /* DEBUG, VERBOSE, DETAIL, PROGRESS */
		return FO_LOG_DEBUG;
	}
}

__attribute__((format(printf, 5, 0)))
static void xen_logger_vmessage(xentoollog_logger *logger, xentoollog_level level, int errnoval,
				const char *context, const char *format, va_list al)
{
	struct xen_logger *lg = (struct xen_logger *)logger;
	enum fo_log_level fl = map_xtl_level(level);
	char msg[512];

	if (fl > fo_log_get_level())
		return;
	if (lg->rl && !fo_ratelimit_ok(lg->rl, mono_ns()))
		return;
	vsnprintf(msg, sizeof(msg), format, al);
	if (errnoval >= 0)
		fo_log(fl, "%s: %s: %s", context ? context : "xen", msg, strerror(errnoval));
	else
		fo_log(fl, "%s: %s", context ? context : "xen", msg);
}

static void xen_logger_progress(xentoollog_logger *logger, const char *context,
				const char *doing_what, int percent, unsigned long done,
				unsigned long total)
{
	(void)logger;
	(void)done;
	(void)total;
	fo_debug("%s: %s: %d%%", context ? context : "xen", doing_what, percent);
}

static void xen_logger_destroy(xentoollog_logger *logger)
{
	(void)logger; /* embedded in struct xen_hv, freed with it */
}

static void xen_logger_init(struct xen_logger *lg, struct fo_ratelimit *rl)
{
	lg->vtable.vmessage = xen_logger_vmessage;
	lg->vtable.progress = xen_logger_progress;
	lg->vtable.destroy = xen_logger_destroy;
	lg->rl = rl;
}

/* ------------------------------------------------------- domctl fast path */

static int domctl_fast(struct xen_hv *x, uint32_t cmd, fo_domid_t domid)
{
	struct xen_domctl *d = x->domctl;

	memset(d, 0, sizeof(*d));
	d->cmd = cmd;
	d->interface_version = XEN_DOMCTL_INTERFACE_VERSION;
	d->domain = (domid_t)domid;
	if (xencall1(x->xcall, __HYPERVISOR_domctl, (uint64_t)(uintptr_t)d) < 0)
		return neg_errno();
	return 0;
}

static enum fo_dom_state state_from_flags(uint32_t flags)
{
	unsigned reason = (flags >> XEN_DOMINF_shutdownshift) & XEN_DOMINF_shutdownmask;

	if (flags & XEN_DOMINF_dying)
		return FO_DOM_DYING;
	if ((flags & XEN_DOMINF_shutdown) && reason == SHUTDOWN_crash)
		return FO_DOM_CRASHED;
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
static int get_dominfo(struct xen_hv *x, fo_domid_t domid, bool *ret_found,
		       xen_domctl_getdomaininfo_t *ret_info)
{
	xc_domaininfo_t info;
	int r;

	if (x->domctl) {
		r = domctl_fast(x, XEN_DOMCTL_getdomaininfo, domid);
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

/* ------------------------------------------------------------- dom actions */

static uint64_t xen_now_ns(struct fo_hv *hv)
{
	(void)hv;
	return mono_ns();
}

static int xen_lookup(struct fo_hv *hv, const char *name, fo_domid_t *ret_domid)
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
	*ret_domid = domid;
	return 0;
}

static int xen_get_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state)
{
	struct xen_hv *x = to_xen(hv);
	xen_domctl_getdomaininfo_t info;
	bool found;
	int r;

	if (!domid_is_valid(domid))
		return -EINVAL;
	r = get_dominfo(x, domid, &found, &info);
	if (r < 0)
		return r;
	*ret_state = found ? state_from_flags(info.flags) : FO_DOM_GONE;
	return 0;
}

static int xen_pause(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);

	/* Pausing ourselves would never return; Xen refuses it too. */
	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (x->domctl)
		return domctl_fast(x, XEN_DOMCTL_pausedomain, domid);
	return xc_domain_pause(x->xch, domid) < 0 ? neg_errno() : 0;
}

static int xen_unpause(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (x->domctl)
		return domctl_fast(x, XEN_DOMCTL_unpausedomain, domid);
	return xc_domain_unpause(x->xch, domid) < 0 ? neg_errno() : 0;
}

static int xen_set_affinity(struct fo_hv *hv, fo_domid_t domid, const int *pcpus, size_t n_pcpus)
{
	struct xen_hv *x = to_xen(hv);
	xc_cpumap_t hard = NULL, soft = NULL;
	xen_domctl_getdomaininfo_t info;
	int max_cpus, mapsize, rc;
	bool found;
	unsigned v;
	size_t i;

	if (!domid_is_valid(domid) || !pcpus || n_pcpus == 0)
		return -EINVAL;
	max_cpus = xc_get_max_cpus(x->xch);
	mapsize = xc_get_cpumap_size(x->xch);
	if (max_cpus <= 0 || mapsize <= 0) {
		rc = -EIO;
		goto out;
	}
	for (i = 0; i < n_pcpus; i++) {
		if (pcpus[i] < 0 || pcpus[i] >= max_cpus) {
			rc = -EINVAL;
			goto out;
		}
	}
	rc = get_dominfo(x, domid, &found, &info);
	if (rc < 0)
		goto out;
	if (!found) {
		rc = -ESRCH;
		goto out;
	}
	hard = xc_cpumap_alloc(x->xch);
	soft = xc_cpumap_alloc(x->xch);
	if (!hard || !soft) {
		rc = -ENOMEM;
		goto out;
	}
	for (v = 0; v <= info.max_vcpu_id; v++) {
		/* The call writes the effective map back: rebuild it each time. */
		memset(hard, 0, (size_t)mapsize);
		for (i = 0; i < n_pcpus; i++)
			hard[pcpus[i] / 8] |= (uint8_t)(1u << (pcpus[i] % 8));
		/* Only the hard map is applied (flags); soft is read-write scratch. */
		memset(soft, 0xff, (size_t)mapsize);
		if (xc_vcpu_setaffinity(x->xch, domid, (int)v, hard, soft,
					XEN_VCPUAFFINITY_HARD) < 0) {
			rc = neg_errno();
			goto out;
		}
	}
	rc = 0;
out:
	free(hard);
	free(soft);
	return rc;
}

static void member_detach(struct xen_hv *x, struct xen_member *m);
static struct xen_member *member_find(struct xen_hv *x, fo_domid_t domid);

static int xen_destroy(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m;

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	/* Our grant mapping holds a page of the domain: drop it first or the
	 * domain lingers as a dying zombie until we notice. */
	m = member_find(x, domid);
	if (m)
		member_detach(x, m);
	return xc_domain_destroy(x->xch, domid) < 0 ? neg_errno() : 0;
}

static int xen_create(struct fo_hv *hv, const char *config_path)
{
	(void)hv;
	(void)config_path;
	return -EOPNOTSUPP; /* domain re-creation comes later (libxl_domain_create_new) */
}

/* ------------------------------------------------------------ xenstore I/O */

/*
 * Write a dom0-owned key under the guest's data/ directory: owner dom0, the
 * guest may only read. Write and permissions go in one transaction so the
 * guest never sees the new value with its own (inherited) write permission.
 */
static int xs_write_dom0_owned(struct xen_hv *x, fo_domid_t domid, const char *key,
			       const char *value)
{
	struct xs_permissions perms[2] = {
		{ .id = DOM0_ID, .perms = XS_PERM_NONE },
		{ .id = domid, .perms = XS_PERM_READ },
	};
	char path[128];
	int attempt, rc = -EAGAIN;

	snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, key);
	for (attempt = 0; attempt < 8 && rc == -EAGAIN; attempt++) {
		xs_transaction_t t = xs_transaction_start(x->xs);

		if (t == XBT_NULL)
			return neg_errno();
		if (!xs_write(x->xs, t, path, value, (unsigned)strlen(value)) ||
		    !xs_set_permissions(x->xs, t, path, perms, 2)) {
			rc = neg_errno();
			xs_transaction_end(x->xs, t, true);
			return rc;
		}
		rc = xs_transaction_end(x->xs, t, false) ? 0 : neg_errno();
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

static int xen_set_role(struct fo_hv *hv, fo_domid_t domid, const char *role)
{
	if (!domid_is_valid(domid) || !value_is_sane(role))
		return -EINVAL;
	return xs_write_dom0_owned(to_xen(hv), domid, FO_HB_XS_ROLE, role);
}

static int xen_agent_command(struct fo_hv *hv, fo_domid_t domid, const char *cmd)
{
	if (!domid_is_valid(domid) || !value_is_sane(cmd))
		return -EINVAL;
	return xs_write_dom0_owned(to_xen(hv), domid, FO_HB_XS_CONTROL, cmd);
}

/* ------------------------------------------------------ member attachment */

static struct xen_member *member_find(struct xen_hv *x, fo_domid_t domid)
{
	size_t i;

	for (i = 0; i < XEN_MAX_MEMBERS; i++)
		if (x->members[i].in_use && x->members[i].domid == domid)
			return &x->members[i];
	return NULL;
}

static struct xen_member *member_by_port(struct xen_hv *x, evtchn_port_t port)
{
	size_t i;

	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		struct xen_member *m = &x->members[i];

		if (m->in_use && m->port_bound && m->local_port == port)
			return m;
	}
	return NULL;
}

static void member_detach(struct xen_hv *x, struct xen_member *m)
{
	if (m->port_bound)
		xenevtchn_unbind(x->xce, m->local_port);
	if (m->page)
		xengnttab_unmap(x->xgt, (void *)(uintptr_t)m->page, 1);
	m->page = NULL;
	m->port_bound = false;
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

/* Guest text into a log-safe, bounded form. */
static void sanitize(const char *in, char *out, size_t outlen)
{
	size_t o = 0;

	for (; in && *in && o + 5 < outlen; in++) {
		unsigned char c = (unsigned char)*in;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
	}
	if (in && *in && o + 4 <= outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}

/* Canonical unsigned decimal: digits only, no sign, no leading zero, no
 * spaces, <= max. */
static bool parse_strict_u32(const char *s, uint32_t max, uint32_t *ret)
{
	uint64_t v = 0;
	size_t n = 0;

	if (!s || !*s || (s[0] == '0' && s[1] != '\0'))
		return false;
	for (; *s; s++, n++) {
		if (*s < '0' || *s > '9' || n >= 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > max)
		return false;
	*ret = (uint32_t)v;
	return true;
}

static bool ready_is_valid(const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++, n++)
		if (n >= READY_MAX_HEX ||
		    !((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
			return false;
	return true;
}

static void agent_keys_free(struct agent_keys *k)
{
	free(k->ready);
	free(k->gref);
	free(k->port);
	free(k->abi);
	memset(k, 0, sizeof(*k));
}

/* Read the four keys as one consistent snapshot. Missing keys stay NULL. */
static int agent_keys_read(struct xs_handle *xs, fo_domid_t domid, struct agent_keys *k)
{
	static const char *const names[4] = { FO_HB_XS_READY, FO_HB_XS_GREF, FO_HB_XS_PORT,
					      FO_HB_XS_ABI };
	int attempt;

	for (attempt = 0; attempt < 4; attempt++) {
		char **slots[4] = { &k->ready, &k->gref, &k->port, &k->abi };
		xs_transaction_t t = xs_transaction_start(xs);
		char path[128];
		int i;

		if (t == XBT_NULL)
			return neg_errno();
		for (i = 0; i < 4; i++) {
			unsigned len;

			snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, names[i]);
			*slots[i] = xs_read(xs, t, path, &len);
			if (*slots[i] && strlen(*slots[i]) != len) {
				/* An embedded NUL would hide the rest of the
				 * value from the parser: refuse it visibly. */
				free(*slots[i]);
				*slots[i] = strdup("<embedded NUL>");
			}
		}
		/* Committing a read-only transaction tells us whether the
		 * four values were consistent (EAGAIN: a key changed under us). */
		if (xs_transaction_end(xs, t, false))
			return 0;
		if (errno != EAGAIN)
			return neg_errno();
		agent_keys_free(k);
	}
	return -EAGAIN;
}

/* --------------------------------------------------------- reader thread */

static void *reader_main(void *arg)
{
	struct xen_reader *rd = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&rd->lock);
	for (;;) {
		struct reader_res res = { 0 };
		uint64_t t0;

		while (!rd->stop && rd->n_req == 0)
			pthread_cond_wait(&rd->wake, &rd->lock);
		if (rd->stop)
			break;
		res.domid = rd->req[0].domid;
		res.gen = rd->req[0].gen;
		memmove(&rd->req[0], &rd->req[1], --rd->n_req * sizeof(rd->req[0]));
		pthread_mutex_unlock(&rd->lock);

		t0 = mono_ns();
		res.err = agent_keys_read(rd->xs, res.domid, &res.keys);
		res.took_ns = mono_ns() - t0;

		pthread_mutex_lock(&rd->lock);
		/* outstanding counted this result in, so there is room */
		rd->res[rd->n_res++] = res;
		if (write(rd->event_fd, &one, sizeof(one)) < 0) {
			/* cannot fail short of EAGAIN at 2^64-1 */
		}
	}
	pthread_mutex_unlock(&rd->lock);
	return NULL;
}

/* Always paired with reader_stop(), even when reader_start() never ran. */
static void reader_init(struct xen_reader *rd)
{
	rd->event_fd = -1;
	pthread_mutex_init(&rd->lock, NULL);
	pthread_cond_init(&rd->wake, NULL);
}

static int reader_start(struct xen_reader *rd)
{
	sigset_t all, old;
	int r;

	rd->xs = xs_open(0);
	if (!rd->xs)
		return neg_errno();
	rd->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rd->event_fd < 0)
		return neg_errno();
	/* The daemon takes its signals through a signalfd: they must stay
	 * blocked in every thread, whatever the caller's mask is right now. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&rd->thread, NULL, reader_main, rd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return -r;
	rd->running = true;
	return 0;
}

static void reader_stop(struct xen_reader *rd)
{
	size_t i;

	if (rd->running) {
		pthread_mutex_lock(&rd->lock);
		rd->stop = true;
		pthread_cond_signal(&rd->wake);
		pthread_mutex_unlock(&rd->lock);
		pthread_join(rd->thread, NULL);
		rd->running = false;
	}
	for (i = 0; i < rd->n_res; i++)
		agent_keys_free(&rd->res[i].keys);
	rd->n_res = 0;
	if (rd->xs)
		xs_close(rd->xs);
	if (rd->event_fd >= 0)
		close(rd->event_fd);
	pthread_cond_destroy(&rd->wake);
	pthread_mutex_destroy(&rd->lock);
}

static bool reader_request(struct xen_reader *rd, fo_domid_t domid, uint64_t gen)
{
	bool queued = false;

	pthread_mutex_lock(&rd->lock);
	if (rd->outstanding < READER_QUEUE) {
		rd->req[rd->n_req].domid = domid;
		rd->req[rd->n_req].gen = gen;
		rd->n_req++;
		rd->outstanding++;
		pthread_cond_signal(&rd->wake);
		queued = true;
	}
	pthread_mutex_unlock(&rd->lock);
	return queued;
}

/* Take every waiting result; returns how many were copied into out. */
static size_t reader_collect(struct xen_reader *rd, struct reader_res *out)
{
	uint64_t count;
	size_t n;

	if (read(rd->event_fd, &count, sizeof(count)) < 0) {
		/* EAGAIN: a previous collect already took them */
	}
	pthread_mutex_lock(&rd->lock);
	n = rd->n_res;
	memcpy(out, rd->res, n * sizeof(*out));
	rd->n_res = 0;
	rd->outstanding -= (unsigned)n;
	pthread_mutex_unlock(&rd->lock);
	return n;
}

/* ------------------------------------------------------ binding the agent */

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
	if (m->attempts >= ATTACH_BURST || !reader_request(&x->reader, m->domid, m->gen)) {
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
	char reason[REASON_MAX], val[40];
	uint32_t gref, port, abi;
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
			member_detach(x, m);
			member_report(x, m, -ENOENT, "agent withdrew " FO_HB_XS_READY);
		}
		goto out;
	}

#define REFUSE_KEY(key, value, why)                                                   \
	do {                                                                          \
		sanitize((value), val, sizeof(val));                                  \
		snprintf(reason, sizeof(reason), "bad %s \"%s\": %s", (key), val, (why)); \
		r = -EINVAL;                                                          \
		goto refuse;                                                          \
	} while (0)

	if (!ready_is_valid(k.ready))
		REFUSE_KEY(FO_HB_XS_READY, k.ready, "want 1-16 hex digits");
	if (!k.abi)
		REFUSE_KEY(FO_HB_XS_ABI, "", "missing");
	if (!parse_strict_u32(k.abi, UINT32_MAX, &abi) || abi != FO_HB_ABI_VERSION)
		REFUSE_KEY(FO_HB_XS_ABI, k.abi, "unsupported ABI version (want 1)");
	if (!k.gref)
		REFUSE_KEY(FO_HB_XS_GREF, "", "missing");
	if (!parse_strict_u32(k.gref, UINT32_MAX, &gref))
		REFUSE_KEY(FO_HB_XS_GREF, k.gref, "not a decimal grant reference");
	if (gref < GREF_FIRST_GUEST)
		REFUSE_KEY(FO_HB_XS_GREF, k.gref, "reserved grant entry (0-7)");
	if (!k.port)
		REFUSE_KEY(FO_HB_XS_PORT, "", "missing");
	if (!parse_strict_u32(k.port, EVTCHN_PORT_MAX, &port) || port == 0)
		REFUSE_KEY(FO_HB_XS_PORT, k.port, "not an event-channel port (1-131071)");
#undef REFUSE_KEY

	if (m->page && m->gref == gref && m->remote_port == port && !strcmp(m->ready, k.ready))
		goto out; /* nothing changed */

	/* One page per member, ever: drop the old binding before mapping. */
	member_detach(x, m);

	page = xengnttab_map_grant_ref(x->xgt, m->domid, gref, PROT_READ);
	if (!page) {
		r = neg_errno();
		snprintf(reason, sizeof(reason), "cannot map %s %" PRIu32 ": %s", FO_HB_XS_GREF,
			 gref, strerror(-r));
		goto refuse;
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
	m->gref = gref;
	m->remote_port = port;
	snprintf(m->ready, sizeof(m->ready), "%s", k.ready);
	m->reported = false; /* a later failure is news again */
	snprintf(reason, sizeof(reason), "attached (gref %" PRIu32 ", port %" PRIu32 ", boot %s)",
		 gref, port, m->ready);
	member_report(x, m, 0, reason);
	goto out;

refuse:
	/* What the guest publishes now is what counts: a stale binding would
	 * be listening to an agent that no longer claims it. */
	member_detach(x, m);
	member_report(x, m, r, reason);
out:
	return; /* the caller frees the keys */
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
	struct xen_member *m = member_find(x, domid);

	return m && m->gen == gen ? m : NULL;
}

static int xen_watch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m;
	char path[128];
	size_t i;

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (member_find(x, domid))
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

static void xen_unwatch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m = member_find(x, domid);
	char path[128];

	if (!m)
		return;
	snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, FO_HB_XS_READY);
	xs_unwatch(x->xs, path, m->token);
	member_detach(x, m);
	m->in_use = false;
	retry_timer_arm(x);
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
			member_detach(x, m);
			member_report(x, m, -ESRCH, st == FO_DOM_GONE ? "domain gone" : "domain dying");
		}
	}
}

/* ----------------------------------------------------------------- events */

static void dispatch_xenstore(struct xen_hv *x)
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
		release_dead_members(x);
		if (x->base.cb.domains_changed)
			x->base.cb.domains_changed(x->base.cb.ctx);
	}
	process_dirty_members(x);
}

static void dispatch_reader(struct xen_hv *x)
{
	struct reader_res res[READER_QUEUE];
	size_t i, n = reader_collect(&x->reader, res);

	for (i = 0; i < n; i++) {
		/* NULL: unwatched (or re-watched) while the read was in flight */
		struct xen_member *m = member_by_gen(x, res[i].domid, res[i].gen);

		if (m) {
			m->read_in_flight = false;
			member_apply(x, m, &res[i]);
		}
		agent_keys_free(&res[i].keys);
	}
	/* Fires that came in during the reads are asked for now. */
	process_dirty_members(x);
}

static void dispatch_retry_timer(struct xen_hv *x)
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
		m = member_by_port(x, (evtchn_port_t)port);
		if (m) {
			struct fo_hb_page copy;
			fo_domid_t domid = m->domid;

			hb_page_copy(m->page, &copy);
			if (x->base.cb.heartbeat)
				x->base.cb.heartbeat(x->base.cb.ctx, domid, &copy);
		}
		/* Unknown ports (just unbound, stale) are unmasked and dropped;
		 * an error here means the port is gone, which is fine. */
		xenevtchn_unmask(x->xce, (evtchn_port_t)port);
	}
}

static size_t xen_get_fds(struct fo_hv *hv, int *fds, size_t max)
{
	struct xen_hv *x = to_xen(hv);
	int all[4] = { xs_fileno(x->xs), xenevtchn_fd(x->xce), x->timer_fd, x->reader.event_fd };
	size_t i;

	for (i = 0; i < 4 && i < max; i++)
		fds[i] = all[i];
	return i;
}

static bool xen_fds_changed(struct fo_hv *hv)
{
	struct xen_hv *x = to_xen(hv);
	bool changed = x->fds_changed;

	x->fds_changed = false;
	return changed;
}

static void xen_dispatch(struct fo_hv *hv, int fd)
{
	struct xen_hv *x = to_xen(hv);

	if (fd == xenevtchn_fd(x->xce))
		dispatch_evtchn(x);
	else if (fd == xs_fileno(x->xs))
		dispatch_xenstore(x);
	else if (fd == x->reader.event_fd)
		dispatch_reader(x);
	else if (fd == x->timer_fd)
		dispatch_retry_timer(x);
}

/* ------------------------------------------------------------- lifecycle */

static void xen_free(struct fo_hv *hv)
{
	struct xen_hv *x = to_xen(hv);
	size_t i;

	if (!x)
		return;
	reader_stop(&x->reader);
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
	free(x);
}

static const struct fo_hv_ops xen_ops = {
	.name = "xen",
	.now_ns = xen_now_ns,
	.lookup = xen_lookup,
	.get_state = xen_get_state,
	.pause = xen_pause,
	.unpause = xen_unpause,
	.set_affinity = xen_set_affinity,
	.destroy = xen_destroy,
	.create = xen_create,
	.watch_member = xen_watch_member,
	.unwatch_member = xen_unwatch_member,
	.set_role = xen_set_role,
	.agent_command = xen_agent_command,
	.get_fds = xen_get_fds,
	.fds_changed = xen_fds_changed,
	.dispatch = xen_dispatch,
	.free = xen_free,
};

/* Set up the preallocated domctl; on any failure the xc_* path is used. */
static void fast_path_init(struct xen_hv *x)
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
	r = get_dominfo(x, DOM0_ID, &found, NULL);
	if (r < 0 || !found) {
		/* e.g. -EACCES: the hypervisor speaks another domctl version */
		fo_notice("xen: domctl fast path probe failed (%s), using libxenctrl",
			  r < 0 ? strerror(-r) : "dom0 not found");
		xencall_free_buffer(x->xcall, x->domctl);
		x->domctl = NULL;
	}
}

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
	reader_init(&x->reader);
	x->fds_changed = true;
	x->guest_rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(10000, 10);
	xen_logger_init(&x->log_xen, NULL);
	xen_logger_init(&x->log_guest, &x->guest_rl);

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
	if (x->timer_fd < 0) {
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
	rc = reader_start(&x->reader);
	if (rc < 0) {
		fo_err("xen: cannot start the xenstore reader: %s", strerror(-rc));
		goto fail;
	}
	fast_path_init(x);
	fo_info("xen: backend ready (%s pause path)", x->domctl ? "preallocated domctl" : "libxenctrl");
	*ret = &x->base;
	return 0;

fail:
	xen_free(&x->base);
	return rc;
}
