/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * fo_switch.h - the /dev/fo_switch interface: the one header shared by the
 * fo_switch kernel module and its users (failoverd, tools/fo-switch-test).
 *
 * Every ioctl takes a pointer to its struct; domain ids are Xen domids.
 * Errors (as -1/errno from ioctl(2)):
 *   EINVAL  domid 0, a domid >= 0x7FF0 (reserved), active == standby,
 *           timeout or port out of range; UNPAUSE of a running domain (Xen)
 *   ESRCH   no such domain: SWITCH and ARM check before doing anything,
 *           PAUSE/UNPAUSE pass on Xen's answer; GETSTATE reports
 *           FO_SWITCH_DOM_GONE instead
 *   ENOTTY  unknown ioctl
 *   EIO     a switch did not complete; the struct still says how far it got
 *   EBUSY   the domain or pair id belongs to an armed pair (one owner per pair)
 *   ENOENT  DISARM/PAIRINFO of a pair id that is not armed
 *   ENOMEM  LIST could not allocate its snapshot
 *   EALREADY DISARM of a pair whose deadline already expired: the switch is
 *           running or done, and its event is (or will be) readable
 *   ENOSPC  too many armed pairs plus unread events (FO_SWITCH_MAX_SLOTS)
 *
 * Compatibility: the interface only grows. A struct, once published, keeps
 * its layout (its size is part of the ioctl number, and main.c asserts it);
 * new requests get new numbers. A module older than a request answers
 * ENOTTY, which callers take as "not supported here". Added after the
 * first release: FO_SWITCH_IOC_LIST (0x08).
 *
 * All timestamps are CLOCK_MONOTONIC nanoseconds, the clock userspace reads
 * with clock_gettime(CLOCK_MONOTONIC); 0 means "phase not reached".
 */
#ifndef _UAPI_FO_SWITCH_H
#define _UAPI_FO_SWITCH_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define FO_SWITCH_DEVICE "/dev/fo_switch"

/* Armed pairs plus events not yet read, together. */
#define FO_SWITCH_MAX_SLOTS 64

/* ARM's timeout_ns range. */
#define FO_SWITCH_TIMEOUT_MIN_NS 1000000ULL       /* 1 ms */
#define FO_SWITCH_TIMEOUT_MAX_NS 60000000000ULL   /* 60 s */

/* Same values as failoverd's enum fo_dom_state (failoverd/hv/hv.h). */
enum fo_switch_dom_state {
	FO_SWITCH_DOM_RUNNING  = 0, /* not paused, not dead: it may execute */
	FO_SWITCH_DOM_PAUSED   = 1, /* paused by the toolstack */
	FO_SWITCH_DOM_CRASHED  = 2, /* shut down with reason crash */
	FO_SWITCH_DOM_SHUTDOWN = 3, /* shut down for another reason */
	FO_SWITCH_DOM_DYING    = 4, /* being destroyed */
	FO_SWITCH_DOM_GONE     = 5, /* no such domain */
	FO_SWITCH_DOM_SUSPENDED = 6, /* shut down for suspend, not paused by the
				      * toolstack: a resume runs it (not fenced) */
};

/* How a switch ended (fo_switch_req.result, fo_switch_event.result). */
enum fo_switch_result {
	FO_SWITCH_OK      = 0, /* active fenced, standby confirmed running */
	FO_SWITCH_ABORTED = 1, /* active not confirmed fenced: standby left alone
				* (or, if the old active was restarted behind our
				* back and could not be re-fenced, both paused) */
	FO_SWITCH_FAILED  = 2, /* active fenced, standby could not be started */
};

/* fo_switch_req.flags / fo_switch_event.flags (out) */
#define FO_SWITCH_F_REFENCED (1u << 0) /* old active ran again after the
					* unpause and was paused once more */
#define FO_SWITCH_F_PAUSED_ACTIVE (1u << 1) /* the active was running and our
					     * pause fenced it (not set if it was
					     * paused already: Xen counts pauses,
					     * so it is not ours to undo) */

struct fo_switch_phases {
	__u64 pause_issued_ns;   /* first pause hypercall issued */
	__u64 pause_done_ns;     /* active confirmed fenced */
	__u64 unpause_issued_ns; /* first unpause hypercall issued */
	__u64 unpause_done_ns;   /* standby confirmed running */
};

/* FO_SWITCH_IOC_SWITCH. The struct is copied back whenever the switch was
 * attempted, also when the ioctl fails with EIO. */
