/* SPDX-License-Identifier: MIT */
/*
 * fowatch-ctl - dom0's hand on the Xen failover watch (the patched
 * hypervisor's XEN_DOMCTL_failover_watch, rt-patches/abi/xen_failover_watch.h):
 * arm, disarm, query and release a watch, and wait for its VIRQ. For the
 * lab and for people; failoverd issues the same domctl itself.
 *
 *   fowatch-ctl arm ACTIVE STANDBY --gref G --offset O --period-us P
 *               --timeout-us T --cpu C [--quiesce-us Q]
 *               [--shutdown-mask M] [--fence-always] [--event-port P]
 *   fowatch-ctl disarm DOMID
 *   fowatch-ctl query DOMID         one JSON line (state, reason, timestamps)
 *   fowatch-ctl release DOMID
 *   fowatch-ctl wait-virq [--timeout-ms N]
 *
 * release tears the watch down; a pause of the active it holds (FIRED,
 * FAILED_*) becomes a toolstack pause, so the failed active stays paused
 * (one `xl unpause` ends it). query's "fenced": the watch holds the active
 * paused and saw none of its vCPUs running; "pausing": it holds a pause
 * not yet seen to hold (QUIESCING, FAILED_QUIESCE).
 *
 * DOMID is the active or the standby of the watch. query prints Xen's NOW()
 * stamps (ns since Xen booted) and, measured around the call, the offset
 * that maps them onto this dom0's CLOCK_MONOTONIC (mono = xen + offset,
 * within mono_err_ns). wait-virq binds VIRQ_FAILOVER, prints
 * {"bound":true,"port":P} once bound (start it before what should fire),
 * then {"virq":14,"port":P,"waited_ms":W} when it arrives.
 *
 * Exit: 0 done; 1 the hypervisor or the library refused (errno is said;
 * ENOSYS: this Xen has no failover watch); 2 usage; 3 wait-virq timed out.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xenctrl.h>
#include <xenevtchn.h>

#include "abi/xen_failover_watch.h"

/* Where the vendor struct goes: the union of struct xen_domctl (stock headers). */
_Static_assert(sizeof(((struct xen_domctl *)0)->u) >= sizeof(struct fo_xen_failover_watch),
	       "the failover watch struct must fit xen_domctl.u");
_Static_assert(offsetof(struct xen_domctl, u) == 16, "xen_domctl header is 16 bytes");

static const char *prog = "fowatch-ctl";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s arm ACTIVE STANDBY --gref G --offset O --period-us P --timeout-us T --cpu C\n"
		"                  [--quiesce-us Q] [--shutdown-mask M] [--fence-always] [--event-port P]\n"
		"       %s disarm DOMID\n"
		"       %s query DOMID\n"
		"       %s release DOMID\n"
		"       %s wait-virq [--timeout-ms N]\n",
		prog, prog, prog, prog, prog);
}

/* A decimal or 0x number in [0, max]; false (and a message) otherwise. */
static bool parse_u32(const char *what, const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		goto bad;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		goto bad;
	*out = (uint32_t)v;
	return true;
bad:
	fprintf(stderr, "%s: %s: not a number in [0, %" PRIu32 "]: %s\n", prog, what, max, s ? s : "(none)");
	return false;
}

