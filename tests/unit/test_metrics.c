/* SPDX-License-Identifier: MIT */
/*
 * test_metrics.c - the HTTP /metrics endpoint (io/metrics.c) without a
 * daemon: label escaping (pair names cannot carry a quote, a backslash or
 * a newline, so the escaper is tested here), the request parser's verdicts,
 * histogram buckets from events, the seqlock under a concurrent writer
 * (every copy consistent), and the HTTP thread over a loopback socket
 * (200, 404, 405, 431, a fifth concurrent client 503, an idle client not
 * blocking the others, a stalled client closed after the timeout, the
 * thread SCHED_OTHER even when started from a SCHED_FIFO thread).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sim_config.h"
#include "core/manager.h"
#include "lib/text.h"
#include "hv/sim/hv_sim.h"
#include "io/metrics.h"

static char *render(struct fo_metrics *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r = fo_metrics_render(m, f);

	fclose(f);
	if (r < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void test_escape(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "brake", "brake" },
		{ "a\\b", "a\\\\b" },
		{ "say \"hi\"", "say \\\"hi\\\"" },
		{ "two\nlines", "two\\nlines" },
		{ "\\\"\n", "\\\\\\\"\\n" },
		{ "tab\tstays", "tab\tstays" },
		{ "", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		fo_metrics_escape_label(f, cases[i].in);
		fclose(f);
		CHECK(strcmp(buf, cases[i].out) == 0, "escape(%s) = [%s], expected [%s]", cases[i].in, buf,
		      cases[i].out);
		/* The same as failoverctl metrics' text (core/text.c). */
		{
			char ctl[64];
			CHECK(strcmp(fo_text_prom_label(cases[i].in, ctl, sizeof(ctl)), buf) == 0,
			      "control text escapes [%s] as [%s], HTTP as [%s]", cases[i].in, ctl, buf);
		}
		free(buf);
	}
}

static void test_parse(void)
{
	static const struct {
		const char *req;
		int done, status;
	} cases[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 1, 200 },
		{ "GET /metrics HTTP/1.0\n\n", 1, 200 },
		{ "GET /metrics?name[]=x HTTP/1.1\r\n\r\n", 1, 200 },
		{ "GET / HTTP/1.1\r\n\r\n", 1, 404 },
		{ "GET /metricsx HTTP/1.1\r\n\r\n", 1, 404 },
		{ "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 1, 405 },
		{ "HEAD /metrics HTTP/1.1\r\n\r\n", 1, 405 },
		{ "DELETE / HTTP/1.1\r\n\r\n", 1, 405 },
		{ "hello\r\n\r\n", 1, 400 },
		{ "GET /metrics\r\n\r\n", 1, 400 },
		{ "GET /metrics SPDY/3\r\n\r\n", 1, 400 },
		{ "get /metrics HTTP/1.1\r\n\r\n", 1, 400 },
		{ "GET\r\n\r\n", 1, 400 },
		{ "\r\n\r\n", 1, 400 },
		{ "\n\n", 1, 400 },
		{ "GET /metrics HTTP/1.1\r\n", 0, 0 },
		{ "GET /met", 0, 0 },
	};
	char big[FO_METRICS_REQUEST_MAX];
	int status;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int done;

		status = 0;
		done = fo_metrics_http_parse(cases[i].req, strlen(cases[i].req), &status);
		CHECK(done == cases[i].done && (!done || status == cases[i].status), "[%s]: done %d status %d",
		      cases[i].req, done, status);
	}
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	CHECK(fo_metrics_http_parse(big, sizeof(big), &status) == 1 && status == 431, "oversized head: %d", status);
}

struct fx {
	struct fo_config cfg;
	struct fo_manager *mgr;
	struct fo_hv *hv;
	struct fo_metrics *m;
};

static void setup(struct fx *f)
{
	struct fo_hv_callbacks cb;

	memset(f, 0, sizeof(*f));
	sim_base_config(&f->cfg);
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_hv_sim_new(&cb, &f->hv);
	fo_manager_attach_hv(f->mgr, f->hv);
	fo_sim_add_domain(f->hv, "brake-a", FO_DOM_RUNNING);
	fo_sim_add_domain(f->hv, "brake-b", FO_DOM_PAUSED);
	fo_manager_start(f->mgr);
	if (fo_metrics_new(&f->m) < 0)
		abort();
	fo_metrics_publish(f->m, f->mgr);
}

