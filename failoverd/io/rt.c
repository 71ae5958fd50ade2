/* SPDX-License-Identifier: MIT */
/*
 * rt.c - real-time setup. Order matters: raise RLIMIT_MEMLOCK, lock all
 * memory (current and future) and pre-fault the stack, so no page fault can
 * happen on the switch path; then pin and only then go SCHED_FIFO, so the
 * set-up itself never runs at a priority that starves dom0.
 */
#include "rt.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "../core/log.h"

/* What the deepest switch path needs, with a wide margin: it calls into
 * libxenctrl, which builds a bounce buffer on the stack of its callers. */
#define FO_STACK_PREFAULT (256 * 1024)

static void prefault_stack(void)
{
	volatile unsigned char buf[FO_STACK_PREFAULT];

	for (size_t i = 0; i < sizeof(buf); i += 4096)
		buf[i] = 0;
}

int fo_rt_setup(int priority, int cpu, bool require_rt, struct fo_rt_result *ret)
{
	struct fo_rt_result got = { false, false, cpu < 0 };
	struct rlimit unlimited = { RLIM_INFINITY, RLIM_INFINITY };
	struct sched_param sp = { 0 };
	int min = sched_get_priority_min(SCHED_FIFO), max = sched_get_priority_max(SCHED_FIFO);

	if (setrlimit(RLIMIT_MEMLOCK, &unlimited) < 0)
		fo_debug("could not raise RLIMIT_MEMLOCK: %s", strerror(errno));
	if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0)
		got.locked = true;
	else
		fo_warn("mlockall failed: %s: the switch path may page-fault", strerror(errno));
	prefault_stack();

	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) == 0)
			got.pinned = true;
		else
			fo_warn("could not pin to CPU %d: %s", cpu, strerror(errno));
	}

	if (priority < min)
		priority = min;
	if (priority > max)
		priority = max;
	sp.sched_priority = priority;
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0)
		got.fifo = true;
	else
		fo_warn("could not switch to SCHED_FIFO priority %d: %s", priority, strerror(errno));

	fo_info("real-time: SCHED_FIFO %s (priority %d), memory %s, CPU %s", got.fifo ? "yes" : "NO", priority,
		got.locked ? "locked" : "NOT locked", cpu < 0 ? "not pinned" : got.pinned ? "pinned" : "NOT pinned");
	*ret = got;
	if (require_rt && !(got.fifo && got.locked && got.pinned)) {
		fo_err("daemon.require_rt is true and real-time setup was incomplete; refusing to run");
		return -EPERM;
	}
	return 0;
}
