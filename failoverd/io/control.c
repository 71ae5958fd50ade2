/* SPDX-License-Identifier: MIT */
#include "control.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../core/log.h"

#define FO_CONTROL_MAX_CLIENTS 32
/* Big enough for the whole event ring as one reply. */
#define FO_CONTROL_OUT_MAX (512 * 1024)

struct fo_client {
	int fd; /* -1 = free slot */
	char in[FO_CONTROL_LINE_MAX + 1];
	size_t in_len;
	bool discarding;     /* an oversized line is being skipped up to its newline */
	char *out;
	size_t out_len;
	bool follow;         /* events --follow */
	int drill_pair;      /* index of the pair whose drill it waits for, -1 = none */
	bool closing;        /* close once `out` is flushed */
};

struct fo_control {
	struct fo_loop *loop;
	struct fo_manager *mgr;
	int listen_fd;
	char path[FO_PATH_MAX];
	struct fo_client clients[FO_CONTROL_MAX_CLIENTS];
};

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
	fo_loop_modify(c->loop, cl->fd, EPOLLIN | (cl->out_len ? EPOLLOUT : 0));
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

static void add_us_or_null(cJSON *o, const char *key, int64_t us)
{
	if (us < 0)
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, (double)us);
}

static cJSON *event_json(const struct fo_event *e)
{
	static const struct {
		const char *key;
		enum fo_phase phase;
	} phases[] = {
		{ "detected", FO_PHASE_DETECTED },
		{ "decided", FO_PHASE_DECIDED },
		{ "pause_issued", FO_PHASE_PAUSE_ISSUED },
		{ "pause_done", FO_PHASE_PAUSE_DONE },
		{ "unpause_issued", FO_PHASE_UNPAUSE_ISSUED },
		{ "unpause_done", FO_PHASE_UNPAUSE_DONE },
		{ "first_heartbeat", FO_PHASE_FIRST_HEARTBEAT },
	};
	cJSON *o = cJSON_CreateObject(), *ph;
	bool is_switch = e->kind == FO_EV_SWITCHOVER || e->kind == FO_EV_DRILL;

	cJSON_AddNumberToObject(o, "id", (double)e->id);
	cJSON_AddNumberToObject(o, "time_ns", (double)e->time_ns);
	cJSON_AddStringToObject(o, "pair", e->pair);
	cJSON_AddStringToObject(o, "kind", fo_event_kind_name(e->kind));
	cJSON_AddStringToObject(o, "fault", fo_fault_name(e->fault));
	cJSON_AddStringToObject(o, "from", e->from);
	cJSON_AddStringToObject(o, "to", e->to);
	cJSON_AddStringToObject(o, "result", fo_event_result_name(e->result));
	cJSON_AddStringToObject(o, "message", e->message);
	if (e->path[0])
		cJSON_AddStringToObject(o, "path", e->path);
	else
		cJSON_AddNullToObject(o, "path");
	cJSON_AddNumberToObject(o, "deadline_ms", e->deadline_ms);
	cJSON_AddNumberToObject(o, "budget_ms", e->budget_ms);
	if (is_switch && e->phase_ns[FO_PHASE_FAULT])
		cJSON_AddBoolToObject(o, "within_deadline", fo_event_within_deadline(e));
	else
		cJSON_AddNullToObject(o, "within_deadline");
	ph = cJSON_AddObjectToObject(o, "phases_us");
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		add_us_or_null(ph, phases[i].key, fo_event_phase_us(e, phases[i].phase));
	return o;
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

static bool only_keys(const cJSON *req, const char *const *allowed, const char **bad)
{
	for (const cJSON *it = req->child; it; it = it->next) {
		bool ok = false;
		for (const char *const *a = allowed; *a; a++)
			ok = ok || strcmp(it->string, *a) == 0;
		if (!ok) {
			*bad = it->string;
			return false;
		}
	}
	return true;
}

/* Returns the reply, or NULL when the reply is deferred (a drill). */
static cJSON *handle_request(struct fo_control *c, struct fo_client *cl, const char *line)
{
	static const char *const pair_keys[] = { "cmd", "pair", NULL };
	static const char *const cmd_keys[] = { "cmd", NULL };
	static const char *const events_keys[] = { "cmd", "follow", NULL };
	static const char *const drill_keys[] = { "cmd", "pair", "fault", NULL };
	cJSON *req = cJSON_Parse(line), *reply = NULL;
	const cJSON *jcmd, *jpair;
	const char *cmd, *bad = NULL;
	struct fo_pair *p = NULL;
	char err[512];

	if (!req)
		return error_reply("request is not valid JSON");
	if (!cJSON_IsObject(req)) {
		reply = error_reply("request must be a JSON object");
		goto out;
	}
	jcmd = cJSON_GetObjectItemCaseSensitive(req, "cmd");
	if (!cJSON_IsString(jcmd)) {
		reply = error_reply("request: \"cmd\" must be a string");
		goto out;
	}
	cmd = jcmd->valuestring;
	jpair = cJSON_GetObjectItemCaseSensitive(req, "pair");

	if (strcmp(cmd, "switchover") == 0 || strcmp(cmd, "arm") == 0 || strcmp(cmd, "disarm") == 0 ||
	    strcmp(cmd, "drill") == 0) {
		if (!only_keys(req, strcmp(cmd, "drill") == 0 ? drill_keys : pair_keys, &bad)) {
			reply = error_reply("%s: unknown key \"%s\"", cmd, bad);
			goto out;
		}
		if (!cJSON_IsString(jpair)) {
			reply = error_reply("%s: \"pair\" must be a string", cmd);
			goto out;
		}
		p = fo_manager_find_pair(c->mgr, jpair->valuestring);
		if (!p) {
			reply = error_reply("%s: no pair named \"%.64s\"", cmd, jpair->valuestring);
			goto out;
		}
	}

	if (strcmp(cmd, "status") == 0) {
		reply = only_keys(req, cmd_keys, &bad) ? status_json(c) : error_reply("status: unknown key \"%s\"", bad);
	} else if (strcmp(cmd, "events") == 0) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(req, "follow");
		if (!only_keys(req, events_keys, &bad))
			reply = error_reply("events: unknown key \"%s\"", bad);
		else if (f && !cJSON_IsBool(f))
			reply = error_reply("events: \"follow\" must be true or false");
		else {
			reply = events_json(c);
			if (cl && cJSON_IsTrue(f))
				cl->follow = true;
		}
	} else if (strcmp(cmd, "kernel") == 0) {
		reply = only_keys(req, cmd_keys, &bad) ? kernel_json(c) : error_reply("kernel: unknown key \"%s\"", bad);
	} else if (strcmp(cmd, "metrics") == 0) {
		static char text[64 * 1024];
		if (!only_keys(req, cmd_keys, &bad)) {
			reply = error_reply("metrics: unknown key \"%s\"", bad);
		} else {
			fo_manager_metrics(c->mgr, text, sizeof(text));
			reply = ok_reply();
			cJSON_AddStringToObject(reply, "text", text);
		}
	} else if (strcmp(cmd, "switchover") == 0) {
		/* How long the loop was busy with it before the reply: the
		 * fenced switch plus whatever else runs synchronously after it. */
		struct fo_hv *hv = fo_manager_hv(c->mgr);
		uint64_t t0 = hv->ops->now_ns(hv);
		reply = fo_pair_request_switchover(p, err, sizeof(err)) < 0 ? error_reply("switchover: %s", err)
									     : ok_reply();
		fo_debug("control: switchover %s handled in %llu us", p->cfg.name,
			 (unsigned long long)((hv->ops->now_ns(hv) - t0) / 1000));
	} else if (strcmp(cmd, "arm") == 0) {
		fo_pair_arm(p);
		reply = ok_reply();
		cJSON_AddStringToObject(reply, "state", fo_pair_state_name(p->state));
		cJSON_AddStringToObject(reply, "reason", p->reason);
	} else if (strcmp(cmd, "disarm") == 0) {
		fo_pair_disarm(p);
		reply = ok_reply();
	} else if (strcmp(cmd, "drill") == 0) {
		const cJSON *jf = cJSON_GetObjectItemCaseSensitive(req, "fault");
		enum fo_drill_kind kind;
		if (!cJSON_IsString(jf) || fo_drill_kind_parse(jf->valuestring, &kind) < 0) {
			reply = error_reply("drill: \"fault\" must be one of heartbeat-loss, hang, crash, destroy, "
					    "unhealthy, manual");
		} else if (fo_pair_request_drill(p, kind, err, sizeof(err)) < 0) {
			reply = error_reply("drill: %s", err);
		} else if (cl) {
			cl->drill_pair = (int)(p - fo_manager_pair(c->mgr, 0));
		} else {
			reply = ok_reply();
			cJSON_AddTrueToObject(reply, "deferred");
		}
	} else {
		reply = error_reply("unknown cmd \"%.32s\" (status, switchover, arm, disarm, events, metrics, drill)",
				    cmd);
	}
out:
	cJSON_Delete(req);
	return reply;
}

