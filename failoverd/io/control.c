/* SPDX-License-Identifier: MIT */
/*
 * control.c - the control socket itself: listening, accepting (slots, the
 * root's reserve, running out of descriptors), each client's bounded share
 * of a loop turn, the idle timeout, and answering followers and drill
 * waiters. What a request means is control_requests.c's; the replies are
 * control_status.c's.
 */
#include "io/control_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "io/accept.h"
#include "lib/log.h"

/* The control socket lives in real time, not the backend's (virtual, in
 * the simulator) clock. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void client_close(struct fo_control *c, struct fo_client *cl)
{
	fo_loop_remove(c->loop, cl->fd);
	close(cl->fd);
	free(cl->out);
	cl->out = NULL;
	cl->fd = -1;
}

static void client_flush(struct fo_control *c, struct fo_client *cl)
{
	while (cl->out_len) {
		ssize_t n = send(cl->fd, cl->out, cl->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			client_close(c, cl);
			return;
		}
		memmove(cl->out, cl->out + n, cl->out_len - (size_t)n);
		cl->out_len -= (size_t)n;
	}
	if (!cl->out_len && cl->closing) {
		client_close(c, cl);
		return;
	}
	fo_loop_modify(c->loop, cl->fd, (cl->closing ? 0 : EPOLLIN) | (cl->out_len ? EPOLLOUT : 0));
}

/* Queue one reply line. A client that lets FO_CONTROL_OUT_MAX pile up is
 * not reading: it is dropped rather than allowed to hold our memory. */
static void client_send(struct fo_control *c, struct fo_client *cl, const char *line)
{
	size_t n = strlen(line);

	if (cl->out_len + n + 1 > FO_CONTROL_OUT_MAX) {
		fo_warn("control: dropping a client that does not read its replies");
		client_close(c, cl);
		return;
	}
	memcpy(cl->out + cl->out_len, line, n);
	cl->out[cl->out_len + n] = '\n';
	cl->out_len += n + 1;
	client_flush(c, cl);
}

static void send_json(struct fo_control *c, struct fo_client *cl, cJSON *obj)
{
	char *s = cJSON_PrintUnformatted(obj);

	if (s) {
		client_send(c, cl, s);
		free(s);
	}
}

static void client_handle_line(struct fo_control *c, struct fo_client *cl, const char *line, size_t len)
{
	cJSON *reply = fo_control_handle_request(c, cl, line, len);

	if (reply) {
		send_json(c, cl, reply);
		cJSON_Delete(reply);
	}
}

/* Tell the client why, then close once that is sent. */
static void client_end(struct fo_control *c, struct fo_client *cl, const char *why)
{
	cJSON *err = fo_control_error_reply("%s", why);

	send_json(c, cl, err);
	cJSON_Delete(err);
	if (cl->fd >= 0) {
		cl->closing = true;
		client_flush(c, cl);
	}
}

/* One turn's share: at most FO_CONTROL_TURN_REQUESTS requests and
 * FO_CONTROL_TURN_BYTES read, then back to the loop (fo_loop_again): a
 * client pipelining requests can no longer hold the loop for as long as it
 * sends. A line that does not fit the buffer is an error and the end of
 * the connection: skipping it would let one endless line hold us. */
static void client_serve(struct fo_control *c, struct fo_client *cl)
{
	unsigned requests = 0;
	size_t bytes = 0;
	char msg[96];

	for (;;) {
		char *nl;

		while (cl->fd >= 0 && !cl->closing && (nl = memchr(cl->in, '\n', cl->in_len))) {
			size_t n = (size_t)(nl - cl->in);

			if (requests++ == FO_CONTROL_TURN_REQUESTS) {
				fo_loop_again(c->loop, cl->fd);
				return;
			}
			cl->since_ns = mono_ns();
			client_handle_line(c, cl, cl->in, n);
			if (cl->fd < 0)
				return;
			memmove(cl->in, nl + 1, cl->in_len - n - 1);
			cl->in_len -= n + 1;
		}
		if (cl->fd < 0 || cl->closing)
			return;
		if (cl->in_len == sizeof(cl->in)) {
			c->stats.oversized++;
			snprintf(msg, sizeof(msg), "request longer than %d bytes; closing the connection",
				 FO_CONTROL_LINE_MAX);
			client_end(c, cl, msg);
			return;
		}
		if (bytes >= FO_CONTROL_TURN_BYTES) {
			fo_loop_again(c->loop, cl->fd);
			return;
		}
		ssize_t k = recv(cl->fd, cl->in + cl->in_len, sizeof(cl->in) - cl->in_len, MSG_DONTWAIT);
		if (k == 0) {
			/* The client finished sending: what it asked is answered. */
			cl->closing = true;
			client_flush(c, cl);
			return;
		}
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				client_close(c, cl);
			return;
		}
		bytes += (size_t)k;
		cl->in_len += (size_t)k;
	}
}

