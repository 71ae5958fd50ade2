/* SPDX-License-Identifier: MIT */
/*
 * state_relay.h - the state relay's logic, apart from how a backend finds
 * and maps a member's regions: which member of each pair is active and
 * which standby, reading the active's state-out, validating it, copying it
 * into the standby's state-in (guest-heartbeat/abi/fo_state.h), counting
 * what was relayed and rejected, and noticing a takeover (the standby
 * became the active) with the cycles it was handed and lost; with the
 * state stream across hosts plugged in (fo_state_relay_set_stream), the
 * same for the state that comes from, and goes to, the other host.
 *
 * Why apart: the Xen backend (hv/xen/xen_state.c) supplies grant mappings
 * and xenstore watches through fo_state_relay_ops; the unit tests
 * (tests/unit/test_state_relay.c) supply plain memory and run this same
 * thread without Xen.
 *
 * One thread, SCHED_OTHER, off the switch path: the loop only posts roles
 * and beats (fo_state_relay_pair/beat/forget) and never waits for it.
 */
#ifndef FO_HV_STATE_RELAY_H
#define FO_HV_STATE_RELAY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hv/hv.h"
#include "lib/limits.h"

#define FO_STATE_RELAY_MEMBERS (FO_MAX_PAIRS * 2)

struct fo_state_relay;

/*
 * What a backend does for the relay. Called on the relay thread only,
 * never with the relay's lock held. `slot` (< FO_STATE_RELAY_MEMBERS)
 * names the relay's record of a member from map() until drop(), so that a
 * backend can keep per-member state (a watch) in an array of its own.
 */
struct fo_state_relay_ops {
	const char *name;  /* log prefix: "<name>: state relay: ..." */
	/* A descriptor the relay also polls for the backend's events (-1: none). */
	int (*event_fd)(void *ctx);
	/* Once per pass: drain the backend's events, fo_state_relay_dirty()
	 * the members whose keys changed; true when some domain died or went
	 * away (every mapped member is then checked with alive()). */
	bool (*events)(void *ctx, struct fo_state_relay *r);
	/* Map what the member publishes now: both regions (FO_ST_REGION_PAGES
	 * each; out read-only, in writable) and true, or nothing and false. */
	bool (*map)(void *ctx, unsigned slot, fo_domid_t domid, volatile void **out, volatile void **in);
	/* Give back regions map() returned (either may be NULL). */
	void (*unmap)(void *ctx, volatile void *out, volatile void *in);
	/* The member leaves the relay (forgotten, or the relay stops); its
	 * regions are unmapped already. */
	void (*drop)(void *ctx, unsigned slot, fo_domid_t domid);
	/* false: the domain is dying or gone (its regions are then unmapped). */
	bool (*alive)(void *ctx, fo_domid_t domid);
};

/* start_thread: the backend's helper-thread starter (SCHED_OTHER, signals
 * blocked). ops and ctx must outlive the relay. */
int fo_state_relay_new(const struct fo_state_relay_ops *ops, void *ctx,
		       int (*start_thread)(pthread_t *t, void *(*fn)(void *), void *arg, int signo),
		       struct fo_state_relay **ret);
/* Stops the thread (it finishes the pass it is in: bounded), drops every
 * member (unmap, drop), frees. */
void fo_state_relay_free(struct fo_state_relay *r);

/* The loop thread: roles now (after fo_pair_publish_roles). standby may be
 * FO_DOMID_INVALID. `serving`: the active runs here (hv.h state_pair). */
void fo_state_relay_pair(struct fo_state_relay *r, const char *pair, fo_domid_t active, fo_domid_t standby,
			 bool serving);
/*
 * Once, before roles are posted: the state stream across hosts (hv.h).
 * With it, a pair served here also offers its active's commits to the
 * stream; a pair not served here takes no state from its own (paused)
 * active, only the newest that arrived from the other host, into its
 * standby's state-in. hooks and ctx must outlive the relay.
 */
void fo_state_relay_set_stream(struct fo_state_relay *r, const struct fo_hv_state_stream *hooks, void *ctx);
/* The loop thread: a heartbeat page copy of a member (any domain). */
void fo_state_relay_beat(struct fo_state_relay *r, fo_domid_t domid, const struct fo_hb_page *page);
/* How many beats woke the relay thread (the tests: not one per notification). */
uint64_t fo_state_relay_beat_wakeups(struct fo_state_relay *r);
/* The loop thread: stop relaying to/from this domain and unmap it. */
void fo_state_relay_forget(struct fo_state_relay *r, fo_domid_t domid);
/* Any thread: what the relay knows about a member (hv.h state_info). false: nothing. */
bool fo_state_relay_info(struct fo_state_relay *r, fo_domid_t domid, struct fo_hv_state_info *ret);

/* The relay thread, from ops->events: member `slot`'s keys changed, map it afresh. */
void fo_state_relay_dirty(struct fo_state_relay *r, unsigned slot);

#endif
