// SPDX-License-Identifier: MIT
/*
 * test_corr.c - fo-trace's correlation, tables and JSON on synthetic
 * traces whose answer is known (ctest label `unit`; no BPF, no root).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fo_corr.h"
#include "fo_xentrace.h"

static int failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                  \
			failures++;                                           \
		}                                                             \
	} while (0)

#define US 1000ull
#define TGID 4242u
/* Fault at 10 s of CLOCK_MONOTONIC. */
#define F0 10000000000ull

static struct fo_trace_event run_rec(uint32_t tgid, uint64_t wake, uint64_t run, unsigned reason, unsigned cpu,
				     unsigned prev_pid, const char *prev_comm)
{
	struct fo_trace_event r = { .type = FO_EV_RUN, .pid = tgid, .tgid = tgid, .cpu = cpu, .ts_ns = run };
	r.run.off_ns = wake - 5000 * US;
	if (reason == FO_OFF_PREEMPTED)
		r.run.off_ns = wake;
	r.run.wake_ns = wake;
	r.run.off_reason = reason;
	r.run.prev_pid = prev_pid;
	r.run.prev_prio = 120;
	r.run.waker_pid = 0;
	snprintf(r.run.prev_comm, sizeof(r.run.prev_comm), "%s", prev_comm);
	snprintf(r.run.waker_comm, sizeof(r.run.waker_comm), "swapper/1");
	return r;
}

static struct fo_trace_event ioc_rec(uint32_t tgid, uint64_t enter, uint64_t exit, unsigned domctl, unsigned dom)
{
	struct fo_trace_event r = { .type = FO_EV_IOCTL, .pid = tgid, .tgid = tgid, .cpu = 1, .ts_ns = exit };
	r.ioctl.enter_ns = enter;
	r.ioctl.kind = FO_IOC_PRIVCMD_HYPERCALL;
	r.ioctl.request = FO_IOCTL_PRIVCMD_HYPERCALL;
	r.ioctl.hc_op = FO_HYPERVISOR_DOMCTL;
	r.ioctl.domctl_cmd = domctl;
	r.ioctl.domid = dom;
	return r;
}

/* A heartbeat-loss switch as failoverd reports it: fault at F0, detected
 * at +300100 us, etc. time_ns is the detection stamp. */
static const char *event_json =
	"{\"id\":7,\"time_ns\":10300100000,\"pair\":\"p1\",\"kind\":\"drill\",\"fault\":\"heartbeat-timeout\","
	"\"from\":\"p1-a\",\"to\":\"p1-b\",\"result\":\"ok\",\"path\":\"xenctrl\",\"deadline_ms\":100,"
	"\"budget_ms\":420,\"within_deadline\":true,\"phases_us\":{\"detected\":300100,\"decided\":300250,"
	"\"pause_issued\":300260,\"pause_done\":300500,\"unpause_issued\":300510,\"unpause_done\":300800,"
	"\"first_heartbeat\":null}}";

static void test_event_json(struct fo_corr_event *ev)
{
	char why[128];
	cJSON *j = cJSON_Parse(event_json), *bad;

	CHECK(j, "test JSON parses");
	CHECK(fo_corr_event_from_json(j, ev, why, sizeof(why)), "%s", why);
	CHECK(ev->ph[FO_CP_FAULT] == F0, "fault %llu", (unsigned long long)ev->ph[FO_CP_FAULT]);
	CHECK(ev->ph[FO_CP_DETECTED] == F0 + 300100 * US, "detected");
	CHECK(ev->ph[FO_CP_PAUSE_ISSUED] == F0 + 300260 * US, "pause_issued");
	CHECK(ev->ph[FO_CP_UNPAUSE_DONE] == F0 + 300800 * US, "unpause_done");
	CHECK(ev->id == 7 && !strcmp(ev->pair, "p1") && !strcmp(ev->path, "xenctrl"), "fields");
	cJSON_Delete(j);

	bad = cJSON_Parse("{\"id\":1,\"time_ns\":5,\"kind\":\"armed\",\"phases_us\":{}}");
	CHECK(!fo_corr_event_from_json(bad, ev, why, sizeof(why)) && strstr(why, "not a switch"), "armed rejected: %s",
	      why);
	cJSON_Delete(bad);
	bad = cJSON_Parse("{\"id\":1,\"time_ns\":5,\"kind\":\"switchover\",\"phases_us\":{\"detected\":null}}");
	CHECK(!fo_corr_event_from_json(bad, ev, why, sizeof(why)) && strstr(why, "detected"), "no detected: %s", why);
	cJSON_Delete(bad);
	j = cJSON_Parse(event_json);
	fo_corr_event_from_json(j, ev, why, sizeof(why));
	cJSON_Delete(j);
}

