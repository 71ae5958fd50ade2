/* SPDX-License-Identifier: MIT */
/*
 * owner.c - Xen's failover watch as a pair's armed owner (see owner.h for
 * what it translates and why).
 *
 * The watch's life as we drive it:
 *   ARM (pair ARMED) -> ARMED in Xen -> either
 *     DISARM by us before a switch of our own (ARMED: gone, 0), or
 *     Xen fires: QUIESCING (DISARM: -EBUSY -> we say -EALREADY, "switching")
 *       -> FIRED / FAILED_* (an end state, VIRQ_FAILOVER raised): we
 *       RELEASE, which makes Xen's pause of the failed active a toolstack
 *       pause (it stays paused), and hand up an event; or
 *     ABORTED (the active suspended, the standby shut down, a shutdown not
 *       in the mask): no switch; RELEASE and tell the core to look at its
 *       domains; or
 *     a member is destroyed: Xen tears the watch down (QUERY -ENOENT).
 */
#include "hv/fowatch/owner.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "lib/log.h"

#define US_PER_MS 1000u
#define NS_PER_MS 1000000ull
#define SHUTDOWN_CRASH 3u /* Xen's SHUTDOWN_crash (public/sched.h) */

/* A QUERY and the map of its stamps onto our clock: ours = xen + *off,
 * within *err. */
static int query(struct fo_fowatch_owner *o, fo_domid_t domid, struct fo_xen_failover_watch *fw, int64_t *off,
		 uint64_t *err)
{
	uint64_t before, after;
	int r;

	memset(fw, 0, sizeof(*fw));
	fw->op = FO_FOWATCH_OP_QUERY;
	before = o->hv->ops->now_ns(o->hv);
	r = o->domctl(o->ctx, domid, fw);
	after = o->hv->ops->now_ns(o->hv);
	if (r < 0)
		return r;
	*off = (int64_t)(before / 2 + after / 2) - (int64_t)fw->t_now;
	*err = (after - before) / 2 + 1;
	return 0;
}

static int simple_op(struct fo_fowatch_owner *o, fo_domid_t domid, uint32_t op)
{
	struct fo_xen_failover_watch fw = { .op = op };

	return o->domctl(o->ctx, domid, &fw);
}

/* The watch is gone: none on the domain, or the domain itself is (Xen
 * tears a watch down when either member dies). */
static bool watch_gone(int r)
{
	return r == -ENOENT || r == -ESRCH;
}

static uint64_t on_our_clock(uint64_t xen_ns, int64_t off)
{
	return xen_ns ? (uint64_t)((int64_t)xen_ns + off) : 0;
}

int fo_fowatch_probe(fo_fowatch_domctl_fn domctl, void *ctx)
{
	struct fo_xen_failover_watch fw = { .op = FO_FOWATCH_OP_QUERY };
	int r = domctl(ctx, 0, &fw);

	if (r == -ENOENT)
		return 0; /* the command exists; dom0 is never watched */
	if (r == 0)
		return -EPROTO; /* a watch on dom0: not the interface we know */
	return r == -ENOSYS || r == -EOPNOTSUPP ? -ENOSYS : r;
}

void fo_fowatch_owner_init(struct fo_fowatch_owner *o, struct fo_hv *hv, fo_fowatch_domctl_fn domctl, void *ctx,
			   uint16_t cpu, uint32_t poll_us)
{
	memset(o, 0, sizeof(*o));
	o->hv = hv;
	o->domctl = domctl;
	o->ctx = ctx;
	o->cpu = cpu;
	o->poll_us = poll_us ? poll_us : FO_FOWATCH_DEFAULT_POLL_US;
}

static struct fo_fowatch_slot *slot_by_pair(struct fo_fowatch_owner *o, uint32_t pair_id)
{
	for (size_t i = 0; i < FO_MAX_PAIRS; i++)
		if (o->slot[i].used && o->slot[i].pair_id == pair_id)
			return &o->slot[i];
	return NULL;
}

static struct fo_fowatch_slot *slot_new(struct fo_fowatch_owner *o, uint32_t pair_id)
{
	struct fo_fowatch_slot *s = slot_by_pair(o, pair_id);

