/* SPDX-License-Identifier: MIT */
/*
 * xen_failover_watch.h - the ABI of the Xen failover watch
 * (rt-patches/xen-4.17/0006: XEN_DOMCTL_failover_watch, VIRQ_FAILOVER) as
 * the product sees it: the one header failoverd and the tools include.
 *
 * The patched hypervisor defines the same command, struct and numbers in
 * xen/include/public/domctl.h and xen.h; the stock Xen headers the tools
 * build against (Debian's libxen-dev) do not have them, and the product
 * does not rebuild libxenctrl. So the struct is declared here with plain
 * C types, laid out exactly as Xen's (the _Static_asserts below pin every
 * offset), and copied into struct xen_domctl's union (its 128-byte `pad`
 * member) before xc_domctl(), which Debian's libxenctrl exports. Xen's
 * XEN_DOMCTL_INTERFACE_VERSION is not bumped by the series, so xc_domctl()
 * fills in the version the stock library was built with and Xen accepts it.
 *
 * Semantics (what fires, the fence, DISARM before save/migrate/pause):
 * docs/misc/failover-watch.pandoc in the patched Xen tree, written by
 * rt-patches/xen-4.17/0010.
 */
#ifndef FO_XEN_FAILOVER_WATCH_H
#define FO_XEN_FAILOVER_WATCH_H

#include <stddef.h>
#include <stdint.h>

/* xen_domctl.cmd: a vendor number, far above upstream's (86 in 4.17). */
#define FO_XEN_DOMCTL_FAILOVER_WATCH 0x4601u
/* The global VIRQ Xen raises to the arming domain when a watch changes state. */
#define FO_XEN_VIRQ_FAILOVER 14u

/* op */
#define FO_FOWATCH_OP_ARM     1u /* xen_domctl.domain = the active */
#define FO_FOWATCH_OP_DISARM  2u /* domain = active or standby; -EBUSY while it holds a pause */
#define FO_FOWATCH_OP_QUERY   3u /* fills every field */
/* Tears down; a pause of the active the watch holds (FIRED, FAILED_*)
 * becomes a toolstack pause, so the failed active stays paused. -EBUSY
 * while QUIESCING. */
#define FO_FOWATCH_OP_RELEASE 4u

/* flags: IN (ARM) */
#define FO_FOWATCH_F_FENCE_ALWAYS (1u << 0)  /* fence even when the standby is unfit */
/* Event mode (0012): the active notifies `port` after each change of the
 * sequence; Xen reads it at each notify and looks again only at the
 * deadline, instead of every period_us. A series without 0012 answers
 * -EINVAL to the flag. */
#define FO_FOWATCH_F_EVENT        (1u << 1)
#define FO_FOWATCH_F_MASK         (FO_FOWATCH_F_FENCE_ALWAYS | FO_FOWATCH_F_EVENT)
/* flags: OUT (QUERY) */
/* The watch holds a pause of the active and saw none of its vCPUs running
 * since: the active is stopped. Only from then on does getdomaininfo
 * report the active paused (0011). */
#define FO_FOWATCH_OUT_FENCED     (1u << 16)
/* The watch holds a pause of the active but has not (yet) seen all its
 * vCPUs stop (QUIESCING, FAILED_QUIESCE): it may still run. */
#define FO_FOWATCH_OUT_PAUSING    (1u << 17)

/* state (OUT) */
#define FO_FOWATCH_STATE_ARMED          1u
#define FO_FOWATCH_STATE_QUIESCING      2u /* active fenced, its vCPUs stopping */
#define FO_FOWATCH_STATE_FIRED          3u /* standby unpaused */
#define FO_FOWATCH_STATE_FAILED_STANDBY 4u /* standby unfit: not touched */
#define FO_FOWATCH_STATE_FAILED_QUIESCE 5u /* active fenced but still ran after quiesce_us */
#define FO_FOWATCH_STATE_ABORTED        6u /* no switch, no fence */

