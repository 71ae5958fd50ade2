/* SPDX-License-Identifier: MIT */
/*
 * hv_sim.c - the simulated hypervisor (see hv_sim.h).
 *
 * In daemon mode (`--backend sim`) the clock is CLOCK_MONOTONIC and a
 * timerfd plays every running domain's guest agent, heartbeating every
 * 10 ms until a drill command stops it, so failoverd and failoverctl can be
 * tried end to end without Xen.
 */
#include "hv_sim.h"

#include "lib/limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define SIM_MAX_DOMAINS 128
/*
 * Xen's toolstack pause count (struct domain's controller_pause_count, Xen
 * 4.17 common/domain.c): XEN_DOMCTL_pausedomain increments it, unpausedomain
 * decrements it, getdomaininfo says "paused" while it is above 0, and a new
 * domain starts at 1 (libxl unpauses it last). Unpausing at 0 is -EINVAL; a
 * pause that would take it to 255 is refused with -EOVERFLOW (the limit
 * keeps it from overflowing the domain's general pause_count). The limit and
 * its errno are from our reading of _domain_pause_by_systemcontroller, not
 * checked against the source here: what matters is that a pause is counted
 * and one unpause undoes only one pause.
 */
#define SIM_PAUSE_COUNT_MAX 255
#define SIM_MAX_GUARDS 32
#define SIM_MAX_KPAIRS 16
#define SIM_MAX_KEVENTS 64
#define SIM_AGENT_PERIOD_NS (10ull * 1000000ull)
#define SIM_MAX_POOLS 8
#define SIM_DEFAULT_PCPUS 8

struct sim_domain {
	bool used;
	char name[FO_DOMNAME_MAX + 1];
	fo_domid_t domid;
	enum fo_dom_state state;     /* RUNNING/PAUSED follow pause_count while alive */
	unsigned pause_count;        /* toolstack pauses not undone (see SIM_PAUSE_COUNT_MAX) */
	uint8_t handle[16];          /* Xen's domain handle (UUID): unique per instance */
	bool watched;
	bool pause_is_noop;
	uint64_t sequence;
	uint64_t boot_id;
	enum fo_hb_app_status app_status;
	bool agent_stopped; /* daemon mode: a drill told the agent to stop */
	bool has_page;      /* `page`: what the agent last wrote, for notify-only and polls */
	struct fo_hb_page page;
	char role[16];
	char command[32];
	int pool;                 /* index into pools[] */
	unsigned n_vcpus;
	struct fo_cpumask hard[FO_SIM_MAX_VCPUS];
};

struct sim_pool {
	bool used;
	char name[FO_HV_POOL_NAME_MAX + 1];
	char sched[16];
	struct fo_cpumask cpus;
};

struct sim_fault {
	int err;
	int count;
	fo_domid_t domid;
};

/* A pair armed in the simulated module. */
struct sim_kpair {
	bool used;
	bool firing;
	uint32_t id;
	fo_domid_t active, standby;
	uint64_t timeout_ns, armed_ns, last_notify_ns, deadline_ns, notifications;
	uint64_t poll_ns, next_poll_ns; /* fo_sim_kernel_poll_pages: the active's page is read then */
};

struct fo_hv_sim {
	struct fo_hv base;
	bool kernel;
	struct fo_hv_ops kernel_ops; /* sim_ops + the module's ops (fo_sim_enable_kernel) */
	bool kernel_hold;
	bool kernel_stall;
	bool kernel_no_list; /* fo_sim_kernel_without_list */
	bool kernel_poll;    /* fo_sim_kernel_poll_pages */
	uint64_t poll_late_ns; /* fo_sim_kernel_poll_late: the next due poll waits this long */
	struct sim_kpair kpairs[SIM_MAX_KPAIRS];
	fo_domid_t reclaim[SIM_MAX_KPAIRS]; /* DISARMed actives whose channel settle() binds */
	size_t n_reclaim;
	struct fo_hv_kevent kevents[SIM_MAX_KEVENTS];
	size_t n_kevents;
	bool daemon_mode;
	uint64_t handle_seed;  /* first half of every domain handle: this simulator */
	uint64_t handles;      /* second half: domains made so far */
	uint64_t clock_ns;
	fo_domid_t next_domid;
	struct sim_domain doms[SIM_MAX_DOMAINS];
	struct sim_fault faults[FO_SIM_OP_COUNT];
	uint64_t delay_ns[FO_SIM_OP_COUNT];
	fo_domid_t vanish_domid[FO_SIM_OP_COUNT];
	bool vanish_armed[FO_SIM_OP_COUNT];
	struct fo_sim_call log[FO_SIM_LOG_MAX];
	size_t n_log;
	fo_domid_t guards[SIM_MAX_GUARDS][2];
	size_t n_guards;
	unsigned violations;
	int agent_tfd;
	bool fds_changed;
	int n_pcpus;
	struct sim_pool pools[SIM_MAX_POOLS]; /* [0] is Pool-0 */
};

static struct fo_hv_sim *sim_of(struct fo_hv *hv) { return (struct fo_hv_sim *)hv; }

static struct sim_domain *find_dom(struct fo_hv_sim *s, fo_domid_t domid)
{
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++)
		if (s->doms[i].used && s->doms[i].domid == domid)
			return &s->doms[i];
	return NULL;
}

