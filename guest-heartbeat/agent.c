/* SPDX-License-Identifier: MIT */
/*
 * fo-heartbeat - failoverd's in-guest agent.
 *
 * Built on libfoguest (foguest.h): the library shares the page with dom0
 * (read-only for dom0), offers the event channel, publishes both in xenstore
 * under /local/domain/<self>/data/failover/ and follows the role and drill
 * keys; the agent bumps the sequence every period on behalf of an
 * application that does not call the library itself. See README.md and
 * abi/fo_heartbeat.h.
 *
 * Threads, and why there are several:
 *   main       the heartbeat: absolute-time sleeps, SCHED_FIFO, nothing else
 *   xenstore   role / control watches (libfoguest's thread)
 *   health     runs --health-cmd on its own schedule; a slow command must
 *              never delay a heartbeat
 *   hostile    test-only misbehaviour that runs beside the heartbeat
 * Only the main thread writes the page (garbage-page mode included); the
 * others talk to it through atomics. With --test-commands the page may move
 * (the library's regrant), so the heartbeat asks the library for it each
 * time; `page` and `gref` below are the first ones, for the hostile modes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xenstore.h>

#include "abi/fo_heartbeat.h"
#include "foguest_internal.h"

extern char **environ;

#define THREAD_STACK       (256u * 1024u) /* mlockall(MCL_FUTURE) locks every stack fully */
#define NS_PER_MS          1000000ull
#define NS_PER_S           1000000000ull

enum hostile {
	HOSTILE_NONE = 0,
	HOSTILE_GARBAGE_PAGE,
	HOSTILE_KEY_STORM,
	HOSTILE_BAD_GREF,
	HOSTILE_NOTIFY_FLOOD,
};

struct options {
	unsigned period_ms;
	int rt_priority;              /* 0: stay SCHED_OTHER */
	const char *health_cmd;
	unsigned health_interval_ms;
	unsigned health_timeout_ms;
	const char *role_file;
	const char *on_active;
	enum hostile hostile;
	unsigned hostile_seconds;     /* 0: misbehave forever */
	unsigned hostile_delay;       /* notify-flood: behave this long first (s) */
	uint64_t count;               /* 0: run forever */
	bool test_commands;           /* obey libfoguest's TEST ONLY control commands */
	bool verbose;
};

static struct options opt = {
	.period_ms = 10,
	.rt_priority = 50,
	.health_interval_ms = 1000,
	.role_file = "/run/failover/role",
};

/* Shared between threads. */
static atomic_uint health_status = FO_HB_APP_UNKNOWN;
static atomic_uint health_seq;
static atomic_bool stop_requested;
static atomic_bool hostile_active;

/* Set once before the threads start, read-only afterwards. */
static struct foguest *fg;
static volatile struct fo_hb_page *page;
static uint32_t gref;
static uint32_t port;
static uint64_t boot_id;
static const char *base_path; /* /local/domain/<self>/ */

/* ------------------------------------------------------------------ utils */

__attribute__((format(printf, 1, 2)))
static void agent_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fo-heartbeat: %s\n", line);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_ts(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };

	return ts;
}

/* Sleep until an absolute CLOCK_MONOTONIC time; false if asked to stop. */
static bool sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = ns_to_ts(deadline_ns);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		if (atomic_load(&stop_requested))
			return false;
	return !atomic_load(&stop_requested);
}

/* The next tick after `now` on a fixed grid: a late wake-up (we were paused,
 * or starved) skips the missed ticks instead of bursting to catch up. */
static uint64_t next_tick(uint64_t prev, uint64_t period_ns)
{
	uint64_t next = prev + period_ns, now = mono_ns();

	if (next <= now)
		next += ((now - next) / period_ns + 1) * period_ns;
	return next;
}

static uint64_t random_u64(void)
{
	uint64_t v = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
		agent_log("warning: /dev/urandom unusable (%s), boot_id from the clock",
			  strerror(errno));
		v = mono_ns() ^ ((uint64_t)getpid() << 32);
	}
	if (fd >= 0)
		close(fd);
	return v ? v : 1;
}

static void sleep_forever(void)
{
	for (;;)
		pause();
}

/* ---------------------------------------------------------------- xenstore */

