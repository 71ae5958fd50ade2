/* SPDX-License-Identifier: MIT */
/*
 * state_stream.c - the state stream's two threads and its table of pairs
 * (state_stream.h; the bytes are wire.h's).
 *
 * The receiver serves its listening socket and at most FO_STREAM_PENDING
 * connections still in their handshake plus the one authenticated peer,
 * all non-blocking in one poll(): a connection that stays silent is
 * dropped at its deadline, a connection beyond those is closed at once
 * (`flood`), so no peer can hold the receiver or starve the real one for
 * longer than a handshake. A newly authenticated peer replaces the old
 * one (the sending host restarted).
 *
 * The sender connects, checks that the listener proves the key too (a
 * host impersonating the peer learns nothing and is told nothing), then
 * sends each pair's newest state as it is offered, and a TICK when idle.
 * After any failure it closes and connects again after retry_ms; a new
 * connection sends every pair's newest state again, so that a restarted
 * receiver has it at once.
 */
#include "stream/state_stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"

#define CONNS (FO_STREAM_PENDING + 1u)

/* Arrival numbers grow across every stream of the process: a relay that
 * remembers the last one it wrote never mistakes a restarted stream's
 * first arrival for one it has (the tests restart a stream under a relay). */
static _Atomic uint64_t arrivals;

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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int ms_until(uint64_t deadline_ns)
{
	uint64_t now = mono_ns();

	if (deadline_ns <= now)
		return 0;
	return (int)((deadline_ns - now + 999999u) / 1000000u);
}

int fo_stream_parse_addr(const char *s, struct sockaddr_storage *ss, unsigned *sslen)
{
	char host[64];
	const char *port_s, *h = s;
	size_t hlen;
	char *end;
	unsigned long port;

	if (!s || !*s || strlen(s) >= sizeof(host))
		return -EINVAL;
	if (strspn(s, "0123456789") == strlen(s)) {
		h = "127.0.0.1";
		hlen = strlen(h);
		port_s = s;
	} else if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(rb - h);
		port_s = rb + 2;
	} else {
		const char *colon = strrchr(s, ':');

		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - s);
		port_s = colon + 1;
	}
	if (!*port_s || strspn(port_s, "0123456789") != strlen(port_s) || strlen(port_s) > 5)
		return -EINVAL;
	port = strtoul(port_s, &end, 10);
	if (*end || port > 65535 || hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
		*sslen = sizeof(struct sockaddr_in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		*sslen = sizeof(struct sockaddr_in6);
		return 0;
	}
	return -EINVAL;
}

static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char h[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
		snprintf(buf, len, "%s:%u", h, ntohs(a->sin_port));
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
		snprintf(buf, len, "[%s]:%u", h, ntohs(a->sin6_port));
	}
}

/* ------------------------------------------------------------- the table */

/* With the lock held. */
static struct entry *entry_get(struct fo_stream *s, const char *pair, bool create)
{
	struct entry *free_e = NULL;

	for (size_t i = 0; i < FO_MAX_PAIRS; i++) {
		if (s->e[i].used && strcmp(s->e[i].pair, pair) == 0)
			return &s->e[i];
		if (!s->e[i].used && !free_e)
			free_e = &s->e[i];
	}
	if (!create || !free_e)
		return NULL;
	memset(free_e, 0, sizeof(*free_e));
	free_e->used = true;
	snprintf(free_e->pair, sizeof(free_e->pair), "%s", pair);
	return free_e;
}

static void wake(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		fo_debug("state stream: wake: %s", strerror(errno));
}