size_t fo_control_handle_line(struct fo_control *c, const char *line, char *buf, size_t len)
{
	cJSON *reply = handle_request(c, NULL, line);
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

static void client_handle_line(struct fo_control *c, struct fo_client *cl, const char *line)
{
	cJSON *reply = handle_request(c, cl, line);

	if (reply) {
		send_json(c, cl, reply);
		cJSON_Delete(reply);
	}
}

static void on_client(void *ctx, int fd, uint32_t events)
{
	struct fo_control *c = ctx;
	struct fo_client *cl = NULL;
	char buf[4096];

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
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			client_close(c, cl);
			return;
		}
		if (n < 0)
			return;
		for (ssize_t i = 0; i < n && cl->fd >= 0; i++) {
			char ch = buf[i];
			if (ch == '\n') {
				if (cl->discarding) {
					cl->discarding = false;
					cl->in_len = 0;
					cJSON *err = error_reply("request longer than %d bytes", FO_CONTROL_LINE_MAX);
					send_json(c, cl, err);
					cJSON_Delete(err);
					continue;
				}
				cl->in[cl->in_len] = '\0';
				cl->in_len = 0;
				client_handle_line(c, cl, cl->in);
			} else if (cl->discarding) {
				continue;
			} else if (cl->in_len >= FO_CONTROL_LINE_MAX || ch == '\0') {
				/* Oversized (or binary) input: skip to the end of the line. */
				cl->discarding = true;
			} else {
				cl->in[cl->in_len++] = ch;
			}
		}
		if (cl->fd < 0)
			return;
	}
}

