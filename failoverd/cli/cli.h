/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what failoverctl's files share: the options, the connection, the
 * exit codes (documented at the top of main.c) and the helpers more than
 * one command uses. Internal to failoverctl.
 */
#ifndef FO_CLI_H
#define FO_CLI_H

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes: the table at the top of main.c. */
#define EXIT_OK      0
#define EXIT_DAEMON  1
#define EXIT_USAGE   2
#define EXIT_CONNECT 3
#define EXIT_REPORT  4
#define EXIT_UNPROTECTED 5

/* status --watch: how often by default, and the bounds of --interval. */
#define DEFAULT_WATCH_INTERVAL_S 2.0
#define WATCH_INTERVAL_MIN_S     0.1
#define WATCH_INTERVAL_MAX_S     86400.0

#define DEFAULT_TIMEOUT_S     10.0
/* A drill waits for detection, the switch and the first heartbeat of the
 * new active, which with long heartbeat timeouts can take a while. */
#define DEFAULT_DRILL_TIMEOUT_S 120.0
/* Between drill rounds: a rebuild boots a domain, under emulation slowly. */
#define DEFAULT_ROUND_TIMEOUT_S 180.0

/* fo-drill-report.py: where an installed failoverctl finds it (report.c),
 * and what --help says. */
#define REPORT_SCRIPT          "fo-drill-report.py"
#define REPORT_SCRIPT_SHARE    "/usr/share/failoverd/" REPORT_SCRIPT

struct options {
	const char *socket_path;
	double timeout_s;
	bool timeout_set;
	bool json;
	bool follow;
	bool watch;             /* status --watch */
	double interval_s;      /* status --watch: between polls */
	bool interval_set;
	FILE *err;              /* where errors go; NULL: stderr (--watch on a tty: the frame) */
	const char *fault;
	unsigned rounds;        /* drill: how many; 1 unless --rounds */
	bool rounds_set;
	double round_timeout_s; /* drill: how long to wait for ARMED between rounds */
	bool round_timeout_set;
	const char *report_dir; /* drill --report */
	const char *cmd;
	const char *pair;
	bool member;            /* pair is a member's name (clear-failed) */
};

struct conn {
	int fd;
	char *buf;
	size_t len;      /* bytes in buf */
	size_t consumed; /* bytes of buf already handed out as a line */
	size_t cap;
};

/* ---- render.c: output and the reply's fields -------------------------- */

FILE *fo_cli_err_out(const struct options *o);
void fo_cli_cmd_error(const struct options *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fo_cli_put_clean(FILE *f, const char *s);
void fo_cli_clean_copy(char *dst, size_t len, const char *s);
const char *fo_cli_jstr(const cJSON *obj, const char *key);
bool fo_cli_jnum(const cJSON *obj, const char *key, double *ret);
void fo_cli_format_age_s(char *buf, size_t len, double s);
void fo_cli_format_ms(char *buf, size_t len, double ms);
void fo_cli_format_member(char *buf, size_t len, const cJSON *p, const char *name_key, const char *domid_key);
void fo_cli_print_event_line(const cJSON *ev);
int fo_cli_print_event_json(const struct options *o, const cJSON *ev);

/* ---- conn.c: the control socket ----------------------------------------- */

/* Set by SIGINT/SIGTERM while status --watch runs (watch.c): a wait on the
 * daemon gives up (-EINTR) and nothing more is said about it. */
extern volatile sig_atomic_t fo_cli_stop;

int64_t fo_cli_now_ms(void);
void fo_cli_conn_close(struct conn *c);
int fo_cli_conn_read_line(struct conn *c, int64_t deadline, char **ret_line);
const char *fo_cli_read_error_text(int r);
cJSON *fo_cli_parse_reply(const struct options *o, const char *line);
int fo_cli_transact(const struct options *o, struct conn *c, const cJSON *req, cJSON **ret_reply, char **ret_line);

/* ---- json_raw.c: the daemon's JSON text as sent ------------------------- */

const char *fo_cli_raw_member(const char *obj, const char *key, const char **ret_end);
bool fo_cli_print_raw(const char *line, const char *key, bool elements);

/* ---- commands.c, drill.c, watch.c --------------------------------------- */

int fo_cli_request_pairs(const struct options *o, struct conn *c, const char *cmd, cJSON **ret_reply,
			 const cJSON **ret_pairs, bool *ret_printed);
int fo_cli_cmd_status(const struct options *o, struct conn *c);
int fo_cli_status_once(const struct options *o, struct conn *c, FILE *out);
int fo_cli_cmd_status_watch(const struct options *o, struct conn *c);
int fo_cli_cmd_kernel(const struct options *o, struct conn *c);
int fo_cli_cmd_pair_action(const struct options *o, struct conn *c);
int fo_cli_cmd_events(const struct options *o, struct conn *c);
int fo_cli_cmd_metrics(const struct options *o, struct conn *c);
int fo_cli_cmd_drill(const struct options *o, struct conn *c);
int fo_cli_cmd_drill_rounds(const struct options *o, struct conn *c);

#endif
