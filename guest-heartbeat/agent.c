/* SPDX-License-Identifier: MIT */
/*
 * fo-heartbeat - failoverd's in-guest agent.
 *
 * It shares one page with dom0 (libxengntshr, read-only for dom0), offers
 * one event channel to dom0, publishes both in xenstore under its own
 * /local/domain/<self>/data/failover/, and then bumps the page's sequence
 * and notifies dom0 every period. See README.md and abi/fo_heartbeat.h.
 *
 * Threads, and why there are several:
 *   main       the heartbeat: absolute-time sleeps, SCHED_FIFO, nothing else
 *   xenstore   role / control watches (own /dev/xen/xenbus fd, see xb_*)
 *   health     runs --health-cmd on its own schedule; a slow command must
 *              never delay a heartbeat
 *   hostile    test-only misbehaviour that runs beside the heartbeat
 * Only the main thread writes the page (garbage-page mode included); the
 * others talk to it through atomics.
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

#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>

#include "abi/fo_heartbeat.h"

extern char **environ;

#define DOM0_ID            0u
#define THREAD_STACK       (256u * 1024u) /* mlockall(MCL_FUTURE) locks every stack fully */
#define NS_PER_MS          1000000ull
#define NS_PER_S           1000000000ull

enum control {
	CTL_NONE = 0,
	CTL_STOP,       /* stop-heartbeat */
	CTL_FREEZE,
	CTL_UNHEALTHY,
	CTL_STUCK,      /* stuck-sequence: notify, never bump */
};

enum hostile {
	HOSTILE_NONE = 0,
	HOSTILE_GARBAGE_PAGE,
	HOSTILE_KEY_STORM,
	HOSTILE_BAD_GREF,
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
	uint64_t count;               /* 0: run forever */
	bool verbose;
};

static struct options opt = {
	.period_ms = 10,
	.rt_priority = 50,
	.health_interval_ms = 1000,
	.role_file = "/run/failover/role",
};

/* Shared between threads. */
static atomic_int control = CTL_NONE;
static atomic_uint health_status = FO_HB_APP_UNKNOWN;
static atomic_uint health_seq;
static atomic_bool stop_requested;
static atomic_bool hostile_active;

/* Set once before the threads start, read-only afterwards. */
static struct xs_handle *xs;
static volatile struct fo_hb_page *page;
static uint32_t gref;
static evtchn_port_t port;
static uint64_t boot_id;
static char base_path[64];    /* /local/domain/<self>/ */

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

/* xorshift64*: cheap garbage for the hostile modes, not for boot_id. */
static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*ret = v;
	return true;
}

static void sleep_forever(void)
{
	for (;;)
		pause();
}

/* ---------------------------------------------------------------- xenstore */

static int xs_path(char *buf, size_t len, const char *key)
{
	return snprintf(buf, len, "%s%s", base_path, key);
}

static bool xs_write_in(struct xs_handle *h, xs_transaction_t t, const char *key, const char *value)
{
	char path[128];

	xs_path(path, sizeof(path), key);
	return xs_write(h, t, path, value, (unsigned)strlen(value));
}

/*
 * gref, port, abi, then ready, in one transaction: dom0 only looks when
 * ready changes, and then sees all four from the same moment.
 */
static int publish(struct xs_handle *h, const char *gref_s, const char *port_s, const char *ready_s)
{
	char abi_s[16];
	int attempt;

	snprintf(abi_s, sizeof(abi_s), "%u", FO_HB_ABI_VERSION);
	for (attempt = 0; attempt < 16; attempt++) {
		xs_transaction_t t = xs_transaction_start(h);

		if (t == XBT_NULL)
			return -errno;
		if (!xs_write_in(h, t, FO_HB_XS_GREF, gref_s) || !xs_write_in(h, t, FO_HB_XS_PORT, port_s) ||
		    !xs_write_in(h, t, FO_HB_XS_ABI, abi_s) || !xs_write_in(h, t, FO_HB_XS_READY, ready_s)) {
			int err = -errno;

			xs_transaction_end(h, t, true);
			return err;
		}
		if (xs_transaction_end(h, t, false))
			return 0;
		if (errno != EAGAIN)
			return -errno;
	}
	return -EAGAIN;
}

