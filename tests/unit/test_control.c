/* SPDX-License-Identifier: MIT */
/*
 * test_control.c - the control protocol: every malformed, oversized or
 * unknown request gets an error reply naming what was wrong, a valid one
 * works, and a misbehaving client over a real socket neither crashes nor
 * blocks the daemon.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sim_config.h"
#include "core/manager.h"
#include "hv/sim/hv_sim.h"
#include "io/control.h"
#include "io/loop.h"
#include "lib/text.h"

struct fx {
	struct fo_config cfg;
	struct fo_manager *mgr;
	struct fo_hv *hv;
	struct fo_loop *loop;
	struct fo_control *ctl;
	fo_domid_t a, b;
	char path[108];
};

static void setup_names(struct fx *f, bool kernel, const char *active, const char *standby)
{
	struct fo_hv_callbacks cb;

	memset(f, 0, sizeof(*f));
	sim_base_config(&f->cfg);
	snprintf(f->cfg.pairs[0].active, sizeof(f->cfg.pairs[0].active), "%s", active);
	snprintf(f->cfg.pairs[0].standby, sizeof(f->cfg.pairs[0].standby), "%s", standby);
	snprintf(f->path, sizeof(f->path), "/tmp/fo-test-control-%d/control.sock", (int)getpid());
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_hv_sim_new(&cb, &f->hv);
	if (kernel)
		fo_sim_enable_kernel(f->hv);
	fo_manager_attach_hv(f->mgr, f->hv);
	f->a = fo_sim_add_domain(f->hv, active, FO_DOM_RUNNING);
	f->b = fo_sim_add_domain(f->hv, standby, FO_DOM_PAUSED);
	fo_manager_start(f->mgr);
	fo_loop_new(&f->loop);
	int r = fo_control_new(f->loop, f->mgr, f->path, NULL, NULL, &f->ctl);
	CHECK(r == 0, "control socket: %s", strerror(-r));
}

static void setup_kernel(struct fx *f, bool kernel)
{
	setup_names(f, kernel, "brake-a", "brake-b");
}

static void setup(struct fx *f)
{
	setup_kernel(f, false);
}

static void teardown(struct fx *f)
{
	char dir[108], *slash;

	fo_control_free(f->ctl);
	fo_loop_free(f->loop);
	fo_hv_free(f->hv);
	fo_manager_free(f->mgr);
	snprintf(dir, sizeof(dir), "%s", f->path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	rmdir(dir);
}

static void test_bad_requests(void)
{
	static const struct {
		const char *line;
		const char *error_contains;
	} cases[] = {
		{ "hello", "not valid JSON" },
		{ "", "not valid JSON" },
		{ "{\"cmd\":\"status\"", "not valid JSON" },
		{ "[1,2]", "must be a JSON object" },
		{ "\"status\"", "must be a JSON object" },
		{ "{}", "\"cmd\" must be a string" },
		{ "{\"cmd\":7}", "\"cmd\" must be a string" },
		{ "{\"cmd\":\"reboot\"}", "unknown cmd \"reboot\"" },
		{ "{\"cmd\":\"status\",\"verbose\":true}", "unknown key \"verbose\"" },
		{ "{\"cmd\":\"switchover\"}", "\"pair\" must be a string" },
		{ "{\"cmd\":\"switchover\",\"pair\":3}", "\"pair\" must be a string" },
		{ "{\"cmd\":\"switchover\",\"pair\":\"nope\"}", "no pair named \"nope\"" },
		{ "{\"cmd\":\"arm\",\"pair\":\"brake\",\"force\":1}", "unknown key \"force\"" },
		{ "{\"cmd\":\"events\",\"follow\":\"yes\"}", "\"follow\" must be true or false" },
		{ "{\"cmd\":\"drill\",\"pair\":\"brake\"}", "\"fault\" must be one of" },
		{ "{\"cmd\":\"drill\",\"pair\":\"brake\",\"fault\":\"meteor\"}", "\"fault\" must be one of" },
		{ "{\"cmd\":\"metrics\",\"x\":null}", "unknown key \"x\"" },
		{ "{\"cmd\":\"clear-failed\"}", "\"member\" must be a string" },
		{ "{\"cmd\":\"clear-failed\",\"member\":[]}", "\"member\" must be a string" },
		{ "{\"cmd\":\"clear-failed\",\"member\":\"brake-a\",\"pair\":\"brake\"}", "unknown key \"pair\"" },
		{ "{\"cmd\":\"clear-failed\",\"member\":\"nobody\"}", "no pair has a member named \"nobody\"" },
	};
	struct fx f;
	char reply[65536];

	setup(&f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fo_control_handle_line(f.ctl, cases[i].line, reply, sizeof(reply));
		cJSON *o = cJSON_Parse(reply);
		const cJSON *err = cJSON_GetObjectItem(o, "error");
		CHECK(cJSON_IsFalse(cJSON_GetObjectItem(o, "ok")), "%s -> %s", cases[i].line, reply);
		CHECK(cJSON_IsString(err) && strstr(err->valuestring, cases[i].error_contains) != NULL,
		      "%s -> %s (wanted %s)", cases[i].line, reply, cases[i].error_contains);
		cJSON_Delete(o);
	}
	/* A drill on a pair that is not ARMED is refused and says why. */
	fo_pair_disarm(fo_manager_pair(f.mgr, 0));
	fo_control_handle_line(f.ctl, "{\"cmd\":\"drill\",\"pair\":\"brake\",\"fault\":\"hang\"}", reply,
			       sizeof(reply));
	CHECK(strstr(reply, "needs an ARMED pair") != NULL, "%s", reply);
	teardown(&f);
}

