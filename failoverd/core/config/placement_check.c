/* SPDX-License-Identifier: MIT */
/*
 * placement_check.c - the placement rules that span sections: pools named
 * by pairs exist, pins lie inside their pool, and under the null scheduler
 * every vCPU owns a pCPU. Run once the whole document is read.
 */
#include "core/config/config_internal.h"

#include <stdio.h>
#include <string.h>

static bool cpu_in(int cpu, const int *cpus, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cpus[i] == cpu)
			return true;
	return false;
}

/* The pool (among c's) that holds `cpu`, or NULL. */
static const struct fo_cpupool_config *pool_of_cpu(const struct fo_config *c, int cpu)
{
	for (size_t i = 0; i < c->n_cpupools; i++)
		if (cpu_in(cpu, c->cpupools[i].pcpus, c->cpupools[i].n_pcpus))
			return &c->cpupools[i];
	return NULL;
}

static void cpus_text(char *buf, size_t len, const int *cpus, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%d", i ? "," : "", cpus[i]);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

/* One member's pin list against its pair's pool (or against every pool,
 * when the pair names none: such a member stays in Pool-0). */
static int check_member_pins(struct parser *p, const struct fo_config *c, const char *pin_kp, const char *key,
			     const int *cpus, size_t n, const struct fo_cpupool_config *pool)
{
	char akp[KEYPATH_MAX], ikp[KEYPATH_MAX], text[256];

	fo_config_keypath_join(akp, pin_kp, key);
	for (size_t k = 0; k < n; k++) {
		const struct fo_cpupool_config *owner = pool_of_cpu(c, cpus[k]);

		fo_config_keypath_index(ikp, akp, (int)k);
		if (pool && owner != pool) {
			cpus_text(text, sizeof(text), pool->pcpus, pool->n_pcpus);
			return fo_config_fail(p, ikp, "pCPU %d is not in cpupool \"%s\" (its pCPUs: %s)", cpus[k],
					      pool->name, text);
		}
		/* Xen refuses a hard affinity outside the domain's pool. */
		if (!pool && owner)
			return fo_config_fail(p, ikp, "pCPU %d belongs to cpupool \"%s\", which this pair's members are "
					      "not in: set pin.cpupool to \"%s\" or pick a pCPU outside it",
					      cpus[k], owner->name, owner->name);
	}
	return 0;
}

/*
 * Placement rules that span sections: pools named by pairs exist, pins lie
 * inside their pool, and under the null scheduler every vCPU owns a pCPU.
 * A null-scheduler vCPU keeps its pCPU while its domain is paused, so a
 * standby pinned onto the active's pCPU could never run after a switch
 * (and two pairs sharing a pCPU would starve one another).
 */
int fo_config_check_placement(struct parser *p, const struct fo_config *c)
{
	char kp[KEYPATH_MAX], pin_kp[KEYPATH_MAX], mkp[KEYPATH_MAX], ikp[KEYPATH_MAX], names[256];
	char sbuf[FO_SHOWN_BUF];
	const struct fo_daemon_config *d = &c->daemon;

	if (d->dom0_vcpu_pcpu >= 0) {
		const struct fo_cpupool_config *owner = pool_of_cpu(c, d->dom0_vcpu_pcpu);

		if (d->cpu < 0)
			return fo_config_fail(p, "daemon.dom0_vcpu_pcpu", "needs daemon.cpu: the dom0 vCPU pinned is the "
					      "one failoverd runs on (dom0 CPU N is its vCPU N)");
		if (owner)
			return fo_config_fail(p, "daemon.dom0_vcpu_pcpu", "pCPU %d belongs to cpupool \"%s\"; dom0 stays "
					      "in %s, pick one of its pCPUs", d->dom0_vcpu_pcpu, owner->name, POOL0_NAME);
	}

	for (size_t i = 0; i < c->n_pairs; i++) {
		const struct fo_pair_config *pc = &c->pairs[i];
		const struct fo_pin_config *pin = &pc->pin;
		const struct fo_cpupool_config *pool = NULL;
		int rc;

		fo_config_keypath_index(kp, "pairs", (int)i);
		fo_config_keypath_join(pin_kp, kp, "pin");
		if (pin->cpupool[0]) {
			size_t off = 0;

			pool = fo_config_cpupool(c, pin->cpupool);
			fo_config_keypath_join(mkp, pin_kp, "cpupool");
			if (!pool) {
				names[0] = '\0';
				for (size_t j = 0; j < c->n_cpupools; j++) {
					int w = snprintf(names + off, sizeof(names) - off, "%s%s", j ? ", " : "",
							 c->cpupools[j].name);
					if (w < 0 || (size_t)w >= sizeof(names) - off)
						break;
					off += (size_t)w;
				}
				return fo_config_fail(p, mkp, "no cpupool named \"%s\" (cpupools: %s)", fo_config_shown(pin->cpupool, sbuf),
						      c->n_cpupools ? names : "none configured");
			}
		}
		rc = check_member_pins(p, c, pin_kp, "active_pcpus", pin->active_pcpus, pin->n_active_pcpus, pool);
		if (rc < 0)
			return rc;
		rc = check_member_pins(p, c, pin_kp, "standby_pcpus", pin->standby_pcpus, pin->n_standby_pcpus,
				       pool);
		if (rc < 0)
			return rc;
		if (!pool || pool->scheduler != FO_SCHED_NULL)
			continue;

		if (!pin->n_active_pcpus || !pin->n_standby_pcpus)
			return fo_config_fail(p, pin_kp, "cpupool \"%s\" uses the null scheduler: give both active_pcpus "
					      "and standby_pcpus, disjoint (a paused vCPU keeps its pCPU there)", pool->name);
		fo_config_keypath_join(mkp, pin_kp, "standby_pcpus");
		for (size_t k = 0; k < pin->n_standby_pcpus; k++) {
			fo_config_keypath_index(ikp, mkp, (int)k);
			if (cpu_in(pin->standby_pcpus[k], pin->active_pcpus, pin->n_active_pcpus))
				return fo_config_fail(p, ikp, "pCPU %d is also in active_pcpus: under the null scheduler "
						      "(cpupool \"%s\") a paused vCPU keeps its pCPU, so the standby could "
						      "never run there", pin->standby_pcpus[k], pool->name);
		}
		/* Another pair in the same null pool must not share a pCPU either. */
		for (size_t j = 0; j < i; j++) {
			const struct fo_pin_config *q = &c->pairs[j].pin;

			if (strcmp(q->cpupool, pin->cpupool) != 0)
				continue;
			for (int w = 0; w < 2; w++) {
				const int *cpus = w ? pin->standby_pcpus : pin->active_pcpus;
				size_t n = w ? pin->n_standby_pcpus : pin->n_active_pcpus;

				fo_config_keypath_join(mkp, pin_kp, w ? "standby_pcpus" : "active_pcpus");
				for (size_t k = 0; k < n; k++) {
					fo_config_keypath_index(ikp, mkp, (int)k);
					if (cpu_in(cpus[k], q->active_pcpus, q->n_active_pcpus) ||
					    cpu_in(cpus[k], q->standby_pcpus, q->n_standby_pcpus))
						return fo_config_fail(p, ikp, "pCPU %d is already pinned to pair \"%s\" "
								      "(pairs[%zu]); under the null scheduler (cpupool \"%s\") "
								      "a pCPU runs one vCPU", cpus[k], c->pairs[j].name, j,
								      pool->name);
				}
			}
		}
	}
	return 0;
}
