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
#include "hv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../../kmod-switch/uapi/fo_switch.h"
#include "../core/config.h"
#include "../core/events.h" /* the FO_PHASE_* switch_fenced fills */

_Static_assert(FO_SWITCH_DOM_RUNNING == (int)FO_DOM_RUNNING && FO_SWITCH_DOM_PAUSED == (int)FO_DOM_PAUSED &&
		       FO_SWITCH_DOM_CRASHED == (int)FO_DOM_CRASHED &&
		       FO_SWITCH_DOM_SHUTDOWN == (int)FO_DOM_SHUTDOWN && FO_SWITCH_DOM_DYING == (int)FO_DOM_DYING &&
		       FO_SWITCH_DOM_GONE == (int)FO_DOM_GONE,
	       "fo_switch_dom_state and fo_dom_state must agree");

/* Every member of every pair could be doomed at once. */
#define KMOD_DOOMED_MAX (2 * FO_MAX_PAIRS)

struct kmod_hv {
	struct fo_hv base;
	struct fo_hv *inner;
	int fd;
	fo_domid_t doomed[KMOD_DOOMED_MAX];
	size_t n_doomed;
};

static struct kmod_hv *to_kmod(struct fo_hv *hv) { return (struct kmod_hv *)hv; }

static int dev_ioctl(struct kmod_hv *k, unsigned long cmd, void *arg)
{
	return ioctl(k->fd, cmd, arg) < 0 ? -errno : 0;
}

static enum fo_dom_state state_from_dev(uint32_t s)
{
	return s <= FO_SWITCH_DOM_GONE ? (enum fo_dom_state)s : FO_DOM_GONE;
}

static bool doomed_has(const struct kmod_hv *k, fo_domid_t domid)
{
	for (size_t i = 0; i < k->n_doomed; i++)
		if (k->doomed[i] == domid)
			return true;
	return false;
}

static void doomed_remove(struct kmod_hv *k, fo_domid_t domid)
{
	for (size_t i = 0; i < k->n_doomed; i++)
		if (k->doomed[i] == domid) {
			k->doomed[i] = k->doomed[--k->n_doomed];
			return;
		}
}

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
static int kmod_switch_fenced(struct fo_hv *hv, fo_domid_t from, fo_domid_t to, uint64_t phase_ns[],
			      enum fo_dom_state *ret_from_state, enum fo_dom_state *ret_to_state)
{
	struct kmod_hv *k = to_kmod(hv);
	struct fo_switch_req req = { .active = from, .standby = to };
	int r;

	if (doomed_has(k, to))
		return -ESRCH;
	r = dev_ioctl(k, FO_SWITCH_IOC_SWITCH, &req);
	if (r < 0 && r != -EIO)
		return r;

	phase_ns[FO_PHASE_PAUSE_ISSUED] = req.phases.pause_issued_ns;
	phase_ns[FO_PHASE_PAUSE_DONE] = req.phases.pause_done_ns;
	phase_ns[FO_PHASE_UNPAUSE_ISSUED] = req.phases.unpause_issued_ns;
	phase_ns[FO_PHASE_UNPAUSE_DONE] = req.phases.unpause_done_ns;
	*ret_from_state = state_from_dev(req.active_state);
	*ret_to_state = state_from_dev(req.standby_state);
	if (r == 0 && req.result == FO_SWITCH_OK)
		return 0;
	/* FAILED: `from` is fenced, `to` did not start. ABORTED: `from` could
	 * not be confirmed fenced, `to` untouched (or both paused after a
	 * failed re-fence). */
	return req.result == FO_SWITCH_FAILED ? -EAGAIN : -EIO;
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
	for (size_t i = 0; i < k->n_doomed;) {
		enum fo_dom_state st;

		if (dev_get_state(k, k->doomed[i], &st) == 0 && st == FO_DOM_GONE)
			k->doomed[i] = k->doomed[--k->n_doomed];
		else
			i++;
	}
	if (k->n_doomed < KMOD_DOOMED_MAX)
		k->doomed[k->n_doomed++] = domid;
	return r;
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
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->get_fds(in, fds, max);
}

static bool kmod_fds_changed(struct fo_hv *hv)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	return in->ops->fds_changed(in);
}

static void kmod_dispatch(struct fo_hv *hv, int fd)
{
	struct fo_hv *in = to_kmod(hv)->inner;
	in->ops->dispatch(in, fd);
}

static void kmod_free(struct fo_hv *hv)
{
	struct kmod_hv *k = to_kmod(hv);

	fo_hv_free(k->inner);
	if (k->fd >= 0)
		close(k->fd);
	free(k);
}

static const struct fo_hv_ops kmod_ops = {
	.name = "xen+kernel",
	.now_ns = kmod_now_ns,
	.lookup = kmod_lookup,
	.get_state = kmod_get_state,
	.pause = kmod_pause,
	.unpause = kmod_unpause,
	.set_affinity = kmod_set_affinity,
	.destroy = kmod_destroy,
	.create = kmod_create,
	.watch_member = kmod_watch_member,
	.unwatch_member = kmod_unwatch_member,
	.set_role = kmod_set_role,
	.agent_command = kmod_agent_command,
	.get_fds = kmod_get_fds,
	.fds_changed = kmod_fds_changed,
	.dispatch = kmod_dispatch,
	.free = kmod_free,
	.switch_fenced = kmod_switch_fenced,
	.switch_path = kmod_switch_path,
};

int fo_hv_kmod_wrap(struct fo_hv *inner, const char *device, struct fo_hv **ret)
{
	struct fo_switch_dom probe = { .domid = 0 };
	struct kmod_hv *k = NULL;
	int rc;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->fd = open(device ? device : FO_SWITCH_DEVICE, O_RDWR | O_CLOEXEC | O_NOCTTY);
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