static void test_good_requests(void)
{
	struct fx f;
	char reply[65536];
	cJSON *o, *pairs;

	setup(&f);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"status\"}", reply, sizeof(reply));
	o = cJSON_Parse(reply);
	CHECK(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "ok")), "%s", reply);
	pairs = cJSON_GetObjectItem(o, "pairs");
	CHECK(cJSON_GetArraySize(pairs) == 1, "one pair");
	CHECK(strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(pairs, 0), "state")->valuestring, "ARMED") == 0,
	      "adopted: ARMED: %s", reply);
	cJSON_Delete(o);

	fo_control_handle_line(f.ctl, "{\"cmd\":\"switchover\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strcmp(reply, "{\"ok\":true}") == 0, "%s", reply);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"events\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"kind\":\"armed\"") != NULL, "events listed: %s", reply);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"metrics\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "failoverd_switchovers_total{pair=\\\"brake\\\"} 1") != NULL, "metrics: %.300s", reply);
	CHECK(strstr(reply, "failoverd_external_unpause_total{pair=\\\"brake\\\",member=\\\"brake-b\\\"} 0") != NULL,
	      "audit metric: %.300s", reply);
	/* Nothing failed (a manual switchover): nothing to clear, said so. */
	fo_control_handle_line(f.ctl, "{\"cmd\":\"clear-failed\",\"member\":\"brake-a\"}", reply, sizeof(reply));
	o = cJSON_Parse(reply);
	CHECK(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "ok")) && cJSON_IsFalse(cJSON_GetObjectItem(o, "cleared")) &&
		      strstr(reply, "no failure recorded for brake-a (pair brake)"),
	      "%s", reply);
	cJSON_Delete(o);
	teardown(&f);
}

/* clear-failed after a failover: the verdict goes, `arm` adopts. */
static void test_clear_failed(void)
{
	struct fx f;
	char reply[65536];
	struct fo_pair *p;

	setup(&f);
	p = fo_manager_pair(f.mgr, 0);
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true); /* fails over to b */
	fo_sim_set_state(f.hv, f.a, FO_DOM_PAUSED, false); /* "repaired", paused */
	fo_pair_arm(p);
	CHECK(p->state == FO_PAIR_DEGRADED && strstr(p->reason, "clear-failed brake-a"), "%s", p->reason);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"status\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "standby brake-a failed (crashed at "), "status says why: %.400s", reply);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"clear-failed\",\"member\":\"brake-a\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"cleared\":true") && strstr(reply, "failoverctl arm brake"), "%s", reply);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"arm\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"state\":\"ARMED\""), "%s", reply);
	teardown(&f);
}

/* kernel: what the module has armed. No module: an error naming the
 * setting; a pair armed by someone else: listed with "pair": null; an old
 * module without LIST: an error saying so. */
