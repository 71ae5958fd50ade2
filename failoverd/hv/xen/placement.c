/* SPDX-License-Identifier: MIT */
/*
 * placement.c - where a domain's vCPUs run: affinity (libxenctrl), cpupools
 * (libxenlight: create, take pCPUs from Pool-0, move a domain; libxenctrl:
 * a domain's pool), and reading back a domain's placement for the periodic
 * check (core/placement.c).
 */
#include "hv/xen/xen_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int xen_set_affinity(struct fo_hv *hv, fo_domid_t domid, const int *pcpus, size_t n_pcpus)
{
	struct xen_hv *x = to_xen(hv);
	xc_cpumap_t hard = NULL, soft = NULL;
	xen_domctl_getdomaininfo_t info;
	int max_cpus, mapsize, rc;
	bool found;
	unsigned v;
	size_t i;

	if (!domid_is_valid(domid) || !pcpus || n_pcpus == 0)
		return -EINVAL;
	max_cpus = xc_get_max_cpus(x->xch);
	mapsize = xc_get_cpumap_size(x->xch);
	if (max_cpus <= 0 || mapsize <= 0) {
		rc = -EIO;
		goto out;
	}
	for (i = 0; i < n_pcpus; i++) {
		if (pcpus[i] < 0 || pcpus[i] >= max_cpus) {
			rc = -EINVAL;
			goto out;
		}
	}
	rc = xen_get_dominfo(x, domid, &found, &info);
	if (rc < 0)
		goto out;
	if (!found) {
		rc = -ESRCH;
		goto out;
	}
	hard = xc_cpumap_alloc(x->xch);
	soft = xc_cpumap_alloc(x->xch);
	if (!hard || !soft) {
		rc = -ENOMEM;
		goto out;
	}
	for (v = 0; v <= info.max_vcpu_id; v++) {
		/* The call writes the effective map back: rebuild it each time. */
		memset(hard, 0, (size_t)mapsize);
		for (i = 0; i < n_pcpus; i++)
			hard[pcpus[i] / 8] |= (uint8_t)(1u << (pcpus[i] % 8));
		/* Only the hard map is applied (flags); soft is read-write scratch. */
		memset(soft, 0xff, (size_t)mapsize);
		if (xc_vcpu_setaffinity(x->xch, domid, (int)v, hard, soft,
					XEN_VCPUAFFINITY_HARD) < 0) {
			rc = neg_errno();
			goto out;
		}
	}
	rc = 0;
out:
	free(hard);
	free(soft);
	return rc;
}

static void pool_name_cache(struct xen_hv *x, uint32_t id, const char *name)
{
	size_t i;

	for (i = 0; i < x->n_pool_names; i++)
		if (x->pool_names[i].id == id)
			break;
	if (i == x->n_pool_names) {
		if (x->n_pool_names == sizeof(x->pool_names) / sizeof(x->pool_names[0]))
			i = 0; /* full: overwrite the oldest guess */
		else
			x->n_pool_names++;
	}
	x->pool_names[i].id = id;
	snprintf(x->pool_names[i].name, sizeof(x->pool_names[i].name), "%s", name);
}

static void pool_name_of(struct xen_hv *x, uint32_t id, char *buf, size_t len)
{
	char *name;

	for (size_t i = 0; i < x->n_pool_names; i++)
		if (x->pool_names[i].id == id) {
			snprintf(buf, len, "%s", x->pool_names[i].name);
			return;
		}
	name = libxl_cpupoolid_to_name(x->ctx, id);
	if (name) {
		pool_name_cache(x, id, name);
		snprintf(buf, len, "%s", name);
		free(name);
	} else {
		snprintf(buf, len, "#%u", id);
	}
}

static void mask_from_libxl(struct fo_cpumask *m, const libxl_bitmap *b)
{
	unsigned int c; /* libxl's loop compares it with an unsigned size */

	memset(m, 0, sizeof(*m));
	libxl_for_each_set_bit(c, *b)
		fo_cpumask_set(m, (int)c);
}

static void pool_info_fill(const libxl_cpupoolinfo *info, struct fo_hv_pool *ret)
{
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", info->pool_name ? info->pool_name : "");
	snprintf(ret->sched, sizeof(ret->sched), "%s", libxl_scheduler_to_string(info->sched));
	mask_from_libxl(&ret->cpus, &info->cpumap);
	ret->n_domains = info->n_dom;
}

int xen_cpupool_get(struct fo_hv *hv, const char *name, struct fo_hv_pool *ret)
{
	struct xen_hv *x = to_xen(hv);
	libxl_cpupoolinfo info;
	uint32_t id;
	int rc;

	if (libxl_name_to_cpupoolid(x->ctx, name, &id) != 0)
		return -ENOENT;
	libxl_cpupoolinfo_init(&info);
	rc = libxl_cpupool_info(x->ctx, &info, id);
	if (rc == 0) {
		pool_info_fill(&info, ret);
		pool_name_cache(x, id, name);
	}
	libxl_cpupoolinfo_dispose(&info);
	return rc ? xen_libxl_rc_to_errno(rc) : 0;
}