static uint64_t sim_now(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct timespec ts;

	if (!s->daemon_mode)
		return s->clock_ns;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void check_guards(struct fo_hv_sim *s)
{
	for (size_t i = 0; i < s->n_guards; i++) {
		struct sim_domain *a = find_dom(s, s->guards[i][0]), *b = find_dom(s, s->guards[i][1]);
		if (a && b && a->state == FO_DOM_RUNNING && b->state == FO_DOM_RUNNING)
			s->violations++;
	}
}

/* Common prologue of every call: log it, apply delay / vanish / injected
 * failure. Returns 0 to go on, or the injected -errno. */
static void kernel_timers(struct fo_hv_sim *s);

static int enter(struct fo_hv_sim *s, enum fo_sim_op op, fo_domid_t domid)
{
	struct sim_fault *f = &s->faults[op];
	int r = 0;

	s->clock_ns += s->delay_ns[op];
	/* The module's hrtimer does not wait for our call to return: a pair
	 * may fire while a slow call (DISARM racing it) is under way. */
	if (s->delay_ns[op])
		kernel_timers(s);
	if (s->vanish_armed[op] && s->vanish_domid[op] == domid) {
		struct sim_domain *d = find_dom(s, domid);
		s->vanish_armed[op] = false;
		if (d)
			d->used = false;
	}
	if (f->count > 0 && (f->domid == FO_SIM_ANY_DOMAIN || f->domid == domid)) {
		f->count--;
		r = f->err;
	}
	/* Like the Xen backend: no domain can have a reserved id (FO_DOMID_INVALID is
	 * Xen's DOMID_INVALID), so a call about one is refused, not answered
	 * "gone": a caller that passes one must have handled that itself. */
	if (!r && domid >= FO_DOMID_INVALID && (op == FO_SIM_GET_STATE || op == FO_SIM_PAUSE || op == FO_SIM_UNPAUSE))
		r = -EINVAL;
	if (s->n_log < FO_SIM_LOG_MAX)
		s->log[s->n_log++] = (struct fo_sim_call){ .op = op, .domid = domid, .at_ns = s->clock_ns, .result = r };
	return r;
}

static void set_result(struct fo_hv_sim *s, int r)
{
	if (s->n_log)
		s->log[s->n_log - 1].result = r;
}

/* enter() for an operation on an existing domain: *ret_d is the domain, or
 * the call fails with the injected error or -ESRCH. */
static int enter_dom(struct fo_hv_sim *s, enum fo_sim_op op, fo_domid_t domid, struct sim_domain **ret_d)
{
	int r = enter(s, op, domid);

	if (r < 0)
		return r;
	*ret_d = find_dom(s, domid);
	if (!*ret_d) {
		set_result(s, -ESRCH);
		return -ESRCH;
	}
	return 0;
}

static struct sim_domain *add_dom(struct fo_hv_sim *s, const char *name, enum fo_dom_state st)
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
			return d;
		}
	return NULL;
}

static int sim_lookup(struct fo_hv *hv, const char *name, fo_domid_t *ret)
{
	struct fo_hv_sim *s = sim_of(hv);
	int r = enter(s, FO_SIM_LOOKUP, FO_DOMID_INVALID);

	if (r < 0)
		return r;
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++)
		if (s->doms[i].used && strcmp(s->doms[i].name, name) == 0) {
			*ret = s->doms[i].domid;
			return 0;
		}
	if (s->daemon_mode) {
		/* Trial mode: every domain a config names exists, booted. */
		struct sim_domain *d = add_dom(s, name, FO_DOM_RUNNING);
		if (d) {
			*ret = d->domid;
			return 0;
		}
	}
	set_result(s, -ESRCH);
	return -ESRCH;
}

static int sim_get_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state *ret)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = enter(s, FO_SIM_GET_STATE, domid);

	if (r < 0)
		return r;
	d = find_dom(s, domid);
	*ret = d ? d->state : FO_DOM_GONE;
	return 0;
}

static int sim_get_handle(struct fo_hv *hv, fo_domid_t domid, uint8_t ret[16])
{
	struct sim_domain *d;
	int r = enter_dom(sim_of(hv), FO_SIM_GET_HANDLE, domid, &d);

	if (r < 0)
		return r;
	memcpy(ret, d->handle, 16);
	return 0;
}

static struct sim_kpair *kpair_owning(struct fo_hv_sim *s, fo_domid_t domid)
{
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
		if (s->kpairs[i].used && (s->kpairs[i].active == domid || s->kpairs[i].standby == domid))
			return &s->kpairs[i];
	return NULL;
}

/* The run state a live domain's pause count gives it. A dead one keeps
 * its state: Xen counts its pauses, but it never runs again. */
static void sync_run_state(struct sim_domain *d)
{
	if (!fo_dom_state_is_dead(d->state))
		d->state = d->pause_count ? FO_DOM_PAUSED : FO_DOM_RUNNING;
}

static int count_pause(struct sim_domain *d)
{
	if (d->pause_count + 1 >= SIM_PAUSE_COUNT_MAX)
		return -EOVERFLOW;
	d->pause_count++;
	sync_run_state(d);
	return 0;
}

static int count_unpause(struct sim_domain *d)
{
	if (d->pause_count == 0)
		return -EINVAL;
	d->pause_count--;
	sync_run_state(d);
	return 0;
}

static int change_run_state(struct fo_hv *hv, enum fo_sim_op op, fo_domid_t domid)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = enter_dom(s, op, domid, &d);

	if (r < 0)
		return r;
	if (op == FO_SIM_UNPAUSE && kpair_owning(s, domid)) {
		set_result(s, -EBUSY); /* the module's one-owner guard */
		return -EBUSY;
	}
	if (op == FO_SIM_PAUSE && d->pause_is_noop)
		return 0; /* a lying hypervisor: yes, and nothing happened */
	r = op == FO_SIM_PAUSE ? count_pause(d) : count_unpause(d);
	set_result(s, r);
	/* Only our own unpause can make us guilty of two running members;
	 * an external start is what we must then undo. */
	if (r == 0 && op == FO_SIM_UNPAUSE)
		check_guards(s);
	return r;
}

static int sim_pause(struct fo_hv *hv, fo_domid_t domid) { return change_run_state(hv, FO_SIM_PAUSE, domid); }
static int sim_unpause(struct fo_hv *hv, fo_domid_t domid) { return change_run_state(hv, FO_SIM_UNPAUSE, domid); }

