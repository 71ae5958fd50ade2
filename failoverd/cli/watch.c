/* SPDX-License-Identifier: MIT */
/*
 * watch.c - `status --watch`: the status again every --interval seconds
 * until SIGINT or SIGTERM, which end it with exit 0.
 *
 * On a terminal each snapshot replaces the last one (cursor home, clear,
 * then the whole frame in one write, so it does not flicker); an error
 * (the daemon restarting) is shown in the frame and the next poll tries
 * again. Not on a terminal, the snapshots follow one another, each under
 * its time line and after a blank line, and errors go to stderr. With
 * --json every poll prints the reply line: JSON lines, for jq or a log.
 *
 * SIGINT and SIGTERM stay blocked except while a poll waits on the daemon
 * and while we sleep (ppoll unblocks them atomically), so a stop can never
 * fall between the check of fo_cli_stop and the sleep, and a frame is never
 * cut in half on the screen. The screen is left as it is: the last
 * snapshot stays visible, nothing (cursor, modes) needs restoring.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define ANSI_HOME_CLEAR "\033[H\033[2J"

static void on_stop(int sig)
{
	(void)sig;
	fo_cli_stop = 1;
}

/* SIGINT stays ignored when it was (a background job of a script: the
 * shell's ^C is not meant for it); SIGTERM is always ours. */
static void catch_stop_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop }, old;

	/* No SA_RESTART: a poll waiting on the daemon returns EINTR. */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static void time_line(FILE *out, const struct options *o)
{
	char when[64];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
	fprintf(out, "Every %gs: failoverctl status    %s\n\n", o->interval_s, when);
}

/* Sleep until `until` (ms, CLOCK_MONOTONIC) or a stop; `open` is the mask
 * with the stop signals unblocked. */
static void sleep_until(int64_t until, const sigset_t *open)
{
	while (!fo_cli_stop) {
		int64_t left = until - fo_cli_now_ms();
		struct timespec ts;

		if (left <= 0)
			return;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = (left % 1000) * 1000000;
		ppoll(NULL, 0, &ts, open);
	}
}

int fo_cli_cmd_status_watch(const struct options *o, struct conn *c)
{
	bool tty = !o->json && isatty(STDOUT_FILENO);
	sigset_t stop, orig, open;
	int rc = EXIT_OK;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &orig);
	open = orig;
	sigdelset(&open, SIGINT);
	sigdelset(&open, SIGTERM);
	catch_stop_signals();

	for (unsigned long n = 0; !fo_cli_stop; n++) {
		int64_t start = fo_cli_now_ms();
		struct options wo = *o;
		char *frame = NULL;
		size_t frame_len = 0;
		FILE *out = stdout;
		int r;

		if (!o->json) {
			/* The frame is built whole, then written at once. */
			out = open_memstream(&frame, &frame_len);
			if (!out) {
				fo_cli_cmd_error(o, "out of memory");
				rc = EXIT_DAEMON;
				break;
			}
			time_line(out, o);
			if (tty)
				wo.err = out; /* an error is part of the frame */
		}

		sigprocmask(SIG_SETMASK, &open, NULL);
		r = fo_cli_status_once(&wo, c, out);
		sigprocmask(SIG_BLOCK, &stop, NULL);
		fo_cli_conn_close(c);

		/* Not protected is a state to watch, not an error; a lost
		 * daemon is one to come back from. */
		if (r != EXIT_OK && r != EXIT_UNPROTECTED && !fo_cli_stop)
			fprintf(fo_cli_err_out(&wo), "failoverctl: %s: retrying every %gs\n", o->cmd, o->interval_s);
		if (!o->json) {
			if (fclose(out) != 0) {
				free(frame);
				fo_cli_cmd_error(o, "out of memory");
				rc = EXIT_DAEMON;
				break;
			}
			if (!fo_cli_stop) {
				if (tty)
					fputs(ANSI_HOME_CLEAR, stdout);
				else if (n)
					fputc('\n', stdout);
				fwrite(frame, 1, frame_len, stdout);
			}
			free(frame);
		}
		fflush(stdout);
		if (ferror(stdout))
			break; /* main() says why */
		sleep_until(start + (int64_t)(o->interval_s * 1000.0), &open);
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return rc;
}
