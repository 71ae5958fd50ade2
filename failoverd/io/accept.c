/* SPDX-License-Identifier: MIT */
/*
 * accept.c - accept4() with a spare descriptor for when the process is out
 * of them (see accept.h for why a plain retry spins).
 */
#include "io/accept.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

int fo_accept_spare_open(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int fo_accept_out_of_fds(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

enum fo_accept_result fo_accept(int listen_fd, int *spare_fd, void (*refuse)(int cfd, void *ctx), void *ctx,
				int *cfd, int *err)
{
	int shed, shed_err;

	if (*spare_fd < 0)
		*spare_fd = fo_accept_spare_open();
	*cfd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (*cfd >= 0)
		return FO_ACCEPTED;
	*err = errno;
	if (!fo_accept_out_of_fds(*err))
		return FO_ACCEPT_NONE;
	if (*spare_fd < 0)
		return FO_ACCEPT_STUCK;
	close(*spare_fd);
	shed = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	shed_err = errno;
	if (shed >= 0)
		refuse(shed, ctx);
	/* After refuse() closed it, the descriptor it used is free again
	 * (unless another thread took it: then the next call retries). */
	*spare_fd = fo_accept_spare_open();
	if (shed < 0)
		return shed_err == EAGAIN || shed_err == EWOULDBLOCK ? FO_ACCEPT_NONE : FO_ACCEPT_STUCK;
	return FO_ACCEPT_SHED;
}
