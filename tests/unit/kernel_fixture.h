/* SPDX-License-Identifier: MIT */
/*
 * kernel_fixture.h - pair_fixture.h's pair handed to the simulated
 * kmod-switch (ARMED in the module), a daemon restart on the same
 * hypervisor and module, and what the kernel tests ask of them. Shared by
 * test_kernel.c and test_kernel_restart.c (header-only: each test is one
 * executable).
 */
#ifndef FO_TEST_KERNEL_FIXTURE_H
#define FO_TEST_KERNEL_FIXTURE_H

#include <stdbool.h>
#include <stdlib.h>

#include "pair_fixture.h"

static inline void fx_kernel_armed(struct fx *f)
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_armed_cfg(f, &cfg, true);
}

/* A daemon restart: the old manager is gone without a word (SIGKILL), Xen
 * and the module keep their state, a new manager starts on them. */
static inline void restart(struct fx *f)
{
	struct fo_hv_callbacks cb;

	fo_manager_free(f->mgr);
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_sim_set_callbacks(f->hv, &cb);
	fo_manager_attach_hv(f->mgr, f->hv);
	fo_manager_start(f->mgr);
	f->p = fo_manager_pair(f->mgr, 0);
}

static inline bool kernel_has(struct fx *f, fo_domid_t active, fo_domid_t standby)
{
	fo_domid_t ka, ks;
	return fo_sim_kernel_armed(f->hv, f->p->kernel_id, &ka, &ks) && ka == active && ks == standby;
}

static inline bool both_running(struct fx *f)
{
	return fo_sim_state(f->hv, f->a) == FO_DOM_RUNNING && fo_sim_state(f->hv, f->b) == FO_DOM_RUNNING;
}

#endif
