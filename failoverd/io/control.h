/* SPDX-License-Identifier: MIT */
/*
 * control.h - the control socket: a Unix stream socket speaking
 * line-delimited JSON (one request per line, one reply line; `events
 * --follow` keeps the connection and gets one line per new event).
 *
 * A client can never crash, block or delay the daemon: every socket is
 * non-blocking; a client is served a bounded share per loop turn, after
 * the real-time fds; a request line is at most FO_CONTROL_LINE_MAX bytes
 * (a longer one ends the connection); a connection idle for 5 s is closed;
 * the last slots are root's; a client that does not read its replies is
 * dropped when its output buffer is full; and every malformed request gets
 * an error reply naming what was wrong, in valid UTF-8.
 *
 * Rights come from the peer's credentials (SO_PEERCRED): whoever may open
 * the socket (root, control_group) may read (status, events, metrics,
 * kernel); switchover, arm, disarm and drill need root or a member of
 * control_admin_group.
 */
#ifndef FO_CONTROL_H
#define FO_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/events.h"
#include "../core/manager.h"
#include "loop.h"
/* enum fo_request_cmd, fo_request_cmd_name(), fo_request_needs_admin() */
#include "proto/commands.h"
#include "proto/drill.h"

#define FO_CONTROL_LINE_MAX 4096

struct fo_control;

/* One request, parsed and checked, not yet looked up or executed. */
struct fo_request {
	enum fo_request_cmd cmd;
	char pair[FO_NAME_MAX + 1];  /* switchover, arm, disarm, drill */
	char member[FO_NAME_MAX + 1]; /* clear-failed: a member's domain name */
	enum fo_drill_kind fault;    /* drill */
	bool follow;                 /* events */
};

/*
 * Parse one request line (without its newline; may hold any bytes) into
 * *req. Pure: no daemon state, no allocation kept; the fuzzing entry
 * point. 0, or -EINVAL with the error the client is told in err (valid
 * UTF-8, echoed input sanitised and bounded).
 */
int fo_control_parse_request(const char *line, size_t len, struct fo_request *req, char *err, size_t errlen);

/* Creates the socket (and its directory), mode 0600 or 0660 for `group`.
 * Refuses (-EADDRINUSE) when a live daemon answers on `path`, and
 * (-EEXIST) when something other than a socket is there; removes only a
 * stale socket. `admin_group` (or NULL): members may also change things. */
int fo_control_new(struct fo_loop *loop, struct fo_manager *mgr, const char *path, const char *group,
		   const char *admin_group, struct fo_control **ret);
struct fo_control *fo_control_free(struct fo_control *c);
/* The state stream whose numbers status shows (state_stream; before the loop runs). */
struct fo_stream;
void fo_control_set_stream(struct fo_control *c, struct fo_stream *s);

/* Send an event to every `events --follow` client. */
void fo_control_publish_event(struct fo_control *c, const struct fo_event *e);
/* Answer drills that finished (call after every loop iteration). */
void fo_control_complete_drills(struct fo_control *c);

/* For tests: close clients idle this long (default 5000 ms). */
void fo_control_set_idle_timeout(struct fo_control *c, unsigned ms);

/* For tests: handle one request line as if a client sent it; the reply
 * (without newline) goes into buf. Returns bytes written. The line is
 * handled with every right (as root). */
size_t fo_control_handle_line(struct fo_control *c, const char *line, char *buf, size_t len);

#endif