static void on_client(void *ctx, int fd, uint32_t events)
{
	struct fo_control *c = ctx;
	struct fo_client *cl = NULL;

	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i].fd == fd)
			cl = &c->clients[i];
	if (!cl)
		return;
	if (events & EPOLLOUT) {
		client_flush(c, cl);
		if (cl->fd < 0)
			return;
	}
	if (cl->closing) {
		if (events & (EPOLLHUP | EPOLLERR))
			client_close(c, cl);
		return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		client_serve(c, cl);
}

/* ---- connections ------------------------------------------------------- */

static void tick_arm(struct fo_control *c)
{
	/* A quarter of the idle timeout, at most a second: an idle client is
	 * closed within 1.25 x the timeout. */
	uint64_t ns = c->idle_ns / 4 < 1000000000ull ? c->idle_ns / 4 : 1000000000ull;
	struct itimerspec its;

	if (c->tick_armed)
		return;
	if (ns < 1000000)
		ns = 1000000;
	its.it_interval.tv_sec = its.it_value.tv_sec = (time_t)(ns / 1000000000ull);
	its.it_interval.tv_nsec = its.it_value.tv_nsec = (long)(ns % 1000000000ull);
	if (timerfd_settime(c->tick_fd, 0, &its, NULL) == 0)
		c->tick_armed = true;
}

static void refuse(int fd, const char *why)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%s\"}\n", why);

	(void)!send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

static void on_tick(void *ctx, int fd, uint32_t events)
{
	struct fo_control *c = ctx;
	uint64_t exp, now = mono_ns();
	bool any = false;
	char msg[128];

	(void)!read(fd, &exp, sizeof(exp));
	if (c->accept_paused && fo_loop_modify(c->loop, c->listen_fd, EPOLLIN) == 0)
		c->accept_paused = false;
	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++) {
		struct fo_client *cl = &c->clients[i];

		if (cl->fd < 0)
			continue;
		any = true;
		/* Followers and drill waiters are quiet by design. */
		if (cl->follow || cl->drill_pair[0] || cl->closing || now - cl->since_ns < c->idle_ns)
			continue;
		c->stats.idle_closed++;
		snprintf(msg, sizeof(msg), "closing an idle connection: no complete request in %" PRIu64 " ms",
			 (uint64_t)(c->idle_ns / 1000000ull));
		client_end(c, cl, msg);
	}
	if (!any && !c->accept_paused) {
		struct itimerspec off = { { 0, 0 }, { 0, 0 } };
		timerfd_settime(c->tick_fd, 0, &off, NULL);
		c->tick_armed = false;
	}
}

static void refuse_out_of_fds(int fd, void *ctx)
{
	(void)ctx;
	refuse(fd, "failoverd is out of file descriptors");
}

/*
 * Out of file descriptors (EMFILE/ENFILE): fo_accept() sheds the pending
 * connection with the spare descriptor (returning would otherwise bring
 * us straight back: a spin at SCHED_FIFO); without a spare (the whole
 * system is out), the listener leaves epoll until the next tick. Said
 * once until an accept works again, counted in metrics.
 */
static void accept_out_of_fds(struct fo_control *c, enum fo_accept_result r, int err)
{
	c->stats.accept_errors++;
	if (!c->fd_warned) {
		fo_warn("control: cannot accept a client: %s; refusing clients until descriptors are free "
			"(failoverd_control_accept_errors_total counts them)", strerror(err));
		c->fd_warned = true;
	}
	if (r == FO_ACCEPT_STUCK) {
		fo_loop_modify(c->loop, c->listen_fd, 0);
		c->accept_paused = true;
		tick_arm(c);
	}
}

static bool peer_in_group(int fd, gid_t primary, gid_t gid)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (primary == gid)
		return true;
	/* The peer's supplementary groups as of its connect(), from the
	 * kernel: no NSS lookup on the loop. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* A slot for a new client: never one of the last FO_CONTROL_ROOT_SLOTS
 * unless it is root; for root with every slot taken, the oldest idle
 * connection's (not a follower's, not a drill's). */
static struct fo_client *take_slot(struct fo_control *c, bool root)
{
	static const char evicted[] = "{\"ok\":false,\"error\":\"closing an idle connection: its slot is "
				      "needed by root\"}\n";
	struct fo_client *free_slot = NULL, *oldest = NULL;
	int n_free = 0;

	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++) {
		struct fo_client *cl = &c->clients[i];

		if (cl->fd < 0) {
			n_free++;
			free_slot = free_slot ? free_slot : cl;
		} else if (!cl->follow && !cl->drill_pair[0] && (!oldest || cl->since_ns < oldest->since_ns)) {
			oldest = cl;
		}
	}
	if (free_slot && (root || n_free > FO_CONTROL_ROOT_SLOTS))
		return free_slot;
	if (!root || !oldest)
		return NULL;
	c->stats.idle_closed++;
	(void)!send(oldest->fd, evicted, sizeof(evicted) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	client_close(c, oldest);
	return oldest;
}