void fo_stream_offer(struct fo_stream *s, const char *pair, uint64_t newest_cycle, const void *data, uint32_t len,
		     uint64_t cycle)
{
	struct entry *e;
	bool news = false;

	if (!s || !s->tx_running || len > FO_ST_SLOT_SIZE)
		return;
	pthread_mutex_lock(&s->lock);
	e = entry_get(s, pair, true);
	if (e && data && len) {
		if (!e->out)
			e->out = malloc(FO_ST_SLOT_SIZE);
		if (e->out) {
			memcpy(e->out, data, len);
			e->out_len = len;
			e->out_cycle = cycle;
			e->out_state = news = true;
		}
	}
	if (e && newest_cycle != e->out_newest) {
		e->out_newest = newest_cycle;
		e->out_tick = news = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (news)
		wake(s->wake_fd);
}

bool fo_stream_take(struct fo_stream *s, const char *pair, uint64_t have, void *buf, struct fo_stream_arrival *ret)
{
	struct entry *e;
	bool got = false;

	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	e = entry_get(s, pair, false);
	if (e && e->in && e->arrival > have) {
		memcpy(buf, e->in, e->in_len);
		ret->arrival = e->arrival;
		ret->cycle = e->in_cycle;
		ret->peer_cycle = e->peer_cycle;
		ret->len = e->in_len;
		got = true;
	}
	pthread_mutex_unlock(&s->lock);
	return got;
}

void fo_stream_applied(struct fo_stream *s, const char *pair, uint64_t arrival, uint64_t cycle)
{
	struct entry *e;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	e = entry_get(s, pair, false);
	if (e && (!e->applied || arrival > e->applied_arrival)) {
		e->applied = true;
		e->applied_arrival = arrival;
		e->applied_cycle = cycle;
	}
	pthread_mutex_unlock(&s->lock);
}

void fo_stream_stats(struct fo_stream *s, struct fo_stream_stats *ret)
{
	pthread_mutex_lock(&s->lock);
	*ret = s->st;
	pthread_mutex_unlock(&s->lock);
}

bool fo_stream_pair_stats(struct fo_stream *s, const char *pair, struct fo_stream_pair_stats *ret)
{
	struct entry *e;

	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&s->lock);
	e = entry_get(s, pair, false);
	if (e) {
		ret->received = e->received;
		ret->arrived_cycle = e->in_cycle;
		ret->peer_cycle = e->peer_cycle;
		ret->applied = e->applied;
		ret->applied_cycle = e->applied_cycle;
		if (!e->applied)
			ret->lag_cycles = e->peer_cycle;
		else
			ret->lag_cycles = e->peer_cycle > e->applied_cycle ? e->peer_cycle - e->applied_cycle : 0;
		ret->held = e->received && (!e->applied || e->applied_arrival < e->arrival);
		ret->sent = e->sent;
		ret->sent_cycle = e->sent_cycle;
	}
	pthread_mutex_unlock(&s->lock);
	return e != NULL;
}

unsigned fo_stream_listen_port(struct fo_stream *s)
{
	return s->listen_port;
}

/* ------------------------------------------------------------- the receiver */

static void refuse_count(struct fo_stream *s, enum fo_wire_refusal r)
{
	pthread_mutex_lock(&s->lock);
	s->st.refused[r]++;
	pthread_mutex_unlock(&s->lock);
}

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
	refuse_count(s, r);
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
		addr_text(&ss, who, sizeof(who));
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
			refuse_count(s, FO_REFUSED_FLOOD);
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
	e = entry_get(s, w->pair, true);
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

static void *rx_main(void *arg)
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

/* ------------------------------------------------------------- the sender */

/* Wait for fd to be ready (events) or the deadline; false: stop, timeout or error. */
static bool wait_fd(struct fo_stream *s, int fd, short events, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd pfd[2] = { { .fd = s->stop_fd, .events = POLLIN }, { .fd = fd, .events = events } };
		int t = ms_until(deadline_ns), n;

		if (t == 0)
			return false;
		n = poll(pfd, 2, t);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || pfd[0].revents)
			return false;
		if (pfd[1].revents)
			return true;
	}
}

static bool io_all(struct fo_stream *s, int fd, unsigned char *buf, size_t len, bool out, uint64_t deadline_ns,
		   const char **why)
{
	size_t done = 0;

	while (done < len) {
		ssize_t k = out ? send(fd, buf + done, len - done, MSG_NOSIGNAL) : recv(fd, buf + done, len - done, 0);

		if (k > 0) {
			done += (size_t)k;
			continue;
		}
		if (k == 0) {
			*why = "the peer closed the connection";
			return false;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			*why = strerror(errno);
			return false;
		}
		if (!wait_fd(s, fd, out ? POLLOUT : POLLIN, deadline_ns)) {
			*why = "timed out";
			return false;
		}
	}
	return true;
}

