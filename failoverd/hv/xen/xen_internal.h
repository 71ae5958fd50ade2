/* SPDX-License-Identifier: MIT */
/*
 * xen_internal.h - what the Xen backend's files (hv/xen/) share: struct
 * xen_hv and the helper threads' structs it embeds, the limits they are
 * sized by, and the functions one file calls in another. Not a public
 * header: the rest of failoverd sees the backend only through hv/hv.h
 * (fo_hv_xen_new and the ops table, see backend.c).
 */
#ifndef FO_XEN_INTERNAL_H
#define FO_XEN_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * Xen's public headers are GNU C: they #error (hvm/save.h) or emit "FIXME"
 * (foreign/x86_64.h) when __STRICT_ANSI__ is set, which -std=c11 does, even
 * though anonymous unions are plain C11. Include them as the GNU C they are;
 * nothing else in the backend depends on strict mode.
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

#include "lib/limits.h"
#include "hv/doomed.h"
#include "lib/log.h"
#include "hv/agent_keys.h"
#include "hv/hv.h"
#include "hv/proc_helper.h"
#include "hv/xen/xen_state.h"
#include "hv/fowatch/owner.h"
#include "hv/notify_flood.h"

#define XEN_MAX_MEMBERS    (FO_MAX_PAIRS * 2)
#define DOM0_ID            0u     /* the daemon runs in the control domain */

#define READY_MAX_HEX      FO_AGENT_READY_MAX_HEX
#define VALUE_MAX          64     /* role / command strings */
#define REASON_MAX         160

/* Tokens of our xenstore watches. */
#define TOKEN_RELEASE      "fo-release"
#define TOKEN_INTRODUCE    "fo-introduce"
#define TOKEN_MEMBER       "fo-member-"

/* Xen's log lines into ours (xtl.c). */
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

/* A domain we watch for its agent, and what we hold of it (agent.c). */
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
	/* Notifications over the budget leave the port masked and the page
	 * polled instead (dispatch.c, hv/notify_flood.h); reset per binding. */
	struct fo_notify_flood flood;
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

/* What the three helper threads (reader, writer, builder) share: the
 * thread, the lock and condition its queues live under, the stop flag, and
 * the eventfd that tells the loop results are waiting (threads.c). */
struct xen_helper {
	pthread_t thread;
	bool running;
	int event_fd;           /* readable when results are waiting */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;              /* under lock */
};

/* The xenstore reader thread (reader.c). */
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
	struct xen_helper h;
	struct xs_handle *xs;   /* the thread's own connection */
	/* under h.lock: */
	unsigned outstanding;   /* queued + being read + unconsumed results */
	struct reader_req req[READER_QUEUE];
	size_t n_req;
	struct reader_res res[READER_QUEUE];
	size_t n_res;
};

/* The xenstore writer thread (writer.c). */
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

/* The builder thread and its libxl helper process (builder.c). */
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
	struct fo_proc_helper proc; /* where libxl runs; see builder.c */
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

/* The backend: one per daemon, made by fo_hv_xen_new (backend.c). */
struct xen_hv {
	struct fo_hv base;

	/* Test-only fault injection (FAILOVERD_TEST_HOLD_AFTER_PAUSE_US): a
	 * pause that takes this long to return, so a lab scenario can kill the
	 * daemon between "active paused" and "standby unpaused". It sleeps,
	 * so the lab's witness can run inside the window. 0 in use. */
	uint64_t test_hold_after_pause_ns;

	struct xen_logger log_xen;    /* libxc, libxl, libxencall */
	struct xen_logger log_guest;  /* libxengnttab, libxenevtchn */
	struct fo_ratelimit guest_rl;
	struct fo_ratelimit flood_rl;   /* "domain N floods its heartbeat channel" */

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
	struct fo_doomed doomed;
	uint64_t next_gen;

	/* Xen's failover watch as the pairs' armed owner (fowatch.c), when
	 * fo_hv_xen_enable_fowatch found it: base.fowatch then points at
	 * fowatch and base.ops at ops_fowatch, xen_ops with the kernel_* ops
	 * of the watch. */
	evtchn_port_t fowatch_virq_port; /* VIRQ_FAILOVER, on xce */
	struct fo_fowatch_owner fowatch;
	struct fo_hv_ops ops_fowatch;

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

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline bool domid_is_valid(fo_domid_t domid)
{
	return domid < DOMID_FIRST_RESERVED;
}

/* xtl.c */
void xen_logger_init(struct xen_logger *lg, struct fo_ratelimit *rl);

/* domctl.c: domain actions, and the preallocated domctl they use */
void xen_fast_path_init(struct xen_hv *x);
int xen_domctl_fast(struct xen_hv *x, uint32_t cmd, fo_domid_t domid);
/* A domctl with `len` bytes of its union in and out (the failover watch's,
 * which the stock headers do not know): the preallocated buffer when there
 * is one, libxenctrl otherwise. */
int xen_domctl_union(struct xen_hv *x, uint32_t cmd, fo_domid_t domid, void *u, size_t len);
int xen_get_dominfo(struct xen_hv *x, fo_domid_t domid, bool *ret_found, xen_domctl_getdomaininfo_t *ret_info);
bool xen_doomed_has(const struct xen_hv *x, fo_domid_t domid);
bool xen_doomed_add(struct xen_hv *x, fo_domid_t domid);
void xen_doomed_remove(struct xen_hv *x, fo_domid_t domid);
uint64_t xen_now_ns(struct fo_hv *hv);
int xen_lookup(struct fo_hv *hv, const char *name, fo_domid_t *ret_domid);
int xen_get_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state);
int xen_get_handle(struct fo_hv *hv, fo_domid_t domid, uint8_t ret[16]);
int xen_pause(struct fo_hv *hv, fo_domid_t domid);
int xen_unpause(struct fo_hv *hv, fo_domid_t domid);

