/* SPDX-License-Identifier: MIT */
/*
 * conn.c - failoverctl's side of the control socket: connect, send one
 * request line, read reply lines within a deadline, and the one exchange
 * every command makes (fo_cli_transact).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define REQUEST_MAX           4096
#define REPLY_MAX             (1024 * 1024)

volatile sig_atomic_t fo_cli_stop;

int64_t fo_cli_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the connection ----------------------------------------------------- */

static int conn_open(struct conn *c, const char *path, int64_t deadline)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t left = deadline - fo_cli_now_ms();
	struct timeval tv;

	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	/* A unix connect() blocks while the listener's backlog is full (a
	 * wedged daemon); SO_SNDTIMEO bounds that wait, and our sends too. */
	if (left < 1)
		left = 1;
	tv.tv_sec = left / 1000;
	tv.tv_usec = (left % 1000) * 1000;
	if (setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path) + 1); /* length checked by the caller */
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}

void fo_cli_conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	/* Ready for the next connection: drill --rounds makes many. */
	*c = (struct conn){ .fd = -1 };
}

static int conn_send_line(struct conn *c, const char *line)
{
	size_t len = strlen(line), off = 0;
	char buf[REQUEST_MAX + 1];

	if (len + 1 > REQUEST_MAX)
		return -EMSGSIZE;
	memcpy(buf, line, len);
	buf[len++] = '\n';
	while (off < len) {
		/* MSG_NOSIGNAL: a daemon that went away is an error to report,
		 * not a SIGPIPE that kills us silently. */
		ssize_t r = send(c->fd, buf + off, len - off, MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EINTR && !fo_cli_stop)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		off += (size_t)r;
	}
	return 0;
}

/*
 * Next line from the daemon, NUL-terminated, valid until the next call.
 * deadline < 0 waits forever (events --follow).
 * Returns 0, -ETIMEDOUT, -ECONNRESET (closed between lines), -EPROTO
 * (closed in the middle of a line), -EMSGSIZE (line over 1 MiB) or -errno.
 */
