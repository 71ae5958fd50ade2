/* SPDX-License-Identifier: MIT */
/*
 * fowatch.c - the simulated Xen failover watch (hv_sim.h): patch 0007's
 * XEN_DOMCTL_failover_watch (common/fowatch.c) and 0008's refused unpause,
 * modelled at the domctl level over the simulator's domains, so that the
 * layer that turns the watch into the daemon's armed owner is tested on the
 * same checks, states, errnos and stamps it meets on the patched Xen.
 *
 * The names follow 0007 (fowatch_arm, poll_armed, fire, poll_quiescing,
 * fowatch_destroy, hand_fence_to_toolstack) so the two can be read side by
 * side. The semantics are those of issue #36's fixes, which the SPIN model
 * (tests/model/ownership.pml) checks: RELEASE in an end state hands the
 * fence to the toolstack instead of dropping it (item 4); the standby's
 * expected pause is consumed in one step with its check (item 5); the
 * active reads as paused, in getdomaininfo and QUERY, only once its vCPUs
 * stopped (item 6). What the simulator has no notion of is left out: creation_finished
 * (always true here), device models (none), vCPUs that really run (a fenced
 * active's vCPUs stop fo_sim_fowatch_quiesce_delay after the fence).
 */
#include "hv/sim/sim_internal.h"

#include "hv/agent_keys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define US 1000ull
/* QUIESCING looks again every 20 us; Xen's timer_slop makes it 50. */
#define FOWATCH_QUIESCE_POLL_NS (50 * US)
#define FOWATCH_DEF_SHUTDOWN_MASK                                                                  \
	((1u << FO_SIM_SHUTDOWN_POWEROFF) | (1u << FO_SIM_SHUTDOWN_REBOOT) | (1u << FO_SIM_SHUTDOWN_CRASH) | \
	 (1u << FO_SIM_SHUTDOWN_WATCHDOG))
#define FOWATCH_ALL_SHUTDOWN_MASK ((1u << (FO_FOWATCH_SHUTDOWN_MAX + 1)) - 1)
/* Xen's gnttab_pin_page_ro() gives the granted range: a whole page. */
#define SIM_PAGE_SIZE 4096u
/* Refs at or past this are beyond the grant table (one v1 frame, a small
 * guest's): the pin answers -ENOENT there, -EACCES for a ref in the table
 * that is not a grant to dom0. */
#define SIM_GNTTAB_ENTRIES 512u
#define SIM_OWNER 0 /* the caller of every domctl: dom0 */
#define SIM_AGENT_PORT_FIRST 7u

struct sim_fowatch {
	bool used;
	/* Fixed from ARM to teardown. */
	fo_domid_t active, standby;
	uint32_t page_gen;                 /* the page pinned (the active's at ARM) */
	struct fo_xen_failover_watch arm;  /* the ARM parameters, quiesce and mask defaulted */
	uint64_t period, timeout, quiesce; /* ns */
	bool event;                        /* 0012's event mode: read at the notify, tick at the deadline */
	/* Moving parts; stamps on the virtual clock (Xen time in QUERY only). */
	uint64_t next_tick;
	uint64_t vcpus_stop;               /* when the fenced active's vCPUs stop running */
	uint32_t state, reason, shutdown_code;
	bool fenced;
	uint64_t seq;
	uint64_t t_armed, t_progress, t_detect, t_fence, t_quiesced, t_switched;
};

static bool is_end_state(uint32_t state)
{
	return state != FO_FOWATCH_STATE_ARMED && state != FO_FOWATCH_STATE_QUIESCING;
}

static bool shutting_down(const struct sim_domain *d)
{
	return d->state == FO_DOM_CRASHED || d->state == FO_DOM_SHUTDOWN || d->state == FO_DOM_SUSPENDED;
}

static bool dying(const struct sim_domain *d)
{
	return d->state == FO_DOM_DYING || d->state == FO_DOM_GONE;
}

/* Xen's NOW() is Xen's uptime: ahead of dom0's monotonic clock (hv_sim.h). */
static uint64_t xen_time(uint64_t clock_ns)
{
	return clock_ns ? clock_ns + FO_SIM_XEN_AHEAD_NS : 0;
}

/* Alive, not shutting down, paused by the toolstack exactly once. */
static bool standby_fit(const struct sim_domain *s)
{
	return s && !dying(s) && !shutting_down(s) && s->pause_count == 1;
}

