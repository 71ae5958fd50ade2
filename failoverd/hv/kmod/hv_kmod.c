/* SPDX-License-Identifier: MIT */
/*
 * hv_kmod.c - the kernel-module fast path: a decorator around another
 * backend (the Xen one) that sends the domain actions through
 * /dev/fo_switch (kmod-switch/) and everything else to the backend it wraps.
 *
 *   through the device   get_state, pause, unpause, switch_fenced (one
 *                        FO_SWITCH_IOC_SWITCH: pause, confirm, unpause,
 *                        confirm in the kernel, timestamps in the kernel's
 *                        CLOCK_MONOTONIC, the clock now_ns() reads)
 *   through the inner    now_ns, lookup, affinity, destroy, create, the
 *                        heartbeat channels, roles, drill commands, the fds
 *                        and their dispatch (which calls the callbacks the
 *                        inner backend was created with: we share them)
 *
 * Kernel-armed mode (kernel_arm/disarm/adopt/list, the device fd):
 *
 *   ARM      the module binds the active's heartbeat port itself, and a port
 *            has one binding on dom0's side. So: the inner backend lends us
 *            the channel (unbinds its own binding, keeps the page mapped and
 *            reads it on a timer so the daemon still sees heartbeats), then
 *            ARM; if ARM fails, the channel goes back at once.
 *   DISARM   then the channel goes back to the inner backend (bound again).
 *            EALREADY (the deadline expired, the switch is running): the
 *            module still holds the port; it goes back when the event is read.
 *   event    the module switched and unbound the port: read from the device
 *            fd (we add it to the inner's fds), the channel goes back, and
 *            cb.kernel_switched tells the daemon.
 *   adopt    a restarted daemon asks PAIRINFO for each of its pairs; an armed
 *            one keeps its channel in the kernel (the inner backend is told
 *            not to bind it). Events queued while no daemon ran are read by
 *            kernel_poll_events before any pair is armed.
 *
 * Which pair holds which channel is kept here (pair id -> active domid), so
 * that an event or a DISARM gives back exactly what ARM took.
 *
 * Why pause/unpause go through the device too: the module refuses to
 * unpause a member of a pair it owns (EBUSY, one owner per pair). That
 * guard only holds for calls that reach it.
 *
 * The Xen backend remembers the domains it is destroying ("doomed": paused,
 * torn down later on its builder thread) and reports them DYING, refuses to
 * unpause them, and pretends they are gone. The kernel cannot know about
 * them, so this file keeps the same list for the three actions it takes
 * over; a doomed domain leaves the list once Xen no longer has it.
 */
#include "hv/hv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/log.h"

#include "../../../kmod-switch/uapi/fo_switch.h"
#include "lib/limits.h"
#include "hv/doomed.h"


/* Pairs the module holds a channel for: at most one per pair, and the
 * module's own limit is FO_SWITCH_MAX_SLOTS. */
#define KMOD_LENT_MAX FO_SWITCH_MAX_SLOTS

struct kmod_lent {
	bool used;
	uint32_t pair_id;
	fo_domid_t domid; /* the member whose channel the module holds */
	bool reclaim;     /* DISARMed: bind it again at settle() */
};

struct kmod_hv {
	struct fo_hv base;
	struct fo_hv *inner;
	int fd;
	struct fo_doomed doomed;
	struct kmod_lent lent[KMOD_LENT_MAX];
	/* The inner backend has an armed owner of its own (Xen's failover
	 * watch): it keeps the pairs, the module only speeds up our own
	 * pauses and switches. kmod_ops with the inner's kernel_* ops. */
	struct fo_hv_ops ops_inner_owner;
};

static struct kmod_hv *to_kmod(struct fo_hv *hv) { return (struct kmod_hv *)hv; }

static int dev_ioctl(struct kmod_hv *k, unsigned long cmd, void *arg)
{
	return ioctl(k->fd, cmd, arg) < 0 ? -errno : 0;
}

static enum fo_dom_state state_from_dev(uint32_t s)
{
	return s <= FO_SWITCH_DOM_SUSPENDED ? (enum fo_dom_state)s : FO_DOM_GONE;
}

