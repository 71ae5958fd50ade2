/* SPDX-License-Identifier: MIT */
#include "monitor.h"

#include <string.h>

/* A sequence may not jump further than this in one notification: an agent
 * bumps by one per period and notifies every time, so even after a long
 * pause of dom0 a real agent is far below. A jump beyond is a guest trying
 * to look alive for longer than it is (or memory corruption). */
#define FO_HB_MAX_SEQ_JUMP 1000000ull

/* The extension's fields (untrusted like the rest; only counted and shown).
 * A miss counter that moved forward adds that many misses at now_ns; one
 * that went back (a new application instance) is a new baseline. */
static void ext_take(struct fo_hb_tracker *t, const struct fo_hb_page *p, uint64_t now_ns, bool count)
{
	bool ext = p->ext_magic == FO_HB_EXT_MAGIC && p->ext_version == FO_HB_EXT_VERSION;

	if (ext && count && t->ext && p->deadline_misses > t->app_deadline_misses) {
		uint32_t d = p->deadline_misses - t->app_deadline_misses;

		t->deadline_misses += d;
		if (d > FO_HB_MISS_RING)
			d = FO_HB_MISS_RING;
		while (d--) {
			t->miss_ns[t->miss_head] = now_ns;
			t->miss_head = (t->miss_head + 1) % FO_HB_MISS_RING;
			if (t->miss_n < FO_HB_MISS_RING)
				t->miss_n++;
		}
	}
	t->ext = ext;
	if (!ext)
		return;
	t->app_cycle = p->app_cycle;
	t->app_deadline_misses = p->deadline_misses;
	t->restored_cycle = p->restored_cycle;
	t->restore_result = p->restore_result;
}

bool fo_hb_misses_within(const struct fo_hb_tracker *t, unsigned count, uint64_t window_ns, uint64_t now_ns)
{
	uint64_t at;

	if (count == 0 || count > FO_HB_MISS_RING || t->miss_n < count)
		return false;
	/* the count-th newest miss */
	at = t->miss_ns[(t->miss_head + FO_HB_MISS_RING - count) % FO_HB_MISS_RING];
	return now_ns - at <= window_ns;
}

void fo_hb_reset(struct fo_hb_tracker *t)
{
	t->have_seq = false;
	t->progressed = false;
}

void fo_hb_require_progress(struct fo_hb_tracker *t)
{
	t->progressed = false;
}

enum fo_hb_verdict fo_hb_observe(struct fo_hb_tracker *t, const struct fo_hb_page *p, uint64_t now_ns,
				 const char **why)
{
	*why = NULL;
	if (p->magic != FO_HB_MAGIC)
		*why = "bad magic";
	else if (p->abi_version != FO_HB_ABI_VERSION)
		*why = "unknown ABI version";
	else if (p->period_ms == 0 || p->period_ms > 60000)
		*why = "period_ms out of range";
	else if (p->app_status > FO_HB_APP_UNHEALTHY)
		*why = "unknown application status";
	else if (p->flags & ~(uint32_t)(FO_HB_FLAG_STOPPING | FO_HB_FLAG_DRILL))
		*why = "unknown flags";
	if (*why) {
		t->invalid++;
		return FO_HB_INVALID;
	}

	if (!t->have_seq || p->boot_id != t->boot_id) {
		/* A baseline, not progress: this page may have been written long
		 * ago by an agent that has stopped since. A new boot_id (agent
		 * restarted, its sequence starts over) also proves nothing yet, or
		 * a guest flipping boot_id could look alive without ever counting. */
		if (t->have_seq)
			t->restarts++;
		t->have_seq = true;
		t->progressed = false;
		t->sequence = p->sequence;
		t->boot_id = p->boot_id;
		t->app_status = p->app_status;
		t->flags = p->flags;
		ext_take(t, p, now_ns, false);
		return FO_HB_BASELINE;
	}
	if (p->sequence == t->sequence) {
		t->stale++;
		return FO_HB_STALE;
	}
	if (p->sequence < t->sequence || p->sequence - t->sequence > FO_HB_MAX_SEQ_JUMP) {
		*why = p->sequence < t->sequence ? "sequence went backwards" : "sequence jumped too far";
		t->invalid++;
		return FO_HB_INVALID;
	}

	t->progressed = true;
	t->sequence = p->sequence;
	t->app_status = p->app_status;
	t->flags = p->flags;
	t->last_progress_ns = now_ns;
	t->beats++;
	ext_take(t, p, now_ns, true);
	return FO_HB_PROGRESS;
}
