/* SPDX-License-Identifier: MIT */
/*
 * test_control_socket.c - the control protocol over a real socket: a
 * misbehaving client (oversized or endless lines, idle, pipelining, too
 * many clients, no fds left) neither crashes nor blocks the daemon; a
 * drill's waiter survives a reload; who may connect and where the socket
 * may be. The requests themselves: test_control.c.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "control_fixture.h"
#include "lib/text.h"

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Run the loop until `fd` has a full reply line (or give up). */
static int read_reply(struct fx *f, int fd, char *buf, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < 50; i++) {
		ssize_t k = recv(fd, buf + n, len - 1 - n, MSG_DONTWAIT);
		if (k > 0) {
			n += (size_t)k;
			buf[n] = '\0';
			if (strchr(buf, '\n'))
				return (int)n;
			continue;
		}
		fo_loop_run_once_timeout(f->loop, 100);
	}
	buf[n] = '\0';
	return (int)n;
}

/* Run the loop until the daemon closes fd (recv returns 0). */
static bool wait_eof(struct fx *f, int fd)
{
	char buf[65536];

	for (int i = 0; i < 200; i++) {
		ssize_t k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return true;
		if (k < 0)
			fo_loop_run_once_timeout(f->loop, 10);
	}
	return false;
}

static void test_socket_abuse(void)
{
	struct fx f;
	char buf[65536];
	static char big[10000];
	int fd, idle;

	setup(&f);
	/* An idle client that never sends anything must not block others. */
	idle = connect_to(f.path);
	CHECK(idle >= 0, "connect");

	fd = connect_to(f.path);
	CHECK(fd >= 0, "connect");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\n';
	CHECK(send(fd, big, sizeof(big), 0) == (ssize_t)sizeof(big), "send big");
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "longer than 4096") != NULL, "oversized line rejected: %.200s", buf);
	/* ... and the connection ends: skipping to the newline would let an
	 * endless line hold the loop. */
	CHECK(wait_eof(&f, fd), "closed after an oversized line");
	close(fd);
	fd = connect_to(f.path);
	CHECK(fd >= 0, "connect");

	/* Binary junk with a NUL byte, then a valid request on the same connection. */
	CHECK(send(fd, "\x01\x00\xff\n", 4, 0) == 4, "send junk");
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "\"ok\":false") != NULL, "junk rejected: %s", buf);
	CHECK(send(fd, "{\"cmd\":\"status\"}\n", 17, 0) == 17, "send");
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "\"ok\":true") != NULL, "still serving: %.100s", buf);

	/* Two requests in one write get two replies, in order. */
	CHECK(send(fd, "{\"cmd\":\"metrics\"}\n{\"cmd\":\"nope\"}\n", 34, 0) == 34, "send 2");
	int n = read_reply(&f, fd, buf, sizeof(buf));
	for (int i = 0; i < 10 && !strstr(buf, "unknown cmd"); i++)
		n += read_reply(&f, fd, buf + n, sizeof(buf) - (size_t)n);
	CHECK(strstr(buf, "unknown cmd") != NULL && strstr(buf, "text") < strstr(buf, "unknown cmd"), "ordered");

	/* A client that vanishes mid-request. */
	CHECK(send(fd, "{\"cmd\":\"sta", 11, 0) == 11, "half");
	close(fd);
	for (int i = 0; i < 3; i++) {
		int t = connect_to(f.path);
		CHECK(t >= 0, "connect again");
		CHECK(send(t, "{\"cmd\":\"status\"}\n", 17, 0) == 17, "send");
		read_reply(&f, t, buf, sizeof(buf));
		CHECK(strstr(buf, "\"ok\":true") != NULL, "serving after a client vanished");
		close(t);
	}
	close(idle);
	teardown(&f);
}

/* A client waiting for a drill is found by the pair's name, not its index:
 * a reload that adds a pair before it moves it (issue #16: the waiter was
 * keyed by index and never got its reply). A pair kept with the same
 * members does not hold a reload back, even mid-drill. */
