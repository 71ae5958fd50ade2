/* SPDX-License-Identifier: MIT */
/*
 * placement.c - the simulated host's pCPUs, cpupools and vCPU hard
 * affinity (see hv_sim.h, "Placement"), as Xen answers them: a move to
 * another pool resets affinity, an affinity outside the pool is refused.
 */
#include "hv/sim/sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void sim_all_cpus(struct fo_hv_sim *s, struct fo_cpumask *m)
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

/* A call that names a pool that does not exist fails as Xen would. */
static int pool_find_or_fail(struct fo_hv_sim *s, const char *name)
{
	int i = pool_find(s, name);

	if (i < 0)
		sim_set_result(s, -ENOENT);
	return i < 0 ? -ENOENT : i;
}

static int pool_of_cpu(struct fo_hv_sim *s, int cpu)
{
	for (int i = 0; i < SIM_MAX_POOLS; i++)
		if (s->pools[i].used && fo_cpumask_test(&s->pools[i].cpus, cpu))
			return i;
	return -1;
}

void sim_reset_affinity(struct fo_hv_sim *s, struct sim_domain *d)
{
	for (unsigned v = 0; v < FO_SIM_MAX_VCPUS; v++)
		sim_all_cpus(s, &d->hard[v]);
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

int sim_set_affinity(struct fo_hv *hv, fo_domid_t domid, const int *pcpus, size_t n)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct fo_cpumask m;
	struct sim_domain *d;
	int r = sim_enter_dom(s, FO_SIM_SET_AFFINITY, domid, &d);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (pcpus[i] < 0 || pcpus[i] >= s->n_pcpus) {
			sim_set_result(s, -EINVAL);
			return -EINVAL;
		}
	fo_cpumask_from_list(&m, pcpus, n);
	for (unsigned v = 0; v < d->n_vcpus; v++) {
		r = pin_one(s, d, v, &m);
		if (r < 0) {
			sim_set_result(s, r);
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

int sim_cpupool_ensure(struct fo_hv *hv, const char *name, const char *sched, const struct fo_cpumask *cpus,
			      char *why, size_t whylen)
{
	struct fo_hv_sim *s = sim_of(hv);
	char have[64];
	int r = sim_enter(s, FO_SIM_CPUPOOL_ENSURE, FO_DOMID_INVALID), i;

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
		sim_set_result(s, -EEXIST);
		return -EEXIST;
	}
	r = pool_create(s, name, sched, cpus, why, whylen);
	sim_set_result(s, r);
	return r;
}

int sim_cpupool_get(struct fo_hv *hv, const char *name, struct fo_hv_pool *ret)
{
	struct fo_hv_sim *s = sim_of(hv);
	int r = sim_enter(s, FO_SIM_CPUPOOL_GET, FO_DOMID_INVALID), i;

	if (r < 0)
		return r;
	i = pool_find_or_fail(s, name);
	if (i < 0)
		return i;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", s->pools[i].name);
	snprintf(ret->sched, sizeof(ret->sched), "%s", s->pools[i].sched);
	ret->cpus = s->pools[i].cpus;
	for (size_t j = 0; j < SIM_MAX_DOMAINS; j++)
		if (s->doms[j].used && s->doms[j].pool == i)
			ret->n_domains++;
	return 0;
}

int sim_cpupool_move(struct fo_hv *hv, fo_domid_t domid, const char *name)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = sim_enter_dom(s, FO_SIM_CPUPOOL_MOVE, domid, &d), i;

	if (r < 0)
		return r;
	i = pool_find_or_fail(s, name);
	if (i < 0)
		return i;
	if (d->pool != i) {
		d->pool = i;
		sim_reset_affinity(s, d);
	}
	return 0;
}

int sim_get_placement(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_placement *ret)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = sim_enter_dom(s, FO_SIM_GET_PLACEMENT, domid, &d);

	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->pool, sizeof(ret->pool), "%s", s->pools[d->pool].name);
	ret->n_vcpus = d->n_vcpus;
	for (unsigned v = 0; v < d->n_vcpus && v < FO_HV_MAX_VCPUS; v++)
		ret->hard[v] = d->hard[v];
	return 0;
}

int sim_pin_vcpu(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const struct fo_cpumask *hard)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d;
	int r = sim_enter_dom(s, FO_SIM_PIN_VCPU, domid, &d);

	if (r < 0)
		return r;
	r = pin_one(s, d, vcpu, hard);
	sim_set_result(s, r);
	return r;
}

void fo_sim_set_pcpus(struct fo_hv *hv, int n)
{
	struct fo_hv_sim *s = sim_of(hv);

	s->n_pcpus = n < 1 ? 1 : n > FO_HV_MAX_CPUS ? FO_HV_MAX_CPUS : n;
	sim_all_cpus(s, &s->pools[0].cpus);
	for (size_t i = 0; i < SIM_MAX_DOMAINS; i++)
		if (s->doms[i].used)
			sim_reset_affinity(s, &s->doms[i]);
}

void fo_sim_set_vcpus(struct fo_hv *hv, fo_domid_t domid, unsigned n)
{
	struct fo_hv_sim *s = sim_of(hv);
	struct sim_domain *d = sim_find_dom(s, domid);

	if (d) {
		d->n_vcpus = n < 1 ? 1 : n > FO_SIM_MAX_VCPUS ? FO_SIM_MAX_VCPUS : n;
		sim_reset_affinity(s, d);
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
	struct sim_domain *d = sim_find_dom(s, domid);
	int i = pool_find(s, pool);

	if (d && i >= 0 && d->pool != i) {
		d->pool = i;
		sim_reset_affinity(s, d);
	}
}

void fo_sim_pin(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const int *cpus, size_t n)
{
	struct sim_domain *d = sim_find_dom(sim_of(hv), domid);

	if (d && vcpu < FO_SIM_MAX_VCPUS)
		fo_cpumask_from_list(&d->hard[vcpu], cpus, n);
}
