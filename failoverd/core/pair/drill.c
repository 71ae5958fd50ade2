/* SPDX-License-Identifier: MIT */
/*
 * drill.c - drills: a fault injected into the active (through its agent, or
 * by destroying it, or a manual switchover), which must cause a switchover
 * within what a real fault of its kind would take.
 */
#include "core/pair/pair_internal.h"
#include "proto/commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The names are the protocol's (a drill request's "fault"), in the order of
 * enum fo_drill_kind. */

const char *fo_drill_kind_name(enum fo_drill_kind k)
{
	return (unsigned)k < FO_DRILL_COUNT ? fo_proto_drill_faults[k] : "?";
}

int fo_drill_kind_parse(const char *name, enum fo_drill_kind *ret)
{
	for (int i = 0; i < FO_DRILL_COUNT; i++)
		if (strcmp(name, fo_proto_drill_faults[i]) == 0) {
			*ret = (enum fo_drill_kind)i;
			return 0;
		}
	return -EINVAL;
}

/* What the agent is told to do for a drill; NULL: the drill needs no agent. */
static const char *drill_command(enum fo_drill_kind kind)
{
	switch (kind) {
	case FO_DRILL_HEARTBEAT_LOSS:
		return FO_HB_CMD_STOP;
	case FO_DRILL_HANG:
		return FO_HB_CMD_FREEZE;
	case FO_DRILL_CRASH:
		return FO_HB_CMD_CRASH;
	case FO_DRILL_UNHEALTHY:
		return FO_HB_CMD_UNHEALTHY;
	default:
		return NULL;
	}
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
	p->drill_done_id = record(p, FO_EV_DRILL, FO_RESULT_FAILED,
				  "drill %s: command \"%s\" never reached the agent of %s: %s",
				  fo_drill_kind_name(p->drill_kind), cmd, p->m[member].name, strerror(-err))->id;
	arm_active_deadline_if_armed(p);
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

	cmd = drill_command(kind);
	if (cmd) {
		r = hv->ops->agent_command(hv, a->domid, cmd);
	} else if (kind == FO_DRILL_DESTROY) {
		r = hv->ops->destroy(hv, a->domid);
		if (r == 0)
			fo_pair_on_domains_changed(p);
	} else if (kind == FO_DRILL_MANUAL) {
		r = begin_switchover(p, FO_FAULT_MANUAL, p->drill_inject_ns, now_ns(p));
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