/* ---- placement ---- */

static void all_cpus(struct fo_hv_sim *s, struct fo_cpumask *m)
{
	memset(m, 0, sizeof(*m));
	for (int c = 0; c < s->n_pcpus; c++)
		fo_cpumask_set(m, c);
}

static bool intersects(const struct fo_cpumask *a, const struct fo_cpumask *b)
{
	for (size_t i = 0; i < sizeof(a->w) / sizeof(a->w[0]); i++)
		if (a->w[i] & b->w[i])
			return true;
	return false;
}

static int pool_find(struct fo_hv_sim *s, const char *name)
{
	for (int i = 0; i < SIM_MAX_POOLS; i++)
		if (s->pools[i].used && strcmp(s->pools[i].name, name) == 0)
			return i;
	return -1;
}

static int pool_of_cpu(struct fo_hv_sim *s, int cpu)
{
	for (int i = 0; i < SIM_MAX_POOLS; i++)
		if (s->pools[i].used && fo_cpumask_test(&s->pools[i].cpus, cpu))
			return i;
	return -1;
}

static void reset_affinity(struct fo_hv_sim *s, struct sim_domain *d)
{
	for (unsigned v = 0; v < FO_SIM_MAX_VCPUS; v++)
		all_cpus(s, &d->hard[v]);
}

/* Xen refuses a hard affinity that has no pCPU of the domain's pool. */
static int pin_one(struct fo_hv_sim *s, struct sim_domain *d, unsigned vcpu, const struct fo_cpumask *m)
{
	if (vcpu >= d->n_vcpus)
		return -EINVAL;
	if (!intersects(m, &s->pools[d->pool].cpus))
		return -EINVAL;
	d->hard[vcpu] = *m;
	return 0;
}

static int sim_set_affinity(struct fo_hv *hv, fo_domid_t domid, const int *pcpus, size_t n)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct fo_cpumask m;
	struct sim_domain *d;
	int r = enter_dom(s, FO_SIM_SET_AFFINITY, domid, &d);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (pcpus[i] < 0 || pcpus[i] >= s->n_pcpus) {
			set_result(s, -EINVAL);
			return -EINVAL;
		}
	fo_cpumask_from_list(&m, pcpus, n);
	for (unsigned v = 0; v < d->n_vcpus; v++) {
		r = pin_one(s, d, v, &m);
		if (r < 0) {
			set_result(s, r);
			return r;
		}
	}
	return 0;
}

static int pool_create(struct fo_hv_sim *s, const char *name, const char *sched, const struct fo_cpumask *cpus,
		       char *why, size_t whylen)
{
	char text[64];
	int slot = -1;

	for (int c = 0; c < FO_HV_MAX_CPUS; c++) {
		int owner;

		if (!fo_cpumask_test(cpus, c))
			continue;
		if (c >= s->n_pcpus) {
			snprintf(why, whylen, "pCPU %d does not exist (this host has pCPUs 0-%d)", c, s->n_pcpus - 1);
			return -ENODEV;
		}
		owner = pool_of_cpu(s, c);
		if (owner > 0) {
			snprintf(why, whylen, "pCPU %d is in cpupool %s", c, s->pools[owner].name);
			return -EBUSY;
		}
	}
	for (int i = 1; i < SIM_MAX_POOLS && slot < 0; i++)
		if (!s->pools[i].used)
			slot = i;
	if (slot < 0) {
		snprintf(why, whylen, "no room for another pool");
		return -ENOSPC;
	}
	for (size_t i = 0; i < sizeof(cpus->w) / sizeof(cpus->w[0]); i++)
		s->pools[0].cpus.w[i] &= ~cpus->w[i];
	s->pools[slot].used = true;
	snprintf(s->pools[slot].name, sizeof(s->pools[slot].name), "%s", name);
	snprintf(s->pools[slot].sched, sizeof(s->pools[slot].sched), "%s", sched);
	s->pools[slot].cpus = *cpus;
	fo_cpumask_format(cpus, text, sizeof(text));
	snprintf(why, whylen, "created with pCPUs %s", text);
	return 0;
}

static int sim_cpupool_ensure(struct fo_hv *hv, const char *name, const char *sched, const struct fo_cpumask *cpus,
			      char *why, size_t whylen)
{
	struct fo_hv_sim *s = sim_of(hv);
	char have[64];
	int r = enter(s, FO_SIM_CPUPOOL_ENSURE, FO_DOMID_INVALID), i;

	if (r < 0) {
		snprintf(why, whylen, "injected failure");
		return r;
	}
	i = pool_find(s, name);
	if (i >= 0) {
		if (strcmp(s->pools[i].sched, sched) == 0 && fo_cpumask_equal(&s->pools[i].cpus, cpus)) {
			snprintf(why, whylen, "adopted the existing pool");
			return 0;
		}
		fo_cpumask_format(&s->pools[i].cpus, have, sizeof(have));
		snprintf(why, whylen, "a cpupool of that name exists with scheduler %s and pCPUs %s", s->pools[i].sched,
			 have);
		set_result(s, -EEXIST);
		return -EEXIST;
	}
	r = pool_create(s, name, sched, cpus, why, whylen);
	set_result(s, r);
	return r;
}

static int sim_cpupool_get(struct fo_hv *hv, const char *name, struct fo_hv_pool *ret)
{
	struct fo_hv_sim *s = sim_of(hv);
	int r = enter(s, FO_SIM_CPUPOOL_GET, FO_DOMID_INVALID), i;

	if (r < 0)
		return r;
	i = pool_find(s, name);
	if (i < 0) {
		set_result(s, -ENOENT);
		return -ENOENT;
	}
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", s->pools[i].name);
	snprintf(ret->sched, sizeof(ret->sched), "%s", s->pools[i].sched);
	ret->cpus = s->pools[i].cpus;
	for (size_t j = 0; j < SIM_MAX_DOMAINS; j++)
		if (s->doms[j].used && s->doms[j].pool == i)
			ret->n_domains++;
	return 0;
}