	for (size_t i = 0; i < FO_MAX_PAIRS && !s; i++)
		if (!o->slot[i].used)
			s = &o->slot[i];
	if (s)
		*s = (struct fo_fowatch_slot){ .used = true, .pair_id = pair_id };
	return s;
}

static bool is_end_state(uint32_t state)
{
	return state != FO_FOWATCH_STATE_ARMED && state != FO_FOWATCH_STATE_QUIESCING;
}

static enum fo_hv_ktrigger trigger_of(const struct fo_xen_failover_watch *fw)
{
	if (fw->reason != FO_FOWATCH_REASON_SHUTDOWN)
		return FO_HV_KTRIGGER_TIMEOUT;
	return fw->shutdown_code == SHUTDOWN_CRASH ? FO_HV_KTRIGGER_CRASH : FO_HV_KTRIGGER_SHUTDOWN;
}

static void queue_event(struct fo_fowatch_owner *o, const struct fo_fowatch_slot *s,
			const struct fo_xen_failover_watch *fw, int64_t off, uint64_t err)
{
	struct fo_hv *hv = o->hv;
	struct fo_hv_kevent *ev;

	if (o->n_queued == FO_MAX_PAIRS) {
		fo_err("failover watch: event queue full; the switch dom%u -> dom%u is seen as a domain change",
		       s->active, s->standby);
		return;
	}
	ev = &o->queued[o->n_queued++];
	memset(ev, 0, sizeof(*ev));
	ev->pair_id = s->pair_id;
	ev->active = fw->active;
	ev->standby = fw->standby;
	ev->owner = "hypervisor";
	ev->trigger = trigger_of(fw);
	switch (fw->state) {
	case FO_FOWATCH_STATE_FIRED:
		ev->result = FO_HV_KSWITCH_OK;
		break;
	case FO_FOWATCH_STATE_FAILED_STANDBY:
		/* The standby was unfit: Xen left it alone. Fenced only with
		 * FENCE_ALWAYS (we do not set it): the active may still run. */
		ev->result = fw->flags & (FO_FOWATCH_OUT_FENCED | FO_FOWATCH_OUT_PAUSING) ? FO_HV_KSWITCH_FAILED : FO_HV_KSWITCH_ABORTED;
		ev->error = -EBUSY;
		break;
	default: /* FAILED_QUIESCE: fenced, but a vCPU still ran; the standby left paused */
		ev->result = FO_HV_KSWITCH_ABORTED;
		ev->error = -ETIMEDOUT;
		ev->refenced = true;
		break;
	}
	ev->last_notify_ns = on_our_clock(fw->t_progress, off);
	if (ev->trigger == FO_HV_KTRIGGER_TIMEOUT && fw->t_progress)
		ev->deadline_ns = on_our_clock(fw->t_progress + (uint64_t)fw->timeout_us * 1000ull, off);
	ev->detected_ns = on_our_clock(fw->t_detect, off);
	/* Xen's fence is our "pause issued"; all vCPUs off is "pause done";
	 * the standby's unpause follows the quiesce at once. */
	ev->pause_issued_ns = on_our_clock(fw->t_fence, off);
	ev->pause_done_ns = on_our_clock(fw->t_quiesced, off);
	ev->unpause_issued_ns = ev->pause_done_ns;
	ev->unpause_done_ns = on_our_clock(fw->t_switched, off);
	ev->clock_err_ns = err;
	if (hv->ops->get_state(hv, fw->active, &ev->active_state) < 0)
		ev->active_state = FO_DOM_GONE;
	if (hv->ops->get_state(hv, fw->standby, &ev->standby_state) < 0)
		ev->standby_state = FO_DOM_GONE;
}

/*
 * The watch `fw` (QUERYd through slot `s`) is in an end state: make the
 * fence ours, RELEASE, and queue its event. Returns true if an event was
 * queued (a switch, done or failed), false if the watch ended without one.
 */
