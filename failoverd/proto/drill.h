/* SPDX-License-Identifier: MIT */
/*
 * drill.h - the faults a drill injects, made from proto/drill_kinds.def
 * (their one list): the enum, each kind's name, agent command, the fault it
 * must be detected as and its help line. The daemon parses a drill request
 * with it (io/control_requests.c) and injects by it (core/pair/drill.c);
 * failoverctl checks --fault and prints --help with it.
 */
#ifndef FO_PROTO_DRILL_H
#define FO_PROTO_DRILL_H

#include "proto/event.h"

enum fo_drill_kind {
#define FO_DRILL_KIND(id, name, agent_command, fault, help) FO_DRILL_##id,
#include "proto/drill_kinds.def"
	FO_DRILL_COUNT
};

/* A help line's longest, so that `  NAME  HELP` fits 80 columns. */
#define FO_DRILL_NAME_MAX 15
#define FO_DRILL_HELP_MAX 60

struct fo_drill_kind_info {
	const char *name;          /* the request's "fault", --fault KIND */
	const char *agent_command; /* FO_HB_CMD_*, or NULL: failoverd injects it */
	enum fo_fault fault;       /* what failoverd must detect it as */
	const char *help;          /* one line, at most FO_DRILL_HELP_MAX */
};

/* The kind's row; NULL for a value outside the enum. */
const struct fo_drill_kind_info *fo_drill_kind_info(enum fo_drill_kind k);
/* "?" for a value outside the enum. */
const char *fo_drill_kind_name(enum fo_drill_kind k);
/* -EINVAL for a name that is no drill kind. */
int fo_drill_kind_parse(const char *name, enum fo_drill_kind *ret);
/* Every name, in order, for messages: "heartbeat-loss, hang, ...". */
const char *fo_drill_kinds_text(void);

#endif
