/* SPDX-License-Identifier: MIT */
/*
 * state_relay.c - the state relay's thread and logic (see state_relay.h);
 * the backend's part (finding and mapping regions, watches, liveness) comes
 * through fo_state_relay_ops.
 *
 * One thread. It wakes when the loop posts a heartbeat or new roles (an
 * eventfd), when the backend has events (its descriptor: a member's keys
 * or a domain changed), and at least every RELAY_IDLE_MS. Each pass, for
 * each pair: validate the active's state-out (fo_st_read on a private copy:
 * bounds, seqlock, CRC32C) and, if it holds a newer commit, re-commit it
 * into the standby's state-in with the active's newest cycle (for the
 * standby's "too old" test). Nothing the active writes can make the relay
 * block, loop, read out of bounds or hand the standby an invalid or older
 * state.
 *
 * Mappings: a member's two regions are mapped when it is dirty (new, or
 * its keys changed: at most RELAY_KEY_READS attempts per second), and
 * unmapped when it publishes others, when the loop forgets it, and as soon
 * as the domain is dying or gone, so a destroyed domain does not linger as
 * a zombie because of us.
 */
#include "hv/state_relay.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-heartbeat/abi/fo_state.h"
#include "lib/log.h"

#define RELAY_MEMBERS     FO_STATE_RELAY_MEMBERS
#define RELAY_IDLE_MS     100
#define RELAY_KEY_READS   5u      /* per member per second */

struct relay_member {
	bool in_use;
	fo_domid_t domid;
	bool dirty;               /* to be mapped afresh */
	uint64_t window_start;
	unsigned reads;
	volatile void *out, *in;  /* FO_ST_REGION_PAGES each */
	struct fo_st_relay rs;    /* relaying into `in` */
	fo_domid_t rs_src;        /* whose state rs has been copying */
	uint64_t app_cycle;       /* newest heartbeat cycle (copied from the shared table) */
	uint64_t rejected;
	struct fo_ratelimit rl;
	/* the last takeover by this member */
	bool takeover;
	uint64_t takeover_ns;
	uint64_t handed_cycle, old_last_cycle;
	bool takeover_streamed;
	/* the state stream: this member as a pair's standby fed from the
	 * other host ... */
	bool streamed;            /* rs writes the stream's states (rs_src is no domain) */
	uint64_t stream_arrival;  /* the stream's arrival number last written */
	uint64_t stream_peer_cycle;
	uint64_t stream_applied;  /* how many */
	/* ... and as a served pair's active, sending */
	uint64_t sent_writer, sent_commit, sent_newest;
	uint32_t sent_seq[FO_ST_SLOTS];
};

struct relay_pair {
	fo_domid_t active, standby;
	char name[FO_NAME_MAX + 1];
	bool serving;             /* the active runs on this host */
};

struct fo_state_relay {
	const struct fo_state_relay_ops *ops;
	void *ctx;
	pthread_t thread;
	bool running;
	int efd;

	pthread_mutex_t lock;     /* everything below up to `m` */
	bool stop;
	struct relay_pair pairs[FO_MAX_PAIRS];
	size_t n_pairs;
	struct {
		fo_domid_t domid;
		uint64_t app_cycle;
		uint64_t woke_ns;   /* this member's beat last woke the thread */
	} beats[RELAY_MEMBERS];
	uint64_t beat_wakeups;
	fo_domid_t forget[RELAY_MEMBERS];
	size_t n_forget;
	struct fo_hv_state_info info[RELAY_MEMBERS];
	fo_domid_t info_domid[RELAY_MEMBERS];