static void admit(struct fo_control *c, int cfd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct fo_client *cl;

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		refuse(cfd, "cannot read the client's credentials");
		return;
	}
	cl = take_slot(c, cred.uid == 0);
	if (!cl) {
		c->stats.refused++;
		refuse(cfd, "too many control clients");
		return;
	}
	memset(cl, 0, sizeof(*cl));
	cl->fd = -1;
	cl->out = malloc(FO_CONTROL_OUT_MAX);
	cl->drill_pair[0] = '\0';
	cl->root = cred.uid == 0;
	cl->admin = cl->root || (c->have_admin_gid && peer_in_group(cfd, cred.gid, c->admin_gid));
	cl->since_ns = mono_ns();
	if (!cl->out || fo_loop_add(c->loop, cfd, EPOLLIN, on_client, c) < 0) {
		free(cl->out);
		cl->out = NULL;
		close(cfd);
		return;
	}
	cl->fd = cfd;
	tick_arm(c);
}

static void on_accept(void *ctx, int fd, uint32_t events)
{
	struct fo_control *c = ctx;
	int cfd, err = 0;
	enum fo_accept_result r = fo_accept(fd, &c->spare_fd, refuse_out_of_fds, NULL, &cfd, &err);

	if (r != FO_ACCEPTED) {
		if (fo_accept_out_of_fds(err))
			accept_out_of_fds(c, r, err);
		return;
	}
	if (c->fd_warned) {
		fo_notice("control: accepting clients again");
		c->fd_warned = false;
	}
	admit(c, cfd);
}

void fo_control_set_idle_timeout(struct fo_control *c, unsigned ms)
{
	c->idle_ns = (uint64_t)ms * 1000000ull;
}

void fo_control_publish_event(struct fo_control *c, const struct fo_event *e)
{
	cJSON *o = NULL;

	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++) {
		struct fo_client *cl = &c->clients[i];
		if (cl->fd < 0 || !cl->follow)
			continue;
		if (!o) {
			o = cJSON_CreateObject();
			cJSON_AddItemToObject(o, "event", fo_control_event_json(e));
		}
		send_json(c, cl, o);
	}
	cJSON_Delete(o);
}

void fo_control_complete_drills(struct fo_control *c)
{
	for (size_t i = 0; i < fo_manager_pair_count(c->mgr); i++) {
		struct fo_pair *p = fo_manager_pair(c->mgr, i);
		uint64_t done = fo_pair_take_drill_done(p);
		const struct fo_event *e;
		if (!done)
			continue;
		e = fo_event_ring_find(fo_manager_events(c->mgr), done);
		for (int k = 0; k < FO_CONTROL_MAX_CLIENTS; k++) {
			struct fo_client *cl = &c->clients[k];
			cJSON *reply;
			if (cl->fd < 0 || strcmp(cl->drill_pair, fo_pair_name(p)) != 0)
				continue;
			cl->drill_pair[0] = '\0';
			cl->since_ns = mono_ns();
			if (e) {
				reply = fo_control_ok_reply();
				cJSON_AddItemToObject(reply, "event", fo_control_event_json(e));
			} else {
				reply = fo_control_error_reply("drill finished but its event was overwritten");
			}
			send_json(c, cl, reply);
			cJSON_Delete(reply);
		}
	}
}

/* ---- the socket ------------------------------------------------------- */

/*
 * What is at the socket path before we bind. Nothing: fine. A socket that
 * answers: another failoverd is serving it, and taking it over would leave
 * two daemons switching the same pairs: refuse to start. A socket nobody
 * answers: a killed daemon's, removed. Anything else (a file, a symlink)
 * is never deleted: refuse, naming it.
 */
static int clear_stale_socket(int dirfd, const char *base, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r;

	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		fo_err("control socket %s: exists and is not a socket (a %s); refusing to delete it", path,
		       S_ISLNK(st.st_mode) ? "symlink" : S_ISREG(st.st_mode) ? "regular file" : S_ISDIR(st.st_mode) ? "directory" : "special file");
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Non-blocking: a live daemon with a full backlog says EAGAIN. */
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
	close(fd);
	if (r == 0 || r == -EAGAIN || r == -EINPROGRESS) {
		fo_err("control socket %s: another failoverd is listening there; refusing to start (stop it first)",
		       path);
		return -EADDRINUSE;
	}
	if (r != -ECONNREFUSED) {
		fo_err("control socket %s: cannot tell whether it is in use (%s); not removing it", path, strerror(-r));
		return r;
	}
	return unlinkat(dirfd, base, 0) < 0 ? -errno : 0;
}