/* gref, port, abi (and the state keys), then ready, in one transaction:
 * libfoguest's publish, with the given values. */
static int publish(struct xs_handle *h, const char *gref_s, const char *port_s, const char *ready_s)
{
	return foguest__publish(fg, h, gref_s, port_s, ready_s);
}

static int publish_real(struct xs_handle *h, uint64_t id)
{
	char r[20];

	snprintf(r, sizeof(r), "%016" PRIx64, id);
	return publish(h, NULL, NULL, r);
}

/* --------------------------------------------------------------- commands */

static pthread_t start_thread(void *(*fn)(void *), void *arg, bool detached)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	if (detached)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (r) {
		agent_log("cannot start a thread: %s", strerror(r));
		exit(1);
	}
	return t;
}

/* /bin/sh -c CMD in its own process group, default signal mask. */
static int spawn_shell(const char *cmd, pid_t *ret_pid)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	posix_spawnattr_t attr;
	sigset_t none;
	int r;

	sigemptyset(&none);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					       POSIX_SPAWN_SETSCHEDULER);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	/* never hand our real-time priority to a shell command */
	posix_spawnattr_setschedpolicy(&attr, SCHED_OTHER);
	posix_spawnattr_setschedparam(&attr, &(struct sched_param){ .sched_priority = 0 });
	r = posix_spawn(ret_pid, "/bin/sh", NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	return -r;
}

static void *on_active_thread(void *arg)
{
	const char *cmd = arg;
	pid_t pid;
	int status, r;

	r = spawn_shell(cmd, &pid);
	if (r < 0) {
		agent_log("on-active: cannot run \"%s\": %s", cmd, strerror(-r));
		return NULL;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		agent_log("on-active: \"%s\" done", cmd);
	else
		agent_log("on-active: \"%s\" failed (status 0x%x)", cmd, status);
	return NULL;
}

/* Atomic for readers: they see the old file or the new one, never half. */
static int write_role_file(const char *role)
{
	char tmp[PATH_MAX], dir[PATH_MAX], *slash;
	int fd, rc = 0;
	size_t len = strlen(role);

	snprintf(dir, sizeof(dir), "%s", opt.role_file);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755); /* /run/failover: EEXIST is the usual case */
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", opt.role_file, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, role, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd) < 0)
		rc = -errno ? -errno : -EIO;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, opt.role_file) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* libfoguest's thread: the role dom0 assigned changed. */
static void on_role(void *ctx, enum foguest_role r)
{
	const char *role = foguest_role_name(r);
	int rc;
	(void)ctx;

	rc = write_role_file(role);
	if (rc < 0)
		agent_log("cannot write %s: %s", opt.role_file, strerror(-rc));
	agent_log("role: %s", role);
	if (r == FOGUEST_ROLE_ACTIVE && opt.on_active)
		start_thread(on_active_thread, (void *)opt.on_active, true);
}

/* ----------------------------------------------------------------- health */

