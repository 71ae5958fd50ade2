/* SPDX-License-Identifier: MIT */
/*
 * drill.c - the drill kinds' table, made from proto/drill_kinds.def (see
 * drill.h).
 */
#include "proto/drill.h"

#include "../../guest-heartbeat/abi/fo_heartbeat.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* A row that would break --help's columns does not compile. */
#define FO_DRILL_KIND(id, name, agent_command, fault, help)                                                   \
	_Static_assert(sizeof(name) - 1 <= FO_DRILL_NAME_MAX, "drill kind " name ": name too long");            \
	_Static_assert(sizeof(help) - 1 <= FO_DRILL_HELP_MAX, "drill kind " name ": help longer than a line");
#include "proto/drill_kinds.def"

static const struct fo_drill_kind_info kinds[FO_DRILL_COUNT] = {
#define FO_DRILL_KIND(id, name, agent_command, fault, help) [FO_DRILL_##id] = { name, agent_command, fault, help },
#include "proto/drill_kinds.def"
};

/* The names joined with ", ", compiled as one string; the first separator
 * is skipped. */
static const char kinds_text[] =
#define FO_DRILL_KIND(id, name, agent_command, fault, help) ", " name
#include "proto/drill_kinds.def"
	;

const struct fo_drill_kind_info *fo_drill_kind_info(enum fo_drill_kind k)
{
	return (unsigned)k < FO_DRILL_COUNT ? &kinds[k] : NULL;
}

const char *fo_drill_kind_name(enum fo_drill_kind k)
{
	return (unsigned)k < FO_DRILL_COUNT ? kinds[k].name : "?";
}

int fo_drill_kind_parse(const char *name, enum fo_drill_kind *ret)
{
	for (int i = 0; i < FO_DRILL_COUNT; i++)
		if (strcmp(name, kinds[i].name) == 0) {
			*ret = (enum fo_drill_kind)i;
			return 0;
		}
	return -EINVAL;
}

const char *fo_drill_kinds_text(void)
{
	return kinds_text + 2;
}