static size_t synth_trace(struct fo_trace_event *r)
{
	size_t n = 0;
	/* heartbeat wake-ups before the fault (not the detecting one) */
	r[n++] = run_rec(TGID, F0 - 20000 * US, F0 - 19990 * US, FO_OFF_BLOCKED, 1, 0, "");
	r[n++] = run_rec(TGID, F0 + 100000 * US, F0 + 100030 * US, FO_OFF_BLOCKED, 0, 77, "stress-ng");
	/* the timer wake-up that detects the loss: woken at +300040, on CPU at +300070 */
	r[n++] = run_rec(TGID, F0 + 300040 * US, F0 + 300070 * US, FO_OFF_BLOCKED, 1, 88, "kworker/1:0");
	/* decided re-reads both members: two getinfo before pause_issued */
	r[n++] = ioc_rec(TGID, F0 + 300110 * US, F0 + 300150 * US, FO_DOMCTL_GETDOMAININFO, 1);
	r[n++] = ioc_rec(TGID, F0 + 300160 * US, F0 + 300200 * US, FO_DOMCTL_GETDOMAININFO, 2);
	/* a pause by somebody else at the same time: must not be picked */
	r[n++] = ioc_rec(999, F0 + 300262 * US, F0 + 300270 * US, FO_DOMCTL_PAUSEDOMAIN, 5);
	/* the pause: +300265 .. +300400, then the confirm +300410 .. +300480 */
	r[n++] = ioc_rec(TGID, F0 + 300265 * US, F0 + 300400 * US, FO_DOMCTL_PAUSEDOMAIN, 1);
	r[n++] = ioc_rec(TGID, F0 + 300410 * US, F0 + 300480 * US, FO_DOMCTL_GETDOMAININFO, 1);
	/* preempted for 20 us between pause_done and unpause_issued */
	{
		struct fo_trace_event p = run_rec(TGID, F0 + 300502 * US, F0 + 300505 * US, FO_OFF_PREEMPTED, 1, 9, "ksoftirqd/1");
		r[n++] = p;
	}
	/* the unpause: +300515 .. +300700, confirm +300710 .. +300790 */
	r[n++] = ioc_rec(TGID, F0 + 300515 * US, F0 + 300700 * US, FO_DOMCTL_UNPAUSEDOMAIN, 2);
	r[n++] = ioc_rec(TGID, F0 + 300710 * US, F0 + 300790 * US, FO_DOMCTL_GETDOMAININFO, 2);
	/* an unpause long after: not this switch */
	r[n++] = ioc_rec(TGID, F0 + 900000 * US, F0 + 900100 * US, FO_DOMCTL_UNPAUSEDOMAIN, 2);
	return n;
}

static const struct fo_corr_seg *find_seg(const struct fo_corr_switch *s, const char *from, const char *to)
{
	for (size_t i = 0; i < s->nseg; i++)
		if (!strcmp(s->seg[i].from, from) && !strcmp(s->seg[i].to, to))
			return &s->seg[i];
	return NULL;
}

