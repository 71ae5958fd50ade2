/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * fenced_sequence.h - the fenced switch, written once:
 *
 *   fence(from): pause it if it runs, confirm it cannot run
 *   -> unpause(to) -> confirm `to` runs -> confirm `from` still cannot run
 *
 * `to` is never unpaused unless `from` was confirmed fenced (paused, crashed,
 * shut down, dying or gone; never merely suspended: the toolstack's resume
 * would run it again, so a suspended `from` is paused like a running one). The same source is compiled into the fo_switch
 * kernel module (domctl.c, over domctls) and into failoverd (its own switch
 * in core/fencing.c over libxenctrl, and the simulator's model of the
 * module in hv/sim/kernel.c), so the three cannot drift apart.
 *
 * It allocates nothing, takes no lock, logs nothing: it only calls the four
 * operations it is given. Domain states are the uapi's FO_SWITCH_DOM_*
 * (failoverd's enum fo_dom_state has the same values).
 */
#ifndef FO_FENCED_SEQUENCE_H
#define FO_FENCED_SEQUENCE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
#endif

#include "uapi/fo_switch.h"

/* How often a failed pause/unpause is retried before giving up. Each try is
 * one hypercall (microseconds), so a couple of retries cost far less than
 * any deadline; more would only hide a broken hypervisor. */
#define FO_FENCED_TRIES 3

struct fo_fenced_ops {
	/* 0 or -errno; -ESRCH: no such domain. */
	int (*pause)(void *ctx, uint32_t domid);
	int (*unpause)(void *ctx, uint32_t domid);
	/* 0 and *state (FO_SWITCH_DOM_*; GONE for no such domain), or -errno. */
	int (*get_state)(void *ctx, uint32_t domid, uint32_t *state);
	/* CLOCK_MONOTONIC nanoseconds. */
	uint64_t (*now_ns)(void *ctx);
	/* Optional (NULL: none): called once in a switch, when the old active
	 * is confirmed fenced and before the standby's unpause. failoverd
	 * moves the service's network identity there (core/pair/service.c),
	 * so that nothing reaches the fenced member and the standby's first
	 * frames already flow; the module has nothing to do there. */
	void (*fenced)(void *ctx);
};

/* Why a switch did not end plainly OK (the caller words it). */
enum fo_fenced_why {
	FO_FENCED_WHY_NONE = 0,
	FO_FENCED_WHY_NOT_FENCED,       /* `from` not confirmed fenced: `to` untouched */
	FO_FENCED_WHY_NOT_STARTED,      /* `from` fenced, `to` did not start */
	FO_FENCED_WHY_REFENCED,         /* OK, but `from` ran again and was fenced again */
	FO_FENCED_WHY_BOTH_PAUSED,      /* `from` ran again and could not be re-fenced: `to` paused too */
	FO_FENCED_WHY_BOTH_MAY_RUN,     /* ... and `to` could not be paused either */
};

/* `from` ran again after the unpause and was (or had to be) fenced once
 * more: FO_SWITCH_F_REFENCED in the uapi. */
static inline bool fo_fenced_why_refenced(uint32_t why)
{
	return why == FO_FENCED_WHY_REFENCED || why == FO_FENCED_WHY_BOTH_PAUSED || why == FO_FENCED_WHY_BOTH_MAY_RUN;
}

struct fo_fenced_outcome {
	uint32_t result;     /* FO_SWITCH_OK, _ABORTED or _FAILED */
	uint32_t why;        /* enum fo_fenced_why */
	uint32_t from_state; /* last seen, FO_SWITCH_DOM_* */
	uint32_t to_state;
	bool paused_from;    /* a pause of ours fenced `from` (it was running): ours to undo */
	/* 0 means "phase not reached". */
	uint64_t pause_issued_ns, pause_done_ns, unpause_issued_ns, unpause_done_ns;
};

/*
 * Pause `domid` if it runs and confirm it cannot run. A domain found fenced
 * is not paused again: Xen counts toolstack pauses and one unpause undoes
 * one, so a second pause would leave it paused after the single unpause
 * meant to start it. *paused (may be NULL) says whether a pause of ours took
 * effect. 0 (fenced) or -errno (-EIO: still running after FO_FENCED_TRIES).
 */
int fo_fenced_fence(const struct fo_fenced_ops *ops, void *ctx, uint32_t domid, uint32_t *state,
		    bool *paused);

/*
 * The switch from `from` to `to`. from_gone: the caller knows `from` no
 * longer exists (its domain was torn down), so it is fenced already and is
 * neither paused nor asked about. Fills *out; returns 0 if out->result is
 * FO_SWITCH_OK, else -EIO.
 */
int fo_fenced_switch(const struct fo_fenced_ops *ops, void *ctx, uint32_t from, bool from_gone, uint32_t to,
		     struct fo_fenced_outcome *out);

#endif
