/* SPDX-License-Identifier: MIT */
#include "control.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/text.h"
#include "proto/event_json.h"

#define FO_CONTROL_MAX_CLIENTS 32
/* Slots only root may take: however many connections other users hold
 * open, the operator can always get in (and, with every slot taken, root
 * closes the oldest idle connection instead of being refused). */
#define FO_CONTROL_ROOT_SLOTS 2
/* Big enough for the whole event ring as one reply. */
#define FO_CONTROL_OUT_MAX (512 * 1024)
/* A client's share of one loop turn; then the loop serves the real-time
 * fds and the other clients before this one continues (fo_loop_again). */
#define FO_CONTROL_TURN_REQUESTS 4
#define FO_CONTROL_TURN_BYTES (2 * FO_CONTROL_LINE_MAX)
/* A connection with no complete request for this long is closed (unless
 * it follows events or waits for a drill). */
#define FO_CONTROL_IDLE_MS 5000

struct fo_client {
	int fd; /* -1 = free slot */
	char in[FO_CONTROL_LINE_MAX + 1]; /* the longest request and its newline */
	size_t in_len;
	char *out;
	size_t out_len;
	bool follow;         /* events --follow */
	/* The pair whose drill it waits for ("" = none), by name: a reload may
	 * move the pair to another index meanwhile. */
	char drill_pair[FO_NAME_MAX + 1];
	bool closing;        /* close once `out` is flushed; read nothing more */
	bool root;           /* SO_PEERCRED uid 0 */
	bool admin;          /* root or in control_admin_group: may change things */
	uint64_t since_ns;   /* connected, or its last complete request (CLOCK_MONOTONIC) */
};

struct fo_control {
	struct fo_loop *loop;
	struct fo_manager *mgr;
	int listen_fd;
	int tick_fd;         /* idle sweep, accept back-off; armed while needed */
	bool tick_armed;
	int spare_fd;        /* /dev/null, closed to make room when out of fds */
	bool accept_paused;  /* out of fds and no spare: listener out of epoll */
	bool fd_warned;      /* "out of file descriptors" said once */
	uint64_t idle_ns;
	bool have_admin_gid;
	gid_t admin_gid;
	char path[FO_PATH_MAX];
	struct fo_client clients[FO_CONTROL_MAX_CLIENTS];
	struct {
		uint64_t accept_errors; /* accept4 out of fds (or memory) */
		uint64_t refused;       /* no slot for the client */
		uint64_t idle_closed;   /* idle timeout, or evicted for root */
		uint64_t oversized;     /* request line over FO_CONTROL_LINE_MAX */
	} stats;
};

/* The control socket lives in real time, not the backend's (virtual, in
 * the simulator) clock. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void client_close(struct fo_control *c, struct fo_client *cl)
{
	fo_loop_remove(c->loop, cl->fd);
	close(cl->fd);
	free(cl->out);
	cl->out = NULL;
	cl->fd = -1;
}

static void client_flush(struct fo_control *c, struct fo_client *cl)
{
	while (cl->out_len) {
		ssize_t n = send(cl->fd, cl->out, cl->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			client_close(c, cl);
			return;
		}
		memmove(cl->out, cl->out + n, cl->out_len - (size_t)n);
		cl->out_len -= (size_t)n;
	}
	if (!cl->out_len && cl->closing) {
		client_close(c, cl);
		return;
	}
	fo_loop_modify(c->loop, cl->fd, (cl->closing ? 0 : EPOLLIN) | (cl->out_len ? EPOLLOUT : 0));
}

/* Queue one reply line. A client that lets FO_CONTROL_OUT_MAX pile up is
 * not reading: it is dropped rather than allowed to hold our memory. */
static void client_send(struct fo_control *c, struct fo_client *cl, const char *line)
{
	size_t n = strlen(line);

	if (cl->out_len + n + 1 > FO_CONTROL_OUT_MAX) {
		fo_warn("control: dropping a client that does not read its replies");
		client_close(c, cl);
		return;
	}
	memcpy(cl->out + cl->out_len, line, n);
	cl->out[cl->out_len + n] = '\n';
	cl->out_len += n + 1;
	client_flush(c, cl);
}

static void send_json(struct fo_control *c, struct fo_client *cl, cJSON *obj)
{
	char *s = cJSON_PrintUnformatted(obj);

	if (s) {
		client_send(c, cl, s);
		free(s);
	}
}

static cJSON *error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *error_reply(const char *fmt, ...)
{
	cJSON *o = cJSON_CreateObject();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON_AddFalseToObject(o, "ok");
	cJSON_AddStringToObject(o, "error", msg);
	return o;
}

static cJSON *ok_reply(void)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddTrueToObject(o, "ok");
	return o;
}

static cJSON *event_json(const struct fo_event *e)
{
	struct fo_proto_event v;

	fo_event_view(e, &v);
	return fo_proto_event_json(&v);
}

/* libfoguest: the application's cycle and the state handover (null when
 * the active runs a plain agent / the backend relays nothing). */
