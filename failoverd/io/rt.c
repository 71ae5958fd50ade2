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
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"

/* What the deepest switch path needs, with a wide margin: it calls into
 * libxenctrl, which builds a bounce buffer on the stack of its callers. */
#define FO_STACK_PREFAULT (256 * 1024)

static void prefault_stack(void)
{
	volatile unsigned char buf[FO_STACK_PREFAULT];

	for (size_t i = 0; i < sizeof(buf); i += 4096)
		buf[i] = 0;
}

/*
 * RLIMIT_RTTIME: CPU time a SCHED_FIFO thread may use without blocking.
 * The loop blocks in epoll_wait every turn and a turn takes microseconds
 * to milliseconds; seconds of it without blocking is a loop that spins
 * (a bug, a hypercall that never returns to us) and starves everything
 * below it on its CPU, dom0's own kernel threads included. At the soft
 * limit the kernel sends SIGXCPU: we say so and exit with
 * FO_RT_EXIT_RTTIME, and systemd (Restart=on-failure) starts a daemon
 * that adopts the pairs as they are; pairs armed in the kernel module
 * stay protected meanwhile. At the hard limit (a handler that could not
 * run) the kernel sends SIGKILL, with the same outcome, unexplained.
 */
static rlim_t rttime_soft_us = FO_RT_RTTIME_SOFT_US, rttime_hard_us = FO_RT_RTTIME_HARD_US;

void fo_rt_set_rttime_us(unsigned long soft_us, unsigned long hard_us)
{
	rttime_soft_us = soft_us;
	rttime_hard_us = hard_us;
}

static void on_sigxcpu(int signo)
{
	const struct sched_param other = { 0 };
	struct timespec grace = { 0, 300 * 1000000 };

	(void)signo;
	fo_log_signal_safe(FO_LOG_ERR, "real-time: the loop used its RLIMIT_RTTIME (CPU without blocking): it is stuck "
				       "and starves its CPU; exiting so that systemd restarts failoverd (a restart "
				       "adopts the pairs, never switches)");
	/* Let the log writer (SCHED_OTHER, maybe on this CPU) run, then go. */
	sched_setscheduler(0, SCHED_OTHER, &other);
	nanosleep(&grace, NULL);
	_exit(FO_RT_EXIT_RTTIME);
}

static void setup_rttime(void)
{
	struct rlimit rl = { rttime_soft_us, rttime_hard_us };
	struct sigaction sa;
	sigset_t xcpu;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigxcpu;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGXCPU, &sa, NULL);
	sigemptyset(&xcpu);
	sigaddset(&xcpu, SIGXCPU);
	sigprocmask(SIG_UNBLOCK, &xcpu, NULL);
	if (setrlimit(RLIMIT_RTTIME, &rl) < 0)
		fo_warn("could not set RLIMIT_RTTIME: %s: a spinning loop would not be stopped", strerror(errno));
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
	setup_rttime(); /* before SCHED_FIFO: a FIFO thread is never unbounded */
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
