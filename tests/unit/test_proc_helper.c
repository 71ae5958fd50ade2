/* SPDX-License-Identifier: MIT */
/*
 * test_proc_helper.c - hv/proc_helper.c, the process libxl's forking
 * lifecycle calls run in: requests are served in another process (a fork
 * there is its own, never the daemon's), in order; a helper that dies is
 * -EPIPE at once, not a hang; stop reaps it.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "hv/proc_helper.h"

struct msg {
	int op; /* 0: who are you, 1: fork like libxl's destroy, 2: die mid-job */
	int seq;
	pid_t pid, child_parent;
	int child_status;
	int policy;
};

static int inits;

static int init(void *ctx)
{
	(void)ctx;
	inits++;
	return 0;
}

static void serve(void *ctx, void *arg)
{
	struct msg *m = arg;
	(void)ctx;

	m->pid = getpid();
	m->policy = sched_getscheduler(0);
	m->seq++;
	if (m->op == 1) {
		int fds[2];
		pid_t c;

		/* libxl__ev_child_fork: the child reports whose child it is. */
		if (pipe(fds) < 0)
			return;
		c = fork();
		if (c == 0) {
			pid_t pp = getppid();
			(void)!write(fds[1], &pp, sizeof(pp));
			_exit(7);
		}
		(void)!read(fds[0], &m->child_parent, sizeof(m->child_parent));
		waitpid(c, &m->child_status, 0);
		close(fds[0]);
		close(fds[1]);
	}
	if (m->op == 2)
		_exit(3);
}

static void test_served_elsewhere(void)
{
	struct fo_proc_helper h;
	struct msg m = { 0 };

	CHECK(fo_proc_helper_start(&h, sizeof(m), init, serve, NULL) == 0, "started");
	CHECK(fo_proc_helper_call(&h, &m) == 0 && m.pid == h.pid && m.pid != getpid(),
	      "served by the helper (pid %d), not us (%d)", (int)m.pid, (int)getpid());
	CHECK(m.seq == 1 && inits == 0, "init ran in the helper, not here");
	m.op = 1;
	CHECK(fo_proc_helper_call(&h, &m) == 0, "a forking job");
	CHECK(m.child_parent == h.pid && m.child_parent != getpid(), "its fork is the helper's child (%d), not ours",
	      (int)m.child_parent);
	CHECK(WIFEXITED(m.child_status) && WEXITSTATUS(m.child_status) == 7, "reaped by the helper");
	CHECK(m.seq == 2, "replies in turn");
	CHECK(waitpid(-1, NULL, WNOHANG) == 0, "no child of ours exited but the helper, which runs");
	fo_proc_helper_stop(&h);
	CHECK(h.pid == 0 && h.fd == -1, "stopped and reaped");
	CHECK(kill(m.pid, 0) < 0 && errno == ESRCH, "the helper is gone");
}

/* Started by systemd as SCHED_FIFO: the helper is not. */
static void test_helper_not_realtime(void)
{
	const struct sched_param fifo = { .sched_priority = 1 }, other = { 0 };
	struct fo_proc_helper h;
	struct msg m = { 0 };

	if (sched_setscheduler(0, SCHED_FIFO, &fifo) < 0) {
		printf("skipped: no SCHED_FIFO for this user\n");
		return;
	}
	CHECK(fo_proc_helper_start(&h, sizeof(m), NULL, serve, NULL) == 0, "started");
	sched_setscheduler(0, SCHED_OTHER, &other);
	CHECK(fo_proc_helper_call(&h, &m) == 0 && m.policy == SCHED_OTHER, "helper's policy %d", m.policy);
	fo_proc_helper_stop(&h);
}

static void test_helper_dies(void)
{
	struct fo_proc_helper h;
	struct msg m = { .op = 2 };

	alarm(10);
	CHECK(fo_proc_helper_start(&h, sizeof(m), NULL, serve, NULL) == 0, "started");
	CHECK(fo_proc_helper_call(&h, &m) == -EPIPE, "died mid-job: -EPIPE");
	m.op = 0;
	CHECK(fo_proc_helper_call(&h, &m) == -EPIPE, "and stays gone");
	fo_proc_helper_stop(&h);
	alarm(0);
}

int main(void)
{
	RUN(test_served_elsewhere);
	RUN(test_helper_not_realtime);
	RUN(test_helper_dies);
	return check_summary("test_proc_helper");
}