static void test_drill_waiter_survives_reload(void)
{
	const char *req = "{\"cmd\":\"drill\",\"pair\":\"brake\",\"fault\":\"heartbeat-loss\"}\n";
	struct fo_config cfg;
	struct fo_pair *p;
	struct fx f;
	char buf[65536] = "", why[256] = "";
	int fd;

	setup(&f);
	fd = connect_to(f.path);
	CHECK(fd >= 0 && send(fd, req, strlen(req), 0) == (ssize_t)strlen(req), "drill request sent");
	for (int i = 0; i < 20 && !fo_manager_pair(f.mgr, 0)->drill_active; i++)
		fo_loop_run_once_timeout(f.loop, 10);
	CHECK(fo_manager_pair(f.mgr, 0)->drill_active, "drill started: %s", fo_manager_pair(f.mgr, 0)->reason);

	cfg = f.cfg;
	cfg.n_pairs = 2;
	cfg.pairs[1] = cfg.pairs[0];
	snprintf(cfg.pairs[0].name, sizeof(cfg.pairs[0].name), "pump");
	snprintf(cfg.pairs[0].active, sizeof(cfg.pairs[0].active), "pump-a");
	snprintf(cfg.pairs[0].standby, sizeof(cfg.pairs[0].standby), "pump-b");
	CHECK(!fo_manager_reload_must_wait(f.mgr, &cfg, why, sizeof(why)), "kept pair mid-drill: no wait (%s)", why);
	fo_manager_reload(f.mgr, &cfg);
	p = fo_manager_find_pair(f.mgr, "brake");
	CHECK(p && p == fo_manager_pair(f.mgr, 1) && p->drill_active, "brake moved to index 1, still drilling");

	/* The drill stops brake-a's heartbeat; brake-b takes over and beats. */
	for (int i = 0; i < 100 && !strchr(buf, '\n'); i++) {
		fo_sim_advance(f.hv, 10000000);
		fo_manager_run_due(f.mgr); /* the daemon's deadline timer */
		if (fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING)
			fo_sim_heartbeat(f.hv, f.b);
		fo_control_complete_drills(f.ctl);
		fo_loop_run_once_timeout(f.loop, 0);
		ssize_t k = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (k > 0)
			buf[k] = '\0';
	}
	CHECK(strstr(buf, "\"ok\":true") && strstr(buf, "\"event\""), "the drill's client got its event: %s", buf);
	close(fd);
	teardown(&f);
}

static int rt_fd_ready;
static int rt_replies_seen = -1;
static int rt_client_fd;

/* A real-time handler that records how many replies the client already
 * had when it ran (peeking, so the test still reads them). */
static void on_rt(void *ctx, int fd, uint32_t events)
{
	char buf[65536];
	uint64_t v;
	ssize_t k = recv(rt_client_fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);

	(void)!read(fd, &v, sizeof(v));
	rt_replies_seen = 0;
	for (ssize_t i = 0; i < k; i++)
		rt_replies_seen += buf[i] == '\n';
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* One client pipelining requests: the real-time fds are served before its
 * work, it gets a bounded share per turn, and all its replies still come. */
static void test_fair_share(void)
{
	static char reqs[40 * 18 + 1], buf[262144];
	struct fx f;
	size_t n = 0;
	int fd, lines = 0;

	setup(&f);
	fd = connect_to(f.path);
	fo_loop_run_once_timeout(f.loop, 100); /* accept */
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(reqs + n, sizeof(reqs) - n, "{\"cmd\":\"metrics\"}\n");
	CHECK(send(fd, reqs, n, 0) == (ssize_t)n, "send 40");
	rt_fd_ready = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rt_client_fd = fd;
	CHECK(fo_loop_add_rt(f.loop, rt_fd_ready, EPOLLIN, on_rt, NULL) == 0, "rt fd");
	/* Ready after the client's requests: still served first. */
	CHECK(write(rt_fd_ready, &(uint64_t){ 1 }, 8) == 8, "signal");
	fo_loop_run_once_timeout(f.loop, 100);
	CHECK(rt_replies_seen == 0, "real-time fd served before the client: it saw %d replies", rt_replies_seen);
	n = 0;
	for (ssize_t k; (k = recv(fd, buf + n, sizeof(buf) - 1 - n, MSG_DONTWAIT)) > 0;)
		n += (size_t)k;
	buf[n] = '\0';
	lines = count_lines(buf);
	CHECK(lines >= 1 && lines <= 8, "a bounded share per turn: %d replies in one turn", lines);
	for (int i = 0; i < 100 && lines < 40; i++) {
		ssize_t k;
		fo_loop_run_once_timeout(f.loop, 100);
		while ((k = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
			buf[k] = '\0';
			lines += count_lines(buf);
		}
	}
	CHECK(lines == 40, "every request answered: %d", lines);
	fo_loop_remove(f.loop, rt_fd_ready);
	close(rt_fd_ready);
	close(fd);
	teardown(&f);
}

/* An endless line without a newline: an error and the end of the
 * connection as soon as it passes the limit, not a wait for a newline. */
static void test_endless_line(void)
{
	static char junk[6000];
	struct fx f;
	char buf[4096];
	int fd;

	setup(&f);
	fd = connect_to(f.path);
	memset(junk, 'x', sizeof(junk));
	CHECK(send(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk), "send");
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "request longer than 4096 bytes; closing the connection"), "%s", buf);
	CHECK(wait_eof(&f, fd), "closed");
	close(fd);
	teardown(&f);
}

