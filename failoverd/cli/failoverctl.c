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
 *   4  drill --report: every round passed but the report is incomplete
 *      (a file could not be written, or python3/matplotlib could not plot)
 *
 * `drill --rounds N` repeats a drill, waiting between rounds (status polls)
 * until the pair is ARMED again, and prints per-phase statistics; with
 * --report DIR it also writes samples.csv, samples.json, summary.md and,
 * through fo-drill-report.py, phases.png and pause_vs_unpause.png.
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
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_OK      0
#define EXIT_DAEMON  1
#define EXIT_USAGE   2
#define EXIT_CONNECT 3
#define EXIT_REPORT  4

#define DEFAULT_SOCKET        "/run/failoverd/control.sock"
#define DEFAULT_TIMEOUT_S     10.0
/* A drill waits for detection, the switch and the first heartbeat of the
 * new active, which with long heartbeat timeouts can take a while. */
#define DEFAULT_DRILL_TIMEOUT_S 120.0
/* Between drill rounds: a rebuild boots a domain, under emulation slowly. */
#define DEFAULT_ROUND_TIMEOUT_S 180.0
#define ROUNDS_MAX            100000
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
	unsigned rounds;        /* drill: how many; 1 unless --rounds */
	bool rounds_set;
	double round_timeout_s; /* drill: how long to wait for ARMED between rounds */
	bool round_timeout_set;
	const char *report_dir; /* drill --report */
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
	int rc, r, send_r;

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

	send_r = conn_send_line(c, text);
	/* A daemon that refuses the connection (too many clients, out of
	 * descriptors) says why and closes before our request arrives: the
	 * send fails with EPIPE, but its reason is waiting to be read, and is
	 * what the operator needs to see (not "Broken pipe"). */
	if (send_r < 0 && send_r != -EPIPE && send_r != -ECONNRESET) {
		cmd_error(o, "sending the request to failoverd failed: %s",
			  send_r == -ETIMEDOUT ? "timed out" : strerror(-send_r));
		rc = EXIT_DAEMON;
		goto out;
	}

	r = conn_read_line(c, deadline, &line);
	if (r < 0 && send_r < 0) {
		cmd_error(o, "sending the request to failoverd failed: %s", strerror(-send_r));
		rc = EXIT_DAEMON;
		goto out;
	}
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