static bool doomed_has(const struct kmod_hv *k, fo_domid_t domid) { return fo_doomed_has(&k->doomed, domid); }
static void doomed_remove(struct kmod_hv *k, fo_domid_t domid) { fo_doomed_remove(&k->doomed, domid); }

static int dev_get_state(struct kmod_hv *k, fo_domid_t domid, enum fo_dom_state *ret_state)
{
	struct fo_switch_dom d = { .domid = domid };
	int r = dev_ioctl(k, FO_SWITCH_IOC_GETSTATE, &d);

	if (r < 0)
		return r;
	*ret_state = state_from_dev(d.state);
	return 0;
}

static int kmod_get_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret_state)
{
	struct kmod_hv *k = to_kmod(hv);
	enum fo_dom_state st;
	int r = dev_get_state(k, domid, &st);

	if (r < 0)
		return r;
	if (doomed_has(k, domid)) {
		if (st == FO_DOM_GONE)
			doomed_remove(k, domid);
		else
			st = FO_DOM_DYING; /* as the inner backend says: it is being torn down */
	}
	*ret_state = st;
	return 0;
}

static int kmod_pause(struct fo_hv *hv, fo_domid_t domid)
{
	struct kmod_hv *k = to_kmod(hv);
	struct fo_switch_dom d = { .domid = domid };

	if (doomed_has(k, domid))
		return 0; /* paused by destroy(), and it stays so */
	return dev_ioctl(k, FO_SWITCH_IOC_PAUSE, &d);
}

static int kmod_unpause(struct fo_hv *hv, fo_domid_t domid)
{
	struct kmod_hv *k = to_kmod(hv);
	struct fo_switch_dom d = { .domid = domid };

	if (doomed_has(k, domid))
		return -ESRCH;
	return dev_ioctl(k, FO_SWITCH_IOC_UNPAUSE, &d);
}

/*
 * The real-time path: one ioctl. The module checks its arguments and that
 * both domains exist before doing anything (EINVAL, ESRCH, EBUSY: nothing
 * done, and the caller then runs the sequence through pause/unpause above);
 * EIO means it got somewhere, and the struct says how far.
 */
static int kmod_switch_fenced(struct fo_hv *hv, fo_domid_t from, fo_domid_t to, struct fo_fenced_outcome *out)
{
	struct kmod_hv *k = to_kmod(hv);
	struct fo_switch_req req = { .active = from, .standby = to };
	bool refenced;
	int r;

	if (doomed_has(k, to))
		return -ESRCH;
	r = dev_ioctl(k, FO_SWITCH_IOC_SWITCH, &req);
	if (r < 0 && r != -EIO)
		return r;

	/* The module ran fenced_sequence.c: its outcome, through the uapi. */
	refenced = (req.flags & FO_SWITCH_F_REFENCED) != 0;
	*out = (struct fo_fenced_outcome){
		.result = req.result <= FO_SWITCH_FAILED ? req.result : FO_SWITCH_ABORTED,
		.from_state = state_from_dev(req.active_state),
		.to_state = state_from_dev(req.standby_state),
		.paused_from = (req.flags & FO_SWITCH_F_PAUSED_ACTIVE) != 0,
		.pause_issued_ns = req.phases.pause_issued_ns,
		.pause_done_ns = req.phases.pause_done_ns,
		.unpause_issued_ns = req.phases.unpause_issued_ns,
		.unpause_done_ns = req.phases.unpause_done_ns,
	};
	if (r == 0 && out->result != FO_SWITCH_OK)
		out->result = FO_SWITCH_ABORTED; /* a module that contradicts itself */
	switch (out->result) {
	case FO_SWITCH_OK: out->why = refenced ? FO_FENCED_WHY_REFENCED : FO_FENCED_WHY_NONE; break;
	case FO_SWITCH_FAILED: out->why = FO_FENCED_WHY_NOT_STARTED; break;
	/* A failed re-fence: the new active's state tells whether the module
	 * could at least pause it again. */
	default:
		out->why = !refenced ? FO_FENCED_WHY_NOT_FENCED
		: out->to_state == FO_SWITCH_DOM_RUNNING ? FO_FENCED_WHY_BOTH_MAY_RUN
							 : FO_FENCED_WHY_BOTH_PAUSED;
		break;
	}
	return 0;
}

