// SPDX-License-Identifier: MIT
/*
 * fo_trace_args.c - fo-trace's command line: --help's text and the
 * options, checked against each other before anything is traced.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fo_trace_tool.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fo-trace [OPTIONS] [-- COMMAND [ARG...]]\n"
		"       fo-trace --xl [-n N] [OPTIONS] -- xl pause|unpause DOMAIN\n"
		"\n"
		"Daemon mode (default): attach to failoverd's threads, run COMMAND (e.g. failoverctl drill)\n"
		"or trace for --duration, then break every switchover in the window down phase by phase:\n"
		"fault -> woken -> running -> detected -> ... -> pause ioctl -> ... -> unpause_done\n"
		"(the ioctl points with --ioctl; by default the scheduler only, cheap enough to leave attached).\n"
		"--xl: run COMMAND N times, traced itself: spawn -> exec -> first hypercall -> domctl -> exit.\n"
		"\n"
		"  -p, --pid PID          failoverd's pid (default: the peer of its control socket)\n"
		"  -s, --socket PATH      failoverd's control socket (default $FAILOVERD_SOCKET or %s)\n"
		"  -d, --duration S       trace S seconds when no COMMAND is given (default 10)\n"
		"  -t, --timeout S        kill COMMAND after S seconds (default 120)\n"
		"      --xl               trace COMMAND (an xl run) instead of failoverd\n"
		"  -n, --repeat N         --xl: run COMMAND N times (default 1, max %d)\n"
		"  -j, --json FILE        write the JSON report (- for stdout; the table then goes to stderr)\n"
		"      --png FILE         draw the timeline (needs --json FILE; /usr/bin/python3 + matplotlib)\n"
		"      --events FILE      correlate with these events (failoverctl events --json) instead of asking\n"
		"      --tolerance-us US  a kernel stamp may lie this far outside the daemon's interval (default 2)\n"
		"      --btf FILE         the kernel's BTF, for kernels without /sys/kernel/btf/vmlinux\n"
		"      --xentrace DOMS    also run xentrace (scheduler events) and merge the events of these\n"
		"                         domains (names or ids, comma separated) into the timeline\n"
		"      --xentrace-bin P   the xentrace binary (default: xentrace in PATH or /usr/lib/xen-4.17/bin)\n"
		"      --ioctl            daemon mode: also probe every privcmd / fo_switch ioctl (the time inside\n"
		"                         each hypercall; costs the switch +20-40 %% at p50, see README;\n"
		"                         on by default with --xl and --xentrace)\n"
		"      --no-ioctl         do not probe the ioctls (the default in plain daemon mode)\n"
		"      --no-sched         do not trace wake-ups and context switches (lighter; no run-queue data)\n"
		"  -q, --quiet            no table on stdout\n"
		"  -h, --help\n"
		"Exit status: 0 = traced and reported; 1 = an error (named on stderr); 2 = usage.\n",
		DEFAULT_SOCKET, MAX_CMD_RUNS);
}

void fo_trace_parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_XL = 256, OPT_PNG, OPT_EVENTS, OPT_TOL, OPT_BTF, OPT_TP, OPT_XT, OPT_XTBIN, OPT_PLOT, OPT_NOIOC,
	       OPT_NOSCHED, OPT_IOC };
	static const struct option lo[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "socket", required_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "xl", no_argument, NULL, OPT_XL },
		{ "repeat", required_argument, NULL, 'n' },
		{ "json", required_argument, NULL, 'j' },
		{ "png", required_argument, NULL, OPT_PNG },
		{ "events", required_argument, NULL, OPT_EVENTS },
		{ "tolerance-us", required_argument, NULL, OPT_TOL },
		{ "btf", required_argument, NULL, OPT_BTF },
		/* test hook: one more tracepoint the preflight must find */
		{ "require-tracepoint", required_argument, NULL, OPT_TP },
		{ "xentrace", required_argument, NULL, OPT_XT },
		{ "xentrace-bin", required_argument, NULL, OPT_XTBIN },
		{ "plot-script", required_argument, NULL, OPT_PLOT },
		{ "ioctl", no_argument, NULL, OPT_IOC },
		{ "no-ioctl", no_argument, NULL, OPT_NOIOC },
		{ "no-sched", no_argument, NULL, OPT_NOSCHED },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;
	char *end;

	memset(o, 0, sizeof(*o));
	o->socket = getenv("FAILOVERD_SOCKET") ? getenv("FAILOVERD_SOCKET") : DEFAULT_SOCKET;
	o->duration_s = 10;
	o->timeout_s = 120;
	o->repeat = 1;
	o->tol_ns = 2000;
	while ((c = getopt_long(argc, argv, "+p:s:d:t:n:j:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'p': {
			long v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > INT_MAX) {
				fprintf(stderr, "fo-trace: --pid: '%s' is not a pid\n", optarg);
				exit(EXIT_USAGE);
			}
			o->pid = (pid_t)v;
			break;
		}
		case 's': o->socket = optarg; break;
		case 'd':
		case 't': {
			double v = strtod(optarg, &end);
			if (*end || v <= 0 || v > 86400) {
				fprintf(stderr, "fo-trace: -%c: '%s' is not a number of seconds in (0, 86400]\n", c, optarg);
				exit(EXIT_USAGE);
			}
			if (c == 'd')
				o->duration_s = v;
			else
				o->timeout_s = v;
			break;
		}
		case 'n': {
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > MAX_CMD_RUNS) {
				fprintf(stderr, "fo-trace: --repeat: '%s' is not in 1..%d\n", optarg, MAX_CMD_RUNS);
				exit(EXIT_USAGE);
			}
			o->repeat = (unsigned)v;
			break;
		}
		case 'j': o->json_path = optarg; break;
		case 'q': o->quiet_table = true; break;
		case OPT_XL: o->xl = true; break;
		case OPT_PNG: o->png_path = optarg; break;
		case OPT_EVENTS: o->events_path = optarg; break;
		case OPT_TOL: {
			double v = strtod(optarg, &end);
			if (*end || v < 0 || v > 1e6) {
				fprintf(stderr, "fo-trace: --tolerance-us: '%s' is not in 0..1000000\n", optarg);
				exit(EXIT_USAGE);
			}
			o->tol_ns = (uint64_t)(v * 1000);
			break;
		}
		case OPT_BTF: o->btf_path = optarg; break;
		case OPT_TP: o->extra_tp = optarg; break;
		case OPT_XT: o->xentrace_doms = optarg; break;
		case OPT_XTBIN: o->xentrace_bin = optarg; break;
		case OPT_PLOT: o->plot_script = optarg; break;
		case OPT_IOC: o->ioctl = true; break;
		case OPT_NOIOC: o->no_ioctl = true; break;
		case OPT_NOSCHED: o->no_sched = true; break;
		case 'h': usage(stdout); exit(EXIT_OKAY);
		default: usage(stderr); exit(EXIT_USAGE);
		}
	}
	if (optind < argc)
		o->cmd = &argv[optind];
	if (o->xl && !o->cmd) {
		fprintf(stderr, "fo-trace: --xl needs the command to trace after --, e.g. -- xl pause DOMAIN\n");
		exit(EXIT_USAGE);
	}
	if (o->png_path && (!o->json_path || !strcmp(o->json_path, "-"))) {
		fprintf(stderr, "fo-trace: --png needs --json FILE (the plot is drawn from that file)\n");
		exit(EXIT_USAGE);
	}
	if (o->ioctl && o->no_ioctl) {
		fprintf(stderr, "fo-trace: --ioctl and --no-ioctl contradict each other\n");
		exit(EXIT_USAGE);
	}
	/* --xentrace lines Xen's view up with the pause/unpause ioctls (the
	 * domains and the dom0 vCPU come from them): a diagnosis, so it
	 * takes them by default too. */
	if (!o->xl && !o->ioctl && !o->xentrace_doms)
		o->no_ioctl = true;
	if (o->xl && o->xentrace_doms) {
		fprintf(stderr, "fo-trace: --xentrace applies to daemon mode (a drill), not --xl\n");
		exit(EXIT_USAGE);
	}
}
