// SPDX-License-Identifier: MIT
/*
 * fo-switch-test - exercises /dev/fo_switch on a real Xen dom0.
 *
 *   fo-switch-test check A B       refusals, PAUSE/UNPAUSE/GETSTATE, one SWITCH
 *                                  A->B and back (A running, B paused on entry)
 *   fo-switch-test bench A B [N]   N SWITCHes through the module vs N fenced
 *                                  switches through libxenctrl, alternating
 *                                  direction, same domains, same boot
 *   fo-switch-test samples A B [N] the same two loops as bench, one CSV row per
 *                                  switch (tests/bench/bench-kmod.sh takes
 *                                  percentiles of these):
 *                                  path,i,pause_ns,unpause_ns,total_ns,call_ns
 *                                  path kswitch: phases timed in the kernel,
 *                                  call_ns = the whole ioctl seen from here;
 *                                  path xenctrl: pause+getinfo, unpause+getinfo,
 *                                  first pause -> standby confirmed running
 *   fo-switch-test arm A B [MS]    ARM the pair on A's heartbeat agent (port
 *                                  from xenstore), check notifications arrive,
 *                                  write stop-heartbeat, read() the event
 *   fo-switch-test armonly A B MS ID  ARM pair ID and exit: the pair outlives
 *                                  the file (a restarting daemon)
 *   fo-switch-test events 0 0      print the events queued so far (no wait)
 *   fo-switch-test list 0 0        print the armed pairs (LIST), one line each:
 *                                  "PAIR id active A standby B firing F ..."
 *   fo-switch-test disarm 0 0 ID   DISARM pair ID
 *
 * Every check prints "ok" or "FAIL"; the exit status is the number of
 * failures (capped at 100). Build: make tools (links libxenctrl,
 * libxenstore).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <xenctrl.h>
#include <xenstore.h>

#include "uapi/fo_switch.h"
#include "../guest-heartbeat/abi/fo_heartbeat.h"

static int failures;

static void check(bool ok, const char *what)
{
	printf("%-4s %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		failures++;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ioctl as 0 / -errno. */
static int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/* LIST into a buffer that is always big enough; -errno or the count. */
static int list_pairs(int fd, struct fo_switch_pair_info *out, unsigned max)
{
	struct fo_switch_list l = { .pairs = (uintptr_t)out, .capacity = max };
	int r = xioctl(fd, FO_SWITCH_IOC_LIST, &l);

	return r < 0 ? r : (int)l.count;
}

static bool list_has(int fd, uint32_t id, uint32_t a, uint32_t b)
{
	struct fo_switch_pair_info p[FO_SWITCH_MAX_SLOTS];
	int n = list_pairs(fd, p, FO_SWITCH_MAX_SLOTS);

	for (int i = 0; i < n; i++)
		if (p[i].pair_id == id && p[i].active == a && p[i].standby == b)
			return true;
	return false;
}

static int dom_op(int fd, unsigned long cmd, uint32_t domid)
{
	struct fo_switch_dom d = { .domid = domid };

	return xioctl(fd, cmd, &d);
}

static int dom_state(int fd, uint32_t domid)
{
	struct fo_switch_dom d = { .domid = domid };
	int r = xioctl(fd, FO_SWITCH_IOC_GETSTATE, &d);

	return r < 0 ? r : (int)d.state;
}

static int do_switch(int fd, uint32_t a, uint32_t s, struct fo_switch_req *req)
{
	memset(req, 0, sizeof(*req));
	req->active = a;
	req->standby = s;
	return xioctl(fd, FO_SWITCH_IOC_SWITCH, req);
}

/* ------------------------------------------------------------------ check */

