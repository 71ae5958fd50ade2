/* SPDX-License-Identifier: MIT */
/*
 * placement.h - where the pairs' members and failoverd's own dom0 vCPU run
 * (cpupools, vCPU hard affinity): set up at start and when a member
 * appears, verified at arm time and periodically afterwards.
 *
 * Everything here is slow by switch-path standards (libxl, one hypercall
 * per vCPU) and runs from the loop between events, never inside a switch.
 * Placement never gates fencing: a pair whose placement drifted still arms
 * and still switches; the drift is reported (log, event, status).
 */
#ifndef FO_PLACEMENT_H
#define FO_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "../hv/hv.h"
#include "core/config/config.h"

/* Does this pair ask for any placement of its members? */
bool fo_placement_pair_wants(const struct fo_pair_config *pc);

/* A member appeared: move it into its pool, then pin its vCPUs (in that
 * order: Xen resets affinity on a pool move and refuses a pin outside the
 * domain's pool). 0, or -errno with `why` saying what failed. */
int fo_placement_apply_member(struct fo_hv *hv, const struct fo_pair_config *pc, const char *member,
			      fo_domid_t domid, char *why, size_t whylen);

/* Is the member where pc says? Appends "NAME: found X, expected Y" lines
 * (joined by "; ") to buf for what is not. True when nothing is off (or
 * the domain is gone, or the backend cannot tell). */
bool fo_placement_check_member(struct fo_hv *hv, const struct fo_pair_config *pc, const char *member,
			       fo_domid_t domid, char *buf, size_t len);

/* At start: create or adopt the cpupools, pin dom0's vCPU daemon.cpu.
 * -errno with a one-line message in err when the host cannot be made to
 * match the configuration (the daemon then refuses to start). */
int fo_placement_setup(struct fo_hv *hv, const struct fo_config *cfg, char *err, size_t errlen);

/* The host-wide part (pools, dom0's vCPU): as fo_placement_check_member. */
bool fo_placement_check_host(struct fo_hv *hv, const struct fo_config *cfg, char *buf, size_t len);
/* Re-pin dom0's vCPU (pools are never rebuilt behind the operator's back:
 * a changed pool is reported only). */
int fo_placement_apply_host(struct fo_hv *hv, const struct fo_config *cfg);

#endif
