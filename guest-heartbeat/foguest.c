/* SPDX-License-Identifier: MIT */
/*
 * foguest.c - libfoguest (see foguest.h and foguest(3)).
 *
 * What it shares with dom0:
 *   heartbeat page   1 page, read-only for dom0 (abi/fo_heartbeat.h)
 *   event channel    unbound for dom0; notified on every beat
 *   state-out        FO_ST_REGION_PAGES pages, read-only for dom0: our commits
 *   state-in         FO_ST_REGION_PAGES pages, writable by dom0: the peer's
 *                    state, copied there by failoverd's relay
 * and publishes their references under /local/domain/<self>/data/failover/
 * in one transaction, `ready` last (dom0 follows `ready`).
 *
 * One thread of our own follows `role` and `control` (drills) on its own
 * /dev/xen/xenbus descriptor, speaking the wire protocol itself: Debian's
 * static libxenstore.a is built without USE_PTHREAD, and in that mode a
 * request whose reply arrives after a watch event (xenstored fires every new
 * watch once, often before the XS_WATCH reply) fails with EINVAL and closes
 * the connection. Publishing and withdrawing go through libxenstore on a
 * handle that carries no watches.
 *
 * The thread that follows `role` and `control` (and speaks the xenbus
 * wire protocol) is foguest_watch.c; struct foguest, which both read and
 * write, is foguest_impl.h's. What the two files share beyond the public
 * and foguest_internal.h's API is hidden (visibility), so libfoguest.so
 * exports the same symbols as when this was one file. Its sections
 * (xenstore, heartbeat, state, lifecycle) are marked below.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>

#include "abi/fo_heartbeat.h"
#include "abi/fo_state.h"
#include "foguest_impl.h"

/* ------------------------------------------------------------------ utils */

static void vlog(struct foguest *g, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (g->opt.log)
		g->opt.log(g->opt.ctx, line);
	else
		fprintf(stderr, "%s: %s\n", g->prefix, line);
}

void foguest__log(struct foguest *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(g, fmt, ap);
	va_end(ap);
}

static uint64_t random_u64(struct foguest *g)
{
	uint64_t v = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		glog(g, "warning: /dev/urandom unusable (%s), boot_id from the clock", strerror(errno));
		v = mono_ns() ^ ((uint64_t)getpid() << 32);
	}
	if (fd >= 0)
		close(fd);
	return v ? v : 1;
}

const char *foguest_role_name(enum foguest_role r)
{
	switch (r) {
	case FOGUEST_ROLE_ACTIVE: return "active";
	case FOGUEST_ROLE_STANDBY: return "standby";
	default: return "unknown";
	}
}

const char *foguest_restore_name(enum foguest_restore r)
{
	switch (r) {
	case FOGUEST_RESTORE_OK: return "ok";
	case FOGUEST_RESTORE_NONE: return "no state";
	case FOGUEST_RESTORE_CORRUPT: return "corrupt";
	case FOGUEST_RESTORE_TOO_OLD: return "too old";
	case FOGUEST_RESTORE_TOO_BIG: return "too big for the buffer";
	}
	return "?";
}

/* ---------------------------------------------------------------- xenstore */

static bool xs_write_in(struct foguest *g, struct xs_handle *h, xs_transaction_t t, const char *key,
			const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), "%s%s", g->base_path, key);
	return xs_write(h, t, path, value, (unsigned)strlen(value));
}

static void refs_format(const uint32_t *refs, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < FO_ST_REGION_PAGES && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%" PRIu32, i ? " " : "", refs[i]);
}