static void tx_fail(struct fo_stream *s, const char *what, const char *why)
{
	char msg[sizeof(s->tx_last_err)];

	snprintf(msg, sizeof(msg), "%s: %s", what, why);
	/* said when it changes: a peer down for an hour is one line, not 3600 */
	if (!atomic_load(&s->stopping) &&
	    (strcmp(msg, s->tx_last_err) != 0 || fo_ratelimit_ok(&s->tx_rl, mono_ns())))
		fo_warn("state stream: to %s: %s; connecting again every %u ms", s->p.peer, msg, s->p.retry_ms);
	snprintf(s->tx_last_err, sizeof(s->tx_last_err), "%s", msg);
	if (s->tx_fd >= 0) {
		close(s->tx_fd);
		s->tx_fd = -1;
	}
	pthread_mutex_lock(&s->lock);
	s->st.peer_out = false;
	pthread_mutex_unlock(&s->lock);
}

static bool tx_connect(struct fo_stream *s)
{
	struct sockaddr_storage ss;
	unsigned sslen;
	unsigned char hello[FO_WIRE_HELLO], auth[FO_WIRE_AUTH], proof[FO_WIRE_PROOF];
	unsigned char ns[FO_WIRE_NONCE], nc[FO_WIRE_NONCE];
	uint64_t deadline = mono_ns() + (uint64_t)s->p.handshake_ms * 1000000u;
	const char *why = NULL;
	int fd, err = 0, one = 1;
	socklen_t el = sizeof(err);

	if (fo_stream_parse_addr(s->p.peer, &ss, &sslen) < 0) {
		tx_fail(s, "connect", "not a numeric ADDRESS:PORT");
		return false;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		tx_fail(s, "socket", strerror(errno));
		return false;
	}
	s->tx_fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&ss, sslen) < 0 && errno != EINPROGRESS) {
		tx_fail(s, "connect", strerror(errno));
		return false;
	}
	if (!wait_fd(s, fd, POLLOUT, deadline)) {
		tx_fail(s, "connect", "timed out");
		return false;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
		tx_fail(s, "connect", strerror(err ? err : errno));
		return false;
	}
	if (!io_all(s, fd, hello, sizeof(hello), false, deadline, &why)) {
		tx_fail(s, "waiting for its challenge", why);
		return false;
	}
	if (!fo_wire_hello_parse(hello, ns)) {
		tx_fail(s, "its challenge", "not a state stream listener (or another version)");
		return false;
	}
	if (fo_wire_nonce(nc) < 0) {
		tx_fail(s, "handshake", "no random bytes for a nonce");
		return false;
	}
	fo_wire_auth(auth, &s->p.key, ns, nc);
	if (!io_all(s, fd, auth, sizeof(auth), true, deadline, &why) ||
	    !io_all(s, fd, proof, sizeof(proof), false, deadline, &why)) {
		/* a listener that does not know our key closes here */
		tx_fail(s, "handshake", why);
		return false;
	}
	if (!fo_wire_proof_check(proof, &s->p.key, ns, nc)) {
		refuse_count(s, FO_REFUSED_AUTH);
		tx_fail(s, "handshake", "the listener did not prove the key (wrong key there, or not our peer)");
		return false;
	}
	fo_wire_session(&s->tx_session, &s->p.key, ns, nc);
	s->tx_seq = 1;
	fo_info("state stream: connected to %s, which proved the key: sending", s->p.peer);
	s->tx_last_err[0] = '\0';
	pthread_mutex_lock(&s->lock);
	s->st.peer_out = true;
	s->st.connected++;
	/* a new connection (a restarted receiver): every pair's newest again */
	for (size_t i = 0; i < FO_MAX_PAIRS; i++)
		if (s->e[i].used && s->e[i].out_len)
			s->e[i].out_state = true;
	pthread_mutex_unlock(&s->lock);
	return true;
}