static int sim_cpupool_move(struct fo_hv *hv, fo_domid_t domid, const char *name)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = enter_dom(s, FO_SIM_CPUPOOL_MOVE, domid, &d), i;

	if (r < 0)
		return r;
	i = pool_find(s, name);
	if (i < 0) {
		set_result(s, -ENOENT);
		return -ENOENT;
	}
	if (d->pool != i) {
		d->pool = i;
		reset_affinity(s, d);
	}
	return 0;
}

static int sim_get_placement(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_placement *ret)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = enter_dom(s, FO_SIM_GET_PLACEMENT, domid, &d);

	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->pool, sizeof(ret->pool), "%s", s->pools[d->pool].name);
	ret->n_vcpus = d->n_vcpus;
	for (unsigned v = 0; v < d->n_vcpus && v < FO_HV_MAX_VCPUS; v++)
		ret->hard[v] = d->hard[v];
	return 0;
}

static int sim_pin_vcpu(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const struct fo_cpumask *hard)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = enter_dom(s, FO_SIM_PIN_VCPU, domid, &d);

	if (r < 0)
		return r;
	r = pin_one(s, d, vcpu, hard);
	set_result(s, r);
	return r;
}

static int sim_destroy(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d;
	int r = enter_dom(sim_of(hv), FO_SIM_DESTROY, domid, &d);

	if (r < 0)
		return r;
	d->used = false;
	return 0;
}

static int sim_create(struct fo_hv *hv, const char *config_path)
{
	struct fo_hv_sim *s = sim_of(hv);
	const char *base = strrchr(config_path, '/');
	char name[FO_DOMNAME_MAX + 1];
	struct sim_domain *d;
	char *dot;
	int r = enter(s, FO_SIM_CREATE, FO_DOMID_INVALID);

	if (r < 0)
		return r;
	/* The simulator names a created domain after its config file:
	 * /etc/xen/brake-a.cfg -> "brake-a". */
	snprintf(name, sizeof(name), "%s", base ? base + 1 : config_path);
	dot = strrchr(name, '.');
	if (dot)
		*dot = '\0';
	d = add_dom(s, name, FO_DOM_RUNNING);
	if (!d)
		return -ENOSPC;
	/* The simulator builds at once; Xen reports later. */
	if (hv->cb.domain_created)
		hv->cb.domain_created(hv->cb.ctx, config_path, 0, "created");
	return 0;
}

static int sim_watch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d;
	int r = enter_dom(sim_of(hv), FO_SIM_WATCH_MEMBER, domid, &d);

	if (r < 0)
		return r;
	d->watched = true;
	return 0;
}

static void sim_unwatch_member(struct fo_hv *hv, fo_domid_t domid)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = find_dom(s, domid);

	enter(s, FO_SIM_UNWATCH_MEMBER, domid);

	if (d)
		d->watched = false;
}

static int sim_set_role(struct fo_hv *hv, fo_domid_t domid, const char *role)
{
	struct sim_domain *d;
	int r = enter_dom(sim_of(hv), FO_SIM_SET_ROLE, domid, &d);

	if (r < 0)
		return r;
	snprintf(d->role, sizeof(d->role), "%s", role);
	return 0;
}

static int sim_agent_command(struct fo_hv *hv, fo_domid_t domid, const char *cmd)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = enter_dom(s, FO_SIM_AGENT_COMMAND, domid, &d);

	if (r < 0)
		return r;
	snprintf(d->command, sizeof(d->command), "%s", cmd);
	/* The simulated agent obeys at once. */
	d->agent_stopped = strcmp(cmd, FO_HB_CMD_STOP) == 0 || strcmp(cmd, FO_HB_CMD_FREEZE) == 0;
	d->app_status = strcmp(cmd, FO_HB_CMD_UNHEALTHY) == 0 ? FO_HB_APP_UNHEALTHY : FO_HB_APP_HEALTHY;
	if (strcmp(cmd, FO_HB_CMD_CRASH) == 0 && s->daemon_mode)
		fo_sim_set_state(hv, domid, FO_DOM_CRASHED, true);
	return 0;
}

static size_t sim_get_fds(struct fo_hv *hv, int *fds, size_t max)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (s->agent_tfd < 0 || max < 1)
		return 0;
	fds[0] = s->agent_tfd;
	return 1;
}

static bool sim_fds_changed(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);
	bool c = s->fds_changed;

	s->fds_changed = false;
	return c;
}

static void sim_dispatch(struct fo_hv *hv, int fd)
{
	struct fo_hv_sim *s = sim_of(hv);
	uint64_t expirations;

	if (fd != s->agent_tfd || read(fd, &expirations, sizeof(expirations)) != sizeof(expirations))
		return;
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++) {
		struct sim_domain *d = &s->doms[i];
		if (d->used && d->watched && d->state == FO_DOM_RUNNING && !d->agent_stopped)
			fo_sim_heartbeat_status(hv, d->domid, d->app_status ? d->app_status : FO_HB_APP_HEALTHY);
	}
}

/* ---- the simulated kernel module ---- */

static struct sim_kpair *kpair_find(struct fo_hv_sim *s, uint32_t id)
{
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
		if (s->kpairs[i].used && s->kpairs[i].id == id)
			return &s->kpairs[i];
	return NULL;
}

