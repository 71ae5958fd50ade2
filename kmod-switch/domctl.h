/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * domctl.h - Xen domain control from dom0's kernel: pause, unpause, state,
 * and the fenced switch built from them. Nothing here sleeps on a lock or
 * allocates; callable from process context (ioctl, the worker kthread).
 */
#ifndef FO_SWITCH_DOMCTL_H
#define FO_SWITCH_DOMCTL_H

#include <linux/types.h>

#include "uapi/fo_switch.h"

/* DOMID_FIRST_RESERVED in Xen's public xen.h: ids from here on are not domains. */
#define FO_DOMID_FIRST_RESERVED 0x7FF0u

/* A domain we may pause or unpause: not dom0 (ourselves), not a reserved id. */
static inline bool fo_domid_is_guest(u32 domid)
{
	return domid != 0 && domid < FO_DOMID_FIRST_RESERVED;
}

/* XEN_DOMCTL_INTERFACE_VERSION every domctl carries (Xen's headers at build time). */
extern unsigned int fo_domctl_interface_version;

int fo_dom_pause(u32 domid);
int fo_dom_unpause(u32 domid);
/* 0 and *ret_state (FO_SWITCH_DOM_GONE if no such domain), or -errno. */
int fo_dom_get_state(u32 domid, u32 *ret_state);

/*
 * pause(active) -> confirm it cannot run -> unpause(standby) -> confirm it
 * runs -> confirm the active still cannot run. The standby is never unpaused
 * unless the active was confirmed fenced (paused, crashed, shut down, dying
 * or gone). Fills req's out fields; returns 0 (FO_SWITCH_OK) or -EIO.
 * The caller has validated the ids.
 */
int fo_switch_fenced(struct fo_switch_req *req);

#endif
