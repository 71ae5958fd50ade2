/* SPDX-License-Identifier: MIT */
/*
 * test_foguest_control.c - how libfoguest reads its control key
 * (foguest__parse_control, guest-heartbeat/foguest_internal.h), without
 * Xen: the drills for everyone, the TEST ONLY commands (garbage-state,
 * garbage-page, regrant, notify-flood) only with FOGUEST_F_TEST_COMMANDS, so a
 * production guest cannot be told to scribble over its page or revoke its
 * grant through xenstore. And the guest obeys every agent command of the
 * drill table (proto/drill_kinds.def) with the fault the row expects: the
 * guest keeps its own names (the ABI), the daemon its table.
 */
#include "../../guest-heartbeat/foguest_internal.h"
#include "check.h"
#include "proto/drill.h"

static void test_drills(void)
{
	static const struct {
		const char *cmd;
		enum foguest_cmd want;
	} cases[] = {
		{ NULL, FOGUEST_CMD_NONE },                 /* key removed */
		{ "none", FOGUEST_CMD_NONE },
		{ "stop-heartbeat", FOGUEST_CMD_STOP },
		{ "stuck-sequence", FOGUEST_CMD_STUCK },
		{ "unhealthy", FOGUEST_CMD_UNHEALTHY },
		{ "freeze", FOGUEST_CMD_FREEZE },
		{ "crash", FOGUEST_CMD_CRASH },
		{ "", FOGUEST_CMD_UNKNOWN },
		{ "Crash", FOGUEST_CMD_UNKNOWN },
		{ "crash ", FOGUEST_CMD_UNKNOWN },
		{ "regrant2", FOGUEST_CMD_UNKNOWN },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (unsigned flags = 0; flags <= FOGUEST_F_TEST_COMMANDS; flags += FOGUEST_F_TEST_COMMANDS)
			CHECK(foguest__parse_control(cases[i].cmd, flags, true) == cases[i].want, "\"%s\" flags %u: %d",
			      cases[i].cmd ? cases[i].cmd : "(null)", flags,
			      (int)foguest__parse_control(cases[i].cmd, flags, true));
}

/* What the library does on a command, as the fault dom0 then sees. */
static enum fo_fault fault_caused(enum foguest_cmd c)
{
	switch (c) {
	case FOGUEST_CMD_STOP:
	case FOGUEST_CMD_FREEZE:
		return FO_FAULT_HEARTBEAT_TIMEOUT; /* the sequence stops */
	case FOGUEST_CMD_STUCK:
		return FO_FAULT_HEARTBEAT_STUCK;
	case FOGUEST_CMD_UNHEALTHY:
		return FO_FAULT_UNHEALTHY;
	case FOGUEST_CMD_CRASH:
		return FO_FAULT_CRASHED;
	default:
		return FO_FAULT_NONE;
	}
}

static void test_drill_table_commands(void)
{
	int agent_rows = 0;

	for (int kind = 0; kind < FO_DRILL_COUNT; kind++) {
		const struct fo_drill_kind_info *k = fo_drill_kind_info((enum fo_drill_kind)kind);
		enum foguest_cmd c;

		if (!k->agent_command)
			continue;
		agent_rows++;
		/* A production guest (no test commands) must obey it. */
		c = foguest__parse_control(k->agent_command, 0, false);
		CHECK(c != FOGUEST_CMD_UNKNOWN && c != FOGUEST_CMD_NONE, "drill %s: the guest ignores \"%s\"", k->name,
		      k->agent_command);
		CHECK(fault_caused(c) == k->fault, "drill %s: \"%s\" causes %s in the guest, the table expects %s",
		      k->name, k->agent_command, fo_fault_name(fault_caused(c)), fo_fault_name(k->fault));
	}
	CHECK(agent_rows > 0, "the table has drills through the agent");
}

static void test_test_commands_need_the_flag(void)
{
	const unsigned t = FOGUEST_F_TEST_COMMANDS, other = FOGUEST_F_STATE | FOGUEST_F_NO_PUBLISH;

	CHECK(foguest__parse_control("garbage-page", 0, true) == FOGUEST_CMD_UNKNOWN, "garbage-page without the flag");
	CHECK(foguest__parse_control("garbage-page", other, true) == FOGUEST_CMD_UNKNOWN, "other flags are not it");
	CHECK(foguest__parse_control("garbage-page", t, false) == FOGUEST_CMD_GARBAGE_PAGE, "garbage-page");
	CHECK(foguest__parse_control("garbage-page", t | other, true) == FOGUEST_CMD_GARBAGE_PAGE, "with others");
	CHECK(foguest__parse_control("regrant", 0, true) == FOGUEST_CMD_UNKNOWN, "regrant without the flag");
	CHECK(foguest__parse_control("regrant", other, true) == FOGUEST_CMD_UNKNOWN, "other flags are not it");
	CHECK(foguest__parse_control("regrant", t, false) == FOGUEST_CMD_REGRANT, "regrant");
	CHECK(foguest__parse_control("notify-flood", 0, true) == FOGUEST_CMD_UNKNOWN, "notify-flood without the flag");
	CHECK(foguest__parse_control("notify-flood", other, true) == FOGUEST_CMD_UNKNOWN, "other flags are not it");
	CHECK(foguest__parse_control("notify-flood", t, false) == FOGUEST_CMD_NOTIFY_FLOOD, "notify-flood");
	/* garbage-state also needs the state regions to scribble on */
	CHECK(foguest__parse_control("garbage-state", 0, true) == FOGUEST_CMD_UNKNOWN, "garbage-state without the flag");
	CHECK(foguest__parse_control("garbage-state", t, false) == FOGUEST_CMD_UNKNOWN, "garbage-state without state");
	CHECK(foguest__parse_control("garbage-state", t, true) == FOGUEST_CMD_GARBAGE_STATE, "garbage-state");
}

int main(void)
{
	RUN(test_drills);
	RUN(test_drill_table_commands);
	RUN(test_test_commands_need_the_flag);
	return check_summary("test_foguest_control");
}
