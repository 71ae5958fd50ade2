/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wire.c - the state stream's wire (stream/wire.c): what another host
 * sends. The first byte picks what the rest is:
 *   even  a whole received message (header, body, MAC) opened with a fixed
 *         connection key: nearly always refused at the MAC, as a forger's;
 *   odd   a body sealed here with that key, then opened: authentic bytes
 *         whose fields may not add up (a peer with the key but a bug), so
 *         the STATE parser sees them;
 * and the same bytes as a handshake answer (fo_wire_auth_check). Nothing
 * may read out of bounds, and what opens must be within its message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/wire.h"

static unsigned char msg[FO_WIRE_MSG_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fo_wire_key key = { .len = 40 }, session;
	unsigned char ns[FO_WIRE_NONCE] = { 1 }, nc[FO_WIRE_NONCE] = { 2 }, got_nc[FO_WIRE_NONCE];
	struct fo_wire_state st;
	enum fo_wire_refusal r;
	const char *why = NULL;
	uint32_t body_len;
	int type;

	if (size < 1)
		return 0;
	memset(key.k, 'k', key.len);
	fo_wire_session(&session, &key, ns, nc);
	if (size - 1 >= FO_WIRE_AUTH)
		(void)fo_wire_auth_check(data + 1, &key, ns, got_nc, &why);
	if ((data[0] & 1) == 0) {
		if (size - 1 < FO_WIRE_HEADER || size - 1 > sizeof(msg))
			return 0;
		memcpy(msg, data + 1, size - 1);
		if (!fo_wire_header_len(msg, &body_len) || FO_WIRE_HEADER + (size_t)body_len + FO_WIRE_MAC != size - 1)
			return 0;
	} else {
		if (size - 1 > FO_WIRE_BODY_MAX)
			return 0;
		body_len = (uint32_t)(size - 1);
		fo_wire_seal(msg, &session, 1, (enum fo_wire_type)(data[0] >> 1), data + 1, body_len);
	}
	type = fo_wire_open(msg, body_len, &session, 1, &st, &r, &why);
	if (type == FO_WIRE_STATE &&
	    (st.len > FO_ST_SLOT_SIZE || st.data < msg || st.data + st.len > msg + FO_WIRE_HEADER + body_len ||
	     strlen(st.pair) == 0))
		abort();
	if (type < 0 && (!why || (unsigned)r >= FO_REFUSED_N))
		abort();
	return 0;
}
