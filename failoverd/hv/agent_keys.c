/* SPDX-License-Identifier: MIT */
#include "agent_keys.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "../../guest-heartbeat/abi/fo_heartbeat.h"
#include "lib/text.h"

/* Canonical unsigned decimal: digits only, no sign, no leading zero, no
 * spaces, <= max. */
static bool parse_strict_u32(const char *s, uint32_t max, uint32_t *ret)
{
	uint64_t v = 0;
	size_t n = 0;

	if (!s || !*s || (s[0] == '0' && s[1] != '\0'))
		return false;
	for (; *s; s++, n++) {
		if (*s < '0' || *s > '9' || n >= 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > max)
		return false;
	*ret = (uint32_t)v;
	return true;
}

static bool ready_is_valid(const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++, n++)
		if (n >= FO_AGENT_READY_MAX_HEX ||
		    !((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
			return false;
	return true;
}

static int refuse(char *reason, size_t len, const char *key, const char *value, const char *why)
{
	char shown[FO_SHOWN_BUF];

	snprintf(reason, len, "bad %s \"%s\": %s", key, fo_text_shown(value ? value : "", shown), why);
	return -EINVAL;
}

int fo_agent_keys_parse(const char *ready, const char *abi, const char *gref, const char *port,
			uint32_t want_abi, struct fo_agent_binding *ret, char *reason, size_t reasonlen)
{
	if (!ready_is_valid(ready))
		return refuse(reason, reasonlen, FO_HB_XS_READY, ready, "want 1-16 hex digits");
	if (!abi)
		return refuse(reason, reasonlen, FO_HB_XS_ABI, "", "missing");
	if (!parse_strict_u32(abi, UINT32_MAX, &ret->abi) || ret->abi != want_abi)
		return refuse(reason, reasonlen, FO_HB_XS_ABI, abi, "unsupported ABI version");
	if (!gref)
		return refuse(reason, reasonlen, FO_HB_XS_GREF, "", "missing");
	if (!parse_strict_u32(gref, UINT32_MAX, &ret->gref))
		return refuse(reason, reasonlen, FO_HB_XS_GREF, gref, "not a decimal grant reference");
	if (ret->gref < FO_AGENT_GREF_FIRST_GUEST)
		return refuse(reason, reasonlen, FO_HB_XS_GREF, gref, "reserved grant entry (0-7)");
	if (!port)
		return refuse(reason, reasonlen, FO_HB_XS_PORT, "", "missing");
	if (!parse_strict_u32(port, FO_AGENT_PORT_MAX, &ret->port) || ret->port == 0)
		return refuse(reason, reasonlen, FO_HB_XS_PORT, port, "not an event-channel port (1-131071)");
	return 0;
}