/* reason (OUT) */
#define FO_FOWATCH_REASON_NONE         0u
#define FO_FOWATCH_REASON_TIMEOUT      1u /* the sequence did not move for timeout_us */
#define FO_FOWATCH_REASON_SHUTDOWN     2u /* the active shut down: see shutdown_code */
#define FO_FOWATCH_REASON_SUSPEND      3u /* the active suspended (save/migrate): aborted */
#define FO_FOWATCH_REASON_STANDBY_LOST 4u /* the standby shut down while armed */

/* shutdown_code when not applicable */
#define FO_FOWATCH_NO_SHUTDOWN_CODE 0xffffffffu

/* Limits Xen enforces on ARM (-EINVAL beyond them). */
#define FO_FOWATCH_MIN_PERIOD_US    100u
#define FO_FOWATCH_MAX_TIMEOUT_US   60000000u /* and timeout >= 2 * period */
#define FO_FOWATCH_DEF_QUIESCE_US   20000u    /* quiesce_us = 0 */
#define FO_FOWATCH_MAX_QUIESCE_US   1000000u
#define FO_FOWATCH_SHUTDOWN_MAX     5u        /* SHUTDOWN_soft_reset */
#define FO_FOWATCH_SHUTDOWN_SUSPEND 2u        /* never in shutdown_mask */

/* Xen's uint64_aligned_t: 8-byte aligned on every ABI (i386 included). */
typedef uint64_t fo_xen_u64a __attribute__((aligned(8)));

/* struct xen_domctl_failover_watch, field for field. */
struct fo_xen_failover_watch {
	uint32_t op;            /* IN: FO_FOWATCH_OP_* */
	uint32_t flags;         /* IN (ARM): FO_FOWATCH_F_*; OUT: also FO_FOWATCH_OUT_* */
	uint16_t standby;       /* IN (ARM) / OUT: domid */
	uint16_t cpu;           /* IN (ARM) / OUT: pCPU of the watch's timer */
	uint32_t gref;          /* IN (ARM) / OUT: grant ref in the active's table, granted to the caller */
	uint32_t offset;        /* IN (ARM) / OUT: offset of the uint64_t sequence in the granted range */
	uint32_t period_us;     /* IN (ARM) / OUT */
	uint32_t timeout_us;    /* IN (ARM) / OUT */
	uint32_t quiesce_us;    /* IN (ARM) / OUT: 0 = FO_FOWATCH_DEF_QUIESCE_US */
	uint32_t shutdown_mask; /* IN (ARM) / OUT: bit n: a shutdown with code n fires; 0 = default */
	uint32_t state;         /* OUT: FO_FOWATCH_STATE_* (0 on ARM) */
	uint32_t reason;        /* OUT: FO_FOWATCH_REASON_* */
	uint32_t shutdown_code; /* OUT: the active's SHUTDOWN_*, or FO_FOWATCH_NO_SHUTDOWN_CODE */
	uint16_t owner;         /* OUT: the domain that armed it */
	uint16_t active;        /* OUT: the active's domid */
	uint32_t port;          /* IN (ARM) / OUT: with FO_FOWATCH_F_EVENT the active's heartbeat port, else 0 */
	fo_xen_u64a seq;        /* OUT: last sequence value seen */
	/* OUT: Xen's NOW() (ns since Xen booted) at each step; 0 = not reached. */
	fo_xen_u64a t_armed;
	fo_xen_u64a t_progress; /* the sequence last moved */
	fo_xen_u64a t_detect;   /* trigger seen */
	fo_xen_u64a t_fence;    /* active paused */
	fo_xen_u64a t_quiesced; /* no vCPU of the active running */
	fo_xen_u64a t_switched; /* standby unpaused */
	fo_xen_u64a t_now;      /* NOW() during the QUERY: maps the others onto CLOCK_MONOTONIC */
};

