/* SPDX-License-Identifier: MIT */
/*
 * fo-plant - an example control application on libfoguest.
 *
 * A PI controller holds a simulated first-order plant on a setpoint that
 * steps every 2 s, one cycle every --period-ms (5 ms). Each active cycle:
 * step the plant and the controller, commit the whole state (plant,
 * controller, cycle, and --state-bytes of payload derived from the cycle,
 * so a restored state can be checked byte by byte), then beat with the
 * cycle number and, if the cycle started late, FOGUEST_BEAT_DEADLINE_MISS.
 * The standby only beats (it is kept paused anyway).
 *
 * Between cycles it waits on the role fd (ppoll until the next tick): a
 * role change is seen at once, no polling. On becoming active it restores
 * the handed-over state and continues from its cycle, or starts cold and
 * says why. Console lines the lab parses:
 *   fo-plant: ACTIVE restored cycle C age A from domD (consistent)
 *   fo-plant: ACTIVE cold: REASON
 *   fo-plant: cycle C x=.. sp=.. misses=M
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "foguest.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S  1000000000ull

struct plant_state {
	uint64_t magic;      /* PLANT_MAGIC: our own format check on top of the library's */
	uint64_t cycle;
	double x;            /* plant output */
	double integral;     /* controller */
	double setpoint;
	uint32_t payload_len;
	uint32_t reserved;
	unsigned char payload[]; /* payload_len bytes: byte i = (cycle + i) & 0xff */
};

#define PLANT_MAGIC 0x544e414c50464f46ull /* "FOPLANT" */

static struct {
	unsigned period_ms;
	unsigned state_bytes;
	uint64_t max_age;
	int rt_priority;
	bool test_commands;
} opt = { .period_ms = 5, .state_bytes = 1024, .max_age = 100, .rt_priority = 60 };

static atomic_bool stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, true);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* one write: lines from two threads never interleave on the console */
	dprintf(2, "fo-plant: %s\n", line);
}

static void plant_step(struct plant_state *s)
{
	const double dt = opt.period_ms / 1000.0, tau = 0.2, kp = 2.0, ki = 5.0;
	double e, u;
	uint32_t i;

	s->cycle++;
	/* setpoint steps every 2 s of cycles: the same in every member */
	s->setpoint = ((s->cycle * opt.period_ms / 2000) % 2) ? 10.0 : 2.0;
	e = s->setpoint - s->x;
	s->integral += e * dt;
	u = kp * e + ki * s->integral;
	s->x += dt * (u - s->x) / tau;
	for (i = 0; i < s->payload_len; i++)
		s->payload[i] = (unsigned char)(s->cycle + i);
}

/* The restored bytes are what the active committed for that cycle. */
static bool plant_consistent(const struct plant_state *s, size_t len, uint64_t cycle)
{
	uint32_t i;

	if (len < sizeof(*s) || s->magic != PLANT_MAGIC || s->cycle != cycle || s->payload_len != len - sizeof(*s) ||
	    !isfinite(s->x) || !isfinite(s->integral))
		return false;
	for (i = 0; i < s->payload_len; i++)
		if (s->payload[i] != (unsigned char)(cycle + i))
			return false;
	return true;
}

static void cold_start(struct plant_state *s)
{
	s->magic = PLANT_MAGIC;
	s->cycle = 0;
	s->x = 0;
	s->integral = 0;
	s->setpoint = 2.0;
	s->payload_len = opt.state_bytes;
}

