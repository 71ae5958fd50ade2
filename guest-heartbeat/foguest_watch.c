/* SPDX-License-Identifier: MIT */
/*
 * foguest_watch.c - libfoguest's thread of its own: it follows `role` and
 * `control` (drills) on its own /dev/xen/xenbus descriptor, speaking the
 * wire protocol itself (foguest.c says why not through libxenstore), and
 * applies them: a new role (and its eventfd), a drill's control command.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "foguest_impl.h"

/* ----------------------------------------------------- role and control */

/* The highest commit number in our state-in's records (no validation: only
 * compared with itself, to tell whether the relay wrote since), and that
 * record's cycle. */
static uint64_t in_newest_commit(struct foguest *g, uint64_t *cycle)
{
	const volatile struct fo_st_header *h = (const volatile struct fo_st_header *)g->st_in;
	uint64_t a = h->slot[0].commit, b = h->slot[1].commit;

	if (cycle)
		*cycle = a > b ? h->slot[0].cycle : h->slot[1].cycle;
	return a > b ? a : b;
}

static void set_role(struct foguest *g, const char *role)
{
	enum foguest_role r;
	uint64_t one = 1;

	if (!role)
		return; /* not written yet */
	if (!strcmp(role, "active"))
		r = FOGUEST_ROLE_ACTIVE;
	else if (!strcmp(role, "standby"))
		r = FOGUEST_ROLE_STANDBY;
	else {
		glog(g, "ignoring unknown role \"%.32s\"", role);
		return;
	}
	if (atomic_exchange(&g->role, (int)r) == (int)r) {
		/* Still "active": were we the standby in between? The relay
		 * writes a state-in only while its owner is the standby. */
		uint64_t cycle = 0;

		/* ...and was it newer than our own? A late copy of the old
		 * active's state, landing after we took over, is not news. */
		if (r != FOGUEST_ROLE_ACTIVE || !g->st_in || in_newest_commit(g, &cycle) == atomic_load(&g->in_mark) ||
		    cycle <= atomic_load(&g->last_commit_cycle))
			return;
		glog(g, "role: active again after standing by (state handed over meanwhile)");
	}
	atomic_store(&g->in_mark, g->st_in ? in_newest_commit(g, NULL) : 0);
	atomic_fetch_add(&g->role_epoch, 1);
	if (write(g->role_efd, &one, sizeof(one)) < 0)
		glog(g, "role eventfd: %s", strerror(errno));
	if (g->opt.on_role)
		g->opt.on_role(g->opt.ctx, r);
}

static void sleep_forever(void)
{
	for (;;)
		pause();
}

/* The control thread only parses and sets atomics: the page has one
 * writer, the thread that calls foguest_beat(). */
static void handle_control(struct foguest *g, const char *cmd)
{
	int fd;

	switch (foguest__parse_control(cmd, g->opt.flags, g->st_out != NULL)) {
	case FOGUEST_CMD_NONE: {
		bool was = atomic_exchange(&g->garbage_state, false);

		if (atomic_exchange(&g->control, FOGUEST_CTL_NONE) != FOGUEST_CTL_NONE || was)
			glog(g, "control: back to normal");
		break;
	}
	case FOGUEST_CMD_STOP:
		glog(g, "control: stop-heartbeat (drill)");
		atomic_store(&g->control, FOGUEST_CTL_STOP);
		break;
	case FOGUEST_CMD_STUCK:
		/* An application loop stuck behind a live notifier: only the
		 * page shows it, the event channel keeps ticking (what a
		 * kernel module counting notifications cannot see). */
		glog(g, "control: stuck-sequence (drill): notifying, sequence frozen");
		atomic_store(&g->control, FOGUEST_CTL_STUCK);
		break;
	case FOGUEST_CMD_UNHEALTHY:
		glog(g, "control: unhealthy (drill)");
		atomic_store(&g->control, FOGUEST_CTL_UNHEALTHY);
		break;
	case FOGUEST_CMD_FREEZE:
		glog(g, "control: freeze (drill): no more heartbeats, no more xenstore");
		atomic_store(&g->control, FOGUEST_CTL_FREEZE);
		sleep_forever();
		break;
	case FOGUEST_CMD_CRASH:
		glog(g, "control: crash (drill): sysrq-c");
		fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "c", 1) != 1)
			glog(g, "crash: cannot write /proc/sysrq-trigger: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		break;
	case FOGUEST_CMD_GARBAGE_STATE:
		glog(g, "control: garbage-state (TEST): commits write garbage into state-out");
		atomic_store(&g->garbage_state, true);
		break;
	case FOGUEST_CMD_GARBAGE_PAGE:
		/* The sequence changes with every write, so a watch that only
		 * asks "did it move?" (Xen's) sees progress; a validating
		 * reader (failoverd) sees garbage. */
		glog(g, "control: garbage-page (TEST): random bytes over the whole heartbeat page every beat, notified");
		atomic_store(&g->control, FOGUEST_CTL_GARBAGE_PAGE);
		break;
	case FOGUEST_CMD_REGRANT:
		/* One-shot; the key now says "regrant", so no drill is in
		 * force any more (as any new command replaces the last). */
		glog(g, "control: regrant (TEST): the next beat moves the heartbeat page to a newly granted one");
		atomic_store(&g->control, FOGUEST_CTL_NONE);
		atomic_store(&g->regrant, true);
		break;
	case FOGUEST_CMD_NOTIFY_FLOOD: {
		/* EVTCHNOP_send on the heartbeat port as fast as it goes, from
		 * this thread, beside a heartbeat that stays real (the page is
		 * not touched): dom0 must mask the port, not miss the beats.
		 * Bounded (FOGUEST_NOTIFY_FLOOD_NS): no command is read meanwhile. */
		uint64_t n = 0, end = mono_ns() + FOGUEST_NOTIFY_FLOOD_NS;

		glog(g, "control: notify-flood (TEST): notifying the heartbeat port for %llu ms",
		     (unsigned long long)(FOGUEST_NOTIFY_FLOOD_NS / 1000000ull));
		do {
			foguest__notify(g);
			n++;
		} while ((n & 255) || mono_ns() < end);
		glog(g, "control: notify-flood over after %llu notifications", (unsigned long long)n);
		break;
	}
	default:
		glog(g, "ignoring unknown control command \"%.32s\"", cmd);
		break;
	}
}

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