/* The daemon sends time_ns as an exact integer; as a double here it is
 * off by at most 256 ns at today's wall clock, far below the millisecond
 * shown. --json prints the daemon's raw text instead (see raw_member). */
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
	if ((s = jstr(ev, "path")) && s[0]) {
		fputs(" path=", stdout);
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

enum { COL_PAIR, COL_STATE, COL_ACTIVE, COL_STANDBY, COL_PATH, COL_LAST, COL_HB, N_COLS };

/* status and kernel: {"cmd":CMD}, whose reply carries a "pairs" array.
 * On EXIT_OK *ret_pairs is that array inside *ret_reply (the caller frees
 * the reply); with --json the reply line is printed as is and *ret_printed
 * says the caller has nothing left to print. */
static int request_pairs(const struct options *o, struct conn *c, const char *cmd, cJSON **ret_reply,
			 const cJSON **ret_pairs, bool *ret_printed)
{
	cJSON *req = cJSON_CreateObject();
	char *line;
	int rc;

	*ret_reply = NULL;
	*ret_printed = false;
	if (!req || !cJSON_AddStringToObject(req, "cmd", cmd)) {
		cJSON_Delete(req);
		cmd_error(o, "out of memory");
		return EXIT_DAEMON;
	}
	rc = transact(o, c, req, ret_reply, &line);
	cJSON_Delete(req);
	if (rc != EXIT_OK)
		return rc;
	*ret_pairs = cJSON_GetObjectItemCaseSensitive(*ret_reply, "pairs");
	if (!cJSON_IsArray(*ret_pairs)) {
		cmd_error(o, "malformed reply from failoverd: \"pairs\" is missing or not an array");
		return EXIT_DAEMON;
	}
	if (o->json) {
		puts(line);
		*ret_printed = true;
	}
	return EXIT_OK;
}

struct status_row {
	char cell[N_COLS][96];
	const char *reason;
};

static int cmd_status(const struct options *o, struct conn *c)
{
	static const char *const headers[N_COLS] = {
		"PAIR", "STATE", "ACTIVE", "STANDBY", "PATH", "LAST-SWITCH", "HB-AGE",
	};
	size_t width[N_COLS], n = 0, i, j;
	struct status_row *rows = NULL;
	cJSON *reply = NULL;
	const cJSON *pairs, *p;
	bool any_reason = false, printed;
	int rc;

	rc = request_pairs(o, c, "status", &reply, &pairs, &printed);
	if (rc != EXIT_OK || printed)
		goto out;

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
		/* kernel (/dev/fo_switch), xenctrl or sim; "-" from an older daemon */
		clean_copy(row->cell[COL_PATH], sizeof(row->cell[0]),
			   (s = jstr(p, "switch_path")) ? s : "-");
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
	/* Placement drift (pools, pins, dom0's vCPU) under the table: rare,
	 * and the detail is too long for a column. */
	{
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(reply, "host_placement");
		const char *st = h ? jstr(h, "state") : NULL, *det;

		if (st && strcmp(st, "drift") == 0 && (det = jstr(h, "detail"))) {
			fputs("placement drift (host): ", stdout);
			put_clean(stdout, det);
			fputc('\n', stdout);
		}
		cJSON_ArrayForEach(p, pairs) {
			st = jstr(p, "placement");
			det = jstr(p, "placement_detail");
			if (!st || strcmp(st, "drift") != 0 || !det)
				continue;
			printf("placement drift (%s): ", (st = jstr(p, "name")) ? st : "?");
			put_clean(stdout, det);
			fputc('\n', stdout);
		}
	}
out:
	free(rows);
	cJSON_Delete(reply);
	return rc;
}

/* kernel: what kmod-switch has armed (LIST), one line per pair; the PAIR
 * column is the configured pair owning the id, "-" for an orphan. */
static int cmd_kernel(const struct options *o, struct conn *c)
{
	cJSON *reply = NULL;
	const cJSON *pairs, *p;
	bool printed;
	int rc;

	rc = request_pairs(o, c, "kernel", &reply, &pairs, &printed);
	if (rc != EXIT_OK || printed)
		goto out;
	if (cJSON_GetArraySize(pairs) == 0) {
		puts("the kernel module has no pair armed");
		goto out;
	}
	printf("%-10s  %-20s  %-6s  %-7s  %-6s  %-10s  %s\n", "PAIR-ID", "PAIR", "ACTIVE", "STANDBY", "STATE",
	       "TIMEOUT", "LAST-NOTIFY");
	cJSON_ArrayForEach(p, pairs) {
		char name[64], state[16], tmo[24];
		double id = 0, a = 0, b = 0, t = 0, age = 0;
		const char *sv;

		clean_copy(name, sizeof(name), (sv = jstr(p, "pair")) ? sv : "-");
		clean_copy(state, sizeof(state), (sv = jstr(p, "state")) ? sv : "?");
		jnum(p, "pair_id", &id);
		jnum(p, "active_domid", &a);
		jnum(p, "standby_domid", &b);
		jnum(p, "timeout_ms", &t);
		jnum(p, "last_notify_age_ms", &age);
		snprintf(tmo, sizeof(tmo), "%.0f ms", t);
		printf("%-10.0f  %-20s  dom%-3.0f  dom%-4.0f  %-6s  %-10s  %.0f ms ago\n", id, name, a, b, state, tmo, age);
	}
out:
	cJSON_Delete(reply);
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

/* clear-failed MEMBER: the same exchange as a pair action, about a member. */
static int cmd_clear_failed(const struct options *o, struct conn *c)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	const char *msg;
	int rc;

	if (!req || !cJSON_AddStringToObject(req, "cmd", o->cmd) || !cJSON_AddStringToObject(req, "member", o->pair)) {
		cmd_error(o, "out of memory");
		cJSON_Delete(req);
		return EXIT_DAEMON;
	}
	rc = transact(o, c, req, &reply, NULL);
	if (rc == EXIT_OK) {
		printf("%s %s: ok", o->cmd, o->pair);
		if ((msg = jstr(reply, "message")) && msg[0]) {
			fputs(": ", stdout);
			put_clean(stdout, msg);
		}
		fputc('\n', stdout);
	}
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
	if (jnum(ph, "unpause_done", &v) && jnum(ev, "deadline_ms", &deadline_ms)) {
		double det = 0, budget_ms = 0;
		jnum(ph, "detected", &det);
		jnum(ev, "budget_ms", &budget_ms);
		printf("  detected -> standby running %.3f ms (deadline %.0f ms); injection -> running %.3f ms"
		       " (budget %.0f ms = timeout + period + deadline): %s (%s)\n",
		       (v - det) / 1000.0, deadline_ms, v / 1000.0, budget_ms, pass ? "PASS" : "FAIL", why);
	}
	else
		printf("  %s (%s)\n", pass ? "PASS" : "FAIL", why);
}

/*
 * libfoguest pairs: what the drill's new active restored. The relay and the
 * application report it a few tens of ms after the first heartbeat (the
 * role reaches the guest through xenstore), so status is asked a few times.
 * Prints nothing for a pair whose members run plain agents.
 */
static const char *jstr0(const cJSON *obj, const char *key)
{
	const char *s = jstr(obj, key);

	return s ? s : "";
}

static void print_drill_state(const struct options *o, struct conn *c, const cJSON *ev)
{
	const char *to = jstr0(ev, "to");
	struct options q = *o;
	int i;

	q.json = false;
	for (i = 0; i < 30; i++) {
		cJSON *reply = NULL;
		const cJSON *pairs, *p, *st = NULL, *t;
		bool printed;
		struct timespec ts = { 0, 100000000 };

		if (request_pairs(&q, c, "status", &reply, &pairs, &printed) != EXIT_OK) {
			cJSON_Delete(reply);
			return;
		}
		cJSON_ArrayForEach(p, pairs)
			if (!strcmp(jstr0(p, "name"), o->pair))
				st = cJSON_GetObjectItemCaseSensitive(p, "state_handover");
		if (!cJSON_IsObject(st)) {
			cJSON_Delete(reply);
			return;
		}
		t = cJSON_GetObjectItemCaseSensitive(st, "last_takeover");
		/* this drill's takeover, not an earlier one of the same member */
		double tt = 0, et = 0;

		jnum(t, "time_ns", &tt);
		jnum(ev, "time_ns", &et);
		if (cJSON_IsObject(t) && !strcmp(jstr0(t, "new_active"), to) && jstr0(t, "restore")[0] && tt >= et) {
			const cJSON *rc = cJSON_GetObjectItemCaseSensitive(t, "restored_cycle");
			const cJSON *hc = cJSON_GetObjectItemCaseSensitive(t, "handed_cycle");
			const cJSON *lc = cJSON_GetObjectItemCaseSensitive(t, "old_last_cycle");
			const cJSON *cl = cJSON_GetObjectItemCaseSensitive(t, "cycles_lost");

			printf("  state handover: %s restored: %s, cycle %.0f (handed over %.0f, old active's last commit "
			       "%.0f: %.0f cycles lost at takeover)\n", to, jstr0(t, "restore"),
			       cJSON_IsNumber(rc) ? rc->valuedouble : 0, cJSON_IsNumber(hc) ? hc->valuedouble : 0,
			       cJSON_IsNumber(lc) ? lc->valuedouble : 0, cJSON_IsNumber(cl) ? cl->valuedouble : 0);
			cJSON_Delete(reply);
			return;
		}
		cJSON_Delete(reply);
		nanosleep(&ts, NULL);
	}
	printf("  state handover: no restore reported by %s within 3 s\n", to);
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
	if (!o->json) {
		print_drill(ev, pass, why);
		print_drill_state(o, c, ev);
	} else if (!print_raw(line, "event", false)) {
		rc = print_event_json(o, ev);
	}
	if (rc == EXIT_OK && !pass)
		rc = EXIT_DAEMON;
out:
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

/* ---- drill --rounds: repeated drills, statistics and a report ----------- */

/*
 * The timings a drill report is about, all in microseconds. pause and
 * unpause are the hypervisor calls alone (done - issued); fault->running is
 * what the deadline judges; first heartbeat is when the new active proved it
 * runs. Same rows as the seed paper's Table 5.
 */
enum { ST_DETECTED, ST_PAUSE, ST_UNPAUSE, ST_RUNNING, ST_FIRST_HB, N_STATS };

static const struct drill_stat {
	const char *key;   /* samples.json and CSV (+ "_us") */
	const char *label; /* tables */
} drill_stats[N_STATS] = {
	{ "detected", "detected" },
	{ "pause", "pause" },
	{ "unpause", "unpause" },
	{ "fault_to_running", "fault->running" },
	{ "first_heartbeat", "first heartbeat" },
};

struct drill_round {
	cJSON *event; /* as parsed, for our own reading */
	char *raw;    /* as sent, for samples.json (keeps time_ns exact) */
	bool pass;
	char why[96];
	bool have[N_STATS];
	double us[N_STATS];
};

/* Running mean and variance (Welford), so long runs do not lose precision. */
struct phase_stats {
	unsigned n;
	double mean, m2, min, max;
};

struct drill_run {
	const struct options *o;
	struct drill_round *rounds;
	unsigned done;        /* rounds with a drill event */
	unsigned passed;
	bool stopped;         /* ended before o->rounds were run */
	char stop_msg[512];   /* why, for the terminal and the report */
	char stop_state[32];  /* the pair's state then, "" if not known */
	char stop_reason[256];
	int worst;            /* index of the largest fault->running, -1 = none */
	double deadline_ms;   /* < 0: not known */
	struct phase_stats stats[N_STATS];
};

static void phase_stats_add(struct phase_stats *s, double v)
{
	double d = v - s->mean;

	if (s->n == 0 || v < s->min)
		s->min = v;
	if (s->n == 0 || v > s->max)
		s->max = v;
	s->n++;
	s->mean += d / s->n;
	s->m2 += d * (v - s->mean);
}

/* Sample variance (n - 1): the rounds are a sample of the switch's behaviour. */
static double phase_stats_variance(const struct phase_stats *s)
{
	return s->n > 1 ? s->m2 / (s->n - 1) : 0.0;
}

static bool phase_diff(const cJSON *ph, const char *from, const char *to, double *ret)
{
	double a, b;

	if (!jnum(ph, from, &a) || !jnum(ph, to, &b))
		return false;
	*ret = b - a;
	return true;
}

static void round_measure(struct drill_round *r)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(r->event, "phases_us");

	r->have[ST_DETECTED] = jnum(ph, "detected", &r->us[ST_DETECTED]);
	r->have[ST_PAUSE] = phase_diff(ph, "pause_issued", "pause_done", &r->us[ST_PAUSE]);
	r->have[ST_UNPAUSE] = phase_diff(ph, "unpause_issued", "unpause_done", &r->us[ST_UNPAUSE]);
	r->have[ST_RUNNING] = jnum(ph, "unpause_done", &r->us[ST_RUNNING]);
	r->have[ST_FIRST_HB] = jnum(ph, "first_heartbeat", &r->us[ST_FIRST_HB]);
}

static void fmt_us(char *buf, size_t len, bool have, double v)
{
	if (have)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "-");
}