static void teardown(struct fx *f)
{
	fo_metrics_free(f->m);
	fo_hv_free(f->hv);
	fo_manager_free(f->mgr);
}

/* A switch event of pair "brake": pause 30 us, unpause 3 ms, detected at
 * 1 ms, fault at 0. */
static struct fo_event switch_event(const char *path)
{
	struct fo_event e = { .id = 1, .kind = FO_EV_SWITCHOVER, .fault = FO_FAULT_CRASHED, .result = FO_RESULT_OK };
	const uint64_t t0 = 1000000000ull;

	snprintf(e.pair, sizeof(e.pair), "brake");
	e.deadline_ms = 100;
	e.budget_ms = 160;
	snprintf(e.path, sizeof(e.path), "%s", path);
	e.phase_ns[FO_PHASE_FAULT] = t0;
	e.phase_ns[FO_PHASE_DETECTED] = t0 + 1000000;
	e.phase_ns[FO_PHASE_DECIDED] = t0 + 1000000;
	e.phase_ns[FO_PHASE_PAUSE_ISSUED] = t0 + 1000000;
	e.phase_ns[FO_PHASE_PAUSE_DONE] = t0 + 1030000;
	e.phase_ns[FO_PHASE_UNPAUSE_ISSUED] = t0 + 1030000;
	e.phase_ns[FO_PHASE_UNPAUSE_DONE] = t0 + 4030000;
	return e;
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p += n)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

static void test_histograms(void)
{
	struct fx f;
	struct fo_event e;
	char *t;

	setup(&f);
	t = render(f.m);
	CHECK(t && has_line(t, "failoverd_pair_protected{pair=\"brake\"} 1"), "armed pair protected:\n%s", t ? t : "(no text)");
	/* The backend's path is there, at zero, before any switch. */
	CHECK(t && has_line(t, "failoverd_pause_seconds_count{pair=\"brake\",path=\"sim\"} 0"), "sim at 0");
	CHECK(t && has_line(t, "failoverd_external_unpause_total{pair=\"brake\",member=\"brake-b\"} 0"),
	      "external unpauses at 0");
	free(t);

	e = switch_event("sim");
	fo_metrics_observe(f.m, &e);
	e = switch_event("kernel");
	fo_metrics_observe(f.m, &e);
	e = switch_event("late");
	e.phase_ns[FO_PHASE_UNPAUSE_DONE] += 200000000ull; /* 200 ms: over the 100 ms deadline */
	fo_metrics_observe(f.m, &e);
	e = switch_event("kernel");
	e.fault = FO_FAULT_MANUAL;
	e.result = FO_RESULT_ABORTED; /* not a switch that started the standby */
	fo_metrics_observe(f.m, &e);
	t = render(f.m);
	CHECK(t != NULL, "render");
	if (!t)
		goto out;
	CHECK(has_line(t, "failoverd_pause_seconds_bucket{pair=\"brake\",path=\"sim\",le=\"2.5e-05\"} 0"), "30 us");
	CHECK(has_line(t, "failoverd_pause_seconds_bucket{pair=\"brake\",path=\"sim\",le=\"5e-05\"} 1"), "30 us");
	CHECK(has_line(t, "failoverd_pause_seconds_bucket{pair=\"brake\",path=\"sim\",le=\"+Inf\"} 1"), "+Inf");
	CHECK(has_line(t, "failoverd_pause_seconds_sum{pair=\"brake\",path=\"sim\"} 0.000030000"), "sum");
	CHECK(has_line(t, "failoverd_unpause_seconds_bucket{pair=\"brake\",path=\"sim\",le=\"0.0025\"} 0"), "3 ms");
	CHECK(has_line(t, "failoverd_unpause_seconds_bucket{pair=\"brake\",path=\"sim\",le=\"0.005\"} 1"), "3 ms");
	CHECK(has_line(t, "failoverd_detected_to_running_seconds_sum{pair=\"brake\",path=\"sim\"} 0.003030000"),
	      "detected");
	CHECK(has_line(t, "failoverd_fault_to_running_seconds_sum{pair=\"brake\",path=\"sim\"} 0.004030000"), "fault");
	CHECK(has_line(t, "failoverd_fault_to_running_seconds_bucket{pair=\"brake\",path=\"sim\",le=\"10\"} 1"),
	      "10 s bucket");
	CHECK(has_line(t, "failoverd_fault_to_running_seconds_count{pair=\"brake\",path=\"kernel\"} 2"),
	      "kernel path: two observations (the aborted one paused and unpaused too)");
	CHECK(has_line(t, "failoverd_switches_by_fault_total{pair=\"brake\",fault=\"crashed\"} 3"), "by fault:\n%s",
	      t);
	CHECK(has_line(t, "failoverd_switches_by_fault_total{pair=\"brake\",fault=\"manual\"} 0"), "aborted");
	/* 3.03 ms detected -> running of a 100 ms deadline, 4.03 ms from the fault: met. */
	CHECK(has_line(t, "failoverd_switches_over_deadline_total{pair=\"brake\"} 1"), "over deadline");
	CHECK(has_line(t, "failoverd_pair_deadline_seconds{pair=\"brake\"} 0.100"), "deadline gauge");
	free(t);
out:
	teardown(&f);
}

