/* SPDX-License-Identifier: MIT */
/*
 * verdicts.c - a pair's use of the failure verdicts (verdict.h): a failed
 * member is never trusted again, across switches and daemon restarts.
 */
#include "core/pair/pair_internal.h"

#include <stdio.h>
#include <string.h>

void member_instance(const struct fo_member *m, struct fo_instance *in)
{
	memset(in, 0, sizeof(*in));
	snprintf(in->name, sizeof(in->name), "%s", m->name);
	in->domid = m->domid;
	in->has_handle = m->has_handle;
	memcpy(in->handle, m->handle, sizeof(in->handle));
}

const struct fo_verdict *fo_pair_member_verdict(const struct fo_pair *p, int idx)
{
	struct fo_instance in;

	if (!p->env->verdicts)
		return NULL;
	member_instance(&p->m[idx], &in);
	return fo_verdicts_find(p->env->verdicts, &in);
}

const struct fo_verdict *member_verdict(const struct fo_pair *p, const struct fo_member *m)
{
	return fo_pair_member_verdict(p, (int)(m - p->m));
}

/* In memory only: no syscall but the wall clock, so that it can be
 * recorded the moment the switch is over; persist() writes it. */
void mark_failed(struct fo_pair *p, struct fo_member *m, const char *why)
{
	struct fo_instance in;

	m->usable = false;
	if (!p->env->verdicts || m->domid == FO_DOMID_INVALID)
		return; /* gone: no instance left to distrust */
	member_instance(m, &in);
	fo_verdicts_set_failed(p->env->verdicts, p->cfg.name, &in, why);
}

void mark_active(struct fo_pair *p)
{
	struct fo_instance in;

	if (!p->env->verdicts || fo_pair_active(p)->domid == FO_DOMID_INVALID)
		return;
	member_instance(fo_pair_active(p), &in);
	fo_verdicts_set_active(p->env->verdicts, p->cfg.name, &in);
}

/* Write what changed. Never between a fault and the standby's unpause:
 * callers run after the switch (or outside one). */
void persist(struct fo_pair *p)
{
	char err[FO_PATH_MAX + 128];

	if (!p->env->verdicts || !p->env->verdicts->dirty)
		return;
	if (fo_verdicts_save(p->env->verdicts, err, sizeof(err)) < 0) {
		fo_err("pair %s: %s; a restarted failoverd would not know it", p->cfg.name, err);
		record(p, FO_EV_INFO, FO_RESULT_FAILED, "%s", err);
	}
}

/* Member m must not be the standby: DEGRADED, saying why and how to clear
 * it (status shows the reason). */
void refuse_standby(struct fo_pair *p, struct fo_member *m, const struct fo_verdict *v)
{
	char what[96];

	m->usable = false;
	fo_verdict_describe(v, what, sizeof(what));
	become(p, FO_PAIR_DEGRADED, "standby %s %s; clear with failoverctl clear-failed %s", m->name, what, m->name);
}

int fo_pair_clear_failed(struct fo_pair *p, int idx)
{
	struct fo_member *m = &p->m[idx];
	int n = p->env->verdicts ? fo_verdicts_clear(p->env->verdicts, m->name) : 0;

	if (n) {
		record(p, FO_EV_INFO, FO_RESULT_INFO, "operator cleared the failure verdict on %s; `failoverctl arm %s` adopts it",
		       m->name, p->cfg.name);
		persist(p);
	}
	return n;
}
