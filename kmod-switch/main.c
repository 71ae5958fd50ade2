// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fo_switch - failoverd's dom0 fast path: /dev/fo_switch pauses, unpauses
 * and switches Xen domains with direct domctl hypercalls (no privcmd ioctl,
 * no bounce buffer), and can own an armed pair's heartbeat deadline in the
 * kernel so a switch needs no userspace wake-up. See README.md and
 * uapi/fo_switch.h.
 *
 * This file: the misc device and its ioctls. domctl.c: the domctls and the
 * fenced switch. pair.c: armed pairs. events.c: what read()/poll() return.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <xen/xen.h>

#include "events.h"
#include "pair.h"
#include "domctl.h"

/* compat_ptr_ioctl passes 32-bit callers' structs through unchanged: that
 * is only right if no field depends on i386's 4-byte u64 alignment. */
static_assert(sizeof(struct fo_switch_req) == 56);
static_assert(sizeof(struct fo_switch_dom) == 8);
static_assert(sizeof(struct fo_switch_arm) == 24);
static_assert(sizeof(struct fo_switch_pair_info) == 64);
static_assert(sizeof(struct fo_switch_event) == 96);
static_assert(sizeof(struct fo_switch_list) == 16);

static int ioc_switch(void __user *arg)
{
	struct fo_switch_req req;
	u32 st;
	int r;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (!fo_domid_is_guest(req.active) || !fo_domid_is_guest(req.standby) ||
	    req.active == req.standby)
		return -EINVAL;
	r = fo_pairs_claim(req.active, req.standby);
	if (r < 0)
		return r;
	/* Refuse a wrong id before pausing anything: pausing the active for a
	 * standby that does not exist would leave nothing running. (To start a
	 * standby whose active was destroyed, UNPAUSE it.) */
	r = fo_dom_get_state(req.active, &st);
	if (r == 0 && st == FO_SWITCH_DOM_GONE)
		r = -ESRCH;
	if (r == 0)
		r = fo_dom_get_state(req.standby, &st);
	if (r == 0 && st == FO_SWITCH_DOM_GONE)
		r = -ESRCH;
	if (r == 0)
		r = fo_switch_fenced(&req);
	fo_pairs_release();
	/* Attempted (0 or -EIO): the caller learns how far it got. */
	if ((r == 0 || r == -EIO) && copy_to_user(arg, &req, sizeof(req)))
		return -EFAULT;
	return r;
}

static int ioc_dom(unsigned int cmd, void __user *arg)
{
	struct fo_switch_dom d;
	int r;

	if (copy_from_user(&d, arg, sizeof(d)))
		return -EFAULT;
	switch (cmd) {
	case FO_SWITCH_IOC_PAUSE:
		/* Pausing never breaks "at most one member runs": allowed on
		 * armed pairs too (the module then switches the pair). */
		if (!fo_domid_is_guest(d.domid))
			return -EINVAL;
		return fo_dom_pause(d.domid);
	case FO_SWITCH_IOC_UNPAUSE:
		if (!fo_domid_is_guest(d.domid))
			return -EINVAL;
		r = fo_pairs_claim(d.domid, FO_DOMID_NONE);
		if (r < 0)
			return r;
		r = fo_dom_unpause(d.domid);
		fo_pairs_release();
		return r;
	default: /* FO_SWITCH_IOC_GETSTATE: dom0 included, it is harmless */
		if (d.domid >= FO_DOMID_FIRST_RESERVED)
			return -EINVAL;
		r = fo_dom_get_state(d.domid, &d.state);
		if (r < 0)
			return r;
		return copy_to_user(arg, &d, sizeof(d)) ? -EFAULT : 0;
	}
}

/* The pairs are copied under the list's mutex into a kernel buffer and only
 * then to the caller: a page fault on a user buffer must not hold up ARM,
 * DISARM or a fired pair's cleanup. */