static void test_kernel_command(void)
{
	struct fx f;
	char reply[65536];
	cJSON *o, *pairs, *first;

	setup(&f);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"kernel\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"ok\":false") && strstr(reply, "kernel module is not in use") &&
		      strstr(reply, "kernel_fast_path"),
	      "no module: %s", reply);
	teardown(&f);

	setup_kernel(&f, true);
	/* the configured pair, armed at start, and one armed by someone else */
	CHECK(fo_sim_kernel_arm_external(f.hv, 4242, fo_sim_add_domain(f.hv, "other-a", FO_DOM_RUNNING),
					 fo_sim_add_domain(f.hv, "other-b", FO_DOM_PAUSED), 50) == 0,
	      "external arm");
	fo_control_handle_line(f.ctl, "{\"cmd\":\"kernel\"}", reply, sizeof(reply));
	o = cJSON_Parse(reply);
	CHECK(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "ok")), "%s", reply);
	pairs = o ? cJSON_GetObjectItem(o, "pairs") : NULL;
	CHECK(cJSON_GetArraySize(pairs) == 2, "two armed pairs: %s", reply);
	for (int i = 0; i < cJSON_GetArraySize(pairs); i++) {
		first = cJSON_GetArrayItem(pairs, i);
		bool orphan = cJSON_GetObjectItem(first, "pair_id")->valuedouble == 4242;
		const cJSON *owner = cJSON_GetObjectItem(first, "pair");
		if (orphan)
			CHECK(cJSON_IsNull(owner), "someone else's pair has no owner: %s", reply);
		else
			CHECK(cJSON_IsString(owner) && strcmp(owner->valuestring, "brake") == 0 &&
				      cJSON_GetObjectItem(first, "active_domid")->valuedouble == f.a,
			      "ours is brake, active brake-a: %s", reply);
	}
	cJSON_Delete(o);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"kernel\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"ok\":false") && strstr(reply, "pair"), "unexpected key named: %s", reply);
	fo_sim_kernel_without_list(f.hv, true);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"kernel\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"ok\":false") && strstr(reply, "no LIST"), "old module: %s", reply);
	teardown(&f);
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Run the loop until `fd` has a full reply line (or give up). */
static int read_reply(struct fx *f, int fd, char *buf, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < 50; i++) {
		ssize_t k = recv(fd, buf + n, len - 1 - n, MSG_DONTWAIT);
		if (k > 0) {
			n += (size_t)k;
			buf[n] = '\0';
			if (strchr(buf, '\n'))
				return (int)n;
			continue;
		}
		fo_loop_run_once_timeout(f->loop, 100);
	}
	buf[n] = '\0';
	return (int)n;
}

/* Run the loop until the daemon closes fd (recv returns 0). */
static bool wait_eof(struct fx *f, int fd)
{
	char buf[65536];

	for (int i = 0; i < 200; i++) {
		ssize_t k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return true;
		if (k < 0)
			fo_loop_run_once_timeout(f->loop, 10);
	}
	return false;
}

static void test_socket_abuse(void)
{
	struct fx f;
	char buf[65536];
	static char big[10000];
	int fd, idle;

	setup(&f);
	/* An idle client that never sends anything must not block others. */
	idle = connect_to(f.path);
	CHECK(idle >= 0, "connect");

	fd = connect_to(f.path);
	CHECK(fd >= 0, "connect");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\n';
	CHECK(send(fd, big, sizeof(big), 0) == (ssize_t)sizeof(big), "send big");
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "longer than 4096") != NULL, "oversized line rejected: %.200s", buf);
	/* ... and the connection ends: skipping to the newline would let an
	 * endless line hold the loop. */
	CHECK(wait_eof(&f, fd), "closed after an oversized line");
	close(fd);
	fd = connect_to(f.path);
	CHECK(fd >= 0, "connect");

	/* Binary junk with a NUL byte, then a valid request on the same connection. */
	CHECK(send(fd, "\x01\x00\xff\n", 4, 0) == 4, "send junk");
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "\"ok\":false") != NULL, "junk rejected: %s", buf);
	CHECK(send(fd, "{\"cmd\":\"status\"}\n", 17, 0) == 17, "send");
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "\"ok\":true") != NULL, "still serving: %.100s", buf);

	/* Two requests in one write get two replies, in order. */
	CHECK(send(fd, "{\"cmd\":\"metrics\"}\n{\"cmd\":\"nope\"}\n", 34, 0) == 34, "send 2");
	int n = read_reply(&f, fd, buf, sizeof(buf));
	for (int i = 0; i < 10 && !strstr(buf, "unknown cmd"); i++)
		n += read_reply(&f, fd, buf + n, sizeof(buf) - (size_t)n);
	CHECK(strstr(buf, "unknown cmd") != NULL && strstr(buf, "text") < strstr(buf, "unknown cmd"), "ordered");

	/* A client that vanishes mid-request. */
	CHECK(send(fd, "{\"cmd\":\"sta", 11, 0) == 11, "half");
	close(fd);
	for (int i = 0; i < 3; i++) {
		int t = connect_to(f.path);
		CHECK(t >= 0, "connect again");
		CHECK(send(t, "{\"cmd\":\"status\"}\n", 17, 0) == 17, "send");
		read_reply(&f, t, buf, sizeof(buf));
		CHECK(strstr(buf, "\"ok\":true") != NULL, "serving after a client vanished");
		close(t);
	}
	close(idle);
	teardown(&f);
}