static int connect_as(const char *path, uid_t uid, gid_t gid)
{
	int fd;

	/* SO_PEERCRED records the credentials of the connect(). */
	if (setegid(gid) < 0 || seteuid(uid) < 0)
		abort();
	fd = connect_to(path);
	if (seteuid(0) < 0 || setegid(0) < 0)
		abort();
	return fd;
}

static const char *ask(struct fx *f, int fd, const char *line, char *buf, size_t len)
{
	char l[256];

	snprintf(l, sizeof(l), "%s\n", line);
	/* A refused client's send fails (the daemon closed), but the
	 * refusal is waiting to be read: what failoverctl must print. */
	(void)!send(fd, l, strlen(l), MSG_NOSIGNAL);
	read_reply(f, fd, buf, len);
	return buf;
}

/* Idle connections are closed; the last slots are root's; with every slot
 * taken root closes the oldest idle one; only followers and drills can
 * fill the table, and then even root is told why. */
static void test_idle_and_slots(void)
{
	struct fx f;
	char buf[65536];
	int fds[40], fd, n = 0;
	bool root = geteuid() == 0;

	setup(&f);
	fo_control_set_idle_timeout(f.ctl, 200);
	fd = connect_to(f.path);
	fo_loop_run_once_timeout(f.loop, 10);
	read_reply(&f, fd, buf, sizeof(buf)); /* ~0.5 s of loop turns */
	for (int i = 0; i < 10 && !strstr(buf, "idle"); i++)
		read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "closing an idle connection: no complete request in 200 ms"), "idle: %s", buf);
	CHECK(wait_eof(&f, fd), "idle closed");
	close(fd);
	fo_control_set_idle_timeout(f.ctl, 60000);

	if (root) {
		chmod(f.path, 0666); /* for "nobody" below: the test's stand-in for control_group */
		/* Others may fill all but the root slots. */
		for (n = 0; n < 32; n++) {
			fds[n] = connect_as(f.path, 65534, 65534);
			fo_loop_run_once_timeout(f.loop, 10);
		}
		CHECK(strstr(ask(&f, fds[31], "{\"cmd\":\"status\"}", buf, sizeof(buf)), "too many control clients"),
		      "31st user refused: %.200s", buf);
		CHECK(strstr(ask(&f, fds[0], "{\"cmd\":\"status\"}", buf, sizeof(buf)), "\"ok\":true"),
		      "first user served: %.100s", buf);
		close(fds[31]);
		close(fds[30]);
		/* A user may read, not change. */
		CHECK(strstr(ask(&f, fds[0], "{\"cmd\":\"disarm\",\"pair\":\"brake\"}", buf, sizeof(buf)),
			     "disarm: permission denied: needs root or a member of daemon.control_admin_group"),
		      "user disarm: %s", buf);
		CHECK(fo_manager_pair(f.mgr, 0)->state == FO_PAIR_ARMED, "not disarmed");
		/* Root gets the reserved slots... */
		fds[30] = connect_to(f.path);
		fds[31] = connect_to(f.path);
		CHECK(strstr(ask(&f, fds[31], "{\"cmd\":\"status\"}", buf, sizeof(buf)), "\"ok\":true"),
		      "root in a reserved slot: %.100s", buf);
		/* ... and with all 32 taken, the oldest idle connection's. */
		fd = connect_to(f.path);
		CHECK(strstr(ask(&f, fd, "{\"cmd\":\"status\"}", buf, sizeof(buf)), "\"ok\":true"),
		      "root with every slot taken: %.100s", buf);
		CHECK(wait_eof(&f, fds[1]), "the oldest idle one (user #2, #1 asked since) was closed");
		close(fds[1]);
		fds[1] = fd;
		/* Followers are not idle: 32 of them and root is refused, saying why. */
		for (int i = 0; i < 32; i++)
			ask(&f, fds[i], "{\"cmd\":\"events\",\"follow\":true}", buf, sizeof(buf));
		fd = connect_to(f.path);
		CHECK(strstr(ask(&f, fd, "{\"cmd\":\"status\"}", buf, sizeof(buf)), "too many control clients"),
		      "root refused by 32 followers: %.200s", buf);
		close(fd);
		for (int i = 0; i < 32; i++)
			close(fds[i]);
	}
	teardown(&f);
}

