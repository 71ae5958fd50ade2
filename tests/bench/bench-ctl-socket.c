/* SPDX-License-Identifier: MIT */
/*
 * bench-ctl-socket.c - bench-ctl's side of failoverd's control socket: a
 * request and its reply, the pair's status, the event stream followed
 * until an event of the pair arrives, and (re)arming the pair.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <xenstore.h>

#include "bench_util.h"
#include "bench-ctl.h"

int bench_connect(const char *path, struct bench_conn *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	c->fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	c->fd = fd;
	return 0;
}

int bench_send(struct bench_conn *c, const char *line)
{
	size_t len = strlen(line), off = 0;

	while (off < len) {
		ssize_t w = write(c->fd, line + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		off += (size_t)w;
	}
	return 0;
}

/*
 * The next line from c, parsed; waits at most timeout_ms (< 0: forever).
 * -ETIMEDOUT, -EPIPE when the daemon closed, -EBADMSG on a line that is
 * not JSON.
 */
int bench_read_json(struct bench_conn *c, int timeout_ms, cJSON **ret)
{
	int64_t end = bench_now_ns() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;

		if (nl) {
			size_t n = (size_t)(nl - c->buf);
			cJSON *j;

			*nl = '\0';
			j = cJSON_Parse(c->buf);
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			if (!j)
				return -EBADMSG;
			*ret = j;
			return 0;
		}
		if (c->cap - c->len < 65536) {
			size_t cap = c->cap ? c->cap * 2 : 262144;
			char *b = realloc(c->buf, cap);
			if (!b)
				return -ENOMEM;
			c->buf = b;
			c->cap = cap;
		}
		if (timeout_ms >= 0) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
			int64_t left = (end - bench_now_ns()) / 1000000;
			int r;

			if (left <= 0)
				return -ETIMEDOUT;
			r = poll(&pfd, 1, (int)left);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			if (r == 0)
				return -ETIMEDOUT;
		}
		ssize_t got = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -EPIPE;
		c->len += (size_t)got;
	}
}

/*
 * failoverd closes a control connection that sent no request for a few
 * seconds, with a line saying so. Anything readable on the request
 * connection before a request is sent is that goodbye (or EOF): start a new
 * connection instead of reading the goodbye as the next reply.
 */
int bench_ctl_fresh(struct bench_ctx *x)
{
	struct pollfd pfd = { .fd = x->ctl.fd, .events = POLLIN };

	if (poll(&pfd, 1, 0) <= 0 && x->ctl.len == 0)
		return 0;
	close(x->ctl.fd);
	x->ctl.len = 0;
	return bench_connect(x->sock_path, &x->ctl);
}

/* One request on the control connection, its reply in *ret. */
int bench_request(struct bench_ctx *x, const char *line, cJSON **ret)
{
	int r = bench_ctl_fresh(x);

	if (r == 0)
		r = bench_send(&x->ctl, line);
	return r < 0 ? r : bench_read_json(&x->ctl, BENCH_EVENT_TIMEOUT_MS, ret);
}

const char *bench_jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