static const char *reply_error(const char *reply, cJSON **keep)
{
	cJSON *o = cJSON_Parse(reply);
	const cJSON *err = cJSON_GetObjectItem(o, "error");

	*keep = o;
	return cJSON_IsFalse(cJSON_GetObjectItem(o, "ok")) && cJSON_IsString(err) ? err->valuestring : "";
}

/* What cJSON accepts but a request must not mean: text after the object
 * (its second command was dropped), \u0000 (the name was cut at it),
 * duplicate keys (the first won); and whatever is echoed back is bounded
 * and printable, so every reply is valid UTF-8. */
static void test_hostile_requests(void)
{
	static const struct {
		const char *line;
		const char *error_contains;
	} cases[] = {
		{ "{\"cmd\":\"status\"}{\"cmd\":\"disarm\",\"pair\":\"brake\"}",
		  "text after the JSON object at byte 16: \"{\\x22cmd\\x22:\\x22disarm\\x22" },
		{ "{\"cmd\":\"status\"} x", "text after the JSON object at byte 17: \"x\"" },
		{ "{\"cmd\":\"disarm\",\"pair\":\"brake\\u0000evil\"}", "\\u0000 (NUL) in a string (at byte 29)" },
		{ "{\"cmd\":\"status\",\"cmd\":\"disarm\"}", "duplicate key \"cmd\"" },
		{ "{\"cmd\":\"disarm\",\"pair\":\"brake\",\"pair\":\"x\"}", "duplicate key \"pair\"" },
		{ "{\"cmd\":\"st\xff\xfe\"}", "not valid UTF-8 (at byte 10)" },
		{ "{\"cmd\":\"r\\u00e9boot\\u001b[2J\"}", "unknown cmd \"r\\xc3\\xa9boot\\x1b[2J\"" },
		{ "{\"cmd\":\"disarm\",\"pair\":\"\xc3\xa9\\n\"}", "no pair named \"\\xc3\\xa9\\x0a\"" },
	};
	static char longkey[3000];
	struct fx f;
	char reply[65536], line[3100];
	cJSON *o;

	setup(&f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fo_control_handle_line(f.ctl, cases[i].line, reply, sizeof(reply));
		CHECK(strstr(reply_error(reply, &o), cases[i].error_contains) != NULL, "%s -> %s (wanted %s)",
		      cases[i].line, reply, cases[i].error_contains);
		CHECK(fo_text_utf8_invalid_at(reply, strlen(reply)) < 0, "reply is UTF-8: %s", reply);
		cJSON_Delete(o);
	}
	CHECK(fo_manager_pair(f.mgr, 0)->state == FO_PAIR_ARMED, "no disarm slipped through");

	/* An unknown key of 3000 bytes is echoed bounded. */
	memset(longkey, 'k', sizeof(longkey) - 1);
	snprintf(line, sizeof(line), "{\"cmd\":\"status\",\"%s\":1}", longkey);
	fo_control_handle_line(f.ctl, line, reply, sizeof(reply));
	CHECK(strstr(reply, "unknown key \\\"kkkk") && strstr(reply, "...\\\"") && strlen(reply) < 200, "%s", reply);
	teardown(&f);
}

/* The fuzzing entry point: a pure parse into a struct. */
static void test_parse_request(void)
{
	struct fo_request req;
	char err[256];
	const char *l;

	l = "{\"cmd\":\"drill\",\"pair\":\"brake\",\"fault\":\"hang\"}";
	CHECK(fo_control_parse_request(l, strlen(l), &req, err, sizeof(err)) == 0, "%s", err);
	CHECK(req.cmd == FO_REQ_DRILL && strcmp(req.pair, "brake") == 0 && req.fault == FO_DRILL_HANG, "drill");
	CHECK(fo_request_needs_admin(req.cmd), "a drill changes things");
	l = " {\"follow\":true,\"cmd\":\"events\"} \r";
	CHECK(fo_control_parse_request(l, strlen(l), &req, err, sizeof(err)) == 0, "%s", err);
	CHECK(req.cmd == FO_REQ_EVENTS && req.follow && !fo_request_needs_admin(req.cmd), "events");
	/* Bytes past len are not looked at; a NUL inside is an error. */
	CHECK(fo_control_parse_request("{\"cmd\":\"status\"}garbage", 16, &req, err, sizeof(err)) == 0, "%s", err);
	CHECK(fo_control_parse_request("{\"cmd\":\"status\"}\0", 17, &req, err, sizeof(err)) < 0 &&
		      strstr(err, "NUL byte (at byte 16)"),
	      "%s", err);
}