static bool run_health_check(void)
{
	struct pollfd pfd;
	pid_t pid;
	int status = -1, r, pidfd;

	r = spawn_shell(opt.health_cmd, &pid);
	if (r < 0) {
		agent_log("health: cannot run \"%s\": %s", opt.health_cmd, strerror(-r));
		return false;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		pfd.fd = pidfd;
		pfd.events = POLLIN;
		do
			r = poll(&pfd, 1, (int)opt.health_timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r == 0) {
			agent_log("health: \"%s\" timed out after %u ms", opt.health_cmd,
				  opt.health_timeout_ms);
			kill(-pid, SIGKILL);
		}
		close(pidfd);
	}
	/* without pidfd (old kernel) a hung command only delays health reports */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void *health_thread(void *arg)
{
	uint64_t interval = (uint64_t)opt.health_interval_ms * NS_PER_MS, t = mono_ns();
	unsigned prev = FO_HB_APP_UNKNOWN;
	(void)arg;

	for (;;) {
		bool ok;
		unsigned st;

		if (foguest__control(fg) == FOGUEST_CTL_FREEZE)
			sleep_forever();
		ok = run_health_check();
		st = ok ? FO_HB_APP_HEALTHY : FO_HB_APP_UNHEALTHY;
		atomic_store(&health_status, st);
		atomic_fetch_add(&health_seq, 1);
		if (st != prev)
			agent_log("health: %s", ok ? "healthy" : "unhealthy");
		prev = st;
		t = next_tick(t, interval);
		if (!sleep_until(t))
			return NULL;
	}
}

/* -------------------------------------------------------------- heartbeat */

/* One heartbeat through the library (which obeys the drill commands):
 * 1 when the sequence moved. */
static int beat(uint64_t *seq)
{
	unsigned st = atomic_load(&health_status);
	unsigned flags = st == FO_HB_APP_HEALTHY ? FOGUEST_BEAT_HEALTHY
			 : st == FO_HB_APP_UNHEALTHY ? FOGUEST_BEAT_UNHEALTHY : 0;
	int r;

	foguest__page(fg)->health_seq = atomic_load(&health_seq); /* regrant may have moved it */
	r = foguest_beat(fg, *seq + 1, flags);
	if (r > 0)
		++*seq;
	return r;
}

/* garbage-page: random bytes into the page, notify as fast as possible. */
static void garbage_page_loop(uint64_t until_ns)
{
	uint64_t s = random_u64(), n = 0, next_report = mono_ns() + NS_PER_S;

	agent_log("hostile: garbage-page");
	while (!atomic_load(&stop_requested) && (!until_ns || mono_ns() < until_ns)) {
		foguest__garble_page(page, &s);
		foguest__notify(fg);
		n++;
		if (mono_ns() >= next_report) {
			agent_log("hostile: %" PRIu64 " garbage notifications", n);
			next_report += NS_PER_S;
		}
	}
}

/* ---------------------------------------------------------------- hostile */

/* notify-flood: EVTCHNOP_send on the heartbeat port in a tight loop, beside
 * a heartbeat that stays real (the page, its sequence once a period). */
static void *notify_flood_thread(void *arg)
{
	uint64_t until = (uint64_t)(uintptr_t)arg, n = 0, next_report, start;

	start = mono_ns() + (uint64_t)opt.hostile_delay * NS_PER_S;
	while (atomic_load(&hostile_active) && mono_ns() < start)
		if (!sleep_until(mono_ns() + 100 * NS_PER_MS))
			return NULL;
	if (until)
		until += (uint64_t)opt.hostile_delay * NS_PER_S;
	next_report = mono_ns() + NS_PER_S;
	agent_log("hostile: notify-flood");
	while (atomic_load(&hostile_active) && (!until || mono_ns() < until)) {
		foguest__notify(fg);
		n++;
		if ((n & 1023) == 0 && mono_ns() >= next_report) {
			agent_log("hostile: %" PRIu64 " notifications", n);
			next_report += NS_PER_S;
		}
	}
	agent_log("hostile: notify-flood over after %" PRIu64 " notifications", n);
	return NULL;
}

static void *key_storm_thread(void *arg)
{
	static const char *const bad_gref[] = { "", "-1", "+9", "0x20", "4294967296", "3", "abc",
						"12 ", "007", "99999999999999999999", "1e3" };
	static const char *const bad_port[] = { "", "0", "-5", "131072", "0x1", "x", " 7", "01" };
	static const char *const bad_ready[] = { "", "zz", "0123456789abcdef0", "-1", "\x01\x02" };
	struct xs_handle *h = xs_open(0);
	uint64_t s = random_u64(), n = 0, until = (uint64_t)(uintptr_t)arg;
	char path[128];
	uint64_t next_report = mono_ns() + NS_PER_S;
	char g[16], p[16], r[20];

	if (!h) {
		agent_log("hostile: xs_open: %s", strerror(errno));
		return NULL;
	}
	agent_log("hostile: key-storm");
	while (atomic_load(&hostile_active) && (!until || mono_ns() < until)) {
		uint64_t x = foguest__xorshift(&s);

		/* One write in eight is a valid set with a fresh ready, so dom0
		 * keeps re-binding (rate-limited) in the middle of the noise. */
		if (x % 8 == 0) {
			snprintf(g, sizeof(g), "%" PRIu32, gref);
			snprintf(p, sizeof(p), "%" PRIu32, (uint32_t)port);
		} else {
			snprintf(g, sizeof(g), "%s", bad_gref[(x >> 8) % (sizeof(bad_gref) / sizeof(*bad_gref))]);
			snprintf(p, sizeof(p), "%s", bad_port[(x >> 16) % (sizeof(bad_port) / sizeof(*bad_port))]);
		}
		if (x % 5 == 1)
			snprintf(r, sizeof(r), "%s", bad_ready[(x >> 24) % (sizeof(bad_ready) / sizeof(*bad_ready))]);
		else
			snprintf(r, sizeof(r), "%" PRIx64, foguest__xorshift(&s));
		/* Plain writes, no transaction: a storm is not polite. */
		snprintf(path, sizeof(path), "%s%s", base_path, FO_HB_XS_GREF);
		xs_write(h, XBT_NULL, path, g, (unsigned)strlen(g));
		snprintf(path, sizeof(path), "%s%s", base_path, FO_HB_XS_PORT);
		xs_write(h, XBT_NULL, path, p, (unsigned)strlen(p));
		snprintf(path, sizeof(path), "%s%s", base_path, FO_HB_XS_READY);
		xs_write(h, XBT_NULL, path, r, (unsigned)strlen(r));
		n++;
		if (mono_ns() >= next_report) {
			agent_log("hostile: %" PRIu64 " key rewrites", n);
			next_report += NS_PER_S;
		}
	}
	/* Time is up (not stopped): make the keys good again ourselves, so
	 * no late garbage write of ours can land after the good set. */
	if (atomic_load(&hostile_active) && publish_real(h, boot_id) == 0)
		agent_log("hostile: key-storm over, republished the real keys");
	xs_close(h);
	return NULL;
}

static void *bad_gref_thread(void *arg)
{
	struct xs_handle *h = xs_open(0);
	uint64_t until = (uint64_t)(uintptr_t)arg, s = random_u64();
	char g[16], p[16], r[20];
	unsigned stage = 0;

	if (!h) {
		agent_log("hostile: xs_open: %s", strerror(errno));
		return NULL;
	}
	while (atomic_load(&hostile_active) && (!until || mono_ns() < until)) {
		const char *what;

		switch (stage++ % 3) {
		case 0: /* a reference we never granted: dom0's map must fail */
			snprintf(g, sizeof(g), "%" PRIu32, gref + 1000);
			snprintf(p, sizeof(p), "%" PRIu32, (uint32_t)port);
			what = "ungranted gref";
			break;
		case 1: /* a toolstack-reserved entry (the console/xenstore ring) */
			snprintf(g, sizeof(g), "%u", 1u);
			snprintf(p, sizeof(p), "%" PRIu32, (uint32_t)port);
			what = "reserved gref 1";
			break;
		default: /* the real page with a port that is not ours */
			snprintf(g, sizeof(g), "%" PRIu32, gref);
			snprintf(p, sizeof(p), "%" PRIu32, (uint32_t)port + 50);
			what = "unbound port";
			break;
		}
		snprintf(r, sizeof(r), "%016" PRIx64, foguest__xorshift(&s));
		agent_log("hostile: bad-gref: publishing %s (gref %s port %s)", what, g, p);
		publish(h, g, p, r);
		if (!sleep_until(mono_ns() + NS_PER_S))
			break;
	}
	if (atomic_load(&hostile_active) && publish_real(h, boot_id) == 0)
		agent_log("hostile: bad-gref over, published the real keys");
	xs_close(h);
	return NULL;
}

/* ------------------------------------------------------------------ setup */

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, true);
}

