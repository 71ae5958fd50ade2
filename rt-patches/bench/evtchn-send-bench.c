/* SPDX-License-Identifier: MIT */
/*
 * fo-evtchn-send-bench - the cost of one EVTCHNOP_send from inside a domU,
 * on a port of its own that is not its heartbeat port: what every
 * netfront / blkfront kick of a watched active pays for the failover
 * watch's send hook (rt-patches 0012). Runs in the lab's domU (hook
 * tests/lab/domu/hooks/evtchn-bench.sh), beside the agent.
 *
 * It allocates one unbound port for dom0 through /dev/xen/evtchn (the
 * raw ioctls, so the binary is static with libc alone), then for ever:
 * one round = BATCHES batches of BATCH notifies (IOCTL_EVTCHN_NOTIFY:
 * one EVTCHNOP_send each; on an unbound port Xen drops the event and
 * returns 0, so the send hook runs as for a bound one), timed with
 * CLOCK_MONOTONIC per batch; it prints the round's median, 10th and
 * 90th percentile of the batch means (ns per send) and sleeps.
 *
 *   fo-evtchn-send-bench [--batch N] [--batches B] [--sleep-ms M]
 *   prints: @@EVB round=K port=P median_ns=X p10_ns=Y p90_ns=Z
 *
 * A lab tool: the scenario hvwatch-send-bench compares rounds with the
 * watch armed and disarmed in the same boot.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* Linux include/uapi/xen/evtchn.h (not installed with the libc headers). */
struct ioctl_evtchn_bind_unbound_port {
	unsigned int remote_domain;
};
struct ioctl_evtchn_notify {
	unsigned int port;
};
#define IOCTL_EVTCHN_BIND_UNBOUND_PORT _IOC(_IOC_NONE, 'E', 2, sizeof(struct ioctl_evtchn_bind_unbound_port))
#define IOCTL_EVTCHN_NOTIFY _IOC(_IOC_NONE, 'E', 4, sizeof(struct ioctl_evtchn_notify))

#define MAX_BATCHES 1000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static unsigned long arg_num(const char *what, const char *s, unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v < min || v > max) {
		fprintf(stderr, "fo-evtchn-send-bench: %s: not a number in [%lu, %lu]: %s\n", what, min, max, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "batch", required_argument, NULL, 'n' },
		{ "batches", required_argument, NULL, 'b' },
		{ "sleep-ms", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	static double mean[MAX_BATCHES];
	unsigned long batch = 200, batches = 50, sleep_ms = 500, round;
	struct ioctl_evtchn_bind_unbound_port bind = { .remote_domain = 0 };
	struct ioctl_evtchn_notify notify;
	int fd, port, c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': batch = arg_num("--batch", optarg, 1, 1000000); break;
		case 'b': batches = arg_num("--batches", optarg, 3, MAX_BATCHES); break;
		case 's': sleep_ms = arg_num("--sleep-ms", optarg, 0, 60000); break;
		default:
			fprintf(stderr, "usage: fo-evtchn-send-bench [--batch N] [--batches B] [--sleep-ms M]\n");
			return 2;
		}
	}
	fd = open("/dev/xen/evtchn", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "fo-evtchn-send-bench: /dev/xen/evtchn: %s\n", strerror(errno));
		return 1;
	}
	port = ioctl(fd, IOCTL_EVTCHN_BIND_UNBOUND_PORT, &bind);
	if (port < 0) {
		fprintf(stderr, "fo-evtchn-send-bench: allocating an unbound port for dom0: %s\n", strerror(errno));
		return 1;
	}
	notify.port = (unsigned int)port;
	printf("@@EVB start port=%d batch=%lu batches=%lu\n", port, batch, batches);
	fflush(stdout);
	for (round = 1;; round++) {
		for (unsigned long b = 0; b < batches; b++) {
			uint64_t t0 = now_ns();

			for (unsigned long i = 0; i < batch; i++)
				if (ioctl(fd, IOCTL_EVTCHN_NOTIFY, &notify) < 0) {
					fprintf(stderr, "fo-evtchn-send-bench: notify port %d: %s\n", port,
						strerror(errno));
					return 1;
				}
			mean[b] = (double)(now_ns() - t0) / (double)batch;
		}
		qsort(mean, batches, sizeof(mean[0]), cmp_double);
		printf("@@EVB round=%lu port=%d median_ns=%.0f p10_ns=%.0f p90_ns=%.0f\n", round, port,
		       mean[batches / 2], mean[batches / 10], mean[batches * 9 / 10]);
		fflush(stdout);
		if (sleep_ms)
			usleep((useconds_t)sleep_ms * 1000);
	}
}