/* arm/disarm while SWITCHING are refused: they dropped the deadline that
 * ends the switch, leaving its event pending (never published) and a
 * drill waiting for ever. */
static void test_arm_while_switching(void)
{
	const struct fo_event_ring *r;
	struct fx f;
	char reply[65536];
	cJSON *o;

	setup(&f);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"switchover\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strcmp(reply, "{\"ok\":true}") == 0, "%s", reply);
	CHECK(fo_manager_pair(f.mgr, 0)->state == FO_PAIR_SWITCHING, "switching until the first heartbeat");
	fo_control_handle_line(f.ctl, "{\"cmd\":\"arm\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strstr(reply_error(reply, &o), "arm: pair is switching, retry"), "arm: %s", reply);
	cJSON_Delete(o);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"disarm\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strstr(reply_error(reply, &o), "disarm: pair is switching, retry"), "disarm: %s", reply);
	cJSON_Delete(o);
	/* The switch completes as if nothing was asked. */
	fo_sim_advance(f.hv, 10000000);
	fo_sim_heartbeat(f.hv, f.b);
	fo_sim_advance(f.hv, 10000000);
	fo_sim_heartbeat(f.hv, f.b);
	CHECK(fo_manager_pair(f.mgr, 0)->state == FO_PAIR_ARMED, "armed again: %s",
	      fo_pair_state_name(fo_manager_pair(f.mgr, 0)->state));
	r = fo_manager_events(f.mgr);
	for (size_t i = 0; i < fo_event_ring_count(r); i++)
		CHECK(!fo_event_ring_get(r, i)->pending, "event %zu published", i);
	teardown(&f);
}

/* A client waiting for a drill is found by the pair's name, not its index:
 * a reload that adds a pair before it moves it (issue #16: the waiter was
 * keyed by index and never got its reply). A pair kept with the same
 * members does not hold a reload back, even mid-drill. */
static void test_drill_waiter_survives_reload(void)
{
	const char *req = "{\"cmd\":\"drill\",\"pair\":\"brake\",\"fault\":\"heartbeat-loss\"}\n";
	struct fo_config cfg;
	struct fo_pair *p;
	struct fx f;
	char buf[65536] = "", why[256] = "";
	int fd;

	setup(&f);
	fd = connect_to(f.path);
	CHECK(fd >= 0 && send(fd, req, strlen(req), 0) == (ssize_t)strlen(req), "drill request sent");
	for (int i = 0; i < 20 && !fo_manager_pair(f.mgr, 0)->drill_active; i++)
		fo_loop_run_once_timeout(f.loop, 10);
	CHECK(fo_manager_pair(f.mgr, 0)->drill_active, "drill started: %s", fo_manager_pair(f.mgr, 0)->reason);

	cfg = f.cfg;
	cfg.n_pairs = 2;
	cfg.pairs[1] = cfg.pairs[0];
	snprintf(cfg.pairs[0].name, sizeof(cfg.pairs[0].name), "pump");
	snprintf(cfg.pairs[0].active, sizeof(cfg.pairs[0].active), "pump-a");
	snprintf(cfg.pairs[0].standby, sizeof(cfg.pairs[0].standby), "pump-b");
	CHECK(!fo_manager_reload_must_wait(f.mgr, &cfg, why, sizeof(why)), "kept pair mid-drill: no wait (%s)", why);
	fo_manager_reload(f.mgr, &cfg);
	p = fo_manager_find_pair(f.mgr, "brake");
	CHECK(p && p == fo_manager_pair(f.mgr, 1) && p->drill_active, "brake moved to index 1, still drilling");

	/* The drill stops brake-a's heartbeat; brake-b takes over and beats. */
	for (int i = 0; i < 100 && !strchr(buf, '\n'); i++) {
		fo_sim_advance(f.hv, 10000000);
		fo_manager_run_due(f.mgr); /* the daemon's deadline timer */
		if (fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING)
			fo_sim_heartbeat(f.hv, f.b);
		fo_control_complete_drills(f.ctl);
		fo_loop_run_once_timeout(f.loop, 0);
		ssize_t k = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (k > 0)
			buf[k] = '\0';
	}
	CHECK(strstr(buf, "\"ok\":true") && strstr(buf, "\"event\""), "the drill's client got its event: %s", buf);
	close(fd);
	teardown(&f);
}

static int rt_fd_ready;
static int rt_replies_seen = -1;
static int rt_client_fd;

