/* SPDX-License-Identifier: MIT */
/*
 * control_status.c - the control socket's replies that show the daemon:
 * status, kernel, events and metrics as JSON, and the ok / error / event
 * objects every reply is made of.
 */
#include "io/control_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/metrics.h"
#include "lib/log.h"
#include "lib/prom.h"
#include "proto/event_json.h"
#include "stream/state_stream.h"

cJSON *fo_control_error_reply(const char *fmt, ...)
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

cJSON *fo_control_ok_reply(void)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddTrueToObject(o, "ok");
	return o;
}

cJSON *fo_control_event_json(const struct fo_event *e)
{
	struct fo_proto_event v;

	fo_event_view(e, &v);
	return fo_proto_event_json(&v);
}

/* libfoguest: the application's cycle and the state handover (null when
 * the active runs a plain agent / the backend relays nothing). */
/* "network": null without a network section; else the bridge, the vif
 * the service is on ("" while not set), "ok" or "blocked" (the reason is
 * the pair's), and how many fenced vifs the audit found up. */
static void add_service_network(cJSON *po, const struct fo_pair_view *v)
{
	char port[IF_NAMESIZE] = "";
	cJSON *n;

	if (!v->net_enabled) {
		cJSON_AddNullToObject(po, "network");
		return;
	}
	n = cJSON_AddObjectToObject(po, "network");
	if (v->net_active_port && !if_indextoname((unsigned)v->net_active_port, port))
		port[0] = '\0';
	cJSON_AddStringToObject(n, "bridge", v->net_bridge);
	cJSON_AddStringToObject(n, "active_vif", port);
	cJSON_AddStringToObject(n, "state", v->net_blocked ? "blocked" : port[0] ? "ok" : "unset");
	cJSON_AddNumberToObject(n, "recuts", (double)v->net_recuts);
}

static void add_state_handover(cJSON *po, struct fo_hv *hv, const struct fo_pair_view *v)
{
	const struct fo_member_view *a = &v->m[v->active], *s = &v->m[!v->active];
	struct fo_hv_state_info ai, si;
	bool have_a, have_s;
	cJSON *st;

	if (a->ext)
		cJSON_AddNumberToObject(po, "app_cycle", (double)a->app_cycle);
	else
		cJSON_AddNullToObject(po, "app_cycle");
	cJSON_AddNumberToObject(po, "deadline_misses", (double)a->deadline_misses);
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
		if (a->ext && a->app_cycle >= si.state_cycle)
			cJSON_AddNumberToObject(st, "state_age_cycles", (double)(a->app_cycle - si.state_cycle));
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
		if (a->ext && a->restore_result) {
			static const char *const res[] = { "not-yet", "ok", "none", "corrupt", "too-old" };

			cJSON_AddStringToObject(t, "restore", a->restore_result < 5 ? res[a->restore_result] : "?");
			cJSON_AddNumberToObject(t, "restored_cycle", (double)a->restored_cycle);
		}
	} else {
		cJSON_AddNullToObject(st, "last_takeover");
	}
}

/*
 * The state stream across hosts for one pair (null without state_stream):
 * what arrived from the other host and what of it is in the standby's
 * state-in here, the lag in cycles between the two, and what this host
 * sent. The stream's mutex is only ever held for a copy: off the switch
 * path, as every control request is.
 */
static void add_pair_stream(cJSON *po, struct fo_stream *s, const char *pair)
{
	struct fo_stream_pair_stats ps;
	cJSON *o;

	if (!s) {
		cJSON_AddNullToObject(po, "state_stream");
		return;
	}
	fo_stream_pair_stats(s, pair, &ps);
	o = cJSON_AddObjectToObject(po, "state_stream");
	cJSON_AddNumberToObject(o, "received", (double)ps.received);
	cJSON_AddNumberToObject(o, "peer_cycle", (double)ps.peer_cycle);
	if (ps.received)
		cJSON_AddNumberToObject(o, "arrived_cycle", (double)ps.arrived_cycle);
	else
		cJSON_AddNullToObject(o, "arrived_cycle");
	if (ps.applied)
		cJSON_AddNumberToObject(o, "applied_cycle", (double)ps.applied_cycle);
	else
		cJSON_AddNullToObject(o, "applied_cycle");
	cJSON_AddNumberToObject(o, "lag_cycles", (double)ps.lag_cycles);
	cJSON_AddBoolToObject(o, "held", ps.held);
	cJSON_AddNumberToObject(o, "sent", (double)ps.sent);
	if (ps.sent)
		cJSON_AddNumberToObject(o, "sent_cycle", (double)ps.sent_cycle);
	else
		cJSON_AddNullToObject(o, "sent_cycle");
}

