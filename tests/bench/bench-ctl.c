/* SPDX-License-Identifier: MIT */
/*
 * bench-ctl - drives failoverd's switch path N times from one resident
 * process (no process spawn per round) and records the daemon's own phase
 * timestamps for each switch.
 *
 *   --mode manual   {"cmd":"switchover","pair":P} on the control socket;
 *                   the client times send -> reply (the reply is sent once
 *                   the standby runs), then waits, on a second connection
 *                   following the event stream, for the switchover event
 *                   (published once the new active heartbeated) and the
 *                   pair's "armed" event (the old active is the standby).
 *                   With --wait-roles, a round then also waits until
 *                   xenstore holds the roles failoverd publishes for the
 *                   switch (its writer thread writes them after the reply):
 *                   the next round starts from a dom0 that is done with
 *                   this switch, as the fault rounds' restore does.
 *                   --note-roles only records whether they were there
 *                   when the request went out (--wait-roles does too).
 *   --mode fault    writes "stop-heartbeat" into the active's
 *                   data/failover/control key (the agent stops its sequence
 *                   but stays alive), waits for the heartbeat-timeout
 *                   switchover event, then restores the pair: "none" into
 *                   the old active's key and {"cmd":"arm"} (failoverd adopts
 *                   what Xen says: the running member is the active).
 *                   With --poll-us, the standby's state is read from Xen
 *                   (xc_domain_getinfolist) every U us from the injection
 *                   until it runs (standby_running_ns: injection -> seen
 *                   running, in our clock) or --window-ms passed; with
 *                   --freeze-pid too, that process (failoverd) is
 *                   SIGSTOPped, and seen stopped, right after the injection
 *                   (milliseconds, against a heartbeat timeout of hundreds)
 *                   and continued after the window: "dom0's daemon frozen
 *                   for the fault". With --owner, a round starts only once the
 *                   status names that owner for the pair (kernel,
 *                   hypervisor): the path the round is meant to measure.
 *   --mode follow   only record: every event failoverd holds and publishes
 *                   goes to --events until SIGTERM (the whole run's log,
 *                   so that switches no round caused can be counted).
 *   --mode drill    every pair of -p P1,P2,... drilled at once (the scale
 *                   benchmark on real Xen, tests/lab/scenarios/scale-xen.sh,
 *                   and its smoke): each pair ARMED first, then one
 *                   {"cmd":"drill","pair":P,"fault":F} per pair, each on a
 *                   connection of its own (at most 24 pairs), sent back to
 *                   back in -p's order before any (deferred) reply is read
 *                   and kept open until every event came; the events come
 *                   from the follower opened first. One JSON line per pair
 *                   on stdout, in -p's order: {"pair","send_us" (the time
 *                   to get every request out), "switch_events" (drill and
 *                   switchover events seen for the pair until every pair
 *                   had one), "event" (its first, as failoverd published
 *                   it)}. --fault KIND (default heartbeat-loss); --restore
 *                   arms every pair again afterwards (as --mode fault's
 *                   rounds do). Exit 1 when a pair had no event in 60 s.
 *
 * Usage: bench-ctl -s SOCKET --mode manual|fault -p PAIR -n N [--gap-ms G]
 *                  [--rt PRIO] [--cpu C] [--max-s S] [--events FILE]
 *                  [--wait-roles | --note-roles]
 *                  [--owner kernel|hypervisor] [--poll-us U [--window-ms W]
 *                  [--freeze-pid PID]]
 *        bench-ctl -s SOCKET --mode follow --events FILE
 *        bench-ctl -s SOCKET --mode drill -p P1,P2,... [--fault KIND] [--restore]
 *   --max-s   stop after S seconds even if fewer than N rounds were done
 *             (the rows say how many); keeps a loaded run inside its budget
 *   --events  append every event seen on the stream, one CSV row each:
 *             id,time_ns,pair,kind,fault,result,from,to,message
 *             (commas in the message become ';')
 * Output on stdout, CSV with a header line (see BENCH_CSV_HEADER); empty
 * fields did not apply or did not happen. Times: *_ns measured here
 * (CLOCK_MONOTONIC), *_us the daemon's phases_us (microseconds after the
 * fault; for a manual switchover, after the request arrived).
 * roles_at_request (manual, with --note-roles or --wait-roles): 1 when
 * xenstore already held the pair's roles as failoverd's status gave them
 * when the request was sent, 0 when the last switch's roles were still
 * being written; roles_ns (manual, with --wait-roles): the armed event
 * seen -> the switch's roles seen in xenstore.
 * Exit 0 when at least one round succeeded, 1 otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <xenstore.h>

#include "bench_util.h"
#include "bench-ctl.h"

volatile sig_atomic_t bench_stop;

static void bench_on_term(int sig)
{
	(void)sig;
	bench_stop = 1;
}

int bench_xs_control(struct bench_ctx *x, int domid, const char *cmd)
{
	char path[96];

	if (domid <= 0)
		return -EINVAL;
	if (!x->xs)
		return -ENODEV;
	snprintf(path, sizeof(path), "/local/domain/%d/data/failover/control", domid);
	return xs_write(x->xs, XBT_NULL, path, cmd, strlen(cmd)) ? 0 : -errno;
}

static void bench_print_row(long i, enum bench_mode mode, const char *from, const char *to,
			    const struct bench_switch *sw, const char *result, int64_t request_ns,
			    int64_t after_inject_ns, int64_t seen_ns, int64_t rearm_ns, int64_t running_ns,
			    int roles_at_request, int64_t roles_ns)
{
	printf("%ld,%s,%s,%s,%s,%s,", i, mode == BENCH_MANUAL ? "manual" : "fault", from, to, result,
	       sw ? sw->fault : "");
	request_ns >= 0 ? printf("%" PRId64 ",", request_ns) : printf(",");
	mode == BENCH_FAULT && sw ? printf("%" PRId64 ",", after_inject_ns) : printf(",");
	seen_ns >= 0 ? printf("%" PRId64 ",", seen_ns) : printf(",");
	rearm_ns >= 0 ? printf("%" PRId64 ",", rearm_ns) : printf(",");
	for (size_t k = 0; k < BENCH_N_PHASES; k++) {
		if (sw && sw->have_phase[k])
			printf("%.0f,", sw->phase_us[k]);
		else
			printf(",");
	}
	sw ? printf("%.0f,%s,", sw->id, sw->path) : printf(",,");
	running_ns >= 0 ? printf("%" PRId64 ",", running_ns) : printf(",");
	roles_at_request >= 0 ? printf("%d,", roles_at_request) : printf(",");
	roles_ns >= 0 ? printf("%" PRId64 "\n", roles_ns) : printf("\n");
	fflush(stdout);
}

/*
 * --freeze-pid: stop the daemon, and wait until the kernel says it is
 * stopped (state T in /proc/PID/stat): a SIGSTOP is only delivered when the
 * target next runs, and until then the daemon is still free to act.
 */