int fo_cli_conn_read_line(struct conn *c, int64_t deadline, char **ret_line)
{
	if (c->consumed) {
		memmove(c->buf, c->buf + c->consumed, c->len - c->consumed);
		c->len -= c->consumed;
		c->consumed = 0;
	}

	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		int timeout = -1, r;
		ssize_t n;

		if (nl) {
			*nl = '\0';
			c->consumed = (size_t)(nl - c->buf) + 1;
			if (nl > c->buf && nl[-1] == '\r')
				nl[-1] = '\0';
			*ret_line = c->buf;
			return 0;
		}
		if (c->len >= REPLY_MAX)
			return -EMSGSIZE;
		if (c->len == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 4096;
			char *nb;

			if (cap > REPLY_MAX + 1)
				cap = REPLY_MAX + 1;
			nb = realloc(c->buf, cap);
			if (!nb)
				return -ENOMEM;
			c->buf = nb;
			c->cap = cap;
		}

		if (deadline >= 0) {
			int64_t left = deadline - fo_cli_now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			timeout = left > INT_MAX ? INT_MAX : (int)left;
		}
		r = poll(&pfd, 1, timeout);
		if (r < 0) {
			if (errno == EINTR && !fo_cli_stop)
				continue;
			return -errno;
		}
		if (r == 0)
			continue; /* the deadline check above decides */

		n = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (n < 0) {
			if ((errno == EINTR && !fo_cli_stop) || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return c->len ? -EPROTO : -ECONNRESET;
		c->len += (size_t)n;
	}
}

const char *fo_cli_read_error_text(int r)
{
	switch (r) {
	case -ETIMEDOUT:
		return "no reply from failoverd in time (see --timeout)";
	case -ECONNRESET:
		return "failoverd closed the connection without replying";
	case -EPROTO:
		return "failoverd closed the connection in the middle of a reply";
	case -EMSGSIZE:
		return "reply from failoverd is longer than 1 MiB";
	default:
		return strerror(-r);
	}
}

/* Parse a reply line into a JSON object. On failure prints why. */
cJSON *fo_cli_parse_reply(const struct options *o, const char *line)
{
	char shown[81];
	cJSON *reply;

	reply = cJSON_ParseWithOpts(line, NULL, true);
	if (!reply || !cJSON_IsObject(reply)) {
		fo_cli_clean_copy(shown, sizeof(shown), line);
		fo_cli_cmd_error(o, "malformed reply from failoverd (%s): \"%s%s\"",
				 reply ? "not a JSON object" : "not valid JSON", shown,
				 strlen(line) >= sizeof(shown) ? "..." : "");
		cJSON_Delete(reply);
		return NULL;
	}
	return reply;
}

/*
 * Connect, send `req`, read and check one reply. Returns an exit code; on
 * EXIT_OK *ret_reply is the parsed {"ok":true,...} and *ret_line the raw
 * text (valid while the connection is open).
 */
int fo_cli_transact(const struct options *o, struct conn *c, const cJSON *req,
		    cJSON **ret_reply, char **ret_line)
{
	int64_t deadline = fo_cli_now_ms() + (int64_t)(o->timeout_s * 1000.0);
	const cJSON *ok;
	char *text = NULL, *line;
	cJSON *reply = NULL;
	int rc, r, send_r;

	text = cJSON_PrintUnformatted(req);
	if (!text) {
		fo_cli_cmd_error(o, "out of memory building the request");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (strlen(text) + 1 > REQUEST_MAX) {
		fo_cli_cmd_error(o, "request too long (%zu bytes, limit %d)", strlen(text),
				 REQUEST_MAX - 1);
		rc = EXIT_USAGE;
		goto out;
	}

	r = conn_open(c, o->socket_path, deadline);
	if (r < 0 && fo_cli_stop) {
		rc = EXIT_CONNECT;
		goto out;
	}
	if (r < 0) {
		const char *hint = "";

		if (r == -ENOENT || r == -ECONNREFUSED)
			hint = " (is failoverd running?)";
		else if (r == -EACCES || r == -EPERM)
			hint = " (run as root or as a member of the daemon's control_group)";
		else if (r == -EAGAIN)
			hint = " (timed out: failoverd is not accepting connections)";
		fprintf(fo_cli_err_out(o), "failoverctl: cannot connect to %s: %s%s\n", o->socket_path,
			strerror(-r), hint);
		rc = EXIT_CONNECT;
		goto out;
	}

	send_r = conn_send_line(c, text);
	if (send_r < 0 && fo_cli_stop) {
		rc = EXIT_DAEMON;
		goto out;
	}
	/* A daemon that refuses the connection (too many clients, out of
	 * descriptors) says why and closes before our request arrives: the
	 * send fails with EPIPE, but its reason is waiting to be read, and is
	 * what the operator needs to see (not "Broken pipe"). */
	if (send_r < 0 && send_r != -EPIPE && send_r != -ECONNRESET) {
		fo_cli_cmd_error(o, "sending the request to failoverd failed: %s",
				 send_r == -ETIMEDOUT ? "timed out" : strerror(-send_r));
		rc = EXIT_DAEMON;
		goto out;
	}

	r = fo_cli_conn_read_line(c, deadline, &line);
	if (r < 0 && fo_cli_stop) {
		rc = EXIT_DAEMON;
		goto out;
	}
	if (r < 0 && send_r < 0) {
		fo_cli_cmd_error(o, "sending the request to failoverd failed: %s", strerror(-send_r));
		rc = EXIT_DAEMON;
		goto out;
	}
	if (r < 0) {
		if (r == -ETIMEDOUT)
			fo_cli_cmd_error(o, "no reply from failoverd within %g s (see --timeout)",
					 o->timeout_s);
		else
			fo_cli_cmd_error(o, "%s", fo_cli_read_error_text(r));
		rc = EXIT_DAEMON;
		goto out;
	}

	reply = fo_cli_parse_reply(o, line);
	if (!reply) {
		rc = EXIT_DAEMON;
		goto out;
	}
	ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
	if (!cJSON_IsBool(ok)) {
		fo_cli_cmd_error(o, "malformed reply from failoverd: no boolean \"ok\"");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (cJSON_IsFalse(ok)) {
		const char *e = fo_cli_jstr(reply, "error");

		fprintf(fo_cli_err_out(o), "failoverctl: %s: ", o->cmd);
		fo_cli_put_clean(fo_cli_err_out(o), e ? e : "failoverd refused the request without saying why");
		fputc('\n', fo_cli_err_out(o));
		rc = EXIT_DAEMON;
		goto out;
	}

	*ret_reply = reply;
	reply = NULL;
	if (ret_line)
		*ret_line = line;
	rc = EXIT_OK;
out:
	cJSON_Delete(reply);
	cJSON_free(text);
	return rc;
}

