// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * domctl.c - the domctls and the fenced switch.
 *
 * Linux has no copy of Xen's domctl.h (the interface is versioned and
 * private to the toolstack), so the few fields used here are declared below
 * for Xen 4.17's layout. The interface version itself is read from the Xen
 * headers at build time (Kbuild: FO_DOMCTL_INTERFACE_VERSION). A hypervisor
 * with another version answers every domctl with -EACCES; main.c asks once
 * at load and refuses to load on that answer.
 *
 * The op lives on the caller's stack: dom0 is a PV guest, so Xen reads it
 * through dom0's own page tables and a (vmapped) kernel stack address is as
 * good as any. That keeps these functions free of allocation and locking.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/stddef.h>
#include <linux/string.h>

#include <xen/interface/xen.h>
#include <xen/interface/sched.h>
#include <asm/xen/hypercall.h>

#include "fenced_sequence.h"
#include "domctl.h"

#ifndef FO_DOMCTL_INTERFACE_VERSION
#error "FO_DOMCTL_INTERFACE_VERSION comes from Kbuild (Xen's domctl.h)"
#endif
/* The struct layouts below are 4.17's (0x15); a header of another version
 * needs them checked, not just the number changed. */
static_assert(FO_DOMCTL_INTERFACE_VERSION == 0x15u, "domctl layouts here are Xen 4.17's (interface 0x15)");

/* What every domctl carries. Only the lab changes it (main.c's module
 * parameter), to prove that a mismatch is refused at load. */
unsigned int fo_domctl_interface_version = FO_DOMCTL_INTERFACE_VERSION;
#define FO_DOMCTL_pausedomain   3u
#define FO_DOMCTL_unpausedomain 4u
#define FO_DOMCTL_getdomaininfo 5u

#define FO_DOMINF_dying    (1u << 0)
#define FO_DOMINF_shutdown (1u << 2)
#define FO_DOMINF_paused   (1u << 3)
#define FO_DOMINF_shutdownshift 16
#define FO_DOMINF_shutdownmask  255u

struct fo_domctl {
	u32 cmd;
	u32 interface_version;
	u16 domain;
	u16 pad[3];
	union {
		struct {
			u16 domain; /* the domain Xen actually reported */
			u16 pad1;
			u32 flags;  /* XEN_DOMINF_* */
		} getdomaininfo;    /* leading fields only; the rest is unused */
		u64 align;
		u8 pad[128];
	} u;
};
static_assert(offsetof(struct fo_domctl, u) == 16);
static_assert(sizeof(struct fo_domctl) == 144);

static int domctl(struct fo_domctl *op, u32 cmd, u32 domid)
{
	op->cmd = cmd;
	op->interface_version = fo_domctl_interface_version;
	op->domain = (u16)domid;
	/* Xen's errno values are Linux's for everything a domctl returns. */
#if defined(CONFIG_ARM64) || defined(CONFIG_ARM)
	/* Arm has no hypercall page and exports no HYPERVISOR_domctl; the
	 * kernel's generic trampoline (the one privcmd uses: an hvc with the
	 * number in x16) is exported. Xen translates the op's address through
	 * dom0's stage-1 tables, so a kernel stack address works as on x86. */
	return (int)privcmd_call(__HYPERVISOR_domctl, (unsigned long)op, 0, 0, 0, 0);
#else
	return _hypercall1(int, domctl, op);
#endif
}

int fo_dom_pause(u32 domid)
{
	struct fo_domctl op = {};

	return domctl(&op, FO_DOMCTL_pausedomain, domid);
}

int fo_dom_unpause(u32 domid)
{
	struct fo_domctl op = {};

	return domctl(&op, FO_DOMCTL_unpausedomain, domid);
}

static u32 state_from_flags(u32 flags)
{
	u32 reason = (flags >> FO_DOMINF_shutdownshift) & FO_DOMINF_shutdownmask;

	if (flags & FO_DOMINF_dying)
		return FO_SWITCH_DOM_DYING;
	if ((flags & FO_DOMINF_shutdown) && reason == SHUTDOWN_crash)
		return FO_SWITCH_DOM_CRASHED;
	/* A suspend (xl save, a checkpoint, a migration) is not a death:
	 * the toolstack may resume the domain, and only a pause (which a
	 * resume leaves counted) keeps it from running then. */
	if ((flags & FO_DOMINF_shutdown) && reason == SHUTDOWN_suspend)
		return (flags & FO_DOMINF_paused) ? FO_SWITCH_DOM_PAUSED : FO_SWITCH_DOM_SUSPENDED;
	if (flags & FO_DOMINF_shutdown)
		return FO_SWITCH_DOM_SHUTDOWN;
	if (flags & FO_DOMINF_paused)
		return FO_SWITCH_DOM_PAUSED;
	return FO_SWITCH_DOM_RUNNING;
}

int fo_dom_get_state(u32 domid, u32 *ret_state)
{
	struct fo_domctl op = {};
	int r;

	r = domctl(&op, FO_DOMCTL_getdomaininfo, domid);
	if (r == -ESRCH) {
		*ret_state = FO_SWITCH_DOM_GONE;
		return 0;
	}
	if (r < 0)
		return r;
	/* Xen 4.17 answers with the first domain whose id is >= the one asked
	 * for: a neighbour must never be mistaken for the domain. */
	if (op.u.getdomaininfo.domain != domid) {
		*ret_state = FO_SWITCH_DOM_GONE;
		return 0;
	}
	*ret_state = state_from_flags(op.u.getdomaininfo.flags);
	return 0;
}

/* The fenced sequence itself is fenced_sequence.c, shared with failoverd. */
static int op_pause(void *ctx, uint32_t domid) { return fo_dom_pause(domid); }
static int op_unpause(void *ctx, uint32_t domid) { return fo_dom_unpause(domid); }
static int op_get_state(void *ctx, uint32_t domid, uint32_t *state) { return fo_dom_get_state(domid, state); }
static uint64_t op_now_ns(void *ctx) { return ktime_get_ns(); }

static const struct fo_fenced_ops domctl_ops = {
	.pause = op_pause,
	.unpause = op_unpause,
	.get_state = op_get_state,
	.now_ns = op_now_ns,
};

int fo_switch_fenced(struct fo_switch_req *req)
{
	struct fo_fenced_outcome out;
	int r = fo_fenced_switch(&domctl_ops, NULL, req->active, false, req->standby, &out);

	req->result = out.result;
	req->active_state = out.from_state;
	req->standby_state = out.to_state;
	req->flags = 0;
	if (fo_fenced_why_refenced(out.why))
		req->flags |= FO_SWITCH_F_REFENCED;
	if (out.paused_from)
		req->flags |= FO_SWITCH_F_PAUSED_ACTIVE;
	req->phases.pause_issued_ns = out.pause_issued_ns;
	req->phases.pause_done_ns = out.pause_done_ns;
	req->phases.unpause_issued_ns = out.unpause_issued_ns;
	req->phases.unpause_done_ns = out.unpause_done_ns;
	return r;
}
