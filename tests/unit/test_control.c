/* SPDX-License-Identifier: MIT */
/*
 * test_control.c - the control protocol's requests: every malformed,
 * oversized or unknown request gets an error reply naming what was wrong,
 * a valid one works, hostile JSON means nothing it should not. A
 * misbehaving client over a real socket: test_control_socket.c.
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
#include "control_fixture.h"
#include "lib/text.h"

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

/* Within a turn of the loop, which holds the verdict file's write to its
 * end: a request that changed the verdicts is answered only once the file
 * says so. */
static void test_answer_after_verdict_written(void)
{
	struct fx f;
	char state[128], reply[65536];

	snprintf(state, sizeof(state), "/tmp/fo-test-control-%d.verdicts", (int)getpid());
	unlink(state);
	setup_in(&f, false, "brake-a", "brake-b", state);
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true); /* fails over to b */
	CHECK(file_has(state, "\nfailed brake brake-a "), "the verdict on file");
	fo_manager_turn_begin(f.mgr);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"clear-failed\",\"member\":\"brake-a\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"cleared\":true"), "%s", reply);
	CHECK(!file_has(state, "\nfailed brake brake-a ") && file_has(state, "\nactive brake brake-b "),
	      "answered with the verdict gone from the file, before the turn's end");
	fo_manager_turn_end(f.mgr);
	teardown(&f);
	unlink(state);
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
	fo_control_handle_line(f.ctl, "{\"cmd\":\"stand-down\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strstr(reply_error(reply, &o), "stand-down: pair is switching, retry"), "stand-down: %s", reply);
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

/* stand-down: DISARMED with nothing running, said in the reply; a second
 * one changes nothing; `switchover` resumes the pair on the standby. */
static void test_stand_down(void)
{
	struct fx f;
	char reply[65536];

	char rp[FO_NAME_MAX + 1];
	fo_domid_t ra, rs;
	bool serving;

	setup(&f);
	/* the state relay is told the pair is served here (its state goes to the other host) */
	CHECK(fo_sim_state_roles(f.hv, rp, sizeof(rp), &ra, &rs, &serving) && strcmp(rp, "brake") == 0 &&
		      ra == f.a && rs == f.b && serving, "armed: served here (%s %u %u %d)", rp, ra, rs, serving);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"stand-down\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"ok\":true") && strstr(reply, "\"state\":\"DISARMED\"") &&
	      strstr(reply, "stood down"), "%s", reply);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "both paused");
	/* ... and, stood down, that it is not: its standby takes the other host's state */
	CHECK(fo_sim_state_roles(f.hv, rp, sizeof(rp), &ra, &rs, &serving) && ra == f.a && rs == f.b && !serving,
	      "stood down: not served here (%d)", serving);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"stand-down\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strstr(reply, "\"ok\":true") != NULL, "again: %s", reply);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"stand-down\",\"pair\":\"brake\",\"now\":1}", reply,
			       sizeof(reply));
	CHECK(strstr(reply, "stand-down: unknown key") != NULL, "%s", reply);
	fo_control_handle_line(f.ctl, "{\"cmd\":\"switchover\",\"pair\":\"brake\"}", reply, sizeof(reply));
	CHECK(strcmp(reply, "{\"ok\":true}") == 0, "switchover resumes it: %s", reply);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED,
	      "b runs, a stays paused");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	/* the takeover: roles swapped, served here again (the relay restores
	 * the newest state that arrived into b, then relays b's to a) */
	CHECK(fo_sim_state_roles(f.hv, rp, sizeof(rp), &ra, &rs, &serving) && ra == f.b && rs == f.a && serving,
	      "switched over: b active, served here (%u %u %d)", ra, rs, serving);
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
	RUN(test_answer_after_verdict_written);
	RUN(test_hostile_requests);
	RUN(test_parse_request);
	RUN(test_arm_while_switching);
	RUN(test_integers_and_labels);
	RUN(test_stand_down);
	return check_summary("test_control");
}