static int bench_freeze(struct bench_ctx *x)
{
	char path[64], buf[256], *rp;
	int64_t end = bench_now_ns() + 2000000000LL;

	if (!x->freeze_pid)
		return 0;
	if (kill(x->freeze_pid, SIGSTOP) < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)x->freeze_pid);
	while (bench_now_ns() < end) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		/* "pid (comm) S ...": the state follows the last ')'. */
		rp = strrchr(buf, ')');
		if (rp && rp[1] == ' ' && rp[2] == 'T')
			return 0;
		bench_sleep_ms(1);
	}
	kill(x->freeze_pid, SIGCONT);
	fprintf(stderr, "bench-ctl: pid %d not stopped 2 s after SIGSTOP\n", (int)x->freeze_pid);
	return -ETIMEDOUT;
}

static void bench_thaw(struct bench_ctx *x)
{
	if (x->freeze_pid)
		kill(x->freeze_pid, SIGCONT);
}

/* --poll-us: from the injection at t0 until the standby runs (its time
 * after t0 in ns) or --window-ms passed (-1). */
static int64_t bench_poll_running(struct bench_ctx *x, int standby_domid, int64_t t0)
{
	int64_t end = t0 + (int64_t)x->window_ms * 1000000;
	struct timespec gap = { .tv_sec = x->poll_us / 1000000, .tv_nsec = (x->poll_us % 1000000) * 1000 };

	if (standby_domid <= 0)
		return -1;
	for (;;) {
		int64_t now = bench_now_ns();

		if (bench_is_running(x->xch, (uint32_t)standby_domid) == 1)
			return now - t0;
		if (now > end)
			return -1;
		nanosleep(&gap, NULL);
	}
}

