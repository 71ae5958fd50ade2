/* SPDX-License-Identifier: MIT */
/*
 * proc_helper.h - a helper process for work that forks.
 *
 * libxl's domain lifecycle forks: libxl_domain_destroy runs its final
 * xc_domain_destroy in a child (libxl__ev_child_fork in libxl_domain.c),
 * and a build may run a bootloader or hotplug scripts. A fork of the
 * daemon, memory-locked and with a SCHED_FIFO loop, copies its page tables
 * under the mm lock the loop's page faults need, and turns the loop's next
 * writes to every private page into copy-on-write faults. So such work
 * runs in a process forked once, at start, before the daemon has a thread
 * of its own, locks memory or goes real-time; the daemon's thread that
 * waits for it (the Xen backend's builder, hv/xen/builder.c) talks to it
 * over a socketpair.
 *
 * Protocol: fixed-size messages on a SOCK_SEQPACKET pair, one request,
 * one reply (the request's message, filled in), strictly in turn. The
 * helper exits when its end reads EOF (the daemon closed it or died), after
 * finishing the job it is doing.
 */
#ifndef FO_PROC_HELPER_H
#define FO_PROC_HELPER_H

#include <stddef.h>
#include <sys/types.h>

struct fo_proc_helper {
	pid_t pid;   /* 0: not started / reaped */
	int fd;      /* the daemon's end; -1 when gone */
	size_t msg_size;
};

/* In the helper: `init` once (0 or -errno: a failure ends the helper,
 * which the daemon sees as EOF), then `serve` for each message, in place. */
typedef int (*fo_proc_helper_init)(void *ctx);
typedef void (*fo_proc_helper_serve)(void *ctx, void *msg);

/* Fork the helper now. Call before any thread is started. 0 or -errno. */
int fo_proc_helper_start(struct fo_proc_helper *h, size_t msg_size, fo_proc_helper_init init,
			 fo_proc_helper_serve serve, void *ctx);
/* One request, its reply in `msg` (msg_size bytes). From one thread at a
 * time. -EPIPE: the helper is gone (it will not come back: restarting it
 * would be a fork of the real-time process). */
int fo_proc_helper_call(struct fo_proc_helper *h, void *msg);
/* Close our end and reap the helper (it finishes its current job first). */
void fo_proc_helper_stop(struct fo_proc_helper *h);

#endif