/* A real-time handler that records how many replies the client already
 * had when it ran (peeking, so the test still reads them). */
static void on_rt(void *ctx, int fd, uint32_t events)
{
	char buf[65536];
	uint64_t v;
	ssize_t k = recv(rt_client_fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);

	(void)!read(fd, &v, sizeof(v));
	rt_replies_seen = 0;
	for (ssize_t i = 0; i < k; i++)
		rt_replies_seen += buf[i] == '\n';
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* One client pipelining requests: the real-time fds are served before its
 * work, it gets a bounded share per turn, and all its replies still come. */
static void test_fair_share(void)
{
	static char reqs[40 * 18 + 1], buf[262144];
	struct fx f;
	size_t n = 0;
	int fd, lines = 0;

	setup(&f);
	fd = connect_to(f.path);
	fo_loop_run_once_timeout(f.loop, 100); /* accept */
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(reqs + n, sizeof(reqs) - n, "{\"cmd\":\"metrics\"}\n");
	CHECK(send(fd, reqs, n, 0) == (ssize_t)n, "send 40");
	rt_fd_ready = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rt_client_fd = fd;
	CHECK(fo_loop_add_rt(f.loop, rt_fd_ready, EPOLLIN, on_rt, NULL) == 0, "rt fd");
	/* Ready after the client's requests: still served first. */
	CHECK(write(rt_fd_ready, &(uint64_t){ 1 }, 8) == 8, "signal");
	fo_loop_run_once_timeout(f.loop, 100);
	CHECK(rt_replies_seen == 0, "real-time fd served before the client: it saw %d replies", rt_replies_seen);
	n = 0;
	for (ssize_t k; (k = recv(fd, buf + n, sizeof(buf) - 1 - n, MSG_DONTWAIT)) > 0;)
		n += (size_t)k;
	buf[n] = '\0';
	lines = count_lines(buf);
	CHECK(lines >= 1 && lines <= 8, "a bounded share per turn: %d replies in one turn", lines);
	for (int i = 0; i < 100 && lines < 40; i++) {
		ssize_t k;
		fo_loop_run_once_timeout(f.loop, 100);
		while ((k = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
			buf[k] = '\0';
			lines += count_lines(buf);
		}
	}
	CHECK(lines == 40, "every request answered: %d", lines);
	fo_loop_remove(f.loop, rt_fd_ready);
	close(rt_fd_ready);
	close(fd);
	teardown(&f);
}

/* An endless line without a newline: an error and the end of the
 * connection as soon as it passes the limit, not a wait for a newline. */
static void test_endless_line(void)
{
	static char junk[6000];
	struct fx f;
	char buf[4096];
	int fd;

	setup(&f);
	fd = connect_to(f.path);
	memset(junk, 'x', sizeof(junk));
	CHECK(send(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk), "send");
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "request longer than 4096 bytes; closing the connection"), "%s", buf);
	CHECK(wait_eof(&f, fd), "closed");
	close(fd);
	teardown(&f);
}

static int connect_as(const char *path, uid_t uid, gid_t gid)
{
	int fd;

	/* SO_PEERCRED records the credentials of the connect(). */
	if (setegid(gid) < 0 || seteuid(uid) < 0)
		abort();
	fd = connect_to(path);
	if (seteuid(0) < 0 || setegid(0) < 0)
		abort();
	return fd;
}

static const char *ask(struct fx *f, int fd, const char *line, char *buf, size_t len)
{
	char l[256];

	snprintf(l, sizeof(l), "%s\n", line);
	/* A refused client's send fails (the daemon closed), but the
	 * refusal is waiting to be read: what failoverctl must print. */
	(void)!send(fd, l, strlen(l), MSG_NOSIGNAL);
	read_reply(f, fd, buf, len);
	return buf;
}

/* Idle connections are closed; the last slots are root's; with every slot
 * taken root closes the oldest idle one; only followers and drills can
 * fill the table, and then even root is told why. */
