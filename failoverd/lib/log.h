/* SPDX-License-Identifier: MIT */
/*
 * log.h - failoverd's one logging entry. Lines go to stderr with a syslog
 * priority prefix ("<3>"), which journald understands when we run under
 * systemd and which reads fine on a terminal. Once the daemon started the
 * writer thread (fo_log_start_async), fo_log() only queues: see log.c.
 *
 * Never call these between "fault seen" and "standby unpaused": the switch
 * path records into the event ring, and the event is logged afterwards
 * (test_rtpath counts the calls).
 */
#ifndef FO_LOG_H
#define FO_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

enum fo_log_level { FO_LOG_ERR = 0, FO_LOG_WARNING, FO_LOG_NOTICE, FO_LOG_INFO, FO_LOG_DEBUG };

void fo_log_set_level(enum fo_log_level level);
enum fo_log_level fo_log_get_level(void);

void fo_log(enum fo_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define FO_LOG_LINE_MAX 1024

/* Queue lines for a SCHED_OTHER writer thread from now on (0 or -errno);
 * stop: write out what is queued and go back to writing at once. */
int fo_log_start_async(void);
void fo_log_stop_async(void);
/* Lines lost to a full queue since start (also reported as a line). */
unsigned long fo_log_dropped(void);
/* From a signal handler: a fixed message, no formatting, no lock. */
void fo_log_signal_safe(enum fo_log_level level, const char *msg);
/* Where the writer puts a line (default: stderr with the "<N>" prefix);
 * for tests, and for the daemon's journal entries. Set before starting. */
typedef void (*fo_log_sink)(void *ctx, int level, const char *line);
void fo_log_set_sink(fo_log_sink sink, void *ctx);

/* A line with a record attached (at most FO_LOG_ATTACH_MAX bytes, copied):
 * the writer hands both to the attachment sink (the daemon's: an event
 * and its structured journal entry, sd_journal_sendv, which blocks on a
 * stalled journald like stderr does, see core/events.h fo_log_event) or,
 * with none set, writes the line like fo_log(). */
#define FO_LOG_ATTACH_MAX 1024
void fo_log_attached(enum fo_log_level level, const void *data, size_t len, const char *line);
typedef void (*fo_log_attached_sink)(const void *data, const char *line);
void fo_log_set_attached_sink(fo_log_attached_sink sink);

/* Every fo_log() call so far, whatever its level (the real-time path
 * test asserts that a switch makes none). */
unsigned long fo_log_calls(void);

#define fo_err(...)    fo_log(FO_LOG_ERR, __VA_ARGS__)
#define fo_warn(...)   fo_log(FO_LOG_WARNING, __VA_ARGS__)
#define fo_notice(...) fo_log(FO_LOG_NOTICE, __VA_ARGS__)
#define fo_info(...)   fo_log(FO_LOG_INFO, __VA_ARGS__)
#define fo_debug(...)  fo_log(FO_LOG_DEBUG, __VA_ARGS__)

/*
 * Rate limit for messages a guest can provoke (garbage in its page, key
 * storms): at most `burst` lines per `interval_ns`, then one summary of how
 * many were suppressed. Keep one per source.
 */
struct fo_ratelimit {
	uint64_t interval_ns;
	unsigned burst;
	uint64_t window_start;
	unsigned printed;
	unsigned suppressed;
};

#define FO_RATELIMIT_INIT(interval_ms, burst_) \
	{ .interval_ns = (uint64_t)(interval_ms) * 1000000ull, .burst = (burst_) }

/* True if the caller may log now (at time `now_ns`). */
bool fo_ratelimit_ok(struct fo_ratelimit *rl, uint64_t now_ns);

#endif