static bool finish(struct fo_fowatch_owner *o, struct fo_fowatch_slot *s, const struct fo_xen_failover_watch *fw,
		   int64_t off, uint64_t err)
{
	bool event = fw->state != FO_FOWATCH_STATE_ABORTED;
	int r;

	/* RELEASE alone: Xen turns a pause it holds of the failed active into
	 * a toolstack pause in the same call, so the active never runs in
	 * between. No pause of ours first: a synchronous pause waits in Xen,
	 * under its domctl lock, for a vCPU that may never stop
	 * (FAILED_QUIESCE). If the RELEASE fails the watch keeps its pause. */
	r = simple_op(o, fw->active, FO_FOWATCH_OP_RELEASE);
	if (r < 0 && r != -ENOENT) {
		fo_err("failover watch: RELEASE of dom%u -> dom%u: %s; the watch keeps its pause", fw->active,
		       fw->standby, strerror(-r));
		return false; /* looked at again at the next VIRQ or poll */
	}
	if (event)
		queue_event(o, s, fw, off, err);
	else
		fo_info("failover watch: dom%u -> dom%u ended without a switch (%s)", fw->active, fw->standby,
			fo_fowatch_reason_name(fw->reason));
	s->used = false;
	return event;
}

/*
 * ARM `active` -> `standby` on the page `gref`, in event mode on the
 * agent's `port` when this Xen has it. *event_port: the port Xen listens
 * to, 0 when it polls.
 */
static int arm_on(struct fo_fowatch_owner *o, fo_domid_t active, fo_domid_t standby, uint32_t gref,
		  uint32_t port, uint32_t timeout_ms, uint32_t period_ms, uint32_t *event_port)
{
	struct fo_xen_failover_watch fw = { .op = FO_FOWATCH_OP_ARM };
	int r;

	*event_port = 0;
	if (period_ms == 0 || timeout_ms < 2 * period_ms)
		return -EINVAL;
	fw.standby = standby;
	fw.cpu = o->cpu;
	fw.gref = gref;
	fw.offset = offsetof(struct fo_hb_page, sequence);
	/* Where Xen polls, it reads the sequence every poll_us (never less
	 * often than the agent beats): a fault is seen within timeout +
	 * poll_us of the last progress, where our own deadline and a
	 * once-a-period look would add up to a whole heartbeat period. Event
	 * mode keeps the same period for QUERY and a re-ARM without it. */
	fw.period_us = o->poll_us < period_ms * US_PER_MS ? o->poll_us : period_ms * US_PER_MS;
	if (fw.period_us < FO_FOWATCH_MIN_PERIOD_US)
		fw.period_us = FO_FOWATCH_MIN_PERIOD_US;
	fw.timeout_us = timeout_ms * US_PER_MS;
	if (port) {
		/* The agent notifies after every beat: Xen stamps the beat
		 * then and fires at the deadline itself, no period added. */
		struct fo_xen_failover_watch ev = fw;

		ev.flags |= FO_FOWATCH_F_EVENT;
		ev.port = port;
		r = o->domctl(o->ctx, active, &ev);
		if (r != -EINVAL) {
			if (r == 0)
				*event_port = port;
			return r;
		}
		/* Probed at each ARM, not assumed: the same ARM in polling
		 * mode decides whether event mode or something else was
		 * refused. Not remembered: a port the agent had just left is
		 * refused too, and must not cost the other pairs event mode. */
		r = o->domctl(o->ctx, active, &fw);
		if (r == 0 && !o->told_no_event) {
			o->told_no_event = true;
			fo_warn("failover watch: Xen refused event mode for dom%u's port %u (a series without rt-patches "
				"0012?): it reads that heartbeat every %u us instead, and detection lags the deadline by up "
				"to that", active, port, fw.period_us);
		}
		return r;
	}
	return o->domctl(o->ctx, active, &fw);
}

int fo_fowatch_arm(struct fo_fowatch_owner *o, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
		   uint32_t timeout_ms, uint32_t period_ms)
{
	struct fo_hv *hv = o->hv;
	struct fo_fowatch_slot *s;
	uint32_t gref, port, event_port;
	int r;

	if (slot_by_pair(o, pair_id))
		return -EBUSY;
	if (!hv->ops->agent_page)
		return -EOPNOTSUPP;
	r = hv->ops->agent_page(hv, active, &gref, &port);
	if (r < 0)
		return r; /* -ENOENT: no agent attached yet, as the module's ARM */
	r = arm_on(o, active, standby, gref, port, timeout_ms, period_ms, &event_port);
	if (r < 0)
		return r;
	s = slot_new(o, pair_id);
	if (!s) {
		simple_op(o, active, FO_FOWATCH_OP_DISARM);
		return -ENOSPC;
	}
	s->active = active;
	s->standby = standby;
	s->timeout_ms = timeout_ms;
	s->period_ms = period_ms;
	s->gref = gref;
	s->port = event_port;
	return 0;
}