static void test_idle_and_slots(void)
{
	struct fx f;
	char buf[65536];
	int fds[40], fd, n = 0;
	bool root = geteuid() == 0;

	setup(&f);
	fo_control_set_idle_timeout(f.ctl, 200);
	fd = connect_to(f.path);
	fo_loop_run_once_timeout(f.loop, 10);
	read_reply(&f, fd, buf, sizeof(buf)); /* ~0.5 s of loop turns */
	for (int i = 0; i < 10 && !strstr(buf, "idle"); i++)
		read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "closing an idle connection: no complete request in 200 ms"), "idle: %s", buf);
	CHECK(wait_eof(&f, fd), "idle closed");
	close(fd);
	fo_control_set_idle_timeout(f.ctl, 60000);

	if (root) {
		chmod(f.path, 0666); /* for "nobody" below: the test's stand-in for control_group */
		/* Others may fill all but the root slots. */
		for (n = 0; n < 32; n++) {
			fds[n] = connect_as(f.path, 65534, 65534);
			fo_loop_run_once_timeout(f.loop, 10);
		}
		CHECK(strstr(ask(&f, fds[31], "{\"cmd\":\"status\"}", buf, sizeof(buf)), "too many control clients"),
		      "31st user refused: %.200s", buf);
		CHECK(strstr(ask(&f, fds[0], "{\"cmd\":\"status\"}", buf, sizeof(buf)), "\"ok\":true"),
		      "first user served: %.100s", buf);
		close(fds[31]);
		close(fds[30]);
		/* A user may read, not change. */
		CHECK(strstr(ask(&f, fds[0], "{\"cmd\":\"disarm\",\"pair\":\"brake\"}", buf, sizeof(buf)),
			     "disarm: permission denied: needs root or a member of daemon.control_admin_group"),
		      "user disarm: %s", buf);
		CHECK(fo_manager_pair(f.mgr, 0)->state == FO_PAIR_ARMED, "not disarmed");
		/* Root gets the reserved slots... */
		fds[30] = connect_to(f.path);
		fds[31] = connect_to(f.path);
		CHECK(strstr(ask(&f, fds[31], "{\"cmd\":\"status\"}", buf, sizeof(buf)), "\"ok\":true"),
		      "root in a reserved slot: %.100s", buf);
		/* ... and with all 32 taken, the oldest idle connection's. */
		fd = connect_to(f.path);
		CHECK(strstr(ask(&f, fd, "{\"cmd\":\"status\"}", buf, sizeof(buf)), "\"ok\":true"),
		      "root with every slot taken: %.100s", buf);
		CHECK(wait_eof(&f, fds[1]), "the oldest idle one (user #2, #1 asked since) was closed");
		close(fds[1]);
		fds[1] = fd;
		/* Followers are not idle: 32 of them and root is refused, saying why. */
		for (int i = 0; i < 32; i++)
			ask(&f, fds[i], "{\"cmd\":\"events\",\"follow\":true}", buf, sizeof(buf));
		fd = connect_to(f.path);
		CHECK(strstr(ask(&f, fd, "{\"cmd\":\"status\"}", buf, sizeof(buf)), "too many control clients"),
		      "root refused by 32 followers: %.200s", buf);
		close(fd);
		for (int i = 0; i < 32; i++)
			close(fds[i]);
	}
	teardown(&f);
}

/* control_admin_group: its members may change things. */
static void test_admin_group(void)
{
	struct fx f;
	char buf[65536];
	int fd;

	if (geteuid() != 0)
		return;
	setup(&f);
	fo_control_free(f.ctl);
	CHECK(fo_control_new(f.loop, f.mgr, f.path, "nogroup", "nogroup", &f.ctl) == 0, "with groups");
	fd = connect_as(f.path, 65534, 65534);
	CHECK(fd >= 0, "nobody in nogroup may connect (0660, group nogroup)");
	CHECK(strstr(ask(&f, fd, "{\"cmd\":\"disarm\",\"pair\":\"brake\"}", buf, sizeof(buf)), "\"ok\":true"),
	      "admin group member disarms: %s", buf);
	close(fd);
	teardown(&f);
}

/* Out of file descriptors: the pending client is told and closed, the loop
 * does not spin on the readable listener, and it is counted. */
static void test_out_of_fds(void)
{
	struct fx f;
	char buf[65536];
	int fd, fillers[4096], n = 0;
	struct timespec t0, t1;
	struct rlimit saved, lim;
	long ms;

	setup(&f);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	getrlimit(RLIMIT_NOFILE, &saved);
	lim = saved;
	lim.rlim_cur = 1024;
	setrlimit(RLIMIT_NOFILE, &lim);
	while (n < 4096 && (fillers[n] = dup(0)) >= 0)
		n++;
	CHECK(errno == EMFILE, "filled the fd table (%d): %s", n, strerror(errno));
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f.path);
		CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s", strerror(errno));
	}
	fo_loop_run_once_timeout(f.loop, 100);
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "out of file descriptors"), "told why: %s", buf);
	CHECK(wait_eof(&f, fd), "closed");
	/* Nothing pending now: a turn waits instead of spinning. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 5; i++)
		fo_loop_run_once_timeout(f.loop, 20);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK(ms >= 80, "5 turns of 20 ms took %ld ms: the loop spins", ms);
	while (n > 0)
		close(fillers[--n]);
	setrlimit(RLIMIT_NOFILE, &saved);
	close(fd);
	fd = connect_to(f.path);
	CHECK(strstr(ask(&f, fd, "{\"cmd\":\"metrics\"}", buf, sizeof(buf)), "failoverd_control_accept_errors_total 1"),
	      "counted: %.100s", strstr(buf, "accept_errors") ? strstr(buf, "accept_errors") : buf);
	close(fd);
	teardown(&f);
}

/* A second instance must not take over a live socket; a stale one is
 * removed; anything that is not a socket is never deleted. */