/* Seqlock: a reader copying while the writer keeps observing never sees
 * a histogram whose _count differs from its +Inf bucket. */
struct writer_arg {
	struct fx *f;
	volatile int stop;
	unsigned long written;
};

static void *writer(void *arg)
{
	struct writer_arg *w = arg;
	struct fo_event e = switch_event("sim");

	/* Publishing far more often than the daemon ever does (it publishes
	 * after an event), but not back to back: a writer that never stops
	 * leaves the reader, which must never wait for it, no window at all
	 * on a loaded 2-core machine under ASan (seen once in CI: 300 reads,
	 * 300 busy). Every 20 us still races each read many times. */
	const struct timespec gap = { 0, 20000 };

	while (!w->stop) {
		fo_metrics_observe(w->f->m, &e);
		fo_metrics_publish(w->f->m, w->f->mgr);
		w->written++;
		nanosleep(&gap, NULL);
	}
	return NULL;
}

static unsigned long long value_of(const char *text, const char *prefix)
{
	const char *p = strstr(text, prefix);

	return p ? strtoull(p + strlen(prefix), NULL, 10) : ~0ull;
}

static void test_seqlock(void)
{
	struct fx f;
	struct writer_arg w = { 0 };
	pthread_t th;
	int ok = 0, busy = 0, torn = 0;

	setup(&f);
	w.f = &f;
	pthread_create(&th, NULL, writer, &w);
	for (int i = 0; i < 300; i++) {
		char *t = render(f.m);
		unsigned long long inf, count;

		if (!t) {
			busy++;
			continue;
		}
		inf = value_of(t, "failoverd_pause_seconds_bucket{pair=\"brake\",path=\"sim\",le=\"+Inf\"} ");
		count = value_of(t, "failoverd_pause_seconds_count{pair=\"brake\",path=\"sim\"} ");
		if (inf != count || count == ~0ull)
			torn++;
		else
			ok++;
		free(t);
	}
	w.stop = 1;
	pthread_join(th, NULL);
	CHECK(torn == 0, "%d torn copies", torn);
	CHECK(ok > 0, "no consistent copy in 300 tries (%d busy)", busy);
	CHECK(w.written > 0, "the writer never ran");
	teardown(&f);
}

/* ---- over a socket ------------------------------------------------------- */

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &len);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send `req`, read the whole reply (until close, 3 s at most). */
static char *http(int port, const char *req, size_t len)
{
	static char buf[256 * 1024];
	size_t got = 0;
	int fd = connect_to(port);

	if (fd < 0)
		return NULL;
	(void)!send(fd, req, len, MSG_NOSIGNAL);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 3000) <= 0)
			break;
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return buf;
}

/* The scheduling policy of this process's thread named `name`, or -1. */
static int thread_policy(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int policy = -1;

	while (d && (de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, name, strlen(name)) == 0 &&
		    comm[strlen(name)] == '\n')
			policy = sched_getscheduler(atoi(de->d_name));
		fclose(f);
	}
	if (d)
		closedir(d);
	return policy;
}

