// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * pair.c - armed pairs: a kernel-bound event channel, a deadline, and a
 * worker that switches when the deadline expires.
 *
 * Timers and what moves them (one hrtimer per armed pair):
 *
 *   ARM           sets deadline = now + timeout and starts the timer at it,
 *                 pinned to the worker's CPU (see fo_pairs_init).
 *   notification  (the active's agent notifying its port) only moves
 *                 deadline = now + timeout under the pair's lock; the timer
 *                 is not reprogrammed, so a heartbeat costs a few stores.
 *   timer fires   deadline still ahead (a notification came): restart at the
 *                 new deadline. Passed: state FIRING, queue the pair for the
 *                 worker, wake it. Never rearmed after that.
 *   DISARM/unload state DISARMED, then unbind the irq and hrtimer_cancel().
 *
 * A notification is a heartbeat: the shared page's sequence is not checked
 * here (the module maps no guest memory). An agent that keeps notifying
 * while its sequence is stuck is alive for the module; failoverd, watching
 * the page, sees it.
 *
 * States (per pair, under pair->lock):
 *
 *   ARMED --deadline passed (timer)--> FIRING --worker: switch, unbind--> freed
 *     |                                  DISARM answers -EALREADY here
 *     +--DISARM / unload--> DISARMED --unbind, cancel--> freed
 *
 * Who frees a pair: DISARM (or unload) an ARMED one, the worker a FIRING one;
 * the state change under pair->lock decides which, so the irq handler, the
 * timer and the worker never see freed memory: free_irq() (inside
 * unbind_from_irqhandler) waits for a running handler and hrtimer_cancel()
 * for a running callback before either frees.
 *
 * Locks: fo_pairs_mutex (the list; ARM, DISARM, teardown, claims), then
 * pair->lock (raw: taken in hard irq and hrtimer context, also on
 * PREEMPT_RT), then fo_fired_lock. The worker switches without the mutex, so
 * a slow ARM elsewhere never delays a switch.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/spinlock.h>

#include <xen/events.h>
#include <xen/interface/event_channel.h>
#include <asm/xen/hypercall.h>

#include "events.h"
#include "pair.h"
#include "domctl.h"

/*
 * Notifications closer together than this are reported to the event core as
 * spurious: a guest that floods its port then gets its EOIs delayed (by a
 * jiffy, growing while the flood lasts) instead of eating a dom0 CPU. Any
 * sane heartbeat period is far longer; a real heartbeat arriving later
 * resets the backoff.
 */
#define FO_NOTIFY_FLOOD_NS (500 * NSEC_PER_USEC)

enum fo_pair_state {
	FO_PAIR_ARMED,
	FO_PAIR_FIRING,
	FO_PAIR_DISARMED,
};

struct fo_pair {
	struct list_head node;          /* fo_pairs, under fo_pairs_mutex */
	struct list_head fire_node;     /* fo_fired, under fo_fired_lock */
	u32 id, active, standby, remote_port;
	u64 timeout_ns, armed_ns;
	int irq;
	char irq_name[24];              /* request_irq keeps the pointer */
	struct hrtimer timer;
	struct fo_event_node *event;    /* allocated at ARM: firing allocates nothing */

	raw_spinlock_t lock;            /* everything below */
	enum fo_pair_state state;
	u64 last_notify_ns, deadline_ns, notifications;
};

static DEFINE_MUTEX(fo_pairs_mutex);
static LIST_HEAD(fo_pairs);

static DEFINE_RAW_SPINLOCK(fo_fired_lock);
static LIST_HEAD(fo_fired);
static struct task_struct *fo_worker;
static unsigned int fo_worker_cpu;

/* ------------------------------------------------------------ irq / timer */

static irqreturn_t pair_notified(int irq, void *dev_id)
{
	struct fo_pair *p = dev_id;
	unsigned int eoi_flags = 0;
	u64 now = ktime_get_ns();
	unsigned long flags;

	raw_spin_lock_irqsave(&p->lock, flags);
	if (p->state == FO_PAIR_ARMED) {
		if (now - p->last_notify_ns < FO_NOTIFY_FLOOD_NS)
			eoi_flags = XEN_EOI_FLAG_SPURIOUS;
		p->last_notify_ns = now;
		p->deadline_ns = now + p->timeout_ns;
		p->notifications++;
	}
	raw_spin_unlock_irqrestore(&p->lock, flags);
	xen_irq_lateeoi(irq, eoi_flags);
	return IRQ_HANDLED;
}

static enum hrtimer_restart pair_deadline_expired(struct hrtimer *timer)
{
	struct fo_pair *p = container_of(timer, struct fo_pair, timer);
	struct fo_switch_event *ev = &p->event->ev;
	u64 now = ktime_get_ns();
	unsigned long flags;

	raw_spin_lock_irqsave(&p->lock, flags);
	if (p->state != FO_PAIR_ARMED) {
		raw_spin_unlock_irqrestore(&p->lock, flags);
		return HRTIMER_NORESTART;
	}
	if (now < p->deadline_ns) {
		hrtimer_set_expires(timer, ns_to_ktime(p->deadline_ns));
		raw_spin_unlock_irqrestore(&p->lock, flags);
		return HRTIMER_RESTART;
	}
	p->state = FO_PAIR_FIRING;
	ev->detected_ns = now;
	ev->deadline_ns = p->deadline_ns;
	ev->last_notify_ns = p->last_notify_ns;
	ev->notifications = p->notifications;
	raw_spin_lock(&fo_fired_lock);
	list_add_tail(&p->fire_node, &fo_fired);
	raw_spin_unlock(&fo_fired_lock);
	raw_spin_unlock_irqrestore(&p->lock, flags);
	wake_up_process(fo_worker);
	return HRTIMER_NORESTART;
}

/* ----------------------------------------------------------------- worker */

static struct fo_pair *fired_pop(void)
{
	struct fo_pair *p;
	unsigned long flags;

	raw_spin_lock_irqsave(&fo_fired_lock, flags);
	p = list_first_entry_or_null(&fo_fired, struct fo_pair, fire_node);
	if (p)
		list_del(&p->fire_node);
	raw_spin_unlock_irqrestore(&fo_fired_lock, flags);
	return p;
}

/* After this no handler or timer callback of `p` runs or will run. Closes
 * the local port too; the guest's port goes back to unbound, so failoverd
 * can bind it again. */
static void pair_unbind(struct fo_pair *p)
{
	unbind_from_irqhandler(p->irq, p);
	hrtimer_cancel(&p->timer);
}

/* The real-time path: switch first, everything else afterwards. */
static void pair_fire(struct fo_pair *p)
{
	struct fo_event_node *n = p->event;
	struct fo_switch_req req = { .active = p->active, .standby = p->standby };
	struct fo_switch_event ev;
	int r;

	r = fo_switch_fenced(&req);

	n->ev.pair_id = p->id;
	n->ev.active = p->active;
	n->ev.standby = p->standby;
	n->ev.result = req.result;
	n->ev.error = r;
	n->ev.active_state = req.active_state;
	n->ev.standby_state = req.standby_state;
	n->ev.flags = req.flags;
	n->ev.phases = req.phases;

	/* What the log line needs, copied: once queued, a reader may free n. */
	ev = n->ev;

	/* The event is queued before the pair leaves the list, under the
	 * list's mutex: a DISARM that no longer finds the pair (ENOENT) then
	 * always finds its event (failoverd's fence audit relies on it; the
	 * model in tests/model found the window where it did not). The
	 * pair's slot now belongs to the event, until it is read. */
	mutex_lock(&fo_pairs_mutex);
	pair_unbind(p);
	fo_events_push(n);
	list_del(&p->node);
	mutex_unlock(&fo_pairs_mutex);
	kfree(p);

	if (r == 0)
		pr_info("pair %u: no heartbeat for %llu us, switched dom%u -> dom%u in %llu us\n",
			ev.pair_id, div_u64(ev.detected_ns - ev.last_notify_ns, NSEC_PER_USEC),
			ev.active, ev.standby,
			div_u64(req.phases.unpause_done_ns - ev.detected_ns, NSEC_PER_USEC));
	else
		pr_err("pair %u: no heartbeat, switch dom%u -> dom%u %s (active state %u, standby state %u)\n",
		       ev.pair_id, ev.active, ev.standby,
		       req.result == FO_SWITCH_FAILED ? "failed: standby not started" :
		       "aborted: active not confirmed fenced, standby left alone",
		       req.active_state, req.standby_state);
}

static int fo_worker_fn(void *unused)
{
	struct fo_pair *p;

	for (;;) {
		/* State first, then the checks: a wake-up between them is kept. */
		set_current_state(TASK_INTERRUPTIBLE);
		p = fired_pop();
		if (!p) {
			/* Fired pairs are drained before stopping: a pair
			 * that fired during unload is still switched. */
			if (kthread_should_stop())
				break;
			schedule();
			continue;
		}
		__set_current_state(TASK_RUNNING);
		pair_fire(p);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/* ------------------------------------------------------------- arm/disarm */

static struct fo_pair *pair_find(u32 id)
{
	struct fo_pair *p;

	lockdep_assert_held(&fo_pairs_mutex);
	list_for_each_entry(p, &fo_pairs, node)
		if (p->id == id)
			return p;
	return NULL;
}

static bool domain_owned(u32 domid)
{
	struct fo_pair *p;

	lockdep_assert_held(&fo_pairs_mutex);
	list_for_each_entry(p, &fo_pairs, node)
		if (p->active == domid || p->standby == domid)
			return true;
	return false;
}

int fo_pairs_claim(u32 a, u32 b)
{
	mutex_lock(&fo_pairs_mutex);
	if (domain_owned(a) || (b != FO_DOMID_NONE && domain_owned(b))) {
		mutex_unlock(&fo_pairs_mutex);
		return -EBUSY;
	}
	return 0;
}

void fo_pairs_release(void)
{
	mutex_unlock(&fo_pairs_mutex);
}

/* Runs on the worker's CPU: the timer stays there (a restart from the
 * callback keeps its CPU), so expiry wakes a worker on the CPU that is
 * already running, with no cross-CPU wake-up. Under Xen that matters: the
 * other dom0 vCPU may be descheduled by the hypervisor, and waking it took
 * up to 31 ms in the lab before the timer was pinned. */
static void pair_start_timer(void *data)
{
	struct fo_pair *p = data;

	hrtimer_start(&p->timer, ns_to_ktime(p->deadline_ns), HRTIMER_MODE_ABS_PINNED_HARD);
}

static int domain_must_exist(u32 domid)
{
	u32 st;
	int r;

	r = fo_dom_get_state(domid, &st);
	if (r < 0)
		return r;
	return st == FO_SWITCH_DOM_GONE ? -ESRCH : 0;
}

int fo_pair_arm(const struct fo_switch_arm *a)
{
	struct evtchn_bind_interdomain bind = {
		.remote_dom = (domid_t)a->active,
		.remote_port = a->port,
	};
	struct evtchn_close close = {};
	struct fo_pair *p;
	int r;

	if (!fo_domid_is_guest(a->active) || !fo_domid_is_guest(a->standby) ||
	    a->active == a->standby || a->port == 0 ||
	    a->timeout_ns < FO_SWITCH_TIMEOUT_MIN_NS || a->timeout_ns > FO_SWITCH_TIMEOUT_MAX_NS)
		return -EINVAL;
	r = domain_must_exist(a->active);
	if (r == 0)
		r = domain_must_exist(a->standby);
	if (r < 0)
		return r;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->event = kzalloc(sizeof(*p->event), GFP_KERNEL);
	if (!p->event) {
		r = -ENOMEM;
		goto err_free_pair;
	}
	p->id = a->pair_id;
	p->active = a->active;
	p->standby = a->standby;
	p->remote_port = a->port;
	p->timeout_ns = a->timeout_ns;
	snprintf(p->irq_name, sizeof(p->irq_name), "fo_switch-%u", a->pair_id);
	raw_spin_lock_init(&p->lock);
	p->state = FO_PAIR_ARMED;
	hrtimer_init(&p->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_HARD);
	p->timer.function = pair_deadline_expired;

	mutex_lock(&fo_pairs_mutex);
	if (pair_find(a->pair_id) || domain_owned(a->active) || domain_owned(a->standby)) {
		r = -EBUSY;
		goto err_unlock;
	}
	if (!fo_slot_take()) {
		r = -ENOSPC;
		goto err_unlock;
	}

	/* Deadline before binding: a notification may arrive at once. */
	p->armed_ns = ktime_get_ns();
	p->last_notify_ns = p->armed_ns;
	p->deadline_ns = p->armed_ns + p->timeout_ns;

	/* Bound here, not through bind_interdomain_evtchn_to_irqhandler_lateeoi():
	 * that one wants a xenbus_device for the remote domid, which a pair
	 * does not have. Same two steps as drivers/xen/evtchn.c. */
	r = HYPERVISOR_event_channel_op(EVTCHNOP_bind_interdomain, &bind);
	if (r < 0)
		goto err_put_slot;
	r = bind_evtchn_to_irqhandler_lateeoi(bind.local_port, pair_notified, 0, p->irq_name, p);
	if (r < 0)
		goto err_close_port;
	p->irq = r;

	list_add_tail(&p->node, &fo_pairs);
	r = smp_call_function_single(fo_worker_cpu, pair_start_timer, p, 1);
	if (r < 0)
		goto err_unbind; /* the worker's CPU went offline: no timer, no pair */
	/* Logged under the mutex: once it is released, DISARM or the worker
	 * may free p. */
	pr_info("pair %u armed: dom%u (port %u -> local %u, irq %d) -> dom%u, timeout %llu us\n",
		p->id, p->active, p->remote_port, bind.local_port, p->irq, p->standby,
		div_u64(p->timeout_ns, NSEC_PER_USEC));
	mutex_unlock(&fo_pairs_mutex);
	return 0;

err_unbind:
	list_del(&p->node);
	unbind_from_irqhandler(p->irq, p); /* closes the local port too */
	goto err_put_slot;
err_close_port:
	close.port = bind.local_port;
	HYPERVISOR_event_channel_op(EVTCHNOP_close, &close);
err_put_slot:
	fo_slot_put();
err_unlock:
	mutex_unlock(&fo_pairs_mutex);
	kfree(p->event);
err_free_pair:
	kfree(p);
	return r;
}

/* -EALREADY if the deadline expired: the worker owns the pair then. */
static int pair_disarm_locked(struct fo_pair *p)
{
	unsigned long flags;

	lockdep_assert_held(&fo_pairs_mutex);
	raw_spin_lock_irqsave(&p->lock, flags);
	if (p->state == FO_PAIR_FIRING) {
		raw_spin_unlock_irqrestore(&p->lock, flags);
		return -EALREADY;
	}
	p->state = FO_PAIR_DISARMED;
	raw_spin_unlock_irqrestore(&p->lock, flags);

	pair_unbind(p);
	list_del(&p->node);
	pr_info("pair %u disarmed (%llu notifications)\n", p->id, p->notifications);
	kfree(p->event);
	kfree(p);
	fo_slot_put();
	return 0;
}

int fo_pair_disarm(u32 pair_id)
{
	struct fo_pair *p;
	int r;

	mutex_lock(&fo_pairs_mutex);
	p = pair_find(pair_id);
	r = p ? pair_disarm_locked(p) : -ENOENT;
	mutex_unlock(&fo_pairs_mutex);
	return r;
}

static void pair_info_locked(struct fo_pair *p, struct fo_switch_pair_info *info)
{
	unsigned long flags;

	lockdep_assert_held(&fo_pairs_mutex);
	memset(info, 0, sizeof(*info));
	info->pair_id = p->id;
	info->active = p->active;
	info->standby = p->standby;
	info->port = p->remote_port;
	info->timeout_ns = p->timeout_ns;
	info->armed_ns = p->armed_ns;
	raw_spin_lock_irqsave(&p->lock, flags);
	info->last_notify_ns = p->last_notify_ns;
	info->deadline_ns = p->deadline_ns;
	info->notifications = p->notifications;
	info->firing = p->state == FO_PAIR_FIRING;
	raw_spin_unlock_irqrestore(&p->lock, flags);
}

int fo_pair_info(struct fo_switch_pair_info *info)
{
	struct fo_pair *p;
	int r = 0;

	mutex_lock(&fo_pairs_mutex);
	p = pair_find(info->pair_id);
	if (p)
		pair_info_locked(p, info);
	else
		r = -ENOENT;
	mutex_unlock(&fo_pairs_mutex);
	return r;
}

/* A firing pair stays on fo_pairs until the worker has switched it, so it
 * is listed (firing = 1) until then, as PAIRINFO shows it. */
u32 fo_pairs_list(struct fo_switch_pair_info *out, u32 max)
{
	struct fo_pair *p;
	u32 n = 0;

	mutex_lock(&fo_pairs_mutex);
	list_for_each_entry(p, &fo_pairs, node) {
		if (n < max)
			pair_info_locked(p, &out[n]);
		n++;
	}
	mutex_unlock(&fo_pairs_mutex);
	return n;
}

/* -------------------------------------------------------------- lifetime */

/* Where the worker (and every armed pair's timer) runs. Default: the first
 * online CPU. A dom0 that keeps one vCPU for real-time work (failoverd's
 * daemon.cpu) puts the worker there too: the lab measured deadline ->
 * standby running p99 of 3 ms idle but 14-39 ms under dom0 load with the
 * worker on a vCPU whose timer interrupts arrived late. */
static int worker_cpu = -1;
module_param(worker_cpu, int, 0444);
MODULE_PARM_DESC(worker_cpu, "CPU for the switch worker and the pairs' timers (-1: first online CPU)");

int fo_pairs_init(void)
{
	struct task_struct *t;

	/* One worker, bound to one CPU (the first online one unless told:
	 * CPU 0 on x86 is not hot-unplugged), with every pair's timer pinned
	 * beside it. */
	if (worker_cpu >= 0 && (worker_cpu >= nr_cpu_ids || !cpu_online(worker_cpu))) {
		pr_err("worker_cpu=%d is not an online CPU; not loading\n", worker_cpu);
		return -EINVAL;
	}
	fo_worker_cpu = worker_cpu >= 0 ? (unsigned int)worker_cpu : cpumask_first(cpu_online_mask);
	t = kthread_create(fo_worker_fn, NULL, "fo_switch/%u", fo_worker_cpu);
	if (IS_ERR(t))
		return PTR_ERR(t);
	kthread_bind(t, fo_worker_cpu);
	/* Above every SCHED_OTHER task and mid-range among RT ones, like the
	 * kernel's own irq threads: a loaded dom0 must not delay a switch. */
	sched_set_fifo(t);
	fo_worker = t;
	wake_up_process(t);
	return 0;
}

void fo_pairs_exit(void)
{
	struct fo_pair *p, *tmp;

	mutex_lock(&fo_pairs_mutex);
	list_for_each_entry_safe(p, tmp, &fo_pairs, node)
		pair_disarm_locked(p); /* FIRING ones are the worker's */
	mutex_unlock(&fo_pairs_mutex);
	/* Nothing can fire any more; the worker finishes what did, then stops. */
	kthread_stop(fo_worker);
	fo_worker = NULL;
}