static void test_socket_path(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fo_control *second = NULL;
	struct fx f;
	struct stat st;
	char buf[65536], other[100];
	int fd, r;

	setup(&f);
	r = fo_control_new(f.loop, f.mgr, f.path, NULL, NULL, &second);
	CHECK(r == -EADDRINUSE, "second instance refused: %d", r);
	fd = connect_to(f.path);
	CHECK(fd >= 0 && strstr(ask(&f, fd, "{\"cmd\":\"status\"}", buf, sizeof(buf)), "\"ok\":true"),
	      "the first still serves");
	close(fd);

	/* A stale socket (a killed daemon's) is replaced. */
	snprintf(other, sizeof(other), "%.80s.stale", f.path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", other);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind stale");
	close(fd);
	r = fo_control_new(f.loop, f.mgr, other, NULL, NULL, &second);
	CHECK(r == 0, "stale socket replaced: %d", r);
	second = fo_control_free(second);

	/* A regular file and a symlink stay where they are. */
	fd = open(other, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	close(fd);
	r = fo_control_new(f.loop, f.mgr, other, NULL, NULL, &second);
	CHECK(r == -EEXIST && stat(other, &st) == 0 && S_ISREG(st.st_mode), "regular file kept: %d", r);
	unlink(other);
	CHECK(symlink("/etc/passwd", other) == 0, "symlink");
	r = fo_control_new(f.loop, f.mgr, other, "nogroup", NULL, &second);
	CHECK(r == -EEXIST && lstat(other, &st) == 0 && S_ISLNK(st.st_mode), "symlink kept: %d", r);
	CHECK(stat("/etc/passwd", &st) == 0 && st.st_gid == 0, "symlink target untouched");
	unlink(other);
	teardown(&f);
}

/* time_ns is sent as an integer (cJSON's doubles lose it past 2^53 ns,
 * ~104 days of uptime); metrics label values are escaped. */
static void test_integers_and_labels(void)
{
	const struct fo_event_ring *r;
	const struct fo_event *e;
	char reply[65536], want[64];
	struct fx f;

	setup_names(&f, false, "bra\"ke\\a", "brake-b");
	fo_sim_advance(f.hv, (1ull << 60) + 123);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"switchover\",\"pair\":\"brake\"}", reply, sizeof(reply));
	fo_sim_advance(f.hv, 10000000);
	fo_sim_heartbeat(f.hv, f.b);
	fo_sim_advance(f.hv, 10000000);
	fo_sim_heartbeat(f.hv, f.b);
	r = fo_manager_events(f.mgr);
	e = fo_event_ring_get(r, fo_event_ring_count(r) - 1);
	CHECK(!e->pending, "switch published");
	CHECK(e->time_ns > (1ull << 60), "late event");
	snprintf(want, sizeof(want), "\"time_ns\":%" PRIu64 ",", e->time_ns);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"events\"}", reply, sizeof(reply));
	CHECK(strstr(reply, want) != NULL, "%s exact in %.300s", want, reply);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"metrics\"}", reply, sizeof(reply));
	/* In the reply's JSON string: \" is ", \\ is \. */
	CHECK(strstr(reply, "member=\\\"bra\\\\\\\"ke\\\\\\\\a\\\"} ") != NULL, "escaped: %.2000s", reply);
	teardown(&f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_bad_requests);
	RUN(test_good_requests);
	RUN(test_kernel_command);
	RUN(test_clear_failed);
	RUN(test_socket_abuse);
	RUN(test_hostile_requests);
	RUN(test_parse_request);
	RUN(test_arm_while_switching);
	RUN(test_drill_waiter_survives_reload);
	RUN(test_fair_share);
	RUN(test_endless_line);
	RUN(test_idle_and_slots);
	RUN(test_admin_group);
	RUN(test_out_of_fds);
	RUN(test_socket_path);
	RUN(test_integers_and_labels);
	return check_summary("test_control");
}
