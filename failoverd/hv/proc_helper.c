/* SPDX-License-Identifier: MIT */
#include "proc_helper.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void helper_main(int fd, size_t msg_size, fo_proc_helper_init init, fo_proc_helper_serve serve, void *ctx)
{
	const struct sched_param other = { 0 };
	void *msg = malloc(msg_size);
	sigset_t none;

	/* systemd starts the daemon SCHED_FIFO (CPUSchedulingPolicy=fifo):
	 * a build taking seconds at that priority would starve dom0. */
	sched_setscheduler(0, SCHED_OTHER, &other);
	/* What the daemon set up for itself is not the helper's. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!msg || (init && init(ctx) < 0))
		_exit(1);
	for (;;) {
		ssize_t n = recv(fd, msg, msg_size, 0);

		if (n == 0)
			_exit(0); /* the daemon closed its end or is gone */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if ((size_t)n != msg_size)
			_exit(1);
		serve(ctx, msg);
		while (send(fd, msg, msg_size, MSG_NOSIGNAL) < 0)
			if (errno != EINTR)
				_exit(1);
	}
}

int fo_proc_helper_start(struct fo_proc_helper *h, size_t msg_size, fo_proc_helper_init init,
			 fo_proc_helper_serve serve, void *ctx)
{
	int sv[2];
	pid_t pid;

	h->pid = 0;
	h->fd = -1;
	h->msg_size = msg_size;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (pid == 0) {
		close(sv[0]);
		helper_main(sv[1], msg_size, init, serve, ctx);
	}
	close(sv[1]);
	h->pid = pid;
	h->fd = sv[0];
	return 0;
}

int fo_proc_helper_call(struct fo_proc_helper *h, void *msg)
{
	ssize_t n;

	if (h->fd < 0)
		return -EPIPE;
	while ((n = send(h->fd, msg, h->msg_size, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0)
		goto gone;
	while ((n = recv(h->fd, msg, h->msg_size, 0)) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)h->msg_size)
		return 0;
gone:
	close(h->fd);
	h->fd = -1;
	return -EPIPE;
}

void fo_proc_helper_stop(struct fo_proc_helper *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	if (h->pid > 0)
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	h->pid = 0;
}