static void raise_virq(struct fo_hv_sim *s)
{
	uint64_t one = 1;

	s->fowatch_virqs++;
	if (write(s->fowatch_virq_fd, &one, sizeof(one)) != sizeof(one))
		return; /* the counter cannot overflow in a test; pending either way */
}

/* The 64-bit value at `offset` of the pinned page: the active's page, or
 * one it stopped writing when it granted a new one. */
static uint64_t read_seq(const struct sim_fowatch *w, const struct sim_domain *a)
{
	uint64_t v = 0;

	if (a->page_gen != w->page_gen)
		return w->seq;
	if (w->arm.offset + sizeof(v) <= sizeof(a->page))
		memcpy(&v, (const char *)&a->page + w->arm.offset, sizeof(v));
	return v; /* the rest of the page is zero */
}

/* ---- the timer (0007: fowatch_tick and what it calls) ---- */

static void fence_active(struct fo_hv_sim *s, struct sim_fowatch *w, uint64_t now)
{
	uint64_t delay = s->fowatch_quiesce_delay_ns;

	w->fenced = true;
	w->t_fence = now;
	w->vcpus_stop = delay > UINT64_MAX - now ? UINT64_MAX : now + delay;
}

static bool fire(struct fo_hv_sim *s, struct sim_fowatch *w, uint32_t reason, uint32_t code, uint64_t now)
{
	w->t_detect = now;
	w->reason = reason;
	w->shutdown_code = code;
	if (!standby_fit(sim_find_dom(s, w->standby))) {
		if (w->arm.flags & FO_FOWATCH_F_FENCE_ALWAYS)
			fence_active(s, w, now);
		w->state = FO_FOWATCH_STATE_FAILED_STANDBY;
		return true;
	}
	fence_active(s, w, now);
	w->state = FO_FOWATCH_STATE_QUIESCING;
	return false;
}

static bool abort_watch(struct sim_fowatch *w, uint32_t reason, uint32_t code, uint64_t now)
{
	w->t_detect = now;
	w->reason = reason;
	w->shutdown_code = code;
	w->state = FO_FOWATCH_STATE_ABORTED;
	return true;
}

/* Any change of the value is progress (0007's read_progress()). */
static void read_progress(struct sim_fowatch *w, const struct sim_domain *a, uint64_t now)
{
	uint64_t seq = read_seq(w, a);

	if (seq != w->seq) {
		w->seq = seq;
		w->t_progress = now;
	}
}

static bool poll_armed(struct fo_hv_sim *s, struct sim_fowatch *w, uint64_t now)
{
	struct sim_domain *a = sim_find_dom(s, w->active), *sb = sim_find_dom(s, w->standby);

	if (!a || !sb || dying(a) || dying(sb))
		return false; /* the teardown is about to come */
	if (shutting_down(sb))
		return abort_watch(w, FO_FOWATCH_REASON_STANDBY_LOST, FO_FOWATCH_NO_SHUTDOWN_CODE, now);
	/* The active's shutdown first: a suspend must abort, never fire. */
	if (shutting_down(a)) {
		if (a->shutdown_code == FO_SIM_SHUTDOWN_SUSPEND)
			return abort_watch(w, FO_FOWATCH_REASON_SUSPEND, a->shutdown_code, now);
		if (a->shutdown_code <= FO_FOWATCH_SHUTDOWN_MAX && (w->arm.shutdown_mask & (1u << a->shutdown_code)))
			return fire(s, w, FO_FOWATCH_REASON_SHUTDOWN, a->shutdown_code, now);
		return abort_watch(w, FO_FOWATCH_REASON_SHUTDOWN, a->shutdown_code, now);
	}
	read_progress(w, a, now);
	if (now - w->t_progress >= w->timeout)
		return fire(s, w, FO_FOWATCH_REASON_TIMEOUT, FO_FOWATCH_NO_SHUTDOWN_CODE, now);
	return false;
}

