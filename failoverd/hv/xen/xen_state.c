/* SPDX-License-Identifier: MIT */
/*
 * xen_state.c - the state relay's Xen side (see xen_state.h): how a
 * member's regions are found (its xenstore keys, watched), mapped (grant
 * references, out read-only, in writable) and given back (at once when the
 * domain is dying or gone: @releaseDomain), for the relay thread of
 * hv/state_relay.c, which holds the logic (validating, copying, counting,
 * takeovers) and is unit-tested without Xen.
 *
 * Keys: a member's keys are read at most RELAY_KEY_READS times per second
 * (hv/state_relay.c), and watched through its `ready` key.
 */
#include "hv/xen/xen_state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifdef __STRICT_ANSI__
#undef __STRICT_ANSI__
#endif
#include <xenctrl.h>
#include <xengnttab.h>
#include <xenstore.h>

#include "../../../guest-heartbeat/abi/fo_state.h"
#include "hv/state_relay.h"
#include "lib/log.h"

#define GREF_FIRST_GUEST  8u
#define TOKEN_READY       "fo-state-"
#define TOKEN_RELEASE     "fo-state-release"

/* The Xen side of one relay member (by the relay's slot). */
struct xen_relay_slot {
	char token[32];           /* "" while the slot is free */
	bool watched;
	struct fo_ratelimit rl;
};

struct xen_state_relay {
	struct fo_state_relay *relay;
	xengnttab_handle *xgt;
	xc_interface *xch;
	struct xs_handle *xs;
	struct xen_relay_slot slot[FO_STATE_RELAY_MEMBERS]; /* relay thread only */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------- the loop's side */

void xen_state_relay_pair(struct xen_state_relay *r, const char *pair, fo_domid_t active, fo_domid_t standby,
			  bool serving)
{
	if (r)
		fo_state_relay_pair(r->relay, pair, active, standby, serving);
}

void xen_state_relay_set_stream(struct xen_state_relay *r, const struct fo_hv_state_stream *hooks, void *ctx)
{
	if (r)
		fo_state_relay_set_stream(r->relay, hooks, ctx);
}

void xen_state_relay_beat(struct xen_state_relay *r, fo_domid_t domid, const struct fo_hb_page *page)
{
	if (r)
		fo_state_relay_beat(r->relay, domid, page);
}

void xen_state_relay_forget(struct xen_state_relay *r, fo_domid_t domid)
{
	if (r)
		fo_state_relay_forget(r->relay, domid);
}

bool xen_state_relay_info(struct xen_state_relay *r, fo_domid_t domid, struct fo_hv_state_info *ret)
{
	return r && fo_state_relay_info(r->relay, domid, ret);
}

/* ------------------------------------------------------------- the relay thread's side */

/* "r0 r1 ... r8": exactly FO_ST_REGION_PAGES strict decimal refs, none reserved. */
static bool parse_refs(const char *s, uint32_t *refs)
{
	unsigned n = 0;

	if (!s)
		return false;
	while (*s) {
		uint64_t v = 0;
		const char *start = s;

		if (n == FO_ST_REGION_PAGES || *s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9') {
			v = v * 10 + (uint64_t)(*s - '0');
			if (v > UINT32_MAX)
				return false;
			s++;
		}
		if ((*start == '0' && s - start > 1) || v < GREF_FIRST_GUEST)
			return false;
		refs[n++] = (uint32_t)v;
		if (*s == ' ')
			s++;
		else if (*s)
			return false;
	}
	return n == FO_ST_REGION_PAGES;
}

static char *read_key(struct xen_state_relay *x, fo_domid_t domid, const char *key)
{
	char path[96];
	unsigned len;

	snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, key);
	return xs_read(x->xs, XBT_NULL, path, &len);
}

static int xen_event_fd(void *ctx)
{
	return xs_fileno(((struct xen_state_relay *)ctx)->xs);
}

/* Watches fired: a member's `ready` (map it afresh), @releaseDomain. */
static bool xen_events(void *ctx, struct fo_state_relay *relay)
{
	struct xen_state_relay *x = ctx;
	bool released = false;
	char **vec;
	unsigned i;

	while ((vec = xs_check_watch(x->xs)) != NULL) {
		const char *tok = vec[XS_WATCH_TOKEN];

		if (!strcmp(tok, TOKEN_RELEASE))
			released = true;
		else
			for (i = 0; i < FO_STATE_RELAY_MEMBERS; i++)
				if (x->slot[i].token[0] && !strcmp(x->slot[i].token, tok))
					fo_state_relay_dirty(relay, i);
		free(vec);
	}
	return released;
}

