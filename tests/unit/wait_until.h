/* SPDX-License-Identifier: MIT */
/* wait_until.h - the threaded unit tests' wait for a condition, in real
 * time: re-evaluated every millisecond until true or the time is up. */
#ifndef FO_TEST_WAIT_UNTIL_H
#define FO_TEST_WAIT_UNTIL_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

/* ok = cond, re-evaluated every ms until true or ms have passed. */
#define WAIT_UNTIL(ok, cond, ms)                                              \
	do {                                                                  \
		uint64_t end_ = now_ms() + (ms);                              \
		while (!((ok) = (cond)) && now_ms() < end_)                   \
			nap();                                                \
	} while (0)

#endif
