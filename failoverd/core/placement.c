/* SPDX-License-Identifier: MIT */
/*
 * placement.c - cpupools and vCPU pins: apply, verify, describe drift.
 *
 * What is verified, and why exactly that:
 *   - a member with pin.cpupool is in that pool (an `xl cpupool-migrate`
 *     would put it back under a time-slicing scheduler);
 *   - a member with pins has every vCPU's hard affinity equal to them (an
 *     `xl vcpu-pin`, or a pool move, which resets affinity to all);
 *   - each configured pool still has its scheduler and exactly its pCPUs;
 *   - dom0's vCPU daemon.cpu is pinned to daemon.dom0_vcpu_pcpu.
 * Soft affinity is not ours and is not looked at.
 */
#include "placement.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/log.h"

#define DOM0 ((fo_domid_t)0)

bool fo_placement_pair_wants(const struct fo_pair_config *pc)
{
	return pc->pin.cpupool[0] || pc->pin.n_active_pcpus || pc->pin.n_standby_pcpus;
}

static void member_pins(const struct fo_pair_config *pc, const char *member, const int **cpus, size_t *n)
{
	/* Pins follow the configured domain, not the role, so a switch never
	 * has to move vCPUs on the real-time path. */
	bool is_cfg_active = strcmp(member, pc->active) == 0;

	*cpus = is_cfg_active ? pc->pin.active_pcpus : pc->pin.standby_pcpus;
	*n = is_cfg_active ? pc->pin.n_active_pcpus : pc->pin.n_standby_pcpus;
}

static void append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t len, const char *fmt, ...)
{
	size_t off = strnlen(buf, len);
	va_list ap;

	if (off + 1 >= len)
		return;
	if (off) {
		snprintf(buf + off, len - off, "; ");
		off = strnlen(buf, len);
	}
	va_start(ap, fmt);
	vsnprintf(buf + off, len - off, fmt, ap);
	va_end(ap);
}

int fo_placement_apply_member(struct fo_hv *hv, const struct fo_pair_config *pc, const char *member,
			      fo_domid_t domid, char *why, size_t whylen)
{
	const int *cpus;
	size_t n;
	int r;

	member_pins(pc, member, &cpus, &n);
	if (pc->pin.cpupool[0]) {
		r = hv->ops->cpupool_move ? hv->ops->cpupool_move(hv, domid, pc->pin.cpupool) : -EOPNOTSUPP;
		if (r < 0) {
			snprintf(why, whylen, "cannot move it into cpupool %s: %s", pc->pin.cpupool, strerror(-r));
			return r;
		}
	}
	if (n) {
		r = hv->ops->set_affinity(hv, domid, cpus, n);
		if (r < 0) {
			snprintf(why, whylen, "cannot pin its vCPUs: %s", strerror(-r));
			return r;
		}
	}
	return 0;
}

bool fo_placement_check_member(struct fo_hv *hv, const struct fo_pair_config *pc, const char *member,
			       fo_domid_t domid, char *buf, size_t len)
{
	static struct fo_hv_placement pl; /* 4 KiB: not on the stack the switch path pre-faulted */
	struct fo_cpumask want;
	char found[64], wanted[64];
	const int *cpus;
	size_t n;
	bool ok = true;
	int r;

	member_pins(pc, member, &cpus, &n);
	if ((!pc->pin.cpupool[0] && !n) || domid == FO_DOMID_INVALID || !hv->ops->get_placement)
		return true;
	r = hv->ops->get_placement(hv, domid, &pl);
	if (r == -ESRCH)
		return true; /* gone: the pair's own logic deals with that */
	if (r < 0) {
		append(buf, len, "%s: cannot read its placement: %s", member, strerror(-r));
		return false;
	}
	if (pc->pin.cpupool[0] && strcmp(pl.pool, pc->pin.cpupool) != 0) {
		append(buf, len, "%s: in cpupool %s, expected %s", member, pl.pool, pc->pin.cpupool);
		ok = false;
	}
	if (!n)
		return ok;
	fo_cpumask_from_list(&want, cpus, n);
	fo_cpumask_format(&want, wanted, sizeof(wanted));
	for (unsigned v = 0; v < pl.n_vcpus && v < FO_HV_MAX_VCPUS; v++) {
		if (fo_cpumask_equal(&pl.hard[v], &want))
			continue;
		fo_cpumask_format(&pl.hard[v], found, sizeof(found));
		append(buf, len, "%s: vCPU%u hard affinity %s, expected %s", member, v, found, wanted);
		ok = false;
	}
	return ok;
}