/* Map what the member publishes now (or nothing). */
static bool xen_map(void *ctx, unsigned slot, fo_domid_t domid, volatile void **out, volatile void **in)
{
	struct xen_state_relay *x = ctx;
	struct xen_relay_slot *xs = &x->slot[slot];
	uint32_t out_refs[FO_ST_REGION_PAGES], in_refs[FO_ST_REGION_PAGES];
	char *out_s, *in_s, *ready;
	bool ok;

	if (!xs->token[0]) { /* a new member in this slot */
		snprintf(xs->token, sizeof(xs->token), TOKEN_READY "%" PRIu32, domid);
		xs->watched = false;
		xs->rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(10000, 3);
	}
	if (!xs->watched) {
		char path[96];

		snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, FO_HB_XS_READY);
		xs->watched = xs_watch(x->xs, path, xs->token);
	}
	ready = read_key(x, domid, FO_HB_XS_READY);
	out_s = read_key(x, domid, FO_ST_XS_OUT);
	in_s = read_key(x, domid, FO_ST_XS_IN);
	*out = *in = NULL;
	ok = ready && parse_refs(out_s, out_refs) && parse_refs(in_s, in_refs);
	if (ok) {
		*out = xengnttab_map_domain_grant_refs(x->xgt, FO_ST_REGION_PAGES, domid, out_refs, PROT_READ);
		*in = xengnttab_map_domain_grant_refs(x->xgt, FO_ST_REGION_PAGES, domid, in_refs,
						      PROT_READ | PROT_WRITE);
		if (!*out || !*in) {
			if (fo_ratelimit_ok(&xs->rl, mono_ns()))
				fo_warn("xen: state relay: dom%" PRIu32 ": cannot map its state regions: %s", domid,
					strerror(errno));
			if (*out)
				xengnttab_unmap(x->xgt, (void *)*out, FO_ST_REGION_PAGES);
			if (*in)
				xengnttab_unmap(x->xgt, (void *)*in, FO_ST_REGION_PAGES);
			*out = *in = NULL;
			ok = false;
		} else {
			fo_info("xen: state relay: dom%" PRIu32 ": state regions mapped (out read-only, in writable)",
				domid);
		}
	} else if (out_s || in_s) {
		if (fo_ratelimit_ok(&xs->rl, mono_ns()))
			fo_warn("xen: state relay: dom%" PRIu32 ": bad %s/%s keys: ignored", domid, FO_ST_XS_OUT,
				FO_ST_XS_IN);
	}
	free(ready);
	free(out_s);
	free(in_s);
	return ok;
}

static void xen_unmap(void *ctx, volatile void *out, volatile void *in)
{
	struct xen_state_relay *x = ctx;

	if (out)
		xengnttab_unmap(x->xgt, (void *)out, FO_ST_REGION_PAGES);
	if (in)
		xengnttab_unmap(x->xgt, (void *)in, FO_ST_REGION_PAGES);
}

static void xen_drop(void *ctx, unsigned slot, fo_domid_t domid)
{
	struct xen_state_relay *x = ctx;
	struct xen_relay_slot *xs = &x->slot[slot];
	char path[96];

	if (xs->watched) {
		snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, FO_HB_XS_READY);
		xs_unwatch(x->xs, path, xs->token);
	}
	xs->watched = false;
	xs->token[0] = '\0';
}

static bool xen_alive(void *ctx, fo_domid_t domid)
{
	struct xen_state_relay *x = ctx;
	xc_domaininfo_t info;

	return xc_domain_getinfolist(x->xch, domid, 1, &info) == 1 && info.domain == domid &&
	       !(info.flags & XEN_DOMINF_dying);
}

static const struct fo_state_relay_ops xen_relay_ops = {
	.name = "xen",
	.event_fd = xen_event_fd,
	.events = xen_events,
	.map = xen_map,
	.unmap = xen_unmap,
	.drop = xen_drop,
	.alive = xen_alive,
};

/* ------------------------------------------------------------- lifecycle */

int xen_state_relay_new(int (*start_thread)(pthread_t *t, void *(*fn)(void *), void *arg, int signo),
			struct xen_state_relay **ret)
{
	struct xen_state_relay *x = calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return -ENOMEM;
	x->xgt = xengnttab_open(NULL, 0);
	x->xch = xc_interface_open(NULL, NULL, 0);
	x->xs = xs_open(0);
	if (!x->xgt || !x->xch || !x->xs) {
		rc = errno ? -errno : -EIO;
		goto fail;
	}
	/* A domain's regions: up to 2 x FO_ST_REGION_PAGES per member. */
	xengnttab_set_max_grants(x->xgt, FO_STATE_RELAY_MEMBERS * 2 * FO_ST_REGION_PAGES);
	if (!xs_watch(x->xs, "@releaseDomain", TOKEN_RELEASE)) {
		rc = -errno;
		goto fail;
	}
	rc = fo_state_relay_new(&xen_relay_ops, x, start_thread, &x->relay);
	if (rc < 0)
		goto fail;
	*ret = x;
	return 0;
fail:
	xen_state_relay_free(x);
	return rc;
}

void xen_state_relay_free(struct xen_state_relay *x)
{
	if (!x)
		return;
	/* the thread stops first: it gives every mapping and watch back
	 * through the handles closed below */
	fo_state_relay_free(x->relay);
	if (x->xs)
		xs_close(x->xs);
	if (x->xch)
		xc_interface_close(x->xch);
	if (x->xgt)
		xengnttab_close(x->xgt);
	free(x);
}