static void add_state_handover(cJSON *po, struct fo_hv *hv, const struct fo_pair *p)
{
	const struct fo_member *a = fo_pair_active((struct fo_pair *)p), *s = fo_pair_standby((struct fo_pair *)p);
	struct fo_hv_state_info ai, si;
	bool have_a, have_s;
	cJSON *st;

	if (a->hb.ext)
		cJSON_AddNumberToObject(po, "app_cycle", (double)a->hb.app_cycle);
	else
		cJSON_AddNullToObject(po, "app_cycle");
	cJSON_AddNumberToObject(po, "deadline_misses", (double)a->hb.deadline_misses);
	have_a = hv->ops->state_info && a->domid != FO_DOMID_INVALID && hv->ops->state_info(hv, a->domid, &ai);
	have_s = hv->ops->state_info && s->domid != FO_DOMID_INVALID && hv->ops->state_info(hv, s->domid, &si);
	if (!have_a && !have_s) {
		cJSON_AddNullToObject(po, "state_handover");
		return;
	}
	st = cJSON_AddObjectToObject(po, "state_handover");
	/* what the standby would restore now, and how far behind it is */
	if (have_s && si.relayed) {
		cJSON_AddNumberToObject(st, "standby_cycle", (double)si.state_cycle);
		if (a->hb.ext && a->hb.app_cycle >= si.state_cycle)
			cJSON_AddNumberToObject(st, "state_age_cycles", (double)(a->hb.app_cycle - si.state_cycle));
		else
			cJSON_AddNullToObject(st, "state_age_cycles");
	} else {
		cJSON_AddNullToObject(st, "standby_cycle");
		cJSON_AddNullToObject(st, "state_age_cycles");
	}
	cJSON_AddNumberToObject(st, "rejected", have_a ? (double)ai.rejected : 0);
	if (have_a && ai.takeover) {
		cJSON *t = cJSON_AddObjectToObject(st, "last_takeover");

		cJSON_AddStringToObject(t, "new_active", a->name);
		cJSON_AddNumberToObject(t, "time_ns", (double)ai.takeover_ns);
		cJSON_AddNumberToObject(t, "handed_cycle", (double)ai.handed_cycle);
		cJSON_AddNumberToObject(t, "old_last_cycle", (double)ai.old_last_cycle);
		cJSON_AddNumberToObject(t, "cycles_lost", (double)ai.cycles_lost);
		if (a->hb.ext && a->hb.restore_result) {
			static const char *const res[] = { "not-yet", "ok", "none", "corrupt", "too-old" };

			cJSON_AddStringToObject(t, "restore", a->hb.restore_result < 5 ? res[a->hb.restore_result] : "?");
			cJSON_AddNumberToObject(t, "restored_cycle", (double)a->hb.restored_cycle);
		}
	} else {
		cJSON_AddNullToObject(st, "last_takeover");
	}
}

static cJSON *status_json(struct fo_control *c)
{
	struct fo_hv *hv = fo_manager_hv(c->mgr);
	uint64_t now = hv->ops->now_ns(hv);
	cJSON *o = ok_reply(), *arr = cJSON_AddArrayToObject(o, "pairs");
	/* One backend serves every pair; said per pair so that a pair's line
	 * is complete on its own. */
	const char *path = hv->ops->switch_path ? hv->ops->switch_path(hv) : NULL;

	for (size_t i = 0; i < fo_manager_pair_count(c->mgr); i++) {
		struct fo_pair *p = fo_manager_pair(c->mgr, i);
		struct fo_member *a = fo_pair_active(p), *s = fo_pair_standby(p);
		cJSON *po = cJSON_CreateObject();
		const uint64_t *last = p->stats.last_switch_ns;

		cJSON_AddStringToObject(po, "name", p->cfg.name);
		cJSON_AddStringToObject(po, "state", fo_pair_state_name(p->state));
		cJSON_AddStringToObject(po, "reason", p->reason);
		cJSON_AddStringToObject(po, "active", a->name);
		cJSON_AddNumberToObject(po, "active_domid", a->domid == FO_DOMID_INVALID ? -1 : (double)a->domid);
		cJSON_AddStringToObject(po, "active_state", fo_dom_state_name(a->state));
		cJSON_AddStringToObject(po, "standby", s->name);
		cJSON_AddNumberToObject(po, "standby_domid", s->domid == FO_DOMID_INVALID ? -1 : (double)s->domid);
		cJSON_AddStringToObject(po, "standby_state", fo_dom_state_name(s->state));
		cJSON_AddNumberToObject(po, "switches", (double)p->stats.switches);
		if (path)
			cJSON_AddStringToObject(po, "switch_path", path);
		else
			cJSON_AddNullToObject(po, "switch_path");
		/* true: the kernel module owns heartbeat-loss switching of this
		 * pair right now (ARMed there); failoverd watches. */
		cJSON_AddBoolToObject(po, "kernel_armed", p->kernel_armed);
		if (p->kernel_ok)
			cJSON_AddNumberToObject(po, "kernel_pair_id", (double)p->kernel_id);
		cJSON_AddNumberToObject(po, "kernel_switches", (double)p->kernel_switches);
		if (p->stats.switches) {
			cJSON_AddNumberToObject(po, "last_switch_us",
						(double)((last[FO_PHASE_UNPAUSE_DONE] - last[FO_PHASE_FAULT]) / 1000));
			cJSON_AddNumberToObject(po, "last_switch_age_s",
						(double)((now - p->stats.last_switch_time_ns) / 1000000000ull));
		} else {
			cJSON_AddNullToObject(po, "last_switch_us");
			cJSON_AddNullToObject(po, "last_switch_age_s");
		}
		if (a->hb.progressed)
			cJSON_AddNumberToObject(po, "heartbeat_age_ms",
						(double)((now - a->hb.last_progress_ns) / 1000000ull));
		else
			cJSON_AddNullToObject(po, "heartbeat_age_ms");
		cJSON_AddNumberToObject(po, "heartbeats", (double)a->hb.beats);
		cJSON_AddNumberToObject(po, "heartbeat_invalid", (double)(a->hb.invalid + s->hb.invalid));
		/* "none": the pair asks for no placement; "unverified": not
		 * armed yet; "ok" / "drift" (placement_detail says what). */
		cJSON_AddStringToObject(po, "placement",
					!(p->cfg.pin.cpupool[0] || p->cfg.pin.n_active_pcpus || p->cfg.pin.n_standby_pcpus)
						? "none"
						: !p->placement_checked ? "unverified" : p->placement_drift ? "drift" : "ok");
		cJSON_AddStringToObject(po, "placement_detail", p->placement);
		add_state_handover(po, hv, p);
		cJSON_AddItemToArray(arr, po);
	}
	{
		const struct fo_config *cfg = fo_manager_config(c->mgr);
		const char *detail = "";
		bool ok = fo_manager_host_placement(c->mgr, &detail);
		cJSON *h = cJSON_AddObjectToObject(o, "host_placement");

		/* The pools and failoverd's own dom0 vCPU. */
		cJSON_AddStringToObject(h, "state", !(cfg->n_cpupools || cfg->daemon.dom0_vcpu_pcpu >= 0) ? "none"
						   : ok ? "ok" : detail[0] ? "drift" : "unverified");
		cJSON_AddStringToObject(h, "detail", detail);
	}
	return o;
}

