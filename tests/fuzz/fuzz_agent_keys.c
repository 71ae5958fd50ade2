/* SPDX-License-Identifier: MIT */
/* libFuzzer: the four xenstore values a guest publishes for its heartbeat
 * (hv/agent_keys.c), split from the input at '\n' (fewer lines: keys
 * missing). Accepted values must be in range; a refusal names the key and
 * shows the guest's value as printable ASCII. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../guest-heartbeat/abi/fo_heartbeat.h"
#include "hv/agent_keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *keys[4] = { NULL, NULL, NULL, NULL }, *p;
	struct fo_agent_binding b;
	char reason[256];
	int n = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (p = buf; n < 4 && p; n++) {
		keys[n] = p;
		p = strchr(p, '\n');
		if (p)
			*p++ = '\0';
	}
	if (keys[0]) {
		reason[0] = '\0';
		if (fo_agent_keys_parse(keys[0], keys[1], keys[2], keys[3], FO_HB_ABI_VERSION, &b, reason,
					sizeof(reason)) == 0) {
			if (b.abi != FO_HB_ABI_VERSION || b.gref < FO_AGENT_GREF_FIRST_GUEST || b.port == 0 ||
			    b.port > FO_AGENT_PORT_MAX)
				abort();
		} else {
			if (strncmp(reason, "bad data/failover/", 18) != 0)
				abort();
			for (const char *c = reason; *c; c++)
				if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
					abort();
		}
	}
	free(buf);
	return 0;
}
