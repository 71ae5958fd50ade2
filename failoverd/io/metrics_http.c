/* SPDX-License-Identifier: MIT */
/*
 * metrics_http.c - the /metrics HTTP listener, a thread of its own
 * (SCHED_OTHER, never the loop's class).
 *
 * The HTTP side: one listening socket, at most FO_METRICS_MAX_CLIENTS
 * connections at once, each given FO_METRICS_TIMEOUT_MS in total to send a
 * request head of at most FO_METRICS_REQUEST_MAX bytes and read the reply;
 * one request per connection (Connection: close). Only GET /metrics (a
 * query string is ignored): another path is 404, another method 405.
 *
 * Slots are not held for long against newcomers: with all of them taken,
 * a new connection evicts the oldest client connected at least
 * FO_METRICS_EVICT_AFTER_MS ago, and is answered 503 only when every
 * client is younger. A legitimate scrape asks and reads within
 * milliseconds; four clients that connect and say nothing deny scrapes
 * for FO_METRICS_EVICT_AFTER_MS at most, not FO_METRICS_TIMEOUT_MS (and
 * not forever, by reconnecting whenever a slot frees).
 *
 * Out of file descriptors, accept4() fails and leaves the connection
 * pending: io/accept.h sheds it with a spare descriptor (503) instead of
 * polling a readable listener in a loop.
 */
#include "io/metrics_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/config/config.h"
#include "io/accept.h"

int fo_metrics_http_parse(const char *req, size_t len, int *status)
{
	const char *end = NULL, *sp1, *sp2, *eol;
	size_t mlen, tlen;

	for (size_t i = 0; i + 1 < len && !end; i++) {
		if (req[i] == '\n' && req[i + 1] == '\n')
			end = req + i;
		else if (i + 3 < len && memcmp(req + i, "\r\n\r\n", 4) == 0)
			end = req + i;
	}
	if (!end) {
		if (len >= FO_METRICS_REQUEST_MAX) {
			*status = 431;
			return 1;
		}
		if (memchr(req, '\0', len)) {
			*status = 400;
			return 1;
		}
		return 0;
	}
	/* The head ends in a blank line, so the request line has its '\n'
	 * (end points at the '\n' or '\r' that ends it, or before). */
	eol = memchr(req, '\n', len);
	sp1 = memchr(req, ' ', (size_t)(eol - req));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || (size_t)(eol - sp2) < 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		*status = 400;
		return 1;
	}
	mlen = (size_t)(sp1 - req);
	tlen = (size_t)(sp2 - sp1 - 1);
	for (size_t i = 0; i < mlen; i++)
		if (req[i] < 'A' || req[i] > 'Z') {
			*status = 400;
			return 1;
		}
	if (mlen != 3 || memcmp(req, "GET", 3) != 0)
		*status = 405;
	else if ((tlen == 8 && memcmp(sp1 + 1, "/metrics", 8) == 0) ||
		 (tlen > 8 && memcmp(sp1 + 1, "/metrics?", 9) == 0))
		*status = 200;
	else
		*status = 404;
	return 1;
}

struct client {
	int fd;           /* -1 = free */
	uint64_t since_ms, deadline_ms; /* connected; closed if not done by then */
	char in[FO_METRICS_REQUEST_MAX];
	size_t in_len;
	char *out;        /* response being written */
	size_t out_len, out_off;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void client_reset(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->in_len = c->out_len = c->out_off = 0;
}

static void respond(struct fo_metrics *m, struct client *c, int status)
{
	static const struct {
		int code;
		const char *reason, *body;
	} texts[] = {
		{ 400, "Bad Request", "bad request\n" },
		{ 404, "Not Found", "not found: the metrics are at /metrics\n" },
		{ 405, "Method Not Allowed", "method not allowed: GET /metrics\n" },
		{ 431, "Request Header Fields Too Large", "request too large\n" },
		{ 503, "Service Unavailable", "busy, try again\n" },
	};
	char *body = NULL, *resp = NULL;
	size_t body_len = 0, resp_len = 0;
	const char *reason = "OK", *ctype = "text/plain; version=0.0.4; charset=utf-8";
	FILE *f;

	if (status == 200) {
		f = open_memstream(&body, &body_len);
		if (!f || fo_metrics_render(m, f) < 0)
			status = 503;
		if (f)
			fclose(f);
	}
	if (status != 200) {
		free(body);
		body = NULL;
		ctype = "text/plain; charset=utf-8";
		for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
			if (texts[i].code == status) {
				reason = texts[i].reason;
				body = strdup(texts[i].body);
			}
		body_len = body ? strlen(body) : 0;
	}
	f = open_memstream(&resp, &resp_len);
	if (f) {
		fprintf(f, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
			status, reason, ctype, body_len, status == 405 ? "Allow: GET\r\n" : "");
		if (body)
			fwrite(body, 1, body_len, f);
		fclose(f);
	}
	free(body);
	c->out = resp;
	c->out_len = resp ? resp_len : 0;
	c->out_off = 0;
	if (!resp)
		client_reset(c);
}

static void client_io(struct fo_metrics *m, struct client *c, short revents)
{
	if (c->out) {
		while (c->out_off < c->out_len) {
			ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
					return;
				break;
			}
			c->out_off += (size_t)n;
		}
		/* Done (or the client went away): one request per connection. */
		client_reset(c);
		return;
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		int status;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			client_reset(c);
			return;
		}
		if (n < 0)
			return;
		c->in_len += (size_t)n;
		if (fo_metrics_http_parse(c->in, c->in_len, &status)) {
			shutdown(c->fd, SHUT_RD);
			respond(m, c, status);
			if (c->fd >= 0)
				client_io(m, c, 0);
		}
	}
}