/* What the kernel module has armed (LIST), whoever armed it, with the
 * configured pair that owns each id (null: an orphan, which failoverd
 * disarms at start and reload; seeing one here means it appeared since). */
static cJSON *kernel_json(struct fo_control *c)
{
	struct fo_hv *hv = fo_manager_hv(c->mgr);
	struct fo_hv_karm k[64];
	uint64_t now = hv->ops->now_ns(hv);
	cJSON *o, *arr;
	int n;

	if (!hv->ops->kernel_list)
		return error_reply("kernel: the kernel module is not in use (daemon.kernel_fast_path, %s)",
				   "/dev/fo_switch");
	n = hv->ops->kernel_list(hv, k, sizeof(k) / sizeof(k[0]));
	if (n == -EOPNOTSUPP)
		return error_reply("kernel: the loaded kernel module has no LIST (older than this failoverd)");
	if (n < 0)
		return error_reply("kernel: listing the kernel module's pairs: %s", strerror(-n));
	o = ok_reply();
	cJSON_AddNumberToObject(o, "armed", n);
	arr = cJSON_AddArrayToObject(o, "pairs");
	for (int i = 0; i < n && i < (int)(sizeof(k) / sizeof(k[0])); i++) {
		cJSON *po = cJSON_CreateObject();
		const char *owner = NULL;

		for (size_t j = 0; j < fo_manager_pair_count(c->mgr); j++) {
			struct fo_pair *p = fo_manager_pair(c->mgr, j);
			if (p->kernel_ok && p->kernel_id == k[i].pair_id)
				owner = p->cfg.name;
		}
		cJSON_AddNumberToObject(po, "pair_id", (double)k[i].pair_id);
		if (owner)
			cJSON_AddStringToObject(po, "pair", owner);
		else
			cJSON_AddNullToObject(po, "pair");
		cJSON_AddNumberToObject(po, "active_domid", (double)k[i].active);
		cJSON_AddNumberToObject(po, "standby_domid", (double)k[i].standby);
		cJSON_AddStringToObject(po, "state", k[i].firing ? "firing" : "armed");
		cJSON_AddNumberToObject(po, "timeout_ms", (double)(k[i].timeout_ns / 1000000ull));
		cJSON_AddNumberToObject(po, "notifications", (double)k[i].notifications);
		cJSON_AddNumberToObject(po, "last_notify_age_ms",
					now > k[i].last_notify_ns ? (double)((now - k[i].last_notify_ns) / 1000000ull) : 0);
		cJSON_AddItemToArray(arr, po);
	}
	return o;
}

static cJSON *events_json(struct fo_control *c)
{
	const struct fo_event_ring *r = fo_manager_events(c->mgr);
	cJSON *o = ok_reply(), *arr = cJSON_AddArrayToObject(o, "events");

	for (size_t i = 0; i < fo_event_ring_count(r); i++) {
		const struct fo_event *e = fo_event_ring_get(r, i);
		if (!e->pending)
			cJSON_AddItemToArray(arr, event_json(e));
	}
	return o;
}

/* The manager's families, then the control socket's own counters. */
static cJSON *metrics_json(struct fo_control *c)
{
	static char text[64 * 1024];
	size_t n = fo_manager_metrics(c->mgr, text, sizeof(text));
	cJSON *reply;

	snprintf(text + n, sizeof(text) - n,
		 "# HELP failoverd_control_accept_errors_total Connections that could not be accepted "
		 "(out of file descriptors).\n"
		 "# TYPE failoverd_control_accept_errors_total counter\n"
		 "failoverd_control_accept_errors_total %" PRIu64 "\n"
		 "# HELP failoverd_control_refused_total Connections refused: every client slot taken.\n"
		 "# TYPE failoverd_control_refused_total counter\n"
		 "failoverd_control_refused_total %" PRIu64 "\n"
		 "# HELP failoverd_control_idle_closed_total Connections closed for idling.\n"
		 "# TYPE failoverd_control_idle_closed_total counter\n"
		 "failoverd_control_idle_closed_total %" PRIu64 "\n"
		 "# HELP failoverd_control_oversized_total Connections closed for a request line too long.\n"
		 "# TYPE failoverd_control_oversized_total counter\n"
		 "failoverd_control_oversized_total %" PRIu64 "\n"
		 "# HELP failoverd_log_dropped_total Log lines lost to a full log queue (journald or stderr slow).\n"
		 "# TYPE failoverd_log_dropped_total counter\n"
		 "failoverd_log_dropped_total %lu\n",
		 c->stats.accept_errors, c->stats.refused, c->stats.idle_closed, c->stats.oversized, fo_log_dropped());
	reply = ok_reply();
	cJSON_AddStringToObject(reply, "text", text);
	return reply;
}

