/* SPDX-License-Identifier: MIT */
/*
 * test_control.c - the control protocol: every malformed, oversized or
 * unknown request gets an error reply naming what was wrong, a valid one
 * works, and a misbehaving client over a real socket neither crashes nor
 * blocks the daemon.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "sim_config.h"
#include "core/manager.h"
#include "hv/hv_sim.h"
#include "io/control.h"
#include "io/loop.h"

struct fx {
	struct fo_config cfg;
	struct fo_manager *mgr;
	struct fo_hv *hv;
	struct fo_loop *loop;
	struct fo_control *ctl;
	fo_domid_t a, b;
	char path[108];
};

static void setup_kernel(struct fx *f, bool kernel)
{
	struct fo_hv_callbacks cb;

	memset(f, 0, sizeof(*f));
	sim_base_config(&f->cfg);
	snprintf(f->path, sizeof(f->path), "/tmp/fo-test-control-%d/control.sock", (int)getpid());
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_hv_sim_new(&cb, &f->hv);
	if (kernel)
		fo_sim_enable_kernel(f->hv);
	fo_manager_attach_hv(f->mgr, f->hv);
	f->a = fo_sim_add_domain(f->hv, "brake-a", FO_DOM_RUNNING);
	f->b = fo_sim_add_domain(f->hv, "brake-b", FO_DOM_PAUSED);
	fo_manager_start(f->mgr);
	fo_loop_new(&f->loop);
	int r = fo_control_new(f->loop, f->mgr, f->path, NULL, &f->ctl);
	CHECK(r == 0, "control socket: %s", strerror(-r));
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
		fo_loop_run_once(f->loop);
	}
	buf[n] = '\0';
	return (int)n;
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

int main(void)
{
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_bad_requests);
	RUN(test_good_requests);
	RUN(test_kernel_command);
	RUN(test_clear_failed);
	RUN(test_socket_abuse);
	return check_summary("test_control");
}