static bool poll_quiescing(struct fo_hv_sim *s, struct sim_fowatch *w, uint64_t now)
{
	struct sim_domain *sb = sim_find_dom(s, w->standby);

	if (now < w->vcpus_stop) {
		if (now - w->t_fence < w->quiesce)
			return false;
		w->state = FO_FOWATCH_STATE_FAILED_QUIESCE;
		return true;
	}
	w->t_quiesced = now;
	/* #36 item 5: "the standby holds exactly the pause we expect" and
	 * "consume it" in one step (Xen: a cmpxchg of its controller count
	 * from 1 to 0; not the domctl, which 0008 refuses for this very
	 * standby). Paused again or unpaused since: nothing is unpaused. */
	if (!standby_fit(sb) || sim_count_unpause(sb)) {
		w->state = FO_FOWATCH_STATE_FAILED_STANDBY;
		return true;
	}
	sim_check_guards(s);
	w->t_switched = now;
	w->state = FO_FOWATCH_STATE_FIRED;
	return true;
}

/* 0012's next_look(): polling, a period on; event mode, the deadline the
 * notifies left (a period on if it is past: a member being destroyed). */
static uint64_t next_look(const struct sim_fowatch *w, uint64_t now)
{
	uint64_t deadline = w->t_progress + w->timeout;

	return w->event && deadline > now ? deadline : now + w->period;
}

static void tick(struct fo_hv_sim *s, struct sim_fowatch *w, uint64_t now)
{
	bool notify = false;

	if (w->state == FO_FOWATCH_STATE_ARMED)
		notify = poll_armed(s, w, now);
	/* Straight on, as Xen: the vCPUs may have stopped already. */
	if (w->state == FO_FOWATCH_STATE_QUIESCING)
		notify = poll_quiescing(s, w, now);
	if (w->state == FO_FOWATCH_STATE_ARMED)
		w->next_tick = next_look(w, now);
	else if (w->state == FO_FOWATCH_STATE_QUIESCING)
		w->next_tick = now + FOWATCH_QUIESCE_POLL_NS;
	if (notify)
		raise_virq(s);
}

/* Every tick due by now, each at its own time (a jump of the clock is
 * many periods, not one late tick: the stamps stay on Xen's grid). */
void sim_fowatch_timers(struct fo_hv_sim *s)
{
	if (!s->fowatches)
		return;
	for (size_t i = 0; i < SIM_MAX_FOWATCH; i++) {
		struct sim_fowatch *w = &s->fowatches[i];

		while (w->used && !is_end_state(w->state) && w->next_tick <= s->clock_ns)
			tick(s, w, w->next_tick);
	}
}

/* ---- the hooks in the simulator's domains ---- */

static bool stopped_by(const struct fo_hv_sim *s, uint64_t vcpus_stop) { return s->clock_ns >= vcpus_stop; }

/* 0012's fowatch_evtchn_sent(): the notify says when to look; progress is
 * still a changed value. */
void sim_fowatch_notified(struct fo_hv_sim *s, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(s, domid);
	struct sim_fowatch *w = d ? d->fowatch : NULL;

	if (w && w->event && w->active == domid && d->port == w->arm.port && w->state == FO_FOWATCH_STATE_ARMED)
		read_progress(w, d, s->clock_ns);
}

void sim_fowatch_new_dom(struct sim_domain *d)
{
	/* The agent granted its page at boot; distinct per domain, so that a
	 * mixed-up ref is caught. */
	d->gref = FO_AGENT_GREF_FIRST_GUEST + d->domid % (SIM_GNTTAB_ENTRIES - FO_AGENT_GREF_FIRST_GUEST);
	d->granted = true;
	/* Its first unbound port, as a small Linux guest's agent gets. */
	d->port = SIM_AGENT_PORT_FIRST;
}

static bool holds_fenced(const struct sim_domain *d)
{
	return d->fowatch && d->fowatch->fenced && d->fowatch->active == d->domid;
}

/* #36 item 6: the fence counts as a pause (getdomaininfo's "paused", a
 * domain that executes nothing) once every vCPU stopped, not from the
 * no-wait pause on. */
bool sim_dom_fence_stopped(const struct fo_hv_sim *s, const struct sim_domain *d)
{
	return holds_fenced(d) && stopped_by(s, d->fowatch->vcpus_stop);
}

/* A pause holds the domain but a vCPU of it still runs: the watch's fence
 * before the quiesce (or after FAILED_QUIESCE), or that fence handed to
 * the toolstack before its vCPUs stopped. It executes, and reads as
 * running. */