static void cmd_check(int fd, uint32_t a, uint32_t b)
{
	struct fo_switch_req req;
	char what[128];
	int r;

	check(dom_state(fd, a) == FO_SWITCH_DOM_RUNNING, "GETSTATE A running");
	check(dom_state(fd, b) == FO_SWITCH_DOM_PAUSED, "GETSTATE B paused");
	check(dom_state(fd, 0) == FO_SWITCH_DOM_RUNNING, "GETSTATE dom0 running");
	check(dom_state(fd, 0x7ff0) == -EINVAL, "GETSTATE 0x7ff0 -> EINVAL");
	check(dom_state(fd, 4000) == FO_SWITCH_DOM_GONE, "GETSTATE unknown 4000 -> GONE");

	check(do_switch(fd, 0, b, &req) == -EINVAL, "SWITCH active=dom0 -> EINVAL");
	check(do_switch(fd, a, 0, &req) == -EINVAL, "SWITCH standby=dom0 -> EINVAL");
	check(do_switch(fd, a, a, &req) == -EINVAL, "SWITCH active == standby -> EINVAL");
	check(do_switch(fd, a, 0x7ff0, &req) == -EINVAL, "SWITCH standby=0x7ff0 -> EINVAL");
	check(do_switch(fd, a, 0xffff, &req) == -EINVAL, "SWITCH standby=0xffff -> EINVAL");
	check(do_switch(fd, a, 4000, &req) == -ESRCH, "SWITCH standby unknown -> ESRCH");
	check(do_switch(fd, 4000, b, &req) == -ESRCH, "SWITCH active unknown -> ESRCH");
	check(dom_state(fd, a) == FO_SWITCH_DOM_RUNNING && dom_state(fd, b) == FO_SWITCH_DOM_PAUSED,
	      "refusals touched nothing");
	check(dom_op(fd, FO_SWITCH_IOC_PAUSE, 0) == -EINVAL, "PAUSE dom0 -> EINVAL");
	check(dom_op(fd, FO_SWITCH_IOC_UNPAUSE, 0) == -EINVAL, "UNPAUSE dom0 -> EINVAL");
	check(dom_op(fd, FO_SWITCH_IOC_PAUSE, 4000) == -ESRCH, "PAUSE unknown -> ESRCH");
	check(dom_op(fd, FO_SWITCH_IOC_UNPAUSE, 4000) == -ESRCH, "UNPAUSE unknown -> ESRCH");
	check(xioctl(fd, _IOW(FO_SWITCH_IOC_MAGIC, 0x7f, uint32_t), &r) == -ENOTTY, "unknown ioctl -> ENOTTY");

	check(dom_op(fd, FO_SWITCH_IOC_PAUSE, a) == 0 && dom_state(fd, a) == FO_SWITCH_DOM_PAUSED, "PAUSE A");
	check(dom_op(fd, FO_SWITCH_IOC_UNPAUSE, a) == 0 && dom_state(fd, a) == FO_SWITCH_DOM_RUNNING, "UNPAUSE A");
	/* Xen counts pauses and refuses to unpause a running domain. */
	check(dom_op(fd, FO_SWITCH_IOC_UNPAUSE, a) == -EINVAL, "UNPAUSE running A -> EINVAL (Xen)");

	r = do_switch(fd, a, b, &req);
	snprintf(what, sizeof(what), "SWITCH A->B: r=%d result=%u A=%u B=%u, pause %.1f us, unpause %.1f us", r,
		 req.result, req.active_state, req.standby_state,
		 (req.phases.pause_done_ns - req.phases.pause_issued_ns) / 1e3,
		 (req.phases.unpause_done_ns - req.phases.unpause_issued_ns) / 1e3);
	check(r == 0 && req.result == FO_SWITCH_OK && dom_state(fd, a) == FO_SWITCH_DOM_PAUSED &&
		      dom_state(fd, b) == FO_SWITCH_DOM_RUNNING,
	      what);
	check(req.phases.pause_issued_ns <= req.phases.pause_done_ns &&
		      req.phases.pause_done_ns <= req.phases.unpause_issued_ns &&
		      req.phases.unpause_issued_ns <= req.phases.unpause_done_ns &&
		      now_ns() >= req.phases.unpause_done_ns && now_ns() - req.phases.pause_issued_ns < 1000000000u,
	      "phase timestamps ordered, CLOCK_MONOTONIC");
	/* Let B run long enough for the lab's observer (which samples every
	 * ~0.3 ms but can stall for several ms under emulation) to see it:
	 * switching straight back left B running for microseconds and the
	 * observer sometimes never saw it start at all. */
	usleep(50000);
	r = do_switch(fd, b, a, &req);
	check(r == 0 && dom_state(fd, a) == FO_SWITCH_DOM_RUNNING && dom_state(fd, b) == FO_SWITCH_DOM_PAUSED,
	      "SWITCH B->A");
}