static void print_round_line(const struct drill_run *run, unsigned i)
{
	const struct drill_round *r = &run->rounds[i];
	char v[N_STATS][24];
	const char *s;
	int k;

	for (k = 0; k < N_STATS; k++)
		fmt_us(v[k], sizeof(v[k]), r->have[k], r->us[k]);
	printf("round %u/%u: ", i + 1, run->o->rounds);
	put_clean(stdout, (s = jstr(r->event, "fault")) && s[0] ? s : "?");
	fputc(' ', stdout);
	put_clean(stdout, (s = jstr(r->event, "from")) && s[0] ? s : "?");
	fputs(" -> ", stdout);
	put_clean(stdout, (s = jstr(r->event, "to")) && s[0] ? s : "?");
	printf(": detected %s, pause %s, unpause %s, running at %s, first heartbeat %s us: %s",
	       v[ST_DETECTED], v[ST_PAUSE], v[ST_UNPAUSE], v[ST_RUNNING], v[ST_FIRST_HB],
	       r->pass ? "PASS" : "FAIL");
	if (!r->pass) {
		printf(" (%s", r->why);
		if ((s = jstr(r->event, "message")) && s[0]) {
			fputs(": ", stdout);
			put_clean(stdout, s);
		}
		fputc(')', stdout);
	}
	fputc('\n', stdout);
	fflush(stdout);
}

/*
 * Wait until PAIR is ARMED. *ret_armed is false when it is not within
 * --round-timeout, or when it is in a state it never leaves by itself
 * (DEGRADED, DISARMED: only an operator's `arm` does); run->stop_state and
 * stop_reason then say where it is. Returns an exit code: anything but
 * EXIT_OK means failoverd could not be asked (already reported).
 */