static void realtime_setup(void)
{
	struct sched_param sp = { .sched_priority = opt.rt_priority };
	int r;

	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		agent_log("warning: mlockall: %s (heartbeat may page-fault)", strerror(errno));
	if (opt.rt_priority == 0)
		return;
	r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (r)
		agent_log("warning: SCHED_FIFO %d: %s (heartbeat runs at normal priority)",
			  opt.rt_priority, strerror(r));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fo-heartbeat [options]\n"
		"  --period-ms N           heartbeat period (1-60000, default 10)\n"
		"  --rt-priority N         SCHED_FIFO priority of the heartbeat thread (0 = none, default 50)\n"
		"  --health-cmd CMD        run '/bin/sh -c CMD' periodically; exit 0 = healthy\n"
		"  --health-interval-ms N  (default 1000)\n"
		"  --health-timeout-ms N   a check running longer is killed and unhealthy (default: interval)\n"
		"  --role-file PATH        where the role dom0 assigns is written (default /run/failover/role)\n"
		"  --on-active CMD         run '/bin/sh -c CMD' when the role becomes active\n"
		"  --once | --count N      send 1 / N heartbeats, withdraw, exit (testing)\n"
		"  --hostile MODE          TEST ONLY: garbage-page | key-storm | bad-gref | notify-flood\n"
		"  --hostile-seconds N     misbehave for N s, then behave (default: forever)\n"
		"  --hostile-delay N       notify-flood: behave for N s first (the N s of\n"
		"                          --hostile-seconds count from then)\n"
		"  --test-commands         TEST ONLY: obey garbage-page, regrant and notify-flood in the control key\n"
		"  --verbose               log progress every 1000 heartbeats\n");
}