/* ---- requests ------------------------------------------------------------ */

static int req_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int req_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool is_json_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* The text around the JSON: what cJSON would accept but must not pass. */
static int check_request_text(const char *line, size_t len, char *err, size_t errlen)
{
	long at;

	if (len > FO_CONTROL_LINE_MAX)
		return req_fail(err, errlen, "request longer than %d bytes", FO_CONTROL_LINE_MAX);
	if (memchr(line, '\0', len))
		return req_fail(err, errlen, "request contains a NUL byte (at byte %zu)",
				(size_t)((const char *)memchr(line, '\0', len) - line));
	at = fo_text_utf8_invalid_at(line, len);
	if (at >= 0)
		return req_fail(err, errlen, "request is not valid UTF-8 (at byte %ld)", at);
	/* cJSON would hand out "brake-a\u0000evil" as "brake-a". */
	at = fo_text_json_nul_escape_at(line, len);
	if (at >= 0)
		return req_fail(err, errlen, "request: \\u0000 (NUL) in a string (at byte %ld) is not allowed", at);
	return 0;
}

/* Keys: each known to this command. */
static int check_request_keys(const cJSON *req, const char *cmd, const char *const *allowed, char *err,
			      size_t errlen)
{
	char shown[FO_SHOWN_BUF];

	for (const cJSON *it = req->child; it; it = it->next) {
		bool known = false;

		for (const char *const *a = allowed; *a; a++)
			known = known || strcmp(it->string, *a) == 0;
		if (!known)
			return req_fail(err, errlen, "%s: unknown key \"%s\"", cmd, fo_text_shown(it->string, shown));
	}
	return 0;
}

static int parse_request_object(const cJSON *o, struct fo_request *req, char *err, size_t errlen)
{
	static const char *const pair_keys[] = { "cmd", "pair", NULL };
	static const char *const cmd_keys[] = { "cmd", NULL };
	static const char *const events_keys[] = { "cmd", "follow", NULL };
	static const char *const drill_keys[] = { "cmd", "pair", "fault", NULL };
	static const char *const member_keys[] = { "cmd", "member", NULL };
	const cJSON *jcmd, *jpair, *jf;
	char shown[FO_SHOWN_BUF];
	const char *cmd;
	enum fo_request_cmd parsed;
	int r;

	if (!cJSON_IsObject(o))
		return req_fail(err, errlen, "request must be a JSON object");
	/* Each key once: cJSON keeps duplicates and its lookup finds the
	 * first, so a second "pair" would be silently ignored and the request
	 * would not mean what it says. First: "cmd" may be the one doubled. */
	for (const cJSON *it = o->child; it; it = it->next)
		for (const cJSON *prev = o->child; prev != it; prev = prev->next)
			if (strcmp(prev->string, it->string) == 0)
				return req_fail(err, errlen, "request: duplicate key \"%s\"",
						fo_text_shown(it->string, shown));
	jcmd = cJSON_GetObjectItemCaseSensitive(o, "cmd");
	if (!cJSON_IsString(jcmd))
		return req_fail(err, errlen, "request: \"cmd\" must be a string");
	cmd = jcmd->valuestring;
	if (fo_request_cmd_parse(cmd, &parsed) < 0)
		return req_fail(err, errlen,
				"unknown cmd \"%s\" (status, switchover, arm, disarm, events, metrics, kernel, drill, "
				"clear-failed)",
				fo_text_shown(cmd, shown));
	memset(req, 0, sizeof(*req));
	req->cmd = parsed;
	r = check_request_keys(o, cmd,
			       req->cmd == FO_REQ_DRILL		  ? drill_keys
			       : req->cmd == FO_REQ_CLEAR_FAILED ? member_keys
			       : fo_request_arg(req->cmd) == FO_REQ_ARG_PAIR ? pair_keys
			       : req->cmd == FO_REQ_EVENTS ? events_keys
							   : cmd_keys,
			       err, errlen);
	if (r < 0)
		return r;
	if (fo_request_arg(req->cmd) == FO_REQ_ARG_PAIR) {
		jpair = cJSON_GetObjectItemCaseSensitive(o, "pair");
		if (!cJSON_IsString(jpair))
			return req_fail(err, errlen, "%s: \"pair\" must be a string", cmd);
		/* Longer than any pair name can be: no such pair. */
		if (strlen(jpair->valuestring) > FO_NAME_MAX)
			return req_fail(err, errlen, "%s: no pair named \"%s\"", cmd,
					fo_text_shown(jpair->valuestring, shown));
		snprintf(req->pair, sizeof(req->pair), "%s", jpair->valuestring);
	}
	if (req->cmd == FO_REQ_CLEAR_FAILED) {
		jf = cJSON_GetObjectItemCaseSensitive(o, "member");
		if (!cJSON_IsString(jf))
			return req_fail(err, errlen, "clear-failed: \"member\" must be a string");
		if (strlen(jf->valuestring) > FO_NAME_MAX)
			return req_fail(err, errlen, "clear-failed: no pair has a member named \"%s\"",
					fo_text_shown(jf->valuestring, shown));
		snprintf(req->member, sizeof(req->member), "%s", jf->valuestring);
	}
	if (req->cmd == FO_REQ_EVENTS) {
		jf = cJSON_GetObjectItemCaseSensitive(o, "follow");
		if (jf && !cJSON_IsBool(jf))
			return req_fail(err, errlen, "events: \"follow\" must be true or false");
		req->follow = cJSON_IsTrue(jf);
	}
	if (req->cmd == FO_REQ_DRILL) {
		jf = cJSON_GetObjectItemCaseSensitive(o, "fault");
		if (!cJSON_IsString(jf) || fo_drill_kind_parse(jf->valuestring, &req->fault) < 0)
			return req_fail(err, errlen, "drill: \"fault\" must be one of " FO_PROTO_DRILL_FAULTS_TEXT);
	}
	return 0;
}