/* ------------------------------------------------------------------ bench */

struct stat1 {
	double sum, max;
	unsigned n;
};

static void stat_add(struct stat1 *s, uint64_t ns)
{
	double us = ns / 1e3;

	s->sum += us;
	s->n++;
	if (us > s->max)
		s->max = us;
}

static void stat_print(const char *what, const struct stat1 *s)
{
	printf("   %-34s mean %8.1f us  max %8.1f us  (n=%u)\n", what, s->n ? s->sum / s->n : 0, s->max, s->n);
}

static bool xc_running(xc_interface *xch, uint32_t domid, bool *ret_running)
{
	xc_domaininfo_t info;

	if (xc_domain_getinfolist(xch, domid, 1, &info) != 1 || info.domain != domid)
		return false;
	*ret_running = !(info.flags & (XEN_DOMINF_paused | XEN_DOMINF_dying | XEN_DOMINF_shutdown));
	return true;
}

static void cmd_bench(int fd, uint32_t a, uint32_t b, unsigned n)
{
	struct stat1 k_pause = {}, k_unpause = {}, k_total = {}, k_ioctl = {};
	struct stat1 x_pause = {}, x_unpause = {}, x_total = {}, x_raw_pause = {}, x_raw_unpause = {};
	struct stat1 k_raw_pause = {}, k_raw_unpause = {};
	struct fo_switch_req req;
	xc_interface *xch;
	unsigned i, bad = 0;
	uint64_t t0, t1, t2, t3, t4;
	bool run;

	xch = xc_interface_open(NULL, NULL, 0);
	if (!xch) {
		perror("xc_interface_open");
		failures++;
		return;
	}
	for (i = 0; i < n; i++) {
		uint32_t from = i % 2 ? b : a, to = i % 2 ? a : b;

		t0 = now_ns();
		if (do_switch(fd, from, to, &req) < 0)
			bad++;
		t1 = now_ns();
		stat_add(&k_ioctl, t1 - t0);
		stat_add(&k_pause, req.phases.pause_done_ns - req.phases.pause_issued_ns);
		stat_add(&k_unpause, req.phases.unpause_done_ns - req.phases.unpause_issued_ns);
		stat_add(&k_total, req.phases.unpause_done_ns - req.phases.pause_issued_ns);
	}
	/* n is even: A runs again. The same fenced sequence through libxenctrl. */
	for (i = 0; i < n; i++) {
		uint32_t from = i % 2 ? b : a, to = i % 2 ? a : b;

		t0 = now_ns();
		if (xc_domain_pause(xch, from) < 0)
			bad++;
		t1 = now_ns();
		if (!xc_running(xch, from, &run) || run)
			bad++;
		t2 = now_ns();
		if (xc_domain_unpause(xch, to) < 0)
			bad++;
		t3 = now_ns();
		if (!xc_running(xch, to, &run) || !run)
			bad++;
		t4 = now_ns();
		stat_add(&x_raw_pause, t1 - t0);
		stat_add(&x_raw_unpause, t3 - t2);
		stat_add(&x_pause, t2 - t0);
		stat_add(&x_unpause, t4 - t2);
		stat_add(&x_total, t4 - t0);
	}
	/* Single ops through the module, as failoverd's hv ops would use them. */
	for (i = 0; i < n; i++) {
		t0 = now_ns();
		if (dom_op(fd, FO_SWITCH_IOC_PAUSE, a) < 0)
			bad++;
		t1 = now_ns();
		if (dom_op(fd, FO_SWITCH_IOC_UNPAUSE, a) < 0)
			bad++;
		t2 = now_ns();
		stat_add(&k_raw_pause, t1 - t0);
		stat_add(&k_raw_unpause, t2 - t1);
	}
	xc_interface_close(xch);

	printf("== BENCH %u switches each way-alternating, dom%u <-> dom%u\n", n, a, b);
	printf("  kernel module, FO_SWITCH_IOC_SWITCH (phases timed in the kernel):\n");
	stat_print("pause issued -> confirmed", &k_pause);
	stat_print("unpause issued -> confirmed", &k_unpause);
	stat_print("pause issued -> standby running", &k_total);
	stat_print("whole ioctl seen from userspace", &k_ioctl);
	printf("  libxenctrl, same fenced sequence (pause, getinfo, unpause, getinfo):\n");
	stat_print("pause + confirm", &x_pause);
	stat_print("unpause + confirm", &x_unpause);
	stat_print("pause issued -> standby running", &x_total);
	stat_print("xc_domain_pause alone", &x_raw_pause);
	stat_print("xc_domain_unpause alone", &x_raw_unpause);
	printf("  kernel module, single ops (PAUSE / UNPAUSE ioctls):\n");
	stat_print("PAUSE ioctl", &k_raw_pause);
	stat_print("UNPAUSE ioctl", &k_raw_unpause);
	check(bad == 0, "every bench operation succeeded");
	check(dom_state(fd, a) == FO_SWITCH_DOM_RUNNING && dom_state(fd, b) == FO_SWITCH_DOM_PAUSED,
	      "after bench: A running, B paused");
}

