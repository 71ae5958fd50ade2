/* SPDX-License-Identifier: MIT */
/*
 * bench-bare - the two baselines failoverd's switch is compared with, on
 * the same pair of domains, alternating A -> B -> A ...:
 *
 *   --mode bare   a resident process calls xc_domain_pause() on the running
 *                 member, then xc_domain_unpause() on the other, timing each
 *                 call; after each one it also times the xc_domain_getinfolist()
 *                 that confirms it (failoverd confirms both, so its "pause"
 *                 is pause + confirm: these columns make that comparable).
 *   --mode xl     `xl pause A` then `xl unpause B`, each spawned as a
 *                 process and timed from spawn to exit: what a script or an
 *                 operator would run.
 *   --mode clock  no domains: read CLOCK_MONOTONIC back to back for N ms on
 *                 CPU C and report how often it did not move. Under QEMU/TCG
 *                 Xen cannot promise a stable TSC, so Linux's pvclock clamps
 *                 every reading to the newest one any vCPU has seen: on a
 *                 vCPU whose clock lags, time stands still for a while and
 *                 every interval measured there shrinks to 0. The benchmark
 *                 measures on the vCPU where this does not happen. (On
 *                 arm64 there is no pvclock: Linux reads the generic
 *                 timer; the check runs the same and says so.)
 *
 * Usage: bench-bare --mode bare|xl -n N [--gap-ms G] [--rt PRIO] [--cpu C] [--max-s S] A B
 *        bench-bare --mode clock -n MS [--cpu C]
 *   A, B      domain names (resolved through xenstore); whichever of the
 *             two is running at start is paused first
 *   --gap-ms  pause between switches, so the new member really runs (10)
 *   --rt      SCHED_FIFO priority of this process (0 = SCHED_OTHER, default);
 *             spawned xl processes never inherit it
 *   --cpu     pin this process to dom0 CPU C
 *   --max-s   stop after S seconds even if fewer than N switches were done
 *             (the rows say how many): keeps `xl` under load in its budget
 * Output on stdout, CSV with a header line:
 *   i,from,to,pause_ns,unpause_ns,pause_confirm_ns,unpause_confirm_ns,pause_tsc,unpause_tsc
 * (the confirm columns are empty in xl mode; *_tsc: the same intervals in
 * ticks of the CPU's own counter, a cross-check of the clock: the TSC on
 * x86, the generic timer's virtual counter CNTVCT_EL0 on arm64; see
 * bench_tsc()); clock mode:
 *   cpu,reads,stalled,longest_stall,max_step_ns,tsc_per_us,tsc_backwards,tsc_hz
 * (stalled: readings equal to the previous one; longest_stall: most such
 * readings in a row; max_step_ns: the largest jump between two readings;
 * tsc_per_us: counter ticks per microsecond of CLOCK_MONOTONIC over the run,
 * to convert the *_tsc columns; tsc_backwards: counter readings below the
 * previous one, which would make the cross-check worthless; tsc_hz: the
 * counter's nominal frequency where the architecture states it, CNTFRQ_EL0
 * on arm64, 0 on x86). Exit 0 when all N switches
 * were done, 1 on the first failed step (after printing what it had).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <xenctrl.h>
#include <xenstore.h>

#include "bench_util.h"

extern char **environ;

enum bench_mode { BENCH_BARE, BENCH_XL, BENCH_CLOCK };

struct bench_dom {
	const char *name;
	uint32_t domid;
};

/* Name -> domid through xenstore's /local/domain/<id>/name. */
static int bench_resolve(struct xs_handle *xs, const char *name, uint32_t *ret_domid)
{
	unsigned n = 0, len;
	char **ids = xs_directory(xs, XBT_NULL, "/local/domain", &n);
	int rc = -ESRCH;

	if (!ids)
		return -errno;
	for (unsigned i = 0; i < n && rc == -ESRCH; i++) {
		char path[64], *v;

		snprintf(path, sizeof(path), "/local/domain/%s/name", ids[i]);
		v = xs_read(xs, XBT_NULL, path, &len);
		if (v && strcmp(v, name) == 0) {
			*ret_domid = (uint32_t)strtoul(ids[i], NULL, 10);
			rc = 0;
		}
		free(v);
	}
	free(ids);
	return rc;
}

