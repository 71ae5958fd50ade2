/* SPDX-License-Identifier: MIT */
/*
 * control_fixture.h - a manager on the simulated hypervisor with its
 * control socket on a loop, for the control protocol's tests
 * (test_control.c, test_control_socket.c; header-only: each test is one
 * executable).
 */
#ifndef FO_TEST_CONTROL_FIXTURE_H
#define FO_TEST_CONTROL_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sim_config.h"
#include "core/manager.h"
#include "hv/sim/hv_sim.h"
#include "io/control.h"
#include "io/loop.h"

struct fx {
	struct fo_config cfg;
	struct fo_manager *mgr;
	struct fo_hv *hv;
	struct fo_loop *loop;
	struct fo_control *ctl;
	fo_domid_t a, b;
	char path[108];
};

/* Verdicts kept in state_file (NULL: memory only). */
static inline void setup_in(struct fx *f, bool kernel, const char *active, const char *standby,
			    const char *state_file)
{
	struct fo_hv_callbacks cb;

	memset(f, 0, sizeof(*f));
	sim_base_config(&f->cfg);
	snprintf(f->cfg.pairs[0].active, sizeof(f->cfg.pairs[0].active), "%s", active);
	snprintf(f->cfg.pairs[0].standby, sizeof(f->cfg.pairs[0].standby), "%s", standby);
	snprintf(f->path, sizeof(f->path), "/tmp/fo-test-control-%d/control.sock", (int)getpid());
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	if (state_file)
		fo_manager_set_state_file(f->mgr, state_file);
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_hv_sim_new(&cb, &f->hv);
	if (kernel)
		fo_sim_enable_kernel(f->hv);
	fo_manager_attach_hv(f->mgr, f->hv);
	f->a = fo_sim_add_domain(f->hv, active, FO_DOM_RUNNING);
	f->b = fo_sim_add_domain(f->hv, standby, FO_DOM_PAUSED);
	fo_manager_start(f->mgr);
	fo_loop_new(&f->loop);
	int r = fo_control_new(f->loop, f->mgr, f->path, NULL, NULL, &f->ctl);
	CHECK(r == 0, "control socket: %s", strerror(-r));
}

static inline void setup_names(struct fx *f, bool kernel, const char *active, const char *standby)
{
	setup_in(f, kernel, active, standby, NULL);
}

static inline void setup_kernel(struct fx *f, bool kernel)
{
	setup_names(f, kernel, "brake-a", "brake-b");
}

static inline void setup(struct fx *f)
{
	setup_kernel(f, false);
}

static inline void teardown(struct fx *f)
{
	char dir[108], *slash;

	fo_control_free(f->ctl);
	fo_loop_free(f->loop);
	fo_hv_free(f->hv);
	fo_manager_free(f->mgr);
	snprintf(dir, sizeof(dir), "%s", f->path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	rmdir(dir);
}

#endif
