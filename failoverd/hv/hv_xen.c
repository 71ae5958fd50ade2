/* SPDX-License-Identifier: MIT */
/*
 * hv_xen.c - the hypervisor boundary on real Xen (4.17).
 *
 *   pause / unpause / state   one preallocated domctl buffer through libxencall
 *                             (fast path), libxenctrl as the fallback
 *   affinity                  libxenctrl
 *   cpupools                  libxenlight (create, cpu remove, move domain),
 *                             libxenctrl (a domain's pool, vCPU affinity)
 *   name -> domid             libxenlight
 *   create / destroy          libxenlight + libxlutil, in the builder's helper
 *                             process, waited for by the builder thread
 *                             (see struct xen_builder)
 *   watches                   libxenstore
 *   role, control             libxenstore, on the writer thread
 *                             (see struct xen_writer)
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
 * a timerfd for throttled retries, the reader's and the builder's eventfds,
 * a timerfd that reads lent members' pages, the writer's eventfd; the set
 * is fixed for the life of the handle.
 *
 * Lent channels (lend_channel/reclaim_channel, for hv_kmod.c): a member's
 * heartbeat port can have only one binding on dom0's side, and when
 * kmod-switch ARMs a pair the module binds the active's port in the kernel.
 * So before ARM we unbind ours and keep the page mapped; with no
 * notifications reaching us, the page is copied every poll_ms from a timerfd
 * and handed to cb.heartbeat exactly as a notification would, so the daemon
 * still sees sequence progress and application health. After DISARM (or the
 * module's switch, which unbinds too) we bind the port again. A lent member
 * whose keys are re-read maps its page but does not bind.
 *
 * Helper threads (reader, writer, builder) run SCHED_OTHER, never the loop's
 * SCHED_FIFO: their work takes milliseconds to seconds and must not starve
 * dom0, or the loop when they share its CPU.
 */
#include "hv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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
#include <libxlutil.h>

#include "../core/config.h"
#include "../core/log.h"
#include "agent_keys.h"
#include "proc_helper.h"
#include "hv/xen/xen_state.h"

#define XEN_MAX_MEMBERS    (FO_MAX_PAIRS * 2)
#define DOM0_ID            0u     /* the daemon runs in the control domain */


/* Key reads per member: at most ATTACH_BURST per ATTACH_WINDOW_NS; watch
 * fires beyond that are coalesced and retried by the timerfd. */
#ifndef ATTACH_BURST
#define ATTACH_BURST       20u   /* overridable for lab builds that test the throttle */
#endif
#define ATTACH_WINDOW_NS   1000000000ull

#define READY_MAX_HEX      FO_AGENT_READY_MAX_HEX
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
	/* Set only on the builder's logger, by the builder thread, while a job
	 * runs: the first error line is kept for the job's reason. libxl's
	 * first complaint names the cause ("xc_dom_kernel_file failed: No
	 * such file"); the lines after it only say what gave up. */
	char *capture;
	size_t capture_len;
};

struct xen_member {
	bool in_use;
	fo_domid_t domid;
	char token[32];

	/* Binding in force: page != NULL <=> (port_bound || lent). */
	const volatile struct fo_hb_page *page;
	evtchn_port_t local_port;
	bool port_bound;
	bool lent;            /* the port is the kernel module's: poll the page instead */
	uint32_t lent_port;   /* the guest port the module holds */
	uint32_t poll_ms;     /* while lent */
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

/* What the three helper threads (reader, writer, builder) share: the
 * thread, the lock and condition its queues live under, the stop flag, and
 * the eventfd that tells the loop results are waiting. */
struct xen_helper {
	pthread_t thread;
	bool running;
	int event_fd;           /* readable when results are waiting */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;              /* under lock */
};

struct xen_reader {
	struct xen_helper h;
	struct xs_handle *xs;   /* the thread's own connection */
	/* under h.lock: */
	unsigned outstanding;   /* queued + being read + unconsumed results */
	struct reader_req req[READER_QUEUE];
	size_t n_req;
	struct reader_res res[READER_QUEUE];
	size_t n_res;
};

/*
 * The xenstore writer thread. Publishing a role or a drill command is a
 * transaction (write + permissions, see xs_write_dom0_owned): about 30 ms
 * under emulation, and as long as xenstored likes when a guest keeps it
 * busy. On the loop that was time in which no other pair's heartbeat loss
 * or deadline could be seen, and the reply to a switchover waited for it.
 * So the loop queues the write here and returns; this thread writes over
 * its own connection and posts every outcome back through an eventfd,
 * where the loop logs it and reports a failure (cb.write_failed).
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
#define WRITER_QUEUE (2 * XEN_MAX_MEMBERS) /* per member: a role and a drill command */

enum writer_key { WRITE_ROLE, WRITE_CONTROL };

struct writer_req {
	fo_domid_t domid;
	enum writer_key key;
	char value[VALUE_MAX + 1];
	uint64_t queued_ns;
	/* results: */
	int err;
	uint64_t write_ns;        /* the transaction itself */
	uint64_t done_ns;
};

struct xen_writer {
	struct xen_helper h;
	struct xs_handle *xs;     /* the thread's own connection */
	/* under h.lock: */
	unsigned outstanding;     /* queued + being written + unconsumed results */
	struct writer_req req[WRITER_QUEUE]; /* ring */
	size_t req_head, n_req;
	struct writer_req res[WRITER_QUEUE]; /* ring */
	size_t res_head, n_res;
	/* loop thread only: roles that found the queue full */
	struct {
		fo_domid_t domid;
		char role[VALUE_MAX + 1];
	} deferred[XEN_MAX_MEMBERS];
	size_t n_deferred;
};

/*
 * The builder: everything that goes through libxl's domain lifecycle.
 * Creating a domain (parse the xl config, build, unpause) takes seconds;
 * libxl's destroy tears down backends, removes the domain's xenstore
 * entries and forks a child for the final hypercall (libxl__ev_child_fork
 * in libxl_domain.c, for every domain, devices or not). Neither may run on
 * the daemon's loop, and the fork must not happen in the daemon at all: a
 * fork of a memory-locked process with a SCHED_FIFO thread copies its page
 * tables under the mm lock the loop's faults need, and makes the loop's
 * next write to each private page a copy-on-write fault.
 *
 * So libxl's lifecycle calls run in a helper process (proc_helper.h),
 * forked first thing in fo_hv_xen_new, before any thread, mlockall or
 * SCHED_FIFO, with its own libxl context and logger. It is single
 * threaded and owns SIGCHLD for libxl (libxl's default child mode: no
 * children but libxl's, no SIGCHLD handler of its own: true there). The
 * builder thread (SCHED_OTHER) takes jobs from the loop's queue, sends each
 * to the helper and waits for its reply; the loop gets the outcome back
 * through an eventfd, and callbacks stay on the loop thread. If the helper
 * is gone (killed), it is not started again (that would be a fork of the
 * real-time process): a destroy falls back to the hypercall alone (no
 * fork; libxl's xenstore entries stay behind) and a create fails, saying
 * so, until failoverd is restarted.
 *
 * One helper, jobs in order: a destroy queued before a create of the same
 * name has finished (the name is gone from xenstore) when the create starts,
 * which libxl requires (names are unique).
 *
 * What is not supported: devices. disk= and vif= need hotplug scripts
 * (child processes) or a qdisk backend (a QEMU process) per domain; the
 * lab's and the product's members boot from kernel + ramdisk and talk over
 * the heartbeat page. Such configs are refused with a reason naming the key.
 */
#define BUILDER_QUEUE (2 * XEN_MAX_MEMBERS) /* per member: a destroy, then a create */
#define JOB_REASON_MAX 256
#define JOB_CAPTURE_MAX 120 /* libxl's first error line, within a reason */

enum builder_job_kind { JOB_CREATE, JOB_DESTROY };

struct builder_job {
	enum builder_job_kind kind;
	fo_domid_t domid;                 /* destroy: the domain; create: the new one */
	char config_path[FO_PATH_MAX];    /* create */
	char name[FO_DOMNAME_MAX + 1];    /* create: from the config file */
	int err;
	char reason[JOB_REASON_MAX];
	uint64_t took_ns;
};

struct xen_builder {
	struct xen_helper h;
	struct fo_proc_helper proc; /* where libxl runs; see above */
	libxl_ctx *ctx;           /* the helper process's own (NULL in the daemon) */
	xc_interface *xch;        /* for the destroy fallback (each process its own) */
	struct xen_logger log;
	char captured[JOB_CAPTURE_MAX];
	/* under h.lock: */
	unsigned outstanding;     /* queued + running + unconsumed results */
	struct builder_job req[BUILDER_QUEUE]; /* ring */
	size_t req_head, n_req;
	struct builder_job res[BUILDER_QUEUE]; /* ring */
	size_t res_head, n_res;
};

/* Domains we destroyed whose libxl teardown is still queued or running:
 * paused, never to run again, reported as DYING and hidden from lookups
 * (their xenstore name is removed only by the teardown). */
#define DOOMED_MAX BUILDER_QUEUE

struct xen_hv {
	struct fo_hv base;