/* Raw samples, for percentiles (bench keeps only mean and max). */
static void cmd_samples(int fd, uint32_t a, uint32_t b, unsigned n)
{
	struct fo_switch_req req;
	xc_interface *xch;
	unsigned i, bad = 0;
	uint64_t t0, t1, t2, t4;
	bool run;

	xch = xc_interface_open(NULL, NULL, 0);
	if (!xch) {
		perror("xc_interface_open");
		failures++;
		return;
	}
	printf("path,i,pause_ns,unpause_ns,total_ns,call_ns\n");
	/* Interleaved, one kernel and one libxenctrl switch per round, so that
	 * a slow spell of the host hits both paths alike. Each round is two
	 * switches (there and back): A runs again at its end. */
	for (i = 0; i < n; i++) {
		for (int way = 0; way < 2; way++) {
			uint32_t from = way ? b : a, to = way ? a : b;
			int r;

			t0 = now_ns();
			r = do_switch(fd, from, to, &req);
			t1 = now_ns();
			if (r < 0 || req.result != FO_SWITCH_OK)
				bad++;
			else
				printf("kswitch,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", 2 * i + way,
				       (uint64_t)(req.phases.pause_done_ns - req.phases.pause_issued_ns),
				       (uint64_t)(req.phases.unpause_done_ns - req.phases.unpause_issued_ns),
				       (uint64_t)(req.phases.unpause_done_ns - req.phases.pause_issued_ns), t1 - t0);
		}
		for (int way = 0; way < 2; way++) {
			uint32_t from = way ? b : a, to = way ? a : b;
			bool ok = true;

			t0 = now_ns();
			ok &= xc_domain_pause(xch, from) == 0;
			ok &= xc_running(xch, from, &run) && !run;
			t2 = now_ns();
			ok &= xc_domain_unpause(xch, to) == 0;
			ok &= xc_running(xch, to, &run) && run;
			t4 = now_ns();
			if (!ok)
				bad++;
			else
				printf("xenctrl,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", 2 * i + way, t2 - t0,
				       t4 - t2, t4 - t0, t4 - t0);
		}
		fflush(stdout);
	}
	xc_interface_close(xch);
	if (bad)
		fprintf(stderr, "samples: %u switches failed\n", bad);
	failures += bad ? 1 : 0;
}

/* -------------------------------------------------------------------- arm */

static bool xs_get_uint(struct xs_handle *xs, uint32_t domid, const char *key, unsigned *ret)
{
	char path[128], *v;
	unsigned len;
	bool ok;

	snprintf(path, sizeof(path), "/local/domain/%u/%s", domid, key);
	v = xs_read(xs, XBT_NULL, path, &len);
	if (!v)
		return false;
	ok = sscanf(v, "%u", ret) == 1;
	free(v);
	return ok;
}