/* Which pool holds `cpu` (-1: none, i.e. free or offline). */
static int64_t pool_holding(const libxl_cpupoolinfo *pools, int n, int cpu, const char **ret_name)
{
	for (int i = 0; i < n; i++)
		if (libxl_bitmap_test(&pools[i].cpumap, cpu)) {
			*ret_name = pools[i].pool_name;
			return pools[i].poolid;
		}
	return -1;
}

int xen_cpupool_ensure(struct fo_hv *hv, const char *name, const char *sched, const struct fo_cpumask *cpus,
			      char *why, size_t whylen)
{
	struct xen_hv *x = to_xen(hv);
	libxl_cpupoolinfo *pools = NULL;
	libxl_scheduler lsched;
	libxl_bitmap map;
	libxl_uuid uuid;
	struct fo_hv_pool have;
	char want_text[128], have_text[128];
	int removed[FO_HV_MAX_CPUS], n_removed = 0, n_pools = 0, max_cpus, rc;
	uint32_t poolid = LIBXL_CPUPOOL_POOLID_ANY;

	libxl_bitmap_init(&map);
	fo_cpumask_format(cpus, want_text, sizeof(want_text));
	if (libxl_scheduler_from_string(sched, &lsched) != 0) {
		snprintf(why, whylen, "libxl knows no scheduler \"%s\"", sched);
		return -EINVAL;
	}

	rc = xen_cpupool_get(hv, name, &have);
	if (rc == 0) {
		if (strcmp(have.sched, sched) == 0 && fo_cpumask_equal(&have.cpus, cpus)) {
			snprintf(why, whylen, "adopted the existing pool (scheduler %s, pCPUs %s)", sched, want_text);
			return 0;
		}
		fo_cpumask_format(&have.cpus, have_text, sizeof(have_text));
		snprintf(why, whylen, "a cpupool of that name exists with scheduler %s and pCPUs %s, configured %s "
			 "and %s (destroy it, or configure it as it is)", have.sched, have_text, sched, want_text);
		return -EEXIST;
	}
	if (rc != -ENOENT) {
		snprintf(why, whylen, "cannot read cpupool %s: %s", name, strerror(-rc));
		return rc;
	}

	max_cpus = libxl_get_max_cpus(x->ctx);
	pools = libxl_list_cpupool(x->ctx, &n_pools);
	if (max_cpus <= 0 || !pools) {
		snprintf(why, whylen, "cannot list the host's pCPUs and cpupools");
		rc = -EIO;
		goto out;
	}
	for (int c = 0; c < FO_HV_MAX_CPUS; c++) {
		const char *owner = NULL;
		int64_t id;

		if (!fo_cpumask_test(cpus, c))
			continue;
		if (c >= max_cpus) {
			snprintf(why, whylen, "pCPU %d does not exist (this host has pCPUs 0-%d)", c, max_cpus - 1);
			rc = -ENODEV;
			goto out;
		}
		id = pool_holding(pools, n_pools, c, &owner);
		if (id > 0) {
			snprintf(why, whylen, "pCPU %d is in cpupool %s, not Pool-0", c, owner ? owner : "?");
			rc = -EBUSY;
			goto out;
		}
	}
	/* Out of Pool-0 first: a pCPU can be given to a new pool only free. */
	for (int c = 0; c < FO_HV_MAX_CPUS; c++) {
		const char *owner = NULL;

		if (!fo_cpumask_test(cpus, c) || pool_holding(pools, n_pools, c, &owner) != 0)
			continue;
		rc = libxl_cpupool_cpuremove(x->ctx, 0, c);
		if (rc) {
			snprintf(why, whylen, "cannot take pCPU %d out of Pool-0 (%s): is a vCPU pinned to it alone?",
				 c, xen_libxl_rc_name(rc));
			rc = -EBUSY;
			goto rollback;
		}
		removed[n_removed++] = c;
	}
	if (libxl_cpu_bitmap_alloc(x->ctx, &map, max_cpus) != 0) {
		rc = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto rollback;
	}
	for (int c = 0; c < max_cpus; c++)
		if (fo_cpumask_test(cpus, c))
			libxl_bitmap_set(&map, c);
	libxl_uuid_generate(&uuid);
	rc = libxl_cpupool_create(x->ctx, name, lsched, map, &uuid, &poolid);
	if (rc) {
		/* What failed is rarely said by libxl; the usual cause is a
		 * scheduler left out of the hypervisor's build (Debian's Xen
		 * 4.17 has credit and credit2 only). */
		snprintf(why, whylen, "libxl_cpupool_create(%s, %s, pCPUs %s): %s (is the %s scheduler built "
			 "into this hypervisor? see `xl dmesg` and its .config)", name, sched, want_text,
			 xen_libxl_rc_name(rc), sched);
		rc = xen_libxl_rc_to_errno(rc);
		goto rollback;
	}
	pool_name_cache(x, poolid, name);
	snprintf(why, whylen, "created (id %u, scheduler %s, pCPUs %s, taken from Pool-0)", poolid, sched, want_text);
	rc = 0;
	goto out;
rollback:
	for (int i = 0; i < n_removed; i++)
		libxl_cpupool_cpuadd(x->ctx, 0, removed[i]);
out:
	libxl_bitmap_dispose(&map);
	if (pools)
		libxl_cpupoolinfo_list_free(pools, n_pools);
	return rc;
}