/* The next pair with something to send, sealed into tx_buf; 0: nothing. */
static size_t tx_next_message(struct fo_stream *s, char *pair, uint64_t *cycle, bool *state)
{
	size_t len = 0;

	pthread_mutex_lock(&s->lock);
	for (size_t k = 0; k < FO_MAX_PAIRS && !len; k++) {
		struct entry *e = &s->e[(s->tx_next + k) % FO_MAX_PAIRS];
		uint32_t body;

		if (!e->used || !(e->out_state || e->out_tick))
			continue;
		*state = e->out_state && e->out_len;
		body = fo_wire_state_body(s->tx_buf + FO_WIRE_HEADER, e->pair, e->out_cycle, e->out_newest, e->out,
					  *state ? e->out_len : 0);
		len = fo_wire_seal(s->tx_buf, &s->tx_session, s->tx_seq, FO_WIRE_STATE, s->tx_buf + FO_WIRE_HEADER,
				   body);
		e->out_state = e->out_tick = false;
		snprintf(pair, FO_NAME_MAX + 1, "%s", e->pair);
		*cycle = e->out_cycle;
		s->tx_next = (size_t)(e - s->e) + 1;
	}
	pthread_mutex_unlock(&s->lock);
	return len;
}

static void tx_sent(struct fo_stream *s, const char *pair, uint64_t cycle)
{
	struct entry *e;

	pthread_mutex_lock(&s->lock);
	e = entry_get(s, pair, false);
	if (e) {
		e->sent++;
		e->sent_cycle = cycle;
	}
	s->st.sent++;
	pthread_mutex_unlock(&s->lock);
}

static void *tx_main(void *arg)
{
	struct fo_stream *s = arg;
	uint64_t retry_at = 0, last_sent = 0, tick_ns = (uint64_t)s->p.idle_ms * 1000000u / 4u;

	for (;;) {
		struct pollfd pfd[3];
		char pair[FO_NAME_MAX + 1];
		const char *why = NULL;
		uint64_t cycle, v, now = mono_ns();
		bool state;
		size_t len;

		if (s->tx_fd < 0) {
			if (now < retry_at) {
				struct pollfd st = { .fd = s->stop_fd, .events = POLLIN };

				if (poll(&st, 1, ms_until(retry_at)) > 0)
					break;
				continue;
			}
			if (!tx_connect(s)) {
				retry_at = mono_ns() + (uint64_t)s->p.retry_ms * 1000000u;
				continue;
			}
			last_sent = 0;
		}
		len = tx_next_message(s, pair, &cycle, &state);
		if (!len && mono_ns() - last_sent >= tick_ns) {
			len = fo_wire_seal(s->tx_buf, &s->tx_session, s->tx_seq, FO_WIRE_TICK, NULL, 0);
			state = false;
			pair[0] = '\0';
		}
		if (len) {
			if (!io_all(s, s->tx_fd, s->tx_buf, len, true, mono_ns() + (uint64_t)s->p.idle_ms * 1000000u,
				    &why)) {
				tx_fail(s, "sending", why);
				retry_at = mono_ns() + (uint64_t)s->p.retry_ms * 1000000u;
				continue;
			}
			s->tx_seq++;
			last_sent = mono_ns();
			if (state)
				tx_sent(s, pair, cycle);
			continue;
		}
		pfd[0] = (struct pollfd){ .fd = s->stop_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = s->wake_fd, .events = POLLIN };
		pfd[2] = (struct pollfd){ .fd = s->tx_fd, .events = POLLIN }; /* the receiver never writes: EOF */
		poll(pfd, 3, ms_until(last_sent + tick_ns));
		if (pfd[0].revents)
			break;
		if (pfd[1].revents)
			while (read(s->wake_fd, &v, sizeof(v)) > 0)
				;
		if (pfd[2].revents) {
			unsigned char junk[64];
			ssize_t k = recv(s->tx_fd, junk, sizeof(junk), 0);

			if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
				tx_fail(s, "the connection", k == 0 ? "closed by the peer" : strerror(errno));
				retry_at = mono_ns() + (uint64_t)s->p.retry_ms * 1000000u;
			} else if (k > 0) {
				tx_fail(s, "the connection", "the peer sent bytes a receiver never sends");
				retry_at = mono_ns() + (uint64_t)s->p.retry_ms * 1000000u;
			}
		}
	}
	if (s->tx_fd >= 0)
		close(s->tx_fd);
	s->tx_fd = -1;
	return NULL;
}

/* ------------------------------------------------------------- lifecycle */

static int plain_start(pthread_t *t, void *(*fn)(void *), void *arg, int signo)
{
	(void)signo;
	return -pthread_create(t, NULL, fn, arg);
}