static void take_over(struct foguest *g, struct plant_state *s, size_t size)
{
	struct foguest_restore_info info;
	enum foguest_restore r = foguest_restore(g, s, size, opt.max_age, &info);

	if (r == FOGUEST_RESTORE_OK && plant_consistent(s, info.len, info.cycle)) {
		say("ACTIVE restored cycle %" PRIu64 " age %" PRIu64 " from dom%" PRIu32 " (consistent)", info.cycle,
		    info.age_cycles, info.src_domid);
		return;
	}
	if (r == FOGUEST_RESTORE_OK)
		say("ACTIVE cold: restored cycle %" PRIu64 " fails the application's own check", info.cycle);
	else if (r == FOGUEST_RESTORE_TOO_OLD)
		say("ACTIVE cold: too old (%" PRIu64 " cycles: state cycle %" PRIu64 ", source at %" PRIu64 ")",
		    info.age_cycles, info.cycle, info.src_last_cycle);
	else if (r == FOGUEST_RESTORE_CORRUPT)
		say("ACTIVE cold: corrupt (%s)", info.why ? info.why : "?");
	else
		say("ACTIVE cold: %s", foguest_restore_name(r));
	cold_start(s);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fo-plant [--period-ms N] [--state-bytes N] [--max-age-cycles N] [--rt-priority N]\n"
		   "                [--test-commands]\n");
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "period-ms", required_argument, NULL, 'p' },
		{ "state-bytes", required_argument, NULL, 's' },
		{ "max-age-cycles", required_argument, NULL, 'a' },
		{ "rt-priority", required_argument, NULL, 'r' },
		{ "test-commands", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p': opt.period_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': opt.state_bytes = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'a': opt.max_age = strtoull(optarg, NULL, 10); break;
		case 'r': opt.rt_priority = atoi(optarg); break;
		case 't': opt.test_commands = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (opt.period_ms < 1 || opt.period_ms > 1000 ||
	    opt.state_bytes + sizeof(struct plant_state) > FOGUEST_STATE_MAX) {
		say("bad --period-ms or --state-bytes (at most %zu)", FOGUEST_STATE_MAX - sizeof(struct plant_state));
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct foguest_options fo = { .log_prefix = "fo-plant" };
	struct sigaction sa = { .sa_handler = on_signal };
	struct sched_param sp;
	struct foguest *g;
	struct plant_state *s;
	size_t size;
	uint64_t period_ns, next, misses = 0;
	enum foguest_role role = FOGUEST_ROLE_UNKNOWN;
	unsigned epoch = 0;
	int r;

	parse_args(argc, argv);
	period_ns = (uint64_t)opt.period_ms * NS_PER_MS;
	size = sizeof(*s) + opt.state_bytes;
	s = calloc(1, FOGUEST_STATE_MAX);
	if (!s)
		return 1;
	cold_start(s);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	fo.period_ms = opt.period_ms;
	fo.flags = FOGUEST_F_STATE | (opt.test_commands ? FOGUEST_F_TEST_COMMANDS : 0);
	r = foguest_open(&fo, &g);
	if (r < 0) {
		say("foguest_open: %s", strerror(-r));
		return 1;
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		say("warning: mlockall: %s", strerror(errno));
	sp.sched_priority = opt.rt_priority;
	if (opt.rt_priority && sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		say("warning: SCHED_FIFO %d: %s", opt.rt_priority, strerror(errno));
	say("dom%u: period %u ms, state %zu bytes, max age %" PRIu64 " cycles", foguest_domid(g), opt.period_ms,
	    size, opt.max_age);

	for (next = mono_ns(); !atomic_load(&stop_requested);) {
		struct pollfd pfd = { .fd = foguest_role_fd(g), .events = POLLIN };
		unsigned flags = FOGUEST_BEAT_HEALTHY;
		uint64_t now;

		/* wait for the tick, or a role change (no polling) */
		for (;;) {
			struct timespec ts;

			now = mono_ns();
			if (now >= next)
				break;
			ts.tv_sec = (time_t)((next - now) / NS_PER_S);
			ts.tv_nsec = (long)((next - now) % NS_PER_S);
			if (ppoll(&pfd, 1, &ts, NULL) > 0 || atomic_load(&stop_requested))
				break;
		}
		if (atomic_load(&stop_requested))
			break;
		if (pfd.revents & POLLIN || foguest_role_epoch(g) != epoch) {
			enum foguest_role was = role;

			role = foguest_role(g);
			if (role == FOGUEST_ROLE_ACTIVE && foguest_role_epoch(g) != epoch)
				take_over(g, s, FOGUEST_STATE_MAX);
			else if (role != was)
				say("%s", foguest_role_name(role));
			epoch = foguest_role_epoch(g);
			if (mono_ns() < next)
				continue; /* the tick has not come yet */
		}
		/* a tick that came a whole period late: this cycle overran */
		now = mono_ns();
		if (now - next >= period_ns) {
			flags |= FOGUEST_BEAT_DEADLINE_MISS;
			misses++;
		}
		if (role == FOGUEST_ROLE_ACTIVE) {
			plant_step(s);
			foguest_commit(g, s, size, s->cycle);
			foguest_beat(g, s->cycle, flags);
			if (s->cycle % (1000 / opt.period_ms) == 0)
				say("cycle %" PRIu64 " x=%.3f sp=%.1f misses=%" PRIu64, s->cycle, s->x, s->setpoint, misses);
		} else {
			foguest_beat(g, 0, flags);
		}
		/* the next tick on the grid; a late wake-up skips missed ticks */
		next += period_ns;
		if (next <= now)
			next += ((now - next) / period_ns + 1) * period_ns;
	}
	foguest_close(g);
	free(s);
	return 0;
}
