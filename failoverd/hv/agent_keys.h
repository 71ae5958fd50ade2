/* SPDX-License-Identifier: MIT */
/*
 * agent_keys.h - the guest's published heartbeat keys (ready, abi, gref,
 * port under data/failover/), judged before anything is mapped or bound.
 * The values come from the guest: they are hostile until proven otherwise.
 * Pure string work, so the parser is unit tested and fuzzed without Xen
 * (tests/fuzz/fuzz_agent_keys.c).
 */
#ifndef FO_AGENT_KEYS_H
#define FO_AGENT_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Grant entries 0..7 are reserved for the toolstack (console, xenstore). */
#define FO_AGENT_GREF_FIRST_GUEST 8u
#define FO_AGENT_PORT_MAX         ((1u << 17) - 1) /* FIFO event channel ABI limit */
#define FO_AGENT_READY_MAX_HEX    16               /* boot_id is 64 bits */

struct fo_agent_binding {
	uint32_t abi, gref, port;
};

/*
 * Check the four values (NULL = key missing; ready must be non-NULL: "no
 * agent" is the caller's case). 0 and *ret filled, or -EINVAL with reason
 * saying which key was wrong and how, the guest's value shown safely
 * (core/text.h).
 */
int fo_agent_keys_parse(const char *ready, const char *abi, const char *gref, const char *port,
			uint32_t want_abi, struct fo_agent_binding *ret, char *reason, size_t reasonlen);

#endif