static int wait_armed(struct drill_run *run, struct conn *c, bool *ret_armed)
{
	struct options so = *run->o;
	int64_t deadline = now_ms() + (int64_t)(run->o->round_timeout_s * 1000.0);
	cJSON *req = NULL, *reply = NULL;
	int rc;

	*ret_armed = false;
	so.timeout_s = DEFAULT_TIMEOUT_S;
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "status")) {
		cmd_error(run->o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	for (;;) {
		const cJSON *pairs, *p, *found = NULL;
		const char *state, *reason;

		cJSON_Delete(reply);
		reply = NULL;
		rc = transact(&so, c, req, &reply, NULL);
		conn_close(c);
		if (rc != EXIT_OK)
			goto out;
		pairs = cJSON_GetObjectItemCaseSensitive(reply, "pairs");
		cJSON_ArrayForEach(p, pairs) {
			const char *name = jstr(p, "name");

			if (name && strcmp(name, run->o->pair) == 0)
				found = p;
		}
		if (!found) {
			cmd_error(run->o, "failoverd has no pair named %s (see failoverctl status)",
				  run->o->pair);
			rc = EXIT_DAEMON;
			goto out;
		}
		state = jstr(found, "state");
		reason = jstr(found, "reason");
		clean_copy(run->stop_state, sizeof(run->stop_state), state ? state : "?");
		clean_copy(run->stop_reason, sizeof(run->stop_reason), reason ? reason : "");
		if (state && strcmp(state, "ARMED") == 0) {
			*ret_armed = true;
			goto out;
		}
		if (state && (strcmp(state, "DEGRADED") == 0 || strcmp(state, "DISARMED") == 0))
			goto out;
		if (now_ms() >= deadline)
			goto out;
		/* ARMING, SWITCHING, REBUILDING: the daemon is on its way. */
		poll(NULL, 0, 100);
	}
out:
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

static void stop_not_armed(struct drill_run *run, unsigned round)
{
	const struct options *o = run->o;
	bool terminal = strcmp(run->stop_state, "DEGRADED") == 0 ||
			strcmp(run->stop_state, "DISARMED") == 0;
	char where[64];
	int n;

	if (round == 1)
		snprintf(where, sizeof(where), "cannot start round 1 of %u", o->rounds);
	else
		snprintf(where, sizeof(where), "stopped after round %u of %u", round - 1, o->rounds);
	n = snprintf(run->stop_msg, sizeof(run->stop_msg), "%s: pair %s is %s%s%s%s, not ARMED",
		     where, o->pair, run->stop_state, run->stop_reason[0] ? " (" : "",
		     run->stop_reason, run->stop_reason[0] ? ")" : "");
	if (n < 0 || (size_t)n >= sizeof(run->stop_msg))
		n = (int)sizeof(run->stop_msg) - 1;
	if (!terminal)
		snprintf(run->stop_msg + n, sizeof(run->stop_msg) - (size_t)n,
			 " after waiting %g s (--round-timeout)", o->round_timeout_s);
	else if (strcmp(run->stop_state, "DEGRADED") == 0)
		snprintf(run->stop_msg + n, sizeof(run->stop_msg) - (size_t)n,
			 "; a DEGRADED pair does not re-arm by itself (on_failover \"rebuild\" "
			 "does), repair it and run 'failoverctl arm %s'", o->pair);
	else
		snprintf(run->stop_msg + n, sizeof(run->stop_msg) - (size_t)n,
			 "; run 'failoverctl arm %s' first", o->pair);
	run->stopped = true;
}

/* One drill request; on EXIT_OK the round holds its event. */
static int run_one_drill(struct drill_run *run, struct conn *c, struct drill_round *r)
{
	const struct options *o = run->o;
	cJSON *req = NULL, *reply = NULL;
	const char *raw, *end;
	char *line;
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
	r->event = cJSON_DetachItemFromObjectCaseSensitive(reply, "event");
	if (!cJSON_IsObject(r->event)) {
		cmd_error(o, "malformed reply from failoverd: \"event\" is missing or not an object");
		rc = EXIT_DAEMON;
		goto out;
	}
	raw = raw_member(line, "event", &end);
	if (raw) {
		r->raw = strndup(raw, (size_t)(end - raw));
	} else {
		char *text = cJSON_PrintUnformatted(r->event);

		r->raw = text ? strdup(text) : NULL;
		cJSON_free(text);
	}
	if (!r->raw) {
		cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	r->pass = drill_passed(r->event, r->why, sizeof(r->why));
	round_measure(r);
out:
	conn_close(c);
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

static void drill_summarise(struct drill_run *run)
{
	unsigned i;
	int k;

	run->worst = -1;
	run->deadline_ms = -1;
	for (i = 0; i < run->done; i++) {
		const struct drill_round *r = &run->rounds[i];
		double d;

		if (r->pass)
			run->passed++;
		if (run->deadline_ms < 0 && jnum(r->event, "deadline_ms", &d))
			run->deadline_ms = d;
		for (k = 0; k < N_STATS; k++)
			if (r->have[k])
				phase_stats_add(&run->stats[k], r->us[k]);
		if (r->have[ST_RUNNING] &&
		    (run->worst < 0 || r->us[ST_RUNNING] > run->rounds[run->worst].us[ST_RUNNING]))
			run->worst = (int)i;
	}
}

static void fmt_deadline(const struct drill_run *run, char *buf, size_t len)
{
	if (run->deadline_ms >= 0)
		snprintf(buf, len, "%.0f ms", run->deadline_ms);
	else
		snprintf(buf, len, "(unknown)");
}

static void print_summary(const struct drill_run *run)
{
	const struct options *o = run->o;
	char dl[32];
	int k;

	fmt_deadline(run, dl, sizeof(dl));
	printf("\ndrill %s: fault %s, %u of %u rounds, deadline %s\n", o->pair, o->fault, run->done,
	       o->rounds, dl);
	printf("  %-16s %5s %14s %16s %12s %12s\n", "phase (us)", "n", "mean", "variance", "min",
	       "max");
	for (k = 0; k < N_STATS; k++) {
		const struct phase_stats *s = &run->stats[k];

		if (!s->n) {
			printf("  %-16s %5u %14s %16s %12s %12s\n", drill_stats[k].label, 0u, "-", "-",
			       "-", "-");
			continue;
		}
		printf("  %-16s %5u %14.1f %16.1f %12.0f %12.0f\n", drill_stats[k].label, s->n,
		       s->mean, phase_stats_variance(s), s->min, s->max);
	}
	printf("PASS %u/%u within deadline %s", run->passed, o->rounds, dl);
	if (run->worst >= 0)
		printf("; worst round %d: standby running %.0f us after the fault", run->worst + 1,
		       run->rounds[run->worst].us[ST_RUNNING]);
	fputc('\n', stdout);
	if (run->stopped)
		printf("stopped early: %s\n", run->stop_msg);
}

/* ---- the report files --------------------------------------------------- */

/* mkdir -p: the report directory is usually new, and often nested. */
static int make_dirs(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	size_t i, len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = i == len ? '\0' : '/';
	}
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return access(path, W_OK | X_OK) < 0 ? -errno : 0;
}

static FILE *report_open(const struct options *o, const char *name, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", o->report_dir, name);
	f = fopen(path, "we");
	if (!f)
		cmd_error(o, "cannot write %s: %s", path, strerror(errno));
	return f;
}

static int report_close(const struct options *o, FILE *f, const char *path)
{
	bool failed = ferror(f);

	if (fclose(f) != 0 || failed) {
		cmd_error(o, "writing %s failed: %s", path, strerror(errno ? errno : EIO));
		return -EIO;
	}
	return 0;
}

/* A CSV cell: quoted when it holds a separator or a quote (RFC 4180). */
static void csv_put(FILE *f, const char *s)
{
	char clean[128];
	const char *p;

	clean_copy(clean, sizeof(clean), s ? s : "");
	if (!strpbrk(clean, ",\"")) {
		fputs(clean, f);
		return;
	}
	fputc('"', f);
	for (p = clean; *p; p++) {
		if (*p == '"')
			fputc('"', f);
		fputc(*p, f);
	}
	fputc('"', f);
}

static int write_csv(const struct drill_run *run)
{
	char path[PATH_MAX];
	unsigned i;
	FILE *f;
	int k;

	f = report_open(run->o, "samples.csv", path, sizeof(path));
	if (!f)
		return -EIO;
	fputs("round,fault,from,to,result", f);
	for (k = 0; k < N_STATS; k++)
		fprintf(f, ",%s_us", drill_stats[k].key);
	fputs(",within_deadline\n", f);
	for (i = 0; i < run->done; i++) {
		const struct drill_round *r = &run->rounds[i];
		const cJSON *within = cJSON_GetObjectItemCaseSensitive(r->event, "within_deadline");

		fprintf(f, "%u,", i + 1);
		csv_put(f, jstr(r->event, "fault"));
		fputc(',', f);
		csv_put(f, jstr(r->event, "from"));
		fputc(',', f);
		csv_put(f, jstr(r->event, "to"));
		fputc(',', f);
		csv_put(f, jstr(r->event, "result"));
		for (k = 0; k < N_STATS; k++) {
			if (r->have[k])
				fprintf(f, ",%.0f", r->us[k]);
			else
				fputc(',', f);
		}
		fprintf(f, ",%s\n", cJSON_IsBool(within) ? (cJSON_IsTrue(within) ? "true" : "false") : "");
	}
	return report_close(run->o, f, path);
}

static cJSON *add_num_or_null(cJSON *obj, const char *key, bool have, double v)
{
	return have ? cJSON_AddNumberToObject(obj, key, v) : cJSON_AddNullToObject(obj, key);
}

/*
 * The whole run as one JSON document: samples.json and the --json output.
 * "events" are the daemon's objects byte for byte; "samples" and "summary"
 * are what this CLI derived from them.
 */
static cJSON *drill_document(const struct drill_run *run)
{
	const struct options *o = run->o;
	cJSON *doc, *arr, *obj, *sum, *item;
	unsigned i;
	int k;
	bool ok;

	doc = cJSON_CreateObject();
	ok = doc && cJSON_AddStringToObject(doc, "pair", o->pair) &&
	     cJSON_AddStringToObject(doc, "fault", o->fault) &&
	     cJSON_AddNumberToObject(doc, "rounds", o->rounds) &&
	     cJSON_AddNumberToObject(doc, "completed", run->done) &&
	     add_num_or_null(doc, "deadline_ms", run->deadline_ms >= 0, run->deadline_ms);
	if (!ok)
		goto fail;
	if (run->stopped) {
		obj = cJSON_AddObjectToObject(doc, "stopped");
		if (!obj || !cJSON_AddNumberToObject(obj, "after_round", run->done) ||
		    !cJSON_AddStringToObject(obj, "state", run->stop_state) ||
		    !cJSON_AddStringToObject(obj, "reason", run->stop_reason) ||
		    !cJSON_AddStringToObject(obj, "message", run->stop_msg))
			goto fail;
	} else if (!cJSON_AddNullToObject(doc, "stopped")) {
		goto fail;
	}

	arr = cJSON_AddArrayToObject(doc, "events");
	if (!arr)
		goto fail;
	for (i = 0; i < run->done; i++) {
		item = cJSON_CreateRaw(run->rounds[i].raw);
		if (!item || !cJSON_AddItemToArray(arr, item)) {
			cJSON_Delete(item);
			goto fail;
		}
	}

	arr = cJSON_AddArrayToObject(doc, "samples");
	if (!arr)
		goto fail;
	for (i = 0; i < run->done; i++) {
		const struct drill_round *r = &run->rounds[i];
		const cJSON *within = cJSON_GetObjectItemCaseSensitive(r->event, "within_deadline");
		const char *s;
		char key[40];

		obj = cJSON_CreateObject();
		if (!obj || !cJSON_AddItemToArray(arr, obj)) {
			cJSON_Delete(obj);
			goto fail;
		}
		ok = cJSON_AddNumberToObject(obj, "round", i + 1) &&
		     cJSON_AddStringToObject(obj, "fault", (s = jstr(r->event, "fault")) ? s : "") &&
		     cJSON_AddStringToObject(obj, "from", (s = jstr(r->event, "from")) ? s : "") &&
		     cJSON_AddStringToObject(obj, "to", (s = jstr(r->event, "to")) ? s : "") &&
		     cJSON_AddStringToObject(obj, "result", (s = jstr(r->event, "result")) ? s : "");
		for (k = 0; ok && k < N_STATS; k++) {
			snprintf(key, sizeof(key), "%s_us", drill_stats[k].key);
			ok = add_num_or_null(obj, key, r->have[k], r->us[k]);
		}
		ok = ok && (cJSON_IsBool(within) ? cJSON_AddBoolToObject(obj, "within_deadline",
									 cJSON_IsTrue(within))
						  : cJSON_AddNullToObject(obj, "within_deadline")) &&
		     cJSON_AddBoolToObject(obj, "pass", r->pass);
		if (!ok)
			goto fail;
	}

	sum = cJSON_AddObjectToObject(doc, "summary");
	ok = sum && cJSON_AddStringToObject(sum, "unit", "us") &&
	     cJSON_AddStringToObject(sum, "variance", "sample variance (n-1), us^2") &&
	     (arr = cJSON_AddArrayToObject(sum, "phases"));
	if (!ok)
		goto fail;
	for (k = 0; k < N_STATS; k++) {
		const struct phase_stats *s = &run->stats[k];

		obj = cJSON_CreateObject();
		if (!obj || !cJSON_AddItemToArray(arr, obj)) {
			cJSON_Delete(obj);
			goto fail;
		}
		ok = cJSON_AddStringToObject(obj, "phase", drill_stats[k].key) &&
		     cJSON_AddStringToObject(obj, "label", drill_stats[k].label) &&
		     cJSON_AddNumberToObject(obj, "n", s->n) &&
		     add_num_or_null(obj, "mean", s->n, s->mean) &&
		     add_num_or_null(obj, "variance", s->n, phase_stats_variance(s)) &&
		     add_num_or_null(obj, "min", s->n, s->min) &&
		     add_num_or_null(obj, "max", s->n, s->max);
		if (!ok)
			goto fail;
	}
	ok = cJSON_AddNumberToObject(sum, "pass", run->passed) &&
	     cJSON_AddNumberToObject(sum, "rounds", o->rounds) &&
	     add_num_or_null(sum, "worst_round", run->worst >= 0, run->worst + 1) &&
	     add_num_or_null(sum, "worst_fault_to_running_us", run->worst >= 0,
			     run->worst >= 0 ? run->rounds[run->worst].us[ST_RUNNING] : 0);
	if (!ok)
		goto fail;
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}

static int write_json(const struct drill_run *run, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	f = report_open(run->o, "samples.json", path, sizeof(path));
	if (!f)
		return -EIO;
	fputs(text, f);
	fputc('\n', f);
	return report_close(run->o, f, path);
}

/* Markdown cell text: no control characters, no column breaks. */
static void md_put(FILE *f, const char *s)
{
	for (s = s ? s : ""; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '|')
			fputs("\\|", f);
		else
			fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, f);
	}
}

static int write_markdown(const struct drill_run *run, bool plots)
{
	const struct options *o = run->o;
	char path[PATH_MAX], dl[32];
	unsigned i;
	FILE *f;
	int k;

	f = report_open(o, "summary.md", path, sizeof(path));
	if (!f)
		return -EIO;
	fmt_deadline(run, dl, sizeof(dl));
	fputs("# Failover drill: ", f);
	md_put(f, o->pair);
	fprintf(f, ", fault %s\n\n", o->fault);
	fprintf(f, "%u of %u rounds run; deadline %s from detection to the standby running "
		   "(and fault to running within timeout + period + deadline).\n\n",
		run->done, o->rounds, dl);

	fputs("| phase | n | mean (us) | variance (us^2) | min (us) | max (us) |\n"
	      "|---|--:|--:|--:|--:|--:|\n", f);
	for (k = 0; k < N_STATS; k++) {
		const struct phase_stats *s = &run->stats[k];

		if (s->n)
			fprintf(f, "| %s | %u | %.1f | %.1f | %.0f | %.0f |\n", drill_stats[k].label,
				s->n, s->mean, phase_stats_variance(s), s->min, s->max);
		else
			fprintf(f, "| %s | 0 | - | - | - | - |\n", drill_stats[k].label);
	}
	fprintf(f, "\n**PASS %u/%u** within the %s deadline.", run->passed, o->rounds, dl);
	if (run->worst >= 0)
		fprintf(f, " Worst round: %d (standby running %.0f us after the fault).",
			run->worst + 1, run->rounds[run->worst].us[ST_RUNNING]);
	fputc('\n', f);
	if (run->stopped) {
		fputs("\n**Stopped early:** ", f);
		md_put(f, run->stop_msg);
		fputs(".\n", f);
	}

	fputs("\nTimes are microseconds after the injected fault. pause = pause_done - "
	      "pause_issued, unpause = unpause_done - unpause_issued (the hypervisor calls "
	      "alone); fault->running = unpause_done; variance is the sample variance (n-1).\n", f);

	fputs("\n## Rounds\n\n| round | fault | from | to | result |", f);
	for (k = 0; k < N_STATS; k++)
		fprintf(f, " %s (us) |", drill_stats[k].label);
	fputs(" verdict |\n|--:|---|---|---|---|", f);
	for (k = 0; k < N_STATS; k++)
		fputs("--:|", f);
	fputs("---|\n", f);
	for (i = 0; i < run->done; i++) {
		const struct drill_round *r = &run->rounds[i];

		fprintf(f, "| %u | ", i + 1);
		md_put(f, jstr(r->event, "fault"));
		fputs(" | ", f);
		md_put(f, jstr(r->event, "from"));
		fputs(" | ", f);
		md_put(f, jstr(r->event, "to"));
		fputs(" | ", f);
		md_put(f, jstr(r->event, "result"));
		fputs(" |", f);
		for (k = 0; k < N_STATS; k++) {
			if (r->have[k])
				fprintf(f, " %.0f |", r->us[k]);
			else
				fputs(" - |", f);
		}
		fprintf(f, " %s |\n", r->pass ? "PASS" : "FAIL");
	}
	if (plots)
		fputs("\n![phases per round](phases.png)\n\n"
		      "![pause vs unpause](pause_vs_unpause.png)\n", f);
	return report_close(o, f, path);
}

/* ---- the plots ---------------------------------------------------------- */

#define REPORT_SCRIPT          "fo-drill-report.py"
#define REPORT_SCRIPT_SHARE    "/usr/share/failoverd/" REPORT_SCRIPT
/* fo-drill-report.py exits with this when matplotlib cannot be imported. */
#define REPORT_EXIT_NO_MPL     3

/* Where the plotting script is: $FO_DRILL_REPORT, the installed copy, then
 * the source tree this binary was built from. */
static const char *find_report_script(const struct options *o)
{
	const char *env = getenv("FO_DRILL_REPORT");

	if (env && env[0]) {
		if (access(env, R_OK) == 0)
			return env;
		cmd_error(o, "FO_DRILL_REPORT=%s: %s", env, strerror(errno));
		return NULL;
	}
	if (access(REPORT_SCRIPT_SHARE, R_OK) == 0)
		return REPORT_SCRIPT_SHARE;
#ifdef FO_SOURCE_DIR
	if (access(FO_SOURCE_DIR "/failoverd/cli/" REPORT_SCRIPT, R_OK) == 0)
		return FO_SOURCE_DIR "/failoverd/cli/" REPORT_SCRIPT;
#endif
	cmd_error(o, "cannot find " REPORT_SCRIPT " (tried $FO_DRILL_REPORT, " REPORT_SCRIPT_SHARE
#ifdef FO_SOURCE_DIR
		  ", " FO_SOURCE_DIR "/failoverd/cli/" REPORT_SCRIPT
#endif
		  ")");
	return NULL;
}

/* Exit status of `PYTHON SCRIPT DIR`, 127 if PYTHON could not be run, or
 * -errno if we could not even start or wait for it. */
static int run_python(const struct options *o, const char *python, const char *script)
{
	int status;
	pid_t pid;

	fflush(NULL); /* the child must not write our buffered output again */
	pid = fork();
	if (pid < 0) {
		cmd_error(o, "cannot start %s: %s", python, strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		/* --json promises one JSON document on stdout: the script's
		 * chatter goes to stderr then. */
		if (o->json)
			dup2(STDERR_FILENO, STDOUT_FILENO);
		execlp(python, python, script, o->report_dir, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			cmd_error(o, "waiting for %s: %s", python, strerror(errno));
			return -errno;
		}
	}
	if (WIFSIGNALED(status)) {
		cmd_error(o, "%s %s was killed by signal %d", python, script, WTERMSIG(status));
		return -EINTR;
	}
	return WEXITSTATUS(status);
}

/*
 * Run the plotting script. 0 when the plots were written.
 * The interpreter is $FO_PYTHON, else python3 from PATH and then Debian's
 * /usr/bin/python3: python3-matplotlib installs into the latter, and a
 * pyenv or venv python3 earlier in PATH usually lacks it.
 */
static int make_plots(const struct options *o)
{
	static const char *const fallback[] = { "python3", "/usr/bin/python3", NULL };
	const char *env = getenv("FO_PYTHON");
	const char *only[] = { env, NULL };
	const char *const *py = env && env[0] ? only : fallback;
	const char *script = find_report_script(o);
	int r = 127;

	if (!script)
		return -ENOENT;
	for (; *py; py++) {
		r = run_python(o, *py, script);
		if (r == 0)
			return 0;
		if (r < 0)
			return r;
		if ((r != 127 && r != REPORT_EXIT_NO_MPL) || !py[1])
			break;
		fprintf(stderr, "failoverctl: drill: %s %s; trying %s\n", *py,
			r == 127 ? "cannot be run" : "has no matplotlib", py[1]);
	}
	if (r == 127)
		cmd_error(o, "%s cannot be run: is python3 installed? (Debian: apt install "
			  "python3 python3-matplotlib; or set FO_PYTHON)", *py);
	else if (r == REPORT_EXIT_NO_MPL)
		cmd_error(o, "matplotlib is missing for %s (Debian: apt install "
			  "python3-matplotlib; or set FO_PYTHON to a python3 that has it)", *py);
	else
		cmd_error(o, "%s %s failed (exit status %d)", *py, script, r);
	return -EIO;
}

/* ---- the command -------------------------------------------------------- */

/* CSV, JSON, plots, then the Markdown that links the plots it got. */
static int write_report(const struct drill_run *run, const char *doc_text)
{
	const struct options *o = run->o;
	bool plots;
	int rc = 0;

	if (write_csv(run) < 0 || write_json(run, doc_text) < 0)
		rc = -EIO;
	plots = rc == 0 && make_plots(o) == 0;
	if (write_markdown(run, plots) < 0)
		rc = -EIO;
	if (rc == 0 && !plots) {
		fprintf(stderr, "failoverctl: drill: the plots were not made; samples.csv, "
			"samples.json and summary.md are in %s\n", o->report_dir);
		rc = -EIO;
	}
	if (rc == 0 && !o->json)
		printf("report: %s/{samples.csv,samples.json,summary.md,phases.png,"
		       "pause_vs_unpause.png}\n", o->report_dir);
	return rc;
}

static int cmd_drill_rounds(const struct options *o, struct conn *c)
{
	struct drill_run run = { .o = o, .worst = -1 };
	char *doc_text = NULL;
	cJSON *doc = NULL;
	unsigned i;
	int rc = EXIT_OK, r;

	/* Before the first drill: a report that cannot be written is better
	 * known now than after an hour of rounds. */
	if (o->report_dir) {
		r = make_dirs(o->report_dir);
		if (r < 0) {
			cmd_error(o, "report directory %s: %s", o->report_dir, strerror(-r));
			rc = EXIT_REPORT;
			goto out;
		}
	}
	run.rounds = calloc(o->rounds, sizeof(*run.rounds));
	if (!run.rounds) {
		cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}

	for (i = 0; i < o->rounds; i++) {
		bool armed;

		rc = wait_armed(&run, c, &armed);
		if (rc != EXIT_OK) {
			run.stopped = true;
			snprintf(run.stop_msg, sizeof(run.stop_msg),
				 "stopped before round %u of %u: failoverd did not answer status", i + 1,
				 o->rounds);
			break;
		}
		if (!armed) {
			stop_not_armed(&run, i + 1);
			fprintf(stderr, "failoverctl: drill: %s\n", run.stop_msg);
			rc = EXIT_DAEMON;
			break;
		}
		rc = run_one_drill(&run, c, &run.rounds[i]);
		if (rc != EXIT_OK) {
			cJSON_Delete(run.rounds[i].event);
			free(run.rounds[i].raw);
			run.rounds[i] = (struct drill_round){ 0 };
			run.stopped = true;
			snprintf(run.stop_msg, sizeof(run.stop_msg),
				 "stopped at round %u of %u: the drill request failed", i + 1, o->rounds);
			break;
		}
		run.done++;
		if (!o->json)
			print_round_line(&run, i);
	}

	drill_summarise(&run);
	if (!o->json)
		print_summary(&run);
	if (run.passed != o->rounds && rc == EXIT_OK)
		rc = EXIT_DAEMON;

	doc = drill_document(&run);
	doc_text = doc ? cJSON_Print(doc) : NULL;
	if (!doc_text) {
		cmd_error(o, "out of memory building the drill summary");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (o->json) {
		puts(doc_text);
		fflush(stdout);
	}
	if (o->report_dir && write_report(&run, doc_text) < 0 && rc == EXIT_OK)
		rc = EXIT_REPORT;
out:
	if (run.rounds)
		for (i = 0; i < o->rounds; i++) {
			cJSON_Delete(run.rounds[i].event);
			free(run.rounds[i].raw);
		}
	free(run.rounds);
	cJSON_free(doc_text);
	cJSON_Delete(doc);
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
	       "  status [--json]            pairs, their state, members, switch path, heartbeat age\n"
	       "  switchover PAIR            switch PAIR to its standby now\n"
	       "  arm PAIR                   let PAIR fail over automatically\n"
	       "  disarm PAIR                stop PAIR from failing over\n"
	       "  clear-failed MEMBER        after repairing a member that failed: trust it\n"
	       "                             again (then `arm PAIR` adopts it as standby)\n"
	       "  events [--follow] [--json] recent events with phase timings (us)\n"
	       "  metrics                    Prometheus metrics text\n"
	       "  kernel [--json]            pairs the kernel module (kmod-switch) has armed,\n"
	       "                             with the configured pair owning each id\n"
	       "  drill PAIR --fault KIND [--rounds N] [--report DIR] [--json]\n"
	       "                             inject a fault, wait for the failover, print\n"
	       "                             the timeline and PASS/FAIL against deadline_ms\n"
	       "                             KIND: heartbeat-loss hang crash destroy\n"
	       "                                   unhealthy manual\n"
	       "                             --rounds: repeat, waiting for ARMED in between,\n"
	       "                             then print mean/variance/min/max per phase\n"
	       "\n"
	       "Options:\n"
	       "  -s, --socket PATH   control socket (default $FAILOVERD_SOCKET, else\n"
	       "                      " DEFAULT_SOCKET ")\n"
	       "      --timeout SEC   how long to wait for a reply (default 10, drill 120)\n"
	       "      --json          machine-readable output (status, events, drill)\n"
	       "      --follow        keep printing events as they happen (events)\n"
	       "      --fault KIND    the fault to inject (drill)\n"
	       "      --rounds N      drill N times (drill; default 1)\n"
	       "      --round-timeout SEC\n"
	       "                      how long the pair may take to be ARMED again\n"
	       "                      between rounds (drill; default 180)\n"
	       "      --report DIR    write samples.csv, samples.json, summary.md and\n"
	       "                      PNG plots (python3 + matplotlib, script found via\n"
	       "                      $FO_DRILL_REPORT or " REPORT_SCRIPT_SHARE ",\n"
	       "                      run by $FO_PYTHON, else python3, /usr/bin/python3)\n"
	       "  -h, --help          show this help\n"
	       "\n"
	       "Exit status: 0 ok (drill PASS), 1 daemon error or drill FAIL,\n"
	       "2 usage error, 3 cannot connect, 4 drills passed but the report is\n"
	       "incomplete.\n");
}

enum { OPT_TIMEOUT = 256, OPT_JSON, OPT_FOLLOW, OPT_FAULT, OPT_ROUNDS, OPT_ROUND_TIMEOUT, OPT_REPORT };

/* Seconds: > 0, at most a million (about 11 days). */
static int parse_seconds(const char *opt, const char *arg, double *ret)
{
	char *end;

	errno = 0;
	*ret = strtod(arg, &end);
	if (errno || end == arg || *end || !(*ret > 0) || *ret > 1e6) {
		usage_error("%s: expected a number of seconds > 0, got '%s'", opt, arg);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		{ "fault", required_argument, NULL, OPT_FAULT },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "round-timeout", required_argument, NULL, OPT_ROUND_TIMEOUT },
		{ "report", required_argument, NULL, OPT_REPORT },
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
		case OPT_TIMEOUT:
			if (parse_seconds("--timeout", optarg, &o->timeout_s) < 0)
				return -EINVAL;
			o->timeout_set = true;
			break;
		case OPT_ROUND_TIMEOUT:
			if (parse_seconds("--round-timeout", optarg, &o->round_timeout_s) < 0)
				return -EINVAL;
			o->round_timeout_set = true;
			break;
		case OPT_ROUNDS: {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v < 1 ||
			    v > ROUNDS_MAX) {
				usage_error("--rounds: expected a whole number from 1 to %d, got '%s'",
					    ROUNDS_MAX, optarg);
				return -EINVAL;
			}
			o->rounds = (unsigned)v;
			o->rounds_set = true;
			break;
		}
		case OPT_REPORT:
			if (!optarg[0]) {
				usage_error("--report: expected a directory, got ''");
				return -EINVAL;
			}
			o->report_dir = optarg;
			break;
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
	    strcmp(o->cmd, "drill") != 0 && strcmp(o->cmd, "kernel") != 0 &&
	    strcmp(o->cmd, "clear-failed") != 0) {
		usage_error("unknown command '%s'", o->cmd);
		return -EINVAL;
	}

	wants_pair = strcmp(o->cmd, "switchover") == 0 || strcmp(o->cmd, "arm") == 0 ||
		     strcmp(o->cmd, "disarm") == 0 || strcmp(o->cmd, "drill") == 0 ||
		     strcmp(o->cmd, "clear-failed") == 0;
	if (wants_pair) {
		bool member = strcmp(o->cmd, "clear-failed") == 0; /* a domain name, not a pair's */

		if (npos < 2) {
			usage_error("%s: missing %s", o->cmd, member ? "MEMBER" : "PAIR");
			return -EINVAL;
		}
		o->pair = argv[optind + 1];
		if (member && (!o->pair[0] || strlen(o->pair) > PAIR_NAME_MAX || strpbrk(o->pair, "/ \t\n"))) {
			usage_error("%s: invalid member name '%s' (a domain name: 1 to %d bytes, no '/' or whitespace)",
				    o->cmd, o->pair, PAIR_NAME_MAX);
			return -EINVAL;
		}
		if (!member && !valid_pair_name(o->pair)) {
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
	    strcmp(o->cmd, "drill") != 0 && strcmp(o->cmd, "kernel") != 0) {
		usage_error("%s: --json applies only to status, events, drill and kernel", o->cmd);
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
	} else if (o->fault || o->rounds_set || o->round_timeout_set || o->report_dir) {
		usage_error("%s: --%s applies only to drill", o->cmd,
			    o->fault ? "fault" : o->rounds_set ? "rounds"
			    : o->round_timeout_set ? "round-timeout" : "report");
		return -EINVAL;
	}
	if (!o->rounds_set)
		o->rounds = 1;
	if (!o->round_timeout_set)
		o->round_timeout_s = DEFAULT_ROUND_TIMEOUT_S;

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
	else if (strcmp(o.cmd, "kernel") == 0)
		rc = cmd_kernel(&o, &c);
	else if (strcmp(o.cmd, "drill") == 0 && (o.rounds_set || o.report_dir))
		rc = cmd_drill_rounds(&o, &c);
	else if (strcmp(o.cmd, "drill") == 0)
		rc = cmd_drill(&o, &c);
	else if (strcmp(o.cmd, "clear-failed") == 0)
		rc = cmd_clear_failed(&o, &c);
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
