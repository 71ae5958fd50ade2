/* SPDX-License-Identifier: MIT */
/*
 * failoverctl - the operator's CLI for failoverd.
 *
 * It talks only to the daemon's control socket: line-delimited JSON, one
 * request line, one reply line ({"ok":true,...} or {"ok":false,"error":..}).
 * `events --follow` keeps the connection and reads {"event":{...}} lines.
 * Nothing here links the daemon's code, so the CLI keeps working against a
 * daemon of another build as long as the protocol holds.
 *
 * Exit codes (scripts and the lab runner rely on them):
 *   0  success; for drill: PASS
 *   1  the daemon refused, replied with something unusable, did not reply
 *      in time, or closed the connection; for drill: FAIL
 *   2  usage error (nothing was sent)
 *   3  cannot connect to the control socket
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define EXIT_OK      0
#define EXIT_DAEMON  1
#define EXIT_USAGE   2
#define EXIT_CONNECT 3

#define DEFAULT_SOCKET        "/run/failoverd/control.sock"
#define DEFAULT_TIMEOUT_S     10.0
/* A drill waits for detection, the switch and the first heartbeat of the
 * new active, which with long heartbeat timeouts can take a while. */
#define DEFAULT_DRILL_TIMEOUT_S 120.0
#define REQUEST_MAX           4096
#define REPLY_MAX             (1024 * 1024)
#define PAIR_NAME_MAX         64
/* DOMID_FIRST_RESERVED: anything at or above is not a real domain. */
#define DOMID_FIRST_RESERVED  0x7FF0

static const char *const fault_kinds[] = {
	"heartbeat-loss", "hang", "crash", "destroy", "unhealthy", "manual", NULL,
};

struct options {
	const char *socket_path;
	double timeout_s;
	bool timeout_set;
	bool json;
	bool follow;
	const char *fault;
	const char *cmd;
	const char *pair;
};

struct conn {
	int fd;
	char *buf;
	size_t len;      /* bytes in buf */
	size_t consumed; /* bytes of buf already handed out as a line */
	size_t cap;
};

/* ---- small helpers ------------------------------------------------------ */

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("failoverctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'failoverctl --help' for more information.\n", stderr);
}

static void cmd_error(const struct options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void cmd_error(const struct options *o, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "failoverctl: %s: ", o->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Strings from the daemon carry domain names and guest-influenced
 * messages: never let them move the terminal's cursor. */
static void put_clean(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
	}
}

static void clean_copy(char *dst, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++) {
		unsigned char c = (unsigned char)s[i];

		dst[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	dst[i] = '\0';
}

static const char *jstr(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* False when absent, null or not a number. */
static bool jnum(const cJSON *obj, const char *key, double *ret)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(it))
		return false;
	*ret = it->valuedouble;
	return true;
}

static bool valid_pair_name(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > PAIR_NAME_MAX)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == len;
}

/* ---- the connection ----------------------------------------------------- */

static int conn_open(struct conn *c, const char *path, int64_t deadline)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t left = deadline - now_ms();
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

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
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
			if (errno == EINTR)
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
static int conn_read_line(struct conn *c, int64_t deadline, char **ret_line)
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
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			timeout = left > INT_MAX ? INT_MAX : (int)left;
		}
		r = poll(&pfd, 1, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			continue; /* the deadline check above decides */

		n = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return c->len ? -EPROTO : -ECONNRESET;
		c->len += (size_t)n;
	}
}