/* The key's value into out, or false when it does not exist (or on error). */
static bool xb_read_value(struct foguest *g, struct xb_conn *c, const char *key, char *out, size_t outlen)
{
	char path[128], body[XENSTORE_PAYLOAD_MAX + 1];
	struct xsd_sockmsg reply;

	snprintf(path, sizeof(path), "%s%s", g->base_path, key);
	if (!xb_request(c, XS_READ, path, NULL, &reply, body, sizeof(body)) || reply.type != XS_READ)
		return false;
	{
		size_t n = strnlen(body, outlen - 1);

		memcpy(out, body, n); /* a longer (hostile) value is cut: it matches nothing */
		out[n] = '\0';
	}
	return true;
}

static bool xb_watch(struct foguest *g, struct xb_conn *c, const char *key, const char *token)
{
	char path[128], body[XENSTORE_PAYLOAD_MAX + 1];
	struct xsd_sockmsg reply;

	snprintf(path, sizeof(path), "%s%s", g->base_path, key);
	if (!xb_request(c, XS_WATCH, path, token, &reply, body, sizeof(body)))
		return false;
	if (reply.type == XS_ERROR) {
		errno = EINVAL;
		glog(g, "watch %s refused: %s", path, body);
		return false;
	}
	return true;
}

static void close_fd(void *arg)
{
	close(*(int *)arg);
}

void *foguest__watcher_thread(void *arg)
{
	struct foguest *g = arg;
	struct xb_conn c = { .fd = open(XB_DEV, O_RDWR | O_CLOEXEC) };
	char body[XENSTORE_PAYLOAD_MAX + 1], value[64];
	struct xsd_sockmsg hdr;
	int old;

	if (c.fd < 0 || !xb_watch(g, &c, FO_HB_XS_ROLE, "role") || !xb_watch(g, &c, FO_HB_XS_CONTROL, "control")) {
		glog(g, "cannot watch %s via %s: %s (roles and drills disabled)", FO_HB_XS_DIR, XB_DEV,
		     strerror(errno));
		if (c.fd >= 0)
			close(c.fd);
		return NULL;
	}
	pthread_cleanup_push(close_fd, &c.fd);
	for (;;) {
		/* cancellation (foguest_close) only while waiting for xenstored */
		while (!c.pending_role && !c.pending_control) {
			if (!xb_recv(&c, &hdr, body, sizeof(body))) {
				glog(g, "xenstore connection lost: %s (roles and drills disabled)", strerror(errno));
				goto out;
			}
		}
		if (c.pending_role) {
			c.pending_role = false;
			if (xb_read_value(g, &c, FO_HB_XS_ROLE, value, sizeof(value))) {
				pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
				set_role(g, value);
				pthread_setcancelstate(old, NULL);
			}
		}
		if (c.pending_control) {
			bool have;

			c.pending_control = false;
			have = xb_read_value(g, &c, FO_HB_XS_CONTROL, value, sizeof(value));
			pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
			if (have && !strcmp(value, FO_HB_CMD_FREEZE))
				pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL); /* it sleeps for ever */
			handle_control(g, have ? value : NULL);
			pthread_setcancelstate(old, NULL);
		}
	}
out:
	pthread_cleanup_pop(1);
	return NULL;
}
