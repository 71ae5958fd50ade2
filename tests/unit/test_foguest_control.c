/* SPDX-License-Identifier: MIT */
/*
 * test_foguest_control.c - how libfoguest reads its control key
 * (foguest__parse_control, guest-heartbeat/foguest_internal.h), without
 * Xen: the drills for everyone, the TEST ONLY commands (garbage-state,
 * garbage-page, regrant) only with FOGUEST_F_TEST_COMMANDS, so a
 * production guest cannot be told to scribble over its page or revoke its
 * grant through xenstore.
 */
#include "../../guest-heartbeat/foguest_internal.h"
#include "check.h"

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
	/* garbage-state also needs the state regions to scribble on */
	CHECK(foguest__parse_control("garbage-state", 0, true) == FOGUEST_CMD_UNKNOWN, "garbage-state without the flag");
	CHECK(foguest__parse_control("garbage-state", t, false) == FOGUEST_CMD_UNKNOWN, "garbage-state without state");
	CHECK(foguest__parse_control("garbage-state", t, true) == FOGUEST_CMD_GARBAGE_STATE, "garbage-state");
}

int main(void)
{
	RUN(test_drills);
	RUN(test_test_commands_need_the_flag);
	return check_summary("test_foguest_control");
}