	/* Test-only fault injection (FAILOVERD_TEST_HOLD_AFTER_PAUSE_US): a
	 * pause that takes this long to return, so a lab scenario can kill the
	 * daemon between "active paused" and "standby unpaused". 0 in use. */
	uint64_t test_hold_after_pause_ns;

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
	int poll_fd;                  /* lent members' pages (timerfd) */
	uint64_t poll_interval_ns;    /* what poll_fd is set to; 0 = disarmed */
	bool fds_changed;
	struct xen_reader reader;
	struct xen_writer writer;
	struct xen_builder builder;
	struct xen_state_relay *state_relay; /* NULL: no state handover (xen_state.c) */
	fo_domid_t doomed[DOOMED_MAX];
	size_t n_doomed;
	uint64_t next_gen;

	struct xen_member members[XEN_MAX_MEMBERS];

	/* cpupool id -> name, so the periodic placement check reads a
	 * domain's pool from getdomaininfo alone (no xenstore read). */
	struct {
		uint32_t id;
		char name[FO_HV_POOL_NAME_MAX + 1];
	} pool_names[16];
	size_t n_pool_names;
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

/*
 * libxl puts its source location and the domain in front of every message
 * ("libxl_domain.c:81:libxl__domain_rename: Domain 3:Domain with name ...");
 * a reason shown to an operator wants only what follows.
 */
static const char *skip_libxl_prefix(const char *msg)
{
	const char *p = msg;

	p += strcspn(p, " :");
	if (p - msg > 2 && !strncmp(p - 2, ".c", 2) && *p == ':') {
		const char *q = p + 1 + strspn(p + 1, "0123456789");

		if (q > p + 1 && *q == ':') {
			q += 1 + strcspn(q + 1, " :");
			if (q[0] == ':' && q[1] == ' ')
				msg = q + 2;
		}
	}
	if (!strncmp(msg, "Domain ", 7)) {
		p = msg + 7 + strspn(msg + 7, "0123456789");
		if (p > msg + 7 && *p == ':')
			msg = p + 1;
	}
	return msg;
}

__attribute__((format(printf, 5, 0)))
static void xen_logger_vmessage(xentoollog_logger *logger, xentoollog_level level, int errnoval,
				const char *context, const char *format, va_list al)
{
	struct xen_logger *lg = (struct xen_logger *)logger;
	enum fo_log_level fl = map_xtl_level(level);
	char msg[512];

	bool capture = lg->capture && !lg->capture[0] && level >= XTL_ERROR;

	if (fl > fo_log_get_level() && !capture)
		return;
	if (lg->rl && !fo_ratelimit_ok(lg->rl, mono_ns()))
		return;
	vsnprintf(msg, sizeof(msg), format, al);
	if (capture) {
		const char *what = skip_libxl_prefix(msg);

		if (errnoval >= 0)
			snprintf(lg->capture, lg->capture_len, "%s: %s", what, strerror(errnoval));
		else
			snprintf(lg->capture, lg->capture_len, "%s", what);
	}
	if (fl > fo_log_get_level())
		return;
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
	lg->capture = NULL;
	lg->capture_len = 0;
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

static bool doomed_has(const struct xen_hv *x, fo_domid_t domid)
{
	size_t i;

	for (i = 0; i < x->n_doomed; i++)
		if (x->doomed[i] == domid)
			return true;
	return false;
}

static bool doomed_add(struct xen_hv *x, fo_domid_t domid)
{
	if (doomed_has(x, domid))
		return true;
	if (x->n_doomed == DOOMED_MAX)
		return false;
	x->doomed[x->n_doomed++] = domid;
	return true;
}

static void doomed_remove(struct xen_hv *x, fo_domid_t domid)
{
	size_t i;

	for (i = 0; i < x->n_doomed; i++)
		if (x->doomed[i] == domid) {
			x->doomed[i] = x->doomed[--x->n_doomed];
			return;
		}
}

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
	/* Still named in xenstore until its teardown runs, but it is gone for
	 * the daemon: a rebuild must find the new domain, never this one. */
	if (doomed_has(x, domid))
		return -ESRCH;
	*ret_domid = domid;
	return 0;
}

/* The domain's info, if it exists: -EINVAL for a reserved domid. */
static int dominfo_of(struct xen_hv *x, fo_domid_t domid, bool *found, xen_domctl_getdomaininfo_t *info)
{
	if (!domid_is_valid(domid))
		return -EINVAL;
	return get_dominfo(x, domid, found, info);
}

static int xen_get_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state)
{
	struct xen_hv *x = to_xen(hv);
	xen_domctl_getdomaininfo_t info;
	bool found;
	int r = dominfo_of(x, domid, &found, &info);

	if (r < 0)
		return r;
	if (!found)
		*ret_state = FO_DOM_GONE;
	else if (doomed_has(x, domid))
		*ret_state = FO_DOM_DYING; /* paused, and destroyed as soon as the builder gets to it */
	else
		*ret_state = state_from_flags(info.flags);
	return 0;
}

static int xen_get_handle(struct fo_hv *hv, fo_domid_t domid, uint8_t ret[16])
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

static int xen_pause(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);

	/* Pausing ourselves would never return; Xen refuses it too. */
	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (doomed_has(x, domid))
		return 0; /* paused by xen_destroy, and it stays so */
	int r;

	if (x->domctl)
		r = domctl_fast(x, XEN_DOMCTL_pausedomain, domid);
	else
		r = xc_domain_pause(x->xch, domid) < 0 ? neg_errno() : 0;
	if (r == 0 && x->test_hold_after_pause_ns) {
		/* Spin, like a slow hypercall would: no syscall, no sleep. */
		uint64_t until = xen_now_ns(hv) + x->test_hold_after_pause_ns;
		while (xen_now_ns(hv) < until)
			;
	}
	return r;
}

static int xen_unpause(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (doomed_has(x, domid))
		return -ESRCH; /* destroyed as far as anyone is concerned */
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

/* ------------------------------------------------------------ xenstore I/O */

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

/* ------------------------------------------------- helper threads' eventfd */

/* Helper thread: results are waiting (the loop's fd becomes readable). */
static void helper_post(struct xen_helper *h)
{
	uint64_t one = 1;

	if (write(h->event_fd, &one, sizeof(one)) < 0) {
		/* cannot fail short of EAGAIN at 2^64-1 */
	}
}

/* Loop: the fd is quiet again; the results themselves are taken under the
 * lock, so clearing before taking never loses one. */
static void helper_clear(struct xen_helper *h)
{
	uint64_t count;

	if (read(h->event_fd, &count, sizeof(count)) < 0) {
		/* EAGAIN: a previous dispatch already took them */
	}
}

/* --------------------------------------------------------- reader thread */

static void *reader_main(void *arg)
{
	struct xen_reader *rd = arg;

	pthread_mutex_lock(&rd->h.lock);
	for (;;) {
		struct reader_res res = { 0 };
		uint64_t t0;

		while (!rd->h.stop && rd->n_req == 0)
			pthread_cond_wait(&rd->h.wake, &rd->h.lock);
		if (rd->h.stop)
			break;
		res.domid = rd->req[0].domid;
		res.gen = rd->req[0].gen;
		memmove(&rd->req[0], &rd->req[1], --rd->n_req * sizeof(rd->req[0]));
		pthread_mutex_unlock(&rd->h.lock);

		t0 = mono_ns();
		res.err = agent_keys_read(rd->xs, res.domid, &res.keys);
		res.took_ns = mono_ns() - t0;

		pthread_mutex_lock(&rd->h.lock);
		/* outstanding counted this result in, so there is room */
		rd->res[rd->n_res++] = res;
		helper_post(&rd->h);
	}
	pthread_mutex_unlock(&rd->h.lock);
	return NULL;
}

/*
 * Start a helper thread at SCHED_OTHER whatever the caller runs at (the
 * loop is SCHED_FIFO once real-time setup ran, and threads inherit that),
 * with every signal blocked but `unblocked_signo` (0: none): the daemon
 * takes its signals through a signalfd, so they must stay blocked in every
 * thread, whatever the caller's mask is right now.
 */
static int start_helper_thread(pthread_t *thread, void *(*fn)(void *), void *arg, int unblocked_signo)
{
	struct sched_param sp = { .sched_priority = 0 };
	pthread_attr_t attr;
	sigset_t mask, old;
	int r;

	r = pthread_attr_init(&attr);
	if (r)
		return -r;
	r = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	if (!r)
		r = pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	if (!r)
		r = pthread_attr_setschedparam(&attr, &sp);
	if (r)
		goto out;
	sigfillset(&mask);
	if (unblocked_signo)
		sigdelset(&mask, unblocked_signo);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	r = pthread_create(thread, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
	pthread_attr_destroy(&attr);
	return -r;
}

/* The loop (SCHED_FIFO) takes every helper's lock (to queue work and
 * collect results), so it is priority-inheriting: while the helper holds
 * it, the helper runs at the loop's priority. Always paired with
 * helper_destroy(), even when helper_start() never ran. */
static void helper_init(struct xen_helper *h)
{
	pthread_mutexattr_t ma;

	h->event_fd = -1;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&h->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&h->wake, NULL);
}

static int helper_start(struct xen_helper *h, void *(*fn)(void *), void *arg, int unblocked_signo)
{
	int r;

	h->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->event_fd < 0)
		return neg_errno();
	r = start_helper_thread(&h->thread, fn, arg, unblocked_signo);
	if (r < 0)
		return r;
	h->running = true;
	return 0;
}