static void refuse_out_of_fds(int fd, void *ctx)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 24\r\n"
				   "Connection: close\r\nRetry-After: 1\r\n\r\nout of file descriptors\n";

	(void)ctx;
	(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/* A slot for a connection made at `now`: a free one, or the oldest
 * client's if it connected FO_METRICS_EVICT_AFTER_MS ago or more (it is
 * closed); NULL when every slot is younger. */
static struct client *take_slot(struct client *cl, uint64_t now)
{
	struct client *oldest = NULL;

	for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++) {
		if (cl[i].fd < 0)
			return &cl[i];
		if (!oldest || cl[i].since_ms < oldest->since_ms)
			oldest = &cl[i];
	}
	if (now - oldest->since_ms < FO_METRICS_EVICT_AFTER_MS)
		return NULL;
	client_reset(oldest);
	return oldest;
}

static void accept_one(struct fo_metrics *m, struct client *cl, uint64_t *accept_paused_until)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				   "Connection: close\r\nRetry-After: 1\r\n\r\n";
	int fd, err;
	enum fo_accept_result r = fo_accept(m->listen_fd, &m->spare_fd, refuse_out_of_fds, NULL, &fd, &err);
	uint64_t now = mono_ms();
	struct client *c;

	if (r == FO_ACCEPT_STUCK)
		*accept_paused_until = now + FO_METRICS_ACCEPT_PAUSE_MS;
	if (r != FO_ACCEPTED)
		return;
	c = take_slot(cl, now);
	if (!c) {
		(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		return;
	}
	c->fd = fd;
	c->in_len = 0;
	c->since_ms = now;
	c->deadline_ms = now + FO_METRICS_TIMEOUT_MS;
}

static void *http_thread(void *arg)
{
	struct fo_metrics *m = arg;
	struct client cl[FO_METRICS_MAX_CLIENTS];
	uint64_t accept_paused_until = 0;

	for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++) {
		cl[i].fd = -1;
		cl[i].out = NULL;
	}
	for (;;) {
		struct pollfd pfd[2 + FO_METRICS_MAX_CLIENTS];
		int idx[FO_METRICS_MAX_CLIENTS], np = 2, timeout = -1;
		uint64_t now = mono_ms();

		pfd[0] = (struct pollfd){ .fd = m->wake_fd[0], .events = POLLIN };
		/* A negative fd is ignored by poll(): the listener rests while
		 * accepting is paused. */
		pfd[1] = (struct pollfd){ .fd = now < accept_paused_until ? -1 : m->listen_fd, .events = POLLIN };
		if (now < accept_paused_until)
			timeout = (int)(accept_paused_until - now);
		for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++) {
			idx[i] = -1;
			if (cl[i].fd < 0)
				continue;
			if (now >= cl[i].deadline_ms) { /* too slow to ask or to read */
				client_reset(&cl[i]);
				continue;
			}
			if (timeout < 0 || cl[i].deadline_ms - now < (uint64_t)timeout)
				timeout = (int)(cl[i].deadline_ms - now);
			idx[i] = np;
			pfd[np++] = (struct pollfd){ .fd = cl[i].fd, .events = cl[i].out ? POLLOUT : POLLIN };
		}
		if (poll(pfd, (nfds_t)np, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break; /* stop */
		for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++)
			if (idx[i] >= 0 && pfd[idx[i]].revents)
				client_io(m, &cl[i], pfd[idx[i]].revents);
		if (pfd[1].revents & POLLIN)
			accept_one(m, cl, &accept_paused_until);
	}
	for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++)
		client_reset(&cl[i]);
	return NULL;
}

int fo_metrics_http_start(struct fo_metrics *m, const char *listen_addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	unsigned sslen;
	pthread_attr_t attr;
	struct sched_param sp = { 0 };
	sigset_t all, old;
	int one = 1, r;

	if (fo_config_parse_listen(listen_addr, &ss, &sslen) < 0) {
		snprintf(err, errlen, "%s: not an address:port", listen_addr);
		return -EINVAL;
	}
	m->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->listen_fd < 0 || setsockopt(m->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(m->listen_fd, (struct sockaddr *)&ss, sslen) < 0 || listen(m->listen_fd, 8) < 0 ||
	    pipe2(m->wake_fd, O_CLOEXEC) < 0 || (m->spare_fd = fo_accept_spare_open()) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", listen_addr, strerror(errno));
		goto fail;
	}
	/* Explicitly SCHED_OTHER with a small stack (mlockall locks all of it):
	 * never the loop's real-time class, whatever the creator runs at.
	 * Every signal blocked: they belong to the loop's signalfd. */
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &sp);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&m->thread, &attr, http_thread, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		snprintf(err, errlen, "%s: thread: %s", listen_addr, strerror(-r));
		goto fail;
	}
	pthread_setname_np(m->thread, "fo-metrics");
	m->started = true;
	return 0;
fail:
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	if (m->spare_fd >= 0)
		close(m->spare_fd);
	m->listen_fd = m->spare_fd = -1;
	for (int i = 0; i < 2; i++) {
		if (m->wake_fd[i] >= 0)
			close(m->wake_fd[i]);
		m->wake_fd[i] = -1;
	}
	return r;
}

void fo_metrics_http_stop(struct fo_metrics *m)
{
	if (!m)
		return;
	if (m->started) {
		(void)!write(m->wake_fd[1], "x", 1);
		pthread_join(m->thread, NULL);
		m->started = false;
	}
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	if (m->spare_fd >= 0)
		close(m->spare_fd);
	for (int i = 0; i < 2; i++)
		if (m->wake_fd[i] >= 0)
			close(m->wake_fd[i]);
	m->listen_fd = m->wake_fd[0] = m->wake_fd[1] = m->spare_fd = -1;
}