int fo_control_parse_request(const char *line, size_t len, struct fo_request *req, char *err, size_t errlen)
{
	const char *end = NULL;
	char shown[FO_SHOWN_BUF];
	cJSON *o;
	size_t at;
	int r;

	r = check_request_text(line, len, err, errlen);
	if (r < 0)
		return r;
	o = cJSON_ParseWithLengthOpts(line, len, &end, false);
	if (!o)
		return req_fail(err, errlen, "request is not valid JSON");
	/* One object per line: `{"cmd":"status"}{"cmd":"disarm",...}` must
	 * not quietly drop the disarm. */
	at = (size_t)(end - line);
	while (at < len && is_json_space(line[at]))
		at++;
	if (at < len)
		r = req_fail(err, errlen, "request: text after the JSON object at byte %zu: \"%s\"", at,
			     fo_text_shown_n(line + at, len - at, shown));
	else
		r = parse_request_object(o, req, err, errlen);
	cJSON_Delete(o);
	return r;
}

/* failoverctl clear-failed MEMBER: the operator repaired it; its failure
 * verdict goes. The pair is not re-armed here: `arm` does that. */
static cJSON *clear_failed_json(struct fo_control *c, const char *member)
{
	struct fo_pair *p = NULL;
	char msg[256], shown[FO_SHOWN_BUF];
	cJSON *o;
	int n;

	n = fo_manager_clear_failed(c->mgr, member, &p);
	if (n < 0)
		return error_reply("clear-failed: no pair has a member named \"%s\"", fo_text_shown(member, shown));
	snprintf(msg, sizeof(msg), n ? "failure verdict on %s cleared; `failoverctl arm %s` adopts it"
				     : "no failure recorded for %s (pair %s)",
		 member, p->cfg.name);
	o = ok_reply();
	cJSON_AddStringToObject(o, "pair", p->cfg.name);
	cJSON_AddBoolToObject(o, "cleared", n > 0);
	cJSON_AddStringToObject(o, "message", msg);
	return o;
}

/* Returns the reply, or NULL when the reply is deferred (a drill). A NULL
 * client is the daemon's own (tests): it has every right. */
static cJSON *handle_request(struct fo_control *c, struct fo_client *cl, const char *line, size_t len)
{
	struct fo_request req;
	struct fo_pair *p = NULL;
	const char *cmd;
	char err[512], shown[FO_SHOWN_BUF];
	cJSON *reply;

	if (fo_control_parse_request(line, len, &req, err, sizeof(err)) < 0)
		return error_reply("%s", err);
	cmd = fo_request_cmd_name(req.cmd);
	if (cl && !cl->admin && fo_request_needs_admin(req.cmd))
		return error_reply("%s: permission denied: needs root or a member of daemon.control_admin_group "
				   "(status, events, metrics and kernel are open to every user of the socket)",
				   cmd);
	if (fo_request_arg(req.cmd) == FO_REQ_ARG_PAIR) {
		p = fo_manager_find_pair(c->mgr, req.pair);
		if (!p)
			return error_reply("%s: no pair named \"%s\"", cmd, fo_text_shown(req.pair, shown));
	}

	switch (req.cmd) {
	case FO_REQ_STATUS:
		return status_json(c);
	case FO_REQ_EVENTS:
		reply = events_json(c);
		if (cl && req.follow)
			cl->follow = true;
		return reply;
	case FO_REQ_KERNEL:
		return kernel_json(c);
	case FO_REQ_METRICS:
		return metrics_json(c);
	case FO_REQ_SWITCHOVER: {
		/* How long the loop was busy with it before the reply: the
		 * fenced switch plus whatever else runs synchronously after it. */
		struct fo_hv *hv = fo_manager_hv(c->mgr);
		uint64_t t0 = hv->ops->now_ns(hv);
		reply = fo_pair_request_switchover(p, err, sizeof(err)) < 0 ? error_reply("switchover: %s", err)
									     : ok_reply();
		fo_debug("control: switchover %s handled in %llu us", p->cfg.name,
			 (unsigned long long)((hv->ops->now_ns(hv) - t0) / 1000));
		return reply;
	}
	case FO_REQ_ARM:
	case FO_REQ_DISARM:
		/*
		 * Refused, not deferred, while SWITCHING: the switch's event is
		 * pending until the new active's first heartbeat (or grace)
		 * completes it, and a drill waits on that event. Re-arming or
		 * disarming in between dropped the deadline that completes it,
		 * leaving the event pending and the drill flag set for ever.
		 * The switch ends within grace_ms; the operator (or the lab's
		 * scripts) retries then, which keeps pair.c's state machine the
		 * one place where SWITCHING ends.
		 */
		if (p->state == FO_PAIR_SWITCHING)
			return error_reply("%s: pair is switching, retry (a switch ends within grace_ms)", cmd);
		if (req.cmd == FO_REQ_DISARM) {
			fo_pair_disarm(p);
			return ok_reply();
		}
		fo_pair_arm(p);
		reply = ok_reply();
		cJSON_AddStringToObject(reply, "state", fo_pair_state_name(p->state));
		cJSON_AddStringToObject(reply, "reason", p->reason);
		return reply;
	case FO_REQ_DRILL:
		if (fo_pair_request_drill(p, req.fault, err, sizeof(err)) < 0)
			return error_reply("drill: %s", err);
		if (cl) {
			snprintf(cl->drill_pair, sizeof(cl->drill_pair), "%s", p->cfg.name);
			return NULL;
		}
		reply = ok_reply();
		cJSON_AddTrueToObject(reply, "deferred");
		return reply;
	case FO_REQ_CLEAR_FAILED:
		return clear_failed_json(c, req.member);
	}
	return error_reply("unknown cmd");
}