int foguest__publish(struct foguest *g, void *xs_handle, const char *gref_s, const char *port_s,
		     const char *ready_s)
{
	struct xs_handle *h = xs_handle ? xs_handle : g->xs;
	char abi_s[16], g_s[16], p_s[16], r_s[20], out_s[16 * FO_ST_REGION_PAGES], in_s[16 * FO_ST_REGION_PAGES];
	int attempt;

	snprintf(abi_s, sizeof(abi_s), "%u", FO_HB_ABI_VERSION);
	snprintf(g_s, sizeof(g_s), "%" PRIu32, g->gref);
	snprintf(p_s, sizeof(p_s), "%" PRIu32, (uint32_t)g->port);
	snprintf(r_s, sizeof(r_s), "%016" PRIx64, g->boot_id);
	if (g->st_out) {
		refs_format(g->st_out_refs, out_s, sizeof(out_s));
		refs_format(g->st_in_refs, in_s, sizeof(in_s));
	}
	for (attempt = 0; attempt < 16; attempt++) {
		xs_transaction_t t = xs_transaction_start(h);
		bool ok;

		if (t == XBT_NULL)
			return -errno;
		ok = xs_write_in(g, h, t, FO_HB_XS_GREF, gref_s ? gref_s : g_s) &&
		     xs_write_in(g, h, t, FO_HB_XS_PORT, port_s ? port_s : p_s) &&
		     xs_write_in(g, h, t, FO_HB_XS_ABI, abi_s);
		if (ok && g->st_out)
			ok = xs_write_in(g, h, t, FO_ST_XS_OUT, out_s) && xs_write_in(g, h, t, FO_ST_XS_IN, in_s);
		if (ok)
			ok = xs_write_in(g, h, t, FO_HB_XS_READY, ready_s ? ready_s : r_s);
		if (!ok) {
			int err = -errno;

			xs_transaction_end(h, t, true);
			return err;
		}
		if (xs_transaction_end(h, t, false))
			return 0;
		if (errno != EAGAIN)
			return -errno;
	}
	return -EAGAIN;
}

static void withdraw(struct foguest *g)
{
	static const char *const keys[] = { FO_HB_XS_READY, FO_HB_XS_GREF, FO_HB_XS_PORT, FO_HB_XS_ABI,
					    FO_ST_XS_OUT, FO_ST_XS_IN };
	char path[128];
	size_t i;

	/* ready first: it is what dom0 follows */
	for (i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
		if (i >= 4 && !g->st_out)
			break;
		snprintf(path, sizeof(path), "%s%s", g->base_path, keys[i]);
		xs_rm(g->xs, XBT_NULL, path);
	}
}

/* -------------------------------------------------------------- heartbeat */

void foguest__page_init(struct foguest *g)
{
	volatile struct fo_hb_page *p = g->page;

	memset((void *)p, 0, FO_HB_PAGE_SIZE);
	p->magic = FO_HB_MAGIC;
	p->abi_version = FO_HB_ABI_VERSION;
	p->period_ms = g->opt.period_ms;
	p->app_status = FO_HB_APP_UNKNOWN;
	p->boot_id = g->boot_id;
	atomic_thread_fence(memory_order_release);
}

int foguest__notify(struct foguest *g)
{
	if (xenevtchn_notify(g->xce, g->port) < 0) {
		int err = -errno;

		if (g->notify_errors++ < 10)
			glog(g, "notify: %s", strerror(errno));
		return err;
	}
	return 0;
}

/* Write the page for this beat and publish it (no drill check). */
static void beat_publish(struct foguest *g, int ctl, uint64_t cycle, unsigned flags, uint32_t hb_flags)
{
	volatile struct fo_hb_page *p = g->page;
	uint32_t status = FO_HB_APP_UNKNOWN;

	if (flags & FOGUEST_BEAT_UNHEALTHY)
		status = FO_HB_APP_UNHEALTHY;
	else if (flags & FOGUEST_BEAT_HEALTHY)
		status = FO_HB_APP_HEALTHY;
	if (ctl == FOGUEST_CTL_UNHEALTHY)
		status = FO_HB_APP_UNHEALTHY;
	if (flags & FOGUEST_BEAT_DEADLINE_MISS)
		g->deadline_misses++;
	g->last_flags = flags & (FOGUEST_BEAT_HEALTHY | FOGUEST_BEAT_UNHEALTHY);

	p->app_status = status;
	p->flags = hb_flags | (ctl != FOGUEST_CTL_NONE ? FO_HB_FLAG_DRILL : 0);
	p->ext_magic = FO_HB_EXT_MAGIC;
	p->ext_version = FO_HB_EXT_VERSION;
	p->app_cycle = cycle;
	p->app_flags = (flags & FOGUEST_BEAT_DEADLINE_MISS) ? FO_HB_APP_F_DEADLINE_MISS : 0;
	p->deadline_misses = g->deadline_misses;
	p->restored_cycle = g->restored_cycle;
	p->restore_result = g->restore_result;
	/* Everything above is visible before the new sequence (ABI rule). */
	atomic_thread_fence(memory_order_release);
	p->sequence = ++g->seq;
	foguest__notify(g);
}

