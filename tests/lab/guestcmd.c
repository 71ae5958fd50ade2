/* SPDX-License-Identifier: MIT */
/*
 * fo-guestcmd - a lab domU's hands for dom0 (tests/lab/domu/hooks/guestcmd.sh
 * starts it; scenarios/common.sh guest_cmd drives it). For scenarios that
 * need a domU, not dom0, to make a hypercall (hvwatch-flask: the failover
 * watch's domctl from a domU under FLASK) or to grant a page to a domain
 * other than dom0.
 *
 *   fo-guestcmd serve
 *
 * Publishes data/lab/ready = 1 in the domain's own xenstore directory,
 * then runs the commands dom0 writes to data/lab/cmd/0, cmd/1, ... in turn,
 * answering each in data/lab/out/N:
 *
 *   run PROG ARG...    fork and exec PROG (no shell; words split on spaces);
 *                      answer "rc=R OUTPUT" (exit status, then stdout and
 *                      stderr together, at most 2000 bytes)
 *   grant DOMID MS     share one page read-only with DOMID (gntalloc); a
 *                      64-bit counter at offset 8 goes up every MS ms (0:
 *                      never); answer "gref=G" (one page per serve)
 *   stop-ticks         the counter stops going up; answer "ok"
 *
 * A command it cannot parse is answered "error: ..." and the next one is
 * awaited. The page stays granted while the process lives.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xengnttab.h>
#include <xenstore.h>

#define OUT_MAX 2000
#define ARGV_MAX 32

static struct xs_handle *xs;
static char base[64];
static xengntshr_handle *xgs;
static volatile uint64_t *counter;
static unsigned tick_ms;
static volatile bool ticking;

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static bool xs_put(const char *key, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", base, key);
	if (xs_write(xs, XBT_NULL, path, val, strlen(val)))
		return true;
	fprintf(stderr, "fo-guestcmd: xenstore write %s: %s\n", path, strerror(errno));
	return false;
}

static void *tick_thread(void *arg)
{
	(void)arg;
	for (;;) {
		sleep_ms(tick_ms);
		if (ticking)
			__atomic_store_n(counter, *counter + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void do_grant(char *args, char *out, size_t outsz)
{
	unsigned long domid, ms;
	uint32_t gref;
	char *end;
	void *page;
	pthread_t t;

	if (counter) {
		snprintf(out, outsz, "error: a page is granted already");
		return;
	}
	errno = 0;
	domid = strtoul(args, &end, 10);
	if (errno || end == args || *end != ' ' || domid >= 0x7ff0) {
		snprintf(out, outsz, "error: grant DOMID MS: bad domid '%s'", args);
		return;
	}
	ms = strtoul(end + 1, &end, 10);
	if (errno || *end || ms > 60000) {
		snprintf(out, outsz, "error: grant DOMID MS: bad period in '%s'", args);
		return;
	}
	xgs = xengntshr_open(NULL, 0);
	if (!xgs) {
		snprintf(out, outsz, "error: xengntshr_open: %s (xen-gntalloc loaded?)", strerror(errno));
		return;
	}
	/* writable = 0: the grantee may only read it */
	page = xengntshr_share_pages(xgs, (uint32_t)domid, 1, &gref, 0);
	if (!page) {
		snprintf(out, outsz, "error: share a page with d%lu: %s", domid, strerror(errno));
		return;
	}
	memset(page, 0, 4096);
	counter = (volatile uint64_t *)((char *)page + 8);
	tick_ms = (unsigned)ms;
	ticking = ms > 0;
	if (ms > 0 && pthread_create(&t, NULL, tick_thread, NULL)) {
		snprintf(out, outsz, "error: pthread_create");
		return;
	}
	snprintf(out, outsz, "gref=%" PRIu32, gref);
}

static void do_run(char *args, char *out, size_t outsz)
{
	char *argv[ARGV_MAX + 1], *save = NULL, *w;
	int n = 0, fds[2], status;
	size_t len = 0;
	ssize_t r;
	pid_t pid;
	char buf[OUT_MAX + 1];

	for (w = strtok_r(args, " ", &save); w && n < ARGV_MAX; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	if (!n) {
		snprintf(out, outsz, "error: run: no program");
		return;
	}
	if (pipe(fds)) {
		snprintf(out, outsz, "error: pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(out, outsz, "error: fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	while ((r = read(fds[0], buf + len, OUT_MAX - len)) > 0 || (r < 0 && errno == EINTR))
		if (r > 0)
			len += (size_t)r;
	/* Drain what did not fit, so the child never blocks on a full pipe. */
	while ((r = read(fds[0], (char[256]){ 0 }, 256)) > 0 || (r < 0 && errno == EINTR))
		;
	close(fds[0]);
	buf[len] = '\0';
	while (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	snprintf(out, outsz, "rc=%d %s", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), buf);
}

static int serve(void)
{
	char path[128], key[32], out[OUT_MAX + 64], *self, *cmd;
	unsigned n = 0;
	unsigned int len;

	xs = xs_open(0);
	if (!xs) {
		fprintf(stderr, "fo-guestcmd: xs_open: %s\n", strerror(errno));
		return 1;
	}
	self = xs_read(xs, XBT_NULL, "domid", &len);
	if (!self) {
		fprintf(stderr, "fo-guestcmd: cannot read our domid: %s\n", strerror(errno));
		return 1;
	}
	snprintf(base, sizeof(base), "/local/domain/%s/data/lab", self);
	free(self);
	/* Ours before dom0 writes below it: its nodes inherit our ownership. */
	if (!xs_put("cmd", "") || !xs_put("out", "") || !xs_put("ready", "1"))
		return 1;
	fprintf(stderr, "fo-guestcmd: serving %s/cmd\n", base);
	for (;;) {
		snprintf(path, sizeof(path), "%s/cmd/%u", base, n);
		cmd = xs_read(xs, XBT_NULL, path, &len);
		if (!cmd) {
			sleep_ms(50);
			continue;
		}
		if (!strncmp(cmd, "run ", 4))
			do_run(cmd + 4, out, sizeof(out));
		else if (!strncmp(cmd, "grant ", 6))
			do_grant(cmd + 6, out, sizeof(out));
		else if (!strcmp(cmd, "stop-ticks")) {
			ticking = false;
			snprintf(out, sizeof(out), counter ? "ok" : "error: no page granted");
		} else
			snprintf(out, sizeof(out), "error: unknown command '%.40s'", cmd);
		fprintf(stderr, "fo-guestcmd: %u: %s -> %.200s\n", n, cmd, out);
		free(cmd);
		snprintf(key, sizeof(key), "out/%u", n);
		if (!xs_put(key, out))
			return 1;
		n++;
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "serve"))
		return serve();
	fprintf(stderr, "usage: fo-guestcmd serve\n");
	return 2;
}