/* placement.c */
int xen_set_affinity(struct fo_hv *hv, fo_domid_t domid, const int *pcpus, size_t n_pcpus);
int xen_cpupool_ensure(struct fo_hv *hv, const char *name, const char *sched, const struct fo_cpumask *cpus,
		       char *why, size_t whylen);
int xen_cpupool_get(struct fo_hv *hv, const char *name, struct fo_hv_pool *ret);
int xen_cpupool_move(struct fo_hv *hv, fo_domid_t domid, const char *name);
int xen_get_placement(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_placement *ret);
int xen_pin_vcpu(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const struct fo_cpumask *m);

/* agent.c: members, their agents' bindings, lent channels */
struct xen_member *xen_member_find(struct xen_hv *x, fo_domid_t domid);
struct xen_member *xen_member_by_port(struct xen_hv *x, evtchn_port_t port);
void xen_member_detach(struct xen_hv *x, struct xen_member *m);
/* poll_fd ticks at the shortest interval its members need (agent.c). */
void xen_poll_timer_arm(struct xen_hv *x);
int xen_watch_member(struct fo_hv *hv, fo_domid_t domid);
void xen_unwatch_member(struct fo_hv *hv, fo_domid_t domid);
int xen_lend_channel(struct fo_hv *hv, fo_domid_t domid, uint32_t poll_ms, uint32_t *port);
void xen_reclaim_channel(struct fo_hv *hv, fo_domid_t domid);
void xen_dispatch_xenstore(struct xen_hv *x);
void xen_dispatch_reader(struct xen_hv *x);
void xen_dispatch_retry_timer(struct xen_hv *x);

/* fowatch.c */
int xen_agent_page(struct fo_hv *hv, fo_domid_t domid, uint32_t *ret_gref, uint32_t *ret_port);
/* True (and handled) if `port` is VIRQ_FAILOVER's. */
bool xen_fowatch_port(struct xen_hv *x, evtchn_port_t port);

/* dispatch.c */
size_t xen_get_fds(struct fo_hv *hv, int *fds, size_t max);
bool xen_fd_is_rt(struct fo_hv *hv, int fd);
bool xen_fds_changed(struct fo_hv *hv);
void xen_dispatch(struct fo_hv *hv, int fd);
void xen_heartbeat_look(struct fo_hv *hv, fo_domid_t domid);

/* threads.c: what the reader, writer and builder threads share */
int xen_start_helper_thread(pthread_t *thread, void *(*fn)(void *), void *arg, int unblocked_signo);
void xen_helper_init(struct xen_helper *h);
int xen_helper_start(struct xen_helper *h, void *(*fn)(void *), void *arg, int unblocked_signo);
void xen_helper_join(struct xen_helper *h);
void xen_helper_destroy(struct xen_helper *h);
void xen_helper_post(struct xen_helper *h);
void xen_helper_clear(struct xen_helper *h);

/* reader.c */
void xen_reader_init(struct xen_reader *rd);
int xen_reader_start(struct xen_reader *rd);
void xen_reader_stop(struct xen_reader *rd);
bool xen_reader_request(struct xen_reader *rd, fo_domid_t domid, uint64_t gen);
size_t xen_reader_collect(struct xen_reader *rd, struct reader_res *out);
void xen_agent_keys_free(struct agent_keys *k);

/* writer.c */
void xen_writer_init(struct xen_writer *w);
int xen_writer_start(struct xen_writer *w);
void xen_writer_stop(struct xen_writer *w);
int xen_set_role(struct fo_hv *hv, fo_domid_t domid, const char *role);
int xen_agent_command(struct fo_hv *hv, fo_domid_t domid, const char *cmd);
void xen_dispatch_writer(struct xen_hv *x);

/* builder.c */
void xen_builder_init(struct xen_builder *b);
int xen_builder_fork(struct xen_builder *b);
int xen_builder_start(struct xen_builder *b);
void xen_builder_stop(struct xen_builder *b);
int xen_create(struct fo_hv *hv, const char *config_path);
int xen_destroy(struct fo_hv *hv, fo_domid_t domid);
void xen_dispatch_builder(struct xen_hv *x);
int xen_libxl_rc_to_errno(int rc);
const char *xen_libxl_rc_name(int rc);

/* xlcfg.c */
int xen_xl_config_load(const char *path, libxl_domain_config *dc, char *reason, size_t rlen);

#endif
