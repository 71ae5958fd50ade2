/* SPDX-License-Identifier: MIT */
/*
 * kernel.c - the simulated kernel module (kmod-switch's ARM mode, see
 * hv_sim.h): armed pairs, the module's timer on the virtual clock, the
 * module's own fenced switch (kmod-switch/fenced_sequence.c over Xen's
 * counted pauses), its events, and the ops hv_kmod.c adds over the backend.
 */
#include "hv/sim/sim_internal.h"

#include <errno.h>
#include <string.h>

struct sim_kpair *sim_kpair_owning(struct fo_hv_sim *s, fo_domid_t domid)
{
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
		if (s->kpairs[i].used && (s->kpairs[i].active == domid || s->kpairs[i].standby == domid))
			return &s->kpairs[i];
	return NULL;
}

/* ---- the simulated kernel module ---- */

static struct sim_kpair *kpair_find(struct fo_hv_sim *s, uint32_t id)
{
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
		if (s->kpairs[i].used && s->kpairs[i].id == id)
			return &s->kpairs[i];
	return NULL;
}

static int kpair_arm(struct fo_hv_sim *s, uint32_t id, fo_domid_t active, fo_domid_t standby, uint32_t timeout_ms,
		     uint32_t poll_ms)
{
	struct sim_kpair *k = NULL;

	if (active == standby || active == 0 || standby == 0 || timeout_ms == 0)
		return -EINVAL;
	if (!sim_find_dom(s, active) || !sim_find_dom(s, standby))
		return -ESRCH;
	if (kpair_find(s, id) || sim_kpair_owning(s, active) || sim_kpair_owning(s, standby))
		return -EBUSY;
	for (size_t i = 0; i < SIM_MAX_KPAIRS && !k; i++)
		if (!s->kpairs[i].used)
			k = &s->kpairs[i];
	if (!k)
		return -ENOSPC;
	*k = (struct sim_kpair){ .used = true, .id = id, .active = active, .standby = standby,
				 .timeout_ns = (uint64_t)timeout_ms * 1000000ull };
	k->armed_ns = k->last_notify_ns = s->clock_ns;
	k->deadline_ns = s->clock_ns + k->timeout_ns;
	k->poll_ns = (uint64_t)(poll_ms ? poll_ms : 10) * 1000000ull;
	k->next_poll_ns = s->clock_ns + k->poll_ns;
	return 0;
}

static int sim_kernel_arm(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			  uint32_t timeout_ms, uint32_t poll_ms)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = sim_enter(s, FO_SIM_KERNEL_ARM, active);

	if (r < 0)
		return r;
	/* As hv_kmod.c: the active's channel must be attached to be lent. */
	d = sim_find_dom(s, active);
	if (d && !d->watched)
		r = -ENOENT;
	if (r == 0)
		r = kpair_arm(s, pair_id, active, standby, timeout_ms, poll_ms);
	sim_set_result(s, r);
	return r;
}

static int sim_kernel_disarm(struct fo_hv *hv, uint32_t pair_id)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_kpair *k;
	int r = sim_enter(s, FO_SIM_KERNEL_DISARM, FO_DOMID_INVALID);

	if (r < 0)
		return r;
	k = kpair_find(s, pair_id);
	if (!k)
		r = -ENOENT;
	else if (k->firing)
		r = -EALREADY;
	else
		k->used = false;
	sim_set_result(s, r);
	/* As hv_kmod.c: the active's channel is ours again, bound at the
	 * next settle(), off the switch path. */
	if (r == 0 && s->n_reclaim < SIM_MAX_KPAIRS)
		s->reclaim[s->n_reclaim++] = k->active;
	return r;
}

static void sim_settle(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	for (size_t i = 0; i < s->n_reclaim; i++)
		sim_enter(s, FO_SIM_RECLAIM, s->reclaim[i]);
	s->n_reclaim = 0;
}

static struct fo_hv_karm karm_of(const struct sim_kpair *k)
{
	return (struct fo_hv_karm){ .pair_id = k->id, .active = k->active, .standby = k->standby,
				    .timeout_ns = k->timeout_ns, .armed_ns = k->armed_ns,
				    .last_notify_ns = k->last_notify_ns, .deadline_ns = k->deadline_ns,
				    .notifications = k->notifications, .firing = k->firing };
}

static int sim_kernel_list(struct fo_hv *hv, struct fo_hv_karm *ret, size_t max)
{
	struct fo_hv_sim *s = sim_of(hv);
	size_t n = 0;

	if (s->kernel_no_list)
		return -EOPNOTSUPP; /* as a module from before LIST */
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
		if (s->kpairs[i].used) {
			if (n < max)
				ret[n] = karm_of(&s->kpairs[i]);
			n++;
		}
	return (int)n;
}