static const char *kmod_switch_path(struct fo_hv *hv)
{
	return "kernel";
}

static int kmod_destroy(struct fo_hv *hv, fo_domid_t domid)
{
	struct kmod_hv *k = to_kmod(hv);
	int r = k->inner->ops->destroy(k->inner, domid);

	if (r < 0 || doomed_has(k, domid))
		return r;
	/* Forget the ones Xen has finished with; a rebuilt member has a new
	 * domid, so nobody would ask about the old one again. */
	for (size_t i = 0; i < k->doomed.n;) {
		enum fo_dom_state st;

		if (dev_get_state(k, k->doomed.ids[i], &st) == 0 && st == FO_DOM_GONE)
			fo_doomed_remove(&k->doomed, k->doomed.ids[i]);
		else
			i++;
	}
	fo_doomed_add(&k->doomed, domid);
	return r;
}

/* ---- kernel-armed mode ---- */

static struct kmod_lent *lent_find(struct kmod_hv *k, uint32_t pair_id)
{
	for (size_t i = 0; i < KMOD_LENT_MAX; i++)
		if (k->lent[i].used && k->lent[i].pair_id == pair_id)
			return &k->lent[i];
	return NULL;
}

static void lent_remember(struct kmod_hv *k, uint32_t pair_id, fo_domid_t domid)
{
	struct kmod_lent *l = lent_find(k, pair_id);

	for (size_t i = 0; !l && i < KMOD_LENT_MAX; i++)
		if (!k->lent[i].used)
			l = &k->lent[i];
	if (l)
		*l = (struct kmod_lent){ .used = true, .pair_id = pair_id, .domid = domid };
}

/* The module no longer holds the pair's channel: bind it again. */
static void lent_give_back(struct kmod_hv *k, uint32_t pair_id)
{
	struct kmod_lent *l = lent_find(k, pair_id);

	if (!l)
		return;
	l->used = false;
	if (k->inner->ops->reclaim_channel)
		k->inner->ops->reclaim_channel(k->inner, l->domid);
}

/* DISARM runs on the switch path, before our own pause: the re-bind (an
 * evtchn ioctl, and on failure xenstore reads) waits for settle(), after
 * the loop turn's switch. Until then the active's page is still read
 * every poll_ms by the inner backend, as while it was lent. */
static void lent_give_back_later(struct kmod_hv *k, uint32_t pair_id)
{
	struct kmod_lent *l = lent_find(k, pair_id);

	if (l)
		l->reclaim = true;
}

static void kmod_settle(struct fo_hv *hv)
{
	struct kmod_hv *k = to_kmod(hv);

	for (size_t i = 0; i < KMOD_LENT_MAX; i++)
		if (k->lent[i].used && k->lent[i].reclaim)
			lent_give_back(k, k->lent[i].pair_id);
	if (k->inner->ops->settle)
		k->inner->ops->settle(k->inner);
}

static int kmod_kernel_arm(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			   uint32_t timeout_ms, uint32_t poll_ms)
{
	struct kmod_hv *k = to_kmod(hv);
	struct fo_switch_arm a = { .pair_id = pair_id, .active = active, .standby = standby,
				   .timeout_ns = (uint64_t)timeout_ms * 1000000ull };
	uint32_t port = 0;
	int r;

	if (!k->inner->ops->lend_channel || !k->inner->ops->reclaim_channel)
		return -EOPNOTSUPP;
	/* DISARMed and ARMed again in one turn (an agent's new port): the
	 * re-bind settle() would do comes first, so lend finds it bound. */
	if (lent_find(k, pair_id) && lent_find(k, pair_id)->reclaim)
		lent_give_back(k, pair_id);
	if (doomed_has(k, active) || doomed_has(k, standby))
		return -ESRCH;
	/* Unbind ours first: the module's bind of the same port would get
	 * EINVAL from Xen. A notification in the gap is lost, which costs
	 * nothing: ARM starts the module's deadline at a full timeout. */
	r = k->inner->ops->lend_channel(k->inner, active, poll_ms, &port);
	if (r < 0)
		return r;
	a.port = port;
	r = dev_ioctl(k, FO_SWITCH_IOC_ARM, &a);
	if (r < 0) {
		k->inner->ops->reclaim_channel(k->inner, active);
		return r;
	}
	lent_remember(k, pair_id, active);
	return 0;
}

