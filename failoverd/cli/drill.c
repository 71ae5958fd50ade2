/* SPDX-License-Identifier: MIT */
/*
 * drill.c - `failoverctl drill`: one drill and its timeline, or --rounds N
 * of them (waiting for ARMED in between) with per-phase statistics. The
 * report files are written by report.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/drill.h"
#include "proto/event_json.h"

/*
 * A drill passes when the switch completed ("result":"ok") and the standby
 * was running within the pair's deadline. The daemon judges the deadline
 * (within_deadline); an event without its verdict (an older daemon) is
 * judged here by the same rule, proto/'s.
 */
static bool drill_passed(const cJSON *ev, char *why, size_t len)
{
	const cJSON *within = cJSON_GetObjectItemCaseSensitive(ev, "within_deadline");
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "phases_us");
	const char *result = fo_cli_jstr(ev, "result");
	double deadline_ms, unpause_us;
	struct fo_proto_event v;
	int64_t det, run;
	bool pass;

	if (!result || strcmp(result, "ok") != 0) {
		char clean[32];

		fo_cli_clean_copy(clean, sizeof(clean), result ? result : "missing");
		snprintf(why, len, "result is %s, not ok", clean);
		return false;
	}
	if (cJSON_IsBool(within)) {
		snprintf(why, len, "%s", cJSON_IsTrue(within) ? "within deadline" : "deadline missed");
		return cJSON_IsTrue(within);
	}
	if (!fo_cli_jnum(ev, "deadline_ms", &deadline_ms) || !fo_cli_jnum(ph, fo_phase_name(FO_PHASE_UNPAUSE_DONE), &unpause_us)) {
		snprintf(why, len, "no deadline verdict and no unpause_done phase");
		return false;
	}
	fo_proto_event_from_json(ev, &v);
	det = v.phase_us[FO_PHASE_DETECTED];
	run = v.phase_us[FO_PHASE_UNPAUSE_DONE];
	pass = fo_proto_within_deadline(det >= 0 ? run - det : -1, run, v.deadline_ms, v.budget_ms);
	snprintf(why, len, "%s", pass ? "within deadline" : "deadline missed");
	return pass;
}

static void print_drill(const cJSON *ev, bool pass, const char *why)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "phases_us");
	const char *s;
	double prev = 0, v, deadline_ms;
	int i;

	fputs("drill ", stdout);
	fo_cli_put_clean(stdout, (s = fo_cli_jstr(ev, "pair")) ? s : "?");
	fputs(": fault ", stdout);
	fo_cli_put_clean(stdout, (s = fo_cli_jstr(ev, "fault")) && s[0] ? s : "?");
	if ((s = fo_cli_jstr(ev, "from")) && s[0]) {
		fputs(", ", stdout);
		fo_cli_put_clean(stdout, s);
		fputs(" -> ", stdout);
		fo_cli_put_clean(stdout, (s = fo_cli_jstr(ev, "to")) && s[0] ? s : "?");
	}
	fputc('\n', stdout);

	printf("  %-16s %12s %12s\n", "phase", "at (us)", "step (us)");
	printf("  %-16s %12d\n", "injection", 0);
	for (i = FO_PHASE_DETECTED; i < FO_PHASE_COUNT; i++) {
		if (!fo_cli_jnum(ph, fo_phase_name(i), &v)) {
			printf("  %-16s %12s\n", fo_phase_label(i), "-");
			continue;
		}
		printf("  %-16s %12.0f %+12.0f\n", fo_phase_label(i), v, v - prev);
		prev = v;
	}
	if ((s = fo_cli_jstr(ev, "message")) && s[0]) {
		fputs("  message: ", stdout);
		fo_cli_put_clean(stdout, s);
		fputc('\n', stdout);
	}
	if (fo_cli_jnum(ph, fo_phase_name(FO_PHASE_UNPAUSE_DONE), &v) && fo_cli_jnum(ev, "deadline_ms", &deadline_ms)) {
		double det = 0, budget_ms = 0;
		fo_cli_jnum(ph, fo_phase_name(FO_PHASE_DETECTED), &det);
		fo_cli_jnum(ev, "budget_ms", &budget_ms);
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
	const char *s = fo_cli_jstr(obj, key);

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

		if (fo_cli_request_pairs(&q, c, "status", &reply, &pairs, &printed) != EXIT_OK) {
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

		fo_cli_jnum(t, "time_ns", &tt);
		fo_cli_jnum(ev, "time_ns", &et);
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

/* {"cmd":"drill","pair":P,"fault":F}, one drill and one round alike. On
 * EXIT_OK *ret_reply (the caller frees it, whatever the outcome) holds an
 * "event" object and *ret_line its raw text. */
static int drill_request(const struct options *o, struct conn *c, cJSON **ret_reply, char **ret_line)
{
	cJSON *req;
	int rc;

	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "drill") ||
	    !cJSON_AddStringToObject(req, "pair", o->pair) ||
	    !cJSON_AddStringToObject(req, "fault", o->fault)) {
		cJSON_Delete(req);
		fo_cli_cmd_error(o, "out of memory");
		return EXIT_DAEMON;
	}
	rc = fo_cli_transact(o, c, req, ret_reply, ret_line);
	cJSON_Delete(req);
	if (rc == EXIT_OK && !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(*ret_reply, "event"))) {
		fo_cli_cmd_error(o, "malformed reply from failoverd: \"event\" is missing or not an object");
		rc = EXIT_DAEMON;
	}
	return rc;
}

