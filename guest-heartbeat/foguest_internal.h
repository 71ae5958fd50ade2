/* SPDX-License-Identifier: MIT */
/*
 * foguest_internal.h - what fo-heartbeat (and the lab's example) need beyond
 * the public API: the raw page for the test-only hostile modes, publishing
 * keys by hand, the drill state. Not installed; no stability promise.
 */
#ifndef FOGUEST_INTERNAL_H
#define FOGUEST_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "abi/fo_heartbeat.h"
#include "foguest.h"

/* extra foguest_options.flags, internal */
#define FOGUEST_F_NO_PUBLISH (1u << 16) /* open without publishing the keys (bad-gref) */
/* regrant (TEST): how long the page we moved from keeps beating. dom0
 * follows the new keys within a few hundred ms even under emulation
 * (1.2 s measured in the lab, failoverd moving Xen's watch included);
 * a reader that has not followed by then has lost the agent. */
#define FOGUEST_REGRANT_OVERLAP_NS (5ull * 1000000000ull)
/* notify-flood (TEST): how long the xenstore thread floods the heartbeat
 * port; bounded, as that thread reads no new command meanwhile. */
#define FOGUEST_NOTIFY_FLOOD_NS (3ull * 1000000000ull)

/* The drill command in force (FO_HB_CMD_*), as the library parsed it. */
enum foguest_control {
	FOGUEST_CTL_NONE = 0,
	FOGUEST_CTL_STOP,       /* stop-heartbeat */
	FOGUEST_CTL_FREEZE,
	FOGUEST_CTL_UNHEALTHY,
	FOGUEST_CTL_STUCK,      /* stuck-sequence: notify, never bump */
	FOGUEST_CTL_GARBAGE_PAGE, /* TEST: random bytes over the whole page, notify */
};

int foguest__control(const struct foguest *g);
volatile struct fo_hb_page *foguest__page(struct foguest *g);
int foguest__notify(struct foguest *g);
/* The page as a fresh agent writes it (magic, ABI, period, boot_id). */
void foguest__page_init(struct foguest *g);
uint32_t foguest__gref(const struct foguest *g);
uint32_t foguest__port(const struct foguest *g);
uint64_t foguest__boot_id(const struct foguest *g);
const char *foguest__base_path(const struct foguest *g); /* "/local/domain/N/" */
/* gref/port/abi/ready (and the state keys if shared) in one transaction,
 * with these values (hostile modes) or the real ones (NULL). */
int foguest__publish(struct foguest *g, void *xs_handle, const char *gref, const char *port, const char *ready);
/* A beat with FO_HB_FLAG_* added (the agent's last one: STOPPING). */
int foguest__beat_flags(struct foguest *g, uint64_t cycle, unsigned flags, uint32_t hb_flags);
/* A line through the application's logger (options.log / log_prefix). */
void foguest__log(struct foguest *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Shared by the library and fo-heartbeat (one copy of each). */

/* xorshift64*: cheap garbage for the hostile modes, not for boot_id. */
static inline uint64_t foguest__xorshift(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Garbage over a whole heartbeat page, the sequence too: the agent's
 * --hostile garbage-page mode and the library's garbage-page command. */
static inline void foguest__garble_page(volatile struct fo_hb_page *page, uint64_t *seed)
{
	volatile uint64_t *w = (volatile uint64_t *)page;

	for (size_t i = 0; i < FO_HB_PAGE_SIZE / sizeof(uint64_t); i++)
		w[i] = foguest__xorshift(seed);
}

/* A canonical decimal in [min, max] (digits only, no sign or space). */
static inline bool foguest__parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*ret = v;
	return true;
}

/* A control key's value as the library reads it (the parsing alone, so a
 * unit test can check it without Xen). */
enum foguest_cmd {
	FOGUEST_CMD_UNKNOWN = 0, /* ignored, logged */
	FOGUEST_CMD_NONE,        /* no key, or "none": back to normal */
	FOGUEST_CMD_STOP,
	FOGUEST_CMD_STUCK,
	FOGUEST_CMD_UNHEALTHY,
	FOGUEST_CMD_FREEZE,
	FOGUEST_CMD_CRASH,
	/* TEST ONLY (FOGUEST_F_TEST_COMMANDS; otherwise UNKNOWN): */
	FOGUEST_CMD_GARBAGE_STATE, /* ...and only with the state regions */
	FOGUEST_CMD_GARBAGE_PAGE,
	FOGUEST_CMD_REGRANT,
	FOGUEST_CMD_NOTIFY_FLOOD,
};

static inline enum foguest_cmd foguest__parse_control(const char *cmd, unsigned flags, bool have_state)
{
	bool test = flags & FOGUEST_F_TEST_COMMANDS;

	if (!cmd || !strcmp(cmd, FO_HB_CMD_NONE))
		return FOGUEST_CMD_NONE;
	if (!strcmp(cmd, FO_HB_CMD_STOP))
		return FOGUEST_CMD_STOP;
	if (!strcmp(cmd, FO_HB_CMD_STUCK))
		return FOGUEST_CMD_STUCK;
	if (!strcmp(cmd, FO_HB_CMD_UNHEALTHY))
		return FOGUEST_CMD_UNHEALTHY;
	if (!strcmp(cmd, FO_HB_CMD_FREEZE))
		return FOGUEST_CMD_FREEZE;
	if (!strcmp(cmd, FO_HB_CMD_CRASH))
		return FOGUEST_CMD_CRASH;
	if (test && have_state && !strcmp(cmd, "garbage-state"))
		return FOGUEST_CMD_GARBAGE_STATE;
	if (test && !strcmp(cmd, "garbage-page"))
		return FOGUEST_CMD_GARBAGE_PAGE;
	if (test && !strcmp(cmd, "regrant"))
		return FOGUEST_CMD_REGRANT;
	if (test && !strcmp(cmd, "notify-flood"))
		return FOGUEST_CMD_NOTIFY_FLOOD;
	return FOGUEST_CMD_UNKNOWN;
}

#endif