static int sim_kernel_adopt(struct fo_hv *hv, uint32_t pair_id, const fo_domid_t members[2], uint32_t poll_ms,
			    struct fo_hv_karm *ret)
{
	struct sim_kpair *k = kpair_find(sim_of(hv), pair_id);

	(void)members; /* the module knows its pairs by id */
	if (!k)
		return -ENOENT;
	if (poll_ms)
		k->poll_ns = (uint64_t)poll_ms * 1000000ull; /* as hv_kmod.c lends it: read every poll_ms */
	if (ret)
		*ret = karm_of(k);
	return 0;
}

static void sim_kernel_poll_events(struct fo_hv *hv) { fo_sim_kernel_deliver(hv); }

/* The module's domctls in the model: Xen's counted pauses, not logged as
 * the daemon's own calls (the module makes them, not failoverd). */
static int kmod_model_pause(void *ctx, uint32_t domid)
{
	struct sim_domain *d = sim_find_dom(ctx, domid);

	if (!d)
		return -ESRCH;
	return d->pause_is_noop ? 0 : sim_count_pause(d);
}

static int kmod_model_unpause(void *ctx, uint32_t domid)
{
	struct sim_domain *d = sim_find_dom(ctx, domid);
	int r;

	if (!d)
		return -ESRCH;
	r = sim_domctl_unpause(d);
	if (r == 0)
		sim_check_guards(ctx);
	return r;
}

static int kmod_model_get_state(void *ctx, uint32_t domid, uint32_t *state)
{
	*state = (uint32_t)fo_sim_state(&((struct fo_hv_sim *)ctx)->base, domid);
	return 0;
}

static uint64_t kmod_model_now_ns(void *ctx) { return ((struct fo_hv_sim *)ctx)->clock_ns; }

static const struct fo_fenced_ops kmod_model_ops = {
	.pause = kmod_model_pause,
	.unpause = kmod_model_unpause,
	.get_state = kmod_model_get_state,
	.now_ns = kmod_model_now_ns,
};

/* The module's timer fired: the module's own fenced_sequence.c, then the event. */
static void kpair_fire(struct fo_hv_sim *s, struct sim_kpair *k)
{
	struct fo_hv_kevent ev = { .pair_id = k->id, .active = k->active, .standby = k->standby,
				   .last_notify_ns = k->last_notify_ns, .deadline_ns = k->deadline_ns,
				   .detected_ns = k->deadline_ns, .notifications = k->notifications };
	struct fo_fenced_outcome o;

	if (s->n_log < FO_SIM_LOG_MAX)
		s->log[s->n_log++] = (struct fo_sim_call){ .op = FO_SIM_KERNEL_SWITCH, .domid = k->active,
							   .at_ns = s->clock_ns };
	k->used = false;
	fo_fenced_switch(&kmod_model_ops, s, k->active, false, k->standby, &o);
	ev.result = o.result == FO_SWITCH_OK	   ? FO_HV_KSWITCH_OK
		    : o.result == FO_SWITCH_FAILED ? FO_HV_KSWITCH_FAILED
						   : FO_HV_KSWITCH_ABORTED;
	ev.error = o.result == FO_SWITCH_OK ? 0 : -EIO;
	ev.active_state = (enum fo_dom_state)o.from_state;
	ev.standby_state = (enum fo_dom_state)o.to_state;
	ev.refenced = fo_fenced_why_refenced(o.why);
	ev.pause_issued_ns = o.pause_issued_ns;
	ev.pause_done_ns = o.pause_done_ns;
	ev.unpause_issued_ns = o.unpause_issued_ns;
	ev.unpause_done_ns = o.unpause_done_ns;
	if (s->n_kevents < SIM_MAX_KEVENTS)
		s->kevents[s->n_kevents++] = ev;
}

/* The module's hrtimer, on the virtual clock. */
void sim_kernel_timers(struct fo_hv_sim *s)
{
	if (s->kernel_stall)
		return;
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++) {
		struct sim_kpair *k = &s->kpairs[i];

		if (!k->used || (!k->firing && s->clock_ns < k->deadline_ns))
			continue;
		k->firing = true;
		if (!s->kernel_hold)
			kpair_fire(s, k);
	}
}

/* The guard on the switch: the real module's SWITCH refuses an armed
 * pair's members; anything else falls back to the caller's sequence. */
static int sim_switch_fenced(struct fo_hv *hv, fo_domid_t from, fo_domid_t to, struct fo_fenced_outcome *out)
{
	struct fo_hv_sim *s = sim_of(hv);

	return sim_kpair_owning(s, from) || sim_kpair_owning(s, to) ? -EBUSY : -EOPNOTSUPP;
}

bool sim_kernel_holds_port(struct fo_hv_sim *s, fo_domid_t domid)
{
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
		if (s->kpairs[i].used && s->kpairs[i].active == domid)
			return true;
	return false;
}