static void on_accept(void *ctx, int fd, uint32_t events)
{
	struct fo_control *c = ctx;
	int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct fo_client *cl = NULL;

	if (cfd < 0)
		return;
	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS && !cl; i++)
		if (c->clients[i].fd < 0)
			cl = &c->clients[i];
	if (!cl) {
		static const char busy[] = "{\"ok\":false,\"error\":\"too many control clients\"}\n";
		(void)!send(cfd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(cfd);
		return;
	}
	memset(cl, 0, sizeof(*cl));
	cl->out = malloc(FO_CONTROL_OUT_MAX);
	cl->drill_pair = -1;
	if (!cl->out || fo_loop_add(c->loop, cfd, EPOLLIN, on_client, c) < 0) {
		free(cl->out);
		cl->out = NULL;
		cl->fd = -1;
		close(cfd);
		return;
	}
	cl->fd = cfd;
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
			if (cl->fd < 0 || cl->drill_pair != (int)i)
				continue;
			cl->drill_pair = -1;
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

int fo_control_new(struct fo_loop *loop, struct fo_manager *mgr, const char *path, const char *group,
		   struct fo_control **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fo_control *c;
	char dir[FO_PATH_MAX], *slash;
	mode_t old_umask;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->mgr = mgr;
	c->listen_fd = -1;
	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++)
		c->clients[i].fd = -1;
	snprintf(c->path, sizeof(c->path), "%s", path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			goto fail;
		}
	}
	strcpy(sa.sun_path, path);
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0) {
		r = -errno;
		goto fail;
	}
	unlink(path); /* a stale socket of a killed daemon */
	/* Create the socket node with its final mode: no window in which a
	 * non-root user could connect. */
	old_umask = umask(group && group[0] ? 0117 : 0177);
	r = bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_umask);
	if (r < 0) {
		r = -errno;
		goto fail;
	}
	if (group && group[0]) {
		struct group *g = getgrnam(group);
		if (!g || chown(path, 0, g->gr_gid) < 0) {
			r = g ? -errno : -ENOENT;
			fo_err("control socket: cannot give group \"%s\" access: %s", group,
			       g ? strerror(-r) : "no such group");
			goto fail;
		}
	}
	if (listen(c->listen_fd, 16) < 0 || fo_loop_add(loop, c->listen_fd, EPOLLIN, on_accept, c) < 0) {
		r = -errno;
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	if (c->listen_fd >= 0)
		close(c->listen_fd);
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
	free(c);
	return NULL;
}
