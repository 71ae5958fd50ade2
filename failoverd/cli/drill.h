/* SPDX-License-Identifier: MIT */
/*
 * drill.h - a run of drill rounds as drill.c collects it and report.c
 * writes it out. Internal to failoverctl.
 */
#ifndef FO_CLI_DRILL_H
#define FO_CLI_DRILL_H

#include "cli/cli.h"

/*
 * The timings a drill report is about, all in microseconds. pause and
 * unpause are the hypervisor calls alone (done - issued); fault->running is
 * what the deadline judges; first heartbeat is when the new active proved it
 * runs. Same rows as the seed paper's Table 5.
 */
enum { ST_DETECTED, ST_PAUSE, ST_UNPAUSE, ST_RUNNING, ST_FIRST_HB, N_STATS };

struct drill_stat {
	const char *key;   /* samples.json and CSV (+ "_us") */
	const char *label; /* tables */
};
extern const struct drill_stat fo_cli_drill_stats[N_STATS];

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

/* drill.c */
double fo_cli_phase_stats_variance(const struct phase_stats *s);
void fo_cli_fmt_deadline(const struct drill_run *run, char *buf, size_t len);

/* report.c */
int fo_cli_make_dirs(const char *path);
/* samples.json and the --json output; NULL when out of memory. */
cJSON *fo_cli_drill_document(const struct drill_run *run);
/* CSV, JSON, plots, then the Markdown; < 0 if any is missing. */
int fo_cli_write_report(const struct drill_run *run, const char *doc_text);

#endif
