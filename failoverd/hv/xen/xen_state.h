/* SPDX-License-Identifier: MIT */
/*
 * xen_state.h - the state relay (the Xen backend's fourth helper thread):
 * hands each pair's active application state (libfoguest's state-out
 * region, mapped read-only) to its standby (the standby's state-in region,
 * granted writable to dom0), after validating it
 * (guest-heartbeat/abi/fo_state.h).
 *
 * Why through dom0: on Arm with XSM SILO (and by design elsewhere) domUs
 * share no grants or event channels with each other, and a standby must
 * never have to trust the active: dom0 maps the active's pages read-only,
 * copies only what passes every check, and the standby keeps the last valid
 * state whatever the active writes afterwards.
 *
 * The logic (validating, copying, takeovers) is hv/state_relay.c, tested
 * without Xen; this is its Xen side (keys, watches, grant mappings).
 *
 * Off the switch path: the relay runs SCHED_OTHER on its own thread with
 * its own xenstore connection and grant handle; the loop only posts
 * (a) pairs' roles as published after an arm or a switch and (b) each
 * heartbeat's application cycle, and never waits for the relay.
 */
#ifndef FO_XEN_STATE_H
#define FO_XEN_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hv/hv.h"

struct xen_state_relay;

/* start_thread: the Xen backend's helper-thread starter (SCHED_OTHER,
 * xen_start_helper_thread in threads.c). */
int xen_state_relay_new(int (*start_thread)(pthread_t *t, void *(*fn)(void *), void *arg, int signo),
			struct xen_state_relay **ret);
void xen_state_relay_free(struct xen_state_relay *r);

/* The loop thread: roles now (after fo_pair_publish_roles). standby may be FO_DOMID_INVALID. */
void xen_state_relay_pair(struct xen_state_relay *r, const char *pair, fo_domid_t active, fo_domid_t standby,
			  bool serving);
void xen_state_relay_set_stream(struct xen_state_relay *r, const struct fo_hv_state_stream *hooks, void *ctx);
/* The loop thread: a heartbeat page copy of a member (any domain). */
void xen_state_relay_beat(struct xen_state_relay *r, fo_domid_t domid, const struct fo_hb_page *page);
/* The loop thread: stop relaying to/from this domain and unmap it. */
void xen_state_relay_forget(struct xen_state_relay *r, fo_domid_t domid);

/* What the relay knows about a member (hv.h state_info). false: nothing. */
bool xen_state_relay_info(struct xen_state_relay *r, fo_domid_t domid, struct fo_hv_state_info *ret);

#endif