bool sim_dom_still_runs(const struct fo_hv_sim *s, const struct sim_domain *d)
{
	if (holds_fenced(d))
		return !stopped_by(s, d->fowatch->vcpus_stop);
	return d->pause_count && d->handed_vcpus_stop && !stopped_by(s, d->handed_vcpus_stop);
}

/* 0008's fowatch_may_unpause. */
int sim_fowatch_may_unpause(const struct sim_domain *d)
{
	const struct sim_fowatch *w = d->fowatch;

	return w && w->standby == d->domid && !is_end_state(w->state) ? -EBUSY : 0;
}

/* domain_shutdown(): the watch looks now, not a period later. */
void sim_fowatch_domain_shutdown(struct fo_hv_sim *s, struct sim_domain *d)
{
	struct sim_fowatch *w = d->fowatch;

	if (w && !is_end_state(w->state)) {
		w->next_tick = s->clock_ns;
		sim_fowatch_timers(s);
	}
}

/* The watch's pause of the active becomes one of the toolstack's: it stays
 * paused until someone unpauses it. A vCPU that had not stopped yet still
 * runs until it does. */
static void hand_fence_to_toolstack(struct fo_hv_sim *s, struct sim_fowatch *w, struct sim_domain *a)
{
	if (!a || sim_count_pause(a) < 0)
		return; /* at the toolstack's limit: the fence is dropped */
	a->handed_vcpus_stop = stopped_by(s, w->vcpus_stop) ? 0 : w->vcpus_stop;
}

/* @unfence: drop the watch's pause (the active is dying anyway); otherwise
 * it is handed to the toolstack. */
static void fowatch_destroy(struct fo_hv_sim *s, struct sim_fowatch *w, bool unfence)
{
	struct sim_domain *a = sim_find_dom(s, w->active), *sb = sim_find_dom(s, w->standby);

	if (a)
		a->fowatch = NULL;
	if (sb)
		sb->fowatch = NULL;
	if (w->fenced && !unfence)
		hand_fence_to_toolstack(s, w, a);
	w->used = false;
}

void sim_fowatch_domain_kill(struct fo_hv_sim *s, struct sim_domain *d)
{
	struct sim_fowatch *w = d->fowatch;

	if (!w)
		return;
	fowatch_destroy(s, w, d->domid == w->active);
	raise_virq(s); /* its QUERY now gets -ENOENT */
}

/* ---- the domctl (0007: fowatch_domctl, fowatch_arm, fowatch_query) ---- */

static bool arm_out_fields_zero(const struct fo_xen_failover_watch *op)
{
	return !(op->state | op->reason | op->shutdown_code | op->owner | op->active) &&
	       !(op->seq | op->t_armed | op->t_progress | op->t_detect | op->t_fence | op->t_quiesced |
		 op->t_switched | op->t_now);
}

/* gnttab_pin_page_ro() of the active's `gref`, granted to dom0. */
static int pin_page(const struct sim_domain *a, uint32_t gref)
{
	if (gref >= SIM_GNTTAB_ENTRIES)
		return -ENOENT;
	return a->granted && a->gref == gref ? 0 : -EACCES;
}

static size_t count_watches(const struct fo_hv_sim *s)
{
	size_t n = 0;

	for (size_t i = 0; i < SIM_MAX_FOWATCH; i++)
		n += s->fowatches[i].used;
	return n;
}

static int check_arm_args(const struct fo_hv_sim *s, fo_domid_t a, const struct fo_xen_failover_watch *op)
{
	if (!arm_out_fields_zero(op) || (op->flags & ~FO_FOWATCH_F_MASK))
		return -EINVAL;
	if (op->period_us < FO_FOWATCH_MIN_PERIOD_US || op->timeout_us > FO_FOWATCH_MAX_TIMEOUT_US ||
	    op->timeout_us < 2 * (uint64_t)op->period_us)
		return -EINVAL;
	if ((op->quiesce_us ? op->quiesce_us : FO_FOWATCH_DEF_QUIESCE_US) > FO_FOWATCH_MAX_QUIESCE_US)
		return -EINVAL;
	if (op->shutdown_mask & (~FOWATCH_ALL_SHUTDOWN_MASK | (1u << FO_SIM_SHUTDOWN_SUSPEND)))
		return -EINVAL;
	if (op->cpu >= s->n_pcpus)
		return -EINVAL;
	if ((op->flags & FO_FOWATCH_F_EVENT) && s->fowatch_no_event)
		return -EINVAL; /* a series without 0012: an unknown flag */
	if (a == SIM_OWNER || op->standby == a || op->standby == SIM_OWNER)
		return -EINVAL;
	return 0;
}

