/* SPDX-License-Identifier: MIT */
/*
 * wire.c - the state stream's handshake and messages (wire.h), on
 * OpenSSL's libcrypto: HMAC-SHA256, RAND_bytes, CRYPTO_memcmp (a
 * comparison whose time does not depend on where the bytes differ).
 */
#include "stream/wire.h"

#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

static const char *const refusal_names[FO_REFUSED_N] = {
	[FO_REFUSED_AUTH] = "auth",
	[FO_REFUSED_TRUNCATED] = "truncated",
	[FO_REFUSED_OVERSIZED] = "oversized",
	[FO_REFUSED_TAMPERED] = "tampered",
	[FO_REFUSED_REPLAY] = "replay",
	[FO_REFUSED_MALFORMED] = "malformed",
	[FO_REFUSED_TIMEOUT] = "timeout",
	[FO_REFUSED_FLOOD] = "flood",
};

const char *fo_wire_refusal_name(enum fo_wire_refusal r)
{
	return (unsigned)r < FO_REFUSED_N ? refusal_names[r] : "?";
}

static void put32(unsigned char *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* HMAC-SHA256(key, label | a | b) */
static void mac3(unsigned char out[FO_WIRE_MAC], const struct fo_wire_key *k, const char *label,
		 const unsigned char a[FO_WIRE_NONCE], const unsigned char b[FO_WIRE_NONCE])
{
	unsigned char msg[32 + 2 * FO_WIRE_NONCE];
	size_t ll = strlen(label);
	unsigned int olen = FO_WIRE_MAC;

	memcpy(msg, label, ll);
	memcpy(msg + ll, a, FO_WIRE_NONCE);
	memcpy(msg + ll + FO_WIRE_NONCE, b, FO_WIRE_NONCE);
	HMAC(EVP_sha256(), k->k, (int)k->len, msg, ll + 2 * FO_WIRE_NONCE, out, &olen);
}

int fo_wire_nonce(unsigned char nonce[FO_WIRE_NONCE])
{
	return RAND_bytes(nonce, FO_WIRE_NONCE) == 1 ? 0 : -EIO;
}

static void preamble(unsigned char *out, const char magic[4])
{
	memcpy(out, magic, 4);
	out[4] = FO_WIRE_VERSION;
	out[5] = out[6] = out[7] = 0;
}

static bool preamble_ok(const unsigned char *in, const char magic[4])
{
	return memcmp(in, magic, 4) == 0 && in[4] == FO_WIRE_VERSION && !in[5] && !in[6] && !in[7];
}

void fo_wire_hello(unsigned char out[FO_WIRE_HELLO], const unsigned char ns[FO_WIRE_NONCE])
{
	preamble(out, "FOSS");
	memcpy(out + 8, ns, FO_WIRE_NONCE);
}

bool fo_wire_hello_parse(const unsigned char in[FO_WIRE_HELLO], unsigned char ns[FO_WIRE_NONCE])
{
	if (!preamble_ok(in, "FOSS"))
		return false;
	memcpy(ns, in + 8, FO_WIRE_NONCE);
	return true;
}

void fo_wire_auth(unsigned char out[FO_WIRE_AUTH], const struct fo_wire_key *k, const unsigned char ns[FO_WIRE_NONCE],
		  const unsigned char nc[FO_WIRE_NONCE])
{
	preamble(out, "FOSC");
	memcpy(out + 8, nc, FO_WIRE_NONCE);
	mac3(out + 8 + FO_WIRE_NONCE, k, "fo-stream client", ns, nc);
}

bool fo_wire_auth_check(const unsigned char in[FO_WIRE_AUTH], const struct fo_wire_key *k,
			const unsigned char ns[FO_WIRE_NONCE], unsigned char nc[FO_WIRE_NONCE], const char **why)
{
	unsigned char want[FO_WIRE_MAC];

	if (!preamble_ok(in, "FOSC")) {
		*why = "not a state stream handshake";
		return false;
	}
	memcpy(nc, in + 8, FO_WIRE_NONCE);
	mac3(want, k, "fo-stream client", ns, nc);
	if (CRYPTO_memcmp(want, in + 8 + FO_WIRE_NONCE, FO_WIRE_MAC) != 0) {
		*why = "wrong key (its answer to our challenge does not match)";
		return false;
	}
	return true;
}

void fo_wire_proof(unsigned char out[FO_WIRE_PROOF], const struct fo_wire_key *k, const unsigned char ns[FO_WIRE_NONCE],
		   const unsigned char nc[FO_WIRE_NONCE])
{
	mac3(out, k, "fo-stream server", nc, ns);
}

bool fo_wire_proof_check(const unsigned char in[FO_WIRE_PROOF], const struct fo_wire_key *k,
			 const unsigned char ns[FO_WIRE_NONCE], const unsigned char nc[FO_WIRE_NONCE])
{
	unsigned char want[FO_WIRE_MAC];

	fo_wire_proof(want, k, ns, nc);
	return CRYPTO_memcmp(want, in, FO_WIRE_MAC) == 0;
}

void fo_wire_session(struct fo_wire_key *session, const struct fo_wire_key *k, const unsigned char ns[FO_WIRE_NONCE],
		     const unsigned char nc[FO_WIRE_NONCE])
{
	mac3(session->k, k, "fo-stream session", ns, nc);
	session->len = FO_WIRE_MAC;
}

size_t fo_wire_seal(unsigned char *out, const struct fo_wire_key *session, uint64_t seq, enum fo_wire_type type,
		    const unsigned char *body, uint32_t body_len)
{
	unsigned int olen = FO_WIRE_MAC;

	put32(out, body_len);
	put64(out + 4, seq);
	out[12] = (unsigned char)type;
	out[13] = out[14] = out[15] = 0;
	if (body_len && body != out + FO_WIRE_HEADER)
		memmove(out + FO_WIRE_HEADER, body, body_len);
	HMAC(EVP_sha256(), session->k, (int)session->len, out, FO_WIRE_HEADER + body_len, out + FO_WIRE_HEADER + body_len,
	     &olen);
	return FO_WIRE_HEADER + body_len + FO_WIRE_MAC;
}

uint32_t fo_wire_state_body(unsigned char *out, const char *pair, uint64_t cycle, uint64_t newest_cycle,
			    const void *data, uint32_t len)
{
	size_t nl = strnlen(pair, FO_NAME_MAX);
	unsigned char *p = out;

	if (len > FO_ST_SLOT_SIZE)
		len = 0;
	*p++ = (unsigned char)nl;
	memcpy(p, pair, nl);
	p += nl;
	put64(p, cycle);
	put64(p + 8, newest_cycle);
	put32(p + 16, len);
	p += 20;
	if (len)
		memcpy(p, data, len);
	return (uint32_t)(p - out) + len;
}

bool fo_wire_header_len(const unsigned char hdr[FO_WIRE_HEADER], uint32_t *body_len)
{
	*body_len = get32(hdr);
	return *body_len <= FO_WIRE_BODY_MAX;
}

int fo_wire_open(const unsigned char *msg, uint32_t body_len, const struct fo_wire_key *session, uint64_t expected,
		 struct fo_wire_state *st, enum fo_wire_refusal *refusal, const char **why)
{
	unsigned char want[FO_WIRE_MAC];
	unsigned int olen = FO_WIRE_MAC;
	const unsigned char *b = msg + FO_WIRE_HEADER;
	uint64_t seq;
	uint32_t nl, dl;
	int type;

	HMAC(EVP_sha256(), session->k, (int)session->len, msg, FO_WIRE_HEADER + body_len, want, &olen);
	if (CRYPTO_memcmp(want, msg + FO_WIRE_HEADER + body_len, FO_WIRE_MAC) != 0) {
		*refusal = FO_REFUSED_TAMPERED;
		*why = "its MAC does not match (altered on the way, or not sealed with this connection's key)";
		return -1;
	}
	seq = get64(msg + 4);
	if (seq != expected) {
		*refusal = FO_REFUSED_REPLAY;
		*why = seq < expected ? "a sequence number already received (a replay)"
				      : "a sequence number ahead of the next one (a message was dropped)";
		return -1;
	}
	type = msg[12];
	*refusal = FO_REFUSED_MALFORMED;
	if (msg[13] || msg[14] || msg[15]) {
		*why = "reserved header bytes set";
		return -1;
	}
	if (type == FO_WIRE_TICK) {
		if (body_len) {
			*why = "a TICK with a body";
			return -1;
		}
		return type;
	}
	if (type != FO_WIRE_STATE) {
		*why = "unknown message type";
		return -1;
	}
	if (body_len < FO_WIRE_STATE_FIXED + 1) {
		*why = "a STATE shorter than its fixed fields";
		return -1;
	}
	nl = b[0];
	if (nl == 0 || nl > FO_NAME_MAX || body_len < FO_WIRE_STATE_FIXED + nl) {
		*why = "a STATE whose pair name length is out of range";
		return -1;
	}
	for (uint32_t i = 0; i < nl; i++) {
		unsigned char c = b[1 + i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-')) {
			*why = "a STATE whose pair name has characters a pair name cannot have";
			return -1;
		}
	}
	memcpy(st->pair, b + 1, nl);
	st->pair[nl] = '\0';
	st->cycle = get64(b + 1 + nl);
	st->newest_cycle = get64(b + 1 + nl + 8);
	dl = get32(b + 1 + nl + 16);
	if (dl > FO_ST_SLOT_SIZE || (uint64_t)FO_WIRE_STATE_FIXED + nl + dl != body_len) {
		*why = "a STATE whose data length does not match the message's";
		return -1;
	}
	st->len = dl;
	st->data = b + FO_WIRE_STATE_FIXED + nl;
	return type;
}