static int kpair_arm(struct fo_hv_sim *s, uint32_t id, fo_domid_t active, fo_domid_t standby, uint32_t timeout_ms,
		     uint32_t poll_ms)
{
	struct sim_kpair *k = NULL;

	if (active == standby || active == 0 || standby == 0 || timeout_ms == 0)
		return -EINVAL;
	if (!find_dom(s, active) || !find_dom(s, standby))
		return -ESRCH;
	if (kpair_find(s, id) || kpair_owning(s, active) || kpair_owning(s, standby))
		return -EBUSY;
	for (size_t i = 0; i < SIM_MAX_KPAIRS && !k; i++)
		if (!s->kpairs[i].used)
			k = &s->kpairs[i];
	if (!k)
		return -ENOSPC;
	*k = (struct sim_kpair){ .used = true, .id = id, .active = active, .standby = standby,
				 .timeout_ns = (uint64_t)timeout_ms * 1000000ull };
	k->armed_ns = k->last_notify_ns = s->clock_ns;
	k->deadline_ns = s->clock_ns + k->timeout_ns;
	k->poll_ns = (uint64_t)(poll_ms ? poll_ms : 10) * 1000000ull;
	k->next_poll_ns = s->clock_ns + k->poll_ns;
	return 0;
}

static int sim_kernel_arm(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			  uint32_t timeout_ms, uint32_t poll_ms)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = enter(s, FO_SIM_KERNEL_ARM, active);

	if (r < 0)
		return r;
	/* As hv_kmod.c: the active's channel must be attached to be lent. */
	d = find_dom(s, active);
	if (d && !d->watched)
		r = -ENOENT;
	if (r == 0)
		r = kpair_arm(s, pair_id, active, standby, timeout_ms, poll_ms);
	set_result(s, r);
	return r;
}

static int sim_kernel_disarm(struct fo_hv *hv, uint32_t pair_id)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_kpair *k;
	int r = enter(s, FO_SIM_KERNEL_DISARM, FO_DOMID_INVALID);

	if (r < 0)
		return r;
	k = kpair_find(s, pair_id);
	if (!k)
		r = -ENOENT;
	else if (k->firing)
		r = -EALREADY;
	else
		k->used = false;
	set_result(s, r);
	/* As hv_kmod.c: the active's channel is ours again, bound at the
	 * next settle(), off the switch path. */
	if (r == 0 && s->n_reclaim < SIM_MAX_KPAIRS)
		s->reclaim[s->n_reclaim++] = k->active;
	return r;
}

static void sim_settle(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	for (size_t i = 0; i < s->n_reclaim; i++)
		enter(s, FO_SIM_RECLAIM, s->reclaim[i]);
	s->n_reclaim = 0;
}

static struct fo_hv_karm karm_of(const struct sim_kpair *k)
{
	return (struct fo_hv_karm){ .pair_id = k->id, .active = k->active, .standby = k->standby,
				    .timeout_ns = k->timeout_ns, .armed_ns = k->armed_ns,
				    .last_notify_ns = k->last_notify_ns, .deadline_ns = k->deadline_ns,
				    .notifications = k->notifications, .firing = k->firing };
}

static int sim_kernel_list(struct fo_hv *hv, struct fo_hv_karm *ret, size_t max)
{
	struct fo_hv_sim *s = sim_of(hv);
	size_t n = 0;

	if (s->kernel_no_list)
		return -EOPNOTSUPP; /* as a module from before LIST */
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
		if (s->kpairs[i].used) {
			if (n < max)
				ret[n] = karm_of(&s->kpairs[i]);
			n++;
		}
	return (int)n;
}

static int sim_kernel_adopt(struct fo_hv *hv, uint32_t pair_id, uint32_t poll_ms, struct fo_hv_karm *ret)
{
	struct sim_kpair *k = kpair_find(sim_of(hv), pair_id);

	if (!k)
		return -ENOENT;
	if (poll_ms)
		k->poll_ns = (uint64_t)poll_ms * 1000000ull; /* as hv_kmod.c lends it: read every poll_ms */
	if (ret)
		*ret = karm_of(k);
	return 0;
}

static void sim_kernel_poll_events(struct fo_hv *hv) { fo_sim_kernel_deliver(hv); }

static enum fo_dom_state sim_state_of(struct fo_hv_sim *s, fo_domid_t domid)
{
	struct sim_domain *d = find_dom(s, domid);
	return d ? d->state : FO_DOM_GONE;
}

/* The module's domctls in the model: Xen's counted pauses, not logged as
 * the daemon's own calls (the module makes them, not failoverd). */
static int kmod_model_pause(void *ctx, uint32_t domid)
{
	struct sim_domain *d = find_dom(ctx, domid);

	if (!d)
		return -ESRCH;
	return d->pause_is_noop ? 0 : count_pause(d);
}

static int kmod_model_unpause(void *ctx, uint32_t domid)
{
	struct sim_domain *d = find_dom(ctx, domid);
	int r;

	if (!d)
		return -ESRCH;
	r = count_unpause(d);
	if (r == 0)
		check_guards(ctx);
	return r;
}

static int kmod_model_get_state(void *ctx, uint32_t domid, uint32_t *state)
{
	*state = (uint32_t)sim_state_of(ctx, domid);
	return 0;
}

static uint64_t kmod_model_now_ns(void *ctx) { return ((struct fo_hv_sim *)ctx)->clock_ns; }

static const struct fo_fenced_ops kmod_model_ops = {
	.pause = kmod_model_pause,
	.unpause = kmod_model_unpause,
	.get_state = kmod_model_get_state,
	.now_ns = kmod_model_now_ns,
};

