/* SPDX-License-Identifier: MIT */
/*
 * state_stream_tx.c - the state stream's sender thread: connect, check
 * that the listener proves the key, send each pair's newest state as it is
 * offered and a TICK when idle; after a failure, connect again after
 * retry_ms and send every pair's newest state again.
 */
#include "stream/state_stream_internal.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
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
		fo_stream_refuse_count(s, FO_REFUSED_AUTH);
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
	e = fo_stream_entry_get(s, pair, false);
	if (e) {
		e->sent++;
		e->sent_cycle = cycle;
	}
	s->st.sent++;
	pthread_mutex_unlock(&s->lock);
}

void *fo_stream_tx_main(void *arg)
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
