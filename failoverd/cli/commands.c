/* SPDX-License-Identifier: MIT */
/*
 * commands.c - the commands that are one request and one reply: status,
 * kernel, switchover/arm/disarm, clear-failed, events (and --follow),
 * metrics. The drill is in drill.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum { COL_PAIR, COL_STATE, COL_ACTIVE, COL_STANDBY, COL_PATH, COL_LAST, COL_HB, N_COLS };

/* status and kernel: {"cmd":CMD}, whose reply carries a "pairs" array.
 * On EXIT_OK *ret_pairs is that array inside *ret_reply (the caller frees
 * the reply); with --json the reply line is printed as is and *ret_printed
 * says the caller has nothing left to print. */
int fo_cli_request_pairs(const struct options *o, struct conn *c, const char *cmd, cJSON **ret_reply,
			 const cJSON **ret_pairs, bool *ret_printed)
{
	cJSON *req = cJSON_CreateObject();
	char *line;
	int rc;

	*ret_reply = NULL;
	*ret_printed = false;
	if (!req || !cJSON_AddStringToObject(req, "cmd", cmd)) {
		cJSON_Delete(req);
		fo_cli_cmd_error(o, "out of memory");
		return EXIT_DAEMON;
	}
	rc = fo_cli_transact(o, c, req, ret_reply, &line);
	cJSON_Delete(req);
	if (rc != EXIT_OK)
		return rc;
	*ret_pairs = cJSON_GetObjectItemCaseSensitive(*ret_reply, "pairs");
	if (!cJSON_IsArray(*ret_pairs)) {
		fo_cli_cmd_error(o, "malformed reply from failoverd: \"pairs\" is missing or not an array");
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

/*
 * failoverd's own verdict on each pair ("protected": ARMED with a verified,
 * paused standby; the same fact as failoverd_pair_protected), never
 * re-derived here from the state's name. EXIT_OK when every pair is
 * protected, EXIT_UNPROTECTED when one is not (named on `out` unless
 * --json), EXIT_DAEMON when the reply does not say (a daemon older than
 * this failoverctl): a monitoring script must not read "protected" into
 * silence.
 */
static int protection(const struct options *o, FILE *out, const cJSON *pairs)
{
	const cJSON *p;
	const char *name;
	size_t unprotected = 0;

	cJSON_ArrayForEach(p, pairs) {
		const cJSON *prot = cJSON_GetObjectItemCaseSensitive(p, "protected");

		name = fo_cli_jstr(p, "name");
		if (!cJSON_IsBool(prot)) {
			fprintf(fo_cli_err_out(o), "failoverctl: %s: failoverd does not say whether pair ", o->cmd);
			fo_cli_put_clean(fo_cli_err_out(o), name ? name : "?");
			fputs(" is protected (no \"protected\" in its status: a failoverd older than failoverctl?)\n",
			      fo_cli_err_out(o));
			return EXIT_DAEMON;
		}
		if (cJSON_IsTrue(prot))
			continue;
		if (!o->json) {
			fputs(unprotected ? ", " : "not protected: ", out);
			fo_cli_put_clean(out, name ? name : "?");
		}
		unprotected++;
	}
	if (unprotected && !o->json)
		fputc('\n', out);
	return unprotected ? EXIT_UNPROTECTED : EXIT_OK;
}

/* The table, the notes under it, and the protection verdict, on `out`. */
static int print_status(const struct options *o, FILE *out, const cJSON *reply, const cJSON *pairs)
{
	static const char *const headers[N_COLS] = {
		"PAIR", "STATE", "ACTIVE", "STANDBY", "PATH", "LAST-SWITCH", "HB-AGE",
	};
	size_t width[N_COLS], n = 0, i, j;
	struct status_row *rows;
	const cJSON *p;
	bool any_reason = false;

	rows = calloc((size_t)cJSON_GetArraySize(pairs) + 1, sizeof(*rows));
	if (!rows) {
		fo_cli_cmd_error(o, "out of memory");
		return EXIT_DAEMON;
	}
	cJSON_ArrayForEach(p, pairs) {
		struct status_row *row = &rows[n++];
		const char *s;
		double v;

		fo_cli_clean_copy(row->cell[COL_PAIR], sizeof(row->cell[0]),
				  (s = fo_cli_jstr(p, "name")) ? s : "?");
		fo_cli_clean_copy(row->cell[COL_STATE], sizeof(row->cell[0]),
				  (s = fo_cli_jstr(p, "state")) ? s : "?");
		fo_cli_format_member(row->cell[COL_ACTIVE], sizeof(row->cell[0]), p, "active",
				     "active_domid");
		fo_cli_format_member(row->cell[COL_STANDBY], sizeof(row->cell[0]), p, "standby",
				     "standby_domid");
		/* kernel (/dev/fo_switch), xenctrl or sim; "-" from an older daemon */
		fo_cli_clean_copy(row->cell[COL_PATH], sizeof(row->cell[0]),
				  (s = fo_cli_jstr(p, "switch_path")) ? s : "-");
		if (fo_cli_jnum(p, "last_switch_age_s", &v) && v >= 0)
			fo_cli_format_age_s(row->cell[COL_LAST], sizeof(row->cell[0]), v);
		else
			snprintf(row->cell[COL_LAST], sizeof(row->cell[0]), "never");
		if (fo_cli_jnum(p, "heartbeat_age_ms", &v) && v >= 0)
			fo_cli_format_ms(row->cell[COL_HB], sizeof(row->cell[0]), v);
		else
			snprintf(row->cell[COL_HB], sizeof(row->cell[0]), "-");
		row->reason = fo_cli_jstr(p, "reason");
		if (row->reason && row->reason[0])
			any_reason = true;
	}
	if (n == 0) {
		fputs("no pairs configured\n", out);
		free(rows);
		return EXIT_OK;
	}

	for (j = 0; j < N_COLS; j++) {
		width[j] = strlen(headers[j]);
		for (i = 0; i < n; i++)
			if (strlen(rows[i].cell[j]) > width[j])
				width[j] = strlen(rows[i].cell[j]);
	}
	for (j = 0; j + 1 < N_COLS; j++)
		fprintf(out, "%-*s  ", (int)width[j], headers[j]);
	if (any_reason)
		fprintf(out, "%-*s  REASON\n", (int)width[j], headers[j]);
	else
		fprintf(out, "%s\n", headers[j]);
	for (i = 0; i < n; i++) {
		bool has_reason = rows[i].reason && rows[i].reason[0];

		for (j = 0; j < N_COLS; j++) {
			/* No padding after the last cell of a line. */
			if (j + 1 == N_COLS && !has_reason)
				fprintf(out, "%s\n", rows[i].cell[j]);
			else
				fprintf(out, "%-*s  ", (int)width[j], rows[i].cell[j]);
		}
		if (has_reason) {
			fo_cli_put_clean(out, rows[i].reason);
			fputc('\n', out);
		}
	}
	free(rows);
	/* Placement drift (pools, pins, dom0's vCPU) under the table: rare,
	 * and the detail is too long for a column. */
	{
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(reply, "host_placement");
		const char *st = h ? fo_cli_jstr(h, "state") : NULL, *det;

		if (st && strcmp(st, "drift") == 0 && (det = fo_cli_jstr(h, "detail"))) {
			fputs("placement drift (host): ", out);
			fo_cli_put_clean(out, det);
			fputc('\n', out);
		}
		cJSON_ArrayForEach(p, pairs) {
			st = fo_cli_jstr(p, "placement");
			det = fo_cli_jstr(p, "placement_detail");
			if (!st || strcmp(st, "drift") != 0 || !det)
				continue;
			fprintf(out, "placement drift (%s): ", (st = fo_cli_jstr(p, "name")) ? st : "?");
			fo_cli_put_clean(out, det);
			fputc('\n', out);
		}
		/* The service network, one line per pair that has one. */
		cJSON_ArrayForEach(p, pairs) {
			const cJSON *net = cJSON_GetObjectItemCaseSensitive(p, "network");
			const char *vif;

			if (!cJSON_IsObject(net) || !(st = fo_cli_jstr(net, "state")))
				continue;
			vif = fo_cli_jstr(net, "active_vif");
			fprintf(out, "network (%s): ", (det = fo_cli_jstr(p, "name")) ? det : "?");
			fo_cli_put_clean(out, st);
			fputs(" on ", out);
			fo_cli_put_clean(out, (det = fo_cli_jstr(net, "bridge")) ? det : "?");
			if (vif && vif[0]) {
				fputs(" via ", out);
				fo_cli_put_clean(out, vif);
			}
			fputc('\n', out);
		}
	}
	return protection(o, out, pairs);
}

/* One status exchange, printed on `out` (--json: the reply line, on
 * stdout). The exit code says whether every pair is protected. */
int fo_cli_status_once(const struct options *o, struct conn *c, FILE *out)
{
	cJSON *reply = NULL;
	const cJSON *pairs;
	bool printed;
	int rc;

	rc = fo_cli_request_pairs(o, c, "status", &reply, &pairs, &printed);
	if (rc == EXIT_OK)
		rc = printed ? protection(o, out, pairs) : print_status(o, out, reply, pairs);
	cJSON_Delete(reply);
	return rc;
}

int fo_cli_cmd_status(const struct options *o, struct conn *c)
{
	return o->watch ? fo_cli_cmd_status_watch(o, c) : fo_cli_status_once(o, c, stdout);
}

/* kernel: what kmod-switch has armed (LIST), one line per pair; the PAIR
 * column is the configured pair owning the id, "-" for an orphan. */
int fo_cli_cmd_kernel(const struct options *o, struct conn *c)
{
	cJSON *reply = NULL;
	const cJSON *pairs, *p;
	bool printed;
	int rc;

	rc = fo_cli_request_pairs(o, c, "kernel", &reply, &pairs, &printed);
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

		fo_cli_clean_copy(name, sizeof(name), (sv = fo_cli_jstr(p, "pair")) ? sv : "-");
		fo_cli_clean_copy(state, sizeof(state), (sv = fo_cli_jstr(p, "state")) ? sv : "?");
		fo_cli_jnum(p, "pair_id", &id);
		fo_cli_jnum(p, "active_domid", &a);
		fo_cli_jnum(p, "standby_domid", &b);
		fo_cli_jnum(p, "timeout_ms", &t);
		fo_cli_jnum(p, "last_notify_age_ms", &age);
		snprintf(tmo, sizeof(tmo), "%.0f ms", t);
		printf("%-10.0f  %-20s  dom%-3.0f  dom%-4.0f  %-6s  %-10s  %.0f ms ago\n", id, name, a, b, state, tmo, age);
	}
out:
	cJSON_Delete(reply);
	return rc;
}

/* switchover, arm, disarm: {"cmd":X,"pair":P}; clear-failed, the same
 * exchange about a member: {"cmd":"clear-failed","member":M}. */
int fo_cli_cmd_pair_action(const struct options *o, struct conn *c)
{
	cJSON *req = NULL, *reply = NULL;
	const cJSON *ev;
	const char *msg;
	int rc;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", o->cmd) ||
	    !cJSON_AddStringToObject(req, o->member ? "member" : "pair", o->pair)) {
		fo_cli_cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	rc = fo_cli_transact(o, c, req, &reply, NULL);
	if (rc != EXIT_OK)
		goto out;

	printf("%s %s: ok", o->cmd, o->pair);
	if ((msg = fo_cli_jstr(reply, "message")) && msg[0]) {
		fputs(": ", stdout);
		fo_cli_put_clean(stdout, msg);
	}
	fputc('\n', stdout);
	ev = cJSON_GetObjectItemCaseSensitive(reply, "event");
	if (cJSON_IsObject(ev))
		fo_cli_print_event_line(ev);
out:
	cJSON_Delete(reply);
	cJSON_Delete(req);
	return rc;
}

int fo_cli_cmd_events(const struct options *o, struct conn *c)
{
	cJSON *req = NULL, *reply = NULL, *later = NULL;
	const cJSON *events, *ev;
	char *line;
	int rc, r;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "events") ||
	    !cJSON_AddBoolToObject(req, "follow", o->follow)) {
		fo_cli_cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	rc = fo_cli_transact(o, c, req, &reply, &line);
	if (rc != EXIT_OK)
		goto out;

	events = cJSON_GetObjectItemCaseSensitive(reply, "events");
	if (!cJSON_IsArray(events)) {
		fo_cli_cmd_error(o, "malformed reply from failoverd: \"events\" is missing or not an array");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (o->json && !fo_cli_print_raw(line, "events", true)) {
		cJSON_ArrayForEach(ev, events) {
			rc = fo_cli_print_event_json(o, ev);
			if (rc != EXIT_OK)
				goto out;
		}
	} else if (!o->json) {
		cJSON_ArrayForEach(ev, events)
			fo_cli_print_event_line(ev);
	}
	fflush(stdout);
	if (!o->follow)
		goto out;

	/* Following: no deadline; the operator ends it with ^C. */
	for (;;) {
		r = fo_cli_conn_read_line(c, -1, &line);
		if (r < 0) {
			fo_cli_cmd_error(o, "%s", r == -ECONNRESET ? "failoverd closed the connection"
					 : fo_cli_read_error_text(r));
			rc = EXIT_DAEMON;
			goto out;
		}
		if (line[0] == '\0')
			continue;
		cJSON_Delete(later);
		later = fo_cli_parse_reply(o, line);
		if (!later) {
			rc = EXIT_DAEMON;
			goto out;
		}
		ev = cJSON_GetObjectItemCaseSensitive(later, "event");
		if (cJSON_IsObject(ev)) {
			if (!o->json)
				fo_cli_print_event_line(ev);
			else if (!fo_cli_print_raw(line, "event", false))
				rc = fo_cli_print_event_json(o, ev);
			if (rc != EXIT_OK)
				goto out;
			fflush(stdout);
		} else if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(later, "ok"))) {
			const char *e = fo_cli_jstr(later, "error");

			fprintf(stderr, "failoverctl: %s: ", o->cmd);
			fo_cli_put_clean(stderr, e ? e : "failoverd ended the stream without saying why");
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

int fo_cli_cmd_metrics(const struct options *o, struct conn *c)
{
	cJSON *req = NULL, *reply = NULL;
	const char *text;
	size_t len;
	int rc;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "metrics")) {
		fo_cli_cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	rc = fo_cli_transact(o, c, req, &reply, NULL);
	if (rc != EXIT_OK)
		goto out;
	text = fo_cli_jstr(reply, "text");
	if (!text) {
		fo_cli_cmd_error(o, "malformed reply from failoverd: \"text\" is missing or not a string");
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

