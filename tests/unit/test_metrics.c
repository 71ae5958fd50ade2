/* SPDX-License-Identifier: MIT */
/*
 * test_metrics.c - the HTTP /metrics endpoint (io/metrics.c) without a
 * daemon: label escaping (pair names cannot carry a quote, a backslash or
 * a newline, so the escaper is tested here), the request parser's verdicts,
 * histogram buckets from events, the seqlock under a concurrent writer
 * (every copy consistent), and the HTTP thread over a loopback socket
 * (200, 404, 405, 431, a fifth concurrent client 503, an idle client not
 * blocking the others, a stalled client closed after the timeout, the
 * thread SCHED_OTHER even when started from a SCHED_FIFO thread), four
 * idle clients denying a scrape no longer than FO_METRICS_EVICT_AFTER_MS,
 * and the thread out of file descriptors with connections pending: it
 * sheds them instead of spinning, and serves again once descriptors free.
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <fcntl.h>
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

/* The tid of this process's thread named `name`, or -1. */
static int thread_tid(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int tid = -1;

	while (d && (de = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, name, strlen(name)) == 0 &&
		    comm[strlen(name)] == '\n')
			tid = atoi(de->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}

/* CPU time (user + system, ms) of a thread from its open
 * /proc/self/task/TID/stat: read with pread, so no descriptor is needed
 * while the table is full. -1 if unreadable. */
static long thread_cpu_ms(int stat_fd)
{
	char buf[1024], *p;
	unsigned long utime, stime;
	ssize_t n = pread(stat_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
		return -1;
	return (long)((utime + stime) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static int start_http(struct fx *f, int *port)
{
	char addr[64], err[256];
	int r;

	*port = free_port();
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", *port);
	r = fo_metrics_http_start(f->m, addr, err, sizeof(err));
	CHECK(r == 0, "start on %s: %s", addr, err);
	return r;
}

/* Four clients that connect and say nothing hold every slot: a scrape is
 * turned away at first, but served once they are FO_METRICS_EVICT_AFTER_MS
 * old (the oldest is closed for it), not only when their
 * FO_METRICS_TIMEOUT_MS runs out. */
static void test_slots_bounded(void)
{
	struct fx f;
	int port, idle[FO_METRICS_MAX_CLIENTS];
	const char *get = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
	struct timespec t0;
	long served_after = -1;
	char *reply;

	setup(&f);
	if (start_http(&f, &port) < 0)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++) {
		idle[i] = connect_to(port);
		usleep(20000); /* an order of age among them */
	}
	reply = http(port, get, strlen(get));
	CHECK(starts(reply, "HTTP/1.1 503 "), "a scrape among young idle clients: %.80s", reply);
	while (ms_since(&t0) < FO_METRICS_TIMEOUT_MS + 2000) {
		reply = http(port, get, strlen(get));
		if (starts(reply, "HTTP/1.1 200 ")) {
			served_after = ms_since(&t0);
			break;
		}
		usleep(50000);
	}
	CHECK(served_after >= 0 && served_after <= FO_METRICS_EVICT_AFTER_MS + 500,
	      "four idle clients denied the scrape for %ld ms (bound %d ms)", served_after,
	      FO_METRICS_EVICT_AFTER_MS);
	{
		struct pollfd p = { .fd = idle[0], .events = POLLIN };
		char c;

		CHECK(poll(&p, 1, 0) == 1 && recv(idle[0], &c, 1, MSG_DONTWAIT) == 0,
		      "the oldest idle client was closed for it");
		p.fd = idle[FO_METRICS_MAX_CLIENTS - 1];
		CHECK(poll(&p, 1, 0) == 0, "the youngest idle client still has its slot");
	}
	for (int i = 0; i < FO_METRICS_MAX_CLIENTS; i++)
		close(idle[i]);
out:
	teardown(&f);
}

/* At its RLIMIT_NOFILE limit with connections pending, the thread sheds
 * them (503, "out of file descriptors") instead of polling a listener
 * that stays readable: its CPU time over a window stays small. Once
 * descriptors are free, a scrape is served. */
static void test_out_of_fds(void)
{
	enum { PENDING = 3, WINDOW_MS = 600 };
	struct fx f;
	struct rlimit saved, lim;
	static int fillers[65536];
	int port, n = 0, stat_fd = -1, clients[PENDING], tid;
	const char *get = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long cpu0, cpu1;
	struct timespec t0;
	char path[64], *reply;

	setup(&f);
	if (start_http(&f, &port) < 0)
		goto out;
	tid = thread_tid("fo-metrics");
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(stat_fd >= 0 && thread_cpu_ms(stat_fd) >= 0, "%s readable", path);
	a.sin_port = htons((uint16_t)port);
	for (int i = 0; i < PENDING; i++)
		clients[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	getrlimit(RLIMIT_NOFILE, &saved);
	lim = saved;
	if (lim.rlim_cur > 1024)
		lim.rlim_cur = 1024;
	setrlimit(RLIMIT_NOFILE, &lim);
	while (n < (int)(sizeof(fillers) / sizeof(fillers[0])) && (fillers[n] = dup(0)) >= 0)
		n++;
	CHECK(errno == EMFILE, "filled the fd table (%d): %s", n, strerror(errno));
	for (int i = 0; i < PENDING; i++)
		CHECK(connect(clients[i], (struct sockaddr *)&a, sizeof(a)) == 0, "connect %d: %s", i,
		      strerror(errno));

	cpu0 = thread_cpu_ms(stat_fd);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	usleep(WINDOW_MS * 1000);
	cpu1 = thread_cpu_ms(stat_fd);
	CHECK(cpu1 - cpu0 <= WINDOW_MS / 10, "out of fds, the metrics thread used %ld ms of CPU in %ld ms",
	      cpu1 - cpu0, ms_since(&t0));
	for (int i = 0; i < PENDING; i++) {
		char buf[512];
		ssize_t got = recv(clients[i], buf, sizeof(buf) - 1, MSG_DONTWAIT);

		buf[got > 0 ? got : 0] = '\0';
		CHECK(starts(buf, "HTTP/1.1 503 ") && strstr(buf, "out of file descriptors"),
		      "pending client %d told why: %.80s", i, buf);
	}

	while (n > 0)
		close(fillers[--n]);
	setrlimit(RLIMIT_NOFILE, &saved);
	reply = http(port, get, strlen(get));
	CHECK(starts(reply, "HTTP/1.1 200 "), "descriptors free again: %.80s", reply);
	for (int i = 0; i < PENDING; i++)
		close(clients[i]);
	if (stat_fd >= 0)
		close(stat_fd);
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
	RUN(test_slots_bounded);
	RUN(test_out_of_fds);
	return check_summary("test_metrics");
}
