/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * pair.h - armed pairs: the module owns a pair's heartbeat deadline and
 * switches it by itself when the deadline expires.
 */
#ifndef FO_SWITCH_PAIR_H
#define FO_SWITCH_PAIR_H

#include "uapi/fo_switch.h"

#define FO_DOMID_NONE 0xFFFFFFFFu

/* Module init/exit: the worker kthread; exit disarms every pair first. */
int fo_pairs_init(void);
void fo_pairs_exit(void);

int fo_pair_arm(const struct fo_switch_arm *arm);
int fo_pair_disarm(u32 pair_id);
int fo_pair_info(struct fo_switch_pair_info *info);
/* LIST: the first `max` armed pairs into out[]; returns how many are armed. */
u32 fo_pairs_list(struct fo_switch_pair_info *out, u32 max);

/*
 * One owner per pair: SWITCH and UNPAUSE must not touch a member of an armed
 * pair. On 0 the caller holds the arm/disarm mutex (so no ARM can slip in
 * while it acts) and calls fo_pairs_release(); -EBUSY if a domain is owned.
 * `b` may be FO_DOMID_NONE.
 */
int fo_pairs_claim(u32 a, u32 b);
void fo_pairs_release(void);

#endif