static bool parse_domid(const char *what, const char *s, uint16_t *out)
{
	uint32_t v;

	if (!parse_u32(what, s, DOMID_FIRST_RESERVED - 1, &v))
		return false;
	*out = (uint16_t)v;
	return true;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * One XEN_DOMCTL_failover_watch: the vendor struct is copied into the
 * union's bytes (no aliasing through a cast) and back. xc_domctl() sets
 * interface_version and bounces the whole struct xen_domctl both ways.
 */
static int fowatch_domctl(uint16_t domid, struct fo_xen_failover_watch *fw)
{
	static xc_interface *xch; /* opened once the arguments were found good */
	struct xen_domctl dc;
	int rc;

	if (!xch) {
		xch = xc_interface_open(NULL, NULL, 0);
		if (!xch) {
			fprintf(stderr, "%s: xc_interface_open: %s (not in a privileged dom0?)\n", prog,
				strerror(errno));
			exit(1);
		}
	}
	memset(&dc, 0, sizeof(dc));
	dc.cmd = FO_XEN_DOMCTL_FAILOVER_WATCH;
	dc.domain = domid;
	memcpy(&dc.u, fw, sizeof(*fw));
	rc = xc_domctl(xch, &dc);
	if (rc == 0)
		memcpy(fw, &dc.u, sizeof(*fw));
	return rc;
}

static int report_errno(const char *op, uint16_t domid)
{
	int e = errno;

	fprintf(stderr, "%s: %s d%u: %s%s\n", prog, op, domid, strerror(e),
		e == ENOSYS ? " (this hypervisor has no failover watch: boot the patched Xen)" :
		e == ENOENT && strcmp(op, "arm") ? " (no watch on that domain)" : "");
	return 1;
}

static int cmd_arm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "gref", required_argument, NULL, 'g' },
		{ "offset", required_argument, NULL, 'o' },
		{ "period-us", required_argument, NULL, 'p' },
		{ "timeout-us", required_argument, NULL, 't' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "quiesce-us", required_argument, NULL, 'q' },
		{ "shutdown-mask", required_argument, NULL, 'm' },
		{ "fence-always", no_argument, NULL, 'f' },
		{ "event-port", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	struct fo_xen_failover_watch fw;
	uint16_t active, standby;
	uint32_t v;
	bool have_gref = false, have_off = false, have_period = false, have_timeout = false, have_cpu = false;
	int c;

	memset(&fw, 0, sizeof(fw));
	fw.op = FO_FOWATCH_OP_ARM;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (!parse_u32("--gref", optarg, UINT32_MAX, &fw.gref))
				return 2;
			have_gref = true;
			break;
		case 'o':
			if (!parse_u32("--offset", optarg, 4096 - 8, &fw.offset))
				return 2;
			have_off = true;
			break;
		case 'p':
			if (!parse_u32("--period-us", optarg, FO_FOWATCH_MAX_TIMEOUT_US, &fw.period_us))
				return 2;
			have_period = true;
			break;
		case 't':
			if (!parse_u32("--timeout-us", optarg, FO_FOWATCH_MAX_TIMEOUT_US, &fw.timeout_us))
				return 2;
			have_timeout = true;
			break;
		case 'c':
			if (!parse_u32("--cpu", optarg, UINT16_MAX - 1, &v))
				return 2;
			fw.cpu = (uint16_t)v;
			have_cpu = true;
			break;
		case 'q':
			if (!parse_u32("--quiesce-us", optarg, FO_FOWATCH_MAX_QUIESCE_US, &fw.quiesce_us))
				return 2;
			break;
		case 'm':
			if (!parse_u32("--shutdown-mask", optarg, (1u << (FO_FOWATCH_SHUTDOWN_MAX + 1)) - 1,
				       &fw.shutdown_mask))
				return 2;
			break;
		case 'f':
			fw.flags |= FO_FOWATCH_F_FENCE_ALWAYS;
			break;
		case 'e': /* event mode (0012): the active's port it notifies after each beat */
			if (!parse_u32("--event-port", optarg, UINT32_MAX, &fw.port))
				return 2;
			if (!fw.port) {
				fprintf(stderr, "%s: --event-port: 0 is never a bound port\n", prog);
				return 2;
			}
			fw.flags |= FO_FOWATCH_F_EVENT;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	if (!parse_domid("ACTIVE", argv[optind], &active) || !parse_domid("STANDBY", argv[optind + 1], &standby))
		return 2;
	if (!have_gref || !have_off || !have_period || !have_timeout || !have_cpu) {
		fprintf(stderr, "%s: arm needs --gref, --offset, --period-us, --timeout-us and --cpu\n", prog);
		return 2;
	}
	/* Xen checks all of this too; said here in words rather than EINVAL. */
	if (fw.period_us < FO_FOWATCH_MIN_PERIOD_US || (uint64_t)fw.timeout_us < 2 * (uint64_t)fw.period_us) {
		fprintf(stderr, "%s: need --period-us >= %u and --timeout-us >= 2 * period, <= %u\n", prog,
			FO_FOWATCH_MIN_PERIOD_US, FO_FOWATCH_MAX_TIMEOUT_US);
		return 2;
	}
	if (fw.shutdown_mask & (1u << FO_FOWATCH_SHUTDOWN_SUSPEND)) {
		fprintf(stderr, "%s: --shutdown-mask: a suspend (bit %u) always aborts, it cannot fire\n", prog,
			FO_FOWATCH_SHUTDOWN_SUSPEND);
		return 2;
	}
	fw.standby = standby;
	if (fowatch_domctl(active, &fw))
		return report_errno("arm", active);
	printf("{\"armed\":true,\"active\":%u,\"standby\":%u}\n", active, standby);
	return 0;
}