static void cmd_arm(int fd, uint32_t a, uint32_t b, unsigned timeout_ms)
{
	struct fo_switch_arm arm = { .pair_id = 7, .active = a, .standby = b,
				     .timeout_ns = (uint64_t)timeout_ms * 1000000u };
	struct fo_switch_pair_info info = { .pair_id = 7 };
	struct fo_switch_event ev;
	struct fo_switch_req req;
	struct xs_handle *xs;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint32_t id;
	unsigned port = 0;
	uint64_t stop_ns;
	char path[128];
	ssize_t n;
	int i, r;

	xs = xs_open(0);
	if (!xs) {
		perror("xs_open");
		failures++;
		return;
	}
	for (i = 0; i < 100 && !xs_get_uint(xs, a, FO_HB_XS_PORT, &port); i++)
		usleep(100000);
	check(port != 0, "agent published its port");
	arm.port = port;

	/* Refusals first. */
	struct fo_switch_arm bad = arm;
	bad.timeout_ns = 1000;
	check(xioctl(fd, FO_SWITCH_IOC_ARM, &bad) == -EINVAL, "ARM timeout 1 us -> EINVAL");
	bad = arm;
	bad.standby = a;
	check(xioctl(fd, FO_SWITCH_IOC_ARM, &bad) == -EINVAL, "ARM active == standby -> EINVAL");
	bad = arm;
	bad.standby = 4000;
	check(xioctl(fd, FO_SWITCH_IOC_ARM, &bad) == -ESRCH, "ARM unknown standby -> ESRCH");
	bad = arm;
	bad.port = 4095;
	r = xioctl(fd, FO_SWITCH_IOC_ARM, &bad);
	printf("     (ARM on a port the guest did not offer: %s)\n", strerror(-r));
	check(r < 0, "ARM wrong port refused by Xen");

	/* ARM, DISARM, DISARM again. */
	check(xioctl(fd, FO_SWITCH_IOC_ARM, &arm) == 0, "ARM");
	check(xioctl(fd, FO_SWITCH_IOC_ARM, &arm) == -EBUSY, "ARM same pair again -> EBUSY");
	bad = arm;
	bad.pair_id = 8;
	check(xioctl(fd, FO_SWITCH_IOC_ARM, &bad) == -EBUSY, "ARM other pair id, same domains -> EBUSY");
	check(do_switch(fd, a, b, &req) == -EBUSY, "SWITCH of an armed pair -> EBUSY");
	check(dom_op(fd, FO_SWITCH_IOC_UNPAUSE, b) == -EBUSY, "UNPAUSE armed standby -> EBUSY");
	check(list_has(fd, 7, a, b), "LIST shows pair 7 with both members");
	id = 7;
	check(xioctl(fd, FO_SWITCH_IOC_DISARM, &id) == 0, "DISARM");
	check(xioctl(fd, FO_SWITCH_IOC_DISARM, &id) == -ENOENT, "DISARM again -> ENOENT");
	check(!list_has(fd, 7, a, b), "LIST no longer shows pair 7");
	check(xioctl(fd, FO_SWITCH_IOC_PAIRINFO, &info) == -ENOENT, "PAIRINFO disarmed -> ENOENT");
	check(poll(&pfd, 1, 0) == 0, "no event after DISARM");

	/* ARM for real: the port was released by DISARM and binds again. */
	check(xioctl(fd, FO_SWITCH_IOC_ARM, &arm) == 0, "ARM again after DISARM");
	usleep(1000000);
	info.pair_id = 7;
	r = xioctl(fd, FO_SWITCH_IOC_PAIRINFO, &info);
	printf("     pairinfo: %llu notifications in %.0f ms, last %.1f ms ago\n", (unsigned long long)info.notifications,
	       (now_ns() - info.armed_ns) / 1e6, (now_ns() - info.last_notify_ns) / 1e6);
	check(r == 0 && info.notifications > 0 && !info.firing, "heartbeats reach the module (PAIRINFO)");
	check(dom_state(fd, a) == FO_SWITCH_DOM_RUNNING && dom_state(fd, b) == FO_SWITCH_DOM_PAUSED,
	      "still A running, B paused while heartbeats arrive");

	snprintf(path, sizeof(path), "/local/domain/%u/%s", a, FO_HB_XS_CONTROL);
	stop_ns = now_ns();
	check(xs_write(xs, XBT_NULL, path, FO_HB_CMD_STOP, strlen(FO_HB_CMD_STOP)), "write stop-heartbeat");

	r = poll(&pfd, 1, 5000 + (int)timeout_ms);
	check(r == 1 && (pfd.revents & POLLIN), "poll() says an event is readable");
	n = read(fd, &ev, sizeof(ev));
	check(n == (ssize_t)sizeof(ev), "read() one whole event");
	if (n == (ssize_t)sizeof(ev)) {
		printf("== ARM EVENT pair %u dom%u->dom%u result %u error %d states %u/%u notifications %llu\n",
		       ev.pair_id, ev.active, ev.standby, ev.result, ev.error, ev.active_state, ev.standby_state,
		       (unsigned long long)ev.notifications);
		printf("   stop-heartbeat written -> last notification  %9.1f ms\n",
		       ((double)ev.last_notify_ns - (double)stop_ns) / 1e6);
		printf("   last notification -> detected               %9.1f ms (timeout %u ms)\n",
		       (ev.detected_ns - ev.last_notify_ns) / 1e6, timeout_ms);
		printf("   detected - deadline (timer lateness)         %9.1f us\n",
		       (ev.detected_ns - ev.deadline_ns) / 1e3);
		printf("   detected -> pause issued                     %9.1f us\n",
		       (ev.phases.pause_issued_ns - ev.detected_ns) / 1e3);
		printf("   pause issued -> confirmed                    %9.1f us\n",
		       (ev.phases.pause_done_ns - ev.phases.pause_issued_ns) / 1e3);
		printf("   unpause issued -> confirmed                  %9.1f us\n",
		       (ev.phases.unpause_done_ns - ev.phases.unpause_issued_ns) / 1e3);
		printf("   detected -> standby running                  %9.1f us\n",
		       (ev.phases.unpause_done_ns - ev.detected_ns) / 1e3);
		check(ev.pair_id == 7 && ev.result == FO_SWITCH_OK && ev.error == 0, "event: switched OK");
		check(ev.detected_ns >= ev.deadline_ns && ev.deadline_ns == ev.last_notify_ns + arm.timeout_ns,
		      "event: deadline = last notification + timeout, detected after it");
	}
	check(dom_state(fd, a) == FO_SWITCH_DOM_PAUSED && dom_state(fd, b) == FO_SWITCH_DOM_RUNNING,
	      "after expiry: A paused, B running");
	check(xioctl(fd, FO_SWITCH_IOC_PAIRINFO, &info) == -ENOENT, "fired pair is gone (PAIRINFO -> ENOENT)");
	check(xioctl(fd, FO_SWITCH_IOC_DISARM, &id) == -ENOENT, "DISARM fired pair -> ENOENT");
	pfd.revents = 0;
	check(poll(&pfd, 1, 0) == 0, "event queue empty after read");
	xs_close(xs);
}

