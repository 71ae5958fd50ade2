/* SPDX-License-Identifier: MIT */
/*
 * bench-ctl.h - what bench-ctl.c (the rounds, main) and bench-ctl-socket.c
 * (the control socket) share: the run's context, a pair's status, a
 * switch as the event stream reported it.
 */
#ifndef FO_BENCH_CTL_H
#define FO_BENCH_CTL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <xenctrl.h>
#include <xenstore.h>

#define BENCH_CSV_HEADER                                                                              \
	"i,mode,from,to,result,fault,request_ns,event_after_inject_ns,seen_ns,rearm_ns,detected_us,"  \
	"decided_us,pause_issued_us,pause_done_us,unpause_issued_us,unpause_done_us,first_heartbeat_us," \
	"event_id,path,standby_running_ns,roles_at_request,roles_ns"

/* A failed round is retried after a restore; this many in a row ends the run. */
#define BENCH_MAX_ERRORS 5
#define BENCH_EVENT_TIMEOUT_MS 15000
#define BENCH_ARMED_TIMEOUT_MS 15000

static const char *const bench_phases[] = { "detected",	 "decided",	   "pause_issued",   "pause_done",
					    "unpause_issued", "unpause_done", "first_heartbeat" };
#define BENCH_N_PHASES (sizeof(bench_phases) / sizeof(bench_phases[0]))

enum bench_mode { BENCH_MANUAL, BENCH_FAULT, BENCH_FOLLOW, BENCH_DRILL };

/* SIGTERM/SIGINT: end the run after the current round. */
extern volatile sig_atomic_t bench_stop;

/* One connection to the control socket, with its partial input line. */
struct bench_conn {
	int fd;
	char *buf;
	size_t len, cap;
};

struct bench_ctx {
	const char *sock_path;
	const char *pair;
	enum bench_mode mode;
	struct bench_conn ctl, follow;
	struct xs_handle *xs;
	FILE *events;
	double last_event_id; /* newest event id seen on the stream */
	const char *owner;    /* --owner: the status's owner a round waits for */
	xc_interface *xch;    /* with --poll-us */
	long poll_us, window_ms;
	pid_t freeze_pid;     /* --freeze-pid, 0: none */
	bool wait_roles;      /* --wait-roles */
	bool note_roles;      /* --note-roles, or --wait-roles */
};

/* The state of our pair, from {"cmd":"status"}. */
struct bench_pair {
	char state[16];
	char active[64], standby[64], owner[16];
	int active_domid, standby_domid;
};

/* One switch, as the event stream reported it. */
struct bench_switch {
	double id;
	int64_t time_ns;
	char from[64], to[64], result[16], fault[32], path[16];
	bool have_phase[BENCH_N_PHASES];
	double phase_us[BENCH_N_PHASES];
};

/* bench-ctl.c: write `cmd` into domain `domid`'s data/failover/control key */
int bench_xs_control(struct bench_ctx *x, int domid, const char *cmd);

/* bench-ctl-socket.c */
int bench_connect(const char *path, struct bench_conn *c);
int bench_send(struct bench_conn *c, const char *line);
int bench_read_json(struct bench_conn *c, int timeout_ms, cJSON **ret);
int bench_ctl_fresh(struct bench_ctx *x);
int bench_request(struct bench_ctx *x, const char *line, cJSON **ret);
const char *bench_jstr(const cJSON *o, const char *key);
double bench_jnum(const cJSON *o, const char *key, double dflt);
int bench_status(struct bench_ctx *x, struct bench_pair *ret);
void bench_note_event(struct bench_ctx *x, const cJSON *ev);
int bench_arm(struct bench_ctx *x, const struct bench_pair *st);
int bench_ensure_armed(struct bench_ctx *x, struct bench_pair *ret);
int bench_wait_event(struct bench_ctx *x, const char *kind, double after_id, int timeout_ms,
		     struct bench_switch *sw);

#endif
