// SPDX-License-Identifier: MIT
/*
 * fo_trace_tool.h - what fo-trace's user-space files share (fo_trace.c,
 * fo_trace_args.c, fo_trace_daemon.c): the options, the exit codes, and
 * the functions one file calls in another. Not the BPF side's header
 * (fo_trace.h is shared with fo_trace.bpf.c).
 */
#ifndef FO_TRACE_TOOL_H
#define FO_TRACE_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#define DEFAULT_SOCKET "/run/failoverd/control.sock"
#define MAX_CMD_RUNS 64

enum exit_code { EXIT_OKAY = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct options {
	pid_t pid;
	const char *socket;
	double duration_s;
	double timeout_s;
	bool xl;
	unsigned repeat;
	const char *json_path;
	const char *png_path;
	const char *events_path;
	const char *btf_path;
	const char *plot_script;
	bool quiet_table;
	uint64_t tol_ns;
	const char *extra_tp;
	const char *xentrace_doms; /* domain names or ids, comma separated */
	const char *xentrace_bin;
	/* Daemon mode traces the scheduler only unless --ioctl: the ioctl
	 * probes run on every privcmd call of the switch and cost far more
	 * than the 5 % budget of an always-attached tracer (README.md,
	 * "Overhead"); --xl needs them (its breakdown is built on them). */
	bool ioctl, no_ioctl, no_sched;
	char **cmd;
};

/* fo_trace.c: "fo-trace: " and the message on stderr, then exit 1. */
__attribute__((noreturn, format(printf, 1, 2))) void fo_trace_die(const char *fmt, ...);

/* fo_trace_args.c: the command line into `o` (exits 2 on a usage error). */
void fo_trace_parse_args(int argc, char **argv, struct options *o);

/* fo_trace_daemon.c: failoverd's control socket and event files. */
pid_t fo_trace_daemon_pid_from_socket(const char *path);
cJSON *fo_trace_control_request(const char *path, const char *req, char *err, size_t len);
cJSON *fo_trace_events_from_file(const char *path);

#endif