/* garbage-page (TEST): every byte, the sequence too. */
static void garbage_page(struct foguest *g)
{
	foguest__garble_page(g->page, &g->garbage_seed);
	g->page_garbled = true;
}

/*
 * regrant (TEST), first half, on the beat's thread (the page's only
 * writer; it may block on gntalloc and xenstore, which a test command may
 * do): grant a new page, carry the current one over (a garbled one starts
 * afresh) and write there from now on. Same boot_id and sequence: to dom0
 * this is the same agent on another page, not a restart. Returns the old
 * page (NULL: nothing moved), its gref in *old_ref.
 */
static volatile struct fo_hb_page *regrant_begin(struct foguest *g, uint32_t *old_ref)
{
	volatile struct fo_hb_page *old = g->page;
	uint32_t ref;
	void *p = xengntshr_share_pages(g->xgs, DOM0_ID, 1, &ref, 0);

	if (!p) {
		glog(g, "regrant (TEST): cannot share a new page: %s; staying on gref %" PRIu32, strerror(errno),
		     g->gref);
		return NULL;
	}
	*old_ref = g->gref;
	g->page = p;
	g->gref = ref;
	if (g->page_garbled) {
		foguest__page_init(g);
		g->page_garbled = false;
	} else {
		memcpy(p, (const void *)old, FO_HB_PAGE_SIZE);
	}
	return old;
}

static void retire_old_page(struct foguest *g)
{
	if (!g->retiring)
		return;
	xengntshr_unshare(g->xgs, (void *)g->retiring, 1);
	glog(g, "regrant (TEST): old grant %" PRIu32 " released", g->retiring_ref);
	g->retiring = NULL;
}

/* Second half, after this beat wrote the new page (so dom0's first read of
 * it is current): publish it as a restarted agent would (gref, port, ready
 * in one transaction; dom0 follows `ready`), then end the old grant. */
static void regrant_finish(struct foguest *g, volatile struct fo_hb_page *old, uint32_t old_ref)
{
	int r = foguest__publish(g, NULL, NULL, NULL, NULL);

	if (r < 0) {
		/* dom0 still reads the old page: go back to it */
		glog(g, "regrant (TEST): cannot publish gref %" PRIu32 ": %s; back on gref %" PRIu32, g->gref,
		     strerror(-r), old_ref);
		memcpy((void *)old, (const void *)g->page, FO_HB_PAGE_SIZE);
		xengntshr_unshare(g->xgs, (void *)g->page, 1);
		g->page = old;
		g->gref = old_ref;
		return;
	}
	/* Make before break: the old page keeps beating for a while, so that
	 * whoever still reads it (dom0 before it sees the new keys, Xen's
	 * watch until failoverd moves it) sees a live agent, not a heartbeat
	 * loss. Only then is its grant ended. */
	retire_old_page(g);
	g->retiring = old;
	g->retiring_ref = old_ref;
	g->retire_at_ns = mono_ns() + FOGUEST_REGRANT_OVERLAP_NS;
	glog(g, "regrant (TEST): heartbeat page moved from gref %" PRIu32 " to gref %" PRIu32
	     " (port %" PRIu32 " and boot_id kept), published; gref %" PRIu32 " keeps beating for %u s, then its grant ends",
	     old_ref, g->gref, (uint32_t)g->port, old_ref, (unsigned)(FOGUEST_REGRANT_OVERLAP_NS / 1000000000ull));
}