static int publish_real(struct xs_handle *h, uint64_t id)
{
	char g[16], p[16], r[20];

	snprintf(g, sizeof(g), "%" PRIu32, gref);
	snprintf(p, sizeof(p), "%" PRIu32, (uint32_t)port);
	snprintf(r, sizeof(r), "%016" PRIx64, id);
	return publish(h, g, p, r);
}

static void withdraw(struct xs_handle *h)
{
	char path[128];

	/* ready first: it is what dom0 follows */
	xs_path(path, sizeof(path), FO_HB_XS_READY);
	xs_rm(h, XBT_NULL, path);
	xs_path(path, sizeof(path), FO_HB_XS_GREF);
	xs_rm(h, XBT_NULL, path);
	xs_path(path, sizeof(path), FO_HB_XS_PORT);
	xs_rm(h, XBT_NULL, path);
	xs_path(path, sizeof(path), FO_HB_XS_ABI);
	xs_rm(h, XBT_NULL, path);
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

static void handle_role(char *role, char *last_role, size_t last_len)
{
	int r;

	if (!role)
		return; /* not written yet */
	if (strcmp(role, "active") && strcmp(role, "standby")) {
		agent_log("ignoring unknown role \"%.32s\"", role);
		return;
	}
	if (!strcmp(role, last_role))
		return;
	r = write_role_file(role);
	if (r < 0)
		agent_log("cannot write %s: %s", opt.role_file, strerror(-r));
	agent_log("role: %s", role);
	if (!strcmp(role, "active") && opt.on_active)
		start_thread(on_active_thread, (void *)opt.on_active, true);
	snprintf(last_role, last_len, "%s", role);
}

static void handle_control(const char *cmd)
{
	int fd;

	if (!cmd || !strcmp(cmd, FO_HB_CMD_NONE)) {
		if (atomic_exchange(&control, CTL_NONE) != CTL_NONE)
			agent_log("control: back to normal");
	} else if (!strcmp(cmd, FO_HB_CMD_STOP)) {
		agent_log("control: stop-heartbeat (drill)");
		atomic_store(&control, CTL_STOP);
	} else if (!strcmp(cmd, FO_HB_CMD_STUCK)) {
		/* An application loop stuck behind a live notifier: only the
		 * page shows it, the event channel keeps ticking (what a
		 * kernel module counting notifications cannot see). */
		agent_log("control: stuck-sequence (drill): notifying, sequence frozen");
		atomic_store(&control, CTL_STUCK);
	} else if (!strcmp(cmd, FO_HB_CMD_UNHEALTHY)) {
		agent_log("control: unhealthy (drill)");
		atomic_store(&control, CTL_UNHEALTHY);
	} else if (!strcmp(cmd, FO_HB_CMD_FREEZE)) {
		agent_log("control: freeze (drill): no more heartbeats, no more xenstore");
		atomic_store(&control, CTL_FREEZE);
		sleep_forever();
	} else if (!strcmp(cmd, FO_HB_CMD_CRASH)) {
		agent_log("control: crash (drill): sysrq-c");
		fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "c", 1) != 1)
			agent_log("crash: cannot write /proc/sysrq-trigger: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
	} else {
		agent_log("ignoring unknown control command \"%.32s\"", cmd);
	}
}

/*
 * The role/control watches speak the xenstore wire protocol on their own
 * /dev/xen/xenbus handle instead of going through libxenstore. Why: the
 * static libxenstore.a is built without USE_PTHREAD, and in that mode a
 * request whose reply is preceded by a watch event (xenstored fires every new
 * watch once, often before the XS_WATCH reply) fails with EINVAL and closes
 * the connection. Here one thread owns the fd and sorts events from replies.
 */
#define XB_DEV "/dev/xen/xenbus"

struct xb_conn {
	int fd;
	uint32_t next_req;
	bool pending_role, pending_control; /* watch fired, value not yet read */
};

static bool xb_read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t r = read(fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		len -= (size_t)r;
	}
	return true;
}

/* Next message; watch events are noted and reported as type XS_WATCH_EVENT. */
static bool xb_recv(struct xb_conn *c, struct xsd_sockmsg *hdr, char *body, size_t bodymax)
{
	if (!xb_read_exact(c->fd, hdr, sizeof(*hdr)) || hdr->len >= bodymax ||
	    !xb_read_exact(c->fd, body, hdr->len))
		return false;
	body[hdr->len] = '\0';
	if (hdr->type == XS_WATCH_EVENT) {
		/* body: path \0 token \0 */
		const char *token = body + strnlen(body, hdr->len) + 1;

		if (token < body + hdr->len) {
			if (!strcmp(token, "role"))
				c->pending_role = true;
			else if (!strcmp(token, "control"))
				c->pending_control = true;
		}
	}
	return true;
}