int fo_fowatch_disarm(struct fo_fowatch_owner *o, uint32_t pair_id)
{
	struct fo_fowatch_slot *s = slot_by_pair(o, pair_id);
	struct fo_xen_failover_watch fw;
	uint64_t err;
	int64_t off;
	int r;

	if (!s)
		return -ENOENT;
	r = simple_op(o, s->active, FO_FOWATCH_OP_DISARM);
	if (r == -ESRCH) /* the active is gone: ask by the standby */
		r = simple_op(o, s->standby, FO_FOWATCH_OP_DISARM);
	if (r == 0 || watch_gone(r)) {
		/* Gone: disarmed, or torn down when a member died (no switch). */
		s->used = false;
		return r ? -ENOENT : 0;
	}
	if (r != -EBUSY)
		return r;
	/* EBUSY: quiescing (Xen is switching) or fenced in an end state. */
	r = query(o, s->active, &fw, &off, &err);
	if (watch_gone(r)) {
		s->used = false;
		return -ENOENT;
	}
	if (r < 0)
		return r;
	if (!is_end_state(fw.state))
		return -EALREADY; /* its event follows with the VIRQ */
	finish(o, s, &fw, off, err);
	return -ENOENT; /* not armed; the event, if any, is queued */
}

int fo_fowatch_adopt(struct fo_fowatch_owner *o, uint32_t pair_id, const fo_domid_t members[2],
		     struct fo_hv_karm *ret)
{
	struct fo_fowatch_slot *s = slot_by_pair(o, pair_id);
	struct fo_xen_failover_watch fw;
	uint64_t err;
	int64_t off;
	int r = -ENOENT;

	if (s)
		r = query(o, s->active, &fw, &off, &err);
	for (int i = 0; i < 2 && watch_gone(r) && !s; i++)
		if (members && members[i] != FO_DOMID_INVALID)
			r = query(o, members[i], &fw, &off, &err);
	if (r < 0) {
		if (!watch_gone(r))
			return r;
		if (s)
			s->used = false;
		return -ENOENT;
	}
	if (!s) {
		s = slot_new(o, pair_id);
		if (!s)
			return -ENOSPC;
		s->active = fw.active;
		s->standby = fw.standby;
		s->timeout_ms = fw.timeout_us / US_PER_MS;
		/* Not the pair's period, which Xen does not keep: its own read
		 * period, rounded up, is what a re-ARM needs to get the same. */
		s->period_ms = (fw.period_us + US_PER_MS - 1) / US_PER_MS;
		s->gref = fw.gref;
		s->port = fw.flags & FO_FOWATCH_F_EVENT ? fw.port : 0;
	}
	if (is_end_state(fw.state)) {
		finish(o, s, &fw, off, err);
		return -ENOENT; /* as the module after a switch: its event is queued */
	}
	if (ret) {
		memset(ret, 0, sizeof(*ret));
		ret->pair_id = pair_id;
		ret->active = fw.active;
		ret->standby = fw.standby;
		ret->timeout_ns = (uint64_t)fw.timeout_us * 1000ull;
		ret->armed_ns = on_our_clock(fw.t_armed, off);
		ret->last_notify_ns = on_our_clock(fw.t_progress, off);
		ret->deadline_ns = ret->last_notify_ns + ret->timeout_ns;
		/* Xen watches the sequence itself, not notifications: a stuck
		 * sequence is a timeout to it, never "notifying but stuck". */
		ret->notifications = 0;
		ret->firing = fw.state == FO_FOWATCH_STATE_QUIESCING;
	}
	return 0;
}