/* The member's role as xenstore holds it is `want` (failoverd writes
 * data/failover/role; the agent only reads it). */
static bool bench_role_is(struct bench_ctx *x, int domid, const char *want)
{
	char path[96];
	unsigned len = 0;
	char *v;
	bool same;

	if (domid <= 0)
		return false;
	snprintf(path, sizeof(path), "/local/domain/%d/data/failover/role", domid);
	v = xs_read(x->xs, XBT_NULL, path, &len);
	same = v && len == strlen(want) && !memcmp(v, want, len);
	free(v);
	return same;
}

static bool bench_roles_published(struct bench_ctx *x, int active_domid, int standby_domid)
{
	return bench_role_is(x, active_domid, "active") && bench_role_is(x, standby_domid, "standby");
}

/* --wait-roles: until xenstore holds the roles of the switch just made;
 * the time it took (ns), or -ETIMEDOUT. */
static int64_t bench_wait_roles(struct bench_ctx *x, int active_domid, int standby_domid)
{
	int64_t t0 = bench_now_ns(), end = t0 + (int64_t)BENCH_ARMED_TIMEOUT_MS * 1000000;

	for (;;) {
		if (bench_roles_published(x, active_domid, standby_domid))
			return bench_now_ns() - t0;
		if (bench_now_ns() > end)
			return -ETIMEDOUT;
		bench_sleep_ms(2);
	}
}

/* One round; 0 when it produced a sample. */
static int bench_round(struct bench_ctx *x, long i)
{
	struct bench_pair st;
	struct bench_switch sw;
	char req[160], why[64] = "";
	cJSON *reply = NULL;
	int64_t t0, t1 = 0, t_seen, t_armed, request_ns = -1, running_ns = -1, roles_ns = -1;
	int roles_at_request = -1;
	double start_id;
	int r;

	r = bench_ensure_armed(x, &st);
	if (r < 0) {
		fprintf(stderr, "bench-ctl: round %ld: pair %s not ARMED: %s\n", i, x->pair, strerror(-r));
		bench_print_row(i, x->mode, "", "", NULL, "not-armed", -1, 0, -1, -1, -1, -1, -1);
		return r;
	}
	start_id = x->last_event_id;
	t0 = bench_now_ns();
	if (x->mode == BENCH_MANUAL) {
		/* Read before the clock starts; xenstored is done with it
		 * before the request goes out. */
		if (x->note_roles)
			roles_at_request = bench_roles_published(x, st.active_domid, st.standby_domid);
		t0 = bench_now_ns();
		snprintf(req, sizeof(req), "{\"cmd\":\"switchover\",\"pair\":\"%s\"}\n", x->pair);
		r = bench_request(x, req, &reply);
		t1 = bench_now_ns();
		if (r == 0 && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
			fprintf(stderr, "bench-ctl: switchover refused: %s\n", bench_jstr(reply, "error"));
			r = -EIO;
		}
		cJSON_Delete(reply);
		request_ns = t1 - t0;
	} else {
		/* The injection before the freeze: a xenstore write made while
		 * failoverd was stopped could block (in the lab bench-ctl hung
		 * in xs_write's read, failoverd stopped, after 84 good rounds).
		 * The freeze follows within milliseconds, long before the
		 * heartbeat deadline (the timeout after the last beat). */
		t0 = bench_now_ns();
		r = bench_xs_control(x, st.active_domid, "stop-heartbeat");
		if (r == 0)
			r = bench_freeze(x);
		if (r == 0 && x->xch)
			running_ns = bench_poll_running(x, st.standby_domid, t0);
		bench_thaw(x);
	}
	if (r < 0) {
		snprintf(why, sizeof(why), "request-failed");
		goto failed;
	}
	/* Published once the new active heartbeated: the switch is complete. */
	r = bench_wait_event(x, "switchover", start_id, BENCH_EVENT_TIMEOUT_MS, &sw);
	t_seen = bench_now_ns();
	if (r < 0) {
		snprintf(why, sizeof(why), "no-event");
		goto failed;
	}
	if (x->mode == BENCH_MANUAL) {
		r = bench_wait_event(x, "armed", sw.id, BENCH_ARMED_TIMEOUT_MS, NULL);
		if (r == 0 && x->wait_roles) {
			/* The new active is the old standby. */
			roles_ns = bench_wait_roles(x, st.standby_domid, st.active_domid);
			if (roles_ns < 0) {
				r = (int)roles_ns;
				roles_ns = -1;
			}
		}
	} else {
		/* The old active is paused with its agent still told to stop:
		 * clear that first, so it heartbeats when it next runs. */
		bench_xs_control(x, st.active_domid, "none");
		r = bench_arm(x, &st);
		if (r == 0)
			r = bench_ensure_armed(x, &st);
	}
	t_armed = bench_now_ns();
	if (r < 0) {
		fprintf(stderr, "bench-ctl: round %ld: pair %s not re-ARMED: %s\n", i, x->pair, strerror(-r));
		snprintf(why, sizeof(why), "not-rearmed");
		bench_print_row(i, x->mode, sw.from, sw.to, &sw, why, request_ns, sw.time_ns - t0, t_seen - t0, -1,
				running_ns, roles_at_request, roles_ns);
		return r;
	}
	bench_print_row(i, x->mode, sw.from, sw.to, &sw, sw.result, request_ns, sw.time_ns - t0, t_seen - t0,
			t_armed - t_seen, running_ns, roles_at_request, roles_ns);
	return strcmp(sw.result, "ok") == 0 ? 0 : -EIO;

failed:
	fprintf(stderr, "bench-ctl: round %ld (%s): %s\n", i, why, strerror(-r));
	bench_print_row(i, x->mode, st.active, st.standby, NULL, why, request_ns, 0, -1, -1, running_ns,
			roles_at_request, -1);
	bench_thaw(x); /* before any xenstore write, as above */
	if (x->mode == BENCH_FAULT)
		bench_xs_control(x, st.active_domid, "none");
	return r;
}