/* One request, its reply into body; false on I/O failure. */
static bool xb_request(struct xb_conn *c, uint32_t type, const char *a, const char *b,
		       struct xsd_sockmsg *reply, char *body, size_t bodymax)
{
	char msg[sizeof(struct xsd_sockmsg) + XENSTORE_PAYLOAD_MAX];
	struct xsd_sockmsg hdr = { .type = type, .req_id = ++c->next_req };
	size_t la = strlen(a) + 1, lb = b ? strlen(b) + 1 : 0;

	if (la + lb > XENSTORE_PAYLOAD_MAX)
		return false;
	hdr.len = (uint32_t)(la + lb);
	memcpy(msg, &hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), a, la);
	if (b)
		memcpy(msg + sizeof(hdr) + la, b, lb);
	/* one write: the device takes a whole message atomically */
	if (write(c->fd, msg, sizeof(hdr) + hdr.len) != (ssize_t)(sizeof(hdr) + hdr.len))
		return false;
	do {
		if (!xb_recv(c, reply, body, bodymax))
			return false;
	} while (reply->type == XS_WATCH_EVENT || reply->req_id != hdr.req_id);
	return true;
}

/* The key's value, or NULL when it does not exist (or on error). */
static char *xb_read_value(struct xb_conn *c, const char *key)
{
	char path[128], body[XENSTORE_PAYLOAD_MAX + 1];
	struct xsd_sockmsg reply;

	xs_path(path, sizeof(path), key);
	if (!xb_request(c, XS_READ, path, NULL, &reply, body, sizeof(body)) ||
	    reply.type != XS_READ)
		return NULL;
	return strdup(body);
}

static bool xb_watch(struct xb_conn *c, const char *key, const char *token)
{
	char path[128], body[XENSTORE_PAYLOAD_MAX + 1];
	struct xsd_sockmsg reply;

	xs_path(path, sizeof(path), key);
	if (!xb_request(c, XS_WATCH, path, token, &reply, body, sizeof(body)))
		return false;
	if (reply.type == XS_ERROR) {
		errno = EINVAL;
		agent_log("watch %s refused: %s", path, body);
		return false;
	}
	return true;
}