void fo_fowatch_poll(struct fo_fowatch_owner *o)
{
	struct fo_hv *hv = o->hv;
	bool changed = false;

	for (size_t i = 0; i < FO_MAX_PAIRS; i++) {
		struct fo_fowatch_slot *s = &o->slot[i];
		struct fo_xen_failover_watch fw;
		uint64_t err;
		int64_t off;
		int r;

		if (!s->used)
			continue;
		r = query(o, s->active, &fw, &off, &err);
		if (watch_gone(r)) {
			/* Torn down: a member was destroyed (Xen switched
			 * nothing), or someone else disarmed it. */
			s->used = false;
			changed = true;
			continue;
		}
		if (r < 0 || !is_end_state(fw.state))
			continue;
		if (!finish(o, s, &fw, off, err))
			changed = true;
	}
	/* Hand up in order; a callback may call back into us (DISARM of
	 * another pair), so the queue is copied out first. */
	while (o->n_queued) {
		struct fo_hv_kevent ev = o->queued[0];

		memmove(&o->queued[0], &o->queued[1], (o->n_queued - 1) * sizeof(o->queued[0]));
		o->n_queued--;
		if (hv->cb.kernel_switched)
			hv->cb.kernel_switched(hv->cb.ctx, &ev);
	}
	if (changed && hv->cb.domains_changed)
		hv->cb.domains_changed(hv->cb.ctx);
}

void fo_fowatch_agent_attached(struct fo_fowatch_owner *o, fo_domid_t domid)
{
	struct fo_hv *hv = o->hv;

	for (size_t i = 0; i < FO_MAX_PAIRS; i++) {
		struct fo_fowatch_slot *s = &o->slot[i];
		struct fo_xen_failover_watch fw;
		uint32_t gref, port, event_port;
		uint64_t err;
		int64_t off;
		int r;

		if (!s->used || s->active != domid || !hv->ops->agent_page || hv->ops->agent_page(hv, domid, &gref, &port) < 0)
			continue;
		/* Polling: only the page matters. Event mode: the port too. */
		if (gref == s->gref && (!s->port || port == s->port))
			continue;
		r = simple_op(o, s->active, FO_FOWATCH_OP_DISARM);
		if (r == -EBUSY) {
			/* Fired (or firing) on the old page before we moved it. */
			if (query(o, s->active, &fw, &off, &err) == 0 && is_end_state(fw.state))
				finish(o, s, &fw, off, err);
			continue;
		}
		if (r < 0 && !watch_gone(r)) {
			fo_warn("failover watch: dom%u's agent granted a new page (gref %u, was %u) but DISARM failed: %s",
				domid, gref, s->gref, strerror(-r));
			continue;
		}
		r = arm_on(o, s->active, s->standby, gref, port, s->timeout_ms, s->period_ms, &event_port);
		if (r < 0) {
			/* Ours alone now: the daemon's own deadline (the
			 * backstop) still watches; adopt() will say ENOENT. */
			fo_warn("failover watch: dom%u -> dom%u could not be armed again on the agent's new page (gref %u): %s; "
				"failoverd's own deadline protects the pair", s->active, s->standby, gref, strerror(-r));
			s->used = false;
			continue;
		}
		fo_info("failover watch: dom%u's agent attached anew (gref %u port %u, was %u port %u): the watch follows it",
			domid, gref, event_port, s->gref, s->port);
		s->gref = gref;
		s->port = event_port;
	}
}

/* ---- the ops a backend installs (hv->fowatch is the owner) ---- */

static int op_arm(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby, uint32_t timeout_ms,
		  uint32_t period_ms)
{
	return fo_fowatch_arm(hv->fowatch, pair_id, active, standby, timeout_ms, period_ms);
}

static int op_disarm(struct fo_hv *hv, uint32_t pair_id)
{
	return fo_fowatch_disarm(hv->fowatch, pair_id);
}

static int op_adopt(struct fo_hv *hv, uint32_t pair_id, const fo_domid_t members[2], uint32_t poll_ms,
		    struct fo_hv_karm *ret)
{
	(void)poll_ms; /* Xen reads the page itself; our channel stays bound */
	return fo_fowatch_adopt(hv->fowatch, pair_id, members, ret);
}

static void op_poll(struct fo_hv *hv)
{
	fo_fowatch_poll(hv->fowatch);
}

static const char *op_owner(struct fo_hv *hv)
{
	(void)hv;
	return "hypervisor";
}

void fo_fowatch_install(struct fo_hv *hv, struct fo_fowatch_owner *o, struct fo_hv_ops *ops)
{
	hv->fowatch = o;
	ops->kernel_arm = op_arm;
	ops->kernel_disarm = op_disarm;
	ops->kernel_adopt = op_adopt;
	ops->kernel_poll_events = op_poll;
	ops->kernel_list = NULL;
	ops->armed_owner = op_owner;
	hv->ops = ops;
}
