/* SPDX-License-Identifier: MIT */
/*
 * fo-labtime - microsecond time for the lab's shell scenarios. busybox
 * `date` has no %N, and shell arithmetic on seconds is too coarse to time a
 * failover. Uses CLOCK_MONOTONIC, the clock fo-observer stamps its
 * transitions with, so the two can be subtracted.
 *
 *   fo-labtime [now]        print CLOCK_MONOTONIC in microseconds
 *   fo-labtime since T_US   print now - T_US (microseconds)
 *   fo-labtime sleep US     sleep US microseconds
 *   fo-labtime rt PRIO CMD [ARGS...]   exec CMD under SCHED_FIFO PRIO
 *   fo-labtime rt-pid PRIO PID         move PID to SCHED_FIFO PRIO
 *   fo-labtime spin STOPFILE [ON_US OFF_US]
 *                           busy-loop until STOPFILE exists; with ON_US and
 *                           OFF_US, spin ON_US then sleep OFF_US, in turn
 *
 * The rt forms exist for the load scenario: with stress-ng saturating
 * dom0, a fault injected by an ordinary process (and delivered by an
 * ordinary xenstored) reaches the guest seconds late, which would measure
 * the injection rather than failoverd. busybox has no chrt. spin, under
 * "rt 99", is the SCHED_FIFO load of hvwatch-frozen and bench-paths: a
 * duty cycle leaves dom0 time to run the scenario while its RT threads
 * below 99 wait out every ON_US.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void labtime_sleep_us(int64_t v)
{
	struct timespec ts = { .tv_sec = v / 1000000, .tv_nsec = (v % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int64_t labtime_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int labtime_parse(const char *s, int64_t *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int main(int argc, char **argv)
{
	int64_t v;

	if (argc < 2 || !strcmp(argv[1], "now")) {
		printf("%" PRId64 "\n", labtime_now_us());
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "since") && !labtime_parse(argv[2], &v)) {
		printf("%" PRId64 "\n", labtime_now_us() - v);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "sleep") && !labtime_parse(argv[2], &v) && v >= 0) {
		labtime_sleep_us(v);
		return 0;
	}
	if ((argc == 3 || argc == 5) && !strcmp(argv[1], "spin")) {
		int64_t on = 0, off = 0, t0;

		if (argc == 5 && (labtime_parse(argv[3], &on) || labtime_parse(argv[4], &off) || on <= 0 || off <= 0)) {
			fprintf(stderr, "fo-labtime spin: ON_US and OFF_US must be positive microseconds\n");
			return 2;
		}
		/* The stop file is looked at on every turn: whatever happens to
		 * the scenario, a watchdog that creates it ends the load. */
		while (access(argv[2], F_OK)) {
			if (!on)
				continue;
			for (t0 = labtime_now_us(); labtime_now_us() - t0 < on;)
				;
			labtime_sleep_us(off);
		}
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "rt") && !labtime_parse(argv[2], &v)) {
		struct sched_param sp = { .sched_priority = (int)v };

		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			perror("fo-labtime: sched_setscheduler");
		execvp(argv[3], argv + 3);
		perror("fo-labtime: exec");
		return 127;
	}
	if (argc == 4 && !strcmp(argv[1], "rt-pid") && !labtime_parse(argv[2], &v)) {
		struct sched_param sp = { .sched_priority = (int)v };
		int64_t pid;

		if (labtime_parse(argv[3], &pid) || sched_setscheduler((pid_t)pid, SCHED_FIFO, &sp)) {
			perror("fo-labtime: sched_setscheduler");
			return 1;
		}
		return 0;
	}
	fprintf(stderr, "usage: fo-labtime [now] | since T_US | sleep US | rt PRIO CMD [ARGS] | rt-pid PRIO PID | "
		"spin STOPFILE [ON_US OFF_US]\n");
	return 2;
}