	/* relay thread only */
	struct relay_member m[RELAY_MEMBERS];
	struct relay_pair cur[FO_MAX_PAIRS];
	size_t n_cur;
	unsigned char tmp[FO_ST_SLOT_SIZE];
	unsigned char stmp[FO_ST_SLOT_SIZE]; /* the stream's state, apart from tmp (fo_st_relay_attach's) */
	const struct fo_hv_state_stream *stream; /* set once, before any roles */
	void *stream_ctx;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void wake(struct fo_state_relay *r)
{
	uint64_t one = 1;

	if (write(r->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		fo_debug("%s: state relay: wake: %s", r->ops->name, strerror(errno));
}

/* ------------------------------------------------------------- the loop's side */

static bool in_pair(const struct relay_pair *p, fo_domid_t domid)
{
	return domid != FO_DOMID_INVALID && (p->active == domid || p->standby == domid);
}

void fo_state_relay_pair(struct fo_state_relay *r, const char *pair, fo_domid_t active, fo_domid_t standby,
			 bool serving)
{
	size_t i;

	if (!r || active == FO_DOMID_INVALID)
		return;
	pthread_mutex_lock(&r->lock);
	/* one entry per active or standby domain: a pair's new roles replace
	 * its old entry (the members are the same two domains, swapped) */
	for (i = 0; i < r->n_pairs; i++) {
		struct relay_pair *p = &r->pairs[i];

		if (in_pair(p, active) || in_pair(p, standby))
			break;
	}
	if (i == r->n_pairs) /* a new pair, or the slot of one whose members were both forgotten */
		for (i = 0; i < r->n_pairs; i++)
			if (r->pairs[i].active == FO_DOMID_INVALID && r->pairs[i].standby == FO_DOMID_INVALID)
				break;
	if (i == r->n_pairs && r->n_pairs < FO_MAX_PAIRS)
		r->n_pairs++;
	if (i < r->n_pairs) {
		r->pairs[i].active = active;
		r->pairs[i].standby = standby;
		r->pairs[i].serving = serving;
		snprintf(r->pairs[i].name, sizeof(r->pairs[i].name), "%s", pair ? pair : "");
	}
	pthread_mutex_unlock(&r->lock);
	wake(r);
}

/*
 * A beat wakes the thread when it may bring new state: the active's, with
 * its regions mapped, showing an application cycle not seen yet, or a
 * period (the page's, 1 ms at least) after its last wake-up (a commit that
 * came after the beat of its cycle). Not every beat: a guest notifying in
 * a loop (see hv/notify_flood.h) must not keep the relay thread running.
 */
void fo_state_relay_beat(struct fo_state_relay *r, fo_domid_t domid, const struct fo_hb_page *page)
{
	size_t i, free_slot = RELAY_MEMBERS, slot;
	bool is_active = false, news = true;
	uint64_t now = mono_ns(), period = (uint64_t)(page->period_ms ? page->period_ms : 1) * 1000000ull;

	if (!r || page->ext_magic != FO_HB_EXT_MAGIC || page->ext_version != FO_HB_EXT_VERSION)
		return; /* a plain agent: no application cycle, no state */
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < RELAY_MEMBERS; i++) {
		if (r->beats[i].domid == domid)
			break;
		if (r->beats[i].domid == 0 && free_slot == RELAY_MEMBERS)
			free_slot = i;
	}
	if (i == RELAY_MEMBERS)
		i = free_slot;
	slot = i;
	if (slot < RELAY_MEMBERS) {
		if (r->beats[slot].domid == domid)
			news = r->beats[slot].app_cycle != page->app_cycle || now - r->beats[slot].woke_ns >= period;
		else
			r->beats[slot].woke_ns = 0;
		r->beats[slot].domid = domid;
		r->beats[slot].app_cycle = page->app_cycle;
	}
	for (i = 0; i < r->n_pairs; i++)
		if (r->pairs[i].active == domid)
			is_active = true;
	/* only the beats of actives whose regions are mapped can bring new
	 * state (a plain fo-heartbeat shares none: no wake-up per beat) */
	if (is_active) {
		is_active = false;
		for (i = 0; i < RELAY_MEMBERS; i++)
			if (r->info_domid[i] == domid && r->info[i].mapped)
				is_active = true;
	}
	is_active = is_active && news;
	if (is_active) {
		if (slot < RELAY_MEMBERS)
			r->beats[slot].woke_ns = now;
		r->beat_wakeups++;
	}
	pthread_mutex_unlock(&r->lock);
	if (is_active)
		wake(r);
}

void fo_state_relay_set_stream(struct fo_state_relay *r, const struct fo_hv_state_stream *hooks, void *ctx)
{
	pthread_mutex_lock(&r->lock);
	r->stream = hooks;
	r->stream_ctx = ctx;
	pthread_mutex_unlock(&r->lock);
	wake(r);
}

uint64_t fo_state_relay_beat_wakeups(struct fo_state_relay *r)
{
	uint64_t n;

	pthread_mutex_lock(&r->lock);
	n = r->beat_wakeups;
	pthread_mutex_unlock(&r->lock);
	return n;
}

void fo_state_relay_forget(struct fo_state_relay *r, fo_domid_t domid)
{
	size_t i;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	/* The pair stays (its other member and a swap just published must
	 * still be seen); only this domain leaves it. */
	for (i = 0; i < r->n_pairs; i++) {
		if (r->pairs[i].active == domid)
			r->pairs[i].active = FO_DOMID_INVALID;
		if (r->pairs[i].standby == domid)
			r->pairs[i].standby = FO_DOMID_INVALID;
	}
	for (i = 0; i < RELAY_MEMBERS; i++)
		if (r->beats[i].domid == domid)
			r->beats[i].domid = 0;
	if (r->n_forget < RELAY_MEMBERS)
		r->forget[r->n_forget++] = domid;
	pthread_mutex_unlock(&r->lock);
	wake(r);
}

bool fo_state_relay_info(struct fo_state_relay *r, fo_domid_t domid, struct fo_hv_state_info *ret)
{
	bool found = false;
	size_t i;

	if (!r)
		return false;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < RELAY_MEMBERS; i++) {
		if (r->info_domid[i] == domid && domid != 0) {
			*ret = r->info[i];
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return found;
}

/* ------------------------------------------------------------- members */

static struct relay_member *member_get(struct fo_state_relay *r, fo_domid_t domid, bool create)
{
	struct relay_member *free_m = NULL;
	size_t i;

	for (i = 0; i < RELAY_MEMBERS; i++) {
		if (r->m[i].in_use && r->m[i].domid == domid)
			return &r->m[i];
		if (!r->m[i].in_use && !free_m)
			free_m = &r->m[i];
	}
	if (!create || !free_m)
		return NULL;
	memset(free_m, 0, sizeof(*free_m));
	free_m->in_use = true;
	free_m->domid = domid;
	free_m->dirty = true;
	free_m->rs_src = FO_DOMID_INVALID;
	free_m->rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(10000, 3);
	return free_m;
}

static unsigned member_slot(const struct fo_state_relay *r, const struct relay_member *m)
{
	return (unsigned)(m - r->m);
}

void fo_state_relay_dirty(struct fo_state_relay *r, unsigned slot)
{
	if (slot < RELAY_MEMBERS && r->m[slot].in_use)
		r->m[slot].dirty = true;
}

static void member_unmap(struct fo_state_relay *r, struct relay_member *m)
{
	if (m->out || m->in)
		r->ops->unmap(r->ctx, m->out, m->in);
	m->out = m->in = NULL;
	m->rs_src = FO_DOMID_INVALID;
	m->streamed = false;
}

static void member_drop(struct fo_state_relay *r, struct relay_member *m)
{
	member_unmap(r, m);
	r->ops->drop(r->ctx, member_slot(r, m), m->domid);
	m->in_use = false;
}

/* Map what the member publishes now (or nothing). */
static void member_refresh(struct fo_state_relay *r, struct relay_member *m)
{
	uint64_t now = mono_ns();

	if (now - m->window_start >= 1000000000ull) {
		m->window_start = now;
		m->reads = 0;
	}
	if (m->reads >= RELAY_KEY_READS)
		return; /* still dirty: next second */
	m->reads++;
	m->dirty = false;
	member_unmap(r, m);
	if (!r->ops->map(r->ctx, member_slot(r, m), m->domid, &m->out, &m->in))
		m->out = m->in = NULL;
}

/* Dying or gone: give the pages back now. */
static void release_dead(struct fo_state_relay *r)
{
	size_t i;

	for (i = 0; i < RELAY_MEMBERS; i++) {
		struct relay_member *m = &r->m[i];

		if (!m->in_use || (!m->out && !m->in))
			continue;
		if (r->ops->alive(r->ctx, m->domid))
			continue;
		fo_info("%s: state relay: dom%" PRIu32 " dying or gone: state regions unmapped", r->ops->name,
			m->domid);
		member_unmap(r, m);
		m->dirty = true; /* a rebuilt domain of that id (unlikely) is read again */
	}
}

/* ------------------------------------------------------------- passes */

static void publish_info(struct fo_state_relay *r)
{
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = 0; i < RELAY_MEMBERS; i++) {
		const struct relay_member *m = &r->m[i];
		struct fo_hv_state_info *in = &r->info[i];

		r->info_domid[i] = m->in_use ? m->domid : 0;
		if (!m->in_use)
			continue;
		in->mapped = m->out && m->in;
		in->relayed = m->rs.w.commit;
		in->rejected = m->rejected;
		in->state_cycle = m->rs.src_cycle;
		in->takeover = m->takeover;
		in->takeover_ns = m->takeover_ns;
		in->handed_cycle = m->handed_cycle;
		in->old_last_cycle = m->old_last_cycle;
		in->cycles_lost = (int64_t)(m->old_last_cycle - m->handed_cycle);
		in->streamed = m->stream_applied;
		in->takeover_streamed = m->takeover_streamed;
	}
	pthread_mutex_unlock(&r->lock);
}

/* The newest valid commit in a region, or false. */
static bool region_cycle(struct fo_state_relay *r, const volatile void *region, uint64_t *cycle)
{
	struct fo_st_found f;
	int tries = 0;
	enum fo_st_result res;

	do
		res = fo_st_read(region, r->tmp, &f);
	while (res == FO_ST_TORN && ++tries < 10);
	if (res != FO_ST_OK)
		return false;
	*cycle = f.cycle;
	return true;
}

/* A pair's roles swapped: `to` was the standby and is now the active. */
static void note_takeover(struct fo_state_relay *r, struct relay_member *from, struct relay_member *to)
{
	uint64_t handed = 0, last = 0;
	bool have_handed, have_last;

	/* The old active is fenced (a swap is published only after a fenced
	 * switch): its state-out is final. One last pass hands the new active
	 * the commit the relay may not have copied yet; the new active
	 * restores only once its role reaches it through xenstore, tens of ms
	 * from now, and a copy landing after that is ignored by libfoguest
	 * (older than its own commits). */
	if (from && from->out && to->in && to->rs_src == from->domid && !to->streamed) {
		struct fo_st_found f;
		int copied;

		fo_st_relay_pass(&to->rs, from->out, to->in, from->app_cycle, r->tmp, &f, &copied);
	}
	have_handed = to->in && region_cycle(r, to->in, &handed);
	have_last = from && from->out && region_cycle(r, from->out, &last);

	to->takeover = true;
	to->takeover_ns = mono_ns();
	to->handed_cycle = have_handed ? handed : 0;
	/* without the old active's region (destroyed, unmapped): the last
	 * commit the relay copied from it, a lower bound */
	to->old_last_cycle = have_last ? last : to->rs.src_cycle;
	/* fed from the other host: its old active here is stale (paused
	 * since the stand-down); what was lost is measured against the
	 * other host's newest cycle the stream brought */
	to->takeover_streamed = to->streamed;
	if (to->streamed) {
		to->old_last_cycle = to->stream_peer_cycle;
		to->streamed = false;
		if (have_handed)
			fo_notice("%s: state relay: dom%" PRIu32 " took over with the state of cycle %" PRIu64
				  " from the other host (its newest cycle known here: %" PRIu64 "): %" PRId64
				  " cycles lost (state age at takeover)", r->ops->name, to->domid, handed,
				  to->old_last_cycle, (int64_t)(to->old_last_cycle - handed));
		else
			fo_notice("%s: state relay: dom%" PRIu32 " took over with no state from the other host "
				  "(it starts cold)", r->ops->name, to->domid);
		return;
	}
	if (!have_handed) {
		fo_notice("%s: state relay: dom%" PRIu32 " took over from dom%" PRIu32
			  " with no valid state handed over (it starts cold)%s", r->ops->name, to->domid,
			  from ? from->domid : 0, have_last ? "" : "; the old active had none either");
		return;
	}
	fo_notice("%s: state relay: dom%" PRIu32 " took over from dom%" PRIu32 ": state of cycle %" PRIu64
		  " handed over, the old active's last commit is cycle %" PRIu64 "%s: %" PRId64
		  " cycles lost (state age at takeover)",
		  r->ops->name, to->domid, from ? from->domid : 0, handed, to->old_last_cycle,
		  have_last ? "" : " (its region is gone: the last one relayed)",
		  (int64_t)(to->old_last_cycle - handed));
}

static void relay_pair(struct fo_state_relay *r, const struct relay_pair *p)
{
	struct relay_member *a, *s;
	struct fo_st_found f;
	enum fo_st_result res;
	int copied;

	if (p->active == FO_DOMID_INVALID)
		return; /* its active was forgotten; the next roles published fill it */
	a = member_get(r, p->active, true);

	if (a && a->dirty)
		member_refresh(r, a);
	if (p->standby == FO_DOMID_INVALID)
		return;
	s = member_get(r, p->standby, true);
	if (s && s->dirty)
		member_refresh(r, s);
	if (!a || !s || !a->out || !s->in)
		return;
	if (s->rs_src != a->domid) {
		fo_st_relay_attach(&s->rs, s->in, a->domid, r->tmp);
		s->rs_src = a->domid;
	}
	res = fo_st_relay_pass(&s->rs, a->out, s->in, a->app_cycle, r->tmp, &f, &copied);
	if (res == FO_ST_CORRUPT) {
		a->rejected++;
		if (fo_ratelimit_ok(&a->rl, mono_ns()))
			fo_warn("%s: state relay: dom%" PRIu32 "'s state rejected (%s): dom%" PRIu32
				" keeps cycle %" PRIu64 " (%" PRIu64 " rejected so far)", r->ops->name, a->domid,
				f.why ? f.why : "invalid", s->domid, s->rs.src_cycle, a->rejected);
	} else if (copied && s->rs.w.commit == 1) {
		fo_info("%s: state relay: dom%" PRIu32 " -> dom%" PRIu32 ": first state handed over (cycle %" PRIu64
			", %" PRIu32 " bytes)", r->ops->name, a->domid, s->domid, f.cycle, f.len);
	}
}

/* ------------------------------------------------------------- the state stream */

/*
 * A pair served here: its active's newest valid commit to the stream when
 * it is new (another commit, or another writer), else only the active's
 * newest cycle when that moved. The same cheap test as fo_st_relay_pass
 * skips the read (and its checksum) when the slots did not change.
 */
static void stream_send(struct fo_state_relay *r, const struct relay_pair *p, const struct fo_hv_state_stream *h,
			void *ctx)
{
	const volatile struct fo_st_header *sh;
	struct relay_member *a;
	struct fo_st_found f;
	enum fo_st_result res;
	uint64_t writer, newest;
	int tries = 0;

	if (p->active == FO_DOMID_INVALID || !p->name[0])
		return;
	a = member_get(r, p->active, false);
	if (!a || !a->out)
		return;
	sh = (const volatile struct fo_st_header *)a->out;
	writer = sh->writer_id;
	newest = a->app_cycle;
	if (!(a->sent_commit && writer == a->sent_writer && sh->slot[0].seq == a->sent_seq[0] &&
	      sh->slot[1].seq == a->sent_seq[1])) {
		a->sent_seq[0] = sh->slot[0].seq;
		a->sent_seq[1] = sh->slot[1].seq;
		do
			res = fo_st_read(a->out, r->stmp, &f);
		while (res == FO_ST_TORN && ++tries < 10);
		/* only what passed every check, never an older commit of the same writer */
		if (res == FO_ST_OK && (writer != a->sent_writer || f.commit > a->sent_commit)) {
			if (f.cycle > newest)
				newest = f.cycle;
			h->offer(ctx, p->name, newest, r->stmp, f.len, f.cycle);
			a->sent_writer = writer;
			a->sent_commit = f.commit;
			a->sent_newest = newest;
			return;
		}
	}
	if (newest != a->sent_newest) {
		h->offer(ctx, p->name, newest, NULL, 0, 0);
		a->sent_newest = newest;
	}
}

/*
 * A pair not served here (stood down: the other host serves it): its own
 * active is paused and stale, so nothing of it is copied; the newest state
 * that arrived from the other host goes into the standby's state-in, the
 * member `switchover` starts at a takeover, with that host's newest cycle
 * as the source's (libfoguest's "too old" test). Without a mapped standby
 * the stream keeps holding it, and it is written once one maps.
 */
static void stream_receive(struct fo_state_relay *r, const struct relay_pair *p, const struct fo_hv_state_stream *h,
			   void *ctx)
{
	volatile struct fo_st_header *dh;
	struct relay_member *a, *s;
	uint64_t arrival, cycle, peer_cycle;
	uint32_t len;

	if (p->active != FO_DOMID_INVALID) {
		a = member_get(r, p->active, true);
		if (a && a->dirty)
			member_refresh(r, a);
	}
	if (p->standby == FO_DOMID_INVALID || !p->name[0])
		return;
	s = member_get(r, p->standby, true);
	if (s && s->dirty)
		member_refresh(r, s);
	if (!s || !s->in)
		return;
	if (!h->take(ctx, p->name, s->stream_arrival, r->stmp, &len, &arrival, &cycle, &peer_cycle) || !len ||
	    len > FO_ST_SLOT_SIZE)
		return;
	if (!s->streamed || s->rs_src != FO_DOMID_INVALID) {
		/* keep what the region holds and continue its commit numbers */
		fo_st_relay_attach(&s->rs, s->in, 0, r->tmp);
		s->rs_src = FO_DOMID_INVALID;
		s->streamed = true;
	}
	if (fo_st_commit(s->in, &s->rs.w, r->stmp, len, cycle) != 0)
		return;
	dh = fo_st_hdr(s->in);
	dh->src_last_cycle = peer_cycle > cycle ? peer_cycle : cycle;
	dh->src_domid = 0;
	dh->relay_flags = 0;
	dh->relay_passes = ++s->rs.passes;
	s->rs.src_cycle = cycle;
	s->stream_arrival = arrival;
	s->stream_peer_cycle = peer_cycle;
	if (s->stream_applied++ == 0)
		fo_info("%s: state relay: pair %s: first state from the other host into dom%" PRIu32
			"'s state-in (cycle %" PRIu64 ", %" PRIu32 " bytes)", r->ops->name, p->name, s->domid, cycle,
			len);
	h->applied(ctx, p->name, arrival, cycle);
}

static void *relay_main(void *arg)
{
	struct fo_state_relay *r = arg;
	size_t k;

	for (;;) {
		struct pollfd pfd[2] = { { .fd = r->efd, .events = POLLIN },
					 { .fd = r->ops->event_fd(r->ctx), .events = POLLIN } };
		struct relay_pair prev[FO_MAX_PAIRS];
		const struct fo_hv_state_stream *stream;
		void *stream_ctx;
		fo_domid_t forget[RELAY_MEMBERS];
		size_t i, j, n_prev, n_forget;
		bool released;
		uint64_t v;

		poll(pfd, 2, RELAY_IDLE_MS); /* a negative fd is ignored */
		if (pfd[0].revents & POLLIN)
			while (read(r->efd, &v, sizeof(v)) > 0)
				;
		released = r->ops->events(r->ctx, r);

		memcpy(prev, r->cur, sizeof(prev));
		n_prev = r->n_cur;
		pthread_mutex_lock(&r->lock);
		if (r->stop) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		memcpy(r->cur, r->pairs, sizeof(r->cur));
		r->n_cur = r->n_pairs;
		memcpy(forget, r->forget, sizeof(forget));
		n_forget = r->n_forget;
		r->n_forget = 0;
		stream = r->stream;
		stream_ctx = r->stream_ctx;
		for (i = 0; i < RELAY_MEMBERS; i++)
			for (j = 0; j < RELAY_MEMBERS; j++)
				if (r->m[i].in_use && r->beats[j].domid == r->m[i].domid)
					r->m[i].app_cycle = r->beats[j].app_cycle;
		pthread_mutex_unlock(&r->lock);

		/* swapped roles: a takeover to report (before a forgotten or
		 * dead old active is unmapped: its last commit is read here) */
		for (i = 0; i < r->n_cur; i++)
			for (j = 0; j < n_prev; j++)
				if (prev[j].standby == r->cur[i].active && prev[j].standby != FO_DOMID_INVALID) {
					struct relay_member *to = member_get(r, r->cur[i].active, false);

					if (to)
						note_takeover(r, member_get(r, prev[j].active, false), to);
				}
		for (i = 0; i < n_forget; i++) {
			struct relay_member *m = member_get(r, forget[i], false);

			if (m)
				member_drop(r, m);
		}
		if (released)
			release_dead(r);
		for (i = 0; i < r->n_cur; i++) {
			if (stream && !r->cur[i].serving) {
				stream_receive(r, &r->cur[i], stream, stream_ctx);
				continue;
			}
			relay_pair(r, &r->cur[i]);
			if (stream)
				stream_send(r, &r->cur[i], stream, stream_ctx);
		}
		publish_info(r);
	}
	for (k = 0; k < RELAY_MEMBERS; k++)
		if (r->m[k].in_use)
			member_drop(r, &r->m[k]);
	return NULL;
}

/* ------------------------------------------------------------- lifecycle */

int fo_state_relay_new(const struct fo_state_relay_ops *ops, void *ctx,
		       int (*start_thread)(pthread_t *t, void *(*fn)(void *), void *arg, int signo),
		       struct fo_state_relay **ret)
{
	struct fo_state_relay *r = calloc(1, sizeof(*r));
	pthread_mutexattr_t ma;
	int rc;

	if (!r)
		return -ENOMEM;
	r->ops = ops;
	r->ctx = ctx;
	/* The loop (SCHED_FIFO) takes it on every heartbeat; the relay
	 * (SCHED_OTHER) only to copy small tables: inherit, never invert. */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&r->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->efd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = start_thread(&r->thread, relay_main, r, 0);
	if (rc < 0)
		goto fail;
	r->running = true;
	*ret = r;
	return 0;
fail:
	fo_state_relay_free(r);
	return rc;
}

void fo_state_relay_free(struct fo_state_relay *r)
{
	if (!r)
		return;
	if (r->running) {
		pthread_mutex_lock(&r->lock);
		r->stop = true;
		pthread_mutex_unlock(&r->lock);
		wake(r);
		pthread_join(r->thread, NULL);
	}
	if (r->efd >= 0)
		close(r->efd);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
