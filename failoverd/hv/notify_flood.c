/* SPDX-License-Identifier: MIT */
/*
 * notify_flood.c - the heartbeat channel's flood back-off (see
 * notify_flood.h): counts per window, a mask that doubles.
 */
#include "hv/notify_flood.h"

#define MS_NS 1000000ull

uint64_t fo_notify_flood_window_ns(uint32_t period_ms)
{
	if (period_ms < FO_FLOOD_MIN_WINDOW_MS)
		period_ms = FO_FLOOD_MIN_WINDOW_MS;
	if (period_ms > FO_FLOOD_MAX_WINDOW_MS)
		period_ms = FO_FLOOD_MAX_WINDOW_MS;
	return (uint64_t)period_ms * MS_NS;
}

bool fo_notify_flood_note(struct fo_notify_flood *f, uint64_t now_ns, uint32_t period_ms, uint64_t sequence)
{
	uint64_t window = fo_notify_flood_window_ns(period_ms), mask;
	bool progress = !f->have_seq || sequence != f->last_seq;

	f->notifications++;
	f->have_seq = true;
	f->last_seq = sequence;
	if (f->masked) {
		f->suppressed++;
		return false;
	}
	if (now_ns - f->window_start_ns >= window) {
		/* A whole window within the budget forgives the past. */
		if (f->count <= FO_FLOOD_BURST && f->idle <= FO_FLOOD_IDLE_BURST)
			f->strikes = 0;
		f->window_start_ns = now_ns;
		f->count = f->idle = 0;
	}
	f->count++;
	if (!progress)
		f->idle++;
	if (f->count <= FO_FLOOD_BURST && f->idle <= FO_FLOOD_IDLE_BURST)
		return true;
	mask = window << (f->strikes < 16 ? f->strikes : 16);
	if (mask > FO_FLOOD_MAX_MASK_MS * MS_NS)
		mask = FO_FLOOD_MAX_MASK_MS * MS_NS;
	if (f->strikes < 16)
		f->strikes++;
	f->masked = true;
	f->unmask_ns = now_ns + mask;
	f->suppressed++;
	f->backoffs++;
	return false;
}

bool fo_notify_flood_unmask_due(struct fo_notify_flood *f, uint64_t now_ns)
{
	if (!f->masked || now_ns < f->unmask_ns)
		return false;
	f->masked = false;
	f->window_start_ns = now_ns;
	f->count = f->idle = 0;
	return true;
}
