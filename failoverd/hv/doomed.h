/* SPDX-License-Identifier: MIT */
/*
 * doomed.h - the domains a backend is destroying ("doomed"). Once failoverd
 * asked for a destroy, the domain is paused and must never be unpaused or
 * switched to again, although Xen may still list it for a while (libxl
 * tears devices down first). Both real backends keep such a list: the Xen
 * backend (hv/xen/domctl.c) and the kernel-module wrapper (hv/kmod/), whose
 * device does not see the inner backend's list.
 */
#ifndef FO_HV_DOOMED_H
#define FO_HV_DOOMED_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/domid.h"
#include "lib/limits.h"

/* As many as the Xen backend can have destroys queued: two builder jobs
 * (a destroy, then a create) per member of every pair. */
#define FO_DOOMED_MAX (4 * FO_MAX_PAIRS)

struct fo_doomed {
	fo_domid_t ids[FO_DOOMED_MAX];
	size_t n;
};

static inline bool fo_doomed_has(const struct fo_doomed *d, fo_domid_t domid)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->ids[i] == domid)
			return true;
	return false;
}

/* False if the list is full (the domain is then not remembered). */
static inline bool fo_doomed_add(struct fo_doomed *d, fo_domid_t domid)
{
	if (fo_doomed_has(d, domid))
		return true;
	if (d->n == FO_DOOMED_MAX)
		return false;
	d->ids[d->n++] = domid;
	return true;
}

static inline void fo_doomed_remove(struct fo_doomed *d, fo_domid_t domid)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->ids[i] == domid) {
			d->ids[i] = d->ids[--d->n];
			return;
		}
}

#endif