static int fowatch_arm(struct fo_hv_sim *s, struct sim_domain *a, struct fo_xen_failover_watch *op)
{
	struct sim_domain *sb;
	struct sim_fowatch *w = NULL;
	int r = check_arm_args(s, a->domid, op);

	if (r)
		return r;
	sb = sim_find_dom(s, op->standby);
	if (!sb)
		return -ESRCH;
	if (a->fowatch || sb->fowatch)
		return -EBUSY;
	if (dying(a) || dying(sb))
		return -ESRCH;
	/* The active runs (a paused one would "fail" at once) and neither
	 * shuts down; the standby is one the timer can start. */
	if (shutting_down(a) || a->pause_count || !standby_fit(sb))
		return -EBUSY;
	if (count_watches(s) >= s->fowatch_max)
		return -ENOSPC;
	r = pin_page(a, op->gref);
	if (r)
		return r;
	if (op->offset > SIM_PAGE_SIZE || SIM_PAGE_SIZE - op->offset < sizeof(uint64_t) ||
	    (op->offset & (sizeof(uint64_t) - 1)))
		return -EINVAL;
	/* Xen's port_is_valid(): a port the active has allocated (every one
	 * up to its agent's latest binding, in the simulator). */
	if ((op->flags & FO_FOWATCH_F_EVENT) ? !op->port || op->port > a->port : op->port != 0)
		return -EINVAL;
	for (size_t i = 0; i < SIM_MAX_FOWATCH && !w; i++)
		if (!s->fowatches[i].used)
			w = &s->fowatches[i];
	if (!w)
		return -ENOMEM; /* fowatch_max is at most SIM_MAX_FOWATCH: not reached */

	*w = (struct sim_fowatch){ .used = true, .active = a->domid, .standby = sb->domid, .page_gen = a->page_gen,
				   .arm = *op, .state = FO_FOWATCH_STATE_ARMED,
				   .shutdown_code = FO_FOWATCH_NO_SHUTDOWN_CODE };
	if (!w->arm.quiesce_us)
		w->arm.quiesce_us = FO_FOWATCH_DEF_QUIESCE_US;
	if (!w->arm.shutdown_mask)
		w->arm.shutdown_mask = FOWATCH_DEF_SHUTDOWN_MASK;
	w->event = op->flags & FO_FOWATCH_F_EVENT;
	w->period = op->period_us * US;
	w->timeout = op->timeout_us * US;
	w->quiesce = w->arm.quiesce_us * US;
	w->seq = read_seq(w, a);
	w->t_armed = w->t_progress = s->clock_ns;
	w->next_tick = next_look(w, w->t_armed);
	a->fowatch = sb->fowatch = w;
	return 0;
}

static void fowatch_query(const struct sim_fowatch *w, uint64_t now, struct fo_xen_failover_watch *op)
{
	uint32_t opcode = op->op;

	*op = w->arm;
	op->op = opcode;
	/* "fenced" once the active stopped (#36 item 6): what a caller
	 * pauses synchronously must not be a vCPU that never stops. */
	op->flags = (w->arm.flags & FO_FOWATCH_F_MASK) |
		    (w->fenced && now >= w->vcpus_stop ? FO_FOWATCH_OUT_FENCED : 0);
	op->state = w->state;
	op->reason = w->reason;
	op->shutdown_code = w->shutdown_code;
	op->owner = SIM_OWNER;
	op->active = w->active;
	op->seq = w->seq;
	op->t_armed = xen_time(w->t_armed);
	op->t_progress = xen_time(w->t_progress);
	op->t_detect = xen_time(w->t_detect);
	op->t_fence = xen_time(w->t_fence);
	op->t_quiesced = xen_time(w->t_quiesced);
	op->t_switched = xen_time(w->t_switched);
	op->t_now = xen_time(now);
}

