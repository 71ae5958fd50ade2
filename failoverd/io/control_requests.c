/* SPDX-License-Identifier: MIT */
/*
 * control_requests.c - one request line: parsed and checked (pure, the
 * fuzzing entry point), its rights checked, then carried out by core/'s
 * functions, and its reply built.
 */
#include "io/control_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/text.h"

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
				"unknown cmd \"%s\" (status, switchover, arm, disarm, stand-down, events, metrics, kernel, "
				"drill, clear-failed)",
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
			return req_fail(err, errlen, "drill: \"fault\" must be one of %s", fo_drill_kinds_text());
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
		return fo_control_error_reply("clear-failed: no pair has a member named \"%s\"", fo_text_shown(member, shown));
	snprintf(msg, sizeof(msg), n ? "failure verdict on %s cleared; `failoverctl arm %s` adopts it"
				     : "no failure recorded for %s (pair %s)",
		 member, fo_pair_name(p));
	o = fo_control_ok_reply();
	cJSON_AddStringToObject(o, "pair", fo_pair_name(p));
	cJSON_AddBoolToObject(o, "cleared", n > 0);
	cJSON_AddStringToObject(o, "message", msg);
	return o;
}

static cJSON *run_request(struct fo_control *c, struct fo_client *cl, const char *line, size_t len)
{
	struct fo_request req;
	struct fo_pair *p = NULL;
	const char *cmd;
	char err[512], shown[FO_SHOWN_BUF];
	cJSON *reply;

	if (fo_control_parse_request(line, len, &req, err, sizeof(err)) < 0)
		return fo_control_error_reply("%s", err);
	cmd = fo_request_cmd_name(req.cmd);
	if (cl && !cl->admin && fo_request_needs_admin(req.cmd))
		return fo_control_error_reply("%s: permission denied: needs root or a member of daemon.control_admin_group "
					      "(status, events, metrics and kernel are open to every user of the socket)",
					      cmd);
	if (fo_request_arg(req.cmd) == FO_REQ_ARG_PAIR) {
		p = fo_manager_find_pair(c->mgr, req.pair);
		if (!p)
			return fo_control_error_reply("%s: no pair named \"%s\"", cmd, fo_text_shown(req.pair, shown));
	}

	switch (req.cmd) {
	case FO_REQ_STATUS:
		return fo_control_status_json(c);
	case FO_REQ_EVENTS:
		reply = fo_control_events_json(c);
		if (cl && req.follow)
			cl->follow = true;
		return reply;
	case FO_REQ_KERNEL:
		return fo_control_kernel_json(c);
	case FO_REQ_METRICS:
		return fo_control_metrics_json(c);
	case FO_REQ_SWITCHOVER: {
		/* How long the loop was busy with it before the reply: the
		 * fenced switch plus whatever else runs synchronously after it. */
		struct fo_hv *hv = fo_manager_hv(c->mgr);
		uint64_t t0 = hv->ops->now_ns(hv);
		reply = fo_pair_request_switchover(p, err, sizeof(err)) < 0 ? fo_control_error_reply("switchover: %s", err)
									     : fo_control_ok_reply();
		fo_debug("control: switchover %s handled in %llu us", fo_pair_name(p),
			 (unsigned long long)((hv->ops->now_ns(hv) - t0) / 1000));
		return reply;
	}
	case FO_REQ_STAND_DOWN: {
		struct fo_pair_view v;

		/* Refused while SWITCHING, as arm and disarm are (below): the
		 * switch ends within grace_ms, then the caller retries. */
		fo_pair_view(p, &v);
		if (v.state == FO_PAIR_SWITCHING)
			return fo_control_error_reply("%s: pair is switching, retry (a switch ends within grace_ms)", cmd);
		if (fo_pair_stand_down(p, err, sizeof(err)) < 0)
			return fo_control_error_reply("%s: %s", cmd, err);
		fo_pair_view(p, &v);
		reply = fo_control_ok_reply();
		cJSON_AddStringToObject(reply, "state", fo_pair_state_name(v.state));
		cJSON_AddStringToObject(reply, "reason", v.reason);
		return reply;
	}
	case FO_REQ_ARM:
	case FO_REQ_DISARM: {
		struct fo_pair_view v;

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
		fo_pair_view(p, &v);
		if (v.state == FO_PAIR_SWITCHING)
			return fo_control_error_reply("%s: pair is switching, retry (a switch ends within grace_ms)", cmd);
		if (req.cmd == FO_REQ_DISARM) {
			fo_pair_disarm(p);
			return fo_control_ok_reply();
		}
		fo_pair_arm(p);
		fo_pair_view(p, &v);
		reply = fo_control_ok_reply();
		cJSON_AddStringToObject(reply, "state", fo_pair_state_name(v.state));
		cJSON_AddStringToObject(reply, "reason", v.reason);
		return reply;
	}
	case FO_REQ_DRILL:
		if (fo_pair_request_drill(p, req.fault, err, sizeof(err)) < 0)
			return fo_control_error_reply("drill: %s", err);
		if (cl) {
			snprintf(cl->drill_pair, sizeof(cl->drill_pair), "%s", fo_pair_name(p));
			return NULL;
		}
		reply = fo_control_ok_reply();
		cJSON_AddTrueToObject(reply, "deferred");
		return reply;
	case FO_REQ_CLEAR_FAILED:
		return clear_failed_json(c, req.member);
	}
	return fo_control_error_reply("unknown cmd");
}

/* Returns the reply, or NULL when the reply is deferred (a drill). A NULL
 * client is the daemon's own (tests): it has every right. */
cJSON *fo_control_handle_request(struct fo_control *c, struct fo_client *cl, const char *line, size_t len)
{
	cJSON *reply = run_request(c, cl, line, len);

	/* The loop holds the verdict file's write to the end of its turn
	 * (fo_manager_turn_begin); a request that changed it (clear-failed,
	 * a switchover, arm) is answered only once it is on file. Nothing
	 * held: nothing written. */
	fo_manager_write_held_verdicts(c->mgr);
	return reply;
}

size_t fo_control_handle_line(struct fo_control *c, const char *line, char *buf, size_t len)
{
	cJSON *reply = fo_control_handle_request(c, NULL, line, strlen(line));
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