size_t fo_control_handle_line(struct fo_control *c, const char *line, char *buf, size_t len)
{
	cJSON *reply = handle_request(c, NULL, line, strlen(line));
	char *s = reply ? cJSON_PrintUnformatted(reply) : NULL;
	size_t n = 0;

	if (s)
		n = (size_t)snprintf(buf, len, "%s", s);
	else if (len)
		buf[0] = '\0';
	free(s);
	cJSON_Delete(reply);
	return n;
}

static void client_handle_line(struct fo_control *c, struct fo_client *cl, const char *line, size_t len)
{
	cJSON *reply = handle_request(c, cl, line, len);

	if (reply) {
		send_json(c, cl, reply);
		cJSON_Delete(reply);
	}
}

/* Tell the client why, then close once that is sent. */
static void client_end(struct fo_control *c, struct fo_client *cl, const char *why)
{
	cJSON *err = error_reply("%s", why);

	send_json(c, cl, err);
	cJSON_Delete(err);
	if (cl->fd >= 0) {
		cl->closing = true;
		client_flush(c, cl);
	}
}

/* One turn's share: at most FO_CONTROL_TURN_REQUESTS requests and
 * FO_CONTROL_TURN_BYTES read, then back to the loop (fo_loop_again): a
 * client pipelining requests can no longer hold the loop for as long as it
 * sends. A line that does not fit the buffer is an error and the end of
 * the connection: skipping it would let one endless line hold us. */
static void client_serve(struct fo_control *c, struct fo_client *cl)
{
	unsigned requests = 0;
	size_t bytes = 0;
	char msg[96];

	for (;;) {
		char *nl;

		while (cl->fd >= 0 && !cl->closing && (nl = memchr(cl->in, '\n', cl->in_len))) {
			size_t n = (size_t)(nl - cl->in);

			if (requests++ == FO_CONTROL_TURN_REQUESTS) {
				fo_loop_again(c->loop, cl->fd);
				return;
			}
			cl->since_ns = mono_ns();
			client_handle_line(c, cl, cl->in, n);
			if (cl->fd < 0)
				return;
			memmove(cl->in, nl + 1, cl->in_len - n - 1);
			cl->in_len -= n + 1;
		}
		if (cl->fd < 0 || cl->closing)
			return;
		if (cl->in_len == sizeof(cl->in)) {
			c->stats.oversized++;
			snprintf(msg, sizeof(msg), "request longer than %d bytes; closing the connection",
				 FO_CONTROL_LINE_MAX);
			client_end(c, cl, msg);
			return;
		}
		if (bytes >= FO_CONTROL_TURN_BYTES) {
			fo_loop_again(c->loop, cl->fd);
			return;
		}
		ssize_t k = recv(cl->fd, cl->in + cl->in_len, sizeof(cl->in) - cl->in_len, MSG_DONTWAIT);
		if (k == 0) {
			/* The client finished sending: what it asked is answered. */
			cl->closing = true;
			client_flush(c, cl);
			return;
		}
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				client_close(c, cl);
			return;
		}
		bytes += (size_t)k;
		cl->in_len += (size_t)k;
	}
}

static void on_client(void *ctx, int fd, uint32_t events)
{
	struct fo_control *c = ctx;
	struct fo_client *cl = NULL;

	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i].fd == fd)
			cl = &c->clients[i];
	if (!cl)
		return;
	if (events & EPOLLOUT) {
		client_flush(c, cl);
		if (cl->fd < 0)
			return;
	}
	if (cl->closing) {
		if (events & (EPOLLHUP | EPOLLERR))
			client_close(c, cl);
		return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		client_serve(c, cl);
}

/* ---- connections ------------------------------------------------------- */

static void tick_arm(struct fo_control *c)
{
	/* A quarter of the idle timeout, at most a second: an idle client is
	 * closed within 1.25 x the timeout. */
	uint64_t ns = c->idle_ns / 4 < 1000000000ull ? c->idle_ns / 4 : 1000000000ull;
	struct itimerspec its;

	if (c->tick_armed)
		return;
	if (ns < 1000000)
		ns = 1000000;
	its.it_interval.tv_sec = its.it_value.tv_sec = (time_t)(ns / 1000000000ull);
	its.it_interval.tv_nsec = its.it_value.tv_nsec = (long)(ns % 1000000000ull);
	if (timerfd_settime(c->tick_fd, 0, &its, NULL) == 0)
		c->tick_armed = true;
}

static void refuse(int fd, const char *why)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%s\"}\n", why);

	(void)!send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

static void on_tick(void *ctx, int fd, uint32_t events)
{
	struct fo_control *c = ctx;
	uint64_t exp, now = mono_ns();
	bool any = false;
	char msg[128];

	(void)!read(fd, &exp, sizeof(exp));
	if (c->accept_paused && fo_loop_modify(c->loop, c->listen_fd, EPOLLIN) == 0)
		c->accept_paused = false;
	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++) {
		struct fo_client *cl = &c->clients[i];

		if (cl->fd < 0)
			continue;
		any = true;
		/* Followers and drill waiters are quiet by design. */
		if (cl->follow || cl->drill_pair[0] || cl->closing || now - cl->since_ns < c->idle_ns)
			continue;
		c->stats.idle_closed++;
		snprintf(msg, sizeof(msg), "closing an idle connection: no complete request in %" PRIu64 " ms",
			 (uint64_t)(c->idle_ns / 1000000ull));
		client_end(c, cl, msg);
	}
	if (!any && !c->accept_paused) {
		struct itimerspec off = { { 0, 0 }, { 0, 0 } };
		timerfd_settime(c->tick_fd, 0, &off, NULL);
		c->tick_armed = false;
	}
}

