/* SPDX-License-Identifier: MIT */
/*
 * test_rt.c - io/rt.c's RLIMIT_RTTIME: fo_rt_setup() sets it, and a
 * SCHED_FIFO loop that spins past it says why and exits with
 * FO_RT_EXIT_RTTIME (systemd restarts it) instead of starving its CPU.
 * Each case runs in a child: going real-time is for good.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "lib/log.h"
#include "io/rt.h"

static void test_limit_set(void)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		struct fo_rt_result got;
		struct rlimit rl;

		fo_rt_setup(1, -1, false, &got);
		getrlimit(RLIMIT_RTTIME, &rl);
		_exit(rl.rlim_cur == FO_RT_RTTIME_SOFT_US && rl.rlim_max == FO_RT_RTTIME_HARD_US ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "RLIMIT_RTTIME is %lu/%lu us after fo_rt_setup",
	      FO_RT_RTTIME_SOFT_US, FO_RT_RTTIME_HARD_US);
}

static void test_spinning_loop_exits(void)
{
	int out[2];
	pid_t pid;
	int st = 0;
	char buf[4096] = "";
	ssize_t n, len = 0;

	if (pipe(out) < 0)
		abort();
	pid = fork();
	if (pid == 0) {
		struct fo_rt_result got;

		dup2(out[1], STDERR_FILENO);
		fo_rt_set_rttime_us(200000, 2000000);
		fo_log_start_async();
		fo_rt_setup(1, -1, false, &got);
		if (!got.fifo)
			_exit(77); /* no SCHED_FIFO here: RLIMIT_RTTIME never applies */
		for (;;)
			; /* a stuck loop */
	}
	close(out[1]);
	while ((n = read(out[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	buf[len] = '\0';
	waitpid(pid, &st, 0);
	close(out[0]);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("skipped: no SCHED_FIFO for this user\n");
		return;
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == FO_RT_EXIT_RTTIME, "exit status %d (signal %d), want %d",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0, FO_RT_EXIT_RTTIME);
	CHECK(strstr(buf, "RLIMIT_RTTIME") != NULL, "said why: %s", buf);
}

int main(void)
{
	RUN(test_limit_set);
	RUN(test_spinning_loop_exits);
	return check_summary("test_rt");
}
