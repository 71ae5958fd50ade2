/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * events.h - what read(2)/poll(2) on /dev/fo_switch return: one record per
 * expired deadline, module-wide (not per open file), so a daemon that
 * restarts reads what happened while it was away.
 *
 * Bounded by slots: an armed pair holds one slot and its event record is
 * allocated at ARM, so firing allocates nothing; the slot passes to the
 * event when the pair fires and is freed when the event is read.
 */
#ifndef FO_SWITCH_EVENTS_H
#define FO_SWITCH_EVENTS_H

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/poll.h>

#include "uapi/fo_switch.h"

struct fo_event_node {
	struct list_head node;
	struct fo_switch_event ev;
};

bool fo_slot_take(void);
void fo_slot_put(void);

/* Queue a filled record; its slot stays taken until it is read. */
void fo_events_push(struct fo_event_node *n);

ssize_t fo_events_read(struct file *file, char __user *buf, size_t count);
__poll_t fo_events_poll(struct file *file, poll_table *wait);

/* Module unload: free unread records. */
void fo_events_exit(void);

#endif
