/* SPDX-License-Identifier: MIT */
/*
 * notify_flood.h - back-off for a guest that floods its heartbeat event
 * channel (the Xen backend's dispatch.c; the kernel module has the event
 * core's lateeoi for the same, kmod-switch/pair.c).
 *
 * A heartbeat is meaningful once per period: the agent writes the page and
 * notifies once. A guest calling EVTCHNOP_send in a loop would otherwise
 * have the SCHED_FIFO loop read the event-channel fd, copy the page and
 * unmask the port for every notification, keeping a dom0 CPU busy at
 * real-time priority. So notifications are counted per window (the page's
 * period, FO_FLOOD_MIN_WINDOW_MS at least): more than FO_FLOOD_IDLE_BURST
 * that bring no new sequence, or more than FO_FLOOD_BURST in all, and the
 * port is left masked, for a window doubled with every window in a row
 * that went over, up to FO_FLOOD_MAX_MASK_MS, and counted. On unmask, a
 * notification sent meanwhile arrives at once, with the page as it is.
 *
 * A masked port must not hide a real heartbeat: when a heartbeat deadline
 * runs out, the daemon first asks the backend for a last look at the page
 * (hv.h heartbeat_look), so a beat held back is never a heartbeat loss.
 * What a flood costs the guest itself: its beats are seen up to
 * FO_FLOOD_MAX_MASK_MS late, so a flooding guest that then stops beating
 * is found that much later.
 */
#ifndef FO_HV_NOTIFY_FLOOD_H
#define FO_HV_NOTIFY_FLOOD_H

#include <stdbool.h>
#include <stdint.h>

#define FO_FLOOD_IDLE_BURST     2    /* notifications without a new sequence per window */
#define FO_FLOOD_BURST          8    /* notifications per window; a real agent sends 1 or 2 */
#define FO_FLOOD_MIN_WINDOW_MS  4    /* a window is the page's period, never shorter than this */
#define FO_FLOOD_MAX_WINDOW_MS  1000 /* nor longer (the period is the guest's word) */
#define FO_FLOOD_MAX_MASK_MS    250  /* the longest a port stays masked in one back-off */

struct fo_notify_flood {
	uint64_t window_start_ns;
	unsigned count;          /* notifications in the current window */
	unsigned idle;           /* of which without a new sequence */
	unsigned strikes;        /* windows in a row over the budget: the mask doubles */
	bool have_seq;
	uint64_t last_seq;       /* the page's sequence at the last notification */
	bool masked;             /* the port is left masked */
	uint64_t unmask_ns;      /* until then */
	uint64_t notifications;  /* all, counted */
	uint64_t suppressed;     /* over the budget: not handled */
	uint64_t backoffs;       /* times the port was left masked */
};

/* The window for a page that says `period_ms`, in ns. */
uint64_t fo_notify_flood_window_ns(uint32_t period_ms);

/* A notification at now_ns; the page says `period_ms` and `sequence`.
 * true: handle it and unmask the port as usual. false: over the budget;
 * the port is to stay masked (f->masked) until fo_notify_flood_unmask_due()
 * says so. */
bool fo_notify_flood_note(struct fo_notify_flood *f, uint64_t now_ns, uint32_t period_ms, uint64_t sequence);

/* Masked and its time is up: true (unmask the port now; a new window
 * starts). */
bool fo_notify_flood_unmask_due(struct fo_notify_flood *f, uint64_t now_ns);

#endif