static void test_switch(const struct fo_corr_event *ev)
{
	struct fo_trace_event r[32];
	size_t n = synth_trace(r);
	struct fo_corr_switch s;
	const struct fo_corr_seg *g;
	static const char *const chain[] = { "fault", "woken", "running", "detected", "decided", "pause_issued",
					      "pause ioctl", "pause returned", "pause_done", "unpause_issued",
					      "unpause ioctl", "unpause returned", "unpause_done" };

	CHECK(fo_corr_switch(ev, r, n, TGID, 2 * US, &s) == 0, "correlates");
	CHECK(s.have_wake && s.wake_in_chain && s.wake.ts_ns == F0 + 300070 * US, "the detecting wake-up");
	CHECK(s.have_pause && s.pause_ioc.tgid == TGID && s.pause_ioc.ioctl.enter_ns == F0 + 300265 * US,
	      "own pause ioctl, not pid 999's");
	CHECK(s.have_unpause && s.unpause_ioc.ioctl.enter_ns == F0 + 300515 * US, "unpause ioctl in the window");
	CHECK(s.nseg == 12, "12 segments, got %zu", s.nseg);
	for (size_t i = 0; i < s.nseg && i < 12; i++)
		CHECK(!strcmp(s.seg[i].from, chain[i]) && !strcmp(s.seg[i].to, chain[i + 1]), "segment %zu is %s -> %s",
		      i, s.seg[i].from, s.seg[i].to);
	g = find_seg(&s, "fault", "woken");
	CHECK(g && g->dur_ns == 300040 * (int64_t)US, "fault -> woken 300040 us");
	g = find_seg(&s, "woken", "running");
	CHECK(g && g->dur_ns == 30 * (int64_t)US && !strcmp(g->source, "kernel"), "run-queue 30 us");
	g = find_seg(&s, "running", "detected");
	CHECK(g && g->dur_ns == 30 * (int64_t)US && !strcmp(g->source, "daemon+kernel"), "running -> detected 30 us");
	g = find_seg(&s, "pause ioctl", "pause returned");
	CHECK(g && g->dur_ns == 135 * (int64_t)US, "pause ioctl 135 us");
	g = find_seg(&s, "pause returned", "pause_done");
	CHECK(g && g->dur_ns == 100 * (int64_t)US, "pause confirm 100 us");
	g = find_seg(&s, "unpause ioctl", "unpause returned");
	CHECK(g && g->dur_ns == 185 * (int64_t)US, "unpause ioctl 185 us");
	CHECK(s.total_ns == 300800 * (int64_t)US, "total %lld", (long long)s.total_ns);
	CHECK(s.sum_ns == s.total_ns, "segments add up: %lld vs %lld", (long long)s.sum_ns, (long long)s.total_ns);
	CHECK(s.consistent && s.worst_ns >= 0, "in order");
	CHECK(s.pause_confirm_n == 1 && s.pause_confirm_ns == 70 * US, "pause confirms %u", s.pause_confirm_n);
	CHECK(s.unpause_confirm_n == 1 && s.unpause_confirm_ns == 80 * US, "unpause confirms");
	CHECK(s.preemptions == 1 && s.preempted_ns == 3 * US, "one preemption of 3 us, got %u", s.preemptions);
	CHECK(s.sleeps == 0, "no sleep inside the switch (the detecting wake-up's sleep began before it)");
	/* ioctls from detected to unpause_done: 2 getinfo + pause + confirm + unpause + confirm */
	CHECK(s.n_ioctls == 6, "6 ioctls in the switch, got %u", s.n_ioctls);

	/* No kernel records: the breakdown degrades to the daemon's own phases. */
	CHECK(fo_corr_switch(ev, r, 0, TGID, 2 * US, &s) == 0 && s.nseg == 6 && !s.have_pause && s.sum_ns == s.total_ns,
	      "daemon-only breakdown, %zu segments", s.nseg);
	g = find_seg(&s, "fault", "detected");
	CHECK(g && g->what[0], "fault -> detected described");

	/* Stamps out of order (a daemon bug or a wrong clock): flagged. */
	{
		struct fo_corr_event bad = *ev;
		bad.ph[FO_CP_DECIDED] = bad.ph[FO_CP_DETECTED] - 50 * US;
		CHECK(fo_corr_switch(&bad, r, n, TGID, 2 * US, &s) == 0 && !s.consistent &&
			      s.worst_ns <= -50 * (int64_t)US,
		      "decided before detected is inconsistent (worst %lld)", (long long)s.worst_ns);
	}
	/* A manual switchover: the fault is the request, the daemon was woken
	 * before it, so the wake-up is reported but not put in the chain. */
	{
		struct fo_corr_event man = *ev;
		man.ph[FO_CP_FAULT] = F0 + 300080 * US;
		CHECK(fo_corr_switch(&man, r, n, TGID, 2 * US, &s) == 0 && s.have_wake && !s.wake_in_chain &&
			      s.consistent && s.sum_ns == s.total_ns,
		      "manual: wake outside the chain");
	}
	/* Without unpause_done there is nothing to break down. */
	{
		struct fo_corr_event none = *ev;
		none.ph[FO_CP_UNPAUSE_DONE] = 0;
		CHECK(fo_corr_switch(&none, r, n, TGID, 2 * US, &s) == -1, "aborted switch refused");
	}
	/* The kernel path: fo_switch PAUSE/UNPAUSE ioctls count the same way. */
	{
		struct fo_trace_event k[2] = { ioc_rec(TGID, F0 + 300265 * US, F0 + 300300 * US, 0, 1),
					       ioc_rec(TGID, F0 + 300515 * US, F0 + 300600 * US, 0, 2) };
		k[0].ioctl.kind = k[1].ioctl.kind = FO_IOC_FO_SWITCH;
		k[0].ioctl.nr = FO_SWITCH_NR_PAUSE;
		k[1].ioctl.nr = FO_SWITCH_NR_UNPAUSE;
		CHECK(fo_corr_switch(ev, k, 2, TGID, 2 * US, &s) == 0 && s.have_pause && s.have_unpause,
		      "fo_switch ioctls classified");
	}
}

static void test_reports(const struct fo_corr_event *ev)
{
	struct fo_trace_event r[32];
	size_t n = synth_trace(r);
	struct fo_corr_switch s[2];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	cJSON *j, *segs;

	fo_corr_switch(ev, r, n, TGID, 2 * US, &s[0]);
	fo_corr_switch(ev, r, 0, TGID, 2 * US, &s[1]);
	f = open_memstream(&buf, &len);
	fo_corr_print_switch(f, &s[0]);
	fo_corr_print_summary(f, s, 2);
	fclose(f);
	CHECK(strstr(buf, "switch #7 pair p1 (drill, fault heartbeat-timeout, path xenctrl)"), "title:\n%s", buf);
	CHECK(strstr(buf, "pause ioctl        pause returned            135.0"), "pause row:\n%s", buf);
	CHECK(strstr(buf, "daemon total fault -> unpause_done        300800.0"), "total row:\n%s", buf);
	CHECK(strstr(buf, "stamps in order"), "order noted");
	CHECK(strstr(buf, "took the CPU from kworker/1:0[88]"), "wake-up line:\n%s", buf);
	CHECK(strstr(buf, "summary over 2 switches"), "summary");
	/* fault -> detected only in the second, pause ioctl only in the first */
	CHECK(strstr(buf, "pause ioctl        pause returned        1      135.0"), "summary n=1 row:\n%s", buf);
	CHECK(strstr(buf, "unpause_done       "), "summary rows");
	free(buf);

	j = fo_corr_switch_json(&s[0]);
	segs = cJSON_GetObjectItemCaseSensitive(j, "segments");
	CHECK(cJSON_GetArraySize(segs) == 12, "12 JSON segments");
	CHECK(cJSON_GetObjectItemCaseSensitive(j, "total_us")->valuedouble == 300800.0, "total_us");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "consistent")), "consistent");
	CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "pause_ioctl"), "us")->valuedouble ==
		      135.0,
	      "pause_ioctl.us");
	CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "wakeup"), "preempted")
			      ->valuestring,
		      "kworker/1:0"),
	      "wakeup.preempted");
	cJSON_Delete(j);
}

