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

/* cpu < 0: no pinning. Returns -EPERM (after logging) if require_rt and
 * anything could not be had; 0 otherwise, with what was had in *ret. */
int fo_rt_setup(int priority, int cpu, bool require_rt, struct fo_rt_result *ret);

#endif
