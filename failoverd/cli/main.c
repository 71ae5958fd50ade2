/* SPDX-License-Identifier: MIT */
/*
 * failoverctl - the operator's CLI for failoverd.
 *
 * It talks only to the daemon's control socket: line-delimited JSON, one
 * request line, one reply line ({"ok":true,...} or {"ok":false,"error":..}).
 * `events --follow` keeps the connection and reads {"event":{...}} lines.
 * It links no daemon code, only proto/ (the command names, the event's
 * names and line, the deadline rule), so the CLI keeps working against a
 * daemon of another build as long as the protocol holds.
 *
 * This file: the command line and the dispatch. The connection is conn.c,
 * printing render.c, the one-exchange commands commands.c, drill.c the
 * drill and its rounds, report.c the drill report's files.
 *
 * Exit codes (scripts and the lab runner rely on them):
 *   0  success; for drill: PASS
 *   1  the daemon refused, replied with something unusable, did not reply
 *      in time, or closed the connection; for drill: FAIL
 *   2  usage error (nothing was sent)
 *   3  cannot connect to the control socket
 *   4  drill --report: every round passed but the report is incomplete
 *      (a file could not be written, or python3/matplotlib could not plot)
 *   5  status: a pair is not protected (failoverd's "protected": ARMED with
 *      a verified, paused standby), so that monitoring can run it as is
 *
 * `status --watch` polls every --interval seconds until SIGINT/SIGTERM
 * (exit 0), surviving a daemon restart (watch.c).
 *
 * `drill --rounds N` repeats a drill, waiting between rounds (status polls)
 * until the pair is ARMED again, and prints per-phase statistics; with
 * --report DIR it also writes samples.csv, samples.json, summary.md and,
 * through fo-drill-report.py, phases.png and pause_vs_unpause.png.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "cli/cli.h"
#include "lib/limits.h"
#include "proto/commands.h"
#include "proto/drill.h"

#define DEFAULT_SOCKET        "/run/failoverd/control.sock"
#define ROUNDS_MAX            100000

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("failoverctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'failoverctl --help' for more information.\n", stderr);
}

/* ---- arguments ---------------------------------------------------------- */

static void print_help(void)
{
	printf("Usage: failoverctl [OPTIONS] COMMAND [ARGS]\n"
	       "\n"
	       "Control failoverd through its control socket.\n"
	       "\n"
	       "Commands:\n"
	       "  status [--json] [--watch [--interval SEC]]\n"
	       "                             pairs, their state, members, switch path, heartbeat\n"
	       "                             age; exit 5 when a pair is not protected\n"
	       "  switchover PAIR            switch PAIR to its standby now\n"
	       "  arm PAIR                   let PAIR fail over automatically\n"
	       "  disarm PAIR                stop PAIR from failing over\n"
	       "  stand-down PAIR            disarm PAIR and pause what runs of it: nothing\n"
	       "                             of it runs here (served from another host)\n"
	       "  clear-failed MEMBER        after repairing a member that failed: trust it\n"
	       "                             again (then `arm PAIR` adopts it as standby)\n"
	       "  events [--follow] [--json] recent events with phase timings (us)\n"
	       "  metrics                    Prometheus metrics text\n"
	       "  kernel [--json]            pairs the kernel module (kmod-switch) has armed,\n"
	       "                             with the configured pair owning each id\n"
	       "  drill PAIR --fault KIND [--rounds N] [--report DIR] [--json]\n"
	       "                             inject a fault, wait for the failover, print\n"
	       "                             the timeline and PASS/FAIL against deadline_ms\n"
	       "                             KIND: one of the drill faults below\n"
	       "                             --rounds: repeat, waiting for ARMED in between,\n"
	       "                             then print mean/variance/min/max per phase\n"
	       "\n"
	       "Drill faults (drill --fault KIND):\n");
	/* The protocol's table, the one the daemon checks against. */
	for (int k = 0; k < FO_DRILL_COUNT; k++)
		printf("  %-*s %s\n", FO_DRILL_NAME_MAX, fo_drill_kind_name((enum fo_drill_kind)k),
		       fo_drill_kind_info((enum fo_drill_kind)k)->help);
	printf("\n"
	       "Options:\n"
	       "  -s, --socket PATH   control socket (default $FAILOVERD_SOCKET, else\n"
	       "                      " DEFAULT_SOCKET ")\n"
	       "      --timeout SEC   how long to wait for a reply (default 10, drill 120)\n"
	       "      --json          machine-readable output (status, events, drill)\n"
	       "      --follow        keep printing events as they happen (events)\n"
	       "      --watch         poll again every --interval seconds until ^C or\n"
	       "                      SIGTERM (status): redrawn in place on a terminal,\n"
	       "                      else one snapshot after another; with --json one\n"
	       "                      reply line per poll. Keeps polling while failoverd\n"
	       "                      is unreachable.\n"
	       "      --interval SEC  seconds between --watch polls (default 2, 0.1 to\n"
	       "                      86400)\n"
	       "      --fault KIND    the fault to inject (drill)\n"
	       "      --rounds N      drill N times (drill; default 1)\n"
	       "      --round-timeout SEC\n"
	       "                      how long the pair may take to be ARMED again\n"
	       "                      between rounds (drill; default 180)\n"
	       "      --report DIR    write samples.csv, samples.json, summary.md and\n"
	       "                      PNG plots (python3 + matplotlib, script found via\n"
	       "                      $FO_DRILL_REPORT or " REPORT_SCRIPT_SHARE ",\n"
	       "                      run by $FO_PYTHON, else python3, /usr/bin/python3)\n"
	       "  -h, --help          show this help\n"
	       "\n"
	       "Exit status: 0 ok (drill PASS), 1 daemon error or drill FAIL,\n"
	       "2 usage error, 3 cannot connect, 4 drills passed but the report is\n"
	       "incomplete, 5 status (also --json): a pair is not protected (not ARMED\n"
	       "with a verified, paused standby). status --watch ends with 0 on\n"
	       "SIGINT/SIGTERM.\n");
}