static void test_xl(void)
{
	struct fo_trace_event r[16];
	size_t n = 0;
	struct fo_corr_xl x;
	const uint64_t S = 50000000000ull;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	r[n] = (struct fo_trace_event){ .type = FO_EV_EXEC, .pid = 300, .tgid = 300, .ts_ns = S + 2000 * US };
	snprintf(r[n].proc.comm, sizeof(r[n].proc.comm), "xl");
	n++;
	/* a first hypercall (not a domctl) at +150 ms, the pause at +180 ms */
	r[n] = ioc_rec(300, S + 150000 * US, S + 150100 * US, 0, 0);
	r[n].ioctl.hc_op = 35; /* sysctl */
	n++;
	r[n++] = ioc_rec(300, S + 180000 * US, S + 180150 * US, FO_DOMCTL_PAUSEDOMAIN, 3);
	r[n++] = run_rec(300, S + 10000 * US, S + 14000 * US, FO_OFF_BLOCKED, 0, 1, "sh");    /* 4 ms runq, 5 ms asleep */
	r[n++] = run_rec(300, S + 20000 * US, S + 21000 * US, FO_OFF_PREEMPTED, 1, 2, "cc1"); /* 1 ms runq */
	r[n] = (struct fo_trace_event){ .type = FO_EV_EXIT, .pid = 300, .tgid = 300, .ts_ns = S + 190000 * US };
	n++;
	CHECK(fo_corr_xl(300, S, r, n, &x) == 0 && x.complete, "xl run complete");
	CHECK(x.nseg == 5, "spawn exec first-hc domctl returned exit: %zu segments", x.nseg);
	CHECK(x.total_ns == 190000 * (int64_t)US && x.sum_ns == x.total_ns, "total 190 ms");
	CHECK(x.seg[0].dur_ns == 2000 * (int64_t)US && !strcmp(x.seg[0].from, "spawn"), "spawn -> exec 2 ms");
	CHECK(x.seg[3].dur_ns == 150 * (int64_t)US && !strcmp(x.seg[3].from, "domctl ioctl"), "hypercall 150 us");
	CHECK(x.op_cmd == FO_DOMCTL_PAUSEDOMAIN && x.n_hypercalls == 2, "pause, two hypercalls");
	CHECK(x.runq_ns == 5000 * US && x.n_runq == 2, "5 ms waiting for a CPU, got %llu", (unsigned long long)x.runq_ns);
	CHECK(x.blocked_ns == 5000 * US, "5 ms asleep, got %llu", (unsigned long long)x.blocked_ns);
	f = open_memstream(&buf, &len);
	fo_corr_print_xl(f, &x, 1);
	fclose(f);
	CHECK(strstr(buf, "xl[300] pause"), "xl title:\n%s", buf);
	CHECK(strstr(buf, "before the working hypercall 180000.0 us (94.7%)"), "share before the call:\n%s", buf);
	free(buf);
	/* a shell that exec()s xl in its place: the second image does not start at the spawn */
	{
		struct fo_trace_event r2[16];
		/* time order: sh's exec, then xl's exec, then the rest */
		r2[0] = r[0];
		r2[0].ts_ns = S + 500 * US;
		snprintf(r2[0].proc.comm, sizeof(r2[0].proc.comm), "sh");
		memcpy(&r2[1], r, n * sizeof(r[0]));
		CHECK(fo_corr_xl(300, S, r2, n + 1, &x) == 0 && x.spawn_ns == 0 && !strcmp(x.comm, "xl") &&
			      x.exec_ns == S + 2000 * US && !strcmp(x.seg[0].from, "exec"),
		      "exec in place: chain starts at xl's exec");
	}
	/* no exit seen: incomplete */
	CHECK(fo_corr_xl(300, S, r, n - 1, &x) == -1 && !x.complete, "incomplete without exit");
}