int xen_cpupool_move(struct fo_hv *hv, fo_domid_t domid, const char *name)
{
	struct xen_hv *x = to_xen(hv);
	xen_domctl_getdomaininfo_t info;
	uint32_t id;
	bool found;
	int rc;

	if (!domid_is_valid(domid) || domid == DOM0_ID)
		return -EINVAL;
	if (libxl_name_to_cpupoolid(x->ctx, name, &id) != 0)
		return -ENOENT;
	rc = xen_get_dominfo(x, domid, &found, &info);
	if (rc < 0)
		return rc;
	if (!found)
		return -ESRCH;
	if (info.cpupool == id)
		return 0;
	rc = libxl_cpupool_movedomain(x->ctx, id, domid);
	return rc ? xen_libxl_rc_to_errno(rc) : 0;
}

/* A hard and a soft vCPU affinity map, as libxc's affinity calls take them:
 * the size of each in bytes, or -ENOMEM. The caller frees both, either way. */
static int cpumaps_alloc(struct xen_hv *x, xc_cpumap_t *hard, xc_cpumap_t *soft)
{
	int mapsize = xc_get_cpumap_size(x->xch);

	*hard = xc_cpumap_alloc(x->xch);
	*soft = xc_cpumap_alloc(x->xch);
	return mapsize <= 0 || !*hard || !*soft ? -ENOMEM : mapsize;
}

int xen_get_placement(struct fo_hv *hv, fo_domid_t domid, struct fo_hv_placement *ret)
{
	struct xen_hv *x = to_xen(hv);
	xen_domctl_getdomaininfo_t info;
	xc_cpumap_t hard = NULL, soft = NULL;
	int mapsize, rc;
	bool found;

	if (!domid_is_valid(domid))
		return -EINVAL;
	rc = xen_get_dominfo(x, domid, &found, &info);
	if (rc < 0)
		return rc;
	if (!found)
		return -ESRCH;
	/* Both maps, though only the hard one is read: libxc bounces both. */
	mapsize = cpumaps_alloc(x, &hard, &soft);
	if (mapsize < 0) {
		rc = mapsize;
		goto out;
	}
	memset(ret, 0, sizeof(*ret));
	pool_name_of(x, info.cpupool, ret->pool, sizeof(ret->pool));
	ret->n_vcpus = info.max_vcpu_id + 1;
	for (unsigned v = 0; v < ret->n_vcpus && v < FO_HV_MAX_VCPUS; v++) {
		if (xc_vcpu_getaffinity(x->xch, domid, (int)v, hard, soft, XEN_VCPUAFFINITY_HARD) < 0) {
			rc = neg_errno();
			goto out;
		}
		for (int c = 0; c < mapsize * 8 && c < FO_HV_MAX_CPUS; c++)
			if (hard[c / 8] & (1u << (c % 8)))
				fo_cpumask_set(&ret->hard[v], c);
	}
	rc = 0;
out:
	free(hard);
	free(soft);
	return rc;
}

int xen_pin_vcpu(struct fo_hv *hv, fo_domid_t domid, unsigned vcpu, const struct fo_cpumask *m)
{
	struct xen_hv *x = to_xen(hv);
	xc_cpumap_t hard = NULL, soft = NULL;
	int mapsize, rc = 0;

	if (!domid_is_valid(domid))
		return -EINVAL;
	mapsize = cpumaps_alloc(x, &hard, &soft);
	if (mapsize < 0) {
		rc = mapsize;
		goto out;
	}
	for (int c = 0; c < FO_HV_MAX_CPUS; c++)
		if (fo_cpumask_test(m, c)) {
			if (c >= mapsize * 8) {
				rc = -EINVAL;
				goto out;
			}
			hard[c / 8] |= (uint8_t)(1u << (c % 8));
		}
	memset(soft, 0xff, (size_t)mapsize);
	if (xc_vcpu_setaffinity(x->xch, domid, (int)vcpu, hard, soft, XEN_VCPUAFFINITY_HARD) < 0)
		rc = neg_errno();
out:
	free(hard);
	free(soft);
	return rc;
}