enum {
	OPT_TIMEOUT = 256, OPT_JSON, OPT_FOLLOW, OPT_FAULT, OPT_ROUNDS, OPT_ROUND_TIMEOUT, OPT_REPORT,
	OPT_WATCH, OPT_INTERVAL,
};

/* Seconds: > 0, at most a million (about 11 days). */
static int parse_seconds(const char *opt, const char *arg, double *ret)
{
	char *end;

	errno = 0;
	*ret = strtod(arg, &end);
	if (errno || end == arg || *end || !(*ret > 0) || *ret > 1e6) {
		usage_error("%s: expected a number of seconds > 0, got '%s'", opt, arg);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		{ "fault", required_argument, NULL, OPT_FAULT },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "round-timeout", required_argument, NULL, OPT_ROUND_TIMEOUT },
		{ "report", required_argument, NULL, OPT_REPORT },
		{ "watch", no_argument, NULL, OPT_WATCH },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("FAILOVERD_SOCKET");
	enum fo_request_cmd cmd;
	bool wants_pair;
	int opt, npos;

	o->socket_path = env && env[0] ? env : DEFAULT_SOCKET;
	opterr = 0; /* our messages, in our format */
	while ((opt = getopt_long(argc, argv, ":s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o->socket_path = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_seconds("--timeout", optarg, &o->timeout_s) < 0)
				return -EINVAL;
			o->timeout_set = true;
			break;
		case OPT_ROUND_TIMEOUT:
			if (parse_seconds("--round-timeout", optarg, &o->round_timeout_s) < 0)
				return -EINVAL;
			o->round_timeout_set = true;
			break;
		case OPT_ROUNDS: {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v < 1 ||
			    v > ROUNDS_MAX) {
				usage_error("--rounds: expected a whole number from 1 to %d, got '%s'",
					    ROUNDS_MAX, optarg);
				return -EINVAL;
			}
			o->rounds = (unsigned)v;
			o->rounds_set = true;
			break;
		}
		case OPT_REPORT:
			if (!optarg[0]) {
				usage_error("--report: expected a directory, got ''");
				return -EINVAL;
			}
			o->report_dir = optarg;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_FOLLOW:
			o->follow = true;
			break;
		case OPT_WATCH:
			o->watch = true;
			break;
		case OPT_INTERVAL: {
			char *end;

			errno = 0;
			o->interval_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->interval_s >= WATCH_INTERVAL_MIN_S) ||
			    o->interval_s > WATCH_INTERVAL_MAX_S) {
				usage_error("--interval: expected a number of seconds from %g to %g, got '%s'",
					    WATCH_INTERVAL_MIN_S, WATCH_INTERVAL_MAX_S, optarg);
				return -EINVAL;
			}
			o->interval_set = true;
			break;
		}
		case OPT_FAULT:
			o->fault = optarg;
			break;
		case 'h':
			print_help();
			return 1;
		case ':':
			usage_error("option '%s' needs an argument", argv[optind - 1]);
			return -EINVAL;
		default:
			if (optopt)
				usage_error("unknown option '-%c'", optopt);
			else
				usage_error("unknown option '%s'", argv[optind - 1]);
			return -EINVAL;
		}
	}

	npos = argc - optind;
	if (npos == 0) {
		usage_error("no command given");
		return -EINVAL;
	}
	o->cmd = argv[optind];
	if (fo_request_cmd_parse(o->cmd, &cmd) < 0) {
		usage_error("unknown command '%s'", o->cmd);
		return -EINVAL;
	}

	/* PAIR or MEMBER: the object the request names. */
	wants_pair = fo_request_arg(cmd) != FO_REQ_ARG_NONE;
	if (wants_pair) {
		bool member = fo_request_arg(cmd) == FO_REQ_ARG_MEMBER; /* a domain name, not a pair's */

		if (npos < 2) {
			usage_error("%s: missing %s", o->cmd, member ? "MEMBER" : "PAIR");
			return -EINVAL;
		}
		o->pair = argv[optind + 1];
		o->member = member;
		if (member && (!o->pair[0] || strlen(o->pair) > FO_DOMNAME_MAX || strpbrk(o->pair, "/ \t\n"))) {
			usage_error("%s: invalid member name '%s' (a domain name: 1 to %d bytes, no '/' or whitespace)",
				    o->cmd, o->pair, FO_DOMNAME_MAX);
			return -EINVAL;
		}
		if (!member && !fo_proto_pair_name_ok(o->pair)) {
			usage_error("%s: invalid pair name '%s' (1 to %d of A-Z a-z 0-9 _ . -)",
				    o->cmd, o->pair, FO_DOMNAME_MAX);
			return -EINVAL;
		}
	}
	if (npos > (wants_pair ? 2 : 1)) {
		usage_error("%s: unexpected argument '%s'", o->cmd,
			    argv[optind + (wants_pair ? 2 : 1)]);
		return -EINVAL;
	}

	if (o->json && strcmp(o->cmd, "status") != 0 && strcmp(o->cmd, "events") != 0 &&
	    strcmp(o->cmd, "drill") != 0 && strcmp(o->cmd, "kernel") != 0) {
		usage_error("%s: --json applies only to status, events, drill and kernel", o->cmd);
		return -EINVAL;
	}
	if (o->follow && strcmp(o->cmd, "events") != 0) {
		usage_error("%s: --follow applies only to events", o->cmd);
		return -EINVAL;
	}
	if (o->watch && strcmp(o->cmd, "status") != 0) {
		usage_error("%s: --watch applies only to status", o->cmd);
		return -EINVAL;
	}
	if (o->interval_set && !o->watch) {
		usage_error("%s: --interval applies only to status --watch", o->cmd);
		return -EINVAL;
	}
	if (!o->interval_set)
		o->interval_s = DEFAULT_WATCH_INTERVAL_S;
	if (strcmp(o->cmd, "drill") == 0) {
		enum fo_drill_kind kind;

		if (!o->fault) {
			usage_error("drill: missing --fault KIND (%s)", fo_drill_kinds_text());
			return -EINVAL;
		}
		if (fo_drill_kind_parse(o->fault, &kind) < 0) {
			usage_error("drill: unknown fault '%s' (%s)", o->fault, fo_drill_kinds_text());
			return -EINVAL;
		}
	} else if (o->fault || o->rounds_set || o->round_timeout_set || o->report_dir) {
		usage_error("%s: --%s applies only to drill", o->cmd,
			    o->fault ? "fault" : o->rounds_set ? "rounds"
			    : o->round_timeout_set ? "round-timeout" : "report");
		return -EINVAL;
	}
	if (!o->rounds_set)
		o->rounds = 1;
	if (!o->round_timeout_set)
		o->round_timeout_s = DEFAULT_ROUND_TIMEOUT_S;

	if (!o->socket_path[0] || strlen(o->socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		usage_error("socket path '%s' is empty or too long (max %zu bytes)", o->socket_path,
			    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return -EINVAL;
	}
	if (!o->timeout_set)
		o->timeout_s = strcmp(o->cmd, "drill") == 0 ? DEFAULT_DRILL_TIMEOUT_S
							    : DEFAULT_TIMEOUT_S;
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct conn c = { .fd = -1 };
	int rc, r;

	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r > 0 ? EXIT_OK : EXIT_USAGE;

	if (strcmp(o.cmd, "status") == 0)
		rc = fo_cli_cmd_status(&o, &c);
	else if (strcmp(o.cmd, "events") == 0)
		rc = fo_cli_cmd_events(&o, &c);
	else if (strcmp(o.cmd, "metrics") == 0)
		rc = fo_cli_cmd_metrics(&o, &c);
	else if (strcmp(o.cmd, "kernel") == 0)
		rc = fo_cli_cmd_kernel(&o, &c);
	else if (strcmp(o.cmd, "drill") == 0 && (o.rounds_set || o.report_dir))
		rc = fo_cli_cmd_drill_rounds(&o, &c);
	else if (strcmp(o.cmd, "drill") == 0)
		rc = fo_cli_cmd_drill(&o, &c);
	else
		rc = fo_cli_cmd_pair_action(&o, &c);
	fo_cli_conn_close(&c);

	/* Output that never reached its reader is a failure a script must see. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "failoverctl: writing output: %s\n", strerror(errno));
		if (rc == EXIT_OK || rc == EXIT_UNPROTECTED)
			rc = EXIT_DAEMON;
	}
	return rc;
}