static void test_wakes_pct(void)
{
	struct fo_trace_event r[8];
	struct fo_corr_wakes w;
	uint64_t v[] = { 5, 1, 4, 2, 3 };
	size_t n = 0;

	CHECK(fo_corr_pct(v, 5, 50) == 3 && fo_corr_pct(v, 5, 100) == 5 && fo_corr_pct(v, 5, 1) == 1, "pct");
	CHECK(fo_corr_pct(v, 0, 50) == 0, "pct of nothing");
	r[n++] = run_rec(TGID, 1000 * US, 1010 * US, FO_OFF_BLOCKED, 0, 0, "");
	r[n++] = run_rec(TGID, 2000 * US, 2020 * US, FO_OFF_BLOCKED, 1, 5, "stress-ng");
	r[n++] = run_rec(TGID, 3000 * US, 3030 * US, FO_OFF_PREEMPTED, 1, 5, "stress-ng");
	r[n++] = run_rec(TGID, 4000 * US, 4400 * US, FO_OFF_BLOCKED, 1, 6, "xenstored");
	r[n++] = run_rec(1, 4000 * US, 9400 * US, FO_OFF_BLOCKED, 1, 6, "other");
	fo_corr_wakes(r, n, TGID, &w);
	CHECK(w.count == 4 && w.blocked == 3 && w.preempted == 1 && w.from_idle == 1, "counts");
	CHECK(w.p50_ns == 20 * US && w.max_ns == 400 * US && w.mean_ns == 115 * US, "latencies p50 %llu",
	      (unsigned long long)w.p50_ns);
	CHECK(w.cpu[0] == 1 && w.cpu[1] == 3, "per cpu");
	CHECK(w.ndisplaced == 2 && !strcmp(w.displaced[0].comm, "stress-ng") && w.displaced[0].n == 2, "displaced");
}

static void test_hist(void)
{
	struct fo_trace_hist h = { { 0 } };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	cJSON *j;

	h.slots[0] = 3;
	h.slots[4] = 10;
	j = fo_corr_hist_json(&h);
	CHECK(cJSON_GetArraySize(j) == 2, "two non-empty slots");
	CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(j, 1), "lo_us")->valuedouble == 16 &&
		      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(j, 1), "hi_us")->valuedouble == 31,
	      "slot 4 = 16..31 us");
	cJSON_Delete(j);
	f = open_memstream(&buf, &len);
	fo_corr_print_hist(f, "t", &h);
	fclose(f);
	CHECK(strstr(buf, "16 -> 31 : 10       |****************************************|"), "bar:\n%s", buf);
	free(buf);
}

struct xt_seen {
	unsigned n, cpu;
	uint64_t tsc;
	uint32_t ev, ex0;
};

static void xt_cb(void *ctx, unsigned cpu, uint32_t event, uint64_t tsc, const uint32_t *ex, unsigned nex)
{
	struct xt_seen *s = ctx;
	s->n++;
	if ((event & 0xfffff00fu) == 0x00021001u) {
		s->cpu = cpu;
		s->tsc = tsc;
		s->ev = event;
		s->ex0 = nex > 0 ? ex[0] : 0;
	}
}

static void test_xentrace(void)
{
	uint32_t buf[16];
	size_t n = 0;
	struct xt_seen s = { 0 };
	/* 2 TSC ticks per ns, then 4 per ns after the middle anchor (a rate change) */
	struct fo_tsc_anchor a[3] = { { 1000000, 5000000000ull, 10 }, { 3000000, 5001000000ull, 10 },
				      { 7000000, 5002000000ull, 10 } };

	/* CPU change to pCPU 1 (no TSC, 2 extras), then a runstate change with TSC */
	buf[n++] = 0x0001f003u | (2u << 28);
	buf[n++] = 1;
	buf[n++] = 4096;
	/* runstate change as Xen 4.17 writes it: old running (0) << 8, new blocked (2) << 4 */
	buf[n++] = (0x00021001u | (0u << 8) | (2u << 4)) | (1u << 28) | (1u << 31);
	buf[n++] = 0x89abcdefu; /* tsc lo */
	buf[n++] = 0x1u;        /* tsc hi */
	buf[n++] = (3u << 16) | 1; /* dom 3 vcpu 1 */
	CHECK(fo_xentrace_parse((unsigned char *)buf, n * 4, xt_cb, &s) == 2, "two records");
	CHECK(s.cpu == 1 && s.tsc == 0x189abcdefull && s.ev == 0x00021021u && s.ex0 == ((3u << 16) | 1),
	      "record decoded (cpu %u, event 0x%x)", s.cpu, s.ev);
	/* a torn record at the end keeps the ones before */
	s.n = 0;
	CHECK(fo_xentrace_parse((unsigned char *)buf, n * 4 - 2, xt_cb, &s) == 1, "torn tail");
	CHECK(fo_tsc_to_ns(a, 3, 2000000) == 5000500000ull, "first segment %llu",
	      (unsigned long long)fo_tsc_to_ns(a, 3, 2000000));
	CHECK(fo_tsc_to_ns(a, 3, 5000000) == 5001500000ull, "second segment uses its own rate %llu",
	      (unsigned long long)fo_tsc_to_ns(a, 3, 5000000));
	CHECK(fo_tsc_to_ns(a, 3, 1000000) == 5000000000ull && fo_tsc_to_ns(a, 3, 3000000) == 5001000000ull,
	      "anchors map to themselves");
	CHECK(fo_tsc_to_ns(a, 3, 9000000) == 5002500000ull, "after the last anchor: the last segment extended");
	CHECK(fo_tsc_to_ns(a, 3, 0) == 4999500000ull, "before the first: the first segment extended");
}