static int ioc_list(void __user *arg)
{
	struct fo_switch_pair_info *buf = NULL;
	struct fo_switch_list l;
	u32 n, count;

	if (copy_from_user(&l, arg, sizeof(l)))
		return -EFAULT;
	n = min_t(u32, l.capacity, FO_SWITCH_MAX_SLOTS);
	if (n && !l.pairs)
		return -EFAULT;
	if (n) {
		buf = kcalloc(n, sizeof(*buf), GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
	}
	count = fo_pairs_list(buf, n);
	l.count = count;
	n = min(n, count);
	if (n && copy_to_user(u64_to_user_ptr(l.pairs), buf, n * sizeof(*buf))) {
		kfree(buf);
		return -EFAULT;
	}
	kfree(buf);
	return copy_to_user(arg, &l, sizeof(l)) ? -EFAULT : 0;
}

static long fo_switch_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	struct fo_switch_pair_info info;
	struct fo_switch_arm arm;
	u32 pair_id;
	int r;

	switch (cmd) {
	case FO_SWITCH_IOC_SWITCH:
		return ioc_switch(uarg);
	case FO_SWITCH_IOC_PAUSE:
	case FO_SWITCH_IOC_UNPAUSE:
	case FO_SWITCH_IOC_GETSTATE:
		return ioc_dom(cmd, uarg);
	case FO_SWITCH_IOC_ARM:
		if (copy_from_user(&arm, uarg, sizeof(arm)))
			return -EFAULT;
		return fo_pair_arm(&arm);
	case FO_SWITCH_IOC_DISARM:
		if (get_user(pair_id, (u32 __user *)uarg))
			return -EFAULT;
		return fo_pair_disarm(pair_id);
	case FO_SWITCH_IOC_PAIRINFO:
		if (copy_from_user(&info, uarg, sizeof(info)))
			return -EFAULT;
		r = fo_pair_info(&info);
		if (r < 0)
			return r;
		return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
	case FO_SWITCH_IOC_LIST:
		return ioc_list(uarg);
	default:
		return -ENOTTY;
	}
}

static int fo_switch_open(struct inode *inode, struct file *file)
{
	/* The node is 0600 root already; a process that dropped its
	 * capabilities should not keep this power through a leaked fd path. */
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	return nonseekable_open(inode, file);
}

static ssize_t fo_switch_read(struct file *file, char __user *buf, size_t count, loff_t *pos)
{
	return fo_events_read(file, buf, count);
}

static const struct file_operations fo_switch_fops = {
	.owner = THIS_MODULE,
	.open = fo_switch_open,
	.read = fo_switch_read,
	.poll = fo_events_poll,
	.unlocked_ioctl = fo_switch_ioctl,
	.compat_ioctl = compat_ptr_ioctl, /* every struct has one layout on 32 and 64 bit */
	/* No .llseek: nonseekable_open() already makes lseek fail with ESPIPE
	 * (6.1 and later), and no_llseek is gone from Linux 6.12. */
};

static struct miscdevice fo_switch_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "fo_switch",
	.fops = &fo_switch_fops,
	.mode = 0600,
};

/* Only for the lab: load with another interface version than the one built
 * in, to see the hypervisor refuse it and the module refuse to load. A
 * version the hypervisor accepts changes nothing. */
static unsigned int test_domctl_interface_version;
module_param(test_domctl_interface_version, uint, 0400);
MODULE_PARM_DESC(test_domctl_interface_version, "testing only: domctl interface version to probe with");

static int __init fo_switch_init(void)
{
	u32 st;
	int r;

	if (!xen_initial_domain())
		return -ENODEV;
	/* Ask for dom0's own state once: a hypervisor whose domctl interface
	 * is not the one compiled in answers -EACCES, and it is better to
	 * refuse to load than to fail the first switch. */
	if (test_domctl_interface_version)
		fo_domctl_interface_version = test_domctl_interface_version;
	r = fo_dom_get_state(0, &st);
	if (r == -EACCES) {
		pr_err("the hypervisor refuses domctl interface version 0x%x (0x%x from %s at build time): "
		       "rebuild the module against this Xen's headers; not loading\n",
		       fo_domctl_interface_version, FO_DOMCTL_INTERFACE_VERSION, FO_XEN_DOMCTL_H);
		return -EPROTO;
	}
	if (r < 0) {
		pr_err("XEN_DOMCTL_getdomaininfo for dom0 failed (%d); not loading\n", r);
		return -ENODEV;
	}
	pr_info("domctl interface 0x%x (from %s) accepted by the hypervisor\n", fo_domctl_interface_version,
		FO_XEN_DOMCTL_H);

	r = fo_pairs_init();
	if (r < 0)
		goto err_nothing;
	r = misc_register(&fo_switch_dev);
	if (r < 0)
		goto err_pairs;
	pr_info("/dev/%s ready\n", fo_switch_dev.name);
	return 0;

err_pairs:
	fo_pairs_exit();
err_nothing:
	return r;
}

static void __exit fo_switch_exit(void)
{
	/* No file is open (the fops hold a module reference), so no ioctl
	 * runs; disarm, let the worker finish, then drop unread events. */
	misc_deregister(&fo_switch_dev);
	fo_pairs_exit();
	fo_events_exit();
}

module_init(fo_switch_init);
module_exit(fo_switch_exit);

MODULE_DESCRIPTION("failoverd fast path: fenced Xen domain switch from dom0");
MODULE_LICENSE("Dual MIT/GPL");