/* --mode follow: record every event until SIGTERM. */
static int bench_follow(struct bench_ctx *x)
{
	while (!bench_stop) {
		cJSON *line = NULL, *ev;
		int r = bench_read_json(&x->follow, 500, &line);

		if (r == -ETIMEDOUT || r == -EBADMSG || r == -EINTR)
			continue;
		if (r < 0)
			return r;
		ev = cJSON_GetObjectItemCaseSensitive(line, "event");
		if (cJSON_IsObject(ev))
			bench_note_event(x, ev);
		cJSON_Delete(line);
	}
	return 0;
}

/* Read whatever the follower holds now, without waiting: the events
 * before a round (restores' arms) are not the round's. */
static void bench_drain_events(struct bench_ctx *x)
{
	for (;;) {
		cJSON *line = NULL, *ev;

		if (bench_read_json(&x->follow, 0, &line) < 0)
			return;
		ev = cJSON_GetObjectItemCaseSensitive(line, "event");
		if (cJSON_IsObject(ev))
			bench_note_event(x, ev);
		cJSON_Delete(line);
	}
}

/* failoverd serves 32 control clients; ours are the follower, the
 * request connection and one per pair, all open at once. */
#define BENCH_DRILL_MAX_PAIRS 24
#define BENCH_DRILL_TIMEOUT_MS 60000

