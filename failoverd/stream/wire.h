/* SPDX-License-Identifier: MIT */
/*
 * wire.h - the state stream's bytes on TCP (stream/state_stream_tx.c sends
 * them, stream/state_stream_rx.c receives them): a handshake that proves
 * the pre-shared key both ways, then messages each sealed with an HMAC of a
 * per-connection key and numbered, so that a message altered, replayed or
 * reordered is refused.
 *
 * Handshake (S: the receiving host, which listens; C: the sending host):
 *   S -> C  hello:   "FOSS" | version (1) | 3 zero bytes | S's nonce (32)
 *   C -> S  auth:    "FOSC" | version (1) | 3 zero bytes | C's nonce (32)
 *                    | HMAC-SHA256(K, "fo-stream client" | nS | nC)
 *   S -> C  proof:   HMAC-SHA256(K, "fo-stream server" | nC | nS)
 * Both nonces are fresh random bytes, so neither answer can be replayed
 * from an earlier connection; a peer without K can produce neither. The
 * connection's key is HMAC-SHA256(K, "fo-stream session" | nS | nC).
 *
 * Then C -> S messages:
 *   header (16):  body length (u32) | sequence (u64, 1, 2, 3 ... per
 *                 connection) | type (u8) | 3 zero bytes
 *   body          (length bytes, at most FO_WIRE_BODY_MAX)
 *   mac (32):     HMAC-SHA256(connection key, header | body)
 * Types: STATE (a pair's newest committed state, or only the peer's newest
 * cycle when its data is empty) and TICK (nothing new: the link is alive).
 * STATE body: name length (u8, 1..FO_NAME_MAX) | name | cycle (u64, the
 * state's application cycle) | newest cycle (u64, the active's newest
 * heartbeat cycle) | data length (u32, 0..FO_ST_SLOT_SIZE) | data.
 * Every integer is little-endian.
 *
 * Pure functions, no I/O: tests/unit/test_state_stream.c checks them alone.
 */
#ifndef FO_STREAM_WIRE_H
#define FO_STREAM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../guest-heartbeat/abi/fo_state.h"
#include "lib/limits.h"

#define FO_WIRE_VERSION     1u
#define FO_WIRE_NONCE       32u
#define FO_WIRE_MAC         32u
#define FO_WIRE_HELLO       (8u + FO_WIRE_NONCE)
#define FO_WIRE_AUTH        (8u + FO_WIRE_NONCE + FO_WIRE_MAC)
#define FO_WIRE_PROOF       FO_WIRE_MAC
#define FO_WIRE_HEADER      16u
#define FO_WIRE_STATE_FIXED (1u + 8u + 8u + 4u)
#define FO_WIRE_BODY_MAX    (FO_WIRE_STATE_FIXED + FO_NAME_MAX + FO_ST_SLOT_SIZE)
#define FO_WIRE_MSG_MAX     (FO_WIRE_HEADER + FO_WIRE_BODY_MAX + FO_WIRE_MAC)
#define FO_WIRE_KEY_MIN     32u   /* bytes of pre-shared key */
#define FO_WIRE_KEY_MAX     256u

enum fo_wire_type {
	FO_WIRE_STATE = 1,
	FO_WIRE_TICK = 2,
};

/* Why a peer or a message was refused (counted per reason, metrics' label). */
enum fo_wire_refusal {
	FO_REFUSED_AUTH = 0,  /* did not prove the key (or sent no handshake of ours) */
	FO_REFUSED_TRUNCATED, /* the connection ended inside a handshake or a message */
	FO_REFUSED_OVERSIZED, /* a message longer than FO_WIRE_BODY_MAX */
	FO_REFUSED_TAMPERED,  /* a message whose MAC does not match */
	FO_REFUSED_REPLAY,    /* a valid MAC with a sequence number not the next one */
	FO_REFUSED_MALFORMED, /* authentic, but its fields do not add up */
	FO_REFUSED_TIMEOUT,   /* silent: no handshake in time, or no message in time */
	FO_REFUSED_FLOOD,     /* more connections at once than the receiver serves */
	FO_REFUSED_N
};

