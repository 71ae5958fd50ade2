/* SPDX-License-Identifier: MIT */
/*
 * commands.h - the commands of the control protocol: their names (the
 * request's "cmd"), which object each names, which need the admin right,
 * and the faults a drill may inject. The daemon parses requests with this
 * table (io/control_requests.c) and failoverctl checks its command line with it.
 */
#ifndef FO_PROTO_COMMANDS_H
#define FO_PROTO_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

enum fo_request_cmd {
	FO_REQ_STATUS,
	FO_REQ_EVENTS,
	FO_REQ_KERNEL,
	FO_REQ_METRICS,
	FO_REQ_SWITCHOVER,
	FO_REQ_ARM,
	FO_REQ_DISARM,
	FO_REQ_DRILL,
	FO_REQ_CLEAR_FAILED,
	FO_REQ_STAND_DOWN,
};

/* The object a command acts on, and its request key. */
enum fo_request_arg {
	FO_REQ_ARG_NONE,
	FO_REQ_ARG_PAIR,   /* "pair": a pair's name */
	FO_REQ_ARG_MEMBER, /* "member": a member's domain name */
};

/* A pair's name: 1 to FO_NAME_MAX characters of A-Z a-z 0-9 _ . -
 * (the config's rule, and what a request may name). */
bool fo_proto_pair_name_ok(const char *s);

/* -EINVAL for a name that is no command. */
int fo_request_cmd_parse(const char *name, enum fo_request_cmd *ret);
const char *fo_request_cmd_name(enum fo_request_cmd cmd);
enum fo_request_arg fo_request_arg(enum fo_request_cmd cmd);
/* The i-th command of the table (0, 1, ... until it returns false), for
 * listing them: failoverctl's bash completion is generated from it. */
bool fo_request_cmd_at(size_t i, enum fo_request_cmd *ret);
/* Changes something: needs root or control_admin_group. */
bool fo_request_needs_admin(enum fo_request_cmd cmd);

#endif