/* "SUB-COMMAND DOMID": the domid, and fw cleared for op; false on a usage error. */
static bool one_domid_op(int argc, char **argv, uint32_t op, uint16_t *domid, struct fo_xen_failover_watch *fw)
{
	if (argc != 2) {
		usage(stderr);
		return false;
	}
	if (!parse_domid("DOMID", argv[1], domid))
		return false;
	memset(fw, 0, sizeof(*fw));
	fw->op = op;
	return true;
}

static int cmd_simple(uint32_t op, const char *name, int argc, char **argv)
{
	struct fo_xen_failover_watch fw;
	uint16_t domid;

	if (!one_domid_op(argc, argv, op, &domid, &fw))
		return 2;
	if (fowatch_domctl(domid, &fw))
		return report_errno(name, domid);
	printf("{\"%s\":true,\"domid\":%u}\n", op == FO_FOWATCH_OP_DISARM ? "disarmed" : "released", domid);
	return 0;
}

static int cmd_query(int argc, char **argv)
{
	struct fo_xen_failover_watch fw;
	uint16_t domid;
	int64_t m0, m1, offset;

	if (!one_domid_op(argc, argv, FO_FOWATCH_OP_QUERY, &domid, &fw))
		return 2;
	m0 = mono_ns();
	if (fowatch_domctl(domid, &fw))
		return report_errno("query", domid);
	m1 = mono_ns();
	/* mono(t_x) = (m0 + m1) / 2 - (t_now - t_x) = t_x + offset */
	offset = m0 + (m1 - m0) / 2 - (int64_t)fw.t_now;

	printf("{\"active\":%u,\"standby\":%u,\"owner\":%u,\"state\":\"%s\",\"state_code\":%" PRIu32
	       ",\"reason\":\"%s\",\"reason_code\":%" PRIu32 ",\"shutdown_code\":%" PRId64
	       ",\"fenced\":%s,\"pausing\":%s,\"flags\":%" PRIu32 ",\"gref\":%" PRIu32 ",\"port\":%" PRIu32 ",\"offset\":%" PRIu32
	       ",\"period_us\":%" PRIu32 ",\"timeout_us\":%" PRIu32 ",\"quiesce_us\":%" PRIu32
	       ",\"shutdown_mask\":%" PRIu32 ",\"cpu\":%u,\"seq\":%" PRIu64 ",\"t_armed\":%" PRIu64
	       ",\"t_progress\":%" PRIu64 ",\"t_detect\":%" PRIu64 ",\"t_fence\":%" PRIu64
	       ",\"t_quiesced\":%" PRIu64 ",\"t_switched\":%" PRIu64 ",\"t_now\":%" PRIu64
	       ",\"mono_offset_ns\":%" PRId64 ",\"mono_err_ns\":%" PRId64 "}\n",
	       fw.active, fw.standby, fw.owner, fo_fowatch_state_name(fw.state), fw.state,
	       fo_fowatch_reason_name(fw.reason), fw.reason,
	       fw.shutdown_code == FO_FOWATCH_NO_SHUTDOWN_CODE ? (int64_t)-1 : (int64_t)fw.shutdown_code,
	       (fw.flags & FO_FOWATCH_OUT_FENCED) ? "true" : "false",
	       (fw.flags & FO_FOWATCH_OUT_PAUSING) ? "true" : "false", fw.flags, fw.gref, fw.port, fw.offset,
	       fw.period_us, fw.timeout_us, fw.quiesce_us, fw.shutdown_mask, fw.cpu, (uint64_t)fw.seq,
	       (uint64_t)fw.t_armed, (uint64_t)fw.t_progress, (uint64_t)fw.t_detect, (uint64_t)fw.t_fence,
	       (uint64_t)fw.t_quiesced, (uint64_t)fw.t_switched, (uint64_t)fw.t_now, offset, (m1 - m0 + 1) / 2);
	return 0;
}

