/* SPDX-License-Identifier: MIT */
/*
 * accept.h - accepting a connection when the process may be out of file
 * descriptors, shared by the control socket (on the loop) and the /metrics
 * thread.
 *
 * Out of descriptors (EMFILE, ENFILE, or the kernel out of memory), a
 * failed accept4() leaves the connection in the backlog and the listener
 * readable: a caller that simply polls again spins. The spare technique:
 * keep one descriptor (/dev/null) open for this moment, give it up to
 * accept the pending connection, tell the peer why and close it, then
 * take the spare again. Without a spare (the whole system is out) the
 * connection stays pending and the caller must stop watching the listener
 * for a while.
 */
#ifndef FO_IO_ACCEPT_H
#define FO_IO_ACCEPT_H

enum fo_accept_result {
	FO_ACCEPTED,      /* *cfd is the new connection (non-blocking, close-on-exec) */
	FO_ACCEPT_NONE,   /* nothing pending, or an error of that connection alone: poll again */
	FO_ACCEPT_SHED,   /* out of descriptors: the pending connection was taken with the
			   * spare, handed to refuse() (which closes it), the spare retaken */
	FO_ACCEPT_STUCK,  /* out of descriptors and no spare: the connection is still
			   * pending; stop polling the listener for a while */
};

/* A spare descriptor for fo_accept(), or -1 with errno. */
int fo_accept_spare_open(void);

/* One accept4() on `listen_fd`, shedding the connection as above when out
 * of descriptors; *err is the accept4() errno when the result is not
 * FO_ACCEPTED. A missing spare (*spare_fd < 0) is taken again first.
 * refuse(cfd, ctx) writes its reason (non-blocking) and closes cfd. */
enum fo_accept_result fo_accept(int listen_fd, int *spare_fd, void (*refuse)(int cfd, void *ctx), void *ctx,
				int *cfd, int *err);

/* errno values of accept4() that mean "out of descriptors or memory". */
int fo_accept_out_of_fds(int err);

#endif