static void *xenstore_thread(void *arg)
{
	struct xb_conn c = { .fd = open(XB_DEV, O_RDWR | O_CLOEXEC) };
	char last_role[16] = "", body[XENSTORE_PAYLOAD_MAX + 1];
	struct xsd_sockmsg hdr;
	(void)arg;

	if (c.fd < 0 || !xb_watch(&c, FO_HB_XS_ROLE, "role") ||
	    !xb_watch(&c, FO_HB_XS_CONTROL, "control")) {
		agent_log("cannot watch %s via %s: %s (roles and drills disabled)", FO_HB_XS_DIR,
			  XB_DEV, strerror(errno));
		return NULL;
	}
	for (;;) {
		char *value;

		while (!c.pending_role && !c.pending_control) {
			if (!xb_recv(&c, &hdr, body, sizeof(body))) {
				agent_log("xenstore connection lost: %s (roles and drills disabled)",
					  strerror(errno));
				return NULL;
			}
		}
		if (c.pending_role) {
			c.pending_role = false;
			value = xb_read_value(&c, FO_HB_XS_ROLE);
			handle_role(value, last_role, sizeof(last_role));
			free(value);
		}
		if (c.pending_control) {
			c.pending_control = false;
			value = xb_read_value(&c, FO_HB_XS_CONTROL);
			handle_control(value);
			free(value);
		}
	}
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

		if (atomic_load(&control) == CTL_FREEZE)
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

static void beat(xenevtchn_handle *xce, uint64_t *seq, uint32_t extra_flags)
{
	int ctl = atomic_load(&control);
	uint32_t status = ctl == CTL_UNHEALTHY ? FO_HB_APP_UNHEALTHY : atomic_load(&health_status);
	uint32_t flags = extra_flags | (ctl != CTL_NONE ? FO_HB_FLAG_DRILL : 0);
	static unsigned notify_errors;

	page->app_status = status;
	page->health_seq = atomic_load(&health_seq);
	page->flags = flags;
	/* Everything above is visible before the new sequence (ABI rule). */
	atomic_thread_fence(memory_order_release);
	page->sequence = ++*seq;
	if (xenevtchn_notify(xce, port) < 0 && notify_errors++ < 10)
		agent_log("notify: %s", strerror(errno));
}

static void page_init(uint64_t id)
{
	memset((void *)page, 0, FO_HB_PAGE_SIZE);
	page->magic = FO_HB_MAGIC;
	page->abi_version = FO_HB_ABI_VERSION;
	page->period_ms = opt.period_ms;
	page->app_status = FO_HB_APP_UNKNOWN;
	page->boot_id = id;
	atomic_thread_fence(memory_order_release);
}

/* garbage-page: random bytes into the page, notify as fast as possible. */
static void garbage_page_loop(xenevtchn_handle *xce, uint64_t until_ns)
{
	uint64_t s = random_u64(), n = 0, next_report = mono_ns() + NS_PER_S;
	volatile uint64_t *w = (volatile uint64_t *)page;
	size_t i;

	agent_log("hostile: garbage-page");
	while (!atomic_load(&stop_requested) && (!until_ns || mono_ns() < until_ns)) {
		for (i = 0; i < FO_HB_PAGE_SIZE / sizeof(uint64_t); i++)
			w[i] = xorshift(&s);
		xenevtchn_notify(xce, port);
		n++;
		if (mono_ns() >= next_report) {
			agent_log("hostile: %" PRIu64 " garbage notifications", n);
			next_report += NS_PER_S;
		}
	}
}

/* ---------------------------------------------------------------- hostile */

static void *key_storm_thread(void *arg)
{
	static const char *const bad_gref[] = { "", "-1", "+9", "0x20", "4294967296", "3", "abc",
						"12 ", "007", "99999999999999999999", "1e3" };
	static const char *const bad_port[] = { "", "0", "-5", "131072", "0x1", "x", " 7", "01" };
	static const char *const bad_ready[] = { "", "zz", "0123456789abcdef0", "-1", "\x01\x02" };
	struct xs_handle *h = xs_open(0);
	uint64_t s = random_u64(), n = 0, until = (uint64_t)(uintptr_t)arg;
	uint64_t next_report = mono_ns() + NS_PER_S;
	char g[16], p[16], r[20];

	if (!h) {
		agent_log("hostile: xs_open: %s", strerror(errno));
		return NULL;
	}
	agent_log("hostile: key-storm");
	while (atomic_load(&hostile_active) && (!until || mono_ns() < until)) {
		uint64_t x = xorshift(&s);

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
			snprintf(r, sizeof(r), "%" PRIx64, xorshift(&s));
		/* Plain writes, no transaction: a storm is not polite. */
		xs_write_in(h, XBT_NULL, FO_HB_XS_GREF, g);
		xs_write_in(h, XBT_NULL, FO_HB_XS_PORT, p);
		xs_write_in(h, XBT_NULL, FO_HB_XS_READY, r);
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
		snprintf(r, sizeof(r), "%016" PRIx64, xorshift(&s));
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
		"  --hostile MODE          TEST ONLY: garbage-page | key-storm | bad-gref\n"
		"  --hostile-seconds N     misbehave for N s, then behave (default: forever)\n"
		"  --verbose               log progress every 1000 heartbeats\n");
}

static void parse_args(int argc, char **argv)
{
	enum { O_PERIOD = 256, O_RT, O_HCMD, O_HINT, O_HTMO, O_ROLE, O_ACTIVE, O_ONCE, O_COUNT,
	       O_HOSTILE, O_HSEC, O_VERBOSE, O_HELP };
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
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_PERIOD:
			if (!parse_uint(optarg, 1, 60000, &v))
				goto bad;
			opt.period_ms = (unsigned)v;
			break;
		case O_RT:
			if (!parse_uint(optarg, 0, 99, &v))
				goto bad;
			opt.rt_priority = (int)v;
			break;
		case O_HCMD:
			opt.health_cmd = optarg;
			break;
		case O_HINT:
			if (!parse_uint(optarg, 10, 3600000, &v))
				goto bad;
			opt.health_interval_ms = (unsigned)v;
			break;
		case O_HTMO:
			if (!parse_uint(optarg, 10, 3600000, &v))
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
			if (!parse_uint(optarg, 1, ULONG_MAX, &v))
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
			else
				goto bad;
			break;
		case O_HSEC:
			if (!parse_uint(optarg, 1, 86400, &v))
				goto bad;
			opt.hostile_seconds = (unsigned)v;
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

int main(int argc, char **argv)
{
	xengntshr_handle *xgs = NULL;
	xenevtchn_handle *xce = NULL;
	xenevtchn_port_or_error_t p;
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;
	uint64_t seq = 0, period_ns, t, hostile_until = 0;
	pthread_t hostile_thread = 0;
	bool hostile_thread_started = false;
	char *domid_s;
	unsigned long self;
	int r, rc = 1;

	parse_args(argc, argv);
	period_ns = (uint64_t)opt.period_ms * NS_PER_MS;

	xs = xs_open(0);
	if (!xs) {
		agent_log("cannot open xenstore: %s (is /dev/xen/xenbus there?)", strerror(errno));
		goto out;
	}
	domid_s = xs_read(xs, XBT_NULL, "domid", NULL);
	if (!domid_s || !parse_uint(domid_s, 1, DOMID_FIRST_RESERVED - 1, &self)) {
		agent_log("cannot learn our domid from xenstore \"domid\": %s",
			  domid_s ? "not a number" : strerror(errno));
		free(domid_s);
		goto out;
	}
	free(domid_s);
	snprintf(base_path, sizeof(base_path), "/local/domain/%lu/", self);

	xgs = xengntshr_open(NULL, 0);
	if (!xgs) {
		agent_log("cannot open gntshr: %s (xen-gntalloc loaded?)", strerror(errno));
		goto out;
	}
	/* writable = 0: dom0 can only map the page read-only */
	page = xengntshr_share_pages(xgs, DOM0_ID, 1, &gref, 0);
	if (!page) {
		agent_log("cannot share a page with dom0: %s", strerror(errno));
		goto out;
	}
	xce = xenevtchn_open(NULL, 0);
	if (!xce) {
		agent_log("cannot open event channels: %s (xen-evtchn loaded?)", strerror(errno));
		goto out;
	}
	p = xenevtchn_bind_unbound_port(xce, DOM0_ID);
	if (p < 0) {
		agent_log("cannot allocate an event channel for dom0: %s", strerror(errno));
		goto out;
	}
	port = (evtchn_port_t)p;

	boot_id = random_u64();
	page_init(boot_id);
	r = opt.hostile == HOSTILE_BAD_GREF ? 0 : publish_real(xs, boot_id);
	if (r < 0) {
		agent_log("cannot publish under %s%s: %s", base_path, FO_HB_XS_DIR, strerror(-r));
		goto out;
	}
	agent_log("domain %lu: gref %" PRIu32 " port %" PRIu32 " boot_id %016" PRIx64
		  " period %u ms", self, gref, (uint32_t)port, boot_id, opt.period_ms);

	/* Only the main thread takes termination signals. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	start_thread(xenstore_thread, NULL, true);
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
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	realtime_setup();

	if (opt.hostile == HOSTILE_GARBAGE_PAGE) {
		garbage_page_loop(xce, hostile_until);
		if (atomic_load(&stop_requested))
			goto withdraw;
		/* behave from here on: a fresh page, the sequence carries on */
		page_init(boot_id);
		agent_log("hostile: garbage-page over, heartbeating normally");
	}

	for (t = mono_ns();;) {
		int ctl = atomic_load(&control);

		if (ctl == CTL_FREEZE) {
			/* a hung guest: burn the vCPU, answer nothing */
			for (;;)
				__asm__ __volatile__("" ::: "memory");
		}
		if (ctl == CTL_STUCK) {
			if (xenevtchn_notify(xce, port) < 0 && opt.verbose)
				agent_log("notify: %s", strerror(errno));
		} else if (ctl != CTL_STOP) {
			beat(xce, &seq, 0);
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
	/* Tell dom0 this is an orderly exit, then withdraw the keys. */
	if (opt.hostile == HOSTILE_GARBAGE_PAGE)
		page_init(boot_id);
	beat(xce, &seq, FO_HB_FLAG_STOPPING);
	withdraw(xs);
	agent_log("exiting after %" PRIu64 " heartbeats", seq);
	rc = 0;
out:
	if (xce)
		xenevtchn_close(xce); /* closes the port */
	if (page)
		xengntshr_unshare(xgs, (void *)page, 1);
	if (xgs)
		xengntshr_close(xgs);
	if (xs)
		xs_close(xs);
	return rc;
}