/* --mode clock: how often CLOCK_MONOTONIC stood still on this CPU. */
static int bench_clock(long cpu, long ms)
{
	int64_t start = bench_now_ns(), end = start + (int64_t)ms * 1000000, prev = start, max_step = 0;
	uint64_t tsc0 = bench_tsc(), tsc_prev = tsc0;
	long reads = 0, stalled = 0, run = 0, longest = 0, backwards = 0;

	while (prev < end) {
		int64_t t = bench_now_ns();
		uint64_t tsc = bench_tsc();

		if (tsc < tsc_prev)
			backwards++;
		tsc_prev = tsc;

		reads++;
		if (t == prev) {
			stalled++;
			if (++run > longest)
				longest = run;
		} else {
			run = 0;
		}
		if (t - prev > max_step)
			max_step = t - prev;
		prev = t;
	}
	printf("cpu,reads,stalled,longest_stall,max_step_ns,tsc_per_us,tsc_backwards,tsc_hz\n"
	       "%ld,%ld,%ld,%ld,%" PRId64 ",%.3f,%ld,%" PRIu64 "\n",
	       cpu, reads, stalled, longest, max_step, (double)(tsc_prev - tsc0) * 1000.0 / (double)(prev - start),
	       backwards, bench_tsc_hz());
	return 0;
}