const char *fo_wire_refusal_name(enum fo_wire_refusal r);

struct fo_wire_key {
	unsigned char k[FO_WIRE_KEY_MAX];
	size_t len;
};

/* Fresh random bytes (OpenSSL's RAND_bytes). 0 or -EIO. */
int fo_wire_nonce(unsigned char nonce[FO_WIRE_NONCE]);

void fo_wire_hello(unsigned char out[FO_WIRE_HELLO], const unsigned char ns[FO_WIRE_NONCE]);
/* C: the server's nonce out of its hello; false: not a hello of ours. */
bool fo_wire_hello_parse(const unsigned char in[FO_WIRE_HELLO], unsigned char ns[FO_WIRE_NONCE]);
void fo_wire_auth(unsigned char out[FO_WIRE_AUTH], const struct fo_wire_key *k, const unsigned char ns[FO_WIRE_NONCE],
		  const unsigned char nc[FO_WIRE_NONCE]);
/* S: the client's auth checked against our nonce; fills nc. false: refused
 * (*why: "not a state stream handshake" or "wrong key"). */
bool fo_wire_auth_check(const unsigned char in[FO_WIRE_AUTH], const struct fo_wire_key *k,
			const unsigned char ns[FO_WIRE_NONCE], unsigned char nc[FO_WIRE_NONCE], const char **why);
void fo_wire_proof(unsigned char out[FO_WIRE_PROOF], const struct fo_wire_key *k, const unsigned char ns[FO_WIRE_NONCE],
		   const unsigned char nc[FO_WIRE_NONCE]);
bool fo_wire_proof_check(const unsigned char in[FO_WIRE_PROOF], const struct fo_wire_key *k,
			 const unsigned char ns[FO_WIRE_NONCE], const unsigned char nc[FO_WIRE_NONCE]);
/* The connection's message key (both ends). */
void fo_wire_session(struct fo_wire_key *session, const struct fo_wire_key *k, const unsigned char ns[FO_WIRE_NONCE],
		     const unsigned char nc[FO_WIRE_NONCE]);

/* One STATE message's fields. */
struct fo_wire_state {
	char pair[FO_NAME_MAX + 1];
	uint64_t cycle;         /* the state's application cycle */
	uint64_t newest_cycle;  /* the sending active's newest heartbeat cycle */
	const unsigned char *data; /* into the message buffer */
	uint32_t len;           /* 0: no state, only newest_cycle */
};

/* A whole sealed message into out (FO_WIRE_MSG_MAX bytes); its length. body_len <= FO_WIRE_BODY_MAX. */
size_t fo_wire_seal(unsigned char *out, const struct fo_wire_key *session, uint64_t seq, enum fo_wire_type type,
		    const unsigned char *body, uint32_t body_len);
/* A STATE body into out (FO_WIRE_BODY_MAX bytes); its length. */
uint32_t fo_wire_state_body(unsigned char *out, const char *pair, uint64_t cycle, uint64_t newest_cycle,
			    const void *data, uint32_t len);

/* A header's body length; false: more than FO_WIRE_BODY_MAX (OVERSIZED). */
bool fo_wire_header_len(const unsigned char hdr[FO_WIRE_HEADER], uint32_t *body_len);
/*
 * A whole received message (header, body, mac: FO_WIRE_HEADER + body_len +
 * FO_WIRE_MAC bytes) checked in this order: the MAC (TAMPERED), the
 * sequence == expected (REPLAY), the type and, for STATE, its fields
 * (MALFORMED, *why says which). Returns -1 and *refusal, or its type.
 */
int fo_wire_open(const unsigned char *msg, uint32_t body_len, const struct fo_wire_key *session, uint64_t expected,
		 struct fo_wire_state *st, enum fo_wire_refusal *refusal, const char **why);

#endif