static int kmod_kernel_disarm(struct fo_hv *hv, uint32_t pair_id)
{
	struct kmod_hv *k = to_kmod(hv);
	uint32_t id = pair_id;
	int r = dev_ioctl(k, FO_SWITCH_IOC_DISARM, &id);

	/* ENOENT: not armed (any more): whatever fired has unbound the port.
	 * EALREADY: the worker still holds it until its switch is done; the
	 * channel goes back when its event is read. */
	if (r == 0 || r == -ENOENT)
		lent_give_back_later(k, pair_id);
	return r;
}

static struct fo_hv_karm karm_from_dev(const struct fo_switch_pair_info *info)
{
	return (struct fo_hv_karm){ .pair_id = info->pair_id,
				    .active = info->active,
				    .standby = info->standby,
				    .timeout_ns = info->timeout_ns,
				    .armed_ns = info->armed_ns,
				    .last_notify_ns = info->last_notify_ns,
				    .deadline_ns = info->deadline_ns,
				    .notifications = info->notifications,
				    .firing = info->firing != 0 };
}

static int kmod_kernel_adopt(struct fo_hv *hv, uint32_t pair_id, const fo_domid_t members[2], uint32_t poll_ms,
			     struct fo_hv_karm *ret)
{
	struct kmod_hv *k = to_kmod(hv);
	struct fo_switch_pair_info info = { .pair_id = pair_id };
	int r = dev_ioctl(k, FO_SWITCH_IOC_PAIRINFO, &info);

	(void)members; /* the module knows its pairs by id */
	if (r < 0)
		return r;
	if (!lent_find(k, pair_id) && k->inner->ops->lend_channel) {
		/* Armed before we started (or by our earlier self): the module
		 * holds the active's port; read its page instead of binding. */
		uint32_t port = info.port;

		k->inner->ops->lend_channel(k->inner, info.active, poll_ms, &port);
		lent_remember(k, pair_id, info.active);
	}
	if (ret)
		*ret = karm_from_dev(&info);
	return 0;
}

static int kmod_kernel_list(struct fo_hv *hv, struct fo_hv_karm *ret, size_t max)
{
	struct kmod_hv *k = to_kmod(hv);
	struct fo_switch_pair_info info[FO_SWITCH_MAX_SLOTS];
	struct fo_switch_list l = { .pairs = (uintptr_t)info, .capacity = FO_SWITCH_MAX_SLOTS };
	int r = dev_ioctl(k, FO_SWITCH_IOC_LIST, &l);

	if (r == -ENOTTY)
		return -EOPNOTSUPP; /* a module from before LIST */
	if (r < 0)
		return r;
	for (size_t i = 0; i < l.count && i < FO_SWITCH_MAX_SLOTS && i < max; i++)
		ret[i] = karm_from_dev(&info[i]);
	return (int)l.count;
}

static enum fo_hv_kresult kresult_from_dev(uint32_t r)
{
	return r == FO_SWITCH_OK ? FO_HV_KSWITCH_OK : r == FO_SWITCH_FAILED ? FO_HV_KSWITCH_FAILED : FO_HV_KSWITCH_ABORTED;
}