static const char *read_error_text(int r)
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
static cJSON *parse_reply(const struct options *o, const char *line)
{
	char shown[81];
	cJSON *reply;

	reply = cJSON_ParseWithOpts(line, NULL, true);
	if (!reply || !cJSON_IsObject(reply)) {
		clean_copy(shown, sizeof(shown), line);
		cmd_error(o, "malformed reply from failoverd (%s): \"%s%s\"",
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
static int transact(const struct options *o, struct conn *c, const cJSON *req,
		    cJSON **ret_reply, char **ret_line)
{
	int64_t deadline = now_ms() + (int64_t)(o->timeout_s * 1000.0);
	const cJSON *ok;
	char *text = NULL, *line;
	cJSON *reply = NULL;
	int rc, r;

	text = cJSON_PrintUnformatted(req);
	if (!text) {
		cmd_error(o, "out of memory building the request");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (strlen(text) + 1 > REQUEST_MAX) {
		cmd_error(o, "request too long (%zu bytes, limit %d)", strlen(text),
			  REQUEST_MAX - 1);
		rc = EXIT_USAGE;
		goto out;
	}

	r = conn_open(c, o->socket_path, deadline);
	if (r < 0) {
		const char *hint = "";

		if (r == -ENOENT || r == -ECONNREFUSED)
			hint = " (is failoverd running?)";
		else if (r == -EACCES || r == -EPERM)
			hint = " (run as root or as a member of the daemon's control_group)";
		else if (r == -EAGAIN)
			hint = " (timed out: failoverd is not accepting connections)";
		fprintf(stderr, "failoverctl: cannot connect to %s: %s%s\n", o->socket_path,
			strerror(-r), hint);
		rc = EXIT_CONNECT;
		goto out;
	}

	r = conn_send_line(c, text);
	if (r < 0) {
		cmd_error(o, "sending the request to failoverd failed: %s",
			  r == -ETIMEDOUT ? "timed out" : strerror(-r));
		rc = EXIT_DAEMON;
		goto out;
	}

	r = conn_read_line(c, deadline, &line);
	if (r < 0) {
		if (r == -ETIMEDOUT)
			cmd_error(o, "no reply from failoverd within %g s (see --timeout)",
				  o->timeout_s);
		else
			cmd_error(o, "%s", read_error_text(r));
		rc = EXIT_DAEMON;
		goto out;
	}

	reply = parse_reply(o, line);
	if (!reply) {
		rc = EXIT_DAEMON;
		goto out;
	}
	ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
	if (!cJSON_IsBool(ok)) {
		cmd_error(o, "malformed reply from failoverd: no boolean \"ok\"");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (cJSON_IsFalse(ok)) {
		const char *e = jstr(reply, "error");

		fprintf(stderr, "failoverctl: %s: ", o->cmd);
		put_clean(stderr, e ? e : "failoverd refused the request without saying why");
		fputc('\n', stderr);
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

/* ---- raw JSON spans ----------------------------------------------------- */

/*
 * --json promises the daemon's objects as sent. Re-printing through cJSON
 * would turn time_ns (a 64-bit integer) into a double such as
 * 1.7322500001234568e+18, so the raw text is cut out of the reply line
 * instead. Only ever run on a line cJSON has already accepted, so the text
 * is well-formed; the NUL checks are a second line of defence.
 */
static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

static const char *value_end(const char *p)
{
	bool in_string = false;
	int depth = 0;

	if (*p == '"') {
		for (p++; *p && *p != '"'; p++)
			if (*p == '\\' && p[1])
				p++;
		return *p ? p + 1 : p;
	}
	if (*p != '{' && *p != '[') {
		while (*p && !strchr(",]} \t\r\n", *p))
			p++;
		return p;
	}
	for (; *p; p++) {
		if (in_string) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_string = false;
		} else if (*p == '"') {
			in_string = true;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if ((*p == '}' || *p == ']') && --depth == 0) {
			return p + 1;
		}
	}
	return p;
}

/* The raw value of `key` in the top-level object `obj`, or NULL. */
static const char *raw_member(const char *obj, const char *key, const char **ret_end)
{
	size_t klen = strlen(key);
	const char *p = skip_ws(obj);

	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	while (*p == '"') {
		const char *kend = value_end(p), *val;
		bool match = (size_t)(kend - p) == klen + 2 && strncmp(p + 1, key, klen) == 0;

		p = skip_ws(kend);
		if (*p != ':')
			return NULL;
		val = skip_ws(p + 1);
		p = value_end(val);
		if (match) {
			*ret_end = p;
			return val;
		}
		p = skip_ws(p);
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
	return NULL;
}

/* Print `key`'s value (an object), or each element of it (an array), one
 * per line. False if the key was not found in raw form (e.g. escaped). */
static bool print_raw(const char *line, const char *key, bool elements)
{
	const char *end, *val = raw_member(line, key, &end);

	if (!val)
		return false;
	if (!elements) {
		printf("%.*s\n", (int)(end - val), val);
		return true;
	}
	if (*val != '[')
		return false;
	val = skip_ws(val + 1);
	while (*val && *val != ']') {
		end = value_end(val);
		printf("%.*s\n", (int)(end - val), val);
		val = skip_ws(end);
		if (*val == ',')
			val = skip_ws(val + 1);
	}
	return true;
}

/* ---- formatting --------------------------------------------------------- */

static void format_age_s(char *buf, size_t len, double s)
{
	long t = (long)s;

	if (t < 60)
		snprintf(buf, len, "%lds ago", t);
	else if (t < 3600)
		snprintf(buf, len, "%ldm%02lds ago", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, len, "%ldh%02ldm ago", t / 3600, (t % 3600) / 60);
	else
		snprintf(buf, len, "%ldd%02ldh ago", t / 86400, (t % 86400) / 3600);
}

static void format_ms(char *buf, size_t len, double ms)
{
	if (ms < 1000)
		snprintf(buf, len, "%.0fms", ms);
	else if (ms < 60000)
		snprintf(buf, len, "%.1fs", ms / 1000);
	else
		snprintf(buf, len, "%.0fs", ms / 1000);
}

static void format_member(char *buf, size_t len, const cJSON *p, const char *name_key,
			  const char *domid_key)
{
	const char *name = jstr(p, name_key);
	char clean[80];
	double domid;

	clean_copy(clean, sizeof(clean), name ? name : "?");
	if (jnum(p, domid_key, &domid) && domid >= 0 && domid < DOMID_FIRST_RESERVED)
		snprintf(buf, len, "%s (%.0f)", clean, domid);
	else
		snprintf(buf, len, "%s (-)", clean);
}

/* Phases in the order a switchover goes through them. */
static const struct phase {
	const char *key;
	const char *label;
} phases[] = {
	{ "detected", "detected" },
	{ "decided", "decided" },
	{ "pause_issued", "pause issued" },
	{ "pause_done", "pause done" },
	{ "unpause_issued", "unpause issued" },
	{ "unpause_done", "unpause done" },
	{ "first_heartbeat", "first heartbeat" },
};

static void print_time_ns(const cJSON *ev)
{
	double t;

	if (!jnum(ev, "time_ns", &t)) {
		fputs("-", stdout);
		return;
	}
	/* Wall-clock nanoseconds are past 2001; anything smaller is taken to
	 * be a monotonic stamp and shown as seconds. */
	if (t > 1e18) {
		time_t sec = (time_t)(t / 1e9);
		long msec = (long)((t - (double)sec * 1e9) / 1e6);
		struct tm tm;
		char buf[32];

		if (msec < 0)
			msec = 0;
		if (msec > 999)
			msec = 999;
		localtime_r(&sec, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%s.%03ld", buf, msec);
	} else {
		printf("t=%.3fs", t / 1e9);
	}
}

static void print_event_line(const cJSON *ev)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "phases_us");
	const cJSON *within = cJSON_GetObjectItemCaseSensitive(ev, "within_deadline");
	const char *s, *from, *to;
	bool any = false;
	double v;
	size_t i;

	print_time_ns(ev);
	if (jnum(ev, "id", &v))
		printf(" #%.0f", v);
	fputc(' ', stdout);
	put_clean(stdout, (s = jstr(ev, "pair")) ? s : "?");
	fputc(' ', stdout);
	put_clean(stdout, (s = jstr(ev, "kind")) ? s : "?");
	if ((s = jstr(ev, "fault")) && s[0]) {
		fputs(" fault=", stdout);
		put_clean(stdout, s);
	}
	from = jstr(ev, "from");
	to = jstr(ev, "to");
	if ((from && from[0]) || (to && to[0])) {
		fputc(' ', stdout);
		put_clean(stdout, from && from[0] ? from : "?");
		fputs("->", stdout);
		put_clean(stdout, to && to[0] ? to : "?");
	}
	if ((s = jstr(ev, "result"))) {
		fputs(" result=", stdout);
		put_clean(stdout, s);
	}
	if (cJSON_IsBool(within)) {
		if (jnum(ev, "deadline_ms", &v))
			printf(" deadline=%.0fms:%s", v, cJSON_IsTrue(within) ? "met" : "MISSED");
		else
			printf(" deadline:%s", cJSON_IsTrue(within) ? "met" : "MISSED");
	}
	for (i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		if (!jnum(ph, phases[i].key, &v))
			continue;
		if (!any)
			fputs(" phases_us:", stdout);
		any = true;
		printf(" %s=%.0f", phases[i].key, v);
	}
	if ((s = jstr(ev, "message")) && s[0]) {
		fputs(" \"", stdout);
		put_clean(stdout, s);
		fputc('"', stdout);
	}
	fputc('\n', stdout);
}

/* One event as one JSON line, as the daemon sent it. */
static int print_event_json(const struct options *o, const cJSON *ev)
{
	char *text = cJSON_PrintUnformatted(ev);

	if (!text) {
		cmd_error(o, "out of memory printing an event");
		return EXIT_DAEMON;
	}
	puts(text);
	cJSON_free(text);
	return EXIT_OK;
}


/* ---- commands ----------------------------------------------------------- */

enum { COL_PAIR, COL_STATE, COL_ACTIVE, COL_STANDBY, COL_LAST, COL_HB, N_COLS };

struct status_row {
	char cell[N_COLS][96];
	const char *reason;
};

static int cmd_status(const struct options *o, struct conn *c)
{
	static const char *const headers[N_COLS] = {
		"PAIR", "STATE", "ACTIVE", "STANDBY", "LAST-SWITCH", "HB-AGE",
	};
	size_t width[N_COLS], n = 0, i, j;
	struct status_row *rows = NULL;
	cJSON *req = NULL, *reply = NULL;
	const cJSON *pairs, *p;
	bool any_reason = false;
	char *line;
	int rc;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "status")) {
		cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	rc = transact(o, c, req, &reply, &line);
	if (rc != EXIT_OK)
		goto out;

	pairs = cJSON_GetObjectItemCaseSensitive(reply, "pairs");
	if (!cJSON_IsArray(pairs)) {
		cmd_error(o, "malformed reply from failoverd: \"pairs\" is missing or not an array");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (o->json) {
		puts(line);
		goto out;
	}

	rows = calloc((size_t)cJSON_GetArraySize(pairs) + 1, sizeof(*rows));
	if (!rows) {
		cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	cJSON_ArrayForEach(p, pairs) {
		struct status_row *row = &rows[n++];
		const char *s;
		double v;

		clean_copy(row->cell[COL_PAIR], sizeof(row->cell[0]),
			   (s = jstr(p, "name")) ? s : "?");
		clean_copy(row->cell[COL_STATE], sizeof(row->cell[0]),
			   (s = jstr(p, "state")) ? s : "?");
		format_member(row->cell[COL_ACTIVE], sizeof(row->cell[0]), p, "active",
			      "active_domid");
		format_member(row->cell[COL_STANDBY], sizeof(row->cell[0]), p, "standby",
			      "standby_domid");
		if (jnum(p, "last_switch_age_s", &v) && v >= 0)
			format_age_s(row->cell[COL_LAST], sizeof(row->cell[0]), v);
		else
			snprintf(row->cell[COL_LAST], sizeof(row->cell[0]), "never");
		if (jnum(p, "heartbeat_age_ms", &v) && v >= 0)
			format_ms(row->cell[COL_HB], sizeof(row->cell[0]), v);
		else
			snprintf(row->cell[COL_HB], sizeof(row->cell[0]), "-");
		row->reason = jstr(p, "reason");
		if (row->reason && row->reason[0])
			any_reason = true;
	}
	if (n == 0) {
		puts("no pairs configured");
		goto out;
	}

	for (j = 0; j < N_COLS; j++) {
		width[j] = strlen(headers[j]);
		for (i = 0; i < n; i++)
			if (strlen(rows[i].cell[j]) > width[j])
				width[j] = strlen(rows[i].cell[j]);
	}
	for (j = 0; j + 1 < N_COLS; j++)
		printf("%-*s  ", (int)width[j], headers[j]);
	if (any_reason)
		printf("%-*s  REASON\n", (int)width[j], headers[j]);
	else
		printf("%s\n", headers[j]);
	for (i = 0; i < n; i++) {
		bool has_reason = rows[i].reason && rows[i].reason[0];

		for (j = 0; j < N_COLS; j++) {
			/* No padding after the last cell of a line. */
			if (j + 1 == N_COLS && !has_reason)
				printf("%s\n", rows[i].cell[j]);
			else
				printf("%-*s  ", (int)width[j], rows[i].cell[j]);
		}
		if (has_reason) {
			put_clean(stdout, rows[i].reason);
			fputc('\n', stdout);
		}
	}
out:
	free(rows);
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

/* switchover, arm, disarm: {"cmd":X,"pair":P}. */
static int cmd_pair_action(const struct options *o, struct conn *c)
{
	cJSON *req = NULL, *reply = NULL;
	const cJSON *ev;
	const char *msg;
	int rc;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", o->cmd) ||
	    !cJSON_AddStringToObject(req, "pair", o->pair)) {
		cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	rc = transact(o, c, req, &reply, NULL);
	if (rc != EXIT_OK)
		goto out;

	printf("%s %s: ok", o->cmd, o->pair);
	if ((msg = jstr(reply, "message")) && msg[0]) {
		fputs(": ", stdout);
		put_clean(stdout, msg);
	}
	fputc('\n', stdout);
	ev = cJSON_GetObjectItemCaseSensitive(reply, "event");
	if (cJSON_IsObject(ev))
		print_event_line(ev);
out:
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

static int cmd_events(const struct options *o, struct conn *c)
{
	cJSON *req = NULL, *reply = NULL, *later = NULL;
	const cJSON *events, *ev;
	char *line;
	int rc, r;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "events") ||
	    !cJSON_AddBoolToObject(req, "follow", o->follow)) {
		cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	rc = transact(o, c, req, &reply, &line);
	if (rc != EXIT_OK)
		goto out;

	events = cJSON_GetObjectItemCaseSensitive(reply, "events");
	if (!cJSON_IsArray(events)) {
		cmd_error(o, "malformed reply from failoverd: \"events\" is missing or not an array");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (o->json && !print_raw(line, "events", true)) {
		cJSON_ArrayForEach(ev, events) {
			rc = print_event_json(o, ev);
			if (rc != EXIT_OK)
				goto out;
		}
	} else if (!o->json) {
		cJSON_ArrayForEach(ev, events)
			print_event_line(ev);
	}
	fflush(stdout);
	if (!o->follow)
		goto out;

	/* Following: no deadline; the operator ends it with ^C. */
	for (;;) {
		r = conn_read_line(c, -1, &line);
		if (r < 0) {
			cmd_error(o, "%s", r == -ECONNRESET ? "failoverd closed the connection"
				  : read_error_text(r));
			rc = EXIT_DAEMON;
			goto out;
		}
		if (line[0] == '\0')
			continue;
		cJSON_Delete(later);
		later = parse_reply(o, line);
		if (!later) {
			rc = EXIT_DAEMON;
			goto out;
		}
		ev = cJSON_GetObjectItemCaseSensitive(later, "event");
		if (cJSON_IsObject(ev)) {
			if (!o->json)
				print_event_line(ev);
			else if (!print_raw(line, "event", false))
				rc = print_event_json(o, ev);
			if (rc != EXIT_OK)
				goto out;
			fflush(stdout);
		} else if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(later, "ok"))) {
			const char *e = jstr(later, "error");

			fprintf(stderr, "failoverctl: %s: ", o->cmd);
			put_clean(stderr, e ? e : "failoverd ended the stream without saying why");
			fputc('\n', stderr);
			rc = EXIT_DAEMON;
			goto out;
		}
		/* Other lines are from a newer daemon; skipping them keeps an
		 * old CLI usable. */
	}
out:
	cJSON_Delete(later);
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

static int cmd_metrics(const struct options *o, struct conn *c)
{
	cJSON *req = NULL, *reply = NULL;
	const char *text;
	size_t len;
	int rc;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "metrics")) {
		cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	rc = transact(o, c, req, &reply, NULL);
	if (rc != EXIT_OK)
		goto out;
	text = jstr(reply, "text");
	if (!text) {
		cmd_error(o, "malformed reply from failoverd: \"text\" is missing or not a string");
		rc = EXIT_DAEMON;
		goto out;
	}
	len = strlen(text);
	fputs(text, stdout);
	if (len && text[len - 1] != '\n')
		fputc('\n', stdout);
out:
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

/*
 * A drill passes when the switch completed ("result":"ok") and the standby
 * was running within the pair's deadline. The daemon judges the deadline
 * (within_deadline); when it did not, fall back to unpause_done, which is
 * when the standby was allowed to run.
 */
static bool drill_passed(const cJSON *ev, char *why, size_t len)
{
	const cJSON *within = cJSON_GetObjectItemCaseSensitive(ev, "within_deadline");
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "phases_us");
	const char *result = jstr(ev, "result");
	double deadline_ms, unpause_us;

	if (!result || strcmp(result, "ok") != 0) {
		char clean[32];

		clean_copy(clean, sizeof(clean), result ? result : "missing");
		snprintf(why, len, "result is %s, not ok", clean);
		return false;
	}
	if (cJSON_IsBool(within)) {
		snprintf(why, len, "%s", cJSON_IsTrue(within) ? "within deadline" : "deadline missed");
		return cJSON_IsTrue(within);
	}
	if (!jnum(ev, "deadline_ms", &deadline_ms) || !jnum(ph, "unpause_done", &unpause_us)) {
		snprintf(why, len, "no deadline verdict and no unpause_done phase");
		return false;
	}
	snprintf(why, len, "%s", unpause_us <= deadline_ms * 1000.0 ? "within deadline"
		 : "deadline missed");
	return unpause_us <= deadline_ms * 1000.0;
}

static void print_drill(const cJSON *ev, bool pass, const char *why)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "phases_us");
	const char *s;
	double prev = 0, v, deadline_ms;
	size_t i;

	fputs("drill ", stdout);
	put_clean(stdout, (s = jstr(ev, "pair")) ? s : "?");
	fputs(": fault ", stdout);
	put_clean(stdout, (s = jstr(ev, "fault")) && s[0] ? s : "?");
	if ((s = jstr(ev, "from")) && s[0]) {
		fputs(", ", stdout);
		put_clean(stdout, s);
		fputs(" -> ", stdout);
		put_clean(stdout, (s = jstr(ev, "to")) && s[0] ? s : "?");
	}
	fputc('\n', stdout);

	printf("  %-16s %12s %12s\n", "phase", "at (us)", "step (us)");
	printf("  %-16s %12d\n", "injection", 0);
	for (i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		if (!jnum(ph, phases[i].key, &v)) {
			printf("  %-16s %12s\n", phases[i].label, "-");
			continue;
		}
		printf("  %-16s %12.0f %+12.0f\n", phases[i].label, v, v - prev);
		prev = v;
	}
	if ((s = jstr(ev, "message")) && s[0]) {
		fputs("  message: ", stdout);
		put_clean(stdout, s);
		fputc('\n', stdout);
	}
	if (jnum(ph, "unpause_done", &v) && jnum(ev, "deadline_ms", &deadline_ms))
		printf("  standby running after %.3f ms, deadline %.0f ms: %s (%s)\n", v / 1000.0,
		       deadline_ms, pass ? "PASS" : "FAIL", why);
	else
		printf("  %s (%s)\n", pass ? "PASS" : "FAIL", why);
}

static int cmd_drill(const struct options *o, struct conn *c)
{
	cJSON *req = NULL, *reply = NULL;
	const cJSON *ev;
	char why[96], *line;
	bool pass;
	int rc;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "drill") ||
	    !cJSON_AddStringToObject(req, "pair", o->pair) ||
	    !cJSON_AddStringToObject(req, "fault", o->fault)) {
		cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	rc = transact(o, c, req, &reply, &line);
	if (rc != EXIT_OK)
		goto out;

	ev = cJSON_GetObjectItemCaseSensitive(reply, "event");
	if (!cJSON_IsObject(ev)) {
		cmd_error(o, "malformed reply from failoverd: \"event\" is missing or not an object");
		rc = EXIT_DAEMON;
		goto out;
	}
	pass = drill_passed(ev, why, sizeof(why));
	if (!o->json)
		print_drill(ev, pass, why);
	else if (!print_raw(line, "event", false))
		rc = print_event_json(o, ev);
	if (rc == EXIT_OK && !pass)
		rc = EXIT_DAEMON;
out:
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

/* ---- arguments ---------------------------------------------------------- */

static void print_help(void)
{
	printf("Usage: failoverctl [OPTIONS] COMMAND [ARGS]\n"
	       "\n"
	       "Control failoverd through its control socket.\n"
	       "\n"
	       "Commands:\n"
	       "  status [--json]            pairs, their state, members and heartbeat age\n"
	       "  switchover PAIR            switch PAIR to its standby now\n"
	       "  arm PAIR                   let PAIR fail over automatically\n"
	       "  disarm PAIR                stop PAIR from failing over\n"
	       "  events [--follow] [--json] recent events with phase timings (us)\n"
	       "  metrics                    Prometheus metrics text\n"
	       "  drill PAIR --fault KIND [--json]\n"
	       "                             inject a fault, wait for the failover, print\n"
	       "                             the timeline and PASS/FAIL against deadline_ms\n"
	       "                             KIND: heartbeat-loss hang crash destroy\n"
	       "                                   unhealthy manual\n"
	       "\n"
	       "Options:\n"
	       "  -s, --socket PATH   control socket (default $FAILOVERD_SOCKET, else\n"
	       "                      " DEFAULT_SOCKET ")\n"
	       "      --timeout SEC   how long to wait for a reply (default 10, drill 120)\n"
	       "      --json          machine-readable output (status, events, drill)\n"
	       "      --follow        keep printing events as they happen (events)\n"
	       "      --fault KIND    the fault to inject (drill)\n"
	       "  -h, --help          show this help\n"
	       "\n"
	       "Exit status: 0 ok (drill PASS), 1 daemon error or drill FAIL,\n"
	       "2 usage error, 3 cannot connect.\n");
}

enum { OPT_TIMEOUT = 256, OPT_JSON, OPT_FOLLOW, OPT_FAULT };

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		{ "fault", required_argument, NULL, OPT_FAULT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("FAILOVERD_SOCKET");
	const char *const *k;
	bool wants_pair;
	int opt, npos;

	o->socket_path = env && env[0] ? env : DEFAULT_SOCKET;
	opterr = 0; /* our messages, in our format */
	while ((opt = getopt_long(argc, argv, ":s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o->socket_path = optarg;
			break;
		case OPT_TIMEOUT: {
			char *end;

			errno = 0;
			o->timeout_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->timeout_s > 0) ||
			    o->timeout_s > 1e6) {
				usage_error("--timeout: expected a number of seconds > 0, got '%s'",
					    optarg);
				return -EINVAL;
			}
			o->timeout_set = true;
			break;
		}
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_FOLLOW:
			o->follow = true;
			break;
		case OPT_FAULT:
			o->fault = optarg;
			break;
		case 'h':
			print_help();
			return 1;
		case ':':
			usage_error("option '%s' needs an argument", argv[optind - 1]);
			return -EINVAL;
		default:
			if (optopt)
				usage_error("unknown option '-%c'", optopt);
			else
				usage_error("unknown option '%s'", argv[optind - 1]);
			return -EINVAL;
		}
	}

	npos = argc - optind;
	if (npos == 0) {
		usage_error("no command given");
		return -EINVAL;
	}
	o->cmd = argv[optind];
	if (strcmp(o->cmd, "status") != 0 && strcmp(o->cmd, "switchover") != 0 &&
	    strcmp(o->cmd, "arm") != 0 && strcmp(o->cmd, "disarm") != 0 &&
	    strcmp(o->cmd, "events") != 0 && strcmp(o->cmd, "metrics") != 0 &&
	    strcmp(o->cmd, "drill") != 0) {
		usage_error("unknown command '%s'", o->cmd);
		return -EINVAL;
	}

	wants_pair = strcmp(o->cmd, "switchover") == 0 || strcmp(o->cmd, "arm") == 0 ||
		     strcmp(o->cmd, "disarm") == 0 || strcmp(o->cmd, "drill") == 0;
	if (wants_pair) {
		if (npos < 2) {
			usage_error("%s: missing PAIR", o->cmd);
			return -EINVAL;
		}
		o->pair = argv[optind + 1];
		if (!valid_pair_name(o->pair)) {
			usage_error("%s: invalid pair name '%s' (1 to %d of A-Z a-z 0-9 _ . -)",
				    o->cmd, o->pair, PAIR_NAME_MAX);
			return -EINVAL;
		}
	}
	if (npos > (wants_pair ? 2 : 1)) {
		usage_error("%s: unexpected argument '%s'", o->cmd,
			    argv[optind + (wants_pair ? 2 : 1)]);
		return -EINVAL;
	}

	if (o->json && strcmp(o->cmd, "status") != 0 && strcmp(o->cmd, "events") != 0 &&
	    strcmp(o->cmd, "drill") != 0) {
		usage_error("%s: --json applies only to status, events and drill", o->cmd);
		return -EINVAL;
	}
	if (o->follow && strcmp(o->cmd, "events") != 0) {
		usage_error("%s: --follow applies only to events", o->cmd);
		return -EINVAL;
	}
	if (strcmp(o->cmd, "drill") == 0) {
		if (!o->fault) {
			usage_error("drill: missing --fault KIND (heartbeat-loss, hang, crash, "
				    "destroy, unhealthy, manual)");
			return -EINVAL;
		}
		for (k = fault_kinds; *k; k++)
			if (strcmp(*k, o->fault) == 0)
				break;
		if (!*k) {
			usage_error("drill: unknown fault '%s' (heartbeat-loss, hang, crash, "
				    "destroy, unhealthy, manual)", o->fault);
			return -EINVAL;
		}
	} else if (o->fault) {
		usage_error("%s: --fault applies only to drill", o->cmd);
		return -EINVAL;
	}

	if (!o->socket_path[0] || strlen(o->socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		usage_error("socket path '%s' is empty or too long (max %zu bytes)", o->socket_path,
			    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return -EINVAL;
	}
	if (!o->timeout_set)
		o->timeout_s = strcmp(o->cmd, "drill") == 0 ? DEFAULT_DRILL_TIMEOUT_S
							    : DEFAULT_TIMEOUT_S;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct conn c = { .fd = -1 };
	int rc, r;

	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r > 0 ? EXIT_OK : EXIT_USAGE;

	if (strcmp(o.cmd, "status") == 0)
		rc = cmd_status(&o, &c);
	else if (strcmp(o.cmd, "events") == 0)
		rc = cmd_events(&o, &c);
	else if (strcmp(o.cmd, "metrics") == 0)
		rc = cmd_metrics(&o, &c);
	else if (strcmp(o.cmd, "drill") == 0)
		rc = cmd_drill(&o, &c);
	else
		rc = cmd_pair_action(&o, &c);
	conn_close(&c);

	/* Output that never reached its reader is a failure a script must see. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "failoverctl: writing output: %s\n", strerror(errno));
		if (rc == EXIT_OK)
			rc = EXIT_DAEMON;
	}
	return rc;
}