/* Xen's view of one switch, from synthetic merged events. */
static void test_xen_switch(const struct fo_corr_event *ev)
{
	struct fo_trace_event r[32];
	size_t n = synth_trace(r);
	struct fo_corr_switch s;
	char text[4096];
	cJSON *xj, *x;

	fo_corr_switch(ev, r, n, TGID, 2 * US, &s);
	/* active dom1 paused by the ioctl at +300265, standby dom2 unpaused at +300515;
	 * the daemon runs on dom0 vCPU 1, descheduled +300520 .. +300600 for dom2. */
	snprintf(text, sizeof(text),
		 "{\"events\":["
		 "{\"ns\":%llu,\"type\":\"sleep\",\"domid\":1,\"vcpu\":0},"
		 "{\"ns\":%llu,\"type\":\"switch\",\"domid\":1,\"vcpu\":0,\"next_domid\":32767,\"next_vcpu\":0},"
		 "{\"ns\":%llu,\"type\":\"wake\",\"domid\":2,\"vcpu\":0},"
		 "{\"ns\":%llu,\"type\":\"switch\",\"domid\":0,\"vcpu\":1,\"next_domid\":2,\"next_vcpu\":0},"
		 "{\"ns\":%llu,\"type\":\"switch\",\"domid\":2,\"vcpu\":0,\"next_domid\":0,\"next_vcpu\":1},"
		 "{\"ns\":%llu,\"type\":\"block\",\"domid\":0,\"vcpu\":1},"
		 "{\"ns\":%llu,\"type\":\"switch\",\"domid\":0,\"vcpu\":1,\"next_domid\":32767,\"next_vcpu\":1},"
		 "{\"ns\":%llu,\"type\":\"wake\",\"domid\":0,\"vcpu\":1},"
		 "{\"ns\":%llu,\"type\":\"switch\",\"domid\":32767,\"vcpu\":1,\"next_domid\":0,\"next_vcpu\":1}]}",
		 (unsigned long long)(F0 + 300300 * US), (unsigned long long)(F0 + 300310 * US),
		 (unsigned long long)(F0 + 300518 * US), (unsigned long long)(F0 + 300520 * US),
		 (unsigned long long)(F0 + 300600 * US), (unsigned long long)(F0 + 300700 * US),
		 (unsigned long long)(F0 + 300701 * US), (unsigned long long)(F0 + 300750 * US),
		 (unsigned long long)(F0 + 300760 * US));
	xj = cJSON_Parse(text);
	CHECK(xj, "xen events parse");
	x = fo_xentrace_switch(xj, &s);
	CHECK(cJSON_GetObjectItemCaseSensitive(x, "active_sleep_ns_us")->valuedouble == 300300.0, "active asleep");
	CHECK(cJSON_GetObjectItemCaseSensitive(x, "active_off_pcpu_ns_us")->valuedouble == 300310.0, "active off");
	CHECK(cJSON_GetObjectItemCaseSensitive(x, "standby_wake_ns_us")->valuedouble == 300518.0, "standby woken");
	CHECK(cJSON_GetObjectItemCaseSensitive(x, "standby_running_ns_us")->valuedouble == 300520.0, "standby running");
	CHECK(cJSON_GetObjectItemCaseSensitive(x, "daemon_vcpu_waiting_us")->valuedouble == 90.0 &&
		      cJSON_GetObjectItemCaseSensitive(x, "daemon_vcpu_waiting_times")->valuedouble == 2,
	      "dom0 vCPU 1 preempted for 80 us; asleep +300701..+300750 does not count, woken -> running does: %g us",
	      cJSON_GetObjectItemCaseSensitive(x, "daemon_vcpu_waiting_us")->valuedouble);
	{
		/* +300520..+300600 lies in "unpause ioctl -> unpause returned" (+300515..+300700), segment 10 */
		const cJSON *sd = cJSON_GetObjectItemCaseSensitive(x, "segments_vcpu_waiting_us");
		CHECK(cJSON_GetArraySize(sd) == 12 && cJSON_GetArrayItem(sd, 10)->valuedouble == 80.0 &&
			      cJSON_GetArrayItem(sd, 11)->valuedouble == 10.0 && cJSON_GetArrayItem(sd, 9)->valuedouble == 0.0,
		      "descheduling attributed to the unpause ioctl segment");
	}
	cJSON_Delete(x);
	cJSON_Delete(xj);
}

/* A switch by Xen's failover watch (path "hypervisor") as failoverd
 * records it (core/pair/kernel_owner.c fo_pair_kernel_adopt_switch): fault = the
 * deadline (Xen's last progress + timeout) at F0, detected = decided =
 * t_detect at +700 us, pause_issued = t_fence +703, pause_done =
 * unpause_issued = t_quiesced +781, unpause_done = t_switched +790. */
static const char *hv_event_json =
	"{\"id\":9,\"time_ns\":10000700000,\"pair\":\"p1\",\"kind\":\"switchover\",\"fault\":\"heartbeat-timeout\","
	"\"from\":\"p1-a\",\"to\":\"p1-b\",\"result\":\"ok\",\"path\":\"hypervisor\","
	"\"message\":\"switched by Xen's failover watch: no heartbeat progress for the timeout (stamps within 3 us)\","
	"\"deadline_ms\":100,\"budget_ms\":420,\"within_deadline\":true,\"phases_us\":{\"detected\":700,"
	"\"decided\":700,\"pause_issued\":703,\"pause_done\":781,\"unpause_issued\":781,\"unpause_done\":790,"
	"\"first_heartbeat\":5200}}";