static int listen_on(struct fo_stream *s, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	unsigned sslen;
	socklen_t gl;
	int one = 1, fd;

	if (fo_stream_parse_addr(s->p.listen, &ss, &sslen) < 0) {
		snprintf(err, errlen, "state stream: listen %s: not a numeric ADDRESS:PORT", s->p.listen);
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0 || listen(fd, 16) < 0)
		goto fail;
	gl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &gl) == 0)
		s->listen_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
							       : ((struct sockaddr_in6 *)&ss)->sin6_port);
	s->listen_fd = fd;
	return 0;
fail:
	snprintf(err, errlen, "state stream: listen %s: %s", s->p.listen, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -errno;
}

int fo_stream_new(const struct fo_stream_params *p,
		  int (*start_thread)(pthread_t *t, void *(*fn)(void *), void *arg, int signo),
		  struct fo_stream **ret, char *err, size_t errlen)
{
	struct fo_stream *s;
	pthread_mutexattr_t ma;
	int rc;

	if (p->key.len < FO_WIRE_KEY_MIN || p->key.len > FO_WIRE_KEY_MAX) {
		snprintf(err, errlen, "state stream: the key is %zu bytes, %u to %u needed", p->key.len,
			 FO_WIRE_KEY_MIN, FO_WIRE_KEY_MAX);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = *p;
	if (!s->p.handshake_ms)
		s->p.handshake_ms = FO_STREAM_HANDSHAKE_MS;
	if (!s->p.idle_ms)
		s->p.idle_ms = FO_STREAM_IDLE_MS;
	if (!s->p.retry_ms)
		s->p.retry_ms = FO_STREAM_RETRY_MS;
	s->listen_fd = s->tx_fd = -1;
	s->rx_rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(10000, 10);
	s->tx_rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(60000, 1);
	for (unsigned i = 0; i < CONNS; i++)
		s->c[i].fd = -1;
	/* the relay thread takes it briefly; inherit, as hv/state_relay.c does */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->stop_fd < 0 || s->wake_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "state stream: eventfd: %s", strerror(errno));
		goto fail;
	}
	if (!start_thread)
		start_thread = plain_start;
	if (s->p.listen[0]) {
		for (unsigned i = 0; i < CONNS; i++) {
			s->c[i].buf = malloc(FO_WIRE_MSG_MAX);
			if (!s->c[i].buf) {
				rc = -ENOMEM;
				snprintf(err, errlen, "state stream: out of memory");
				goto fail;
			}
		}
		rc = listen_on(s, err, errlen);
		if (rc < 0)
			goto fail;
		rc = start_thread(&s->rx_thread, rx_main, s, 0);
		if (rc < 0) {
			snprintf(err, errlen, "state stream: receiver thread: %s", strerror(-rc));
			goto fail;
		}
		s->rx_running = s->st.receiving = true;
	}
	if (s->p.peer[0]) {
		s->tx_buf = malloc(FO_WIRE_MSG_MAX);
		if (!s->tx_buf) {
			rc = -ENOMEM;
			snprintf(err, errlen, "state stream: out of memory");
			goto fail;
		}
		s->tx_running = s->st.sending = true; /* before the thread: offers are taken from now */
		rc = start_thread(&s->tx_thread, tx_main, s, 0);
		if (rc < 0) {
			s->tx_running = s->st.sending = false;
			snprintf(err, errlen, "state stream: sender thread: %s", strerror(-rc));
			goto fail;
		}
	}
	*ret = s;
	return 0;
fail:
	fo_stream_free(s);
	return rc;
}

void fo_stream_free(struct fo_stream *s)
{
	if (!s)
		return;
	atomic_store(&s->stopping, true);
	if (s->stop_fd >= 0)
		wake(s->stop_fd);
	if (s->rx_running)
		pthread_join(s->rx_thread, NULL);
	if (s->tx_running)
		pthread_join(s->tx_thread, NULL);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	for (unsigned i = 0; i < CONNS; i++)
		free(s->c[i].buf);
	for (size_t i = 0; i < FO_MAX_PAIRS; i++) {
		free(s->e[i].out);
		free(s->e[i].in);
	}
	free(s->tx_buf);
	pthread_mutex_destroy(&s->lock);
	/* the key's copies */
	memset(&s->p.key, 0, sizeof(s->p.key));
	memset(&s->tx_session, 0, sizeof(s->tx_session));
	free(s);
}