/* The directory of the socket, created if missing (0755), opened for the
 * *at() calls that never follow a symlink at the socket's name. */
static int open_socket_dir(const char *path, char *base, size_t baselen)
{
	char dir[FO_PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int dirfd;

	if (!slash)
		return -EINVAL; /* the config insists on an absolute path */
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	snprintf(base, baselen, "%s", slash + 1);
	if (slash != path && mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	if (fstat(dirfd, &st) == 0 && (st.st_mode & S_IWOTH))
		fo_warn("control socket directory %s is world-writable%s: any user could put something at %s; "
			"prefer a directory only root can write (default /run/failoverd)",
			dir, st.st_mode & S_ISVTX ? " (sticky)" : "", path);
	return dirfd;
}

static int lookup_group(const char *what, const char *name, gid_t *ret)
{
	struct group *g = getgrnam(name);

	if (!g) {
		fo_err("control socket: %s \"%s\": no such group", what, name);
		return -ENOENT;
	}
	*ret = g->gr_gid;
	return 0;
}

int fo_control_new(struct fo_loop *loop, struct fo_manager *mgr, const char *path, const char *group,
		   const char *admin_group, struct fo_control **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fo_control *c;
	char base[FO_PATH_MAX];
	bool grouped = group && group[0];
	gid_t gid = (gid_t)-1;
	struct stat st;
	mode_t old_umask;
	int r, dirfd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->mgr = mgr;
	c->listen_fd = c->tick_fd = c->spare_fd = -1;
	c->idle_ns = FO_CONTROL_IDLE_MS * 1000000ull;
	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++)
		c->clients[i].fd = -1;
	snprintf(c->path, sizeof(c->path), "%s", path);
	if ((grouped && (r = lookup_group("control_group", group, &gid)) < 0) ||
	    (admin_group && admin_group[0] &&
	     (r = lookup_group("control_admin_group", admin_group, &c->admin_gid)) < 0))
		goto fail;
	c->have_admin_gid = admin_group && admin_group[0];
	dirfd = open_socket_dir(path, base, sizeof(base));
	if (dirfd < 0) {
		r = dirfd;
		goto fail;
	}
	r = clear_stale_socket(dirfd, base, path);
	if (r < 0)
		goto fail;
	strcpy(sa.sun_path, path);
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	c->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	c->spare_fd = fo_accept_spare_open();
	if (c->listen_fd < 0 || c->tick_fd < 0 || c->spare_fd < 0) {
		r = -errno;
		goto fail;
	}
	/* Create the socket node with its final mode: no window in which a
	 * non-root user could connect. */
	old_umask = umask(grouped ? 0117 : 0177);
	r = bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old_umask);
	if (r < 0) {
		r = -errno;
		goto fail;
	}
	/* The group by name in the directory, never following a symlink:
	 * what is there must be the socket we just bound. */
	errno = 0;
	if (grouped && (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode) ||
			fchownat(dirfd, base, (uid_t)-1, gid, AT_SYMLINK_NOFOLLOW) < 0)) {
		r = errno ? -errno : -EEXIST;
		fo_err("control socket: cannot give group \"%s\" access: %s", group, strerror(-r));
		goto fail;
	}
	if (listen(c->listen_fd, 16) < 0) {
		r = -errno;
		goto fail;
	}
	if ((r = fo_loop_add(loop, c->listen_fd, EPOLLIN, on_accept, c)) < 0 ||
	    (r = fo_loop_add(loop, c->tick_fd, EPOLLIN, on_tick, c)) < 0) {
		fo_loop_remove(loop, c->listen_fd);
		goto fail;
	}
	close(dirfd);
	*ret = c;
	return 0;
fail:
	if (dirfd >= 0)
		close(dirfd);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->tick_fd >= 0)
		close(c->tick_fd);
	if (c->spare_fd >= 0)
		close(c->spare_fd);
	free(c);
	return r;
}

void fo_control_set_stream(struct fo_control *c, struct fo_stream *s)
{
	if (c)
		c->stream = s;
}

struct fo_control *fo_control_free(struct fo_control *c)
{
	if (!c)
		return NULL;
	for (int i = 0; i < FO_CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i].fd >= 0)
			client_close(c, &c->clients[i]);
	if (c->listen_fd >= 0) {
		fo_loop_remove(c->loop, c->listen_fd);
		close(c->listen_fd);
		unlink(c->path);
	}
	fo_loop_remove(c->loop, c->tick_fd);
	close(c->tick_fd);
	if (c->spare_fd >= 0)
		close(c->spare_fd);
	free(c);
	return NULL;
}