/*
 * Out of file descriptors (EMFILE/ENFILE): the connection stays in the
 * backlog and the listener readable, so returning would bring us straight
 * back: a spin at SCHED_FIFO. The spare descriptor is given up to accept
 * the connection and close it with a reason, then taken again; without a
 * spare (the whole system is out), the listener leaves epoll until the
 * next tick. Said once until an accept works again, counted in metrics.
 */
static void accept_out_of_fds(struct fo_control *c, int err)
{
	int cfd = -1;

	c->stats.accept_errors++;
	if (!c->fd_warned) {
		fo_warn("control: cannot accept a client: %s; refusing clients until descriptors are free "
			"(failoverd_control_accept_errors_total counts them)", strerror(err));
		c->fd_warned = true;
	}
	if (c->spare_fd >= 0) {
		close(c->spare_fd);
		cfd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd >= 0)
			refuse(cfd, "failoverd is out of file descriptors");
		c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (cfd < 0 || c->spare_fd < 0) {
		fo_loop_modify(c->loop, c->listen_fd, 0);
		c->accept_paused = true;
		tick_arm(c);
	}
}

static bool peer_in_group(int fd, gid_t primary, gid_t gid)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (primary == gid)
		return true;
	/* The peer's supplementary groups as of its connect(), from the
	 * kernel: no NSS lookup on the loop. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* A slot for a new client: never one of the last FO_CONTROL_ROOT_SLOTS
 * unless it is root; for root with every slot taken, the oldest idle
 * connection's (not a follower's, not a drill's). */
static struct fo_client *take_slot(struct fo_control *c, bool root)
{
	static const char evicted[] = "{\"ok\":false,\"error\":\"closing an idle connection: its slot is "
				      "needed by root\"}\n";
	struct fo_client *free_slot = NULL, *oldest = NULL;
	int n_free = 0;

	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++) {
		struct fo_client *cl = &c->clients[i];

		if (cl->fd < 0) {
			n_free++;
			free_slot = free_slot ? free_slot : cl;
		} else if (!cl->follow && !cl->drill_pair[0] && (!oldest || cl->since_ns < oldest->since_ns)) {
			oldest = cl;
		}
	}
	if (free_slot && (root || n_free > FO_CONTROL_ROOT_SLOTS))
		return free_slot;
	if (!root || !oldest)
		return NULL;
	c->stats.idle_closed++;
	(void)!send(oldest->fd, evicted, sizeof(evicted) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	client_close(c, oldest);
	return oldest;
}

static void admit(struct fo_control *c, int cfd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct fo_client *cl;

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		refuse(cfd, "cannot read the client's credentials");
		return;
	}
	cl = take_slot(c, cred.uid == 0);
	if (!cl) {
		c->stats.refused++;
		refuse(cfd, "too many control clients");
		return;
	}
	memset(cl, 0, sizeof(*cl));
	cl->fd = -1;
	cl->out = malloc(FO_CONTROL_OUT_MAX);
	cl->drill_pair[0] = '\0';
	cl->root = cred.uid == 0;
	cl->admin = cl->root || (c->have_admin_gid && peer_in_group(cfd, cred.gid, c->admin_gid));
	cl->since_ns = mono_ns();
	if (!cl->out || fo_loop_add(c->loop, cfd, EPOLLIN, on_client, c) < 0) {
		free(cl->out);
		cl->out = NULL;
		close(cfd);
		return;
	}
	cl->fd = cfd;
	tick_arm(c);
}

static void on_accept(void *ctx, int fd, uint32_t events)
{
	struct fo_control *c = ctx;
	int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (cfd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			accept_out_of_fds(c, errno);
		return;
	}
	if (c->fd_warned) {
		fo_notice("control: accepting clients again");
		c->fd_warned = false;
	}
	admit(c, cfd);
}

void fo_control_set_idle_timeout(struct fo_control *c, unsigned ms)
{
	c->idle_ns = (uint64_t)ms * 1000000ull;
}

void fo_control_publish_event(struct fo_control *c, const struct fo_event *e)
{
	cJSON *o = NULL;

	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++) {
		struct fo_client *cl = &c->clients[i];
		if (cl->fd < 0 || !cl->follow)
			continue;
		if (!o) {
			o = cJSON_CreateObject();
			cJSON_AddItemToObject(o, "event", event_json(e));
		}
		send_json(c, cl, o);
	}
	cJSON_Delete(o);
}

void fo_control_complete_drills(struct fo_control *c)
{
	for (size_t i = 0; i < fo_manager_pair_count(c->mgr); i++) {
		struct fo_pair *p = fo_manager_pair(c->mgr, i);
		const struct fo_event *e;
		if (!p->drill_done_id)
			continue;
		e = fo_event_ring_find(fo_manager_events(c->mgr), p->drill_done_id);
		p->drill_done_id = 0;
		for (int k = 0; k < FO_CONTROL_MAX_CLIENTS; k++) {
			struct fo_client *cl = &c->clients[k];
			cJSON *reply;
			if (cl->fd < 0 || strcmp(cl->drill_pair, p->cfg.name) != 0)
				continue;
			cl->drill_pair[0] = '\0';
			cl->since_ns = mono_ns();
			if (e) {
				reply = ok_reply();
				cJSON_AddItemToObject(reply, "event", event_json(e));
			} else {
				reply = error_reply("drill finished but its event was overwritten");
			}
			send_json(c, cl, reply);
			cJSON_Delete(reply);
		}
	}
}