/* failoverd's own records inside that window: they must not enter the chain. */
static size_t hv_daemon_trace(struct fo_trace_event *r)
{
	size_t n = 0;
	/* woken at +600, on a CPU at +650: before "detected", so the dom0
	 * chain would call it the detecting wake-up */
	r[n++] = run_rec(TGID, F0 + 600 * US, F0 + 650 * US, FO_OFF_BLOCKED, 1, 88, "kworker/1:0");
	/* a pause inside pause_issued .. pause_done, an unpause inside
	 * unpause_issued .. unpause_done, with their confirmations */
	r[n++] = ioc_rec(TGID, F0 + 704 * US, F0 + 710 * US, FO_DOMCTL_PAUSEDOMAIN, 1);
	r[n++] = ioc_rec(TGID, F0 + 712 * US, F0 + 720 * US, FO_DOMCTL_GETDOMAININFO, 1);
	r[n++] = ioc_rec(TGID, F0 + 782 * US, F0 + 785 * US, FO_DOMCTL_UNPAUSEDOMAIN, 2);
	r[n++] = ioc_rec(TGID, F0 + 786 * US, F0 + 788 * US, FO_DOMCTL_GETDOMAININFO, 2);
	/* a kmod SWITCH ioctl between detected and pause_issued */
	r[n] = ioc_rec(TGID, F0 + 701 * US, F0 + 702 * US, 0, 1);
	r[n].ioctl.kind = FO_IOC_FO_SWITCH;
	r[n++].ioctl.nr = FO_SWITCH_NR_SWITCH;
	/* preempted inside the window */
	r[n++] = run_rec(TGID, F0 + 730 * US, F0 + 740 * US, FO_OFF_PREEMPTED, 1, 9, "ksoftirqd/1");
	return n;
}

