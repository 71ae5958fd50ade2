/* SPDX-License-Identifier: MIT */
/*
 * state_stream.c - the state stream's table of pairs and its lifecycle
 * (state_stream.h; the bytes are wire.h's). Its two threads are
 * state_stream_rx.c (the receiver) and state_stream_tx.c (the sender).
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
#include "stream/state_stream_internal.h"

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

void fo_stream_addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
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
struct entry *fo_stream_entry_get(struct fo_stream *s, const char *pair, bool create)
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

void fo_stream_wake(int fd)
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
	e = fo_stream_entry_get(s, pair, true);
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
		fo_stream_wake(s->wake_fd);
}

bool fo_stream_take(struct fo_stream *s, const char *pair, uint64_t have, void *buf, struct fo_stream_arrival *ret)
{
	struct entry *e;
	bool got = false;

	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	e = fo_stream_entry_get(s, pair, false);
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
	e = fo_stream_entry_get(s, pair, false);
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
	e = fo_stream_entry_get(s, pair, false);
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

/* A refusal, counted (either thread). */
void fo_stream_refuse_count(struct fo_stream *s, enum fo_wire_refusal r)
{
	pthread_mutex_lock(&s->lock);
	s->st.refused[r]++;
	pthread_mutex_unlock(&s->lock);
}

/* ------------------------------------------------------------- lifecycle */

/* A small stack, as the backend's helpers have (hv/xen/threads.c): under
 * mlockall(MCL_FUTURE) glibc's default 8 MiB would be resident and locked. */
static int plain_start(pthread_t *t, void *(*fn)(void *), void *arg, int signo)
{
	pthread_attr_t attr;
	int r;

	(void)signo;
	r = pthread_attr_init(&attr);
	if (r)
		return -r;
	r = pthread_attr_setstacksize(&attr, 512u * 1024u);
	if (!r)
		r = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -r;
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
		rc = start_thread(&s->rx_thread, fo_stream_rx_main, s, 0);
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
		rc = start_thread(&s->tx_thread, fo_stream_tx_main, s, 0);
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
		fo_stream_wake(s->stop_fd);
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