/* Read every whole event the module queued (the fd is non-blocking). */
static void kmod_kernel_poll_events(struct fo_hv *hv)
{
	struct kmod_hv *k = to_kmod(hv);
	struct fo_switch_event evs[8];

	for (;;) {
		ssize_t n = read(k->fd, evs, sizeof(evs));

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				fo_warn("kernel module: reading events from %s: %s", FO_SWITCH_DEVICE,
					strerror(errno));
			if (errno != EINTR)
				return;
			continue;
		}
		if (n == 0 || (size_t)n % sizeof(evs[0]))
			return; /* the module returns whole records only */
		for (size_t i = 0; i < (size_t)n / sizeof(evs[0]); i++) {
			const struct fo_switch_event *e = &evs[i];
			struct fo_hv_kevent ev = {
				.pair_id = e->pair_id,
				.active = e->active,
				.standby = e->standby,
				.result = kresult_from_dev(e->result),
				.error = e->error,
				.active_state = state_from_dev(e->active_state),
				.standby_state = state_from_dev(e->standby_state),
				.refenced = (e->flags & FO_SWITCH_F_REFENCED) != 0,
				.last_notify_ns = e->last_notify_ns,
				.deadline_ns = e->deadline_ns,
				.detected_ns = e->detected_ns,
				.notifications = e->notifications,
				.pause_issued_ns = e->phases.pause_issued_ns,
				.pause_done_ns = e->phases.pause_done_ns,
				.unpause_issued_ns = e->phases.unpause_issued_ns,
				.unpause_done_ns = e->phases.unpause_done_ns,
			};

			/* The worker unbound the port before queueing this. */
			lent_give_back(k, e->pair_id);
			if (hv->cb.kernel_switched)
				hv->cb.kernel_switched(hv->cb.ctx, &ev);
		}
		if ((size_t)n < sizeof(evs))
			return;
	}
}

/* ---- everything else: the inner backend ---- */

static uint64_t kmod_now_ns(struct fo_hv *hv)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->now_ns(in);
}

static int kmod_lookup(struct fo_hv *hv, const char *name, fo_domid_t *ret_domid)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->lookup(in, name, ret_domid);
}

static int kmod_get_handle(struct fo_hv *hv, fo_domid_t domid, uint8_t ret[16])
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->get_handle ? in->ops->get_handle(in, domid, ret) : -EOPNOTSUPP;
}

static int kmod_set_affinity(struct fo_hv *hv, fo_domid_t domid, const int *pcpus, size_t n_pcpus)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->set_affinity(in, domid, pcpus, n_pcpus);
}

static int kmod_create(struct fo_hv *hv, const char *config_path)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->create(in, config_path);
}

static int kmod_watch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->watch_member(in, domid);
}

static void kmod_unwatch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	in->ops->unwatch_member(in, domid);
}

static int kmod_set_role(struct fo_hv *hv, fo_domid_t domid, const char *role)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->set_role(in, domid, role);
}

static int kmod_agent_command(struct fo_hv *hv, fo_domid_t domid, const char *cmd)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->agent_command(in, domid, cmd);
}

static size_t kmod_get_fds(struct fo_hv *hv, int *fds, size_t max)
{
	struct kmod_hv *k = to_kmod(hv);
	size_t n = k->inner->ops->get_fds(k->inner, fds, max);

	/* The device: readable when the module queued a switch event. */
	if (n < max)
		fds[n++] = k->fd;
	return n;
}

static bool kmod_fd_is_rt(struct fo_hv *hv, int fd)
{
	struct kmod_hv *k = to_kmod(hv);

	/* The module's events are switches: real time. */
	return fd == k->fd || !k->inner->ops->fd_is_rt || k->inner->ops->fd_is_rt(k->inner, fd);
}

static bool kmod_fds_changed(struct fo_hv *hv)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->fds_changed(in);
}

static void kmod_dispatch(struct fo_hv *hv, int fd)
{
	struct kmod_hv *k = to_kmod(hv);

	if (fd == k->fd)
		kmod_kernel_poll_events(hv);
	else
		k->inner->ops->dispatch(k->inner, fd);
}

static void kmod_free(struct fo_hv *hv)
{
	struct kmod_hv *k = to_kmod(hv);

	fo_hv_free(k->inner);
	if (k->fd >= 0)
		close(k->fd);
	free(k);
}

