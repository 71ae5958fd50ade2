/* SPDX-License-Identifier: MIT */
/*
 * state_stream_internal.h - what the state stream's files share: the
 * stream, its table of pairs and its connections. The interface is
 * state_stream.h; state_stream.c has the table and the lifecycle,
 * state_stream_rx.c the receiver thread, state_stream_tx.c the sender's.
 */
#ifndef FO_STATE_STREAM_INTERNAL_H
#define FO_STATE_STREAM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "lib/log.h"
#include "stream/state_stream.h"

#define CONNS (FO_STREAM_PENDING + 1u)

struct entry {
	bool used;
	char pair[FO_NAME_MAX + 1];
	/* sending */
	unsigned char *out;          /* FO_ST_SLOT_SIZE, on first use */
	uint32_t out_len;
	uint64_t out_cycle, out_newest;
	bool out_state, out_tick;    /* to be sent: the state / only the newest cycle */
	uint64_t sent, sent_cycle;
	/* receiving */
	unsigned char *in;           /* FO_ST_SLOT_SIZE, on first use */
	uint32_t in_len;
	uint64_t in_cycle, arrival, peer_cycle, received;
	bool applied;
	uint64_t applied_arrival, applied_cycle;
};

enum conn_state { C_FREE = 0, C_AUTH, C_HDR, C_MSG };

struct conn {
	enum conn_state st;
	int fd;
	char who[64];
	uint64_t deadline_ns;
	unsigned char ns[FO_WIRE_NONCE];
	struct fo_wire_key session;
	uint64_t expect;
	uint32_t need, have, body_len;
	unsigned char *buf;          /* FO_WIRE_MSG_MAX */
};

struct fo_stream {
	struct fo_stream_params p;
	int stop_fd, wake_fd, listen_fd;
	unsigned listen_port;
	pthread_t rx_thread, tx_thread;
	bool rx_running, tx_running;
	atomic_bool stopping;        /* fo_stream_free: a connect cut short is no failure to report */

	pthread_mutex_t lock;        /* the table and the stats */
	struct entry e[FO_MAX_PAIRS];
	struct fo_stream_stats st;

	/* receiver thread only */
	struct conn c[CONNS];
	struct fo_wire_state ws;
	struct fo_ratelimit rx_rl;
	/* sender thread only */
	int tx_fd;
	uint64_t tx_seq;
	struct fo_wire_key tx_session;
	unsigned char *tx_buf;       /* FO_WIRE_MSG_MAX */
	size_t tx_next;              /* round robin over the table */
	struct fo_ratelimit tx_rl;
	char tx_last_err[160];
};

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int ms_until(uint64_t deadline_ns)
{
	uint64_t now = mono_ns();

	if (deadline_ns <= now)
		return 0;
	return (int)((deadline_ns - now + 999999u) / 1000000u);
}

/* state_stream.c: the table, shared by both threads (under s->lock) */
struct entry *fo_stream_entry_get(struct fo_stream *s, const char *pair, bool create);
void fo_stream_wake(int fd);
void fo_stream_addr_text(const struct sockaddr_storage *ss, char *buf, size_t len);
void fo_stream_refuse_count(struct fo_stream *s, enum fo_wire_refusal r);

/* the threads */
void *fo_stream_rx_main(void *arg);
void *fo_stream_tx_main(void *arg);

#endif