static int pin_dom0(struct fo_hv *hv, const struct fo_config *cfg, char *err, size_t errlen)
{
	static struct fo_hv_placement pl;
	struct fo_cpumask m;
	int r;

	if (!hv->ops->pin_vcpu || !hv->ops->get_placement) {
		snprintf(err, errlen, "daemon.dom0_vcpu_pcpu: the %s backend cannot pin dom0's vCPUs", hv->ops->name);
		return -EOPNOTSUPP;
	}
	r = hv->ops->get_placement(hv, DOM0, &pl);
	if (r < 0) {
		snprintf(err, errlen, "daemon.dom0_vcpu_pcpu: cannot read dom0's vCPUs: %s", strerror(-r));
		return r;
	}
	if ((unsigned)cfg->daemon.cpu >= pl.n_vcpus) {
		snprintf(err, errlen, "daemon.cpu: dom0 has %u vCPUs (0-%u), so its CPU %d is no vCPU to pin",
			 pl.n_vcpus, pl.n_vcpus - 1, cfg->daemon.cpu);
		return -EINVAL;
	}
	memset(&m, 0, sizeof(m));
	fo_cpumask_set(&m, cfg->daemon.dom0_vcpu_pcpu);
	r = hv->ops->pin_vcpu(hv, DOM0, (unsigned)cfg->daemon.cpu, &m);
	if (r < 0) {
		snprintf(err, errlen, "daemon.dom0_vcpu_pcpu: cannot pin dom0's vCPU %d to pCPU %d: %s%s",
			 cfg->daemon.cpu, cfg->daemon.dom0_vcpu_pcpu, strerror(-r),
			 r == -EINVAL ? " (no such pCPU in Pool-0?)" : "");
		return r;
	}
	return 0;
}

int fo_placement_setup(struct fo_hv *hv, const struct fo_config *cfg, char *err, size_t errlen)
{
	char why[256], cpus[64];
	int r;

	err[0] = '\0';
	for (size_t i = 0; i < cfg->n_cpupools; i++) {
		const struct fo_cpupool_config *cp = &cfg->cpupools[i];
		struct fo_cpumask m;

		if (!hv->ops->cpupool_ensure) {
			snprintf(err, errlen, "cpupools[%zu]: the %s backend has no cpupools", i, hv->ops->name);
			return -EOPNOTSUPP;
		}
		fo_cpumask_from_list(&m, cp->pcpus, cp->n_pcpus);
		fo_cpumask_format(&m, cpus, sizeof(cpus));
		why[0] = '\0';
		r = hv->ops->cpupool_ensure(hv, cp->name, fo_sched_name(cp->scheduler), &m, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "cpupools[%zu] (%s, %s, pCPUs %s): %s", i, cp->name,
				 fo_sched_name(cp->scheduler), cpus, why[0] ? why : strerror(-r));
			return r;
		}
		fo_info("cpupool %s (%s, pCPUs %s): %s", cp->name, fo_sched_name(cp->scheduler), cpus, why);
	}
	if (cfg->daemon.dom0_vcpu_pcpu >= 0) {
		r = pin_dom0(hv, cfg, err, errlen);
		if (r < 0)
			return r;
		fo_info("dom0 vCPU %d (failoverd's CPU) pinned to pCPU %d", cfg->daemon.cpu, cfg->daemon.dom0_vcpu_pcpu);
	}
	return 0;
}

bool fo_placement_check_host(struct fo_hv *hv, const struct fo_config *cfg, char *buf, size_t len)
{
	static struct fo_hv_placement pl;
	struct fo_hv_pool pool;
	char found[64], wanted[64];
	bool ok = true;
	int r;

	for (size_t i = 0; i < cfg->n_cpupools && hv->ops->cpupool_get; i++) {
		const struct fo_cpupool_config *cp = &cfg->cpupools[i];
		struct fo_cpumask m;

		r = hv->ops->cpupool_get(hv, cp->name, &pool);
		if (r < 0) {
			append(buf, len, "cpupool %s: %s", cp->name, r == -ENOENT ? "gone" : strerror(-r));
			ok = false;
			continue;
		}
		fo_cpumask_from_list(&m, cp->pcpus, cp->n_pcpus);
		if (strcmp(pool.sched, fo_sched_name(cp->scheduler)) != 0) {
			append(buf, len, "cpupool %s: scheduler %s, expected %s", cp->name, pool.sched,
			       fo_sched_name(cp->scheduler));
			ok = false;
		}
		if (!fo_cpumask_equal(&pool.cpus, &m)) {
			fo_cpumask_format(&pool.cpus, found, sizeof(found));
			fo_cpumask_format(&m, wanted, sizeof(wanted));
			append(buf, len, "cpupool %s: pCPUs %s, expected %s", cp->name, found, wanted);
			ok = false;
		}
	}
	if (cfg->daemon.dom0_vcpu_pcpu >= 0 && hv->ops->get_placement) {
		struct fo_cpumask m;

		memset(&m, 0, sizeof(m));
		fo_cpumask_set(&m, cfg->daemon.dom0_vcpu_pcpu);
		r = hv->ops->get_placement(hv, DOM0, &pl);
		if (r < 0) {
			append(buf, len, "dom0: cannot read its placement: %s", strerror(-r));
			ok = false;
		} else if ((unsigned)cfg->daemon.cpu < pl.n_vcpus && cfg->daemon.cpu < FO_HV_MAX_VCPUS &&
			   !fo_cpumask_equal(&pl.hard[cfg->daemon.cpu], &m)) {
			fo_cpumask_format(&pl.hard[cfg->daemon.cpu], found, sizeof(found));
			append(buf, len, "dom0: vCPU%d hard affinity %s, expected %d", cfg->daemon.cpu, found,
			       cfg->daemon.dom0_vcpu_pcpu);
			ok = false;
		}
	}
	return ok;
}

int fo_placement_apply_host(struct fo_hv *hv, const struct fo_config *cfg)
{
	char err[256];

	if (cfg->daemon.dom0_vcpu_pcpu < 0)
		return 0;
	return pin_dom0(hv, cfg, err, sizeof(err));
}
