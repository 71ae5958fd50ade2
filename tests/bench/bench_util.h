/* SPDX-License-Identifier: MIT */
/*
 * bench_util.h - what both benchmark drivers (bench-bare, bench-ctl) need:
 * a monotonic clock, and the same real-time treatment failoverd gives
 * itself (io/rt.c), so that a driver measuring "the hypercall" is not
 * measuring the scheduler instead.
 */
#ifndef FO_BENCH_UTIL_H
#define FO_BENCH_UTIL_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <xenctrl.h>

/* CLOCK_MONOTONIC, the clock failoverd stamps its phases with. */
static inline int64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The CPU's own counter ("tsc" in the drivers' columns): a second clock to
 * cross-check intervals measured with CLOCK_MONOTONIC.
 *
 * x86: the time-stamp counter. dom0's Linux reads time through Xen's
 * pvclock and, without a TSC that Xen calls stable (never under QEMU/TCG),
 * clamps every reading to the newest one any vCPU returned; the raw TSC of
 * one pinned CPU has no such clamp.
 *
 * arm64: the generic timer's virtual counter, CNTVCT_EL0 (what Linux's
 * vDSO reads too; Linux lets EL0 read it). The isb keeps the read from
 * being taken early, ahead of the instructions before it, which would
 * shorten the interval being timed.
 *
 * 0 where there is neither.
 */
static inline uint64_t bench_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
#else
	return 0;
#endif
}

/*
 * The counter's nominal frequency in Hz, where the architecture states it:
 * CNTFRQ_EL0 on arm64 (set by firmware, or here by QEMU, for the whole
 * system). 0 on x86, whose TSC rate is only known by measuring it against
 * CLOCK_MONOTONIC (bench-bare --mode clock's tsc_per_us does both).
 */
static inline uint64_t bench_tsc_hz(void)
{
#if defined(__aarch64__)
	uint64_t v;

	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

static inline void bench_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * Pin to CPU cpu (< 0: leave), lock memory and go SCHED_FIFO prio (0: stay
 * SCHED_OTHER). SCHED_RESET_ON_FORK: a spawned child (xl) must run as an
 * ordinary process, as it would from an operator's shell. Returns 0 or
 * -errno; prints what failed, since a benchmark that silently ran without
 * its priority would report the wrong thing.
 */
static inline int bench_rt_setup(int prio, int cpu)
{
	struct sched_param sp = { .sched_priority = prio };

	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			fprintf(stderr, "bench: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
			return -errno;
		}
	}
	if (prio <= 0)
		return 0;
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fprintf(stderr, "bench: mlockall: %s (continuing)\n", strerror(errno));
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0) {
		fprintf(stderr, "bench: SCHED_FIFO %d: %s\n", prio, strerror(errno));
		return -errno;
	}
	return 0;
}

static inline int bench_parse_int(const char *s, long min, long max, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* The options both drivers take, with the same bounds: -n, --gap-ms,
 * --rt, --cpu, --max-s (getopt codes n g r c M). */
struct bench_run_opts {
	long n, gap_ms, prio, cpu, max_s;
};

/* 1: c is one of them and its value is in range; -EINVAL: one of them,
 * out of range or not a number; 0: not one of them. */
static inline int bench_run_opt(int c, const char *arg, struct bench_run_opts *o)
{
	switch (c) {
	case 'n': return bench_parse_int(arg, 1, 1000000, &o->n) ? -EINVAL : 1;
	case 'g': return bench_parse_int(arg, 0, 60000, &o->gap_ms) ? -EINVAL : 1;
	case 'r': return bench_parse_int(arg, 0, 99, &o->prio) ? -EINVAL : 1;
	case 'c': return bench_parse_int(arg, -1, 1023, &o->cpu) ? -EINVAL : 1;
	case 'M': return bench_parse_int(arg, 0, 86400, &o->max_s) ? -EINVAL : 1;
	}
	return 0;
}

/* 1 running, 0 not running (paused, shut down, dying), -errno. */
static inline int bench_is_running(xc_interface *xch, uint32_t domid)
{
	xc_domaininfo_t info;
	int r = xc_domain_getinfolist(xch, domid, 1, &info);

	if (r < 0)
		return -errno;
	if (r != 1 || info.domain != domid)
		return -ESRCH;
	return !(info.flags & (XEN_DOMINF_paused | XEN_DOMINF_shutdown | XEN_DOMINF_dying));
}

#endif
