// SPDX-License-Identifier: GPL-2.0 OR MIT
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "events.h"

static DEFINE_SPINLOCK(fo_events_lock); /* fo_events */
static LIST_HEAD(fo_events);
static DECLARE_WAIT_QUEUE_HEAD(fo_events_wq);
static atomic_t fo_slots = ATOMIC_INIT(0);

bool fo_slot_take(void)
{
	if (atomic_inc_return(&fo_slots) > FO_SWITCH_MAX_SLOTS) {
		atomic_dec(&fo_slots);
		return false;
	}
	return true;
}

void fo_slot_put(void)
{
	atomic_dec(&fo_slots);
}

void fo_events_push(struct fo_event_node *n)
{
	unsigned long flags;

	spin_lock_irqsave(&fo_events_lock, flags);
	list_add_tail(&n->node, &fo_events);
	spin_unlock_irqrestore(&fo_events_lock, flags);
	wake_up_interruptible(&fo_events_wq);
}

static struct fo_event_node *events_pop(void)
{
	struct fo_event_node *n;
	unsigned long flags;

	spin_lock_irqsave(&fo_events_lock, flags);
	n = list_first_entry_or_null(&fo_events, struct fo_event_node, node);
	if (n)
		list_del(&n->node);
	spin_unlock_irqrestore(&fo_events_lock, flags);
	return n;
}

/* A record that could not be copied out goes back to the front. */
static void events_unpop(struct fo_event_node *n)
{
	unsigned long flags;

	spin_lock_irqsave(&fo_events_lock, flags);
	list_add(&n->node, &fo_events);
	spin_unlock_irqrestore(&fo_events_lock, flags);
}

static bool events_pending(void)
{
	unsigned long flags;
	bool pending;

	spin_lock_irqsave(&fo_events_lock, flags);
	pending = !list_empty(&fo_events);
	spin_unlock_irqrestore(&fo_events_lock, flags);
	return pending;
}

ssize_t fo_events_read(struct file *file, char __user *buf, size_t count)
{
	const size_t rec = sizeof(struct fo_switch_event);
	struct fo_event_node *n;
	ssize_t done = 0;
	int r;

	if (count < rec)
		return -EINVAL;
	while (count - done >= rec) {
		n = events_pop();
		if (!n) {
			if (done)
				break;
			if (file->f_flags & O_NONBLOCK)
				return -EAGAIN;
			r = wait_event_interruptible(fo_events_wq, events_pending());
			if (r)
				return r;
			continue;
		}
		if (copy_to_user(buf + done, &n->ev, rec)) {
			events_unpop(n);
			return done ? done : -EFAULT;
		}
		kfree(n);
		fo_slot_put();
		done += rec;
	}
	return done;
}

__poll_t fo_events_poll(struct file *file, poll_table *wait)
{
	poll_wait(file, &fo_events_wq, wait);
	return events_pending() ? EPOLLIN | EPOLLRDNORM : 0;
}

void fo_events_exit(void)
{
	struct fo_event_node *n;

	while ((n = events_pop())) {
		kfree(n);
		fo_slot_put();
	}
}