/* control_admin_group: its members may change things. */
static void test_admin_group(void)
{
	struct fx f;
	char buf[65536];
	int fd;

	if (geteuid() != 0)
		return;
	setup(&f);
	fo_control_free(f.ctl);
	CHECK(fo_control_new(f.loop, f.mgr, f.path, "nogroup", "nogroup", &f.ctl) == 0, "with groups");
	fd = connect_as(f.path, 65534, 65534);
	CHECK(fd >= 0, "nobody in nogroup may connect (0660, group nogroup)");
	CHECK(strstr(ask(&f, fd, "{\"cmd\":\"disarm\",\"pair\":\"brake\"}", buf, sizeof(buf)), "\"ok\":true"),
	      "admin group member disarms: %s", buf);
	close(fd);
	teardown(&f);
}

/* Out of file descriptors: the pending client is told and closed, the loop
 * does not spin on the readable listener, and it is counted. */
static void test_out_of_fds(void)
{
	struct fx f;
	char buf[65536];
	int fd, fillers[4096], n = 0;
	struct timespec t0, t1;
	struct rlimit saved, lim;
	long ms;

	setup(&f);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	getrlimit(RLIMIT_NOFILE, &saved);
	lim = saved;
	lim.rlim_cur = 1024;
	setrlimit(RLIMIT_NOFILE, &lim);
	while (n < 4096 && (fillers[n] = dup(0)) >= 0)
		n++;
	CHECK(errno == EMFILE, "filled the fd table (%d): %s", n, strerror(errno));
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f.path);
		CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s", strerror(errno));
	}
	fo_loop_run_once_timeout(f.loop, 100);
	read_reply(&f, fd, buf, sizeof(buf));
	CHECK(strstr(buf, "out of file descriptors"), "told why: %s", buf);
	CHECK(wait_eof(&f, fd), "closed");
	/* Nothing pending now: a turn waits instead of spinning. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 5; i++)
		fo_loop_run_once_timeout(f.loop, 20);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK(ms >= 80, "5 turns of 20 ms took %ld ms: the loop spins", ms);
	while (n > 0)
		close(fillers[--n]);
	setrlimit(RLIMIT_NOFILE, &saved);
	close(fd);
	fd = connect_to(f.path);
	CHECK(strstr(ask(&f, fd, "{\"cmd\":\"metrics\"}", buf, sizeof(buf)), "failoverd_control_accept_errors_total 1"),
	      "counted: %.100s", strstr(buf, "accept_errors") ? strstr(buf, "accept_errors") : buf);
	close(fd);
	teardown(&f);
}

/* A second instance must not take over a live socket; a stale one is
 * removed; anything that is not a socket is never deleted. */
static void test_socket_path(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fo_control *second = NULL;
	struct fx f;
	struct stat st;
	char buf[65536], other[100];
	int fd, r;

	setup(&f);
	r = fo_control_new(f.loop, f.mgr, f.path, NULL, NULL, &second);
	CHECK(r == -EADDRINUSE, "second instance refused: %d", r);
	fd = connect_to(f.path);
	CHECK(fd >= 0 && strstr(ask(&f, fd, "{\"cmd\":\"status\"}", buf, sizeof(buf)), "\"ok\":true"),
	      "the first still serves");
	close(fd);

	/* A stale socket (a killed daemon's) is replaced. */
	snprintf(other, sizeof(other), "%.80s.stale", f.path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", other);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind stale");
	close(fd);
	r = fo_control_new(f.loop, f.mgr, other, NULL, NULL, &second);
	CHECK(r == 0, "stale socket replaced: %d", r);
	second = fo_control_free(second);

	/* A regular file and a symlink stay where they are. */
	fd = open(other, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	close(fd);
	r = fo_control_new(f.loop, f.mgr, other, NULL, NULL, &second);
	CHECK(r == -EEXIST && stat(other, &st) == 0 && S_ISREG(st.st_mode), "regular file kept: %d", r);
	unlink(other);
	CHECK(symlink("/etc/passwd", other) == 0, "symlink");
	r = fo_control_new(f.loop, f.mgr, other, "nogroup", NULL, &second);
	CHECK(r == -EEXIST && lstat(other, &st) == 0 && S_ISLNK(st.st_mode), "symlink kept: %d", r);
	CHECK(stat("/etc/passwd", &st) == 0 && st.st_gid == 0, "symlink target untouched");
	unlink(other);
	teardown(&f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_socket_abuse);
	RUN(test_drill_waiter_survives_reload);
	RUN(test_fair_share);
	RUN(test_endless_line);
	RUN(test_idle_and_slots);
	RUN(test_admin_group);
	RUN(test_out_of_fds);
	RUN(test_socket_path);
	return check_summary("test_control_socket");
}
