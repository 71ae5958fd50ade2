/* SPDX-License-Identifier: MIT */
/*
 * state_stream_rx.c - the state stream's receiver thread: its listening
 * socket, the connections in their handshake and the one authenticated
 * peer, in one poll() (state_stream.c says how a flood is held off); each
 * state it receives goes into the table.
 */
#include "stream/state_stream_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/log.h"

/* Arrival numbers grow across every stream of the process: a relay that
 * remembers the last one it wrote never mistakes a restarted stream's
 * first arrival for one it has (the tests restart a stream under a relay). */
static _Atomic uint64_t arrivals;

static void conn_close(struct fo_stream *s, struct conn *c)
{
	if (c->st == C_HDR || c->st == C_MSG) {
		pthread_mutex_lock(&s->lock);
		s->st.peer_in = false;
		pthread_mutex_unlock(&s->lock);
	}
	close(c->fd);
	c->fd = -1;
	c->st = C_FREE;
}

/* Close c for a reason, said once per connection (rate-limited: a flood
 * of bad peers must not flood the log). */
static void conn_refuse(struct fo_stream *s, struct conn *c, enum fo_wire_refusal r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void conn_refuse(struct fo_stream *s, struct conn *c, enum fo_wire_refusal r, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fo_stream_refuse_count(s, r);
	if (fo_ratelimit_ok(&s->rx_rl, mono_ns()))
		fo_warn("state stream: refused %s (%s): %s; connection closed", c->who, fo_wire_refusal_name(r), why);
	conn_close(s, c);
}

static void accept_all(struct fo_stream *s)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		unsigned char hello[FO_WIRE_HELLO];
		struct conn *c = NULL;
		char who[64];
		int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    fo_ratelimit_ok(&s->rx_rl, mono_ns()))
				fo_warn("state stream: accept: %s", strerror(errno));
			return;
		}
		fo_stream_addr_text(&ss, who, sizeof(who));
		/* FO_STREAM_PENDING handshakes at most, beside the authenticated
		 * peer: then a slot is always free */
		unsigned pending = 0;

		for (unsigned i = 0; i < CONNS; i++) {
			if (s->c[i].st == C_AUTH)
				pending++;
			if (s->c[i].st == C_FREE && !c)
				c = &s->c[i];
		}
		if (pending >= FO_STREAM_PENDING)
			c = NULL;
		if (!c) {
			fo_stream_refuse_count(s, FO_REFUSED_FLOOD);
			if (fo_ratelimit_ok(&s->rx_rl, mono_ns()))
				fo_warn("state stream: refused %s (flood): %u handshakes already under way; "
					"connection closed", who, FO_STREAM_PENDING);
			close(fd);
			continue;
		}
		memset(c->ns, 0, sizeof(c->ns));
		c->fd = fd;
		snprintf(c->who, sizeof(c->who), "%s", who);
		if (fo_wire_nonce(c->ns) < 0) {
			fo_err("state stream: no random bytes for a nonce; connection from %s closed", who);
			close(fd);
			continue;
		}
		fo_wire_hello(hello, c->ns);
		/* a fresh socket's send buffer holds the 40 bytes */
		if (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello)) {
			fo_info("state stream: %s: could not send the challenge; connection closed", who);
			close(fd);
			continue;
		}
		c->st = C_AUTH;
		c->need = FO_WIRE_AUTH;
		c->have = 0;
		c->deadline_ns = mono_ns() + (uint64_t)s->p.handshake_ms * 1000000u;
	}
}