static void cmd_list(int fd)
{
	struct fo_switch_pair_info p[FO_SWITCH_MAX_SLOTS];
	struct fo_switch_list count_only = { 0 };
	int n = list_pairs(fd, p, FO_SWITCH_MAX_SLOTS);

	check(n >= 0, "LIST");
	for (int i = 0; i < n; i++)
		printf("PAIR %u active %u standby %u firing %u notifications %llu timeout_ms %llu\n", p[i].pair_id,
		       p[i].active, p[i].standby, p[i].firing, (unsigned long long)p[i].notifications,
		       (unsigned long long)(p[i].timeout_ns / 1000000u));
	check(xioctl(fd, FO_SWITCH_IOC_LIST, &count_only) == 0 && (int)count_only.count == n,
	      "LIST with no room counts the same pairs");
	printf("     %d pair(s) armed\n", n < 0 ? 0 : n);
}

static void print_event(const struct fo_switch_event *ev)
{
	printf("== EVENT pair %u dom%u->dom%u result %u error %d states %u/%u notifications %llu, "
	       "detected %.1f ms after the last one, standby running %.1f us after detection\n",
	       ev->pair_id, ev->active, ev->standby, ev->result, ev->error, ev->active_state, ev->standby_state,
	       (unsigned long long)ev->notifications, (ev->detected_ns - ev->last_notify_ns) / 1e6,
	       ev->phases.unpause_done_ns ? (ev->phases.unpause_done_ns - ev->detected_ns) / 1e3 : -1.0);
}