/* Spawn `xl VERB NAME`, wait for it; its wall time in *ret_ns. */
static int bench_xl(const char *verb, const char *name, int64_t *ret_ns)
{
	char *argv[] = { "xl", (char *)verb, (char *)name, NULL };
	int64_t t0 = bench_now_ns();
	int status, r;
	pid_t pid;

	r = posix_spawnp(&pid, "xl", NULL, NULL, argv, environ);
	if (r)
		return -r;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	*ret_ns = bench_now_ns() - t0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench-bare: xl %s %s failed (status %d)\n", verb, name, status);
		return -EIO;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-bare --mode bare|xl -n N [--gap-ms G] [--rt PRIO] [--cpu C] [--max-s S] A B\n"
			"       bench-bare --mode clock -n MS [--cpu C]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mode", required_argument, NULL, 'm' }, { "gap-ms", required_argument, NULL, 'g' },
		{ "rt", required_argument, NULL, 'r' },   { "cpu", required_argument, NULL, 'c' },
		{ "max-s", required_argument, NULL, 'M' }, { NULL, 0, NULL, 0 },
	};
	enum bench_mode mode = BENCH_BARE;
	struct bench_run_opts ro = { .gap_ms = 10, .cpu = -1 };
	long n, gap_ms, prio, cpu, max_s;
	int64_t t_start;
	struct bench_dom dom[2];
	xc_interface *xch = NULL;
	struct xs_handle *xs = NULL;
	int cur, c, r, rc = 1;

	while ((c = getopt_long(argc, argv, "n:", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "bare"))
				mode = BENCH_BARE;
			else if (!strcmp(optarg, "xl"))
				mode = BENCH_XL;
			else if (!strcmp(optarg, "clock"))
				mode = BENCH_CLOCK;
			else
				usage();
			break;
		default:
			if (bench_run_opt(c, optarg, &ro) != 1)
				usage();
		}
	}
	n = ro.n, gap_ms = ro.gap_ms, prio = ro.prio, cpu = ro.cpu, max_s = ro.max_s;
	if (mode == BENCH_CLOCK) {
		if (n < 1 || optind != argc || bench_rt_setup((int)prio, (int)cpu) < 0)
			usage();
		return bench_clock(cpu, n);
	}
	if (n < 1 || argc - optind != 2)
		usage();
	dom[0].name = argv[optind];
	dom[1].name = argv[optind + 1];

	xch = xc_interface_open(NULL, NULL, 0);
	xs = xs_open(0);
	if (!xch || !xs) {
		fprintf(stderr, "bench-bare: cannot open %s: %s\n", xch ? "xenstore" : "libxenctrl", strerror(errno));
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		r = bench_resolve(xs, dom[i].name, &dom[i].domid);
		if (r < 0) {
			fprintf(stderr, "bench-bare: no domain %s: %s\n", dom[i].name, strerror(-r));
			goto out;
		}
	}
	/* Start from whichever member runs; exactly one must. */
	{
		int r0 = bench_is_running(xch, dom[0].domid), r1 = bench_is_running(xch, dom[1].domid);

		if (r0 < 0 || r1 < 0 || r0 == r1) {
			fprintf(stderr, "bench-bare: need exactly one of %s, %s running (got %d, %d)\n", dom[0].name,
				dom[1].name, r0, r1);
			goto out;
		}
		cur = r0 ? 0 : 1;
	}
	if (bench_rt_setup((int)prio, (int)cpu) < 0)
		goto out;

	printf("i,from,to,pause_ns,unpause_ns,pause_confirm_ns,unpause_confirm_ns,pause_tsc,unpause_tsc\n");
	t_start = bench_now_ns();
	for (long i = 0; i < n; i++) {
		struct bench_dom *from = &dom[cur], *to = &dom[!cur];
		int64_t t0, t1, t2, t3, t4;
		uint64_t c0, c1, c2, c3;

		if (max_s && bench_now_ns() - t_start > max_s * 1000000000LL) {
			fprintf(stderr, "bench-bare: --max-s %ld reached after %ld switches\n", max_s, i);
			break;
		}

		if (mode == BENCH_XL) {
			int64_t p_ns, u_ns;

			c0 = bench_tsc();
			if (bench_xl("pause", from->name, &p_ns) < 0)
				goto out;
			c1 = bench_tsc();
			if (bench_xl("unpause", to->name, &u_ns) < 0)
				goto out;
			c2 = bench_tsc();
			printf("%ld,%s,%s,%" PRId64 ",%" PRId64 ",,,%" PRIu64 ",%" PRIu64 "\n", i, from->name, to->name,
			       p_ns, u_ns, c1 - c0, c2 - c1);
		} else {
			t0 = bench_now_ns();
			c0 = bench_tsc();
			r = xc_domain_pause(xch, from->domid);
			c1 = bench_tsc();
			t1 = bench_now_ns();
			if (r < 0) {
				fprintf(stderr, "bench-bare: xc_domain_pause(%u): %s\n", from->domid, strerror(errno));
				goto out;
			}
			r = bench_is_running(xch, from->domid);
			t2 = bench_now_ns();
			if (r != 0) {
				fprintf(stderr, "bench-bare: %s not confirmed paused (%d)\n", from->name, r);
				goto out;
			}
			c2 = bench_tsc();
			r = xc_domain_unpause(xch, to->domid);
			c3 = bench_tsc();
			t3 = bench_now_ns();
			if (r < 0) {
				fprintf(stderr, "bench-bare: xc_domain_unpause(%u): %s\n", to->domid, strerror(errno));
				goto out;
			}
			r = bench_is_running(xch, to->domid);
			t4 = bench_now_ns();
			if (r != 1) {
				fprintf(stderr, "bench-bare: %s not confirmed running (%d)\n", to->name, r);
				goto out;
			}
			printf("%ld,%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 "\n", i,
			       from->name, to->name, t1 - t0, t3 - t2, t2 - t1, t4 - t3, c1 - c0, c3 - c2);
		}
		cur = !cur;
		if (gap_ms)
			bench_sleep_ms((unsigned)gap_ms);
	}
	rc = 0;
out:
	fflush(stdout);
	if (xs)
		xs_close(xs);
	if (xch)
		xc_interface_close(xch);
	return rc;
}