static int cmd_wait_virq(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout-ms", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t timeout_ms = 0; /* 0: wait forever */
	xenevtchn_handle *xce;
	xenevtchn_port_or_error_t port, got;
	struct pollfd pfd;
	int64_t t0, left;
	int c, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 't' || !parse_u32("--timeout-ms", optarg, INT_MAX, &timeout_ms)) {
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	xce = xenevtchn_open(NULL, 0);
	if (!xce) {
		fprintf(stderr, "%s: xenevtchn_open: %s\n", prog, strerror(errno));
		return 1;
	}
	port = xenevtchn_bind_virq(xce, FO_XEN_VIRQ_FAILOVER);
	if (port < 0) {
		fprintf(stderr, "%s: bind VIRQ %u: %s%s\n", prog, FO_XEN_VIRQ_FAILOVER, strerror(errno),
			errno == EEXIST ? " (another process of this domain has it bound)" : "");
		goto out;
	}
	printf("{\"bound\":true,\"virq\":%u,\"port\":%d}\n", FO_XEN_VIRQ_FAILOVER, port);
	fflush(stdout);

	pfd.fd = xenevtchn_fd(xce);
	pfd.events = POLLIN;
	t0 = mono_ns();
	for (;;) {
		int n;

		left = timeout_ms ? (int64_t)timeout_ms - (mono_ns() - t0) / 1000000 : -1;
		if (timeout_ms && left <= 0) {
			fprintf(stderr, "%s: no VIRQ %u within %" PRIu32 " ms\n", prog, FO_XEN_VIRQ_FAILOVER,
				timeout_ms);
			rc = 3;
			break;
		}
		n = poll(&pfd, 1, (int)left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "%s: poll: %s\n", prog, strerror(errno));
			break;
		}
		if (n == 0)
			continue; /* the deadline is checked above */
		got = xenevtchn_pending(xce);
		if (got < 0) {
			fprintf(stderr, "%s: xenevtchn_pending: %s\n", prog, strerror(errno));
			break;
		}
		xenevtchn_unmask(xce, got);
		if (got != port)
			continue;
		printf("{\"virq\":%u,\"port\":%d,\"waited_ms\":%" PRId64 "}\n", FO_XEN_VIRQ_FAILOVER, port,
		       (mono_ns() - t0) / 1000000);
		fflush(stdout);
		rc = 0;
		break;
	}
	xenevtchn_unbind(xce, port);
out:
	xenevtchn_close(xce);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage(stdout);
		return 0;
	}
	/* Sub-command options start at argv[1] for getopt (argv[0] = the sub-command). */
	if (!strcmp(cmd, "wait-virq"))
		return cmd_wait_virq(argc - 1, argv + 1);
	/* The process exits right after: the xc handle is left to exit(). */
	if (!strcmp(cmd, "arm"))
		return cmd_arm(argc - 1, argv + 1);
	if (!strcmp(cmd, "disarm"))
		return cmd_simple(FO_FOWATCH_OP_DISARM, "disarm", argc - 1, argv + 1);
	if (!strcmp(cmd, "release"))
		return cmd_simple(FO_FOWATCH_OP_RELEASE, "release", argc - 1, argv + 1);
	if (!strcmp(cmd, "query"))
		return cmd_query(argc - 1, argv + 1);
	usage(stderr);
	return 2;
}
