/* SPDX-License-Identifier: MIT */
/*
 * domains.c - the simulated domains: lookup, state, handle, create and
 * destroy, Xen's counted pauses (ours, the module's, a third party's), and
 * the guarded pairs whose two running members a test counts as violations.
 */
#include "hv/sim/sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct sim_domain *sim_find_dom(struct fo_hv_sim *s, fo_domid_t domid)
{
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++)
		if (s->doms[i].used && s->doms[i].domid == domid)
			return &s->doms[i];
	return NULL;
}

/* Executing: unpaused and not stopped by a failover watch's fence, or
 * paused but with a vCPU that has not stopped yet (the watch's no-wait
 * pause, or that pause handed to the toolstack). */
static bool executing(const struct fo_hv_sim *s, const struct sim_domain *d)
{
	if (fo_dom_state_is_dead(d->state))
		return false;
	return sim_dom_still_runs(s, d) || (d->state == FO_DOM_RUNNING && !sim_dom_fence_stopped(s, d));
}

void sim_check_guards(struct fo_hv_sim *s)
{
	for (size_t i = 0; i < s->n_guards; i++) {
		struct sim_domain *a = sim_find_dom(s, s->guards[i][0]), *b = sim_find_dom(s, s->guards[i][1]);

		if (a && b && executing(s, a) && executing(s, b))
			s->violations++;
	}
}

struct sim_domain *sim_add_dom(struct fo_hv_sim *s, const char *name, enum fo_dom_state st)
{
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++)
		if (!s->doms[i].used) {
			struct sim_domain *d = &s->doms[i];
			memset(d, 0, sizeof(*d));
			d->used = true;
			snprintf(d->name, sizeof(d->name), "%s", name);
			d->domid = s->next_domid++;
			d->state = st;
			d->pause_count = st == FO_DOM_PAUSED; /* built paused, or unpaused by its builder */
			d->boot_id = 0x5151000000000000ull | d->domid;
			/* Unique per instance, in this simulator and across runs
			 * of it (a daemon on --backend sim keeps verdicts in a
			 * file): the same name and domid is another domain. */
			s->handles++;
			memcpy(d->handle, &s->handle_seed, 8);
			memcpy(d->handle + 8, &s->handles, 8);
			snprintf(d->command, sizeof(d->command), "%s", "");
			d->pool = 0;
			d->n_vcpus = 1;
			for (int c = 0; c < s->n_pcpus; c++)
				fo_cpumask_set(&d->hard[0], c);
			sim_fowatch_new_dom(d);
			return d;
		}
	return NULL;
}

int sim_lookup(struct fo_hv *hv, const char *name, fo_domid_t *ret)
{
	struct fo_hv_sim *s = sim_of(hv);
	int r = sim_enter(s, FO_SIM_LOOKUP, FO_DOMID_INVALID);

	if (r < 0)
		return r;
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++)
		if (s->doms[i].used && strcmp(s->doms[i].name, name) == 0) {
			*ret = s->doms[i].domid;
			return 0;
		}
	if (s->daemon_mode) {
		/* Trial mode: every domain a config names exists, booted. */
		struct sim_domain *d = sim_add_dom(s, name, FO_DOM_RUNNING);
		if (d) {
			*ret = d->domid;
			return 0;
		}
	}
	sim_set_result(s, -ESRCH);
	return -ESRCH;
}

int sim_get_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret)
{
	int r = sim_enter(sim_of(hv), FO_SIM_GET_STATE, domid);

	if (r < 0)
		return r;
	*ret = fo_sim_state(hv, domid);
	return 0;
}

int sim_get_handle(struct fo_hv *hv, fo_domid_t domid, uint8_t ret[16])
{
	struct sim_domain *d;
	int r = sim_enter_dom(sim_of(hv), FO_SIM_GET_HANDLE, domid, &d);

	if (r < 0)
		return r;
	memcpy(ret, d->handle, 16);
	return 0;
}

/* The run state a live domain's pause count gives it. A dead one keeps
 * its state: Xen counts its pauses, but it never runs again; so does a
 * suspended one until its resume (fo_sim_resume). */