/* Placement is the Xen backend's business; the module has no part in it. */
static int kmod_cpupool_ensure(struct fo_hv *hv, const char *name, const char *sched, const struct fo_cpumask *cpus,
			       char *why, size_t whylen)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	if (!in->ops->cpupool_ensure)
		return -EOPNOTSUPP;
	return in->ops->cpupool_ensure(in, name, sched, cpus, why, whylen);
}

static int kmod_cpupool_get(struct fo_hv *hv, const char *name, struct fo_hv_pool *ret)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->cpupool_get ? in->ops->cpupool_get(in, name, ret) : -EOPNOTSUPP;
}

static int kmod_cpupool_move(struct fo_hv *hv, fo_domid_t domid, const char *name)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->cpupool_move ? in->ops->cpupool_move(in, domid, name) : -EOPNOTSUPP;
}

static int kmod_get_placement(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_placement *ret)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->get_placement ? in->ops->get_placement(in, domid, ret) : -EOPNOTSUPP;
}

static int kmod_pin_vcpu(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const struct fo_cpumask *hard)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->pin_vcpu ? in->ops->pin_vcpu(in, domid, vcpu, hard) : -EOPNOTSUPP;
}

static void kmod_state_pair(struct fo_hv *hv, const char *pair, fo_domid_t active, fo_domid_t standby, bool serving)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	if (in->ops->state_pair)
		in->ops->state_pair(in, pair, active, standby, serving);
}

static void kmod_state_stream(struct fo_hv *hv, const struct fo_hv_state_stream *hooks, void *ctx)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	if (in->ops->state_stream)
		in->ops->state_stream(in, hooks, ctx);
}

static bool kmod_state_info(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_state_info *ret)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->state_info && in->ops->state_info(in, domid, ret);
}

static int kmod_boot_note_read(struct fo_hv *hv, char *buf, size_t len)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->boot_note_read ? in->ops->boot_note_read(in, buf, len) : -EOPNOTSUPP;
}

static int kmod_vif_mac(struct fo_hv *hv, fo_domid_t domid, unsigned device, uint8_t ret_mac[6])
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->vif_mac ? in->ops->vif_mac(in, domid, device, ret_mac) : -EOPNOTSUPP;
}

static int kmod_boot_note_write(struct fo_hv *hv, const char *text)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->boot_note_write ? in->ops->boot_note_write(in, text) : -EOPNOTSUPP;
}

static void kmod_heartbeat_look(struct fo_hv *hv, fo_domid_t domid)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	if (in->ops->heartbeat_look)
		in->ops->heartbeat_look(in, domid);
}

/* The armed-owner ops of an inner backend that has its own owner. */
static int fwd_kernel_arm(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			  uint32_t timeout_ms, uint32_t poll_ms)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->kernel_arm(in, pair_id, active, standby, timeout_ms, poll_ms);
}

static int fwd_kernel_disarm(struct fo_hv *hv, uint32_t pair_id)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->kernel_disarm(in, pair_id);
}

static int fwd_kernel_adopt(struct fo_hv *hv, uint32_t pair_id, const fo_domid_t members[2], uint32_t poll_ms,
			    struct fo_hv_karm *ret)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->kernel_adopt(in, pair_id, members, poll_ms, ret);
}

static void fwd_kernel_poll_events(struct fo_hv *hv)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	in->ops->kernel_poll_events(in);
}

static const char *fwd_armed_owner(struct fo_hv *hv)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->armed_owner(in);
}

static int fwd_kernel_list(struct fo_hv *hv, struct fo_hv_karm *ret, size_t max)
{
	struct fo_hv *in = to_kmod(hv)->inner;

	return in->ops->kernel_list(in, ret, max);
}

/* One owner per pair: with the inner's owner in charge, a pair an earlier
 * failoverd armed in the module (configured with the kernel path) must not
 * stay armed there too. DISARM leaves both domains as they are. */