static int fowatch_domctl(struct fo_hv_sim *s, struct sim_domain *d, struct fo_xen_failover_watch *op)
{
	struct sim_fowatch *w;

	if (op->op == FO_FOWATCH_OP_ARM)
		return fowatch_arm(s, d, op);
	w = d->fowatch;
	if (!w)
		return -ENOENT;
	switch (op->op) {
	case FO_FOWATCH_OP_QUERY:
		fowatch_query(w, s->clock_ns, op);
		return 0;
	case FO_FOWATCH_OP_DISARM:
	case FO_FOWATCH_OP_RELEASE:
		/* QUIESCING is short: let it end in FIRED or FAILED_*. */
		if (w->state == FO_FOWATCH_STATE_QUIESCING)
			return -EBUSY;
		/* DISARM never lets a fenced active run. */
		if (w->fenced && op->op == FO_FOWATCH_OP_DISARM)
			return -EBUSY;
		/* RELEASE, by whoever sends it (#36 item 4): a fence becomes a
		 * toolstack pause. Dropping it would restart the failed active
		 * next to the standby, unless the sender paused it first. */
		fowatch_destroy(s, w, false);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

int fo_sim_fowatch_domctl(struct fo_hv *hv, fo_domid_t domid, struct fo_xen_failover_watch *fw)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	/* do_domctl() looks the domain up before it looks at the command. */
	int r = sim_enter_dom(s, FO_SIM_FOWATCH, domid, &d);

	if (r < 0)
		return r;
	/* Stock Xen: arch_do_domctl()'s default case. */
	r = s->fowatch_on && !s->fowatch_absent ? fowatch_domctl(s, d, fw) : -ENOSYS;
	sim_set_result(s, r);
	return r;
}

/* ---- test API ---- */

void fo_sim_enable_fowatch(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (s->fowatches)
		return;
	s->fowatches = calloc(SIM_MAX_FOWATCH, sizeof(*s->fowatches));
	s->fowatch_virq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!s->fowatches || s->fowatch_virq_fd < 0)
		abort(); /* a test's setup: nothing to go on with */
	s->fowatch_on = true;
	s->fowatch_max = SIM_MAX_FOWATCH;
}

void sim_fowatch_free(struct fo_hv_sim *s)
{
	if (!s->fowatches)
		return;
	close(s->fowatch_virq_fd);
	free(s->fowatches);
}

void fo_sim_fowatch_absent(struct fo_hv *hv, bool absent) { sim_of(hv)->fowatch_absent = absent; }

uint64_t fo_sim_xen_now(struct fo_hv *hv) { return xen_time(sim_of(hv)->clock_ns); }

void fo_sim_fowatch_set_max(struct fo_hv *hv, unsigned max)
{
	sim_of(hv)->fowatch_max = max < SIM_MAX_FOWATCH ? max : SIM_MAX_FOWATCH;
}

void fo_sim_fowatch_quiesce_delay(struct fo_hv *hv, uint64_t ns) { sim_of(hv)->fowatch_quiesce_delay_ns = ns; }

bool fo_sim_fowatch_fenced(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	return d && holds_fenced(d);
}

int fo_sim_fowatch_virq_fd(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	return s->fowatches ? s->fowatch_virq_fd : -1;
}

bool fo_sim_fowatch_virq_take(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);
	uint64_t n;

	return s->fowatches && read(s->fowatch_virq_fd, &n, sizeof(n)) == sizeof(n) && n > 0;
}

uint64_t fo_sim_fowatch_virqs(struct fo_hv *hv) { return sim_of(hv)->fowatch_virqs; }

uint32_t fo_sim_agent_gref(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	return d ? d->gref : 0;
}

uint32_t fo_sim_agent_port(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	return d ? d->port : 0;
}

void fo_sim_fowatch_no_event(struct fo_hv *hv, bool on) { sim_of(hv)->fowatch_no_event = on; }

void fo_sim_agent_grant(struct fo_hv *hv, fo_domid_t domid, uint32_t gref)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (d) {
		d->gref = gref;
		d->granted = true;
		d->page_gen++;
		d->port++; /* the restarted agent's new binding */
		/* The daemon's backend sees the new keys and maps the new
		 * page: what hv/xen/agent.c tells the watch's owner then. */
		if (sim_of(hv)->owner)
			fo_fowatch_agent_attached(sim_of(hv)->owner, domid);
	}
}

void fo_sim_agent_revoke(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (d)
		d->granted = false;
}
