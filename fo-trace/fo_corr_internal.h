/* SPDX-License-Identifier: MIT */
/*
 * fo_corr_internal.h - what fo_corr.c and fo_corr_xen.c share: the chain
 * of points a breakdown is cut at and the function that cuts it. Not for
 * fo-trace's other files (they use fo_corr.h); it exists so that the
 * breakdown of a switch done by Xen lives in its own file and not as a
 * special case inside the dom0 correlation.
 */
#ifndef FO_CORR_INTERNAL_H
#define FO_CORR_INTERNAL_H

#include "fo_corr.h"

/* One point of the chain; consecutive points make a segment. source:
 * whose clock stamped it ("daemon", "kernel", "xen", "fo-trace"). */
struct fo_corr_point {
	const char *label;
	const char *source;
	uint64_t t;
};

/* What the time between two labels is (looked up by from and to). */
struct fo_corr_seg_desc {
	const char *from, *to, *what;
};

/* Cut the chain p[0..np) into segments described from d[0..nd); *sum is
 * their total, *worst the most negative (0 if none). */
size_t fo_corr_build_segs(const struct fo_corr_point *p, size_t np, const struct fo_corr_seg_desc *d, size_t nd,
			  struct fo_corr_seg *seg, int64_t *sum, int64_t *worst);

/* The breakdown of a switch Xen's failover watch did (path "hypervisor"):
 * its phases only (fo_corr_xen.c). Same return as fo_corr_switch. */
int fo_corr_switch_xen(const struct fo_corr_event *ev, uint64_t tol_ns, struct fo_corr_switch *out);
/* The lines of fo_corr_print_switch that differ for such a switch. */
void fo_corr_print_xen_head(FILE *f, const struct fo_corr_switch *s);
void fo_corr_print_xen_tail(FILE *f, const struct fo_corr_switch *s);

#endif
