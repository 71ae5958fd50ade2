/* SPDX-License-Identifier: MIT */
/*
 * manager.h - all pairs of one daemon, the event ring, and the glue between
 * the hypervisor backend's callbacks and the pair state machines. Pure
 * logic: no sockets, no timers of its own (it says when it next needs to
 * run), so the unit tests drive it with the simulator's virtual clock.
 */
#ifndef FO_MANAGER_H
#define FO_MANAGER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../hv/hv.h"
#include "core/config/config.h"
#include "events.h"
#include "core/pair/pair.h"

struct fo_manager;

int fo_manager_new(const struct fo_config *cfg, struct fo_manager **ret);
struct fo_manager *fo_manager_free(struct fo_manager *m);

/* The callbacks to hand to a backend; then attach it and start arming. */
struct fo_hv_callbacks fo_manager_hv_callbacks(struct fo_manager *m);
void fo_manager_attach_hv(struct fo_manager *m, struct fo_hv *hv);
void fo_manager_start(struct fo_manager *m);
/* Before start: where failure verdicts are kept across restarts (verdict.h;
 * the daemon's runtime directory). "" or never called: memory only. */
void fo_manager_set_state_file(struct fo_manager *m, const char *path);
/* Operator (failoverctl clear-failed): drop the verdict on the member of
 * that name. How many were dropped (0: none recorded), *ret_pair its pair;
 * -ENOENT if no pair has such a member. */
int fo_manager_clear_failed(struct fo_manager *m, const char *member, struct fo_pair **ret_pair);
/* Before start: create/adopt the cpupools, pin dom0's vCPU. -errno with a
 * one-line message when the host cannot match the configuration. */
int fo_manager_setup_placement(struct fo_manager *m, char *err, size_t errlen);
/* Verify the host's and every armed pair's placement now (the periodic
 * check runs it from fo_manager_run_due every placement.check_ms). */
void fo_manager_check_placement(struct fo_manager *m);
/* Host-wide verdict (pools, dom0's vCPU): true when verified and as
 * configured; *ret_detail says what drifted. */
bool fo_manager_host_placement(const struct fo_manager *m, const char **ret_detail);

/*
 * A turn of the daemon's loop, in two phases: between these two, pairs
 * hold the verdict file's write (core/pair/verdicts.c, persist) and each
 * switch's after-work (the roles, on_failover: core/pair/switch_lifecycle.c,
 * after_switch). The switches come first; fo_manager_after_work then does
 * the after-work, and turn_end what is still held, then writes the file
 * once: neither the after-work nor the file's fsync stands between one
 * pair's switch and the next's.
 */
void fo_manager_turn_begin(struct fo_manager *m);
void fo_manager_turn_end(struct fo_manager *m);
/* The held after-work of every pair that switched, in pair order; before
 * each pair's, every deadline that came due meanwhile is run (a switch
 * first). The daemon's loop calls it once its real-time fds are served. */
void fo_manager_after_work(struct fo_manager *m);
/* Within a turn: do the held after-work and write what is held now
 * (before answering a request that changed something, so that the answer
 * never precedes the file). */
void fo_manager_write_held_verdicts(struct fo_manager *m);

/* Earliest pending deadline (CLOCK_MONOTONIC ns), 0 if none. */
uint64_t fo_manager_next_deadline(struct fo_manager *m);
/* Run every deadline that is due now. */
void fo_manager_run_due(struct fo_manager *m);

/* Hand every finished, not yet published event to `sink`, oldest first. */
typedef void (*fo_event_sink)(void *ctx, const struct fo_event *e);
void fo_manager_publish_events(struct fo_manager *m, fo_event_sink sink, void *ctx);

/* Apply a new, already validated config: pairs added are armed, removed ones
 * are forgotten (their domains left as they are), changed ones updated (or
 * re-armed if their members changed). */
void fo_manager_reload(struct fo_manager *m, const struct fo_config *cfg);
/* Must a reload to `cfg` wait? Yes while a pair it would remove or replace
 * is in flight: a switch awaiting its new active's first heartbeat (its
 * event not yet published), a rebuild (its new domain would be started
 * beside an active nobody watches any more) or a drill (its client waits).
 * Pairs kept with the same members move over with their state and never
 * hold a reload back. Each of those ends by itself (a heartbeat or a
 * bounded grace, rebuild and drill timeout), so the wait is bounded.
 * On true, `why` names the pair and what it is doing. */
bool fo_manager_reload_must_wait(const struct fo_manager *m, const struct fo_config *cfg, char *why, size_t len);

const struct fo_config *fo_manager_config(const struct fo_manager *m);
size_t fo_manager_pair_count(const struct fo_manager *m);
struct fo_pair *fo_manager_pair(struct fo_manager *m, size_t i);
struct fo_pair *fo_manager_find_pair(struct fo_manager *m, const char *name);
const struct fo_event_ring *fo_manager_events(const struct fo_manager *m);
struct fo_hv *fo_manager_hv(struct fo_manager *m);

/* True once no pair is ARMING any more (READY=1 for systemd). */
bool fo_manager_settled(const struct fo_manager *m);
/* "brake-ctl ARMED, pump DEGRADED" for STATUS= */
void fo_manager_status_line(const struct fo_manager *m, char *buf, size_t len);
/* The manager's families as Prometheus text (`failoverctl metrics`),
 * through lib/prom.h. Not on the real-time path: it allocates. */
void fo_manager_metrics_write(const struct fo_manager *m, FILE *out);
/* The same into buf: its first len-1 bytes. Returns the bytes written. */
size_t fo_manager_metrics(const struct fo_manager *m, char *buf, size_t len);

#endif
