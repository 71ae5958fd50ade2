/* SPDX-License-Identifier: MIT */
/*
 * test_notify_flood.c - the heartbeat channel's flood back-off
 * (hv/notify_flood.c), driven the way the Xen backend's dispatch.c and the
 * pair's deadline drive it, on a simulated clock: a guest notifies; a
 * notification arrives only while the port is unmasked (while masked Xen
 * keeps one pending, delivered on unmask); the poll timer unmasks when the
 * back-off is over; a heartbeat deadline (timeout = 2 periods, the least
 * config.c allows) that runs out first looks at the page (hv.h
 * heartbeat_look) and only then counts as a loss.
 *
 * Checked: a real agent (one notification a period, with jitter; periods
 * 1 ms to 1 s) is never masked; a guest notifying every 2 us costs the
 * loop a few wake-ups a back-off, not 500000 a second, and is counted;
 * with the sequence the flooding guest still writes once a period, no
 * deadline is a heartbeat loss; a guest that stops flooding is back to
 * notifications within a second.
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
	uint64_t now;
	bool pending;              /* a notification while masked (one at most) */
	/* The daemon's side. */
	uint64_t deadline;         /* last progress seen + 2 periods */
	uint64_t handled, unmasks, looks, losses, wakeups;
	/* The sequence: written every period; seen when handled or looked at. */
	uint64_t seq, seen_seq;
};

static void see_page(struct sim *s)
{
	if (s->seq != s->seen_seq) {
		s->seen_seq = s->seq;
		s->deadline = s->now + 2 * s->period_ms * MS;
	}
}

/* A notification reaches the loop (dispatch_evtchn). */
static void notify(struct sim *s)
{
	s->wakeups++;
	if (fo_notify_flood_note(&s->f, s->now, s->period_ms, s->seq)) {
		s->handled++;
		see_page(s);
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

/* Advance to `t`: the back-off's end (dispatch_poll) and the heartbeat
 * deadline (fo_pair_on_deadline, its last look) on the way. */
static void advance(struct sim *s, uint64_t t)
{
	for (;;) {
		uint64_t unmask = s->f.masked ? s->f.unmask_ns : UINT64_MAX;
		uint64_t next = unmask < s->deadline ? unmask : s->deadline;

		if (next > t)
			break;
		s->now = next;
		s->wakeups++;
		if (next == unmask) {
			s->unmasks++;
			if (fo_notify_flood_unmask_due(&s->f, s->now) && s->pending) {
				s->pending = false;
				notify(s); /* comes at once on unmask */
			}
			continue;
		}
		s->looks++;
		if (s->f.masked)
			see_page(s);
		if (s->deadline <= s->now) {
			s->losses++;
			s->deadline = s->now + 2 * s->period_ms * MS;
		}
	}
	s->now = t;
}

static void sim_init(struct sim *s, uint32_t period_ms)
{
	memset(s, 0, sizeof(*s));
	s->period_ms = period_ms;
	s->now = 1000 * MS;
	s->deadline = s->now + 2 * period_ms * MS;
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
		CHECK(s.f.backoffs == 0 && s.handled == s.f.notifications && s.losses == 0,
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
	static const uint32_t periods[] = { 4, 10, 20, 50 };

	for (size_t k = 0; k < sizeof(periods) / sizeof(periods[0]); k++) {
		uint32_t period = periods[k];
		struct sim s;
		uint64_t per_s;

		sim_init(&s, period);
		flood(&s, 10000 * MS);
		per_s = s.wakeups / 10;
		/* A deadline look per timeout (2 periods: the tightest config)
		 * and a few wake-ups per back-off; 500000 a second without. */
		CHECK(per_s <= 1000 / (2 * period) + 50, "period %u ms: the loop woke %llu times a second for a flood",
		      period, (unsigned long long)per_s);
		CHECK(s.f.backoffs >= 10 && s.f.suppressed > 0, "period %u ms: counted (%llu back-offs)", period,
		      (unsigned long long)s.f.backoffs);
		CHECK(s.losses == 0, "period %u ms: %llu heartbeat losses while the guest beat every period "
		      "(%llu looks)", period, (unsigned long long)s.losses, (unsigned long long)s.looks);

		/* It stops flooding: within a second it is handled per notification again. */
		{
			uint64_t t = s.now, handled;

			for (int i = 0; i < 1000 / (int)period + 2; i++) {
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
			CHECK(!s.f.masked && s.handled == handled + 10 && s.losses == 0,
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
