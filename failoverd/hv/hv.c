/* SPDX-License-Identifier: MIT */
#include "hv.h"

const char *fo_dom_state_name(enum fo_dom_state s)
{
	static const char *const names[] = { "running", "paused", "crashed", "shutdown", "dying", "gone" };
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}
