/* SPDX-License-Identifier: MIT */
/*
 * control_internal.h - what the files of the control socket share and
 * nobody else uses: the socket's state and its clients (control.c), the
 * replies (control_status.c) and the requests (control_requests.c). The
 * interface is control.h.
 */
#ifndef FO_CONTROL_INTERNAL_H
#define FO_CONTROL_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "io/control.h"

#define FO_CONTROL_MAX_CLIENTS 32
/* Slots only root may take: however many connections other users hold
 * open, the operator can always get in (and, with every slot taken, root
 * closes the oldest idle connection instead of being refused). */
#define FO_CONTROL_ROOT_SLOTS 2
/* Big enough for the whole event ring as one reply. */
#define FO_CONTROL_OUT_MAX (512 * 1024)
/* A client's share of one loop turn; then the loop serves the real-time
 * fds and the other clients before this one continues (fo_loop_again). */
#define FO_CONTROL_TURN_REQUESTS 4
#define FO_CONTROL_TURN_BYTES (2 * FO_CONTROL_LINE_MAX)
/* A connection with no complete request for this long is closed (unless
 * it follows events or waits for a drill). */
#define FO_CONTROL_IDLE_MS 5000

struct fo_client {
	int fd; /* -1 = free slot */
	char in[FO_CONTROL_LINE_MAX + 1]; /* the longest request and its newline */
	size_t in_len;
	char *out;
	size_t out_len;
	bool follow;         /* events --follow */
	/* The pair whose drill it waits for ("" = none), by name: a reload may
	 * move the pair to another index meanwhile. */
	char drill_pair[FO_NAME_MAX + 1];
	bool closing;        /* close once `out` is flushed; read nothing more */
	bool root;           /* SO_PEERCRED uid 0 */
	bool admin;          /* root or in control_admin_group: may change things */
	uint64_t since_ns;   /* connected, or its last complete request (CLOCK_MONOTONIC) */
};

struct fo_control {
	struct fo_loop *loop;
	struct fo_manager *mgr;
	struct fo_stream *stream;  /* state_stream; NULL = none */
	int listen_fd;
	int tick_fd;         /* idle sweep, accept back-off; armed while needed */
	bool tick_armed;
	int spare_fd;        /* /dev/null, closed to make room when out of fds */
	bool accept_paused;  /* out of fds and no spare: listener out of epoll */
	bool fd_warned;      /* "out of file descriptors" said once */
	uint64_t idle_ns;
	bool have_admin_gid;
	gid_t admin_gid;
	char path[FO_PATH_MAX];
	struct fo_client clients[FO_CONTROL_MAX_CLIENTS];
	struct {
		uint64_t accept_errors; /* accept4 out of fds (or memory) */
		uint64_t refused;       /* no slot for the client */
		uint64_t idle_closed;   /* idle timeout, or evicted for root */
		uint64_t oversized;     /* request line over FO_CONTROL_LINE_MAX */
	} stats;
};

/* control_status.c: the replies */
cJSON *fo_control_error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
cJSON *fo_control_ok_reply(void);
cJSON *fo_control_event_json(const struct fo_event *e);
cJSON *fo_control_status_json(struct fo_control *c);
cJSON *fo_control_kernel_json(struct fo_control *c);
cJSON *fo_control_events_json(struct fo_control *c);
cJSON *fo_control_metrics_json(struct fo_control *c);

/* control_requests.c: one request line, parsed, checked and carried out */
cJSON *fo_control_handle_request(struct fo_control *c, struct fo_client *cl, const char *line, size_t len);

#endif
