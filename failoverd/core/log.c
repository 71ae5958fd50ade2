/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static enum fo_log_level current_level = FO_LOG_INFO;
static atomic_ulong log_calls;

unsigned long fo_log_calls(void) { return atomic_load_explicit(&log_calls, memory_order_relaxed); }

void fo_log_set_level(enum fo_log_level level) { current_level = level; }
enum fo_log_level fo_log_get_level(void) { return current_level; }

void fo_log(enum fo_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	atomic_fetch_add_explicit(&log_calls, 1, memory_order_relaxed);
	if (level > current_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One write per line so concurrent writers (and journald) never see a
	 * line torn in two. The "<N>" prefix is sd-daemon(3)'s priority prefix. */
	fprintf(stderr, "<%d>failoverd: %s\n", 3 + (int)level, line);
}

bool fo_ratelimit_ok(struct fo_ratelimit *rl, uint64_t now_ns)
{
	if (now_ns - rl->window_start >= rl->interval_ns) {
		if (rl->suppressed)
			fo_log(FO_LOG_WARNING, "(%u similar messages suppressed)", rl->suppressed);
		rl->window_start = now_ns;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	if (rl->printed < rl->burst) {
		rl->printed++;
		return true;
	}
	rl->suppressed++;
	return false;
}