/* Tell the thread to stop and wait for it (it finishes what it is doing). */
static void helper_join(struct xen_helper *h)
{
	if (!h->running)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	h->running = false;
}

static void helper_destroy(struct xen_helper *h)
{
	if (h->event_fd >= 0)
		close(h->event_fd);
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
}

/* Always paired with reader_stop(), even when reader_start() never ran. */
static void reader_init(struct xen_reader *rd)
{
	helper_init(&rd->h);
}

static int reader_start(struct xen_reader *rd)
{
	rd->xs = xs_open(0);
	if (!rd->xs)
		return neg_errno();
	return helper_start(&rd->h, reader_main, rd, 0);
}

static void reader_stop(struct xen_reader *rd)
{
	size_t i;

	helper_join(&rd->h);
	for (i = 0; i < rd->n_res; i++)
		agent_keys_free(&rd->res[i].keys);
	rd->n_res = 0;
	if (rd->xs)
		xs_close(rd->xs);
	helper_destroy(&rd->h);
}

static bool reader_request(struct xen_reader *rd, fo_domid_t domid, uint64_t gen)
{
	bool queued = false;

	pthread_mutex_lock(&rd->h.lock);
	if (rd->outstanding < READER_QUEUE) {
		rd->req[rd->n_req].domid = domid;
		rd->req[rd->n_req].gen = gen;
		rd->n_req++;
		rd->outstanding++;
		pthread_cond_signal(&rd->h.wake);
		queued = true;
	}
	pthread_mutex_unlock(&rd->h.lock);
	return queued;
}

/* Take every waiting result; returns how many were copied into out. */
static size_t reader_collect(struct xen_reader *rd, struct reader_res *out)
{
	size_t n;

	helper_clear(&rd->h);
	pthread_mutex_lock(&rd->h.lock);
	n = rd->n_res;
	memcpy(out, rd->res, n * sizeof(*out));
	rd->n_res = 0;
	rd->outstanding -= (unsigned)n;
	pthread_mutex_unlock(&rd->h.lock);
	return n;
}

/* --------------------------------------------------------- writer thread */

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
		helper_post(&w->h);
		pthread_mutex_lock(&w->h.lock);
	}
	pthread_mutex_unlock(&w->h.lock);
	return NULL;
}

/* Always paired with writer_stop(), even when writer_start() never ran. */
static void writer_init(struct xen_writer *w)
{
	helper_init(&w->h);
}

static int writer_start(struct xen_writer *w)
{
	w->xs = xs_open(0);
	if (!w->xs)
		return neg_errno();
	return helper_start(&w->h, writer_main, w, 0);
}

/* Writes already queued are still written (a role published just before
 * SIGTERM must land); their results are dropped with the handle. Roles
 * still waiting for room are lost, and said so. */