/* Each real beat during the overlap: the old page, a valid copy from the
 * move, gets the new sequence (written last, as a beat writes it). Past
 * the overlap its grant ends: gntalloc ends it on unmap, and while dom0
 * or Xen's watch still maps the page the kernel defers freeing it. */
static void retiring_beat(struct foguest *g, bool beat)
{
	if (!g->retiring)
		return;
	if (mono_ns() >= g->retire_at_ns) {
		retire_old_page(g);
		return;
	}
	if (beat) {
		atomic_thread_fence(memory_order_release);
		g->retiring->sequence = g->page->sequence;
	}
}

int foguest__beat_flags(struct foguest *g, uint64_t cycle, unsigned flags, uint32_t hb_flags)
{
	volatile struct fo_hb_page *old = NULL;
	uint32_t old_ref = 0;
	int ctl, ret = 0;

	if (atomic_load_explicit(&g->regrant, memory_order_relaxed) && atomic_exchange(&g->regrant, false))
		old = regrant_begin(g, &old_ref);
	ctl = atomic_load(&g->control);
	if (ctl == FOGUEST_CTL_FREEZE) {
		/* a hung application: burn the vCPU, answer nothing */
		for (;;)
			__asm__ __volatile__("" ::: "memory");
	}
	if (ctl == FOGUEST_CTL_STUCK) {
		foguest__notify(g);
	} else if (ctl == FOGUEST_CTL_GARBAGE_PAGE) {
		garbage_page(g);
		foguest__notify(g);
	} else if (ctl != FOGUEST_CTL_STOP) {
		if (g->page_garbled) {
			/* back from garbage-page: a fresh page, the sequence carries on */
			foguest__page_init(g);
			g->page_garbled = false;
		}
		beat_publish(g, ctl, cycle, flags, hb_flags);
		ret = 1;
	}
	if (old)
		regrant_finish(g, old, old_ref);
	else
		retiring_beat(g, ret == 1);
	return ret;
}

int foguest_beat(struct foguest *g, uint64_t cycle, unsigned flags)
{
	return foguest__beat_flags(g, cycle, flags, 0);
}

/* ------------------------------------------------------------------ state */

static void garbage_region(struct foguest *g)
{
	volatile uint64_t *w = (volatile uint64_t *)g->st_out;
	size_t i, n = FO_ST_REGION_SIZE / sizeof(uint64_t);

	/* keep the header's magic so the reader looks at the slots */
	for (i = 2; i < n; i += 1 + (i >= FO_ST_PAGE_SIZE / 8 ? 7 : 0))
		w[i] = foguest__xorshift(&g->garbage_seed);
}

int foguest_commit(struct foguest *g, const void *buf, size_t len, uint64_t cycle)
{
	if (!g->st_out)
		return -EOPNOTSUPP;
	if (len == 0 || len > FOGUEST_STATE_MAX)
		return -EINVAL;
	if (atomic_load_explicit(&g->garbage_state, memory_order_relaxed)) {
		garbage_region(g);
		return 0;
	}
	if (fo_st_commit(g->st_out, &g->w, buf, len, cycle) < 0)
		return -EINVAL;
	atomic_store_explicit(&g->last_commit_cycle, cycle, memory_order_relaxed);
	return 0;
}