static void give_up_module_pairs(struct kmod_hv *k)
{
	struct fo_hv_karm armed[KMOD_LENT_MAX];
	int n = kmod_kernel_list(&k->base, armed, KMOD_LENT_MAX);

	for (int i = 0; i < n && i < KMOD_LENT_MAX; i++) {
		int r = kmod_kernel_disarm(&k->base, armed[i].pair_id);

		fo_warn("kernel module: pair id %u (dom%u -> dom%u) was armed in the module, but %s owns armed pairs now: %s",
			armed[i].pair_id, armed[i].active, armed[i].standby, k->inner->ops->armed_owner(k->inner),
			r == 0 ? "disarmed there" : strerror(-r));
	}
}

static const struct fo_hv_ops kmod_ops = {
	.name = "xen+kernel",
	.now_ns = kmod_now_ns,
	.lookup = kmod_lookup,
	.get_state = kmod_get_state,
	.get_handle = kmod_get_handle,
	.pause = kmod_pause,
	.unpause = kmod_unpause,
	.set_affinity = kmod_set_affinity,
	.destroy = kmod_destroy,
	.create = kmod_create,
	.watch_member = kmod_watch_member,
	.unwatch_member = kmod_unwatch_member,
	.set_role = kmod_set_role,
	.state_pair = kmod_state_pair,
	.state_info = kmod_state_info,
	.state_stream = kmod_state_stream,
	.boot_note_read = kmod_boot_note_read,
	.boot_note_write = kmod_boot_note_write,
	.vif_mac = kmod_vif_mac,
	.heartbeat_look = kmod_heartbeat_look,
	.agent_command = kmod_agent_command,
	.get_fds = kmod_get_fds,
	.fds_changed = kmod_fds_changed,
	.fd_is_rt = kmod_fd_is_rt,
	.dispatch = kmod_dispatch,
	.free = kmod_free,
	.switch_fenced = kmod_switch_fenced,
	.switch_path = kmod_switch_path,
	.kernel_arm = kmod_kernel_arm,
	.kernel_disarm = kmod_kernel_disarm,
	.settle = kmod_settle,
	.kernel_adopt = kmod_kernel_adopt,
	.kernel_poll_events = kmod_kernel_poll_events,
	.kernel_list = kmod_kernel_list,
	.cpupool_ensure = kmod_cpupool_ensure,
	.cpupool_get = kmod_cpupool_get,
	.cpupool_move = kmod_cpupool_move,
	.get_placement = kmod_get_placement,
	.pin_vcpu = kmod_pin_vcpu,
};

int fo_hv_kmod_wrap(struct fo_hv *inner, const char *device, struct fo_hv **ret)
{
	struct fo_switch_dom probe = { .domid = 0 };
	struct kmod_hv *k = NULL;
	int rc;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	/* Non-blocking: events are read from the loop until EAGAIN. */
	k->fd = open(device ? device : FO_SWITCH_DEVICE, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (k->fd < 0) {
		rc = -errno;
		goto fail;
	}
	/* Something that answers GETSTATE for dom0 with "running" is the
	 * module (a stray file of that name answers ENOTTY). */
	rc = dev_ioctl(k, FO_SWITCH_IOC_GETSTATE, &probe);
	if (rc == 0 && probe.state != FO_SWITCH_DOM_RUNNING)
		rc = -EPROTO;
	if (rc < 0)
		goto fail;

	k->base.ops = &kmod_ops;
	if (inner->ops->armed_owner && inner->ops->kernel_arm) {
		k->ops_inner_owner = kmod_ops;
		k->ops_inner_owner.kernel_arm = fwd_kernel_arm;
		k->ops_inner_owner.kernel_disarm = fwd_kernel_disarm;
		k->ops_inner_owner.kernel_adopt = fwd_kernel_adopt;
		k->ops_inner_owner.kernel_poll_events = fwd_kernel_poll_events;
		k->ops_inner_owner.kernel_list = inner->ops->kernel_list ? fwd_kernel_list : NULL;
		k->ops_inner_owner.armed_owner = fwd_armed_owner;
		k->base.ops = &k->ops_inner_owner;
		give_up_module_pairs(k);
	}
	k->base.cb = inner->cb;
	k->inner = inner;
	*ret = &k->base;
	return 0;
fail:
	if (k->fd >= 0)
		close(k->fd);
	free(k);
	return rc;
}