struct fo_switch_req {
	__u32 active;        /* in */
	__u32 standby;       /* in */
	__u32 result;        /* out: enum fo_switch_result */
	__u32 active_state;  /* out: enum fo_switch_dom_state, last seen */
	__u32 standby_state; /* out: enum fo_switch_dom_state, last seen */
	__u32 flags;         /* out: FO_SWITCH_F_* */
	struct fo_switch_phases phases; /* out */
};

/* FO_SWITCH_IOC_PAUSE / _UNPAUSE / _GETSTATE */
struct fo_switch_dom {
	__u32 domid;         /* in */
	__u32 state;         /* out (GETSTATE only): enum fo_switch_dom_state */
};

/* FO_SWITCH_IOC_ARM. The module binds the active's event channel
 * (`port` is the port the active's agent allocated for dom0) and switches
 * to the standby when no notification arrived for timeout_ns. */
struct fo_switch_arm {
	__u32 pair_id;       /* caller's name for the pair; unique among armed pairs */
	__u32 active;
	__u32 standby;
	__u32 port;          /* the active's unbound port (remote port) */
	__u64 timeout_ns;    /* FO_SWITCH_TIMEOUT_MIN_NS .. _MAX_NS */
};

/* FO_SWITCH_IOC_PAIRINFO: pair_id in, the rest out. (DISARM takes a bare
 * __u32 pair id.) */
struct fo_switch_pair_info {
	__u32 pair_id;
	__u32 active;
	__u32 standby;
	__u32 port;
	__u64 timeout_ns;
	__u64 armed_ns;          /* when ARM succeeded */
	__u64 last_notify_ns;    /* last notification, or armed_ns */
	__u64 deadline_ns;       /* last_notify_ns + timeout_ns */
	__u64 notifications;     /* received since ARM */
	__u32 firing;            /* 1: deadline expired, switch running */
	__u32 pad;
};

/* FO_SWITCH_IOC_LIST: every armed pair, whoever armed it, as
 * struct fo_switch_pair_info records (firing ones included, with firing=1).
 * `pairs` is a user pointer to room for `capacity` records (0 and capacity 0
 * only count); the module fills min(capacity, count) of them and sets
 * `count` to how many pairs are armed. FO_SWITCH_MAX_SLOTS records are
 * always enough. EFAULT if `pairs` cannot be written. */
struct fo_switch_list {
	__u64 pairs;             /* in: struct fo_switch_pair_info *, as an integer */
	__u32 capacity;          /* in */
	__u32 count;             /* out */
};

/* What read(2) returns: whole records only, one per expired deadline. */
struct fo_switch_event {
	__u32 pair_id;
	__u32 active;
	__u32 standby;
	__u32 result;            /* enum fo_switch_result */
	__s32 error;             /* 0, or the -errno the SWITCH ioctl would return */
	__u32 active_state;      /* enum fo_switch_dom_state, last seen */
	__u32 standby_state;
	__u32 flags;             /* FO_SWITCH_F_* */
	__u64 last_notify_ns;    /* last sign of life (or the ARM time) */
	__u64 deadline_ns;       /* when it was due to expire */
	__u64 detected_ns;       /* when the timer noticed (>= deadline_ns) */
	__u64 notifications;     /* received while armed */
	struct fo_switch_phases phases;
};

#define FO_SWITCH_IOC_MAGIC 0xF0

#define FO_SWITCH_IOC_SWITCH   _IOWR(FO_SWITCH_IOC_MAGIC, 0x01, struct fo_switch_req)
#define FO_SWITCH_IOC_PAUSE    _IOW(FO_SWITCH_IOC_MAGIC, 0x02, struct fo_switch_dom)
#define FO_SWITCH_IOC_UNPAUSE  _IOW(FO_SWITCH_IOC_MAGIC, 0x03, struct fo_switch_dom)
#define FO_SWITCH_IOC_GETSTATE _IOWR(FO_SWITCH_IOC_MAGIC, 0x04, struct fo_switch_dom)
#define FO_SWITCH_IOC_ARM      _IOW(FO_SWITCH_IOC_MAGIC, 0x05, struct fo_switch_arm)
#define FO_SWITCH_IOC_DISARM   _IOW(FO_SWITCH_IOC_MAGIC, 0x06, __u32)
#define FO_SWITCH_IOC_PAIRINFO _IOWR(FO_SWITCH_IOC_MAGIC, 0x07, struct fo_switch_pair_info)
#define FO_SWITCH_IOC_LIST     _IOWR(FO_SWITCH_IOC_MAGIC, 0x08, struct fo_switch_list)

#endif