/* ---- the socket ------------------------------------------------------- */

/*
 * What is at the socket path before we bind. Nothing: fine. A socket that
 * answers: another failoverd is serving it, and taking it over would leave
 * two daemons switching the same pairs: refuse to start. A socket nobody
 * answers: a killed daemon's, removed. Anything else (a file, a symlink)
 * is never deleted: refuse, naming it.
 */
static int clear_stale_socket(int dirfd, const char *base, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r;

	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		fo_err("control socket %s: exists and is not a socket (a %s); refusing to delete it", path,
		       S_ISLNK(st.st_mode) ? "symlink" : S_ISREG(st.st_mode) ? "regular file" : S_ISDIR(st.st_mode) ? "directory" : "special file");
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Non-blocking: a live daemon with a full backlog says EAGAIN. */
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
	close(fd);
	if (r == 0 || r == -EAGAIN || r == -EINPROGRESS) {
		fo_err("control socket %s: another failoverd is listening there; refusing to start (stop it first)",
		       path);
		return -EADDRINUSE;
	}
	if (r != -ECONNREFUSED) {
		fo_err("control socket %s: cannot tell whether it is in use (%s); not removing it", path, strerror(-r));
		return r;
	}
	return unlinkat(dirfd, base, 0) < 0 ? -errno : 0;
}

/* The directory of the socket, created if missing (0755), opened for the
 * *at() calls that never follow a symlink at the socket's name. */
static int open_socket_dir(const char *path, char *base, size_t baselen)
{
	char dir[FO_PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int dirfd;

	if (!slash)
		return -EINVAL; /* the config insists on an absolute path */
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	snprintf(base, baselen, "%s", slash + 1);
	if (slash != path && mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	if (fstat(dirfd, &st) == 0 && (st.st_mode & S_IWOTH))
		fo_warn("control socket directory %s is world-writable%s: any user could put something at %s; "
			"prefer a directory only root can write (default /run/failoverd)",
			dir, st.st_mode & S_ISVTX ? " (sticky)" : "", path);
	return dirfd;
}

static int lookup_group(const char *what, const char *name, gid_t *ret)
{
	struct group *g = getgrnam(name);

	if (!g) {
		fo_err("control socket: %s \"%s\": no such group", what, name);
		return -ENOENT;
	}
	*ret = g->gr_gid;
	return 0;
}

int fo_control_new(struct fo_loop *loop, struct fo_manager *mgr, const char *path, const char *group,
		   const char *admin_group, struct fo_control **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fo_control *c;
	char base[FO_PATH_MAX];
	bool grouped = group && group[0];
	gid_t gid = (gid_t)-1;
	struct stat st;
	mode_t old_umask;
	int r, dirfd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->mgr = mgr;
	c->listen_fd = c->tick_fd = c->spare_fd = -1;
	c->idle_ns = FO_CONTROL_IDLE_MS * 1000000ull;
	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++)
		c->clients[i].fd = -1;
	snprintf(c->path, sizeof(c->path), "%s", path);
	if ((grouped && (r = lookup_group("control_group", group, &gid)) < 0) ||
	    (admin_group && admin_group[0] &&
	     (r = lookup_group("control_admin_group", admin_group, &c->admin_gid)) < 0))
		goto fail;
	c->have_admin_gid = admin_group && admin_group[0];
	dirfd = open_socket_dir(path, base, sizeof(base));
	if (dirfd < 0) {
		r = dirfd;
		goto fail;
	}
	r = clear_stale_socket(dirfd, base, path);
	if (r < 0)
		goto fail;
	strcpy(sa.sun_path, path);
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	c->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (c->listen_fd < 0 || c->tick_fd < 0 || c->spare_fd < 0) {
		r = -errno;
		goto fail;
	}
	/* Create the socket node with its final mode: no window in which a
	 * non-root user could connect. */
	old_umask = umask(grouped ? 0117 : 0177);
	r = bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_umask);
	if (r < 0) {
		r = -errno;
		goto fail;
	}
	/* The group by name in the directory, never following a symlink:
	 * what is there must be the socket we just bound. */
	errno = 0;
	if (grouped && (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode) ||
			fchownat(dirfd, base, (uid_t)-1, gid, AT_SYMLINK_NOFOLLOW) < 0)) {
		r = errno ? -errno : -EEXIST;
		fo_err("control socket: cannot give group \"%s\" access: %s", group, strerror(-r));
		goto fail;
	}
	if (listen(c->listen_fd, 16) < 0) {
		r = -errno;
		goto fail;
	}
	if ((r = fo_loop_add(loop, c->listen_fd, EPOLLIN, on_accept, c)) < 0 ||
	    (r = fo_loop_add(loop, c->tick_fd, EPOLLIN, on_tick, c)) < 0) {
		fo_loop_remove(loop, c->listen_fd);
		goto fail;
	}
	close(dirfd);
	*ret = c;
	return 0;
fail:
	if (dirfd >= 0)
		close(dirfd);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->tick_fd >= 0)
		close(c->tick_fd);
	if (c->spare_fd >= 0)
		close(c->spare_fd);
	free(c);
	return r;
}

struct fo_control *fo_control_free(struct fo_control *c)
{
	if (!c)
		return NULL;
	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i].fd >= 0)
			client_close(c, &c->clients[i]);
	if (c->listen_fd >= 0) {
		fo_loop_remove(c->loop, c->listen_fd);
		close(c->listen_fd);
		unlink(c->path);
	}
	fo_loop_remove(c->loop, c->tick_fd);
	close(c->tick_fd);
	close(c->spare_fd);
	free(c);
	return NULL;
}