static void test_xen_path(void)
{
	static const char *const chain[] = { "fault", "detected", "pause_issued", "pause_done", "unpause_done" };
	static const int64_t dur_us[] = { 700, 3, 78, 9 };
	static const char *const what[] = { "Xen's watch timer: deadline", "domain_pause_nosync",
					    "no vCPU of the active runs", "unpause it" };
	struct fo_trace_event r[16];
	size_t n = hv_daemon_trace(r);
	struct fo_corr_event ev, ev2;
	struct fo_corr_switch s, mix[2];
	char why[128], *buf = NULL;
	size_t len = 0;
	cJSON *j;
	FILE *f;

	j = cJSON_Parse(hv_event_json);
	CHECK(j && fo_corr_event_from_json(j, &ev, why, sizeof(why)), "hypervisor event parses: %s", why);
	cJSON_Delete(j);
	CHECK(!strcmp(ev.path, "hypervisor") && fo_corr_switched_by_xen(&ev), "path read from the event");
	CHECK(strstr(ev.message, "stamps within 3 us"), "message kept: %s", ev.message);
	CHECK(ev.ph[FO_CP_FAULT] == F0 && ev.ph[FO_CP_UNPAUSE_DONE] == F0 + 790 * US, "phases");

	CHECK(fo_corr_switch(&ev, r, n, TGID, 2 * US, &s) == 0, "correlates");
	CHECK(s.nseg == 4, "fault, detected, fenced, quiesced, switched: 4 segments, got %zu", s.nseg);
	for (size_t i = 0; i < s.nseg && i < 4; i++) {
		CHECK(!strcmp(s.seg[i].from, chain[i]) && !strcmp(s.seg[i].to, chain[i + 1]), "segment %zu is %s -> %s",
		      i, s.seg[i].from, s.seg[i].to);
		CHECK(!strcmp(s.seg[i].source, "xen"), "segment %zu source %s", i, s.seg[i].source);
		CHECK(s.seg[i].dur_ns == dur_us[i] * (int64_t)US, "segment %zu: %lld ns", i, (long long)s.seg[i].dur_ns);
		CHECK(strstr(s.seg[i].what, what[i]) && strstr(s.seg[i].what, "Xen"), "segment %zu says: %s", i,
		      s.seg[i].what);
	}
	CHECK(s.total_ns == 790 * (int64_t)US && s.sum_ns == s.total_ns, "segments add up to unpause_done - fault");
	CHECK(s.consistent, "in order");
	/* the daemon's records in the window are not the switch */
	CHECK(!s.have_wake && !s.have_pause && !s.have_unpause && !s.have_switch_ioc, "no daemon/kernel points");
	CHECK(s.n_ioctls == 0 && s.preemptions == 0 && s.pause_confirm_n == 0 && s.unpause_confirm_n == 0,
	      "no ioctls or preemptions attributed (%u, %u)", s.n_ioctls, s.preemptions);
	for (size_t i = 0; i < s.nseg; i++)
		CHECK(!strstr(s.seg[i].from, "ioctl") && strcmp(s.seg[i].from, "woken") && strcmp(s.seg[i].from, "decided") &&
			      strcmp(s.seg[i].to, "unpause_issued"),
		      "no daemon point %s", s.seg[i].from);
	/* the same event on the xenctrl path does take them: the records would fit */
	ev2 = ev;
	snprintf(ev2.path, sizeof(ev2.path), "xenctrl");
	CHECK(fo_corr_switch(&ev2, r, n, TGID, 2 * US, &mix[0]) == 0 && mix[0].have_pause && mix[0].have_wake,
	      "control: on the xenctrl path the records are found");

	/* A drill: the fault is failoverd's injection stamp. */
	ev2 = ev;
	snprintf(ev2.kind, sizeof(ev2.kind), "drill");
	CHECK(fo_corr_switch(&ev2, r, n, TGID, 2 * US, &s) == 0 && !strcmp(s.seg[0].source, "daemon+xen") &&
		      strstr(s.seg[0].what, "drill injection") && !strcmp(s.seg[1].source, "xen"),
	      "drill: first segment %s, %s", s.seg[0].source, s.seg[0].what);
	/* A crash: no deadline, the fault is Xen's detection itself. */
	ev2 = ev;
	snprintf(ev2.fault, sizeof(ev2.fault), "crashed");
	ev2.ph[FO_CP_FAULT] = ev2.ph[FO_CP_DETECTED];
	CHECK(fo_corr_switch(&ev2, r, n, TGID, 2 * US, &s) == 0 && s.seg[0].dur_ns == 0 &&
		      strstr(s.seg[0].what, "shutdown") && s.sum_ns == s.total_ns && s.total_ns == 90 * (int64_t)US,
	      "crash: fault = detected");
	/* Xen gave up (FAILED_STANDBY: no t_switched): nothing to break down. */
	ev2 = ev;
	ev2.ph[FO_CP_UNPAUSE_DONE] = 0;
	CHECK(fo_corr_switch(&ev2, r, n, TGID, 2 * US, &s) == -1, "no unpause_done refused");

	/* The report names the path and says the switch was Xen's. */
	fo_corr_switch(&ev, r, n, TGID, 2 * US, &s);
	f = open_memstream(&buf, &len);
	fo_corr_print_switch(f, &s);
	fclose(f);
	CHECK(strstr(buf, "switch #9 pair p1 (switchover, fault heartbeat-timeout, path hypervisor)"), "title:\n%s", buf);
	CHECK(strstr(buf, "switched by Xen's failover watch in its timer softirq"), "says Xen switched:\n%s", buf);
	CHECK(strstr(buf, "pause_issued       pause_done                 78.0"), "quiesce row:\n%s", buf);
	CHECK(strstr(buf, "Xen's total fault -> unpause_done            790.0"), "total row:\n%s", buf);
	CHECK(strstr(buf, "mapped onto CLOCK_MONOTONIC") && strstr(buf, "stamps within 3 us"), "clock bound:\n%s", buf);
	CHECK(!strstr(buf, "wake-up:") && !strstr(buf, "ioctls in the switch"), "no daemon lines:\n%s", buf);
	free(buf);
	j = fo_corr_switch_json(&s);
	CHECK(!strcmp(cJSON_GetObjectItemCaseSensitive(j, "path")->valuestring, "hypervisor") &&
		      !strcmp(cJSON_GetObjectItemCaseSensitive(j, "switched_by")->valuestring, "xen"),
	      "JSON path and switched_by");
	CHECK(strstr(cJSON_GetObjectItemCaseSensitive(j, "message")->valuestring, "stamps within 3 us"), "JSON message");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "segments")) == 4 &&
		      !strcmp(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "segments"), 2),
							       "source")->valuestring,
			      "xen"),
	      "JSON segments");
	CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "wakeup")) &&
		      cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "pause_ioctl")) &&
		      cJSON_GetObjectItemCaseSensitive(j, "ioctls")->valuedouble == 0,
	      "JSON: no daemon parts");
	cJSON_Delete(j);

	/* A window with both paths: the summary keeps Xen's rows apart. */
	ev2 = ev;
	snprintf(ev2.path, sizeof(ev2.path), "xenctrl");
	fo_corr_switch(&ev2, r, 0, TGID, 2 * US, &mix[0]);
	mix[1] = s;
	buf = NULL;
	f = open_memstream(&buf, &len);
	fo_corr_print_summary(f, mix, 2);
	fclose(f);
	CHECK(strstr(buf, "fault              detected              1      700.0") && strstr(buf, "%  daemon\n") &&
		      strstr(buf, "%  xen\n"),
	      "summary rows per source:\n%s", buf);
	free(buf);
}

int main(void)
{
	struct fo_corr_event ev;

	test_event_json(&ev);
	test_switch(&ev);
	test_reports(&ev);
	test_xl();
	test_wakes_pct();
	test_hist();
	test_xentrace();
	test_xen_switch(&ev);
	test_xen_path();
	if (failures) {
		fprintf(stderr, "test_fo_trace_corr: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_fo_trace_corr: all checks passed\n");
	return 0;
}