int fo_cli_cmd_drill(const struct options *o, struct conn *c)
{
	cJSON *reply = NULL;
	const cJSON *ev;
	char why[96], *line;
	bool pass;
	int rc;

	rc = drill_request(o, c, &reply, &line);
	if (rc != EXIT_OK)
		goto out;

	ev = cJSON_GetObjectItemCaseSensitive(reply, "event");
	pass = drill_passed(ev, why, sizeof(why));
	if (!o->json) {
		print_drill(ev, pass, why);
		print_drill_state(o, c, ev);
	} else if (!fo_cli_print_raw(line, "event", false)) {
		rc = fo_cli_print_event_json(o, ev);
	}
	if (rc == EXIT_OK && !pass)
		rc = EXIT_DAEMON;
out:
	cJSON_Delete(reply);
	return rc;
}

/* ---- drill --rounds: repeated drills, statistics and a report ----------- */

const struct drill_stat fo_cli_drill_stats[N_STATS] = {
	{ "detected", "detected" },
	{ "pause", "pause" },
	{ "unpause", "unpause" },
	{ "fault_to_running", "fault->running" },
	{ "first_heartbeat", "first heartbeat" },
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
double fo_cli_phase_stats_variance(const struct phase_stats *s)
{
	return s->n > 1 ? s->m2 / (s->n - 1) : 0.0;
}

static bool phase_diff(const cJSON *ph, enum fo_phase from, enum fo_phase to, double *ret)
{
	double a, b;

	if (!fo_cli_jnum(ph, fo_phase_name(from), &a) || !fo_cli_jnum(ph, fo_phase_name(to), &b))
		return false;
	*ret = b - a;
	return true;
}

static void round_measure(struct drill_round *r)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(r->event, "phases_us");

	r->have[ST_DETECTED] = fo_cli_jnum(ph, fo_phase_name(FO_PHASE_DETECTED), &r->us[ST_DETECTED]);
	r->have[ST_PAUSE] = phase_diff(ph, FO_PHASE_PAUSE_ISSUED, FO_PHASE_PAUSE_DONE, &r->us[ST_PAUSE]);
	r->have[ST_UNPAUSE] = phase_diff(ph, FO_PHASE_UNPAUSE_ISSUED, FO_PHASE_UNPAUSE_DONE, &r->us[ST_UNPAUSE]);
	r->have[ST_RUNNING] = fo_cli_jnum(ph, fo_phase_name(FO_PHASE_UNPAUSE_DONE), &r->us[ST_RUNNING]);
	r->have[ST_FIRST_HB] = fo_cli_jnum(ph, fo_phase_name(FO_PHASE_FIRST_HEARTBEAT), &r->us[ST_FIRST_HB]);
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
	fo_cli_put_clean(stdout, (s = fo_cli_jstr(r->event, "fault")) && s[0] ? s : "?");
	fputc(' ', stdout);
	fo_cli_put_clean(stdout, (s = fo_cli_jstr(r->event, "from")) && s[0] ? s : "?");
	fputs(" -> ", stdout);
	fo_cli_put_clean(stdout, (s = fo_cli_jstr(r->event, "to")) && s[0] ? s : "?");
	printf(": detected %s, pause %s, unpause %s, running at %s, first heartbeat %s us: %s",
	       v[ST_DETECTED], v[ST_PAUSE], v[ST_UNPAUSE], v[ST_RUNNING], v[ST_FIRST_HB],
	       r->pass ? "PASS" : "FAIL");
	if (!r->pass) {
		printf(" (%s", r->why);
		if ((s = fo_cli_jstr(r->event, "message")) && s[0]) {
			fputs(": ", stdout);
			fo_cli_put_clean(stdout, s);
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
	int64_t deadline = fo_cli_now_ms() + (int64_t)(run->o->round_timeout_s * 1000.0);
	cJSON *req = NULL, *reply = NULL;
	int rc;

	*ret_armed = false;
	so.timeout_s = DEFAULT_TIMEOUT_S;
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "cmd", "status")) {
		fo_cli_cmd_error(run->o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	for (;;) {
		const cJSON *pairs, *p, *found = NULL;
		const char *state, *reason;

		cJSON_Delete(reply);
		reply = NULL;
		rc = fo_cli_transact(&so, c, req, &reply, NULL);
		fo_cli_conn_close(c);
		if (rc != EXIT_OK)
			goto out;
		pairs = cJSON_GetObjectItemCaseSensitive(reply, "pairs");
		cJSON_ArrayForEach(p, pairs) {
			const char *name = fo_cli_jstr(p, "name");

			if (name && strcmp(name, run->o->pair) == 0)
				found = p;
		}
		if (!found) {
			fo_cli_cmd_error(run->o, "failoverd has no pair named %s (see failoverctl status)",
					 run->o->pair);
			rc = EXIT_DAEMON;
			goto out;
		}
		state = fo_cli_jstr(found, "state");
		reason = fo_cli_jstr(found, "reason");
		fo_cli_clean_copy(run->stop_state, sizeof(run->stop_state), state ? state : "?");
		fo_cli_clean_copy(run->stop_reason, sizeof(run->stop_reason), reason ? reason : "");
		if (state && strcmp(state, "ARMED") == 0) {
			*ret_armed = true;
			goto out;
		}
		if (state && (strcmp(state, "DEGRADED") == 0 || strcmp(state, "DISARMED") == 0))
			goto out;
		if (fo_cli_now_ms() >= deadline)
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
	cJSON *reply = NULL;
	const char *raw, *end;
	char *line;
	int rc;

	rc = drill_request(o, c, &reply, &line);
	if (rc != EXIT_OK)
		goto out;
	r->event = cJSON_DetachItemFromObjectCaseSensitive(reply, "event");
	raw = fo_cli_raw_member(line, "event", &end);
	if (raw) {
		r->raw = strndup(raw, (size_t)(end - raw));
	} else {
		char *text = cJSON_PrintUnformatted(r->event);

		r->raw = text ? strdup(text) : NULL;
		cJSON_free(text);
	}
	if (!r->raw) {
		fo_cli_cmd_error(o, "out of memory");
		rc = EXIT_DAEMON;
		goto out;
	}
	r->pass = drill_passed(r->event, r->why, sizeof(r->why));
	round_measure(r);
out:
	fo_cli_conn_close(c);
	cJSON_Delete(reply);
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
		if (run->deadline_ms < 0 && fo_cli_jnum(r->event, "deadline_ms", &d))
			run->deadline_ms = d;
		for (k = 0; k < N_STATS; k++)
			if (r->have[k])
				phase_stats_add(&run->stats[k], r->us[k]);
		if (r->have[ST_RUNNING] &&
		    (run->worst < 0 || r->us[ST_RUNNING] > run->rounds[run->worst].us[ST_RUNNING]))
			run->worst = (int)i;
	}
}

void fo_cli_fmt_deadline(const struct drill_run *run, char *buf, size_t len)
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

	fo_cli_fmt_deadline(run, dl, sizeof(dl));
	printf("\ndrill %s: fault %s, %u of %u rounds, deadline %s\n", o->pair, o->fault, run->done,
	       o->rounds, dl);
	printf("  %-16s %5s %14s %16s %12s %12s\n", "phase (us)", "n", "mean", "variance", "min",
	       "max");
	for (k = 0; k < N_STATS; k++) {
		const struct phase_stats *s = &run->stats[k];

		if (!s->n) {
			printf("  %-16s %5u %14s %16s %12s %12s\n", fo_cli_drill_stats[k].label, 0u, "-", "-",
			       "-", "-");
			continue;
		}
		printf("  %-16s %5u %14.1f %16.1f %12.0f %12.0f\n", fo_cli_drill_stats[k].label, s->n,
		       s->mean, fo_cli_phase_stats_variance(s), s->min, s->max);
	}
	printf("PASS %u/%u within deadline %s", run->passed, o->rounds, dl);
	if (run->worst >= 0)
		printf("; worst round %d: standby running %.0f us after the fault", run->worst + 1,
		       run->rounds[run->worst].us[ST_RUNNING]);
	fputc('\n', stdout);
	if (run->stopped)
		printf("stopped early: %s\n", run->stop_msg);
}


int fo_cli_cmd_drill_rounds(const struct options *o, struct conn *c)
{
	struct drill_run run = { .o = o, .worst = -1 };
	char *doc_text = NULL;
	cJSON *doc = NULL;
	unsigned i;
	int rc = EXIT_OK, r;

	/* Before the first drill: a report that cannot be written is better
	 * known now than after an hour of rounds. */
	if (o->report_dir) {
		r = fo_cli_make_dirs(o->report_dir);
		if (r < 0) {
			fo_cli_cmd_error(o, "report directory %s: %s", o->report_dir, strerror(-r));
			rc = EXIT_REPORT;
			goto out;
		}
	}
	run.rounds = calloc(o->rounds, sizeof(*run.rounds));
	if (!run.rounds) {
		fo_cli_cmd_error(o, "out of memory");
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

	doc = fo_cli_drill_document(&run);
	doc_text = doc ? cJSON_Print(doc) : NULL;
	if (!doc_text) {
		fo_cli_cmd_error(o, "out of memory building the drill summary");
		rc = EXIT_DAEMON;
		goto out;
	}
	if (o->json) {
		puts(doc_text);
		fflush(stdout);
	}
	if (o->report_dir && fo_cli_write_report(&run, doc_text) < 0 && rc == EXIT_OK)
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

