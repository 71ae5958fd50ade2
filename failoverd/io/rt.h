/* SPDX-License-Identifier: MIT */
/*
 * rt.h - all real-time setup in one place: SCHED_FIFO, mlockall, a
 * pre-faulted stack, CPU pinning. Logs what it got.
 */
#ifndef FO_RT_H
#define FO_RT_H

#include <stdbool.h>

struct fo_rt_result {
	bool fifo;     /* running SCHED_FIFO at the asked priority */
	bool locked;   /* mlockall(MCL_CURRENT|MCL_FUTURE) succeeded */
	bool pinned;   /* pinned to the asked CPU (or none asked) */
};

/* RLIMIT_RTTIME the setup sets (µs): a few seconds of CPU without
 * blocking, then SIGXCPU (logged, exit FO_RT_EXIT_RTTIME), a second
 * later SIGKILL. See rt.c. */
#define FO_RT_RTTIME_SOFT_US 3000000ul
#define FO_RT_RTTIME_HARD_US 4000000ul
#define FO_RT_EXIT_RTTIME 70 /* EX_SOFTWARE: systemd's Restart=on-failure restarts us */
/* Tests: other limits for the next fo_rt_setup(). */
void fo_rt_set_rttime_us(unsigned long soft_us, unsigned long hard_us);

/* cpu < 0: no pinning. Returns -EPERM (after logging) if require_rt and
 * anything could not be had; 0 otherwise, with what was had in *ret. */
int fo_rt_setup(int priority, int cpu, bool require_rt, struct fo_rt_result *ret);

#endif