static void parse_args(int argc, char **argv)
{
	enum { O_PERIOD = 256, O_RT, O_HCMD, O_HINT, O_HTMO, O_ROLE, O_ACTIVE, O_ONCE, O_COUNT,
	       O_HOSTILE, O_HSEC, O_HDELAY, O_TEST, O_VERBOSE, O_HELP };
	static const struct option lo[] = {
		{ "period-ms", required_argument, NULL, O_PERIOD },
		{ "rt-priority", required_argument, NULL, O_RT },
		{ "health-cmd", required_argument, NULL, O_HCMD },
		{ "health-interval-ms", required_argument, NULL, O_HINT },
		{ "health-timeout-ms", required_argument, NULL, O_HTMO },
		{ "role-file", required_argument, NULL, O_ROLE },
		{ "on-active", required_argument, NULL, O_ACTIVE },
		{ "once", no_argument, NULL, O_ONCE },
		{ "count", required_argument, NULL, O_COUNT },
		{ "hostile", required_argument, NULL, O_HOSTILE },
		{ "hostile-seconds", required_argument, NULL, O_HSEC },
		{ "hostile-delay", required_argument, NULL, O_HDELAY },
		{ "test-commands", no_argument, NULL, O_TEST },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_PERIOD:
			if (!foguest__parse_uint(optarg, 1, 60000, &v))
				goto bad;
			opt.period_ms = (unsigned)v;
			break;
		case O_RT:
			if (!foguest__parse_uint(optarg, 0, 99, &v))
				goto bad;
			opt.rt_priority = (int)v;
			break;
		case O_HCMD:
			opt.health_cmd = optarg;
			break;
		case O_HINT:
			if (!foguest__parse_uint(optarg, 10, 3600000, &v))
				goto bad;
			opt.health_interval_ms = (unsigned)v;
			break;
		case O_HTMO:
			if (!foguest__parse_uint(optarg, 10, 3600000, &v))
				goto bad;
			opt.health_timeout_ms = (unsigned)v;
			break;
		case O_ROLE:
			if (!*optarg)
				goto bad;
			opt.role_file = optarg;
			break;
		case O_ACTIVE:
			opt.on_active = optarg;
			break;
		case O_ONCE:
			opt.count = 1;
			break;
		case O_COUNT:
			if (!foguest__parse_uint(optarg, 1, ULONG_MAX, &v))
				goto bad;
			opt.count = v;
			break;
		case O_HOSTILE:
			if (!strcmp(optarg, "garbage-page"))
				opt.hostile = HOSTILE_GARBAGE_PAGE;
			else if (!strcmp(optarg, "key-storm"))
				opt.hostile = HOSTILE_KEY_STORM;
			else if (!strcmp(optarg, "bad-gref"))
				opt.hostile = HOSTILE_BAD_GREF;
			else if (!strcmp(optarg, "notify-flood"))
				opt.hostile = HOSTILE_NOTIFY_FLOOD;
			else
				goto bad;
			break;
		case O_HSEC:
			if (!foguest__parse_uint(optarg, 1, 86400, &v))
				goto bad;
			opt.hostile_seconds = (unsigned)v;
			break;
		case O_HDELAY:
			if (!foguest__parse_uint(optarg, 1, 86400, &v))
				goto bad;
			opt.hostile_delay = (unsigned)v;
			break;
		case O_TEST:
			opt.test_commands = true;
			break;
		case O_VERBOSE:
			opt.verbose = true;
			break;
		case O_HELP:
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		agent_log("unexpected argument \"%s\"", argv[optind]);
		exit(2);
	}
	if (!opt.health_timeout_ms)
		opt.health_timeout_ms = opt.health_interval_ms;
	return;
bad:
	agent_log("bad value \"%s\" for --%s", optarg, lo[c - O_PERIOD].name);
	exit(2);
}