/* --mode drill: every pair drilled at once (see the top of the file). */
static int bench_drill_all(struct bench_ctx *x, char **pairs, int npairs, const char *fault, bool restore)
{
	struct bench_pair st;
	struct bench_conn conns[BENCH_DRILL_MAX_PAIRS];
	cJSON *got[BENCH_DRILL_MAX_PAIRS] = { 0 };
	int seen[BENCH_DRILL_MAX_PAIRS] = { 0 }, have = 0, rc = 0, r;
	int64_t t0, t1, end;
	double start_id;
	char req[192];

	for (int i = 0; i < npairs; i++) {
		x->pair = pairs[i];
		r = bench_ensure_armed(x, &st);
		if (r < 0) {
			fprintf(stderr, "bench-ctl: pair %s not ARMED before the drill: %s\n", pairs[i], strerror(-r));
			return r;
		}
	}
	bench_drain_events(x);
	start_id = x->last_event_id;
	/* Connections first, so that the requests go out back to back. */
	for (int i = 0; i < npairs; i++) {
		r = bench_connect(x->sock_path, &conns[i]);
		if (r < 0) {
			fprintf(stderr, "bench-ctl: connect %s: %s\n", x->sock_path, strerror(-r));
			while (i-- > 0)
				close(conns[i].fd);
			return r;
		}
	}
	t0 = bench_now_ns();
	for (int i = 0; i < npairs; i++) {
		snprintf(req, sizeof(req), "{\"cmd\":\"drill\",\"pair\":\"%s\",\"fault\":\"%s\"}\n", pairs[i], fault);
		r = bench_send(&conns[i], req);
		if (r < 0)
			fprintf(stderr, "bench-ctl: drill %s: send: %s\n", pairs[i], strerror(-r));
	}
	t1 = bench_now_ns();
	end = bench_now_ns() + (int64_t)BENCH_DRILL_TIMEOUT_MS * 1000000;
	while (have < npairs) {
		int left = (int)((end - bench_now_ns()) / 1000000);
		cJSON *line = NULL, *ev;

		if (left <= 0)
			break;
		r = bench_read_json(&x->follow, left, &line);
		if (r == -EBADMSG)
			continue;
		if (r < 0)
			break;
		ev = cJSON_GetObjectItemCaseSensitive(line, "event");
		if (cJSON_IsObject(ev)) {
			bench_note_event(x, ev);
			if (bench_jnum(ev, "id", 0) > start_id &&
			    (!strcmp(bench_jstr(ev, "kind"), "drill") || !strcmp(bench_jstr(ev, "kind"), "switchover"))) {
				for (int i = 0; i < npairs; i++) {
					if (strcmp(bench_jstr(ev, "pair"), pairs[i]) != 0)
						continue;
					seen[i]++;
					if (!got[i]) {
						got[i] = cJSON_Duplicate(ev, true);
						have++;
					}
				}
			}
		}
		cJSON_Delete(line);
	}
	/* Open until now: a connection closed right after its request can be
	 * dropped, hung up, before the daemon has read the request. */
	for (int i = 0; i < npairs; i++) {
		close(conns[i].fd);
		free(conns[i].buf);
	}
	for (int i = 0; i < npairs; i++) {
		cJSON *o = cJSON_CreateObject();
		char *txt;

		if (!got[i]) {
			fprintf(stderr, "bench-ctl: no drill event for %s within %d s\n", pairs[i],
				BENCH_DRILL_TIMEOUT_MS / 1000);
			rc = -ETIMEDOUT;
			cJSON_Delete(o);
			continue;
		}
		cJSON_AddStringToObject(o, "pair", pairs[i]);
		cJSON_AddNumberToObject(o, "send_us", (double)(t1 - t0) / 1000.0);
		cJSON_AddNumberToObject(o, "switch_events", seen[i]);
		cJSON_AddItemToObject(o, "event", got[i]);
		txt = cJSON_PrintUnformatted(o);
		if (txt)
			printf("%s\n", txt);
		free(txt);
		cJSON_Delete(o);
	}
	fflush(stdout);
	if (restore) {
		for (int i = 0; i < npairs; i++) {
			x->pair = pairs[i];
			r = bench_ensure_armed(x, &st);
			if (r < 0) {
				fprintf(stderr, "bench-ctl: pair %s not ARMED again after the drill: %s\n", pairs[i],
					strerror(-r));
				rc = r;
			}
		}
	}
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-ctl -s SOCKET --mode manual|fault -p PAIR -n N [--gap-ms G] [--rt PRIO] "
			"[--cpu C] [--max-s S] [--events FILE]\n"
			"                 [--wait-roles | --note-roles]\n"
			"                 [--owner kernel|hypervisor] [--poll-us U [--window-ms W] [--freeze-pid PID]]\n"
			"       bench-ctl -s SOCKET --mode follow --events FILE\n"
			"       bench-ctl -s SOCKET --mode drill -p P1,P2,... [--fault KIND] [--restore]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mode", required_argument, NULL, 'm' }, { "gap-ms", required_argument, NULL, 'g' },
		{ "rt", required_argument, NULL, 'r' },   { "cpu", required_argument, NULL, 'c' },
		{ "max-s", required_argument, NULL, 'M' }, { "events", required_argument, NULL, 'e' },
		{ "owner", required_argument, NULL, 'o' }, { "poll-us", required_argument, NULL, 'P' },
		{ "window-ms", required_argument, NULL, 'W' }, { "freeze-pid", required_argument, NULL, 'F' },
		{ "wait-roles", no_argument, NULL, 'R' },  { "note-roles", no_argument, NULL, 'N' },
		{ "fault", required_argument, NULL, 'f' }, { "restore", no_argument, NULL, 'X' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench_ctx x = { .sock_path = "/run/failoverd/control.sock", .mode = BENCH_MANUAL,
			       .ctl = { .fd = -1 }, .follow = { .fd = -1 }, .window_ms = 10000 };
	struct bench_run_opts ro = { .gap_ms = 20, .cpu = -1 };
	long n, gap_ms, prio, cpu, max_s, v;
	const char *events_path = NULL, *fault = NULL;
	char *drill_pairs[BENCH_DRILL_MAX_PAIRS] = { 0 };
	int n_drill_pairs = 0;
	bool restore = false;
	cJSON *reply = NULL;
	int64_t t_start;
	long ok = 0, errors_in_row = 0;
	int c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "s:p:n:", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			x.sock_path = optarg;
			break;
		case 'p':
			x.pair = optarg;
			break;
		case 'm':
			if (!strcmp(optarg, "manual"))
				x.mode = BENCH_MANUAL;
			else if (!strcmp(optarg, "fault"))
				x.mode = BENCH_FAULT;
			else if (!strcmp(optarg, "follow"))
				x.mode = BENCH_FOLLOW;
			else if (!strcmp(optarg, "drill"))
				x.mode = BENCH_DRILL;
			else
				usage();
			break;
		case 'e':
			events_path = optarg;
			break;
		case 'R':
			x.wait_roles = x.note_roles = true;
			break;
		case 'N':
			x.note_roles = true;
			break;
		case 'f':
			fault = optarg;
			break;
		case 'X':
			restore = true;
			break;
		case 'o':
			if (strcmp(optarg, "kernel") && strcmp(optarg, "hypervisor")) {
				fprintf(stderr, "bench-ctl: --owner must be kernel or hypervisor, not '%s'\n", optarg);
				usage();
			}
			x.owner = optarg;
			break;
		case 'P':
			if (bench_parse_int(optarg, 1, 1000000, &x.poll_us)) {
				fprintf(stderr, "bench-ctl: --poll-us must be 1..1000000, not '%s'\n", optarg);
				usage();
			}
			break;
		case 'W':
			if (bench_parse_int(optarg, 1, 600000, &x.window_ms)) {
				fprintf(stderr, "bench-ctl: --window-ms must be 1..600000, not '%s'\n", optarg);
				usage();
			}
			break;
		case 'F':
			if (bench_parse_int(optarg, 2, 4194304, &v)) {
				fprintf(stderr, "bench-ctl: --freeze-pid must be a process id, not '%s'\n", optarg);
				usage();
			}
			x.freeze_pid = (pid_t)v;
			break;
		default:
			if (bench_run_opt(c, optarg, &ro) != 1)
				usage();
		}
	}
	n = ro.n, gap_ms = ro.gap_ms, prio = ro.prio, cpu = ro.cpu, max_s = ro.max_s;
	if (x.mode == BENCH_DRILL) {
		/* -p P1,P2,...: split in place (argv is ours). */
		char *save = NULL;

		for (char *p = x.pair ? strtok_r((char *)x.pair, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
			if (n_drill_pairs == BENCH_DRILL_MAX_PAIRS) {
				fprintf(stderr, "bench-ctl: --mode drill takes at most %d pairs\n", BENCH_DRILL_MAX_PAIRS);
				usage();
			}
			drill_pairs[n_drill_pairs++] = p;
		}
		if (!n_drill_pairs) {
			fprintf(stderr, "bench-ctl: --mode drill needs -p P1,P2,...\n");
			usage();
		}
		n = 1;
	} else if (fault) {
		fprintf(stderr, "bench-ctl: --fault is for --mode drill\n");
		usage();
	}
	if (restore && x.mode != BENCH_DRILL) {
		fprintf(stderr, "bench-ctl: --restore is for --mode drill\n");
		usage();
	}
	if (optind != argc || (x.mode == BENCH_FOLLOW ? !events_path : !x.pair || n < 1))
		usage();
	if ((x.poll_us || x.freeze_pid) && x.mode != BENCH_FAULT) {
		fprintf(stderr, "bench-ctl: --poll-us and --freeze-pid are for --mode fault\n");
		usage();
	}
	if (x.note_roles && x.mode != BENCH_MANUAL) {
		fprintf(stderr, "bench-ctl: --wait-roles and --note-roles are for --mode manual\n");
		usage();
	}
	if (x.freeze_pid && !x.poll_us) {
		/* Without the poll nothing would know when to let it go. */
		fprintf(stderr, "bench-ctl: --freeze-pid needs --poll-us\n");
		usage();
	}
	signal(SIGPIPE, SIG_IGN);
	{
		struct sigaction sa = { .sa_handler = bench_on_term };
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}

	if (events_path && !(x.events = fopen(events_path, "a"))) {
		fprintf(stderr, "bench-ctl: %s: %s\n", events_path, strerror(errno));
		goto out;
	}
	if (x.poll_us && !(x.xch = xc_interface_open(NULL, NULL, 0))) {
		fprintf(stderr, "bench-ctl: cannot open libxenctrl: %s\n", strerror(errno));
		goto out;
	}
	x.xs = xs_open(0);
	/* --mode drill writes xenstore only to restore a pair (--restore, or
	 * one not ARMED to begin with): without it, it also drives the
	 * simulator's daemon on a host with no Xen. */
	if (!x.xs && x.mode == BENCH_DRILL && !restore)
		fprintf(stderr, "bench-ctl: no xenstore (%s): pairs not ARMED cannot be restored\n", strerror(errno));
	else if (!x.xs) {
		fprintf(stderr, "bench-ctl: cannot open xenstore: %s\n", strerror(errno));
		goto out;
	}
	if ((r = bench_connect(x.sock_path, &x.ctl)) < 0 || (r = bench_connect(x.sock_path, &x.follow)) < 0) {
		fprintf(stderr, "bench-ctl: cannot connect to %s: %s\n", x.sock_path, strerror(-r));
		goto out;
	}
	/* The follow request's own reply is the event history: only the
	 * newest id matters (rounds accept newer events only). */
	r = bench_send(&x.follow, "{\"cmd\":\"events\",\"follow\":true}\n");
	if (r == 0)
		r = bench_read_json(&x.follow, BENCH_EVENT_TIMEOUT_MS, &reply);
	if (r < 0) {
		fprintf(stderr, "bench-ctl: events follow: %s\n", strerror(-r));
		goto out;
	}
	{
		const cJSON *ev;
		cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(reply, "events"))
		{
			if (x.mode == BENCH_FOLLOW)
				bench_note_event(&x, ev); /* the history before we connected */
			else if (bench_jnum(ev, "id", 0) > x.last_event_id)
				x.last_event_id = bench_jnum(ev, "id", 0);
		}
	}
	cJSON_Delete(reply);
	if (x.mode == BENCH_FOLLOW) {
		r = bench_follow(&x);
		if (r < 0)
			fprintf(stderr, "bench-ctl: follow: %s\n", strerror(-r));
		rc = r < 0 ? 1 : 0;
		goto out;
	}
	if (bench_rt_setup((int)prio, (int)cpu) < 0)
		goto out;
	if (x.mode == BENCH_DRILL) {
		rc = bench_drill_all(&x, drill_pairs, n_drill_pairs, fault ? fault : "heartbeat-loss", restore) < 0 ? 1 : 0;
		goto out;
	}

	printf("%s\n", BENCH_CSV_HEADER);
	t_start = bench_now_ns();
	for (long i = 0; i < n; i++) {
		if (max_s && bench_now_ns() - t_start > max_s * 1000000000LL) {
			fprintf(stderr, "bench-ctl: --max-s %ld reached after %ld rounds\n", max_s, i);
			break;
		}
		if (bench_round(&x, i) == 0) {
			ok++;
			errors_in_row = 0;
		} else if (++errors_in_row >= BENCH_MAX_ERRORS) {
			fprintf(stderr, "bench-ctl: %d failed rounds in a row; giving up\n", BENCH_MAX_ERRORS);
			break;
		}
		if (gap_ms)
			bench_sleep_ms((unsigned)gap_ms);
	}
	fprintf(stderr, "bench-ctl: %s %s: %ld of %ld rounds ok\n", x.mode == BENCH_MANUAL ? "manual" : "fault", x.pair,
		ok, n);
	rc = ok > 0 ? 0 : 1;
out:
	fflush(stdout);
	if (x.events)
		fclose(x.events);
	if (x.ctl.fd >= 0)
		close(x.ctl.fd);
	if (x.follow.fd >= 0)
		close(x.follow.fd);
	free(x.ctl.buf);
	free(x.follow.buf);
	if (x.xs)
		xs_close(x.xs);
	if (x.xch)
		xc_interface_close(x.xch);
	return rc;
}
