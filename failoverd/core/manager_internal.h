/* SPDX-License-Identifier: MIT */
/*
 * manager_internal.h - what the manager's files share: the manager itself.
 * The interface is manager.h.
 */
#ifndef FO_MANAGER_INTERNAL_H
#define FO_MANAGER_INTERNAL_H

#include "core/manager.h"

struct fo_manager {
	struct fo_config cfg;
	struct fo_pair_env env;
	struct fo_event_ring ring;
	struct fo_pair pairs[FO_MAX_PAIRS];
	size_t n_pairs;
	struct fo_ratelimit unknown_rl;
	/* placement: the periodic check and the host-wide verdict */
	uint64_t placement_next_ns; /* 0 = no periodic check */
	bool host_checked;
	bool host_drift;
	char host_placement[256];
	struct fo_verdicts verdicts; /* failed instances and last actives, kept across restarts */
	struct fo_svcnet_sockets net; /* pairs[].network's sockets, opened at the first pair's need */
};

/* manager_kernel.c */
void fo_manager_assign_kernel_ids(struct fo_manager *m);
void fo_manager_kernel_sweep(struct fo_manager *m, bool adopted);

#endif