/* The stream's links and refusals (null without state_stream). */
static void add_stream(cJSON *o, struct fo_stream *s)
{
	struct fo_stream_stats st;
	cJSON *so, *r;

	if (!s) {
		cJSON_AddNullToObject(o, "state_stream");
		return;
	}
	fo_stream_stats(s, &st);
	so = cJSON_AddObjectToObject(o, "state_stream");
	cJSON_AddBoolToObject(so, "receiving", st.receiving);
	cJSON_AddBoolToObject(so, "sending", st.sending);
	cJSON_AddBoolToObject(so, "peer_in", st.peer_in);
	cJSON_AddBoolToObject(so, "peer_out", st.peer_out);
	cJSON_AddNumberToObject(so, "accepted", (double)st.accepted);
	cJSON_AddNumberToObject(so, "connected", (double)st.connected);
	cJSON_AddNumberToObject(so, "received", (double)st.received);
	cJSON_AddNumberToObject(so, "sent", (double)st.sent);
	r = cJSON_AddObjectToObject(so, "refused");
	for (int i = 0; i < FO_REFUSED_N; i++)
		cJSON_AddNumberToObject(r, fo_wire_refusal_name((enum fo_wire_refusal)i), (double)st.refused[i]);
}

cJSON *fo_control_status_json(struct fo_control *c)
{
	struct fo_hv *hv = fo_manager_hv(c->mgr);
	uint64_t now = hv->ops->now_ns(hv);
	cJSON *o = fo_control_ok_reply(), *arr = cJSON_AddArrayToObject(o, "pairs");
	/* One backend serves every pair; said per pair so that a pair's line
	 * is complete on its own. */
	const char *path = hv->ops->switch_path ? hv->ops->switch_path(hv) : NULL;

	for (size_t i = 0; i < fo_manager_pair_count(c->mgr); i++) {
		struct fo_pair_view v;
		const struct fo_member_view *a, *s;
		cJSON *po = cJSON_CreateObject();

		fo_pair_view(fo_manager_pair(c->mgr, i), &v);
		a = &v.m[v.active];
		s = &v.m[!v.active];
		cJSON_AddStringToObject(po, "name", v.name);
		cJSON_AddStringToObject(po, "state", fo_pair_state_name(v.state));
		/* ARMED with a verified, paused standby: a failure of the
		 * active is covered (the fact failoverd_pair_protected says). */
		cJSON_AddBoolToObject(po, "protected", fo_pair_protected(&v));
		cJSON_AddStringToObject(po, "reason", v.reason);
		cJSON_AddStringToObject(po, "active", a->name);
		cJSON_AddNumberToObject(po, "active_domid", a->domid == FO_DOMID_INVALID ? -1 : (double)a->domid);
		cJSON_AddStringToObject(po, "active_state", fo_dom_state_name(a->state));
		cJSON_AddStringToObject(po, "standby", s->name);
		cJSON_AddNumberToObject(po, "standby_domid", s->domid == FO_DOMID_INVALID ? -1 : (double)s->domid);
		cJSON_AddStringToObject(po, "standby_state", fo_dom_state_name(s->state));
		/* A failure verdict: that member is never started until an
		 * operator clears it (a cluster agent must not count on it). */
		cJSON_AddBoolToObject(po, "active_failed", a->failed);
		cJSON_AddBoolToObject(po, "standby_failed", s->failed);
		cJSON_AddNumberToObject(po, "switches", (double)v.switches);
		if (path)
			cJSON_AddStringToObject(po, "switch_path", path);
		else
			cJSON_AddNullToObject(po, "switch_path");
		/* true: the kernel module owns heartbeat-loss switching of this
		 * pair right now (ARMed there); failoverd watches. */
		cJSON_AddBoolToObject(po, "kernel_armed", v.kernel_armed);
		if (v.owner)
			cJSON_AddStringToObject(po, "owner", v.owner);
		else
			cJSON_AddNullToObject(po, "owner");
		if (v.kernel_ok)
			cJSON_AddNumberToObject(po, "kernel_pair_id", (double)v.kernel_id);
		cJSON_AddNumberToObject(po, "kernel_switches", (double)v.kernel_switches);
		if (v.switches) {
			cJSON_AddNumberToObject(po, "last_switch_us", (double)v.last_switch_us);
			cJSON_AddNumberToObject(po, "last_switch_age_s",
						(double)((now - v.last_switch_time_ns) / 1000000000ull));
		} else {
			cJSON_AddNullToObject(po, "last_switch_us");
			cJSON_AddNullToObject(po, "last_switch_age_s");
		}
		if (a->progressed)
			cJSON_AddNumberToObject(po, "heartbeat_age_ms",
						(double)((now - a->last_progress_ns) / 1000000ull));
		else
			cJSON_AddNullToObject(po, "heartbeat_age_ms");
		cJSON_AddNumberToObject(po, "heartbeats", (double)a->beats);
		cJSON_AddNumberToObject(po, "heartbeat_invalid", (double)(a->invalid + s->invalid));
		/* "none": the pair asks for no placement; "unverified": not
		 * armed yet; "ok" / "drift" (placement_detail says what). */
		cJSON_AddStringToObject(po, "placement",
					!v.placement_wanted ? "none"
					: !v.placement_checked ? "unverified" : v.placement_drift ? "drift" : "ok");
		cJSON_AddStringToObject(po, "placement_detail", v.placement);
		add_state_handover(po, hv, &v);
		add_pair_stream(po, c->stream, v.name);
		add_service_network(po, &v);
		cJSON_AddItemToArray(arr, po);
	}
	add_stream(o, c->stream);
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
cJSON *fo_control_kernel_json(struct fo_control *c)
{
	struct fo_hv *hv = fo_manager_hv(c->mgr);
	struct fo_hv_karm k[64];
	uint64_t now = hv->ops->now_ns(hv);
	cJSON *o, *arr;
	int n;

	if (!hv->ops->kernel_list)
		return fo_control_error_reply("kernel: the kernel module is not in use (daemon.kernel_fast_path, %s)",
					      "/dev/fo_switch");
	n = hv->ops->kernel_list(hv, k, sizeof(k) / sizeof(k[0]));
	if (n == -EOPNOTSUPP)
		return fo_control_error_reply("kernel: the loaded kernel module has no LIST (older than this failoverd)");
	if (n < 0)
		return fo_control_error_reply("kernel: listing the kernel module's pairs: %s", strerror(-n));
	o = fo_control_ok_reply();
	cJSON_AddNumberToObject(o, "armed", n);
	arr = cJSON_AddArrayToObject(o, "pairs");
	for (int i = 0; i < n && i < (int)(sizeof(k) / sizeof(k[0])); i++) {
		cJSON *po = cJSON_CreateObject();
		const char *owner = NULL;

		for (size_t j = 0; j < fo_manager_pair_count(c->mgr); j++) {
			struct fo_pair_view v;

			fo_pair_view(fo_manager_pair(c->mgr, j), &v);
			if (v.kernel_ok && v.kernel_id == k[i].pair_id)
				owner = v.name;
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

cJSON *fo_control_events_json(struct fo_control *c)
{
	const struct fo_event_ring *r = fo_manager_events(c->mgr);
	cJSON *o = fo_control_ok_reply(), *arr = cJSON_AddArrayToObject(o, "events");
	size_t n = fo_event_ring_count(r);

	/* The newest only: the whole ring would not fit a client's buffer. */
	for (size_t i = n > FO_EVENT_REPLY_MAX ? n - FO_EVENT_REPLY_MAX : 0; i < n; i++) {
		const struct fo_event *e = fo_event_ring_get(r, i);
		if (!e->pending)
			cJSON_AddItemToArray(arr, fo_control_event_json(e));
	}
	return o;
}

/* The reply's text is cut to this, as a client's buffer was sized for it. */
#define METRICS_TEXT_MAX (64 * 1024 - 1)

/* The manager's families, then the control socket's own counters, written
 * through lib/prom.h as /metrics is. */
cJSON *fo_control_metrics_json(struct fo_control *c)
{
	static const struct {
		const char *name, *help;
	} counters[] = {
		{ "failoverd_control_accept_errors_total",
		  "Connections that could not be accepted (out of file descriptors)." },
		{ "failoverd_control_refused_total", "Connections refused: every client slot taken." },
		{ "failoverd_control_idle_closed_total", "Connections closed for idling." },
		{ "failoverd_control_oversized_total", "Connections closed for a request line too long." },
		{ "failoverd_log_dropped_total", "Log lines lost to a full log queue (journald or stderr slow)." },
	};
	const uint64_t values[] = { c->stats.accept_errors, c->stats.refused, c->stats.idle_closed, c->stats.oversized,
				    fo_log_dropped() };
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	cJSON *reply;

	if (!out)
		return fo_control_error_reply("metrics: %s", strerror(errno));
	fo_manager_metrics_write(c->mgr, out);
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		fo_prom_family(out, counters[i].name, "counter", counters[i].help);
		fo_prom_u64(out, counters[i].name, values[i], NULL);
	}
	fclose(out);
	if (size > METRICS_TEXT_MAX)
		text[METRICS_TEXT_MAX] = '\0';
	reply = fo_control_ok_reply();
	cJSON_AddStringToObject(reply, "text", text);
	free(text);
	return reply;
}
