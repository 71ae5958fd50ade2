/* SPDX-License-Identifier: MIT */
/*
 * fence_fixture.h - what test_fence.c, test_verdicts.c and test_turn.c
 * share on top of pair_fixture.h: a life where only one member beats, a
 * look for an event, and a state file (the verdicts) for each test, with
 * a restart that reads it.
 */
#ifndef FO_FENCE_FIXTURE_H
#define FO_FENCE_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "pair_fixture.h"
#include "core/fencing.h"

/* `ms` of life in 10 ms steps where only `d` heartbeats. */
static inline void only_beats(struct fx *f, fo_domid_t d, uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += 10) {
		beat_if_running(f, d);
		fo_sim_advance(f->hv, 10 * MS);
		fx_loop_once(f);
	}
}

static inline bool has_event_with(struct fx *f, enum fo_event_kind kind, const char *text)
{
	const struct fo_event_ring *r = fo_manager_events(f->mgr);

	for (size_t i = 0; i < fo_event_ring_count(r); i++) {
		const struct fo_event *e = fo_event_ring_get(r, i);
		if (e->kind == kind && (!text || strstr(e->message, text)))
			return true;
	}
	return false;
}

static char state_dir[64];
static char state_path[128];

/* A fresh state file for each test. */
static inline void state_reset(void)
{
	if (!state_dir[0]) {
		snprintf(state_dir, sizeof(state_dir), "/tmp/fo-test-fence.XXXXXX");
		if (!mkdtemp(state_dir))
			abort();
		snprintf(state_path, sizeof(state_path), "%s/failed-members", state_dir);
	}
	unlink(state_path);
	{
		char aside[160];
		snprintf(aside, sizeof(aside), "%s.corrupt", state_path);
		unlink(aside);
	}
}

static inline void state_cleanup(void)
{
	state_reset();
	rmdir(state_dir);
}

/* fx_new with the verdicts kept in state_path. */
static inline void fx_new_state(struct fx *f, const struct fo_config *cfg, enum fo_dom_state sa, enum fo_dom_state sb,
			 bool kernel)
{
	fx_new_in(f, cfg, sa, sb, kernel, state_path);
}

/* First boot, ARMED (a active, b standby), verdicts in state_path. */
static inline void fx_armed_state(struct fx *f)
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_new_state(f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	fx_settle_armed(f);
}

/* failoverd restarts (SIGKILL and start): Xen keeps its state, a new
 * manager reads the state file. */
static inline void restart(struct fx *f)
{
	struct fo_hv_callbacks cb;

	fo_manager_free(f->mgr);
	if (fo_manager_new(&f->cfg, &f->mgr) < 0)
		abort();
	fo_manager_set_state_file(f->mgr, state_path);
	cb = fo_manager_hv_callbacks(f->mgr);
	fo_sim_set_callbacks(f->hv, &cb);
	fo_manager_attach_hv(f->mgr, f->hv);
	fo_manager_start(f->mgr);
	f->p = fo_manager_pair(f->mgr, 0);
}

/* Heartbeat loss, keep-paused: a failed; b active and heartbeating. */
static inline void fail_a(struct fx *f)
{
	advance(f, 60);
	prove(f, f->b);
}

#endif