/* fo_sim_kernel_poll_pages: the Xen backend's poll timer over lent pages.
 * Like a periodic timerfd, ticks missed while the clock jumped collapse
 * into one read. */
void sim_kernel_page_polls(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (!s->kernel_poll)
		return;
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++) {
		struct sim_kpair *k = &s->kpairs[i];
		struct sim_domain *d;

		if (!k->used || s->clock_ns < k->next_poll_ns)
			continue;
		if (s->poll_late_ns) {
			/* A loaded dom0: the poll runs late (and its grid with it). */
			k->next_poll_ns += s->poll_late_ns;
			s->poll_late_ns = 0;
			continue;
		}
		while (k->next_poll_ns <= s->clock_ns)
			k->next_poll_ns += k->poll_ns;
		d = sim_find_dom(s, k->active);
		if (d && d->watched && d->has_page)
			sim_deliver_page(hv, d); /* may disarm k: re-checked next round */
	}
}

/* The agent notified its port: the module, if it holds it, hears it. */
void sim_kernel_notified(struct fo_hv_sim *s, fo_domid_t domid)
{
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++) {
		struct sim_kpair *k = &s->kpairs[i];

		if (k->used && !k->firing && k->active == domid) {
			k->last_notify_ns = s->clock_ns;
			k->deadline_ns = s->clock_ns + k->timeout_ns;
			k->notifications++;
		}
	}
}

/* ---- the simulated kernel module: test API ---- */

void fo_sim_enable_kernel(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	/* The plain table plus what hv_kmod.c adds over the Xen backend. */
	s->kernel = true;
	s->kernel_ops = sim_ops;
	s->kernel_ops.name = "sim+kernel";
	s->kernel_ops.switch_fenced = sim_switch_fenced;
	s->kernel_ops.kernel_arm = sim_kernel_arm;
	s->kernel_ops.kernel_disarm = sim_kernel_disarm;
	s->kernel_ops.settle = sim_settle;
	s->kernel_ops.kernel_adopt = sim_kernel_adopt;
	s->kernel_ops.kernel_poll_events = sim_kernel_poll_events;
	s->kernel_ops.kernel_list = sim_kernel_list;
	hv->ops = &s->kernel_ops;
}

bool fo_sim_kernel_armed(struct fo_hv *hv, uint32_t pair_id, fo_domid_t *ret_active, fo_domid_t *ret_standby)
{
	struct sim_kpair *k = kpair_find(sim_of(hv), pair_id);

	if (k && ret_active)
		*ret_active = k->active;
	if (k && ret_standby)
		*ret_standby = k->standby;
	return k != NULL;
}

void fo_sim_kernel_hold(struct fo_hv *hv, bool on)
{
	struct fo_hv_sim *s = sim_of(hv);

	s->kernel_hold = on;
	if (!on)
		for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
			if (s->kpairs[i].used && s->kpairs[i].firing)
				kpair_fire(s, &s->kpairs[i]);
}

void fo_sim_kernel_stall(struct fo_hv *hv, bool on) { sim_of(hv)->kernel_stall = on; }

void fo_sim_kernel_without_list(struct fo_hv *hv, bool on) { sim_of(hv)->kernel_no_list = on; }

void fo_sim_kernel_notify_only(struct fo_hv *hv, fo_domid_t domid)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = sim_find_dom(s, domid);

	sim_kernel_notified(s, domid);
	sim_fowatch_notified(s, domid);
	/* Whoever reads the page on a notification reads it unchanged. */
	if (d && d->watched && d->has_page && !(s->kernel_poll && sim_kernel_holds_port(s, domid)))
		sim_deliver_page(hv, d);
}

void fo_sim_kernel_poll_pages(struct fo_hv *hv, bool on) { sim_of(hv)->kernel_poll = on; }
void fo_sim_kernel_poll_late(struct fo_hv *hv, uint64_t ns) { sim_of(hv)->poll_late_ns = ns; }

size_t fo_sim_kernel_deliver(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct fo_hv_kevent evs[SIM_MAX_KEVENTS];
	size_t n = s->n_kevents;

	/* Copied out first: a callback may arm (and fire) again. */
	memcpy(evs, s->kevents, n * sizeof(evs[0]));
	s->n_kevents = 0;
	for (size_t i = 0; i < n; i++)
		if (hv->cb.kernel_switched)
			hv->cb.kernel_switched(hv->cb.ctx, &evs[i]);
	return n;
}

size_t fo_sim_kernel_queued(struct fo_hv *hv) { return sim_of(hv)->n_kevents; }

int fo_sim_kernel_arm_external(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			       uint32_t timeout_ms)
{
	return kpair_arm(sim_of(hv), pair_id, active, standby, timeout_ms, 0);
}
