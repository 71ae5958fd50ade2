/* SPDX-License-Identifier: MIT */
/*
 * commands.c - the control protocol's command table (see commands.h).
 */
#include "proto/commands.h"

#include "lib/limits.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

static const struct fo_command {
	const char *name;
	enum fo_request_cmd cmd;
	enum fo_request_arg arg;
	bool admin; /* changes something: root or control_admin_group only */
} commands[] = {
	{ "status", FO_REQ_STATUS, FO_REQ_ARG_NONE, false },
	{ "events", FO_REQ_EVENTS, FO_REQ_ARG_NONE, false },
	{ "kernel", FO_REQ_KERNEL, FO_REQ_ARG_NONE, false },
	{ "metrics", FO_REQ_METRICS, FO_REQ_ARG_NONE, false },
	{ "switchover", FO_REQ_SWITCHOVER, FO_REQ_ARG_PAIR, true },
	{ "arm", FO_REQ_ARM, FO_REQ_ARG_PAIR, true },
	{ "disarm", FO_REQ_DISARM, FO_REQ_ARG_PAIR, true },
	{ "drill", FO_REQ_DRILL, FO_REQ_ARG_PAIR, true },
	{ "clear-failed", FO_REQ_CLEAR_FAILED, FO_REQ_ARG_MEMBER, true },
	{ "stand-down", FO_REQ_STAND_DOWN, FO_REQ_ARG_PAIR, true },
};

bool fo_proto_pair_name_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > FO_NAME_MAX)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == len;
}

int fo_request_cmd_parse(const char *name, enum fo_request_cmd *ret)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(name, commands[i].name) == 0) {
			*ret = commands[i].cmd;
			return 0;
		}
	return -EINVAL;
}

bool fo_request_cmd_at(size_t i, enum fo_request_cmd *ret)
{
	if (i >= sizeof(commands) / sizeof(commands[0]))
		return false;
	*ret = commands[i].cmd;
	return true;
}

/* The command's row; NULL for a value outside the enum. */
static const struct fo_command *find(enum fo_request_cmd cmd)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].cmd == cmd)
			return &commands[i];
	return NULL;
}

const char *fo_request_cmd_name(enum fo_request_cmd cmd)
{
	const struct fo_command *c = find(cmd);

	return c ? c->name : "?";
}

enum fo_request_arg fo_request_arg(enum fo_request_cmd cmd)
{
	const struct fo_command *c = find(cmd);

	return c ? c->arg : FO_REQ_ARG_NONE;
}

/* An unknown command is refused to the non-admin: fail closed. */
bool fo_request_needs_admin(enum fo_request_cmd cmd)
{
	const struct fo_command *c = find(cmd);

	return c ? c->admin : true;
}