/* The module's timer fired: the module's own fenced_switch.c, then the event. */
static void kpair_fire(struct fo_hv_sim *s, struct sim_kpair *k)
{
	struct fo_hv_kevent ev = { .pair_id = k->id, .active = k->active, .standby = k->standby,
				   .last_notify_ns = k->last_notify_ns, .deadline_ns = k->deadline_ns,
				   .detected_ns = k->deadline_ns, .notifications = k->notifications };
	struct fo_fenced_outcome o;

	if (s->n_log < FO_SIM_LOG_MAX)
		s->log[s->n_log++] = (struct fo_sim_call){ .op = FO_SIM_KERNEL_SWITCH, .domid = k->active,
							   .at_ns = s->clock_ns };
	k->used = false;
	fo_fenced_switch(&kmod_model_ops, s, k->active, false, k->standby, &o);
	ev.result = o.result == FO_SWITCH_OK	   ? FO_HV_KSWITCH_OK
		    : o.result == FO_SWITCH_FAILED ? FO_HV_KSWITCH_FAILED
						   : FO_HV_KSWITCH_ABORTED;
	ev.error = o.result == FO_SWITCH_OK ? 0 : -EIO;
	ev.active_state = (enum fo_dom_state)o.from_state;
	ev.standby_state = (enum fo_dom_state)o.to_state;
	ev.refenced = o.why == FO_FENCED_WHY_REFENCED || o.why == FO_FENCED_WHY_BOTH_PAUSED ||
		      o.why == FO_FENCED_WHY_BOTH_MAY_RUN;
	ev.pause_issued_ns = o.pause_issued_ns;
	ev.pause_done_ns = o.pause_done_ns;
	ev.unpause_issued_ns = o.unpause_issued_ns;
	ev.unpause_done_ns = o.unpause_done_ns;
	if (s->n_kevents < SIM_MAX_KEVENTS)
		s->kevents[s->n_kevents++] = ev;
}

/* The module's hrtimer, on the virtual clock. */
static void kernel_timers(struct fo_hv_sim *s)
{
	if (s->kernel_stall)
		return;
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++) {
		struct sim_kpair *k = &s->kpairs[i];

		if (!k->used || (!k->firing && s->clock_ns < k->deadline_ns))
			continue;
		k->firing = true;
		if (!s->kernel_hold)
			kpair_fire(s, k);
	}
}

/* The guard on the switch: the real module's SWITCH refuses an armed
 * pair's members; anything else falls back to the caller's sequence. */
static int sim_switch_fenced(struct fo_hv *hv, fo_domid_t from, fo_domid_t to, struct fo_fenced_outcome *out)
{
	struct fo_hv_sim *s = sim_of(hv);

	return kpair_owning(s, from) || kpair_owning(s, to) ? -EBUSY : -EOPNOTSUPP;
}

static void sim_free(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (s->agent_tfd >= 0)
		close(s->agent_tfd);
	free(s);
}

static const char *sim_switch_path(struct fo_hv *hv)
{
	return "sim";
}

static const struct fo_hv_ops sim_ops = {
	.name = "sim",
	.now_ns = sim_now,
	.lookup = sim_lookup,
	.get_state = sim_get_state,
	.get_handle = sim_get_handle,
	.pause = sim_pause,
	.unpause = sim_unpause,
	.set_affinity = sim_set_affinity,
	.destroy = sim_destroy,
	.create = sim_create,
	.watch_member = sim_watch_member,
	.unwatch_member = sim_unwatch_member,
	.set_role = sim_set_role,
	.agent_command = sim_agent_command,
	.get_fds = sim_get_fds,
	.fds_changed = sim_fds_changed,
	.dispatch = sim_dispatch,
	.free = sim_free,
	.switch_path = sim_switch_path,
	.cpupool_ensure = sim_cpupool_ensure,
	.cpupool_get = sim_cpupool_get,
	.cpupool_move = sim_cpupool_move,
	.get_placement = sim_get_placement,
	.pin_vcpu = sim_pin_vcpu,
};


int fo_hv_sim_new(const struct fo_hv_callbacks *cb, struct fo_hv **ret)
{
	struct fo_hv_sim *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->base.ops = &sim_ops;
	s->base.cb = *cb;
	s->clock_ns = 1000000000ull;
	s->next_domid = 1;
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		s->handle_seed = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
	}
	s->agent_tfd = -1;
	s->n_pcpus = SIM_DEFAULT_PCPUS;
	s->pools[0].used = true;
	snprintf(s->pools[0].name, sizeof(s->pools[0].name), "Pool-0");
	snprintf(s->pools[0].sched, sizeof(s->pools[0].sched), "credit2");
	all_cpus(s, &s->pools[0].cpus);
	/* dom0: the daemon's own domain, vCPUs 0..1 (daemon.dom0_vcpu_pcpu). */
	{
		struct sim_domain *d0 = add_dom(s, "Domain-0", FO_DOM_RUNNING);
		d0->domid = 0;
		s->next_domid = 1;
		d0->n_vcpus = 2;
		reset_affinity(s, d0);
	}
	*ret = &s->base;
	return 0;
}

int fo_hv_sim_new_for_daemon(const struct fo_hv_callbacks *cb, struct fo_hv **ret)
{
	struct itimerspec its = { .it_interval = { 0, SIM_AGENT_PERIOD_NS }, .it_value = { 0, SIM_AGENT_PERIOD_NS } };
	struct fo_hv_sim *s;
	int r = fo_hv_sim_new(cb, ret);

	if (r < 0)
		return r;
	s = sim_of(*ret);
	s->daemon_mode = true;
	s->agent_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->agent_tfd < 0 || timerfd_settime(s->agent_tfd, 0, &its, NULL) < 0) {
		r = -errno;
		sim_free(*ret);
		return r;
	}
	s->fds_changed = true;
	return 0;
}

/* ---- test API ---- */

fo_domid_t fo_sim_add_domain(struct fo_hv *hv, const char *name, enum fo_dom_state state)
{
	struct sim_domain *d = add_dom(sim_of(hv), name, state);
	return d ? d->domid : FO_DOMID_INVALID;
}

enum fo_dom_state fo_sim_state(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);
	return d ? d->state : FO_DOM_GONE;
}

