/* SPDX-License-Identifier: MIT */
/*
 * test_notify_flood.c - the heartbeat channel's flood back-off
 * (hv/notify_flood.c), driven the way the Xen backend's dispatch.c drives
 * it, on a simulated clock: a guest notifies; a notification arrives only
 * while the port is unmasked (Xen keeps at most one pending while masked);
 * while masked, the poll timer reads the page every
 * fo_notify_flood_poll_ns() and unmasks when the back-off is over.
 *
 * Checked: a real agent (one notification a period, with jitter; periods
 * 1 ms to 1 s) is never masked; a guest notifying every 2 us costs the
 * loop a few notifications and two page reads a period, not 500000 a
 * second, and is counted; the sequence the flooding guest still writes
 * once a period is seen within 1.5 periods every time (no false heartbeat
 * timeout, which config.c allows at 2 periods); a guest that stops
 * flooding is back to notifications within a second.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "hv/notify_flood.h"

#define MS 1000000ull
#define US 1000ull

struct sim {
	struct fo_notify_flood f;
	uint32_t period_ms;
	uint64_t now, next_poll;   /* next_poll: 0 = the poll timer is off */
	bool pending;              /* a notification while masked (one at most) */
	/* What the loop did. */
	uint64_t handled, polls, wakeups;
	/* The sequence: written every period; seen when handled or polled. */
	uint64_t seq, seen_seq, seen_at, max_gap;
};

static void see_page(struct sim *s)
{
	if (s->seq != s->seen_seq) {
		if (s->seen_at && s->now - s->seen_at > s->max_gap)
			s->max_gap = s->now - s->seen_at;
		s->seen_seq = s->seq;
		s->seen_at = s->now;
	}
}

/* A notification reaches the loop (dispatch_evtchn). */
static void notify(struct sim *s)
{
	s->wakeups++;
	if (fo_notify_flood_note(&s->f, s->now, s->period_ms)) {
		s->handled++;
		see_page(s);
	} else if (!s->next_poll) {
		s->next_poll = s->now + fo_notify_flood_poll_ns(s->period_ms);
	}
}

/* The guest calls EVTCHNOP_send. */
static void send_evtchn(struct sim *s)
{
	if (s->f.masked)
		s->pending = true;
	else
		notify(s);
}

/* Advance to `t`, running the poll timer (dispatch_poll) on the way. */
static void advance(struct sim *s, uint64_t t)
{
	while (s->next_poll && s->next_poll <= t) {
		s->now = s->next_poll;
		s->wakeups++;
		s->polls++;
		if (fo_notify_flood_unmask_due(&s->f, s->now)) {
			s->next_poll = 0;
			if (s->pending) {
				s->pending = false;
				notify(s); /* comes at once on unmask */
			}
		} else {
			s->next_poll = s->now + fo_notify_flood_poll_ns(s->period_ms);
		}
		see_page(s);
	}
	s->now = t;
}

static void sim_init(struct sim *s, uint32_t period_ms)
{
	memset(s, 0, sizeof(*s));
	s->period_ms = period_ms;
	s->now = 1000 * MS;
}

/* An agent: one beat and one notification a period, +-10 % jitter. */
static void test_real_agent(void)
{
	static const uint32_t periods[] = { 1, 2, 4, 10, 100, 1000 };

	for (size_t k = 0; k < sizeof(periods) / sizeof(periods[0]); k++) {
		struct sim s;
		uint64_t p = periods[k] * MS, t;
		unsigned rnd = 12345;

		sim_init(&s, periods[k]);
		t = s.now;
		for (int i = 0; i < 20000 && i * periods[k] < 200000; i++) {
			rnd = rnd * 1103515245u + 12345u;
			t += p - p / 10 + (p / 5) * (rnd >> 16) / 65536u;
			advance(&s, t);
			s.seq++;
			send_evtchn(&s);
		}
		CHECK(s.f.backoffs == 0 && s.handled == s.f.notifications,
		      "period %u ms: a real agent was masked %llu times", periods[k],
		      (unsigned long long)s.f.backoffs);
	}
}

/* A guest sending every 2 us while it still beats once a period. */
static void flood(struct sim *s, uint64_t duration)
{
	uint64_t end = s->now + duration, next_beat = s->now + s->period_ms * MS;

	while (s->now < end) {
		uint64_t t = s->now + 2 * US;

		if (t >= next_beat) {
			advance(s, next_beat);
			s->seq++;
			next_beat += s->period_ms * MS;
		}
		advance(s, t);
		send_evtchn(s);
	}
}

static void test_flood(void)
{
	static const uint32_t periods[] = { 4, 10, 50 };

	for (size_t k = 0; k < sizeof(periods) / sizeof(periods[0]); k++) {
		uint32_t period = periods[k];
		struct sim s;
		uint64_t per_s, wake_budget;

		sim_init(&s, period);
		flood(&s, 10000 * MS);
		per_s = s.wakeups / 10;
		/* Two page reads a period, and a few notifications a second
		 * (500000 a second without a back-off). */
		wake_budget = 2 * 1000 / period + 100;
		CHECK(per_s <= wake_budget, "period %u ms: the loop woke %llu times a second for a flood (budget %llu)",
		      period, (unsigned long long)per_s, (unsigned long long)wake_budget);
		CHECK(s.handled <= 500,
		      "period %u ms: %llu notifications handled one by one in 10 s", period,
		      (unsigned long long)s.handled);
		CHECK(s.f.backoffs >= 10 && s.f.suppressed > 0, "period %u ms: counted (%llu back-offs)", period,
		      (unsigned long long)s.f.backoffs);
		CHECK(s.max_gap <= period * MS * 3 / 2 + period * MS / 10,
		      "period %u ms: a beat was seen %llu us after the one before (timeout may be 2 periods)",
		      period, (unsigned long long)(s.max_gap / US));

		/* It stops flooding: within a second it is handled per notification again. */
		{
			uint64_t t = s.now, handled;

			for (int i = 0; i < 200; i++) {
				t += period * MS;
				advance(&s, t);
				s.seq++;
				send_evtchn(&s);
			}
			handled = s.handled;
			for (int i = 0; i < 10; i++) {
				t += period * MS;
				advance(&s, t);
				s.seq++;
				send_evtchn(&s);
			}
			CHECK(!s.f.masked && s.handled == handled + 10,
			      "period %u ms: after the flood, beats are handled as notifications again", period);
		}
	}
}

int main(void)
{
	RUN(test_real_agent);
	RUN(test_flood);
	return check_summary("test_notify_flood");
}