static void sync_run_state(struct sim_domain *d)
{
	if (!fo_dom_state_is_dead(d->state) && d->state != FO_DOM_SUSPENDED)
		d->state = d->pause_count ? FO_DOM_PAUSED : FO_DOM_RUNNING;
}

int sim_count_pause(struct sim_domain *d)
{
	if (d->pause_count + 1 >= SIM_PAUSE_COUNT_MAX)
		return -EOVERFLOW;
	d->pause_count++;
	sync_run_state(d);
	return 0;
}

int sim_count_unpause(struct sim_domain *d)
{
	if (d->pause_count == 0)
		return -EINVAL;
	d->pause_count--;
	sync_run_state(d);
	return 0;
}

/* XEN_DOMCTL_unpausedomain, whoever issues it (us, the module, `xl
 * unpause`): patch 0008 refuses the standby of an armed failover watch. */
int sim_domctl_unpause(struct sim_domain *d)
{
	int r = sim_fowatch_may_unpause(d);

	return r ? r : sim_count_unpause(d);
}

/* The domain is destroyed (or vanishes): Xen's domain_kill() tears down
 * the failover watch it is part of first. */
void sim_drop_dom(struct fo_hv_sim *s, struct sim_domain *d)
{
	sim_fowatch_domain_kill(s, d);
	d->used = false;
}

static int change_run_state(struct fo_hv *hv, enum fo_sim_op op, fo_domid_t domid)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = sim_enter_dom(s, op, domid, &d);

	if (r < 0)
		return r;
	if (op == FO_SIM_UNPAUSE && sim_kpair_owning(s, domid)) {
		sim_set_result(s, -EBUSY); /* the module's one-owner guard */
		return -EBUSY;
	}
	if (op == FO_SIM_PAUSE && d->pause_is_noop)
		return 0; /* a lying hypervisor: yes, and nothing happened */
	r = op == FO_SIM_PAUSE ? sim_count_pause(d) : sim_domctl_unpause(d);
	sim_set_result(s, r);
	/* Only our own unpause can make us guilty of two running members;
	 * an external start is what we must then undo. */
	if (r == 0 && op == FO_SIM_UNPAUSE)
		sim_check_guards(s);
	return r;
}

int sim_pause(struct fo_hv *hv, fo_domid_t domid) { return change_run_state(hv, FO_SIM_PAUSE, domid); }
int sim_unpause(struct fo_hv *hv, fo_domid_t domid) { return change_run_state(hv, FO_SIM_UNPAUSE, domid); }

int sim_destroy(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d;
	int r = sim_enter_dom(sim_of(hv), FO_SIM_DESTROY, domid, &d);

	if (r < 0)
		return r;
	sim_drop_dom(sim_of(hv), d);
	return 0;
}

int sim_create(struct fo_hv *hv, const char *config_path)
{
	struct fo_hv_sim *s = sim_of(hv);
	const char *base = strrchr(config_path, '/');
	char name[FO_DOMNAME_MAX + 1];
	struct sim_domain *d;
	char *dot;
	int r = sim_enter(s, FO_SIM_CREATE, FO_DOMID_INVALID);

	if (r < 0)
		return r;
	/* The simulator names a created domain after its config file:
	 * /etc/xen/brake-a.cfg -> "brake-a". */
	snprintf(name, sizeof(name), "%s", base ? base + 1 : config_path);
	dot = strrchr(name, '.');
	if (dot)
		*dot = '\0';
	d = sim_add_dom(s, name, FO_DOM_RUNNING);
	if (!d)
		return -ENOSPC;
	/* The simulator builds at once; Xen reports later. */
	if (hv->cb.domain_created)
		hv->cb.domain_created(hv->cb.ctx, config_path, 0, "created");
	return 0;
}

fo_domid_t fo_sim_add_domain(struct fo_hv *hv, const char *name, enum fo_dom_state state)
{
	struct sim_domain *d = sim_add_dom(sim_of(hv), name, state);
	return d ? d->domid : FO_DOMID_INVALID;
}