enum foguest_restore foguest_restore(struct foguest *g, void *buf, size_t cap, uint64_t max_age_cycles,
				     struct foguest_restore_info *info)
{
	const volatile struct fo_st_header *h;
	struct foguest_restore_info dummy;
	struct fo_st_found f;
	enum fo_st_result r;
	enum foguest_restore res;
	int tries = 0;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	if (!g->st_in) {
		res = FOGUEST_RESTORE_NONE;
		goto out;
	}
	h = (const volatile struct fo_st_header *)g->st_in;
	/* dom0 may be copying right now: a torn read is retried a few times */
	do
		r = fo_st_read(g->st_in, g->st_buf, &f);
	while (r == FO_ST_TORN && ++tries < 100);
	info->src_last_cycle = h->src_last_cycle;
	info->src_domid = h->src_domid;
	if (r == FO_ST_NONE || r == FO_ST_TORN) {
		res = FOGUEST_RESTORE_NONE;
		goto out;
	}
	if (r == FO_ST_CORRUPT) {
		info->why = f.why;
		res = FOGUEST_RESTORE_CORRUPT;
		goto out;
	}
	info->cycle = f.cycle;
	info->len = f.len;
	info->age_cycles = info->src_last_cycle > f.cycle ? info->src_last_cycle - f.cycle : 0;
	if (max_age_cycles && info->age_cycles > max_age_cycles) {
		res = FOGUEST_RESTORE_TOO_OLD;
		goto out;
	}
	if (f.len > cap) {
		res = FOGUEST_RESTORE_TOO_BIG;
		goto out;
	}
	memcpy(buf, g->st_buf, f.len);
	res = FOGUEST_RESTORE_OK;
out:
	g->restored_cycle = res == FOGUEST_RESTORE_OK ? info->cycle : 0;
	g->restore_result = res == FOGUEST_RESTORE_TOO_BIG ? FO_HB_RESTORE_CORRUPT : (uint32_t)res;
	return res;
}

/* ------------------------------------------------------------------- role */

enum foguest_role foguest_role(struct foguest *g)
{
	uint64_t v;

	while (read(g->role_efd, &v, sizeof(v)) > 0)
		;
	return (enum foguest_role)atomic_load(&g->role);
}

int foguest_role_fd(struct foguest *g)
{
	return g->role_efd;
}

/* -------------------------------------------------------------- accessors */

unsigned foguest_role_epoch(const struct foguest *g) { return atomic_load(&((struct foguest *)g)->role_epoch); }
unsigned foguest_domid(const struct foguest *g) { return g->domid; }
uint64_t foguest_sequence(const struct foguest *g) { return g->seq; }
int foguest__control(const struct foguest *g) { return atomic_load(&((struct foguest *)g)->control); }
volatile struct fo_hb_page *foguest__page(struct foguest *g) { return g->page; }
uint32_t foguest__gref(const struct foguest *g) { return g->gref; }
uint32_t foguest__port(const struct foguest *g) { return (uint32_t)g->port; }
uint64_t foguest__boot_id(const struct foguest *g) { return g->boot_id; }
const char *foguest__base_path(const struct foguest *g) { return g->base_path; }

/* -------------------------------------------------------------- lifecycle */

static void release(struct foguest *g)
{
	if (g->thread_started) {
		pthread_cancel(g->thread);
		pthread_join(g->thread, NULL);
	}
	if (g->xce)
		xenevtchn_close(g->xce); /* closes the port */
	if (g->st_in)
		xengntshr_unshare(g->xgs, (void *)g->st_in, FO_ST_REGION_PAGES);
	if (g->st_out)
		xengntshr_unshare(g->xgs, (void *)g->st_out, FO_ST_REGION_PAGES);
	if (g->page)
		xengntshr_unshare(g->xgs, (void *)g->page, 1);
	if (g->xgs)
		xengntshr_close(g->xgs);
	if (g->xs)
		xs_close(g->xs);
	if (g->role_efd >= 0)
		close(g->role_efd);
	free(g->st_buf);
	free(g);
}