/* The layout Xen's BUILD_BUG_ONs and this header agree on. */
_Static_assert(sizeof(struct fo_xen_failover_watch) == 120, "fowatch struct size");
_Static_assert(sizeof(struct fo_xen_failover_watch) <= 128, "must fit xen_domctl.u (128 bytes)");
_Static_assert(_Alignof(struct fo_xen_failover_watch) == 8, "fowatch struct alignment");
_Static_assert(offsetof(struct fo_xen_failover_watch, op) == 0, "op");
_Static_assert(offsetof(struct fo_xen_failover_watch, flags) == 4, "flags");
_Static_assert(offsetof(struct fo_xen_failover_watch, standby) == 8, "standby");
_Static_assert(offsetof(struct fo_xen_failover_watch, cpu) == 10, "cpu");
_Static_assert(offsetof(struct fo_xen_failover_watch, gref) == 12, "gref");
_Static_assert(offsetof(struct fo_xen_failover_watch, offset) == 16, "offset");
_Static_assert(offsetof(struct fo_xen_failover_watch, period_us) == 20, "period_us");
_Static_assert(offsetof(struct fo_xen_failover_watch, timeout_us) == 24, "timeout_us");
_Static_assert(offsetof(struct fo_xen_failover_watch, quiesce_us) == 28, "quiesce_us");
_Static_assert(offsetof(struct fo_xen_failover_watch, shutdown_mask) == 32, "shutdown_mask");
_Static_assert(offsetof(struct fo_xen_failover_watch, state) == 36, "state");
_Static_assert(offsetof(struct fo_xen_failover_watch, reason) == 40, "reason");
_Static_assert(offsetof(struct fo_xen_failover_watch, shutdown_code) == 44, "shutdown_code");
_Static_assert(offsetof(struct fo_xen_failover_watch, owner) == 48, "owner");
_Static_assert(offsetof(struct fo_xen_failover_watch, active) == 50, "active");
_Static_assert(offsetof(struct fo_xen_failover_watch, port) == 52, "port");
_Static_assert(offsetof(struct fo_xen_failover_watch, seq) == 56, "seq");
_Static_assert(offsetof(struct fo_xen_failover_watch, t_armed) == 64, "t_armed");
_Static_assert(offsetof(struct fo_xen_failover_watch, t_progress) == 72, "t_progress");
_Static_assert(offsetof(struct fo_xen_failover_watch, t_detect) == 80, "t_detect");
_Static_assert(offsetof(struct fo_xen_failover_watch, t_fence) == 88, "t_fence");
_Static_assert(offsetof(struct fo_xen_failover_watch, t_quiesced) == 96, "t_quiesced");
_Static_assert(offsetof(struct fo_xen_failover_watch, t_switched) == 104, "t_switched");
_Static_assert(offsetof(struct fo_xen_failover_watch, t_now) == 112, "t_now");

/* Names for logs and JSON; "?" for a value this header does not know. */
static inline const char *fo_fowatch_state_name(uint32_t state)
{
	switch (state) {
	case FO_FOWATCH_STATE_ARMED: return "armed";
	case FO_FOWATCH_STATE_QUIESCING: return "quiescing";
	case FO_FOWATCH_STATE_FIRED: return "fired";
	case FO_FOWATCH_STATE_FAILED_STANDBY: return "failed-standby";
	case FO_FOWATCH_STATE_FAILED_QUIESCE: return "failed-quiesce";
	case FO_FOWATCH_STATE_ABORTED: return "aborted";
	default: return "?";
	}
}

static inline const char *fo_fowatch_reason_name(uint32_t reason)
{
	switch (reason) {
	case FO_FOWATCH_REASON_NONE: return "none";
	case FO_FOWATCH_REASON_TIMEOUT: return "timeout";
	case FO_FOWATCH_REASON_SHUTDOWN: return "shutdown";
	case FO_FOWATCH_REASON_SUSPEND: return "suspend";
	case FO_FOWATCH_REASON_STANDBY_LOST: return "standby-lost";
	default: return "?";
	}
}

#endif
