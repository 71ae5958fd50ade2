/* SPDX-License-Identifier: MIT */
/*
 * state_stream.h - the state stream across hosts (daemon.state_stream):
 * what libfoguest commits on the host that serves a pair travels over TCP
 * to the other host's failoverd, which keeps the newest that arrived and
 * hands it to its state relay for the pair's standby (hv/state_relay.h,
 * fo_state_relay_set_stream), so that a takeover there (the cluster agent
 * promotes that host) restores it.
 *
 * Two threads, SCHED_OTHER, never the loop's: a sender (connects to
 * `peer`, proves the key, sends each pair's newest state) and a receiver
 * (listens on `listen`, refuses any peer that cannot prove the key and any
 * message altered, replayed, truncated or oversized, wire.h). The state
 * relay's thread only copies into and out of this object's tables under
 * its lock; nothing here ever waits on the network while holding it.
 *
 * Both hosts run both ends: which end carries a pair follows where the
 * pair is served (its roles, not the configuration), so that after a
 * takeover the stream runs the other way without a change of config.
 */
#ifndef FO_STREAM_STATE_STREAM_H
#define FO_STREAM_STATE_STREAM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/limits.h"
#include "stream/wire.h"

#define FO_STREAM_HANDSHAKE_MS 2000u /* a connection proves the key within this */
#define FO_STREAM_IDLE_MS      5000u /* an authenticated peer silent this long is dropped */
#define FO_STREAM_PENDING      4u    /* handshakes served at once */
#define FO_STREAM_RETRY_MS     1000u /* the sender's wait before connecting again */

struct fo_stream_params {
	char listen[64];         /* "ADDRESS:PORT" to receive on; "" = receive nothing */
	char peer[64];           /* "ADDRESS:PORT" to send to; "" = send nothing */
	struct fo_wire_key key;  /* the pre-shared key */
	unsigned handshake_ms;   /* 0: FO_STREAM_HANDSHAKE_MS */
	unsigned idle_ms;        /* 0: FO_STREAM_IDLE_MS; the sender ticks every idle_ms / 4 */
	unsigned retry_ms;       /* 0: FO_STREAM_RETRY_MS */
};

/* One pair as the stream knows it (both directions). */
struct fo_stream_pair_stats {
	/* receiving */
	uint64_t received;       /* states that arrived */
	uint64_t arrived_cycle;  /* the cycle of the newest one */
	uint64_t peer_cycle;     /* the sending active's newest heartbeat cycle */
	bool applied;            /* a state was written into a standby's state-in */
	uint64_t applied_cycle;  /* the cycle of the newest one written */
	uint64_t lag_cycles;     /* peer_cycle - applied_cycle (0 if not positive; peer_cycle if none applied) */
	bool held;               /* the newest arrival waits for a standby to write it into */
	/* sending */
	uint64_t sent;           /* states sent */
	uint64_t sent_cycle;     /* the cycle of the newest one sent */
};

struct fo_stream_stats {
	bool receiving, sending;  /* listen / peer configured and their threads running */
	bool peer_in;             /* an authenticated peer is connected to our listener */
	bool peer_out;            /* we are connected to the peer and it proved the key */
	uint64_t accepted;        /* incoming connections that proved the key */
	uint64_t connected;       /* outgoing connections that proved the key */
	uint64_t received, sent;  /* STATE messages */
	uint64_t refused[FO_REFUSED_N]; /* what the receiver (and the sender, for `auth`) refused */
};

struct fo_stream;

/* Starts the threads (start_thread: SCHED_OTHER, signals blocked; NULL:
 * pthread_create). Binds `listen` now: an address in use is an error here,
 * with err saying so. 0 or -errno. */
int fo_stream_new(const struct fo_stream_params *p,
		  int (*start_thread)(pthread_t *t, void *(*fn)(void *), void *arg, int signo),
		  struct fo_stream **ret, char *err, size_t errlen);
/* Stops both threads (bounded: they poll a stop descriptor), closes, frees. */
void fo_stream_free(struct fo_stream *s);
/* The port the receiver listens on (the tests listen on port 0). */
unsigned fo_stream_listen_port(struct fo_stream *s);

/* Sending, from the state relay's thread: the pair's newest committed
 * state (data NULL: none new) and its active's newest cycle. Copies and
 * returns; the sender thread sends the newest of each pair, skipping
 * states it had no time to send. */
void fo_stream_offer(struct fo_stream *s, const char *pair, uint64_t newest_cycle, const void *data, uint32_t len,
		     uint64_t cycle);

/* Receiving, from the state relay's thread: the newest state that arrived
 * for the pair if its arrival number is above `have` (buf: FO_ST_SLOT_SIZE
 * bytes). false: nothing newer. */
struct fo_stream_arrival {
	uint64_t arrival;      /* grows with each arrival (of any pair, any stream of the process) */
	uint64_t cycle;
	uint64_t peer_cycle;
	uint32_t len;
};
bool fo_stream_take(struct fo_stream *s, const char *pair, uint64_t have, void *buf, struct fo_stream_arrival *ret);
/* The arrival `arrival` (cycle `cycle`) is in a standby's state-in now. */
void fo_stream_applied(struct fo_stream *s, const char *pair, uint64_t arrival, uint64_t cycle);

void fo_stream_stats(struct fo_stream *s, struct fo_stream_stats *ret);
/* false: the stream has never seen this pair. */
bool fo_stream_pair_stats(struct fo_stream *s, const char *pair, struct fo_stream_pair_stats *ret);

/* "ADDRESS:PORT", "[IPv6]:PORT" or "PORT" (loopback), numeric only; port 0
 * is any port (the tests listen there; the config refuses it). 0 or -EINVAL. */
struct sockaddr_storage;
int fo_stream_parse_addr(const char *s, struct sockaddr_storage *ss, unsigned *sslen);

#endif