void fo_sim_set_state(struct fo_hv *hv, fo_domid_t domid, enum fo_dom_state state, bool notify)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = find_dom(s, domid);

	if (d) {
		if (state == FO_DOM_GONE) {
			d->used = false;
		} else {
			/* Forced, whatever the count: RUNNING is every pause
			 * undone (or a domain that was never paused), PAUSED
			 * at least one pause. fo_sim_external_* count. */
			d->state = state;
			if (state == FO_DOM_RUNNING)
				d->pause_count = 0;
			else if (state == FO_DOM_PAUSED && !d->pause_count)
				d->pause_count = 1;
		}
	}
	if (notify)
		hv->cb.domains_changed(hv->cb.ctx);
}

int fo_sim_external_pause(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);

	return d ? count_pause(d) : -ESRCH;
}

int fo_sim_external_unpause(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);

	return d ? count_unpause(d) : -ESRCH;
}

unsigned fo_sim_pause_count(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);

	return d ? d->pause_count : 0;
}

uint64_t fo_sim_now(struct fo_hv *hv) { return sim_now(hv); }

static bool kernel_holds_port(struct fo_hv_sim *s, fo_domid_t domid)
{
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
		if (s->kpairs[i].used && s->kpairs[i].active == domid)
			return true;
	return false;
}

static void deliver_page(struct fo_hv *hv, struct sim_domain *d)
{
	struct fo_hb_page copy = d->page;

	hv->cb.heartbeat(hv->cb.ctx, d->domid, &copy);
}

/* fo_sim_kernel_poll_pages: the Xen backend's poll timer over lent pages.
 * Like a periodic timerfd, ticks missed while the clock jumped collapse
 * into one read. */
static void kernel_page_polls(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	if (!s->kernel_poll)
		return;
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++) {
		struct sim_kpair *k = &s->kpairs[i];
		struct sim_domain *d;

		if (!k->used || s->clock_ns < k->next_poll_ns)
			continue;
		if (s->poll_late_ns) {
			/* A loaded dom0: the poll runs late (and its grid with it). */
			k->next_poll_ns += s->poll_late_ns;
			s->poll_late_ns = 0;
			continue;
		}
		while (k->next_poll_ns <= s->clock_ns)
			k->next_poll_ns += k->poll_ns;
		d = find_dom(s, k->active);
		if (d && d->watched && d->has_page)
			deliver_page(hv, d); /* may disarm k: re-checked next round */
	}
}

void fo_sim_advance(struct fo_hv *hv, uint64_t ns)
{
	sim_of(hv)->clock_ns += ns;
	kernel_page_polls(hv);
	kernel_timers(sim_of(hv));
}

void fo_sim_fail(struct fo_hv *hv, enum fo_sim_op op, fo_domid_t domid, int err, int count)
{
	sim_of(hv)->faults[op] = (struct sim_fault){ .err = err, .count = count, .domid = domid };
}

void fo_sim_delay(struct fo_hv *hv, enum fo_sim_op op, uint64_t ns) { sim_of(hv)->delay_ns[op] = ns; }

void fo_sim_vanish_on(struct fo_hv *hv, enum fo_sim_op op, fo_domid_t domid)
{
	sim_of(hv)->vanish_armed[op] = true;
	sim_of(hv)->vanish_domid[op] = domid;
}

void fo_sim_pause_is_noop(struct fo_hv *hv, fo_domid_t domid, bool on)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);
	if (d)
		d->pause_is_noop = on;
}

/* The agent notified its port: the module, if it holds it, hears it. */
static void kernel_notified(struct fo_hv_sim *s, fo_domid_t domid)
{
	for (size_t i = 0; i < SIM_MAX_KPAIRS; i++) {
		struct sim_kpair *k = &s->kpairs[i];

		if (k->used && !k->firing && k->active == domid) {
			k->last_notify_ns = s->clock_ns;
			k->deadline_ns = s->clock_ns + k->timeout_ns;
			k->notifications++;
		}
	}
}

void fo_sim_raw_page(struct fo_hv *hv, fo_domid_t domid, const struct fo_hb_page *page)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = find_dom(s, domid);
	struct fo_hb_page copy = *page;

	if (d) {
		d->page = *page;
		d->has_page = true;
	}
	kernel_notified(s, domid);
	/* A port the module holds reaches us only through the poll. */
	if (s->kernel_poll && kernel_holds_port(s, domid))
		return;
	hv->cb.heartbeat(hv->cb.ctx, domid, &copy);
}

void fo_sim_heartbeat_status(struct fo_hv *hv, fo_domid_t domid, enum fo_hb_app_status status)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);
	struct fo_hb_page page;

	if (!d)
		return;
	memset(&page, 0, sizeof(page));
	page.magic = FO_HB_MAGIC;
	page.abi_version = FO_HB_ABI_VERSION;
	page.sequence = ++d->sequence;
	page.period_ms = 10;
	page.app_status = status;
	page.boot_id = d->boot_id;
	fo_sim_raw_page(hv, domid, &page);
}

void fo_sim_heartbeat(struct fo_hv *hv, fo_domid_t domid) { fo_sim_heartbeat_status(hv, domid, FO_HB_APP_HEALTHY); }

void fo_sim_agent_event(struct fo_hv *hv, fo_domid_t domid, int err, const char *reason)
{
	hv->cb.agent(hv->cb.ctx, domid, err, reason);
}

size_t fo_sim_calls(struct fo_hv *hv, const struct fo_sim_call **ret)
{
	*ret = sim_of(hv)->log;
	return sim_of(hv)->n_log;
}

void fo_sim_clear_calls(struct fo_hv *hv) { sim_of(hv)->n_log = 0; }

const char *fo_sim_role(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);
	return d ? d->role : "";
}

const char *fo_sim_last_command(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);
	return d ? d->command : "";
}