static void cmd_armonly(int fd, uint32_t a, uint32_t b, unsigned timeout_ms, uint32_t id)
{
	struct fo_switch_arm arm = { .pair_id = id, .active = a, .standby = b,
				     .timeout_ns = (uint64_t)timeout_ms * 1000000u };
	struct xs_handle *xs = xs_open(0);
	unsigned port = 0;
	char what[64];
	int i;

	for (i = 0; xs && i < 100 && !xs_get_uint(xs, a, FO_HB_XS_PORT, &port); i++)
		usleep(100000);
	if (xs)
		xs_close(xs);
	arm.port = port;
	snprintf(what, sizeof(what), "ARM pair %u (port %u), then close the device", id, port);
	check(xioctl(fd, FO_SWITCH_IOC_ARM, &arm) == 0, what);
}

static void cmd_events(int fd)
{
	struct fo_switch_event ev[4];
	ssize_t n;
	int i, count = 0;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	while ((n = read(fd, ev, sizeof(ev))) > 0) {
		for (i = 0; i < n / (ssize_t)sizeof(ev[0]); i++, count++)
			print_event(&ev[i]);
	}
	check(n < 0 && errno == EAGAIN, "read until EAGAIN (O_NONBLOCK)");
	printf("     %d event(s)\n", count);
}

/* ------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	uint32_t a, b;
	int fd;

	if (argc < 4) {
		fprintf(stderr, "usage: %s check|bench|arm A B [N|TIMEOUT_MS]\n", argv[0]);
		return 2;
	}
	a = (uint32_t)strtoul(argv[2], NULL, 0);
	b = (uint32_t)strtoul(argv[3], NULL, 0);
	fd = open(FO_SWITCH_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(FO_SWITCH_DEVICE);
		return 100;
	}
	if (!strcmp(argv[1], "check"))
		cmd_check(fd, a, b);
	else if (!strcmp(argv[1], "bench"))
		cmd_bench(fd, a, b, argc > 4 ? (unsigned)atoi(argv[4]) & ~1u : 200);
	else if (!strcmp(argv[1], "samples"))
		cmd_samples(fd, a, b, argc > 4 ? (unsigned)atoi(argv[4]) : 100);
	else if (!strcmp(argv[1], "arm"))
		cmd_arm(fd, a, b, argc > 4 ? (unsigned)atoi(argv[4]) : 200);
	else if (!strcmp(argv[1], "armonly") && argc > 5)
		cmd_armonly(fd, a, b, (unsigned)atoi(argv[4]), (uint32_t)atoi(argv[5]));
	else if (!strcmp(argv[1], "events"))
		cmd_events(fd);
	else if (!strcmp(argv[1], "list"))
		cmd_list(fd);
	else if (!strcmp(argv[1], "disarm") && argc > 4) {
		uint32_t id = (uint32_t)strtoul(argv[4], NULL, 0);
		check(xioctl(fd, FO_SWITCH_IOC_DISARM, &id) == 0, "DISARM");
	}
	else {
		fprintf(stderr, "unknown command %s\n", argv[1]);
		return 2;
	}
	close(fd);
	printf("== %s: %d failure(s)\n", argv[1], failures);
	return failures > 100 ? 100 : failures;
}