double bench_jnum(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

int bench_status(struct bench_ctx *x, struct bench_pair *ret)
{
	cJSON *reply = NULL, *pairs, *p;
	int rc = -ENOENT, r;

	r = bench_request(x, "{\"cmd\":\"status\"}\n", &reply);
	if (r < 0)
		return r;
	pairs = cJSON_GetObjectItemCaseSensitive(reply, "pairs");
	cJSON_ArrayForEach(p, pairs)
	{
		if (strcmp(bench_jstr(p, "name"), x->pair) != 0)
			continue;
		snprintf(ret->state, sizeof(ret->state), "%s", bench_jstr(p, "state"));
		snprintf(ret->active, sizeof(ret->active), "%s", bench_jstr(p, "active"));
		snprintf(ret->standby, sizeof(ret->standby), "%s", bench_jstr(p, "standby"));
		snprintf(ret->owner, sizeof(ret->owner), "%s", bench_jstr(p, "owner"));
		ret->active_domid = (int)bench_jnum(p, "active_domid", -1);
		ret->standby_domid = (int)bench_jnum(p, "standby_domid", -1);
		rc = 0;
	}
	cJSON_Delete(reply);
	return rc;
}

/* Every event read from the stream goes through here: logged, and the
 * newest id remembered (a round only accepts events newer than its start). */
void bench_note_event(struct bench_ctx *x, const cJSON *ev)
{
	double id = bench_jnum(ev, "id", 0);
	char msg[256];

	if (id > x->last_event_id)
		x->last_event_id = id;
	if (!x->events)
		return;
	snprintf(msg, sizeof(msg), "%s", bench_jstr(ev, "message"));
	for (char *c = msg; *c; c++)
		if (*c == ',' || *c == '\n' || *c == '\r')
			*c = ';';
	fprintf(x->events, "%.0f,%.0f,%s,%s,%s,%s,%s,%s,%s\n", id, bench_jnum(ev, "time_ns", 0), bench_jstr(ev, "pair"),
		bench_jstr(ev, "kind"), bench_jstr(ev, "fault"), bench_jstr(ev, "result"), bench_jstr(ev, "from"), bench_jstr(ev, "to"), msg);
	fflush(x->events);
}

/*
 * Read the stream until an event of KIND for our pair with an id above
 * after_id; a switch is copied into *sw when sw is given.
 */
int bench_wait_event(struct bench_ctx *x, const char *kind, double after_id, int timeout_ms,
			    struct bench_switch *sw)
{
	int64_t end = bench_now_ns() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		int left = (int)((end - bench_now_ns()) / 1000000);
		cJSON *line = NULL, *ev, *ph;
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = bench_read_json(&x->follow, left, &line);
		if (r == -EBADMSG)
			continue;
		if (r < 0)
			return r;
		ev = cJSON_GetObjectItemCaseSensitive(line, "event");
		if (!cJSON_IsObject(ev)) {
			cJSON_Delete(line);
			continue;
		}
		bench_note_event(x, ev);
		if (strcmp(bench_jstr(ev, "pair"), x->pair) != 0 || strcmp(bench_jstr(ev, "kind"), kind) != 0 ||
		    bench_jnum(ev, "id", 0) <= after_id) {
			cJSON_Delete(line);
			continue;
		}
		if (sw) {
			memset(sw, 0, sizeof(*sw));
			sw->id = bench_jnum(ev, "id", 0);
			sw->time_ns = (int64_t)bench_jnum(ev, "time_ns", 0);
			snprintf(sw->from, sizeof(sw->from), "%s", bench_jstr(ev, "from"));
			snprintf(sw->to, sizeof(sw->to), "%s", bench_jstr(ev, "to"));
			snprintf(sw->result, sizeof(sw->result), "%s", bench_jstr(ev, "result"));
			snprintf(sw->fault, sizeof(sw->fault), "%s", bench_jstr(ev, "fault"));
			snprintf(sw->path, sizeof(sw->path), "%s", bench_jstr(ev, "path"));
			ph = cJSON_GetObjectItemCaseSensitive(ev, "phases_us");
			for (size_t i = 0; i < BENCH_N_PHASES; i++) {
				const cJSON *v = cJSON_GetObjectItemCaseSensitive(ph, bench_phases[i]);
				sw->have_phase[i] = cJSON_IsNumber(v);
				sw->phase_us[i] = sw->have_phase[i] ? v->valuedouble : 0;
			}
		}
		cJSON_Delete(line);
		return 0;
	}
}

/*
 * Arm the pair again after a round's fault. The member that "failed" only
 * had its agent told to stop, and has been told "none" again: it is
 * repaired, which is what `clear-failed` tells failoverd (it keeps a
 * failed member out of the standby role until then).
 */
int bench_arm(struct bench_ctx *x, const struct bench_pair *st)
{
	const char *members[2] = { st->active, st->standby };
	char req[160];
	cJSON *reply = NULL;
	int r;

	for (int m = 0; m < 2; m++) {
		if (!members[m][0])
			continue;
		snprintf(req, sizeof(req), "{\"cmd\":\"clear-failed\",\"member\":\"%s\"}\n", members[m]);
		r = bench_request(x, req, &reply);
		if (r < 0)
			return r;
		cJSON_Delete(reply);
		reply = NULL;
	}
	snprintf(req, sizeof(req), "{\"cmd\":\"arm\",\"pair\":\"%s\"}\n", x->pair);
	r = bench_request(x, req, &reply);
	if (r < 0)
		return r;
	r = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")) ? 0 : -EIO;
	cJSON_Delete(reply);
	return r;
}

/* Until the pair is ARMED (and held by --owner); a pair left DEGRADED or
 * DISARMED (by a spurious failover under load, or an earlier failed round)
 * is restored first. */
int bench_ensure_armed(struct bench_ctx *x, struct bench_pair *ret)
{
	int64_t end = bench_now_ns() + (int64_t)BENCH_ARMED_TIMEOUT_MS * 1000000;
	bool restored = false;
	int r;

	for (;;) {
		r = bench_status(x, ret);
		if (r < 0)
			return r;
		if (!strcmp(ret->state, "ARMED") && (!x->owner || !strcmp(ret->owner, x->owner)))
			return 0;
		if (!restored && (!strcmp(ret->state, "DEGRADED") || !strcmp(ret->state, "DISARMED"))) {
			fprintf(stderr, "bench-ctl: pair %s is %s; restoring\n", x->pair, ret->state);
			bench_xs_control(x, ret->active_domid, "none");
			bench_xs_control(x, ret->standby_domid, "none");
			r = bench_arm(x, ret);
			if (r < 0)
				return r;
			restored = true;
			continue;
		}
		if (bench_now_ns() > end)
			return -ETIMEDOUT;
		bench_sleep_ms(20);
	}
}
