/* SPDX-License-Identifier: MIT */
/*
 * pair_fixture.h - one pair ("brake": brake-a, brake-b) on the simulated
 * hypervisor with its virtual clock, driven the way the daemon's loop would
 * drive it. Shared by the tests of pairs (test_pair*.c, test_kernel*.c via
 * kernel_fixture.h, test_fence.c, ...; header-only: each test is one
 * executable).
 */
#ifndef FO_TEST_PAIR_FIXTURE_H
#define FO_TEST_PAIR_FIXTURE_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim_config.h"
#include "core/manager.h"
#include "hv/sim/hv_sim.h"

#define MS 1000000ull

struct fx {
	struct fo_config cfg;
	struct fo_manager *mgr;
	struct fo_hv *hv;
	struct fo_pair *p;
	fo_domid_t a, b;
	bool hold_delivery; /* the daemon's loop has not read the module's device yet */
};

/* Domains a and b in the given states (FO_DOM_GONE: not created), the
 * simulated kmod-switch loaded if `kernel`, failure verdicts kept in
 * state_file (NULL: the manager's default), manager started (arming ran). */
static inline void fx_new_in(struct fx *f, const struct fo_config *cfg, enum fo_dom_state sa, enum fo_dom_state sb,
			     bool kernel, const char *state_file)
{
	struct fo_hv_callbacks cb;

	memset(f, 0, sizeof(*f));
	f->cfg = *cfg;
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	if (state_file)
		fo_manager_set_state_file(f->mgr, state_file);
	cb = fo_manager_hv_callbacks(f->mgr);
	if (fo_hv_sim_new(&cb, &f->hv) < 0)
		abort();
	if (kernel)
		fo_sim_enable_kernel(f->hv);
	fo_manager_attach_hv(f->mgr, f->hv);
	f->a = sa == FO_DOM_GONE ? FO_DOMID_INVALID : fo_sim_add_domain(f->hv, "brake-a", sa);
	f->b = sb == FO_DOM_GONE ? FO_DOMID_INVALID : fo_sim_add_domain(f->hv, "brake-b", sb);
	fo_manager_start(f->mgr);
	f->p = fo_manager_pair(f->mgr, 0);
}

static inline void fx_new(struct fx *f, const struct fo_config *cfg, enum fo_dom_state sa, enum fo_dom_state sb,
			  bool kernel)
{
	fx_new_in(f, cfg, sa, sb, kernel, NULL);
}

static inline void fx_free(struct fx *f)
{
	fo_hv_free(f->hv);
	fo_manager_free(f->mgr);
}

/* One turn of the daemon's loop: read the module's events (if the device
 * is "readable"), then run what is due, then write the verdicts the turn
 * held (daemon.c), then the backend's deferred work. */
static inline void fx_loop_once(struct fx *f)
{
	fo_manager_turn_begin(f->mgr);
	if (!f->hold_delivery)
		fo_sim_kernel_deliver(f->hv);
	fo_manager_run_due(f->mgr);
	fo_manager_turn_end(f->mgr);
	if (f->hv->ops->settle)
		f->hv->ops->settle(f->hv);
}

/* Advance virtual time in 1 ms steps, running deadlines as the loop would. */
static inline void advance(struct fx *f, uint64_t ms)
{
	for (uint64_t i = 0; i < ms; i++) {
		fo_sim_advance(f->hv, MS);
		fx_loop_once(f);
	}
}

static inline void beat_if_running(struct fx *f, fo_domid_t d)
{
	if (fo_sim_state(f->hv, d) == FO_DOM_RUNNING)
		fo_sim_heartbeat(f->hv, d);
}

/* `ms` of normal life: the running members heartbeat every 10 ms. */
static inline void live(struct fx *f, uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += 10) {
		beat_if_running(f, f->a);
		beat_if_running(f, f->b);
		advance(f, 10);
	}
}