enum fo_dom_state fo_sim_state(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (!d)
		return FO_DOM_GONE;
	/* As getdomaininfo on our patched Xen (rt-patches 0011, #36 item
	 * 6): "paused" once the domain stopped. A domain the failover watch
	 * holds fenced reads as paused once its vCPUs stopped, though its
	 * toolstack pause count is unchanged; one a vCPU of which still runs
	 * reads as running, though paused. */
	if (d->state == FO_DOM_RUNNING && sim_dom_fence_stopped(sim_of(hv), d))
		return FO_DOM_PAUSED;
	if (d->state == FO_DOM_PAUSED && sim_dom_still_runs(sim_of(hv), d))
		return FO_DOM_RUNNING;
	/* As getdomaininfo's flags: shut down for suspend and paused by the
	 * toolstack is paused (a resume leaves the pause in place). */
	if (d->state == FO_DOM_SUSPENDED && d->pause_count)
		return FO_DOM_PAUSED;
	return d->state;
}

/* `code`: Xen's SHUTDOWN_* when `state` is CRASHED, SHUTDOWN or SUSPENDED. */
static void set_state_code(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state state, unsigned code, bool notify)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = sim_find_dom(s, domid);

	if (d) {
		if (state == FO_DOM_GONE) {
			sim_drop_dom(s, d);
		} else {
			/* Forced, whatever the count: RUNNING is every pause
			 * undone (or a domain that was never paused), PAUSED
			 * at least one pause. fo_sim_external_* count. A
			 * suspend keeps the count (Xen's shutdown does). */
			d->state = state;
			if (state == FO_DOM_RUNNING)
				d->pause_count = 0;
			else if (state == FO_DOM_PAUSED && !d->pause_count)
				d->pause_count = 1;
			/* Xen's domain_kill() and domain_shutdown() hooks:
			 * before dom0 hears of it (@releaseDomain). */
			d->shutdown_code = code;
			if (state == FO_DOM_DYING)
				sim_fowatch_domain_kill(s, d);
			else if (state == FO_DOM_CRASHED || state == FO_DOM_SHUTDOWN || state == FO_DOM_SUSPENDED)
				sim_fowatch_domain_shutdown(s, d);
		}
	}
	if (notify)
		hv->cb.domains_changed(hv->cb.ctx);
}

void fo_sim_set_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state state, bool notify)
{
	set_state_code(hv, domid, state,
		       state == FO_DOM_CRASHED     ? FO_SIM_SHUTDOWN_CRASH
		       : state == FO_DOM_SUSPENDED ? FO_SIM_SHUTDOWN_SUSPEND
						   : FO_SIM_SHUTDOWN_POWEROFF,
		       notify);
}

void fo_sim_shutdown(struct fo_hv *hv, fo_domid_t domid, unsigned code, bool notify)
{
	set_state_code(hv, domid,
		       code == FO_SIM_SHUTDOWN_CRASH     ? FO_DOM_CRASHED
		       : code == FO_SIM_SHUTDOWN_SUSPEND ? FO_DOM_SUSPENDED
							 : FO_DOM_SHUTDOWN,
		       code, notify);
}

void fo_sim_resume(struct fo_hv *hv, fo_domid_t domid)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = sim_find_dom(s, domid);

	if (!d || d->state != FO_DOM_SUSPENDED)
		return;
	d->shutdown_code = 0;
	d->state = d->pause_count ? FO_DOM_PAUSED : FO_DOM_RUNNING;
	/* Not our call, but a pause we skipped shows here: the resumed
	 * domain runs beside the one we started. */
	sim_check_guards(s);
}

int fo_sim_external_pause(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	return d ? sim_count_pause(d) : -ESRCH;
}

int fo_sim_external_unpause(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	return d ? sim_domctl_unpause(d) : -ESRCH;
}

unsigned fo_sim_pause_count(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	return d ? d->pause_count : 0;
}

void fo_sim_pause_is_noop(struct fo_hv *hv, fo_domid_t domid, bool on)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);
	if (d)
		d->pause_is_noop = on;
}

void fo_sim_guard(struct fo_hv *hv, fo_domid_t a, fo_domid_t b)
{
	struct fo_hv_sim *s = sim_of(hv);
	if (s->n_guards < SIM_MAX_GUARDS) {
		s->guards[s->n_guards][0] = a;
		s->guards[s->n_guards][1] = b;
		s->n_guards++;
	}
}

unsigned fo_sim_violations(struct fo_hv *hv) { return sim_of(hv)->violations; }
