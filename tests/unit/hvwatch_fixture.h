/* SPDX-License-Identifier: MIT */
/*
 * hvwatch_fixture.h - what test_hvwatch.c and test_hvwatch_release.c share:
 * the daemon's loop with our patched Xen's failover watch on the
 * simulator (hv/sim/fowatch.c), a pair ARMED and handed to the watch, a
 * restart, and a look at the watch (QUERY).
 */
#ifndef FO_HVWATCH_FIXTURE_H
#define FO_HVWATCH_FIXTURE_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kernel_fixture.h"
#include "hv/fowatch/owner.h"

/* The daemon's loop with the watch: VIRQ_FAILOVER first (an rt fd), then
 * what is due. `frozen`: the daemon is stopped, only Xen moves. */
static bool frozen;
/* Where the daemon keeps its verdicts (daemon.state_file); "": in memory,
 * lost at a restart. */
static char state_path[128];

static inline void hv_loop_once(struct fx *f)
{
	if (frozen)
		return;
	fo_sim_fowatch_deliver(f->hv);
	fo_manager_run_due(f->mgr);
}

static inline void hv_advance(struct fx *f, uint64_t ms)
{
	for (uint64_t i = 0; i < ms; i++) {
		fo_sim_advance(f->hv, MS);
		hv_loop_once(f);
	}
}

/* `ms` of life in which only `beating` heartbeats (FO_DOMID_INVALID: none). */
static inline void hv_live(struct fx *f, fo_domid_t beating, uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += 10) {
		if (beating != FO_DOMID_INVALID)
			beat_if_running(f, beating);
		hv_advance(f, 10);
	}
}

/* The manager (re)started on the simulator with the watch as the owner,
 * as the daemon does when its probe finds the watch. */
static inline void hv_start(struct fx *f)
{
	struct fo_hv_callbacks cb;

	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	if (state_path[0])
		fo_manager_set_state_file(f->mgr, state_path);
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_sim_set_callbacks(f->hv, &cb);
	if (fo_sim_enable_fowatch_owner(f->hv, 0) < 0)
		abort();
	fo_manager_attach_hv(f->mgr, f->hv);
	fo_manager_start(f->mgr);
	f->p = fo_manager_pair(f->mgr, 0);
}

/* First boot, both running, the pair ARMED and handed to Xen's watch;
 * `no_event`: a patch series without event mode (0012). */
static inline void hv_armed_on(struct fx *f, enum fo_on_failover on_failover, bool no_event)
{
	struct fo_hv_callbacks cb = { 0 };

	memset(f, 0, sizeof(*f));
	sim_base_config(&f->cfg);
	f->cfg.pairs[0].on_failover = on_failover;
	if (fo_hv_sim_new(&cb, &f->hv) < 0)
		abort();
	fo_sim_fowatch_no_event(f->hv, no_event);
	f->a = fo_sim_add_domain(f->hv, "brake-a", FO_DOM_RUNNING);
	f->b = fo_sim_add_domain(f->hv, "brake-b", FO_DOM_RUNNING);
	hv_start(f);
	fx_settle_armed(f);
	frozen = false;
}

static inline void hv_armed(struct fx *f, enum fo_on_failover on_failover) { hv_armed_on(f, on_failover, false); }

/* A daemon restart: SIGKILL, Xen keeps its watches, a new daemon starts. */
static inline void hv_restart(struct fx *f)
{
	fo_manager_free(f->mgr);
	hv_start(f);
	frozen = false;
}

/* Xen's watch on `domid`: 0 and *fw, or -ENOENT. */
static inline int query(struct fx *f, fo_domid_t domid, struct fo_xen_failover_watch *fw)
{
	memset(fw, 0, sizeof(*fw));
	fw->op = FO_FOWATCH_OP_QUERY;
	return fo_sim_fowatch_domctl(f->hv, domid, fw);
}

static inline bool watch_armed(struct fx *f, fo_domid_t active, fo_domid_t standby)
{
	struct fo_xen_failover_watch fw;

	return query(f, active, &fw) == 0 && fw.state == FO_FOWATCH_STATE_ARMED && fw.active == active &&
	       fw.standby == standby;
}

static inline const char *owner_of(struct fx *f)
{
	struct fo_pair_view v;

	fo_pair_view(f->p, &v);
	return v.owner ? v.owner : "none";
}

#endif