static void got_state(struct fo_stream *s, struct conn *c, const struct fo_wire_state *w)
{
	struct entry *e;
	bool first = false;

	pthread_mutex_lock(&s->lock);
	e = fo_stream_entry_get(s, w->pair, true);
	if (e) {
		e->peer_cycle = w->newest_cycle > w->cycle || !w->len ? w->newest_cycle : w->cycle;
		if (w->len) {
			if (!e->in)
				e->in = malloc(FO_ST_SLOT_SIZE);
			if (e->in) {
				memcpy(e->in, w->data, w->len);
				e->in_len = w->len;
				e->in_cycle = w->cycle;
				e->arrival = ++arrivals;
				first = e->received++ == 0;
				s->st.received++;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (!e && fo_ratelimit_ok(&s->rx_rl, mono_ns()))
		fo_warn("state stream: %s: pair %s dropped: no room for another pair (%d)", c->who, w->pair,
			FO_MAX_PAIRS);
	if (first)
		fo_info("state stream: pair %s: first state from %s (cycle %" PRIu64 ", %" PRIu32 " bytes)", w->pair,
			c->who, w->cycle, w->len);
}

/* A complete unit of c's input is in c->buf. */
static void conn_step(struct fo_stream *s, struct conn *c)
{
	enum fo_wire_refusal r;
	const char *why = NULL;
	int type;

	switch (c->st) {
	case C_AUTH: {
		unsigned char nc[FO_WIRE_NONCE], proof[FO_WIRE_PROOF];

		if (!fo_wire_auth_check(c->buf, &s->p.key, c->ns, nc, &why)) {
			conn_refuse(s, c, FO_REFUSED_AUTH, "%s", why);
			return;
		}
		fo_wire_proof(proof, &s->p.key, c->ns, nc);
		if (send(c->fd, proof, sizeof(proof), MSG_NOSIGNAL) != (ssize_t)sizeof(proof)) {
			fo_info("state stream: %s: could not send our proof; connection closed", c->who);
			conn_close(s, c);
			return;
		}
		fo_wire_session(&c->session, &s->p.key, c->ns, nc);
		/* the newest authenticated peer is the one: the sending host restarted */
		for (unsigned i = 0; i < CONNS; i++)
			if (&s->c[i] != c && (s->c[i].st == C_HDR || s->c[i].st == C_MSG)) {
				fo_info("state stream: %s replaced by a new connection from %s", s->c[i].who, c->who);
				conn_close(s, &s->c[i]);
			}
		pthread_mutex_lock(&s->lock);
		s->st.peer_in = true;
		s->st.accepted++;
		pthread_mutex_unlock(&s->lock);
		fo_info("state stream: %s proved the key: receiving", c->who);
		c->expect = 1;
		c->st = C_HDR;
		c->need = FO_WIRE_HEADER;
		c->have = 0;
		c->deadline_ns = mono_ns() + (uint64_t)s->p.idle_ms * 1000000u;
		return;
	}
	case C_HDR:
		if (!fo_wire_header_len(c->buf, &c->body_len)) {
			conn_refuse(s, c, FO_REFUSED_OVERSIZED, "a message of %" PRIu32 " bytes, at most %u allowed",
				    c->body_len, (unsigned)FO_WIRE_BODY_MAX);
			return;
		}
		c->st = C_MSG;
		c->need = FO_WIRE_HEADER + c->body_len + FO_WIRE_MAC;
		return; /* `have` stays: the header is the message's start */
	case C_MSG:
		type = fo_wire_open(c->buf, c->body_len, &c->session, c->expect, &s->ws, &r, &why);
		if (type < 0) {
			conn_refuse(s, c, r, "message %" PRIu64 ": %s", c->expect, why);
			return;
		}
		c->expect++;
		if (type == FO_WIRE_STATE)
			got_state(s, c, &s->ws);
		c->st = C_HDR;
		c->need = FO_WIRE_HEADER;
		c->have = 0;
		c->deadline_ns = mono_ns() + (uint64_t)s->p.idle_ms * 1000000u;
		return;
	case C_FREE:
		return;
	}
}

static void conn_read(struct fo_stream *s, struct conn *c)
{
	/* a bounded number of units per wake-up: one peer cannot keep the others waiting */
	for (int n = 0; n < 64 && c->st != C_FREE; n++) {
		ssize_t k = recv(c->fd, c->buf + c->have, c->need - c->have, 0);

		if (k < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			conn_refuse(s, c, FO_REFUSED_TRUNCATED, "%s", strerror(errno));
			return;
		}
		if (k == 0) {
			if (c->st == C_AUTH)
				conn_refuse(s, c, FO_REFUSED_TRUNCATED, "closed after %" PRIu32 " of the %u bytes of "
					    "its handshake", c->have, (unsigned)FO_WIRE_AUTH);
			else if (c->have)
				conn_refuse(s, c, FO_REFUSED_TRUNCATED, "closed inside message %" PRIu64 " after %"
					    PRIu32 " of %" PRIu32 " bytes", c->expect, c->have, c->need);
			else {
				fo_info("state stream: %s closed the stream", c->who);
				conn_close(s, c);
			}
			return;
		}
		c->have += (uint32_t)k;
		if (c->have == c->need)
			conn_step(s, c);
	}
}

void *fo_stream_rx_main(void *arg)
{
	struct fo_stream *s = arg;

	for (;;) {
		struct pollfd pfd[2 + CONNS];
		int timeout = 1000;
		uint64_t now;

		pfd[0] = (struct pollfd){ .fd = s->stop_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
		for (unsigned i = 0; i < CONNS; i++) {
			pfd[2 + i] = (struct pollfd){ .fd = s->c[i].st ? s->c[i].fd : -1, .events = POLLIN };
			if (s->c[i].st) {
				int t = ms_until(s->c[i].deadline_ns);

				if (t < timeout)
					timeout = t;
			}
		}
		poll(pfd, 2 + CONNS, timeout);
		if (pfd[0].revents)
			break;
		for (unsigned i = 0; i < CONNS; i++)
			if (s->c[i].st && pfd[2 + i].revents)
				conn_read(s, &s->c[i]);
		now = mono_ns();
		for (unsigned i = 0; i < CONNS; i++) {
			struct conn *c = &s->c[i];

			if (!c->st || now < c->deadline_ns)
				continue;
			if (c->st == C_AUTH)
				conn_refuse(s, c, FO_REFUSED_TIMEOUT, "no handshake within %u ms (%" PRIu32
					    " of %u bytes)", s->p.handshake_ms, c->have, (unsigned)FO_WIRE_AUTH);
			else
				conn_refuse(s, c, FO_REFUSED_TIMEOUT, "silent for %u ms (%" PRIu32 " bytes of a "
					    "message)", s->p.idle_ms, c->have);
		}
		if (pfd[1].revents)
			accept_all(s);
	}
	for (unsigned i = 0; i < CONNS; i++)
		if (s->c[i].st)
			conn_close(s, &s->c[i]);
	return NULL;
}
