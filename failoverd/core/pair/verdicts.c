/* SPDX-License-Identifier: MIT */
/*
 * verdicts.c - a pair's use of the failure verdicts (verdict.h): a failed
 * member is never trusted again, across switches and daemon restarts.
 */
#include "core/pair/pair_internal.h"

#include <stdio.h>
#include <string.h>

void fo_pair_member_instance(const struct fo_member *m, struct fo_instance *in)
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
	fo_pair_member_instance(&p->m[idx], &in);
	return fo_verdicts_find(p->env->verdicts, &in);
}

const struct fo_verdict *fo_pair_verdict_of(const struct fo_pair *p, const struct fo_member *m)
{
	return fo_pair_member_verdict(p, (int)(m - p->m));
}

/* In memory only: no syscall but the wall clock, so that it can be
 * recorded the moment the switch is over; fo_pair_persist() writes it. */
void fo_pair_mark_failed(struct fo_pair *p, struct fo_member *m, const char *why)
{
	struct fo_instance in;

	m->usable = false;
	if (!p->env->verdicts || m->domid == FO_DOMID_INVALID)
		return; /* gone: no instance left to distrust */
	fo_pair_member_instance(m, &in);
	fo_verdicts_set_failed(p->env->verdicts, p->cfg.name, &in, why);
}

void fo_pair_mark_active(struct fo_pair *p)
{
	struct fo_instance in;

	if (!p->env->verdicts || fo_pair_active(p)->domid == FO_DOMID_INVALID)
		return;
	fo_pair_member_instance(fo_pair_active(p), &in);
	fo_verdicts_set_active(p->env->verdicts, p->cfg.name, &in);
}

static void write_failed(struct fo_pair *p, const char *err)
{
	fo_err("pair %s: %s; a restarted failoverd would not know it", p->cfg.name, err);
	fo_pair_record(p, FO_EV_INFO, FO_RESULT_FAILED, "%s", err);
}

/* Write what changed, now. Never between a fault and the standby's
 * unpause. */
void fo_pair_persist_now(struct fo_pair *p)
{
	char err[FO_PATH_MAX + 128];

	if (!p->env->verdicts || !p->env->verdicts->dirty)
		return;
	if (fo_verdicts_save(p->env->verdicts, err, sizeof(err)) < 0)
		write_failed(p, err);
}

/*
 * Write what changed: at once outside a loop turn, else at the turn's end
 * (fo_pairs_write_held_verdicts), after every pair whose fault was due in
 * the same turn has switched. The file's write, fsync, rename and fsync of
 * the directory take a millisecond or more; done here after each switch,
 * they delayed the next pair's switch by that much, per pair.
 *
 * Why holding the write to the turn's end is safe: a daemon killed before
 * it is written restarts from the file as it was before the turn, and
 * every change a turn can make is safe to lose that way:
 * - a switch's verdict and new active (fo_pair_after_switch): the file still names
 *   the old active, which Xen shows paused beside the running standby, so
 *   the restart presumes it failed (presume_switched_away in arming.c),
 *   and never starts it or runs both; a switch that stopped safely left
 *   both paused, which a restart leaves to the operator;
 * - a verdict dropped (clear-failed, an instance gone or rebuilt): the
 *   restart keeps a verdict it could have dropped, the safe side, and a
 *   re-created instance has another domid, to which the old verdict never
 *   applied anyway;
 * - a verdict on an active that failed with no standby to take over
 *   (fo_pair_fail_over): nothing was switched, and a restart watches that active
 *   afresh (a dead one is found dead, a silent one times out again).
 * What leaves the daemon comes after the write: events and status are
 * published after the turn (daemon.c), a control request that changes
 * something is answered after fo_pairs_write_held_verdicts (io/), and a
 * pair is handed to an owner that switches without us (the module, Xen's
 * watch) only with its file written (fo_pair_kernel_try_arm: fo_pair_persist_now).
 */
void fo_pair_persist(struct fo_pair *p)
{
	if (!p->env->verdicts || !p->env->verdicts->dirty)
		return;
	if (p->env->in_turn) {
		p->save_held = p->env->save_held = true;
		return;
	}
	fo_pair_persist_now(p);
}

void fo_pairs_write_held_verdicts(struct fo_pair_env *env, struct fo_pair *pairs, size_t n)
{
	char err[FO_PATH_MAX + 128];
	bool said = false;
	int r = 0;

	if (!env->save_held)
		return;
	env->save_held = false;
	if (env->verdicts && env->verdicts->dirty)
		r = fo_verdicts_save(env->verdicts, err, sizeof(err));
	for (size_t i = 0; i < n; i++) {
		if (r < 0 && pairs[i].save_held) {
			write_failed(&pairs[i], err);
			said = true;
		}
		pairs[i].save_held = false;
	}
	if (r < 0 && !said) /* held by a pair a reload removed since */
		fo_err("%s; a restarted failoverd would not know it", err);
}

/* Member m must not be the standby: DEGRADED, saying why and how to clear
 * it (status shows the reason). */
void fo_pair_refuse_standby(struct fo_pair *p, struct fo_member *m, const struct fo_verdict *v)
{
	char what[96];

	m->usable = false;
	fo_verdict_describe(v, what, sizeof(what));
	fo_pair_become(p, FO_PAIR_DEGRADED, "standby %s %s; clear with failoverctl clear-failed %s", m->name, what, m->name);
}

int fo_pair_clear_failed(struct fo_pair *p, int idx)
{
	struct fo_member *m = &p->m[idx];
	int n = p->env->verdicts ? fo_verdicts_clear(p->env->verdicts, m->name) : 0;

	if (n) {
		fo_pair_record(p, FO_EV_INFO, FO_RESULT_INFO, "operator cleared the failure verdict on %s; `failoverctl arm %s` adopts it",
			       m->name, p->cfg.name);
		fo_pair_persist(p);
	}
	return n;
}