/* A member's agent proves it runs: the first page we see is only a
 * baseline, the second (sequence moved forward) is progress. */
static inline void prove(struct fx *f, fo_domid_t d)
{
	fo_sim_heartbeat(f->hv, d);
	fo_sim_heartbeat(f->hv, d);
}

/* After a first boot's fx_new: both members heartbeat, so the pair arms
 * (the standby paused), and the never-both-running guard is on from then;
 * the calls so far forgotten. */
static inline void fx_settle_armed(struct fx *f)
{
	prove(f, f->a);
	prove(f, f->b);
	fo_sim_guard(f->hv, f->a, f->b);
	fo_sim_clear_calls(f->hv);
}

/* First boot: both running, both heartbeat, the standby is paused: ARMED,
 * with the never-both-running guard on from then. */
static inline void fx_armed_cfg(struct fx *f, const struct fo_config *cfg, bool kernel)
{
	fx_new(f, cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, kernel);
	fx_settle_armed(f);
}

/* fx_armed_cfg on the base config, no kernel module. */
static inline void fx_armed(struct fx *f)
{
	struct fo_config cfg;
	sim_base_config(&cfg);
	fx_armed_cfg(f, &cfg, false);
}

/* Domains a and b in the given states, manager started (arming ran). */
static inline void fx_setup_cfg(struct fx *f, const struct fo_config *cfg, enum fo_dom_state sa, enum fo_dom_state sb)
{
	fx_new(f, cfg, sa, sb, false);
}

static inline size_t count_calls(struct fx *f, enum fo_sim_op op, fo_domid_t domid)
{
	const struct fo_sim_call *c;
	size_t n = fo_sim_calls(f->hv, &c), k = 0;
	for (size_t i = 0; i < n; i++)
		k += c[i].op == op && (domid == FO_SIM_ANY_DOMAIN || c[i].domid == domid);
	return k;
}

/* Since the last fo_sim_clear_calls: the daemon itself paused and unpaused
 * no domain (whatever the kernel module did is its own op). */
static inline bool paused_or_unpaused_nothing(struct fx *f)
{
	return count_calls(f, FO_SIM_PAUSE, FO_SIM_ANY_DOMAIN) == 0 && count_calls(f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0;
}

/* Index of the first call of op on domid, or -1. */
static inline long first_call(struct fx *f, enum fo_sim_op op, fo_domid_t domid)
{
	const struct fo_sim_call *c;
	size_t n = fo_sim_calls(f->hv, &c);
	for (size_t i = 0; i < n; i++)
		if (c[i].op == op && (domid == FO_SIM_ANY_DOMAIN || c[i].domid == domid))
			return (long)i;
	return -1;
}

/* Index of the first call of op on domid after call `after`, or -1. */
static inline long call_after(struct fx *f, enum fo_sim_op op, fo_domid_t domid, long after)
{
	const struct fo_sim_call *c;
	size_t n = fo_sim_calls(f->hv, &c);
	for (size_t i = after < 0 ? 0 : (size_t)after + 1; i < n; i++)
		if (c[i].op == op && (domid == FO_SIM_ANY_DOMAIN || c[i].domid == domid))
			return (long)i;
	return -1;
}

static inline size_t count_events(struct fx *f, enum fo_event_kind kind)
{
	const struct fo_event_ring *r = fo_manager_events(f->mgr);
	size_t k = 0;
	for (size_t i = 0; i < fo_event_ring_count(r); i++)
		k += fo_event_ring_get(r, i)->kind == kind;
	return k;
}

static inline const struct fo_event *last_event_of(struct fx *f, enum fo_event_kind kind)
{
	const struct fo_event_ring *r = fo_manager_events(f->mgr);
	for (size_t i = fo_event_ring_count(r); i-- > 0;)
		if (fo_event_ring_get(r, i)->kind == kind)
			return fo_event_ring_get(r, i);
	return NULL;
}

#endif