int foguest_open(const struct foguest_options *opt, struct foguest **ret)
{
	struct foguest *g;
	xenevtchn_port_or_error_t p;
	pthread_attr_t attr;
	unsigned long self;
	char *domid_s;
	int r;

	if (!opt || opt->period_ms < 1 || opt->period_ms > 60000)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->opt = *opt;
	g->prefix = opt->log_prefix ? opt->log_prefix : "foguest";
	g->role_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (g->role_efd < 0) {
		r = -errno;
		goto fail;
	}

	g->xs = xs_open(0);
	if (!g->xs) {
		r = -errno;
		glog(g, "cannot open xenstore: %s (is /dev/xen/xenbus there?)", strerror(errno));
		goto fail;
	}
	domid_s = xs_read(g->xs, XBT_NULL, "domid", NULL);
	if (!domid_s || !foguest__parse_uint(domid_s, 1, DOMID_FIRST_RESERVED - 1, &self)) {
		r = domid_s ? -EINVAL : -errno;
		glog(g, "cannot learn our domid from xenstore \"domid\": %s",
		     domid_s ? "not a number" : strerror(errno));
		free(domid_s);
		goto fail;
	}
	free(domid_s);
	g->domid = (unsigned)self;
	snprintf(g->base_path, sizeof(g->base_path), "/local/domain/%lu/", self);

	g->xgs = xengntshr_open(NULL, 0);
	if (!g->xgs) {
		r = -errno;
		glog(g, "cannot open gntshr: %s (xen-gntalloc loaded?)", strerror(errno));
		goto fail;
	}
	/* writable = 0: dom0 can only map the page read-only */
	g->page = xengntshr_share_pages(g->xgs, DOM0_ID, 1, &g->gref, 0);
	if (!g->page) {
		r = -errno;
		glog(g, "cannot share a page with dom0: %s", strerror(errno));
		goto fail;
	}
	if (opt->flags & FOGUEST_F_STATE) {
		g->st_buf = malloc(FO_ST_SLOT_SIZE);
		/* out: read-only for dom0; in: dom0 writes the peer's state there */
		g->st_out = xengntshr_share_pages(g->xgs, DOM0_ID, FO_ST_REGION_PAGES, g->st_out_refs, 0);
		g->st_in = g->st_out ? xengntshr_share_pages(g->xgs, DOM0_ID, FO_ST_REGION_PAGES, g->st_in_refs, 1)
				     : NULL;
		if (!g->st_buf || !g->st_out || !g->st_in) {
			r = g->st_buf ? -errno : -ENOMEM;
			glog(g, "cannot share the state regions (%u pages each) with dom0: %s", FO_ST_REGION_PAGES,
			     strerror(-r));
			goto fail;
		}
	}
	g->xce = xenevtchn_open(NULL, 0);
	if (!g->xce) {
		r = -errno;
		glog(g, "cannot open event channels: %s (xen-evtchn loaded?)", strerror(errno));
		goto fail;
	}
	p = xenevtchn_bind_unbound_port(g->xce, DOM0_ID);
	if (p < 0) {
		r = -errno;
		glog(g, "cannot allocate an event channel for dom0: %s", strerror(errno));
		goto fail;
	}
	g->port = (evtchn_port_t)p;

	g->boot_id = random_u64(g);
	g->garbage_seed = g->boot_id ^ 0x9e3779b97f4a7c15ull;
	foguest__page_init(g);
	if (g->st_out) {
		fo_st_init(g->st_out, g->boot_id);
		fo_st_init(g->st_in, 0); /* nothing handed over yet */
	}
	if (!(opt->flags & FOGUEST_F_NO_PUBLISH)) {
		r = foguest__publish(g, NULL, NULL, NULL, NULL);
		if (r < 0) {
			glog(g, "cannot publish under %s%s: %s", g->base_path, FO_HB_XS_DIR, strerror(-r));
			goto fail;
		}
	}

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	r = pthread_create(&g->thread, &attr, foguest__watcher_thread, g);
	pthread_attr_destroy(&attr);
	if (r) {
		glog(g, "cannot start the xenstore thread: %s", strerror(r));
		r = -r;
		if (!(opt->flags & FOGUEST_F_NO_PUBLISH))
			withdraw(g);
		goto fail;
	}
	g->thread_started = true;
	*ret = g;
	return 0;
fail:
	release(g);
	return r;
}

void foguest_close(struct foguest *g)
{
	if (!g)
		return;
	/* Tell dom0 this is an orderly exit (whatever drill is in force),
	 * then withdraw the keys. */
	if (g->page_garbled)
		foguest__page_init(g);
	beat_publish(g, atomic_load(&g->control), g->page->app_cycle, g->last_flags, FO_HB_FLAG_STOPPING);
	withdraw(g);
	retire_old_page(g);
	release(g);
}
