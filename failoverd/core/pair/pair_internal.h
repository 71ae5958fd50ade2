/* SPDX-License-Identifier: MIT */
/*
 * pair_internal.h - what the files of core/pair/ share with one another and
 * nobody else uses: the state machine's own steps, grouped by the file that
 * defines them (their comments are there). The interface is pair.h.
 */
#ifndef FO_PAIR_INTERNAL_H
#define FO_PAIR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/pair/pair.h"
#include "core/fencing.h"

#define MS(x) ((uint64_t)(x) * 1000000ull)

/* How long a freshly booted standby may take to heartbeat for the first time
 * before arming gives up on it. A PV guest boots in seconds natively; under
 * software emulation in the lab it takes up to ~30 s. */
#define FO_ARM_WAIT_NS (120ull * 1000000000ull)

static inline uint64_t now_ns(struct fo_pair *p)
{
	return p->env->hv->ops->now_ns(p->env->hv);
}

static inline void set_deadline(struct fo_member *m, enum fo_deadline_kind kind, uint64_t at)
{
	m->deadline_kind = kind;
	m->deadline_ns = kind == FO_DL_NONE ? 0 : at;
}

/* pair.c: events, transitions, the active's deadline, fencing outside a switch */
struct fo_event *fo_pair_record(struct fo_pair *p, enum fo_event_kind kind, enum fo_event_result result,
				const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void fo_pair_become(struct fo_pair *p, enum fo_pair_state s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void fo_pair_arm_active_deadline(struct fo_pair *p);
void fo_pair_arm_active_deadline_if_armed(struct fo_pair *p);
void fo_pair_become_armed(struct fo_pair *p, const char *how);
bool fo_pair_fence_member(struct fo_pair *p, struct fo_member *m);

/* domains.c */
void fo_pair_suspended_standby(struct fo_pair *p, struct fo_member *s);

/* verdicts.c */
void fo_pair_member_instance(const struct fo_member *m, struct fo_instance *in);
const struct fo_verdict *fo_pair_verdict_of(const struct fo_pair *p, const struct fo_member *m);
void fo_pair_mark_failed(struct fo_pair *p, struct fo_member *m, const char *why);
void fo_pair_mark_active(struct fo_pair *p);
void fo_pair_persist(struct fo_pair *p);
void fo_pair_persist_now(struct fo_pair *p);
void fo_pair_refuse_standby(struct fo_pair *p, struct fo_member *m, const struct fo_verdict *v);

/* members.c */
bool fo_pair_refresh_state(struct fo_pair *p, struct fo_member *m);
void fo_pair_refresh_identity(struct fo_pair *p, struct fo_member *m);
void fo_pair_refresh_member(struct fo_pair *p, struct fo_member *m);
void fo_pair_publish_roles(struct fo_pair *p);
void fo_pair_state_report(struct fo_pair *p, const struct fo_member *m);

/* arming.c */
void fo_pair_arming_evaluate(struct fo_pair *p);

/* kernel_owner.c */
void fo_pair_kernel_try_arm(struct fo_pair *p);
void fo_pair_kernel_disarm(struct fo_pair *p);
int fo_pair_kernel_take_back(struct fo_pair *p);
bool fo_pair_kernel_yield_for_fence(struct fo_pair *p);
bool fo_pair_kernel_gone_while_firing(struct fo_pair *p);
const char *fo_pair_owner_desc(const struct fo_pair *p);
void fo_pair_kernel_on_deadline(struct fo_pair *p, uint64_t due, uint64_t now);
void fo_pair_kernel_adopt_switch(struct fo_pair *p, const struct fo_hv_kevent *ev, int ai);
bool fo_pair_kernel_adopt_on_arming(struct fo_pair *p);

/* switch_lifecycle.c */
struct fo_event *fo_pair_claim_switch_event(struct fo_pair *p, uint64_t detected_ns, enum fo_fault fault,
					    bool drill, const struct fo_member *from, const struct fo_member *to);
int fo_pair_begin_switchover(struct fo_pair *p, enum fo_fault fault, uint64_t fault_ns, uint64_t detected_ns);
void fo_pair_fail_over(struct fo_pair *p, enum fo_fault fault, uint64_t fault_ns, uint64_t now);
int fo_pair_after_switch(struct fo_pair *p, struct fo_event *e, const struct fo_switch_outcome *outp,
			 enum fo_fault fault, bool drill);
struct fo_event *fo_pair_pending_switch_event(struct fo_pair *p);
void fo_pair_finish_switch(struct fo_pair *p, bool heartbeated);
void fo_pair_after_first_heartbeat(struct fo_pair *p);

/* service.c */
bool fo_pair_service_enforce(struct fo_pair *p, bool after_switch);
bool fo_pair_service_move(struct fo_pair *p, struct fo_event *e, int from);
void fo_pair_service_fenced(void *arg);
void fo_pair_service_switch_failed(struct fo_pair *p);
void fo_pair_service_audit(struct fo_pair *p);

/* policy.c */
void fo_pair_apply_on_failover(struct fo_pair *p, struct fo_member *failed);
void fo_pair_start_rebuild(struct fo_pair *p, int idx);

#endif
