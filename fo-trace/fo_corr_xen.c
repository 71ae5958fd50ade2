/* SPDX-License-Identifier: MIT */
/*
 * fo_corr_xen.c - the breakdown of a switch that Xen's failover watch did
 * (event path "hypervisor"; the watch: rt-patches/xen-4.17/0007, Xen's
 * common/fowatch.c).
 *
 * Why a chain of its own: on that path Xen detects the fault, fences the
 * active, waits until its vCPUs are off and unpauses the standby, all in
 * the watch's timer (TIMER_SOFTIRQ on the pCPU failoverd named). failoverd
 * learns of it from VIRQ_FAILOVER afterwards, QUERYs the watch and records
 * Xen's stamps as the event's phases (failoverd/hv/fowatch/owner.c,
 * core/pair/kernel_owner.c fo_pair_kernel_adopt_switch). The daemon did not wake,
 * decide or make an ioctl for the switch, so the dom0 chain (woken,
 * running, pause ioctl, ...) would pin Xen's time on records that are not
 * part of it: failoverd's records in the window are its adoption (the
 * RELEASE, which turns Xen's pause of the old active into a toolstack
 * pause). The event carries no
 * stamp of that adoption (time_ns is Xen's detection), so fo-trace does
 * not report one.
 *
 * The phases, as fo_pair_kernel_adopt_switch fills them for this path:
 *   fault         the deadline t_progress + timeout (a heartbeat timeout);
 *                 = detected for a crash or shutdown; for a drill
 *                 failoverd's own injection stamp
 *   detected      t_detect, = decided (Xen decides in the same step)
 *   pause_issued  t_fence, taken after domain_pause_nosync() returned
 *   pause_done    t_quiesced, = unpause_issued
 *   unpause_done  t_switched, taken after the standby's unpause returned
 * so decided and unpause_issued are not points of their own here.
 */
#include <string.h>

#include "fo_corr_internal.h"

/* What Xen does between its stamps (fowatch.c: fire(), fence_active(),
 * poll_quiescing(), fowatch_tick()). */
static const struct fo_corr_seg_desc xen_descs[] = {
	{ "detected", "pause_issued",
	  "Xen, same timer tick: standby still fit? then fence the active (domain_pause_nosync, "
	  "the watch's own pause reference; no wait)" },
	{ "pause_issued", "pause_done",
	  "Xen: wait until no vCPU of the active runs (looked at at once, then every 20 us, "
	  ">= 50 us with timer slop; FAILED_QUIESCE after quiesce_us)" },
	{ "pause_done", "unpause_done",
	  "Xen: standby still fit? then unpause it (consumes the toolstack's pause): runnable, "
	  "not yet seen running" },
};

bool fo_corr_switched_by_xen(const struct fo_corr_event *ev)
{
	return !strcmp(ev->path, "hypervisor");
}

static bool is_drill(const struct fo_corr_event *ev)
{
	return !strcmp(ev->kind, "drill");
}

/* fault -> detected depends on what the fault stamp is (see the top). */
static const char *fault_what(const struct fo_corr_event *ev)
{
	if (is_drill(ev))
		return "drill injection (failoverd's stamp) -> Xen's watch timer saw it "
		       "(a lost heartbeat: the timeout, then up to a poll period)";
	if (!strcmp(ev->fault, "heartbeat-timeout"))
		return "Xen's watch timer: deadline (progress seen + timeout) -> seen "
		       "(up to a poll period, timer slop)";
	if (!strcmp(ev->fault, "crashed") || !strcmp(ev->fault, "shutdown"))
		return "Xen: the active's shutdown set the watch timer to now (one stamp: 0 by construction)";
	return "Xen's watch timer: fault -> seen";
}

int fo_corr_switch_xen(const struct fo_corr_event *ev, uint64_t tol_ns, struct fo_corr_switch *out)
{
	const uint64_t *ph = ev->ph;
	struct fo_corr_point pt[FO_CP_COUNT];
	size_t np = 0;

	memset(out, 0, sizeof(*out));
	out->ev = *ev;
	if (!ph[FO_CP_UNPAUSE_DONE] || !ph[FO_CP_FAULT])
		return -1;
	pt[np++] = (struct fo_corr_point){ "fault", is_drill(ev) ? "daemon" : "xen", ph[FO_CP_FAULT] };
	pt[np++] = (struct fo_corr_point){ "detected", "xen", ph[FO_CP_DETECTED] };
	if (ph[FO_CP_PAUSE_ISSUED])
		pt[np++] = (struct fo_corr_point){ "pause_issued", "xen", ph[FO_CP_PAUSE_ISSUED] };
	if (ph[FO_CP_PAUSE_DONE])
		pt[np++] = (struct fo_corr_point){ "pause_done", "xen", ph[FO_CP_PAUSE_DONE] };
	pt[np++] = (struct fo_corr_point){ "unpause_done", "xen", ph[FO_CP_UNPAUSE_DONE] };

	out->nseg = fo_corr_build_segs(pt, np, xen_descs, sizeof(xen_descs) / sizeof(xen_descs[0]), out->seg,
				       &out->sum_ns, &out->worst_ns);
	out->seg[0].what = fault_what(ev);
	out->total_ns = (int64_t)(ph[FO_CP_UNPAUSE_DONE] - ph[FO_CP_FAULT]);
	out->consistent = out->worst_ns >= -(int64_t)tol_ns;
	return 0;
}

void fo_corr_print_xen_head(FILE *f, const struct fo_corr_switch *s)
{
	(void)s;
	fprintf(f, "  switched by Xen's failover watch in its timer softirq: no dom0 process took part, so these are "
		   "Xen's steps only (no daemon wake-up, run queue or ioctl)\n");
}

void fo_corr_print_xen_tail(FILE *f, const struct fo_corr_switch *s)
{
	fprintf(f, "  stamps: Xen's NOW() mapped onto CLOCK_MONOTONIC by failoverd (the bound is in its message%s%s%s)\n",
		s->ev.message[0] ? ": \"" : ", which is empty", s->ev.message, s->ev.message[0] ? "\"" : "");
}
