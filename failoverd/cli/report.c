/* SPDX-License-Identifier: MIT */
/*
 * report.c - drill --report DIR: samples.csv, samples.json, summary.md and,
 * through fo-drill-report.py, the plots.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/drill.h"

/* ---- the report files --------------------------------------------------- */

/* mkdir -p: the report directory is usually new, and often nested. */
int fo_cli_make_dirs(const char *path)
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
		fo_cli_cmd_error(o, "cannot write %s: %s", path, strerror(errno));
	return f;
}

static int report_close(const struct options *o, FILE *f, const char *path)
{
	bool failed = ferror(f);

	if (fclose(f) != 0 || failed) {
		fo_cli_cmd_error(o, "writing %s failed: %s", path, strerror(errno ? errno : EIO));
		return -EIO;
	}
	return 0;
}

/* A CSV cell: quoted when it holds a separator or a quote (RFC 4180). */
static void csv_put(FILE *f, const char *s)
{
	char clean[128];
	const char *p;

	fo_cli_clean_copy(clean, sizeof(clean), s ? s : "");
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
		fprintf(f, ",%s_us", fo_cli_drill_stats[k].key);
	fputs(",within_deadline\n", f);
	for (i = 0; i < run->done; i++) {
		const struct drill_round *r = &run->rounds[i];
		const cJSON *within = cJSON_GetObjectItemCaseSensitive(r->event, "within_deadline");

		fprintf(f, "%u,", i + 1);
		csv_put(f, fo_cli_jstr(r->event, "fault"));
		fputc(',', f);
		csv_put(f, fo_cli_jstr(r->event, "from"));
		fputc(',', f);
		csv_put(f, fo_cli_jstr(r->event, "to"));
		fputc(',', f);
		csv_put(f, fo_cli_jstr(r->event, "result"));
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
cJSON *fo_cli_drill_document(const struct drill_run *run)
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
		     cJSON_AddStringToObject(obj, "fault", (s = fo_cli_jstr(r->event, "fault")) ? s : "") &&
		     cJSON_AddStringToObject(obj, "from", (s = fo_cli_jstr(r->event, "from")) ? s : "") &&
		     cJSON_AddStringToObject(obj, "to", (s = fo_cli_jstr(r->event, "to")) ? s : "") &&
		     cJSON_AddStringToObject(obj, "result", (s = fo_cli_jstr(r->event, "result")) ? s : "");
		for (k = 0; ok && k < N_STATS; k++) {
			snprintf(key, sizeof(key), "%s_us", fo_cli_drill_stats[k].key);
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
		ok = cJSON_AddStringToObject(obj, "phase", fo_cli_drill_stats[k].key) &&
		     cJSON_AddStringToObject(obj, "label", fo_cli_drill_stats[k].label) &&
		     cJSON_AddNumberToObject(obj, "n", s->n) &&
		     add_num_or_null(obj, "mean", s->n, s->mean) &&
		     add_num_or_null(obj, "variance", s->n, fo_cli_phase_stats_variance(s)) &&
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
	fo_cli_fmt_deadline(run, dl, sizeof(dl));
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
			fprintf(f, "| %s | %u | %.1f | %.1f | %.0f | %.0f |\n", fo_cli_drill_stats[k].label,
				s->n, s->mean, fo_cli_phase_stats_variance(s), s->min, s->max);
		else
			fprintf(f, "| %s | 0 | - | - | - | - |\n", fo_cli_drill_stats[k].label);
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
		fprintf(f, " %s (us) |", fo_cli_drill_stats[k].label);
	fputs(" verdict |\n|--:|---|---|---|---|", f);
	for (k = 0; k < N_STATS; k++)
		fputs("--:|", f);
	fputs("---|\n", f);
	for (i = 0; i < run->done; i++) {
		const struct drill_round *r = &run->rounds[i];

		fprintf(f, "| %u | ", i + 1);
		md_put(f, fo_cli_jstr(r->event, "fault"));
		fputs(" | ", f);
		md_put(f, fo_cli_jstr(r->event, "from"));
		fputs(" | ", f);
		md_put(f, fo_cli_jstr(r->event, "to"));
		fputs(" | ", f);
		md_put(f, fo_cli_jstr(r->event, "result"));
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
		fo_cli_cmd_error(o, "FO_DRILL_REPORT=%s: %s", env, strerror(errno));
		return NULL;
	}
	if (access(REPORT_SCRIPT_SHARE, R_OK) == 0)
		return REPORT_SCRIPT_SHARE;
#ifdef FO_SOURCE_DIR
	if (access(FO_SOURCE_DIR "/failoverd/cli/" REPORT_SCRIPT, R_OK) == 0)
		return FO_SOURCE_DIR "/failoverd/cli/" REPORT_SCRIPT;
#endif
	fo_cli_cmd_error(o, "cannot find " REPORT_SCRIPT " (tried $FO_DRILL_REPORT, " REPORT_SCRIPT_SHARE
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
		fo_cli_cmd_error(o, "cannot start %s: %s", python, strerror(errno));
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
			fo_cli_cmd_error(o, "waiting for %s: %s", python, strerror(errno));
			return -errno;
		}
	}
	if (WIFSIGNALED(status)) {
		fo_cli_cmd_error(o, "%s %s was killed by signal %d", python, script, WTERMSIG(status));
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
		fo_cli_cmd_error(o, "%s cannot be run: is python3 installed? (Debian: apt install "
				 "python3 python3-matplotlib; or set FO_PYTHON)", *py);
	else if (r == REPORT_EXIT_NO_MPL)
		fo_cli_cmd_error(o, "matplotlib is missing for %s (Debian: apt install "
				 "python3-matplotlib; or set FO_PYTHON to a python3 that has it)", *py);
	else
		fo_cli_cmd_error(o, "%s %s failed (exit status %d)", *py, script, r);
	return -EIO;
}

/* ---- the command -------------------------------------------------------- */

/* CSV, JSON, plots, then the Markdown that links the plots it got. */
int fo_cli_write_report(const struct drill_run *run, const char *doc_text)
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
