/* SPDX-License-Identifier: MIT */
/*
 * drill.c - drills: a fault injected into the active (through its agent, or
 * by destroying it, or a manual switchover), which must cause a switchover
 * within what a real fault of its kind would take.
 */
#include "core/pair/pair_internal.h"
#include "proto/drill.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* What the agent is told to do for a drill (proto/drill_kinds.def); NULL:
 * the drill needs no agent. */
static const char *drill_command(enum fo_drill_kind kind)
{
	const struct fo_drill_kind_info *k = fo_drill_kind_info(kind);

	return k ? k->agent_command : NULL;
}

void fo_pair_on_write_failed(struct fo_pair *p, int member, const char *key, const char *value, int err)
{
	const char *cmd = p->drill_active ? drill_command(p->drill_kind) : NULL;

	/* A role that did not land is logged by the backend; the guest keeps
	 * the old one until the next switch publishes roles again. */
	if (strcmp(key, FO_HB_XS_CONTROL) != 0)
		return;
	/* The drill's command never reached the agent: nothing will fail, so
	 * do not let the operator wait for the drill's budget to say so. */
	if (!cmd || p->drill_event_id != 0 || member != p->active || strcmp(value, cmd) != 0)
		return;
	p->drill_active = false;
	set_deadline(fo_pair_standby(p), FO_DL_NONE, 0);
	p->drill_done_id = fo_pair_record(p, FO_EV_DRILL, FO_RESULT_FAILED,
					  "drill %s: command \"%s\" never reached the agent of %s: %s",
					  fo_drill_kind_name(p->drill_kind), cmd, p->m[member].name, strerror(-err))->id;
	fo_pair_arm_active_deadline_if_armed(p);
}

int fo_pair_request_drill(struct fo_pair *p, enum fo_drill_kind kind, char *err, size_t errlen)
{
	struct fo_hv *hv = p->env->hv;
	struct fo_member *a = fo_pair_active(p);
	uint64_t budget_ms;
	const char *cmd;
	int r;

	if (p->state != FO_PAIR_ARMED) {
		snprintf(err, errlen, "pair %s is %s (%s): a drill needs an ARMED pair", p->cfg.name,
			 fo_pair_state_name(p->state), p->reason);
		return -EBUSY;
	}
	if (p->drill_active) {
		snprintf(err, errlen, "pair %s: a drill is already running", p->cfg.name);
		return -EBUSY;
	}
	p->drill_active = true;
	p->drill_kind = kind;
	p->drill_event_id = 0;
	p->drill_done_id = 0;
	p->drill_inject_ns = now_ns(p);
	/* A drill must switch within what a real fault of its kind would take,
	 * with room for a slow guest; past that it failed. */
	budget_ms = (uint64_t)p->cfg.timeout_ms + p->cfg.period_ms + p->cfg.deadline_ms + 5000;
	/* The drill's own deadline rides on the standby's slot: it is paused
	 * and has no deadline of its own while ARMED. */
	set_deadline(fo_pair_standby(p), FO_DL_DRILL, p->drill_inject_ns + MS(budget_ms));

	/* Through the agent when the table names its command; the others
	 * failoverd injects itself (a row with neither is refused, and
	 * test_pair_ops drills every row). */
	cmd = drill_command(kind);
	if (cmd) {
		r = hv->ops->agent_command(hv, a->domid, cmd);
	} else if (kind == FO_DRILL_DESTROY) {
		r = hv->ops->destroy(hv, a->domid);
		if (r == 0)
			fo_pair_on_domains_changed(p);
	} else if (kind == FO_DRILL_MANUAL) {
		r = fo_pair_begin_switchover(p, FO_FAULT_MANUAL, p->drill_inject_ns, now_ns(p));
		if (r == -EALREADY)
			r = 0; /* the module switched first; its event is this drill's */
	} else {
		r = -EINVAL;
	}
	if (r < 0 && p->drill_event_id == 0) {
		p->drill_active = false;
		set_deadline(fo_pair_standby(p), FO_DL_NONE, 0);
		snprintf(err, errlen, "pair %s: could not inject %s: %s", p->cfg.name, fo_drill_kind_name(kind),
			 strerror(-r));
		return r;
	}
	return 0;
}