bool fo_sim_watched(struct fo_hv *hv, fo_domid_t domid)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);
	return d && d->watched;
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

/* ---- the simulated kernel module: test API ---- */

void fo_sim_enable_kernel(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);

	/* The plain table plus what hv_kmod.c adds over the Xen backend. */
	s->kernel = true;
	s->kernel_ops = sim_ops;
	s->kernel_ops.name = "sim+kernel";
	s->kernel_ops.switch_fenced = sim_switch_fenced;
	s->kernel_ops.kernel_arm = sim_kernel_arm;
	s->kernel_ops.kernel_disarm = sim_kernel_disarm;
	s->kernel_ops.settle = sim_settle;
	s->kernel_ops.kernel_adopt = sim_kernel_adopt;
	s->kernel_ops.kernel_poll_events = sim_kernel_poll_events;
	s->kernel_ops.kernel_list = sim_kernel_list;
	hv->ops = &s->kernel_ops;
}

bool fo_sim_kernel_armed(struct fo_hv *hv, uint32_t pair_id, fo_domid_t *ret_active, fo_domid_t *ret_standby)
{
	struct sim_kpair *k = kpair_find(sim_of(hv), pair_id);

	if (k && ret_active)
		*ret_active = k->active;
	if (k && ret_standby)
		*ret_standby = k->standby;
	return k != NULL;
}

void fo_sim_kernel_hold(struct fo_hv *hv, bool on)
{
	struct fo_hv_sim *s = sim_of(hv);

	s->kernel_hold = on;
	if (!on)
		for (size_t i = 0; i < SIM_MAX_KPAIRS; i++)
			if (s->kpairs[i].used && s->kpairs[i].firing)
				kpair_fire(s, &s->kpairs[i]);
}

void fo_sim_kernel_stall(struct fo_hv *hv, bool on) { sim_of(hv)->kernel_stall = on; }

void fo_sim_kernel_without_list(struct fo_hv *hv, bool on) { sim_of(hv)->kernel_no_list = on; }

void fo_sim_kernel_notify_only(struct fo_hv *hv, fo_domid_t domid)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = find_dom(s, domid);

	kernel_notified(s, domid);
	/* Whoever reads the page on a notification reads it unchanged. */
	if (d && d->watched && d->has_page && !(s->kernel_poll && kernel_holds_port(s, domid)))
		deliver_page(hv, d);
}

void fo_sim_kernel_poll_pages(struct fo_hv *hv, bool on) { sim_of(hv)->kernel_poll = on; }
void fo_sim_kernel_poll_late(struct fo_hv *hv, uint64_t ns) { sim_of(hv)->poll_late_ns = ns; }

size_t fo_sim_kernel_deliver(struct fo_hv *hv)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct fo_hv_kevent evs[SIM_MAX_KEVENTS];
	size_t n = s->n_kevents;

	/* Copied out first: a callback may arm (and fire) again. */
	memcpy(evs, s->kevents, n * sizeof(evs[0]));
	s->n_kevents = 0;
	for (size_t i = 0; i < n; i++)
		if (hv->cb.kernel_switched)
			hv->cb.kernel_switched(hv->cb.ctx, &evs[i]);
	return n;
}

size_t fo_sim_kernel_queued(struct fo_hv *hv) { return sim_of(hv)->n_kevents; }

int fo_sim_kernel_arm_external(struct fo_hv *hv, uint32_t pair_id, fo_domid_t active, fo_domid_t standby,
			       uint32_t timeout_ms)
{
	return kpair_arm(sim_of(hv), pair_id, active, standby, timeout_ms, 0);
}

void fo_sim_set_callbacks(struct fo_hv *hv, const struct fo_hv_callbacks *cb) { hv->cb = *cb; }

/* ---- placement: test API ---- */

void fo_sim_set_pcpus(struct fo_hv *hv, int n)
{
	struct fo_hv_sim *s = sim_of(hv);

	s->n_pcpus = n < 1 ? 1 : n > FO_HV_MAX_CPUS ? FO_HV_MAX_CPUS : n;
	all_cpus(s, &s->pools[0].cpus);
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++)
		if (s->doms[i].used)
			reset_affinity(s, &s->doms[i]);
}

void fo_sim_set_vcpus(struct fo_hv *hv, fo_domid_t domid, unsigned n)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = find_dom(s, domid);

	if (d) {
		d->n_vcpus = n < 1 ? 1 : n > FO_SIM_MAX_VCPUS ? FO_SIM_MAX_VCPUS : n;
		reset_affinity(s, d);
	}
}

int fo_sim_add_pool(struct fo_hv *hv, const char *name, const char *sched, const int *cpus, size_t n)
{
	struct fo_cpumask m;
	char why[128];

	fo_cpumask_from_list(&m, cpus, n);
	return pool_create(sim_of(hv), name, sched, &m, why, sizeof(why));
}

void fo_sim_pool_remove_cpu(struct fo_hv *hv, int cpu)
{
	struct fo_hv_sim *s = sim_of(hv);
	int owner = pool_of_cpu(s, cpu);

	if (owner > 0) {
		s->pools[owner].cpus.w[cpu / 64] &= ~(1ull << (cpu % 64));
		fo_cpumask_set(&s->pools[0].cpus, cpu);
	}
}

void fo_sim_move_domain(struct fo_hv *hv, fo_domid_t domid, const char *pool)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = find_dom(s, domid);
	int i = pool_find(s, pool);

	if (d && i >= 0 && d->pool != i) {
		d->pool = i;
		reset_affinity(s, d);
	}
}

void fo_sim_pin(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const int *cpus, size_t n)
{
	struct sim_domain *d = find_dom(sim_of(hv), domid);

	if (d && vcpu < FO_SIM_MAX_VCPUS)
		fo_cpumask_from_list(&d->hard[vcpu], cpus, n);
}