static void writer_stop(struct xen_writer *w)
{
	size_t i;

	helper_join(&w->h);
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
	helper_destroy(&w->h);
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

static int xen_set_role(struct fo_hv *hv, fo_domid_t domid, const char *role)
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

static int xen_agent_command(struct fo_hv *hv, fo_domid_t domid, const char *cmd)
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

static void dispatch_writer(struct xen_hv *x)
{
	struct xen_writer *w = &x->writer;
	struct writer_req r;

	helper_clear(&w->h);
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

/* ------------------------------------------------------- xl config files */

/*
 * What failoverd's rebuild reads from an xl config file: the subset that
 * builds a PV (or PVH) guest booted from kernel + ramdisk. Anything else is
 * refused with the key's name. xl itself ignores a misspelt key ("memroy")
 * and builds with defaults; a standby that silently differs from its
 * active is a fault found only at the next failover.
 */
static const struct {
	const char *key;
	const char *refusal; /* NULL: supported */
} xl_keys[] = {
	{ "name", NULL },
	{ "type", NULL },
	{ "kernel", NULL },
	{ "ramdisk", NULL },
	{ "extra", NULL },
	{ "cmdline", NULL },
	{ "memory", NULL },
	{ "maxmem", NULL },
	{ "vcpus", NULL },
	{ "on_poweroff", NULL },
	{ "on_reboot", NULL },
	{ "on_crash", NULL },
	{ "on_watchdog", NULL },
	{ "on_soft_reset", NULL },
	{ "disk", "not supported by failoverd's rebuild (needs block hotplug scripts or a qdisk "
		  "backend); boot the member from kernel= and ramdisk=" },
	{ "vif", "not supported by failoverd's rebuild (needs network hotplug scripts)" },
	{ "bootloader", "not supported by failoverd's rebuild (runs pygrub); use kernel= and ramdisk=" },
	{ "builder", "not supported by failoverd's rebuild; use type=\"pv\" or type=\"pvh\"" },
};
#define XL_KEYS_COUNT (sizeof(xl_keys) / sizeof(xl_keys[0]))
#define XL_KEY_MAX    48
#define XL_CONFIG_MAX (64 * 1024)
#define XL_MEMORY_MAX (1L << 22)  /* MiB: 4 TiB */
#define XL_VCPUS_MAX  128

/*
 * xl's names for what happens when the guest shuts down. libxl records the
 * choice with the domain (`xl list -l` shows it), but acting on it is the
 * job of xl's per-domain monitor process, which failoverd does not run: a
 * member that shuts down or crashes stays as it is (like "preserve") and
 * the pair treats it as failed. "preserve" for on_crash says so honestly.
 */
static const char *const xl_action_names[] = { "destroy",          "restart",          "rename-restart",
					       "preserve",         "coredump-destroy", "coredump-restart",
					       "soft-reset",       NULL };
static const libxl_action_on_shutdown xl_action_values[] = {
	LIBXL_ACTION_ON_SHUTDOWN_DESTROY,          LIBXL_ACTION_ON_SHUTDOWN_RESTART,
	LIBXL_ACTION_ON_SHUTDOWN_RESTART_RENAME,   LIBXL_ACTION_ON_SHUTDOWN_PRESERVE,
	LIBXL_ACTION_ON_SHUTDOWN_COREDUMP_DESTROY, LIBXL_ACTION_ON_SHUTDOWN_COREDUMP_RESTART,
	LIBXL_ACTION_ON_SHUTDOWN_SOFT_RESET,
};

/*
 * The next setting's name in xl config text. libxlutil offers no way to
 * list the settings it parsed, so this finds statement starts itself. The
 * text was already accepted by libxlutil's parser, so only its shape
 * matters: NAME ("=" | "+=") VALUE, where VALUE may hold quoted strings and
 * bracketed lists spanning lines; a statement ends at a newline or ';' at
 * bracket depth 0; '#' starts a comment outside strings.
 */
static bool xl_next_key(const char *s, size_t len, size_t *pos, char *key, size_t keylen)
{
	size_t i = *pos, n = 0;
	int depth = 0;

	while (i < len) {
		if (s[i] == '#')
			while (i < len && s[i] != '\n')
				i++;
		else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' || s[i] == ';')
			i++;
		else
			break;
	}
	if (i >= len)
		return false;
	while (i < len && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
			   (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.')) {
		if (n + 1 < keylen)
			key[n++] = s[i];
		i++;
	}
	key[n] = '\0';
	while (i < len) {
		char c = s[i++];

		if (c == '"' || c == '\'') {
			while (i < len && s[i] != c && s[i] != '\n') {
				if (c == '"' && s[i] == '\\')
					i++;
				i++;
			}
			i++;
		} else if (c == '#') {
			while (i < len && s[i] != '\n')
				i++;
		} else if (c == '[') {
			depth++;
		} else if (c == ']') {
			depth--;
		} else if ((c == '\n' || c == ';') && depth <= 0) {
			break;
		}
	}
	*pos = i;
	return true;
}

static int xl_check_keys(const char *text, size_t len, char *reason, size_t rlen)
{
	bool seen[XL_KEYS_COUNT] = { false };
	char key[XL_KEY_MAX + 1];
	size_t pos = 0, i;

	while (xl_next_key(text, len, &pos, key, sizeof(key))) {
		for (i = 0; i < XL_KEYS_COUNT && strcmp(key, xl_keys[i].key); i++)
			;
		if (i == XL_KEYS_COUNT) {
			snprintf(reason, rlen,
				 "%s: unknown key (failoverd's rebuild knows name, type, kernel, ramdisk, "
				 "extra, cmdline, memory, maxmem, vcpus, on_*)",
				 key[0] ? key : "(unnamed)");
			return -EINVAL;
		}
		if (xl_keys[i].refusal) {
			snprintf(reason, rlen, "%s: %s", key, xl_keys[i].refusal);
			return -EOPNOTSUPP;
		}
		if (seen[i]) {
			snprintf(reason, rlen, "%s: set twice", key);
			return -EINVAL;
		}
		seen[i] = true;
	}
	return 0;
}

/* The whole file, NUL-terminated; small and regular, or refused. */
static int xl_read_text(const char *path, char **ret_text, size_t *ret_len, char *reason, size_t rlen)
{
	struct stat st;
	char *text = NULL;
	size_t n = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = neg_errno();
		snprintf(reason, rlen, "cannot open %.200s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = neg_errno();
		snprintf(reason, rlen, "cannot stat %.200s: %s", path, strerror(-rc));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > XL_CONFIG_MAX) {
		rc = -EINVAL;
		snprintf(reason, rlen, "%.200s: not a regular file of at most %d bytes", path, XL_CONFIG_MAX);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		rc = -ENOMEM;
		snprintf(reason, rlen, "out of memory");
		goto out;
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, text + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = neg_errno();
			snprintf(reason, rlen, "cannot read %.200s: %s", path, strerror(-rc));
			goto out;
		}
		if (r == 0)
			break; /* shrank under us: parse what is there */
		n += (size_t)r;
	}
	text[n] = '\0';
	*ret_text = text;
	*ret_len = n;
	text = NULL;
	rc = 0;
out:
	free(text);
	close(fd);
	return rc;
}

static int xl_get_string(const XLU_Config *cfg, const char *key, bool required, const char **ret,
			 char *reason, size_t rlen)
{
	int r = xlu_cfg_get_string(cfg, key, ret, 1);

	if (r == ESRCH) {
		*ret = NULL;
		if (!required)
			return 0;
		snprintf(reason, rlen, "%s: missing", key);
		return -EINVAL;
	}
	if (r) {
		snprintf(reason, rlen, "%s: want a string", key);
		return -EINVAL;
	}
	return 0;
}

/* *ret untouched when the key is absent. */
static int xl_get_long(const XLU_Config *cfg, const char *key, long min, long max, long *ret,
		       char *reason, size_t rlen)
{
	long v;
	int r = xlu_cfg_get_long(cfg, key, &v, 1);

	if (r == ESRCH)
		return 0;
	if (r || v < min || v > max) {
		snprintf(reason, rlen, "%s: want a whole number from %ld to %ld", key, min, max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int xl_get_action(const XLU_Config *cfg, const char *key, libxl_action_on_shutdown *ret,
			 char *reason, size_t rlen)
{
	const char *v;
	size_t i;
	int rc = xl_get_string(cfg, key, false, &v, reason, rlen);

	if (rc < 0 || !v)
		return rc; /* absent: xl's default, already in *ret */
	for (i = 0; xl_action_names[i]; i++)
		if (!strcmp(v, xl_action_names[i])) {
			*ret = xl_action_values[i];
			return 0;
		}
	snprintf(reason, rlen, "%s \"%.40s\": want destroy, restart, rename-restart, preserve, "
		 "coredump-destroy, coredump-restart or soft-reset", key, v);
	return -EINVAL;
}

/* kernel= and ramdisk=: checked here so the reason names the key, not
 * libxc's loader three calls down. */
static int xl_check_image(const char *key, const char *path, char *reason, size_t rlen)
{
	if (path[0] != '/') {
		snprintf(reason, rlen, "%s \"%.80s\": want an absolute path", key, path);
		return -EINVAL;
	}
	if (access(path, R_OK) < 0) {
		int rc = neg_errno();

		snprintf(reason, rlen, "%s \"%.80s\": %s", key, path, strerror(-rc));
		return rc;
	}
	return 0;
}

static bool xl_name_is_valid(const char *name)
{
	size_t n = 0;

	for (; *name; name++, n++)
		if (n >= FO_DOMNAME_MAX || *name == '/' || (unsigned char)*name <= 0x20 || *name == 0x7f)
			return false;
	return n > 0;
}

/*
 * Parse an xl config file into a libxl domain config (initialised by the
 * caller, disposed by the caller whatever this returns), the way `xl create`
 * would for the keys above. On failure, reason names the key.
 */
static int xl_config_load(const char *path, libxl_domain_config *dc, char *reason, size_t rlen)
{
	const char *name, *type, *kernel, *ramdisk, *extra, *cmdline;
	long memory = 0, maxmem = 0, vcpus = 1;
	libxl_domain_type dtype = LIBXL_DOMAIN_TYPE_PV;
	XLU_Config *cfg = NULL;
	FILE *report = NULL;
	char *report_text = NULL, *text = NULL;
	size_t report_len = 0, text_len = 0;
	int rc, r, i;

	rc = xl_read_text(path, &text, &text_len, reason, rlen);
	if (rc < 0)
		goto out;
	/* libxlutil writes its syntax errors to a stream: keep them for the reason. */
	report = open_memstream(&report_text, &report_len);
	if (!report) {
		rc = neg_errno();
		snprintf(reason, rlen, "open_memstream: %s", strerror(-rc));
		goto out;
	}
	cfg = xlu_cfg_init(report, path);
	if (!cfg) {
		rc = -ENOMEM;
		snprintf(reason, rlen, "out of memory");
		goto out;
	}
	r = xlu_cfg_readdata(cfg, text, (int)text_len);
	if (r) {
		fflush(report);
		if (report_text && report_text[0])
			snprintf(reason, rlen, "%.*s", (int)strcspn(report_text, "\n"), report_text);
		else
			snprintf(reason, rlen, "%.200s: %s", path, strerror(r));
		rc = -EINVAL;
		goto out;
	}
	rc = xl_check_keys(text, text_len, reason, rlen);
	if (rc < 0)
		goto out;

	if ((rc = xl_get_string(cfg, "name", true, &name, reason, rlen)) < 0)
		goto out;
	if (!xl_name_is_valid(name)) {
		snprintf(reason, rlen, "name \"%.80s\": want 1-%d characters, no '/', space or control "
			 "characters", name, FO_DOMNAME_MAX);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = xl_get_string(cfg, "type", false, &type, reason, rlen)) < 0)
		goto out;
	if (type && !strcmp(type, "pvh")) {
		dtype = LIBXL_DOMAIN_TYPE_PVH;
	} else if (type && !strcmp(type, "hvm")) {
		snprintf(reason, rlen, "type \"hvm\": not supported by failoverd's rebuild (needs a device "
			 "model); use pv or pvh");
		rc = -EOPNOTSUPP;
		goto out;
	} else if (type && strcmp(type, "pv")) {
		snprintf(reason, rlen, "type \"%.40s\": want pv or pvh", type);
		rc = -EINVAL;
		goto out;
	}
	if ((rc = xl_get_string(cfg, "kernel", true, &kernel, reason, rlen)) < 0 ||
	    (rc = xl_check_image("kernel", kernel, reason, rlen)) < 0)
		goto out;
	if ((rc = xl_get_string(cfg, "ramdisk", false, &ramdisk, reason, rlen)) < 0 ||
	    (ramdisk && (rc = xl_check_image("ramdisk", ramdisk, reason, rlen)) < 0))
		goto out;
	if ((rc = xl_get_string(cfg, "extra", false, &extra, reason, rlen)) < 0 ||
	    (rc = xl_get_string(cfg, "cmdline", false, &cmdline, reason, rlen)) < 0)
		goto out;
	if (extra && cmdline) {
		snprintf(reason, rlen, "cmdline: cannot be combined with extra (xl would drop extra)");
		rc = -EINVAL;
		goto out;
	}
	if ((rc = xl_get_long(cfg, "memory", 1, XL_MEMORY_MAX, &memory, reason, rlen)) < 0 ||
	    (rc = xl_get_long(cfg, "maxmem", memory ? memory : 1, XL_MEMORY_MAX, &maxmem, reason, rlen)) < 0 ||
	    (rc = xl_get_long(cfg, "vcpus", 1, XL_VCPUS_MAX, &vcpus, reason, rlen)) < 0)
		goto out;

	/* xl's defaults, then the file's choices. */
	dc->on_poweroff = LIBXL_ACTION_ON_SHUTDOWN_DESTROY;
	dc->on_reboot = LIBXL_ACTION_ON_SHUTDOWN_RESTART;
	dc->on_watchdog = LIBXL_ACTION_ON_SHUTDOWN_DESTROY;
	dc->on_crash = LIBXL_ACTION_ON_SHUTDOWN_DESTROY;
	dc->on_soft_reset = LIBXL_ACTION_ON_SHUTDOWN_SOFT_RESET;
	if ((rc = xl_get_action(cfg, "on_poweroff", &dc->on_poweroff, reason, rlen)) < 0 ||
	    (rc = xl_get_action(cfg, "on_reboot", &dc->on_reboot, reason, rlen)) < 0 ||
	    (rc = xl_get_action(cfg, "on_watchdog", &dc->on_watchdog, reason, rlen)) < 0 ||
	    (rc = xl_get_action(cfg, "on_crash", &dc->on_crash, reason, rlen)) < 0 ||
	    (rc = xl_get_action(cfg, "on_soft_reset", &dc->on_soft_reset, reason, rlen)) < 0)
		goto out;

	dc->c_info.type = dtype;
	libxl_uuid_generate(&dc->c_info.uuid);
	libxl_domain_build_info_init_type(&dc->b_info, dtype);
	dc->b_info.max_vcpus = (int)vcpus;
	/* What libxl_bitmap_alloc does, without needing a context (the
	 * parser has none of its own); libxl_bitmap_dispose frees it. */
	dc->b_info.avail_vcpus.size = (uint32_t)(vcpus + 7) / 8;
	dc->b_info.avail_vcpus.map = calloc(dc->b_info.avail_vcpus.size, 1);
	if (!dc->b_info.avail_vcpus.map) {
		dc->b_info.avail_vcpus.size = 0;
		rc = -ENOMEM;
		snprintf(reason, rlen, "out of memory");
		goto out;
	}
	for (i = 0; i < (int)vcpus; i++)
		libxl_bitmap_set(&dc->b_info.avail_vcpus, i);
	if (memory)
		dc->b_info.max_memkb = dc->b_info.target_memkb = (uint64_t)memory * 1024;
	if (maxmem)
		dc->b_info.max_memkb = (uint64_t)maxmem * 1024;
	dc->c_info.name = strdup(name);
	dc->b_info.kernel = strdup(kernel);
	dc->b_info.ramdisk = ramdisk ? strdup(ramdisk) : NULL;
	dc->b_info.cmdline = extra || cmdline ? strdup(extra ? extra : cmdline) : NULL;
	if (!dc->c_info.name || !dc->b_info.kernel || (ramdisk && !dc->b_info.ramdisk) ||
	    ((extra || cmdline) && !dc->b_info.cmdline)) {
		rc = -ENOMEM;
		snprintf(reason, rlen, "out of memory");
		goto out;
	}
	rc = 0;
out:
	if (cfg)
		xlu_cfg_destroy(cfg); /* before the stream it reports to */
	if (report)
		fclose(report);
	free(report_text);
	free(text);
	return rc;
}

/* ---------------------------------------------------------- builder thread */

static int libxl_rc_to_errno(int rc)
{
	switch (rc) {
	case 0:
		return 0;
	case ERROR_NOMEM:
		return -ENOMEM;
	case ERROR_INVAL:
		return -EINVAL;
	case ERROR_DOMAIN_NOTFOUND:
	case ERROR_DOMAIN_DESTROYED:
		return -ESRCH;
	case ERROR_TIMEDOUT:
	case ERROR_GUEST_TIMEDOUT:
		return -ETIMEDOUT;
	case ERROR_NI:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

static const char *libxl_rc_name(int rc)
{
	const char *s = libxl_error_to_string((libxl_error)rc);

	return s ? s : "unknown libxl error";
}

static void builder_create(struct xen_builder *b, struct builder_job *job)
{
	libxl_domain_config dc;
	uint32_t domid = INVALID_DOMID;
	int rc;

	libxl_domain_config_init(&dc);
	job->domid = FO_DOMID_INVALID;
	job->err = xl_config_load(job->config_path, &dc, job->reason, sizeof(job->reason));
	if (job->err < 0)
		goto out;
	snprintf(job->name, sizeof(job->name), "%s", dc.c_info.name);
	/* Synchronous (no ao_how): this thread is here to wait. libxl
	 * destroys what it half-built when this fails. */
	rc = libxl_domain_create_new(b->ctx, &dc, &domid, NULL, NULL);
	if (rc) {
		job->err = libxl_rc_to_errno(rc);
		snprintf(job->reason, sizeof(job->reason), "libxl could not build %s: %s", job->name,
			 b->captured[0] ? b->captured : libxl_rc_name(rc));
		goto out;
	}
	/* libxl leaves the new domain paused; `xl create` unpauses it as its
	 * last step, and so do we: the pair waits for the rebuilt member's
	 * first heartbeat before it pauses it as the standby. */
	rc = libxl_domain_unpause(b->ctx, domid, NULL);
	if (rc) {
		job->err = libxl_rc_to_errno(rc);
		snprintf(job->reason, sizeof(job->reason), "built %s as domain %" PRIu32 " but could not "
			 "unpause it (%s); destroyed it again", job->name, domid,
			 b->captured[0] ? b->captured : libxl_rc_name(rc));
		libxl_domain_destroy(b->ctx, domid, NULL);
		goto out;
	}
	job->domid = domid;
	job->err = 0;
	snprintf(job->reason, sizeof(job->reason), "created %s as domain %" PRIu32, job->name, domid);
out:
	libxl_domain_config_dispose(&dc);
}

static void builder_destroy(struct xen_builder *b, struct builder_job *job)
{
	int rc = libxl_domain_destroy(b->ctx, job->domid, NULL);

	job->err = libxl_rc_to_errno(rc);
	if (!rc || job->err == -ESRCH)
		return;
	snprintf(job->reason, sizeof(job->reason), "libxl_domain_destroy: %s",
		 b->captured[0] ? b->captured : libxl_rc_name(rc));
	/* libxl gave up before its final hypercall: make sure the hypervisor
	 * at least lets go of the domain (xenstore leftovers stay). */
	if (xc_domain_destroy(b->xch, job->domid) == 0)
		snprintf(job->reason + strlen(job->reason), sizeof(job->reason) - strlen(job->reason),
			 "; destroyed through libxenctrl instead");
}

/* In the helper process: one job, libxl's first error line kept for its
 * reason. */
static void builder_proc_serve(void *arg, void *msg)
{
	struct xen_builder *b = arg;
	struct builder_job *job = msg;

	b->captured[0] = '\0';
	b->log.capture = b->captured;
	b->log.capture_len = sizeof(b->captured);
	if (job->kind == JOB_CREATE)
		builder_create(b, job);
	else
		builder_destroy(b, job);
	b->log.capture = NULL;
}

static int builder_proc_init(void *arg)
{
	struct xen_builder *b = arg;

	/* Told apart from the daemon in ps, top and fo-trace's comm filter. */
	prctl(PR_SET_NAME, "fo-libxl", 0, 0, 0);
	if (libxl_ctx_alloc(&b->ctx, LIBXL_VERSION, 0, &b->log.vtable)) {
		fo_err("xen: libxl helper process: cannot create a libxl context");
		return -EIO;
	}
	b->xch = xc_interface_open(&b->log.vtable, &b->log.vtable, 0);
	return 0;
}

/* On the builder thread: the job, done by the helper process. */
static void builder_run(struct xen_builder *b, struct builder_job *job)
{
	if (fo_proc_helper_call(&b->proc, job) == 0)
		return;
	job->err = -EPIPE;
	if (job->kind == JOB_CREATE) {
		job->domid = FO_DOMID_INVALID;
		snprintf(job->reason, sizeof(job->reason),
			 "the libxl helper process is gone; domains can be built again after a restart of failoverd");
		return;
	}
	/* Fenced already (paused, counted as dying): the hypervisor lets go
	 * of it; libxl's xenstore entries and backends stay behind. */
	if (b->xch && xc_domain_destroy(b->xch, job->domid) == 0)
		snprintf(job->reason, sizeof(job->reason),
			 "the libxl helper process is gone: destroyed through libxenctrl (libxl's xenstore entries left)");
	else
		snprintf(job->reason, sizeof(job->reason),
			 "the libxl helper process is gone and libxenctrl could not destroy it either: %s",
			 strerror(errno));
}

static void *builder_main(void *arg)
{
	struct xen_builder *b = arg;

	pthread_mutex_lock(&b->h.lock);
	for (;;) {
		struct builder_job job;
		uint64_t t0;

		while (!b->h.stop && b->n_req == 0)
			pthread_cond_wait(&b->h.wake, &b->h.lock);
		if (b->n_req == 0)
			break; /* stopping, and nothing left */
		job = b->req[b->req_head];
		b->req_head = (b->req_head + 1) % BUILDER_QUEUE;
		b->n_req--;
		if (b->h.stop && job.kind == JOB_CREATE) {
			/* Shutting down: start no build nobody will hear of.
			 * Queued destroys still run: they finish a fence. */
			b->outstanding--;
			continue;
		}
		pthread_mutex_unlock(&b->h.lock);

		t0 = mono_ns();
		builder_run(b, &job);
		job.took_ns = mono_ns() - t0;

		pthread_mutex_lock(&b->h.lock);
		/* outstanding counted this result in, so there is room */
		b->res[(b->res_head + b->n_res) % BUILDER_QUEUE] = job;
		b->n_res++;
		pthread_mutex_unlock(&b->h.lock);
		helper_post(&b->h);
		pthread_mutex_lock(&b->h.lock);
	}
	pthread_mutex_unlock(&b->h.lock);
	return NULL;
}

/* Always paired with builder_stop(), even when builder_start() never ran. */
static void builder_init(struct xen_builder *b)
{
	b->proc.fd = -1;
	b->proc.pid = 0;
	xen_logger_init(&b->log, NULL);
	helper_init(&b->h);
}

/* First thing in fo_hv_xen_new: no thread exists yet, nothing is locked,
 * nothing is real-time. */
static int builder_fork(struct xen_builder *b)
{
	return fo_proc_helper_start(&b->proc, sizeof(struct builder_job), builder_proc_init, builder_proc_serve, b);
}

static int builder_start(struct xen_builder *b)
{
	b->xch = xc_interface_open(&b->log.vtable, &b->log.vtable, 0);
	if (!b->xch)
		return neg_errno();
	return helper_start(&b->h, builder_main, b, 0);
}

static void builder_stop(struct xen_builder *b)
{
	helper_join(&b->h);
	/* The helper finishes a job it is doing, reads EOF and exits. */
	fo_proc_helper_stop(&b->proc);
	if (b->ctx)
		libxl_ctx_free(b->ctx);
	if (b->xch)
		xc_interface_close(b->xch);
	helper_destroy(&b->h);
}

static bool builder_submit(struct xen_builder *b, const struct builder_job *job)
{
	bool queued = false;

	pthread_mutex_lock(&b->h.lock);
	if (b->outstanding < BUILDER_QUEUE) {
		b->req[(b->req_head + b->n_req) % BUILDER_QUEUE] = *job;
		b->n_req++;
		b->outstanding++;
		pthread_cond_signal(&b->h.wake);
		queued = true;
	}
	pthread_mutex_unlock(&b->h.lock);
	return queued;
}

static bool builder_take(struct xen_builder *b, struct builder_job *ret)
{
	bool got = false;

	pthread_mutex_lock(&b->h.lock);
	if (b->n_res) {
		*ret = b->res[b->res_head];
		b->res_head = (b->res_head + 1) % BUILDER_QUEUE;
		b->n_res--;
		b->outstanding--;
		got = true;
	}
	pthread_mutex_unlock(&b->h.lock);
	return got;
}

/* -------------------------------------------------------- create / destroy */

static int xen_create(struct fo_hv *hv, const char *config_path)
{
	struct xen_hv *x = to_xen(hv);
	struct builder_job job = { .kind = JOB_CREATE, .domid = FO_DOMID_INVALID };
	size_t n;

	if (!config_path || !*config_path)
		return -EINVAL;
	n = strlen(config_path);
	if (n >= sizeof(job.config_path))
		return -ENAMETOOLONG;
	memcpy(job.config_path, config_path, n + 1);
	return builder_submit(&x->builder, &job) ? 0 : -EBUSY;
}

/*
 * Destroy, in two steps. The fence is immediate, here on the loop: our
 * mapping of the heartbeat page is dropped, the domain is paused (on the
 * pair's paths it is paused already), and from now on it counts as dying
 * (get_state), cannot be unpaused and is not found by name. The teardown,
 * libxl_domain_destroy (backends, xenstore entries, the final hypercall in
 * a child process: far too slow for the loop), runs on the builder, in
 * order before any create queued after it, so a rebuild of the same name
 * starts once the old domain is gone. Only if the builder's queue is full
 * does the hypervisor-level destroy run here instead, leaving libxl's
 * xenstore entries behind.
 */
static int xen_destroy(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct builder_job job = { .kind = JOB_DESTROY, .domid = domid };
	struct xen_member *m;
	bool found;
	int r;

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (doomed_has(x, domid))
		return 0;
	r = get_dominfo(x, domid, &found, NULL);
	if (r < 0)
		return r;
	if (!found)
		return -ESRCH;
	/* The fence first: one hypercall. Any refusal but -ESRCH (a domain
	 * already shut down or dying) does not stop the destroy. */
	r = x->domctl ? domctl_fast(x, XEN_DOMCTL_pausedomain, domid)
		      : (xc_domain_pause(x->xch, domid) < 0 ? neg_errno() : 0);
	if (r == -ESRCH)
		return r;
	if (r < 0) {
		/* Not paused: it may run until a teardown seconds away, so it
		 * must not count as dying (fenced) meanwhile. The hypervisor's
		 * destroy here stops it for good at once; libxl's xenstore
		 * entries stay behind, as with a full queue. */
		fo_warn("xen: could not pause domain %" PRIu32 " before destroying it (%s): destroying it at once",
			domid, strerror(-r));
		m = member_find(x, domid);
		if (m)
			member_detach(x, m);
		return xc_domain_destroy(x->xch, domid) < 0 ? neg_errno() : 0;
	}
	/* Our grant mapping holds a page of the domain: drop it before the
	 * teardown or the domain lingers as a dying zombie until we notice. */
	m = member_find(x, domid);
	if (m)
		member_detach(x, m);
	if (doomed_add(x, domid) && builder_submit(&x->builder, &job))
		return 0;
	doomed_remove(x, domid);
	fo_warn("xen: teardown queue full: destroying domain %" PRIu32 " without libxl's cleanup", domid);
	return xc_domain_destroy(x->xch, domid) < 0 ? neg_errno() : 0;
}

static void destroy_finished(struct xen_hv *x, const struct builder_job *job)
{
	xen_domctl_getdomaininfo_t info;
	bool found = false;

	if (get_dominfo(x, job->domid, &found, &info) == 0 && found && !(info.flags & XEN_DOMINF_dying)) {
		/* Neither libxl nor libxenctrl got rid of it: it stays paused
		 * and counted as dying, so nothing ever runs it again. */
		fo_err("xen: domain %" PRIu32 " could not be destroyed (%s); it stays paused", job->domid,
		       job->reason);
		return;
	}
	doomed_remove(x, job->domid);
	if (job->err < 0 && job->err != -ESRCH)
		fo_warn("xen: domain %" PRIu32 " destroyed, but not cleanly: %s", job->domid, job->reason);
	else
		fo_info("xen: domain %" PRIu32 " destroyed (libxl teardown took %" PRIu64 " ms)", job->domid,
			job->took_ns / 1000000);
}

static void dispatch_builder(struct xen_hv *x)
{
	struct builder_job job;
	bool destroyed = false;

	helper_clear(&x->builder.h);
	while (builder_take(&x->builder, &job)) {
		if (job.kind == JOB_DESTROY) {
			destroy_finished(x, &job);
			destroyed = true;
			continue;
		}
		/* Logged here in full: the pair keeps a shortened reason. */
		if (job.err < 0)
			fo_warn("xen: cannot create a domain from %s: %s", job.config_path, job.reason);
		else
			fo_info("xen: %s from %s in %" PRIu64 " ms", job.reason, job.config_path,
				job.took_ns / 1000000);
		if (x->base.cb.domain_created)
			x->base.cb.domain_created(x->base.cb.ctx, job.config_path, job.err, job.reason);
	}
	/* The domain may have been gone before @releaseDomain was handled;
	 * either way the daemon re-reads its members now that it is not
	 * counted as dying by us any more. */
	if (destroyed && x->base.cb.domains_changed)
		x->base.cb.domains_changed(x->base.cb.ctx);
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
			member_detach(x, m);
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
		member_detach(x, m);
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
	member_detach(x, m);

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
mapped:
	m->gref = gref;
	m->remote_port = port;
	snprintf(m->ready, sizeof(m->ready), "%s", k.ready);
	m->reported = false; /* a later failure is news again */
	snprintf(reason, sizeof(reason), "attached (gref %" PRIu32 ", port %" PRIu32 ", boot %s%s)",
		 gref, port, m->ready, m->lent ? ", port held by the kernel module" : "");
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

/* poll_fd ticks at the shortest poll_ms of the lent members, or not at all. */
static void poll_timer_arm(struct xen_hv *x)
{
	struct itimerspec its = { 0 };
	uint64_t ns = 0;
	size_t i;

	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		const struct xen_member *m = &x->members[i];
		uint64_t p = (uint64_t)(m->poll_ms ? m->poll_ms : 1) * 1000000ull;

		if (m->in_use && m->lent && (!ns || p < ns))
			ns = p;
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
	if (doomed_has(x, domid))
		return -ESRCH;
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
	xen_state_relay_forget(x->state_relay, domid);
	m->in_use = false;
	m->lent = false;
	retry_timer_arm(x);
	poll_timer_arm(x);
}

/* See "Lent channels" at the top. */
static int xen_lend_channel(struct fo_hv *hv, fo_domid_t domid, uint32_t poll_ms, uint32_t *port)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m = member_find(x, domid);
	bool adopt = *port != 0;

	if (!m)
		return -ENOENT;
	if (!adopt && !m->page)
		return -ENOENT; /* no agent attached: no port to hand over */
	if (m->port_bound) {
		xenevtchn_unbind(x->xce, m->local_port);
		m->port_bound = false;
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
	poll_timer_arm(x);
	return 0;
}

static void xen_reclaim_channel(struct fo_hv *hv, fo_domid_t domid)
{
	struct xen_hv *x = to_xen(hv);
	struct xen_member *m = member_find(x, domid);
	xenevtchn_port_or_error_t local;

	if (!m || !m->lent)
		return;
	m->lent = false;
	poll_timer_arm(x);
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
		return;
	}
	/* Still held (the module unbinds only after its switch), or the agent
	 * moved on: start over from the keys, as for a new agent. */
	fo_debug("xen: dom%" PRIu32 ": re-binding port %" PRIu32 " after the kernel module: %s", m->domid,
		 m->remote_port, strerror(errno));
	member_detach(x, m);
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
		/* The daemon's switch first (domain-info reads, pause,
		 * unpause); dropping a dead member's page and binding (unmap,
		 * unbind, the agent callback that logs) after it. */
		if (x->base.cb.domains_changed)
			x->base.cb.domains_changed(x->base.cb.ctx);
		release_dead_members(x);
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
	dst->ext_magic = src->ext_magic;
	dst->ext_version = src->ext_version;
	dst->app_cycle = src->app_cycle;
	dst->app_flags = src->app_flags;
	dst->deadline_misses = src->deadline_misses;
	dst->restored_cycle = src->restored_cycle;
	dst->restore_result = src->restore_result;
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
			xen_state_relay_beat(x->state_relay, domid, &copy);
			if (x->base.cb.heartbeat)
				x->base.cb.heartbeat(x->base.cb.ctx, domid, &copy);
		}
		/* Unknown ports (just unbound, stale) are unmasked and dropped;
		 * an error here means the port is gone, which is fine. */
		xenevtchn_unmask(x->xce, (evtchn_port_t)port);
	}
}

/* Lent members: what a notification would have delivered. */
static void dispatch_poll(struct xen_hv *x)
{
	uint64_t expirations;
	size_t i;

	if (read(x->poll_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		fo_debug("xen: page poll timer read: %s", strerror(errno));
	/* Callbacks may unwatch members: re-check each time. */
	for (i = 0; i < XEN_MAX_MEMBERS; i++) {
		struct xen_member *m = &x->members[i];
		struct fo_hb_page copy;

		if (!m->in_use || !m->lent || !m->page)
			continue;
		hb_page_copy(m->page, &copy);
		xen_state_relay_beat(x->state_relay, m->domid, &copy);
		if (x->base.cb.heartbeat)
			x->base.cb.heartbeat(x->base.cb.ctx, m->domid, &copy);
	}
}

static size_t xen_get_fds(struct fo_hv *hv, int *fds, size_t max)
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
static bool xen_fd_is_rt(struct fo_hv *hv, int fd)
{
	struct xen_hv *x = to_xen(hv);

	return fd == xenevtchn_fd(x->xce) || fd == xs_fileno(x->xs) || fd == x->poll_fd;
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
	else if (fd == x->reader.h.event_fd)
		dispatch_reader(x);
	else if (fd == x->builder.h.event_fd)
		dispatch_builder(x);
	else if (fd == x->writer.h.event_fd)
		dispatch_writer(x);
	else if (fd == x->timer_fd)
		dispatch_retry_timer(x);
	else if (fd == x->poll_fd)
		dispatch_poll(x);
}

/* ------------------------------------------------------------- lifecycle */

static void xen_free(struct fo_hv *hv)
{
	struct xen_hv *x = to_xen(hv);
	size_t i;

	if (!x)
		return;
	/* Waits for a running job (a create takes seconds); queued destroys
	 * still run, queued creates are dropped. */
	builder_stop(&x->builder);
	reader_stop(&x->reader);
	xen_state_relay_free(x->state_relay);
	x->state_relay = NULL;
	writer_stop(&x->writer);
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


/* ---------------------------------------------------------------- placement */

static void pool_name_cache(struct xen_hv *x, uint32_t id, const char *name)
{
	size_t i;

	for (i = 0; i < x->n_pool_names; i++)
		if (x->pool_names[i].id == id)
			break;
	if (i == x->n_pool_names) {
		if (x->n_pool_names == sizeof(x->pool_names) / sizeof(x->pool_names[0]))
			i = 0; /* full: overwrite the oldest guess */
		else
			x->n_pool_names++;
	}
	x->pool_names[i].id = id;
	snprintf(x->pool_names[i].name, sizeof(x->pool_names[i].name), "%s", name);
}

static void pool_name_of(struct xen_hv *x, uint32_t id, char *buf, size_t len)
{
	char *name;

	for (size_t i = 0; i < x->n_pool_names; i++)
		if (x->pool_names[i].id == id) {
			snprintf(buf, len, "%s", x->pool_names[i].name);
			return;
		}
	name = libxl_cpupoolid_to_name(x->ctx, id);
	if (name) {
		pool_name_cache(x, id, name);
		snprintf(buf, len, "%s", name);
		free(name);
	} else {
		snprintf(buf, len, "#%u", id);
	}
}

static void mask_from_libxl(struct fo_cpumask *m, const libxl_bitmap *b)
{
	unsigned int c; /* libxl's loop compares it with an unsigned size */

	memset(m, 0, sizeof(*m));
	libxl_for_each_set_bit(c, *b)
		fo_cpumask_set(m, (int)c);
}

static void pool_info_fill(const libxl_cpupoolinfo *info, struct fo_hv_pool *ret)
{
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", info->pool_name ? info->pool_name : "");
	snprintf(ret->sched, sizeof(ret->sched), "%s", libxl_scheduler_to_string(info->sched));
	mask_from_libxl(&ret->cpus, &info->cpumap);
	ret->n_domains = info->n_dom;
}

static int xen_cpupool_get(struct fo_hv *hv, const char *name, struct fo_hv_pool *ret)
{
	struct xen_hv *x = to_xen(hv);
	libxl_cpupoolinfo info;
	uint32_t id;
	int rc;

	if (libxl_name_to_cpupoolid(x->ctx, name, &id) != 0)
		return -ENOENT;
	libxl_cpupoolinfo_init(&info);
	rc = libxl_cpupool_info(x->ctx, &info, id);
	if (rc == 0) {
		pool_info_fill(&info, ret);
		pool_name_cache(x, id, name);
	}
	libxl_cpupoolinfo_dispose(&info);
	return rc ? libxl_rc_to_errno(rc) : 0;
}

/* Which pool holds `cpu` (-1: none, i.e. free or offline). */
static int64_t pool_holding(const libxl_cpupoolinfo *pools, int n, int cpu, const char **ret_name)
{
	for (int i = 0; i < n; i++)
		if (libxl_bitmap_test(&pools[i].cpumap, cpu)) {
			*ret_name = pools[i].pool_name;
			return pools[i].poolid;
		}
	return -1;
}

static int xen_cpupool_ensure(struct fo_hv *hv, const char *name, const char *sched, const struct fo_cpumask *cpus,
			      char *why, size_t whylen)
{
	struct xen_hv *x = to_xen(hv);
	libxl_cpupoolinfo *pools = NULL;
	libxl_scheduler lsched;
	libxl_bitmap map;
	libxl_uuid uuid;
	struct fo_hv_pool have;
	char want_text[128], have_text[128];
	int removed[FO_HV_MAX_CPUS], n_removed = 0, n_pools = 0, max_cpus, rc;
	uint32_t poolid = LIBXL_CPUPOOL_POOLID_ANY;

	libxl_bitmap_init(&map);
	fo_cpumask_format(cpus, want_text, sizeof(want_text));
	if (libxl_scheduler_from_string(sched, &lsched) != 0) {
		snprintf(why, whylen, "libxl knows no scheduler \"%s\"", sched);
		return -EINVAL;
	}

	rc = xen_cpupool_get(hv, name, &have);
	if (rc == 0) {
		if (strcmp(have.sched, sched) == 0 && fo_cpumask_equal(&have.cpus, cpus)) {
			snprintf(why, whylen, "adopted the existing pool (scheduler %s, pCPUs %s)", sched, want_text);
			return 0;
		}
		fo_cpumask_format(&have.cpus, have_text, sizeof(have_text));
		snprintf(why, whylen, "a cpupool of that name exists with scheduler %s and pCPUs %s, configured %s "
			 "and %s (destroy it, or configure it as it is)", have.sched, have_text, sched, want_text);
		return -EEXIST;
	}
	if (rc != -ENOENT) {
		snprintf(why, whylen, "cannot read cpupool %s: %s", name, strerror(-rc));
		return rc;
	}

	max_cpus = libxl_get_max_cpus(x->ctx);
	pools = libxl_list_cpupool(x->ctx, &n_pools);
	if (max_cpus <= 0 || !pools) {
		snprintf(why, whylen, "cannot list the host's pCPUs and cpupools");
		rc = -EIO;
		goto out;
	}
	for (int c = 0; c < FO_HV_MAX_CPUS; c++) {
		const char *owner = NULL;
		int64_t id;

		if (!fo_cpumask_test(cpus, c))
			continue;
		if (c >= max_cpus) {
			snprintf(why, whylen, "pCPU %d does not exist (this host has pCPUs 0-%d)", c, max_cpus - 1);
			rc = -ENODEV;
			goto out;
		}
		id = pool_holding(pools, n_pools, c, &owner);
		if (id > 0) {
			snprintf(why, whylen, "pCPU %d is in cpupool %s, not Pool-0", c, owner ? owner : "?");
			rc = -EBUSY;
			goto out;
		}
	}
	/* Out of Pool-0 first: a pCPU can be given to a new pool only free. */
	for (int c = 0; c < FO_HV_MAX_CPUS; c++) {
		const char *owner = NULL;

		if (!fo_cpumask_test(cpus, c) || pool_holding(pools, n_pools, c, &owner) != 0)
			continue;
		rc = libxl_cpupool_cpuremove(x->ctx, 0, c);
		if (rc) {
			snprintf(why, whylen, "cannot take pCPU %d out of Pool-0 (%s): is a vCPU pinned to it alone?",
				 c, libxl_rc_name(rc));
			rc = -EBUSY;
			goto rollback;
		}
		removed[n_removed++] = c;
	}
	if (libxl_cpu_bitmap_alloc(x->ctx, &map, max_cpus) != 0) {
		rc = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto rollback;
	}
	for (int c = 0; c < max_cpus; c++)
		if (fo_cpumask_test(cpus, c))
			libxl_bitmap_set(&map, c);
	libxl_uuid_generate(&uuid);
	rc = libxl_cpupool_create(x->ctx, name, lsched, map, &uuid, &poolid);
	if (rc) {
		/* What failed is rarely said by libxl; the usual cause is a
		 * scheduler left out of the hypervisor's build (Debian's Xen
		 * 4.17 has credit and credit2 only). */
		snprintf(why, whylen, "libxl_cpupool_create(%s, %s, pCPUs %s): %s (is the %s scheduler built "
			 "into this hypervisor? see `xl dmesg` and its .config)", name, sched, want_text,
			 libxl_rc_name(rc), sched);
		rc = libxl_rc_to_errno(rc);
		goto rollback;
	}
	pool_name_cache(x, poolid, name);
	snprintf(why, whylen, "created (id %u, scheduler %s, pCPUs %s, taken from Pool-0)", poolid, sched, want_text);
	rc = 0;
	goto out;
rollback:
	for (int i = 0; i < n_removed; i++)
		libxl_cpupool_cpuadd(x->ctx, 0, removed[i]);
out:
	libxl_bitmap_dispose(&map);
	if (pools)
		libxl_cpupoolinfo_list_free(pools, n_pools);
	return rc;
}

static int xen_cpupool_move(struct fo_hv *hv, fo_domid_t domid, const char *name)
{
	struct xen_hv *x = to_xen(hv);
	xen_domctl_getdomaininfo_t info;
	uint32_t id;
	bool found;
	int rc;

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (libxl_name_to_cpupoolid(x->ctx, name, &id) != 0)
		return -ENOENT;
	rc = get_dominfo(x, domid, &found, &info);
	if (rc < 0)
		return rc;
	if (!found)
		return -ESRCH;
	if (info.cpupool == id)
		return 0;
	rc = libxl_cpupool_movedomain(x->ctx, id, domid);
	return rc ? libxl_rc_to_errno(rc) : 0;
}

static int xen_get_placement(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_placement *ret)
{
	struct xen_hv *x = to_xen(hv);
	xen_domctl_getdomaininfo_t info;
	xc_cpumap_t hard = NULL, soft = NULL;
	int mapsize, rc;
	bool found;

	if (!domid_is_valid(domid))
		return -EINVAL;
	rc = get_dominfo(x, domid, &found, &info);
	if (rc < 0)
		return rc;
	if (!found)
		return -ESRCH;
	mapsize = xc_get_cpumap_size(x->xch);
	/* Both maps, though only the hard one is read: libxc bounces both. */
	hard = xc_cpumap_alloc(x->xch);
	soft = xc_cpumap_alloc(x->xch);
	if (mapsize <= 0 || !hard || !soft) {
		rc = -ENOMEM;
		goto out;
	}
	memset(ret, 0, sizeof(*ret));
	pool_name_of(x, info.cpupool, ret->pool, sizeof(ret->pool));
	ret->n_vcpus = info.max_vcpu_id + 1;
	for (unsigned v = 0; v < ret->n_vcpus && v < FO_HV_MAX_VCPUS; v++) {
		if (xc_vcpu_getaffinity(x->xch, domid, (int)v, hard, soft, XEN_VCPUAFFINITY_HARD) < 0) {
			rc = neg_errno();
			goto out;
		}
		for (int c = 0; c < mapsize * 8 && c < FO_HV_MAX_CPUS; c++)
			if (hard[c / 8] & (1u << (c % 8)))
				fo_cpumask_set(&ret->hard[v], c);
	}
	rc = 0;
out:
	free(hard);
	free(soft);
	return rc;
}

static int xen_pin_vcpu(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const struct fo_cpumask *m)
{
	struct xen_hv *x = to_xen(hv);
	xc_cpumap_t hard = NULL, soft = NULL;
	int mapsize, rc = 0;

	if (!domid_is_valid(domid))
		return -EINVAL;
	mapsize = xc_get_cpumap_size(x->xch);
	hard = xc_cpumap_alloc(x->xch);
	soft = xc_cpumap_alloc(x->xch);
	if (mapsize <= 0 || !hard || !soft) {
		rc = -ENOMEM;
		goto out;
	}
	for (int c = 0; c < FO_HV_MAX_CPUS; c++)
		if (fo_cpumask_test(m, c)) {
			if (c >= mapsize * 8) {
				rc = -EINVAL;
				goto out;
			}
			hard[c / 8] |= (uint8_t)(1u << (c % 8));
		}
	memset(soft, 0xff, (size_t)mapsize);
	if (xc_vcpu_setaffinity(x->xch, domid, (int)vcpu, hard, soft, XEN_VCPUAFFINITY_HARD) < 0)
		rc = neg_errno();
out:
	free(hard);
	free(soft);
	return rc;
}

static const char *xen_switch_path(struct fo_hv *hv)
{
	(void)hv;
	return "xenctrl";
}

static void xen_state_pair(struct fo_hv *hv, fo_domid_t active, fo_domid_t standby)
{
	xen_state_relay_pair(to_xen(hv)->state_relay, active, standby);
}

static bool xen_state_info(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_state_info *ret)
{
	return xen_state_relay_info(to_xen(hv)->state_relay, domid, ret);
}

static const struct fo_hv_ops xen_ops = {
	.name = "xen",
	.now_ns = xen_now_ns,
	.lookup = xen_lookup,
	.get_state = xen_get_state,
	.get_handle = xen_get_handle,
	.pause = xen_pause,
	.unpause = xen_unpause,
	.set_affinity = xen_set_affinity,
	.destroy = xen_destroy,
	.switch_path = xen_switch_path,
	.create = xen_create,
	.watch_member = xen_watch_member,
	.unwatch_member = xen_unwatch_member,
	.set_role = xen_set_role,
	.agent_command = xen_agent_command,
	.get_fds = xen_get_fds,
	.fds_changed = xen_fds_changed,
	.fd_is_rt = xen_fd_is_rt,
	.dispatch = xen_dispatch,
	.free = xen_free,
	.lend_channel = xen_lend_channel,
	.reclaim_channel = xen_reclaim_channel,
	.cpupool_ensure = xen_cpupool_ensure,
	.cpupool_get = xen_cpupool_get,
	.cpupool_move = xen_cpupool_move,
	.get_placement = xen_get_placement,
	.pin_vcpu = xen_pin_vcpu,
	.state_pair = xen_state_pair,
	.state_info = xen_state_info,
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
	x->poll_fd = -1;
	reader_init(&x->reader);
	writer_init(&x->writer);
	builder_init(&x->builder);
	x->fds_changed = true;
	x->guest_rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(10000, 10);
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
	 * handle and no locked memory yet (see struct xen_builder). */
	rc = builder_fork(&x->builder);
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
	rc = reader_start(&x->reader);
	if (rc < 0) {
		fo_err("xen: cannot start the xenstore reader: %s", strerror(-rc));
		goto fail;
	}
	rc = writer_start(&x->writer);
	if (rc < 0) {
		fo_err("xen: cannot start the xenstore writer: %s", strerror(-rc));
		goto fail;
	}
	/* State handover is an addition: without it failover still works. */
	rc = xen_state_relay_new(start_helper_thread, &x->state_relay);
	if (rc < 0)
		fo_warn("xen: no state handover (cannot start the state relay: %s)", strerror(-rc));
	rc = builder_start(&x->builder);
	if (rc < 0) {
		fo_err("xen: cannot start the domain builder thread: %s", strerror(-rc));
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