static bool starts(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_http(void)
{
	struct fx f;
	char addr[64], err[256], big[FO_METRICS_REQUEST_MAX + 100];
	int port = free_port(), idle[FO_METRICS_MAX_CLIENTS], r, slow;
	bool fifo;
	const char *get = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
	char *reply;

	setup(&f);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	/* Started from a SCHED_FIFO thread (when we may be one), the HTTP
	 * thread is still SCHED_OTHER: it never competes with the loop. */
	{
		struct sched_param sp = { .sched_priority = 10 };
		fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	}
	r = fo_metrics_http_start(f.m, addr, err, sizeof(err));
	if (fifo) {
		struct sched_param sp = { .sched_priority = 0 };
		pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	}
	CHECK(r == 0, "start on %s: %s", addr, err);
	if (r < 0)
		goto out;
	CHECK(thread_policy("fo-metrics") == SCHED_OTHER, "fo-metrics thread policy %d (creator FIFO: %d)",
	      thread_policy("fo-metrics"), fifo);

	reply = http(port, get, strlen(get));
	CHECK(starts(reply, "HTTP/1.1 200 OK\r\n"), "GET /metrics: %.80s", reply);
	CHECK(reply && strstr(reply, "Content-Type: text/plain; version=0.0.4"), "content type");
	CHECK(reply && strstr(reply, "\r\n\r\n# HELP failoverd_build_info"), "body");
	CHECK(reply && strstr(reply, "failoverd_pair_state{pair=\"brake\",state=\"ARMED\"} 1\n"), "state");

	reply = http(port, "GET /other HTTP/1.1\r\n\r\n", 23);
	CHECK(starts(reply, "HTTP/1.1 404 "), "404: %.80s", reply);
	reply = http(port, "PUT /metrics HTTP/1.1\r\n\r\n", 25);
	CHECK(starts(reply, "HTTP/1.1 405 ") && strstr(reply, "Allow: GET\r\n"), "405: %.80s", reply);
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	reply = http(port, big, sizeof(big));
	CHECK(starts(reply, "HTTP/1.1 431 "), "431: %.80s", reply);

	/* Clients that connect and say nothing take the slots: the next one
	 * is turned away at once, and once one leaves, the next one is served. */
	for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++)
		idle[i] = connect_to(port);
	usleep(100000);
	reply = http(port, get, strlen(get));
	CHECK(starts(reply, "HTTP/1.1 503 "), "client %d: %.80s", FO_METRICS_MAX_CLIENTS + 1, reply);
	close(idle[0]);
	usleep(100000);
	reply = http(port, get, strlen(get));
	CHECK(starts(reply, "HTTP/1.1 200 "), "after one idle client left: %.80s", reply);
	for (int i = 1; i < FO_METRICS_MAX_CLIENTS; i++)
		close(idle[i]);

	/* A client that never finishes its request is closed after
	 * FO_METRICS_TIMEOUT_MS (and is answered nothing). */
	slow = connect_to(port);
	(void)!send(slow, "GET /met", 8, MSG_NOSIGNAL);
	{
		struct pollfd p = { .fd = slow, .events = POLLIN };
		char c;
		int n = poll(&p, 1, FO_METRICS_TIMEOUT_MS + 2000);

		CHECK(n == 1 && recv(slow, &c, 1, 0) <= 0, "a stalled client was not closed within %d ms",
		      FO_METRICS_TIMEOUT_MS + 2000);
	}
	close(slow);
out:
	teardown(&f);
}

static void test_listen_addresses(void)
{
	static const struct {
		const char *s;
		int ok;
	} cases[] = {
		{ "127.0.0.1:9464", 1 }, { "[::1]:9464", 1 }, { "0.0.0.0:1", 1 }, { "[::]:65535", 1 },
		{ "127.0.0.1", 0 },      { "127.0.0.1:0", 0 }, { "127.0.0.1:65536", 0 }, { "localhost:9464", 0 },
		{ "::1:9464", 0 },       { "[::1]9464", 0 },   { ":9464", 0 },           { "127.0.0.1:94a", 0 },
		{ "", 0 },               { "1.2.3.4:-1", 0 },     { "9464", 1 },            { "0", 0 },
		{ "123456", 0 },         { "94 64", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		unsigned len;
		int r = fo_config_parse_listen(cases[i].s, &ss, &len);

		CHECK((r == 0) == cases[i].ok, "%s: %d", cases[i].s, r);
	}
}

int main(void)
{
	RUN(test_escape);
	RUN(test_parse);
	RUN(test_listen_addresses);
	RUN(test_histograms);
	RUN(test_seqlock);
	RUN(test_http);
	return check_summary("test_metrics");
}
