/* SPDX-License-Identifier: MIT */
/*
 * control.h - the control socket: a Unix stream socket speaking
 * line-delimited JSON (one request per line, one reply line; `events
 * --follow` keeps the connection and gets one line per new event).
 *
 * A client can never crash or block the daemon: every socket is
 * non-blocking, a request line is at most FO_CONTROL_LINE_MAX bytes, a
 * client that does not read its replies is dropped when its output buffer
 * is full, and every malformed request gets an error reply naming what was
 * wrong.
 */
#ifndef FO_CONTROL_H
#define FO_CONTROL_H

#include <stddef.h>

#include "../core/events.h"
#include "../core/manager.h"
#include "loop.h"

#define FO_CONTROL_LINE_MAX 4096

struct fo_control;

/* Creates the socket (and its directory), mode 0600 or 0660 for `group`. */
int fo_control_new(struct fo_loop *loop, struct fo_manager *mgr, const char *path, const char *group,
		   struct fo_control **ret);
struct fo_control *fo_control_free(struct fo_control *c);

/* Send an event to every `events --follow` client. */
void fo_control_publish_event(struct fo_control *c, const struct fo_event *e);
/* Answer drills that finished (call after every loop iteration). */
void fo_control_complete_drills(struct fo_control *c);

/* For tests: handle one request line as if a client sent it; the reply
 * (without newline) goes into buf. Returns bytes written. */
size_t fo_control_handle_line(struct fo_control *c, const char *line, char *buf, size_t len);

#endif