static void lib_log(void *ctx, const char *line)
{
	(void)ctx;
	agent_log("%s", line);
}

int main(int argc, char **argv)
{
	struct foguest_options fo = { .on_role = on_role, .log = lib_log };
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;
	uint64_t seq = 0, period_ns, t, hostile_until = 0;
	pthread_t hostile_thread = 0;
	bool hostile_thread_started = false;
	int r;

	parse_args(argc, argv);
	period_ns = (uint64_t)opt.period_ms * NS_PER_MS;

	/* Only the main thread takes termination signals (the library's
	 * thread is started inside foguest_open with this mask). */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	fo.period_ms = opt.period_ms;
	if (opt.hostile == HOSTILE_BAD_GREF)
		fo.flags |= FOGUEST_F_NO_PUBLISH;
	if (opt.test_commands)
		fo.flags |= FOGUEST_F_TEST_COMMANDS;
	r = foguest_open(&fo, &fg);
	if (r < 0)
		return 1; /* the library said why */
	page = foguest__page(fg);
	gref = foguest__gref(fg);
	port = foguest__port(fg);
	boot_id = foguest__boot_id(fg);
	base_path = foguest__base_path(fg);
	agent_log("domain %u: gref %" PRIu32 " port %" PRIu32 " boot_id %016" PRIx64
		  " period %u ms", foguest_domid(fg), gref, port, boot_id, opt.period_ms);

	if (opt.health_cmd)
		start_thread(health_thread, NULL, true);
	if (opt.hostile_seconds)
		hostile_until = mono_ns() + (uint64_t)opt.hostile_seconds * NS_PER_S;
	if (opt.hostile == HOSTILE_KEY_STORM || opt.hostile == HOSTILE_BAD_GREF) {
		atomic_store(&hostile_active, true);
		hostile_thread = start_thread(opt.hostile == HOSTILE_KEY_STORM ? key_storm_thread
										: bad_gref_thread,
					      (void *)(uintptr_t)hostile_until, false);
		hostile_thread_started = true;
	}
	if (opt.hostile == HOSTILE_NOTIFY_FLOOD) {
		atomic_store(&hostile_active, true);
		hostile_thread = start_thread(notify_flood_thread, (void *)(uintptr_t)hostile_until, false);
		hostile_thread_started = true;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	realtime_setup();

	if (opt.hostile == HOSTILE_GARBAGE_PAGE) {
		garbage_page_loop(hostile_until);
		if (atomic_load(&stop_requested))
			goto withdraw;
		/* behave from here on: a fresh page, the sequence carries on */
		foguest__page_init(fg);
		agent_log("hostile: garbage-page over, heartbeating normally");
	}

	for (t = mono_ns();;) {
		/* freeze: spins inside; stop-heartbeat, stuck-sequence: 0 */
		if (beat(&seq) > 0) {
			if (opt.verbose && seq % 1000 == 0)
				agent_log("%" PRIu64 " heartbeats", seq);
			if (opt.count && seq >= opt.count)
				break;
		}
		t = next_tick(t, period_ns);
		if (!sleep_until(t))
			break;
	}
withdraw:
	atomic_store(&hostile_active, false);
	if (hostile_thread_started)
		pthread_join(hostile_thread, NULL); /* no stray write after the withdrawal */
	if (opt.hostile == HOSTILE_GARBAGE_PAGE)
		foguest__page_init(fg);
	/* Tell dom0 this is an orderly exit, then withdraw the keys. */
	foguest_close(fg);
	agent_log("exiting after %" PRIu64 " heartbeats", seq);
	return 0;
}
