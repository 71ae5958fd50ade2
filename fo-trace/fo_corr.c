// SPDX-License-Identifier: MIT
/*
 * fo_corr.c - correlation of failoverd's phase stamps with the kernel's
 * (see fo_corr.h). Pure functions over arrays: no BPF, no I/O besides the
 * FILE the reports are printed to.
 */
#include "fo_corr.h"
#include "fo_corr_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const cp_key[FO_CP_COUNT] = {
	NULL, "detected", "decided", "pause_issued", "pause_done", "unpause_issued", "unpause_done",
};

static void copy_str(char *dst, size_t len, const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	snprintf(dst, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

bool fo_corr_event_from_json(const cJSON *ev, struct fo_corr_event *out, char *why, size_t len)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "phases_us");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "time_ns");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(ev, "id");
	const cJSON *det;
	uint64_t fault;

	memset(out, 0, sizeof(*out));
	copy_str(out->kind, sizeof(out->kind), ev, "kind");
	if (strcmp(out->kind, "switchover") != 0 && strcmp(out->kind, "drill") != 0) {
		snprintf(why, len, "event kind '%s' is not a switch", out->kind);
		return false;
	}
	if (!cJSON_IsObject(ph) || !cJSON_IsNumber(t)) {
		snprintf(why, len, "switch event without time_ns or phases_us");
		return false;
	}
	det = cJSON_GetObjectItemCaseSensitive(ph, "detected");
	if (!cJSON_IsNumber(det) || det->valuedouble < 0) {
		snprintf(why, len, "switch event without phases_us.detected");
		return false;
	}
	/* time_ns is the detection stamp itself (the ring slot is claimed at
	 * detection, core/pair/switch_lifecycle.c), phases are us after the fault. */
	fault = (uint64_t)t->valuedouble - (uint64_t)llround(det->valuedouble) * 1000u;
	out->ph[FO_CP_FAULT] = fault;
	for (int i = 1; i < FO_CP_COUNT; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(ph, cp_key[i]);
		if (cJSON_IsNumber(v) && v->valuedouble >= 0)
			out->ph[i] = fault + (uint64_t)llround(v->valuedouble) * 1000u;
	}
	out->ph[FO_CP_DETECTED] = (uint64_t)t->valuedouble;
	out->id = cJSON_IsNumber(id) ? (uint64_t)id->valuedouble : 0;
	copy_str(out->pair, sizeof(out->pair), ev, "pair");
	copy_str(out->fault, sizeof(out->fault), ev, "fault");
	copy_str(out->path, sizeof(out->path), ev, "path");
	copy_str(out->from, sizeof(out->from), ev, "from");
	copy_str(out->to, sizeof(out->to), ev, "to");
	copy_str(out->result, sizeof(out->result), ev, "result");
	copy_str(out->message, sizeof(out->message), ev, "message");
	return true;
}

enum fo_corr_op fo_corr_ioctl_op(const struct fo_trace_event *r)
{
	if (r->type != FO_EV_IOCTL)
		return FO_OP_OTHER;
	if (r->ioctl.kind == FO_IOC_PRIVCMD_HYPERCALL && r->ioctl.hc_op == FO_HYPERVISOR_DOMCTL) {
		switch (r->ioctl.domctl_cmd) {
		case FO_DOMCTL_PAUSEDOMAIN: return FO_OP_PAUSE;
		case FO_DOMCTL_UNPAUSEDOMAIN: return FO_OP_UNPAUSE;
		case FO_DOMCTL_GETDOMAININFO: return FO_OP_GETINFO;
		default: return FO_OP_OTHER;
		}
	}
	/* libxenctrl's xc_domain_getinfolist confirms through a sysctl */
	if (r->ioctl.kind == FO_IOC_PRIVCMD_HYPERCALL && r->ioctl.hc_op == FO_HYPERVISOR_SYSCTL &&
	    r->ioctl.domctl_cmd == (FO_SYSCTL_TAG | FO_SYSCTL_GETDOMAININFOLIST))
		return FO_OP_GETINFO;
	if (r->ioctl.kind == FO_IOC_FO_SWITCH) {
		switch (r->ioctl.nr) {
		case FO_SWITCH_NR_PAUSE: return FO_OP_PAUSE;
		case FO_SWITCH_NR_UNPAUSE: return FO_OP_UNPAUSE;
		case FO_SWITCH_NR_GETSTATE: return FO_OP_GETINFO;
		case FO_SWITCH_NR_SWITCH: return FO_OP_SWITCH;
		default: return FO_OP_OTHER;
		}
	}
	return FO_OP_OTHER;
}

/* A breakdown is cut at a chain of points (struct fo_corr_point,
 * fo_corr_internal.h); kernel points are inserted only where they were
 * found. These describe the daemon's switch ("xenctrl") and the kernel
 * module's path, which failoverd reports with the same phases; a switch
 * by Xen's watch has its own chain (fo_corr_xen.c). */
static const struct fo_corr_seg_desc seg_descs[] = {
	{ "fault", "woken", "until the daemon is woken (detection wait: timer, heartbeat timeout, event)" },
	{ "woken", "running", "run-queue latency: woken -> on a CPU" },
	{ "running", "detected", "daemon: on CPU -> fault seen" },
	{ "fault", "detected", "detection (no kernel wake-up in this interval)" },
	{ "detected", "decided", "daemon: decide (re-read members)" },
	{ "decided", "pause_issued", "daemon: to the pause call" },
	{ "decided", "switch ioctl", "daemon: to the SWITCH ioctl" },
	{ "switch ioctl", "pause_issued", "kernel module: to the pause hypercall" },
	{ "pause_issued", "pause ioctl", "user -> kernel (libxencall / ioctl entry)" },
	{ "pause ioctl", "pause returned", "pause ioctl: privcmd + Xen pausedomain" },
	{ "pause returned", "pause_done", "confirm paused (getdomaininfo)" },
	{ "pause_issued", "pause_done", "pause + confirm" },
	{ "pause_done", "unpause_issued", "daemon: between pause and unpause" },
	{ "unpause_issued", "unpause ioctl", "user -> kernel (ioctl entry)" },
	{ "unpause ioctl", "unpause returned", "unpause ioctl: privcmd + Xen unpausedomain" },
	{ "unpause returned", "unpause_done", "confirm running (getdomaininfo)" },
	{ "unpause_issued", "unpause_done", "unpause + confirm" },
};

#define N_SEG_DESCS (sizeof(seg_descs) / sizeof(seg_descs[0]))

static const char *seg_what(const struct fo_corr_seg_desc *d, size_t nd, const char *from, const char *to)
{
	for (size_t i = 0; i < nd; i++)
		if (!strcmp(d[i].from, from) && !strcmp(d[i].to, to))
			return d[i].what;
	return "";
}

/* Whose stamps bound a segment: one clock, or both. A drill's fault is
 * failoverd's stamp even when Xen did the switch. */
static const char *seg_source(const char *a, const char *b)
{
	if (!strcmp(a, b))
		return a;
	if (!strcmp(a, "xen") || !strcmp(b, "xen"))
		return "daemon+xen";
	return "daemon+kernel";
}

size_t fo_corr_build_segs(const struct fo_corr_point *p, size_t np, const struct fo_corr_seg_desc *d, size_t nd,
			  struct fo_corr_seg *seg, int64_t *sum, int64_t *worst)
{
	size_t ns = 0;

	*sum = 0;
	*worst = 0;
	for (size_t i = 0; i + 1 < np && ns < FO_CORR_MAX_SEG; i++) {
		struct fo_corr_seg *s = &seg[ns++];
		s->from = p[i].label;
		s->to = p[i + 1].label;
		s->what = seg_what(d, nd, s->from, s->to);
		s->source = seg_source(p[i].source, p[i + 1].source);
		s->start_ns = p[i].t;
		s->end_ns = p[i + 1].t;
		s->dur_ns = (int64_t)(p[i + 1].t - p[i].t);
		*sum += s->dur_ns;
		if (s->dur_ns < *worst)
			*worst = s->dur_ns;
	}
	return ns;
}

static bool in_window(uint64_t t, uint64_t lo, uint64_t hi, uint64_t tol)
{
	return t + tol >= lo && t <= hi + tol;
}

int fo_corr_switch(const struct fo_corr_event *ev, const struct fo_trace_event *recs, size_t n,
		   uint32_t tgid, uint64_t tol_ns, struct fo_corr_switch *out)
{
	const uint64_t *ph = ev->ph;
	struct fo_corr_point pt[FO_CORR_MAX_SEG + 1];
	size_t np = 0;

	memset(out, 0, sizeof(*out));
	out->ev = *ev;
	if (!ph[FO_CP_UNPAUSE_DONE] || !ph[FO_CP_FAULT])
		return -1;
	/* Xen switched inside its timer softirq: no dom0 process took part,
	 * and failoverd's records in this window are its later adoption. */
	if (fo_corr_switched_by_xen(ev))
		return fo_corr_switch_xen(ev, tol_ns, out);

	for (size_t i = 0; i < n; i++) {
		const struct fo_trace_event *r = &recs[i];
		if (r->tgid != tgid)
			continue;
		if (r->type == FO_EV_RUN) {
			/* The wake-up that led to detection: the daemon's last
			 * return to a CPU from sleep at or before "detected". */
			if (r->run.off_reason != FO_OFF_PREEMPTED && r->ts_ns <= ph[FO_CP_DETECTED] + tol_ns &&
			    (!out->have_wake || r->ts_ns >= out->wake.ts_ns)) {
				out->wake = *r;
				out->have_wake = true;
			}
			continue;
		}
		if (r->type != FO_EV_IOCTL)
			continue;
		enum fo_corr_op op = fo_corr_ioctl_op(r);
		uint64_t enter = r->ioctl.enter_ns, exit = r->ts_ns;
		if (in_window(enter, ph[FO_CP_DETECTED], ph[FO_CP_UNPAUSE_DONE], tol_ns) &&
		    exit <= ph[FO_CP_UNPAUSE_DONE] + tol_ns) {
			out->n_ioctls++;
			out->ioctl_ns += exit - enter;
		}
		if (op == FO_OP_SWITCH && !out->have_switch_ioc &&
		    in_window(enter, ph[FO_CP_DECIDED] ? ph[FO_CP_DECIDED] : ph[FO_CP_DETECTED],
			      ph[FO_CP_PAUSE_ISSUED], tol_ns)) {
			out->switch_ioc = *r;
			out->have_switch_ioc = true;
		} else if (op == FO_OP_PAUSE && !out->have_pause && ph[FO_CP_PAUSE_ISSUED] &&
			   in_window(enter, ph[FO_CP_PAUSE_ISSUED], ph[FO_CP_PAUSE_DONE], tol_ns) &&
			   exit <= ph[FO_CP_PAUSE_DONE] + tol_ns) {
			out->pause_ioc = *r;
			out->have_pause = true;
		} else if (op == FO_OP_UNPAUSE && !out->have_unpause && ph[FO_CP_UNPAUSE_ISSUED] &&
			   in_window(enter, ph[FO_CP_UNPAUSE_ISSUED], ph[FO_CP_UNPAUSE_DONE], tol_ns) &&
			   exit <= ph[FO_CP_UNPAUSE_DONE] + tol_ns) {
			out->unpause_ioc = *r;
			out->have_unpause = true;
		}
	}
	/* Confirmations: getinfo calls after each working call, before its _done. */
	for (size_t i = 0; i < n; i++) {
		const struct fo_trace_event *r = &recs[i];
		if (r->tgid != tgid || fo_corr_ioctl_op(r) != FO_OP_GETINFO)
			continue;
		if (out->have_pause && r->ioctl.enter_ns >= out->pause_ioc.ts_ns &&
		    r->ts_ns <= ph[FO_CP_PAUSE_DONE] + tol_ns) {
			out->pause_confirm_n++;
			out->pause_confirm_ns += r->ts_ns - r->ioctl.enter_ns;
		}
		if (out->have_unpause && r->ioctl.enter_ns >= out->unpause_ioc.ts_ns &&
		    r->ts_ns <= ph[FO_CP_UNPAUSE_DONE] + tol_ns) {
			out->unpause_confirm_n++;
			out->unpause_confirm_ns += r->ts_ns - r->ioctl.enter_ns;
		}
	}
	/* Preemptions of the daemon while it was switching. */
	for (size_t i = 0; i < n; i++) {
		const struct fo_trace_event *r = &recs[i];
		uint64_t from = out->have_wake ? out->wake.ts_ns : ph[FO_CP_DETECTED];
		if (r->tgid != tgid || r->type != FO_EV_RUN || !r->run.off_ns)
			continue;
		if (r->run.off_ns >= from && r->ts_ns <= ph[FO_CP_UNPAUSE_DONE] + tol_ns) {
			if (r->run.off_reason == FO_OFF_PREEMPTED) {
				out->preemptions++;
				out->preempted_ns += r->ts_ns - r->run.off_ns;
			} else {
				out->sleeps++;
				out->slept_ns += r->ts_ns - r->run.off_ns;
			}
		}
	}

	pt[np++] = (struct fo_corr_point){ "fault", "daemon", ph[FO_CP_FAULT] };
	/* The wake-up belongs in the chain only when it came after the fault:
	 * a manual switchover's "fault" is the request arriving, which the
	 * daemon reads while already running. */
	if (out->have_wake && out->wake.run.wake_ns + tol_ns >= ph[FO_CP_FAULT] && out->wake.run.wake_ns) {
		out->wake_in_chain = true;
		pt[np++] = (struct fo_corr_point){ "woken", "kernel", out->wake.run.wake_ns };
		pt[np++] = (struct fo_corr_point){ "running", "kernel", out->wake.ts_ns };
	}
	pt[np++] = (struct fo_corr_point){ "detected", "daemon", ph[FO_CP_DETECTED] };
	if (ph[FO_CP_DECIDED])
		pt[np++] = (struct fo_corr_point){ "decided", "daemon", ph[FO_CP_DECIDED] };
	if (out->have_switch_ioc)
		pt[np++] = (struct fo_corr_point){ "switch ioctl", "kernel", out->switch_ioc.ioctl.enter_ns };
	if (ph[FO_CP_PAUSE_ISSUED])
		pt[np++] = (struct fo_corr_point){ "pause_issued", "daemon", ph[FO_CP_PAUSE_ISSUED] };
	if (out->have_pause) {
		pt[np++] = (struct fo_corr_point){ "pause ioctl", "kernel", out->pause_ioc.ioctl.enter_ns };
		pt[np++] = (struct fo_corr_point){ "pause returned", "kernel", out->pause_ioc.ts_ns };
	}
	if (ph[FO_CP_PAUSE_DONE])
		pt[np++] = (struct fo_corr_point){ "pause_done", "daemon", ph[FO_CP_PAUSE_DONE] };
	if (ph[FO_CP_UNPAUSE_ISSUED])
		pt[np++] = (struct fo_corr_point){ "unpause_issued", "daemon", ph[FO_CP_UNPAUSE_ISSUED] };
	if (out->have_unpause) {
		pt[np++] = (struct fo_corr_point){ "unpause ioctl", "kernel", out->unpause_ioc.ioctl.enter_ns };
		pt[np++] = (struct fo_corr_point){ "unpause returned", "kernel", out->unpause_ioc.ts_ns };
	}
	pt[np++] = (struct fo_corr_point){ "unpause_done", "daemon", ph[FO_CP_UNPAUSE_DONE] };

	out->nseg = fo_corr_build_segs(pt, np, seg_descs, N_SEG_DESCS, out->seg, &out->sum_ns, &out->worst_ns);
	out->total_ns = (int64_t)(ph[FO_CP_UNPAUSE_DONE] - ph[FO_CP_FAULT]);
	out->consistent = out->worst_ns >= -(int64_t)tol_ns;
	return 0;
}

int fo_corr_xl(uint32_t tgid, uint64_t spawn_ns, const struct fo_trace_event *recs, size_t n,
	       struct fo_corr_xl *out)
{
	struct fo_corr_point pt[8];
	size_t np = 0;
	int64_t worst;

	memset(out, 0, sizeof(*out));
	out->tgid = tgid;
	out->spawn_ns = spawn_ns;
	for (size_t i = 0; i < n; i++) {
		const struct fo_trace_event *r = &recs[i];
		if (r->tgid != tgid)
			continue;
		switch (r->type) {
		case FO_EV_EXEC:
			/* The last image counts (sh -c "... && xl pause" may exec xl
			 * in place of the shell), unless the work already happened.
			 * A second image did not start at the spawn: drop it. */
			if (!out->op_enter_ns) {
				if (out->exec_ns)
					out->spawn_ns = 0;
				out->exec_ns = r->ts_ns;
				memcpy(out->comm, r->proc.comm, sizeof(out->comm));
			}
			break;
		case FO_EV_EXIT:
			out->exit_ns = r->ts_ns;
			out->exit_code = r->proc.exit_code;
			break;
		case FO_EV_IOCTL: {
			enum fo_corr_op op = fo_corr_ioctl_op(r);
			out->n_ioctls++;
			out->ioctl_ns += r->ts_ns - r->ioctl.enter_ns;
			if (r->ioctl.kind == FO_IOC_PRIVCMD_HYPERCALL) {
				out->n_hypercalls++;
				if (!out->first_hc_ns)
					out->first_hc_ns = r->ioctl.enter_ns;
			}
			/* The working call: the first pause/unpause domctl. */
			if ((op == FO_OP_PAUSE || op == FO_OP_UNPAUSE) && !out->op_enter_ns) {
				out->op_enter_ns = r->ioctl.enter_ns;
				out->op_exit_ns = r->ts_ns;
				out->op_cmd = r->ioctl.domctl_cmd ? r->ioctl.domctl_cmd
								 : (op == FO_OP_PAUSE ? FO_DOMCTL_PAUSEDOMAIN
										      : FO_DOMCTL_UNPAUSEDOMAIN);
			}
			break;
		}
		case FO_EV_RUN:
			if (r->run.wake_ns && r->ts_ns >= r->run.wake_ns) {
				out->runq_ns += r->ts_ns - r->run.wake_ns;
				out->n_runq++;
			}
			if (r->run.off_reason == FO_OFF_BLOCKED && r->run.off_ns && r->run.wake_ns >= r->run.off_ns)
				out->blocked_ns += r->run.wake_ns - r->run.off_ns;
			break;
		default:
			break;
		}
	}
	if (out->spawn_ns)
		pt[np++] = (struct fo_corr_point){ "spawn", "fo-trace", out->spawn_ns };
	if (out->exec_ns)
		pt[np++] = (struct fo_corr_point){ "exec", "kernel", out->exec_ns };
	if (out->first_hc_ns && out->first_hc_ns != out->op_enter_ns)
		pt[np++] = (struct fo_corr_point){ "first hypercall", "kernel", out->first_hc_ns };
	if (out->op_enter_ns) {
		pt[np++] = (struct fo_corr_point){ "domctl ioctl", "kernel", out->op_enter_ns };
		pt[np++] = (struct fo_corr_point){ "domctl returned", "kernel", out->op_exit_ns };
	}
	if (out->exit_ns)
		pt[np++] = (struct fo_corr_point){ "exit", "kernel", out->exit_ns };
	out->nseg = fo_corr_build_segs(pt, np, NULL, 0, out->seg, &out->sum_ns, &worst);
	for (size_t i = 0; i < out->nseg; i++) {
		struct fo_corr_seg *s = &out->seg[i];
		if (!strcmp(s->from, "spawn"))
			s->what = "fork + exec (process start)";
		else if (!strcmp(s->from, "exec") && !strcmp(s->to, "exit"))
			s->what = "the whole run (no pause/unpause hypercall seen)";
		else if (!strcmp(s->from, "exec"))
			s->what = "dynamic loading, libxl/libxc/xenstore setup";
		else if (!strcmp(s->from, "first hypercall"))
			s->what = "xl: lookups before the working call (xenstore, domain info)";
		else if (!strcmp(s->from, "domctl ioctl"))
			s->what = "the pause/unpause hypercall ioctl";
		else if (!strcmp(s->from, "domctl returned"))
			s->what = "after the call: teardown, exit";
	}
	if (np >= 2)
		out->total_ns = (int64_t)(pt[np - 1].t - pt[0].t);
	out->complete = out->exec_ns && out->op_enter_ns && out->exit_ns;
	return out->complete ? 0 : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t fo_corr_pct(uint64_t *v, size_t n, double pct)
{
	size_t k;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	k = (size_t)ceil(pct / 100.0 * (double)n);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

void fo_corr_wakes(const struct fo_trace_event *recs, size_t n, uint32_t tgid, struct fo_corr_wakes *out)
{
	uint64_t *lat = calloc(n ? n : 1, sizeof(*lat)), sum = 0;
	struct { char comm[FO_TRACE_COMM_LEN]; unsigned n; } tally[64];
	size_t ntally = 0, k = 0;

	memset(out, 0, sizeof(*out));
	if (!lat)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct fo_trace_event *r = &recs[i];
		if (r->tgid != tgid || r->type != FO_EV_RUN || !r->run.wake_ns || r->ts_ns < r->run.wake_ns)
			continue;
		out->count++;
		if (r->run.off_reason == FO_OFF_PREEMPTED)
			out->preempted++;
		else
			out->blocked++;
		lat[k++] = r->ts_ns - r->run.wake_ns;
		sum += r->ts_ns - r->run.wake_ns;
		out->cpu[r->cpu < 8 ? r->cpu : 7]++;
		if (r->run.prev_pid == 0) {
			out->from_idle++;
			continue;
		}
		size_t j;
		for (j = 0; j < ntally; j++)
			if (!strncmp(tally[j].comm, r->run.prev_comm, FO_TRACE_COMM_LEN))
				break;
		if (j == ntally && ntally < 64) {
			memcpy(tally[j].comm, r->run.prev_comm, FO_TRACE_COMM_LEN);
			tally[j].comm[FO_TRACE_COMM_LEN - 1] = 0;
			tally[j].n = 0;
			ntally++;
		}
		if (j < ntally)
			tally[j].n++;
	}
	out->mean_ns = k ? sum / k : 0;
	out->max_ns = fo_corr_pct(lat, k, 100);
	out->p99_ns = fo_corr_pct(lat, k, 99);
	out->p50_ns = fo_corr_pct(lat, k, 50);
	free(lat);
	/* the five most displaced, most first */
	for (size_t a = 0; a < 5 && a < ntally; a++) {
		size_t best = a;
		for (size_t b = a + 1; b < ntally; b++)
			if (tally[b].n > tally[best].n)
				best = b;
		if (best != a) {
			__typeof__(tally[0]) t = tally[a];
			tally[a] = tally[best];
			tally[best] = t;
		}
		memcpy(out->displaced[a].comm, tally[a].comm, FO_TRACE_COMM_LEN);
		out->displaced[a].n = tally[a].n;
		out->ndisplaced++;
	}
}

/* ------------------------------------------------------------ reports */

static double us(int64_t ns)
{
	return (double)ns / 1000.0;
}

void fo_corr_print_switch(FILE *f, const struct fo_corr_switch *s)
{
	const struct fo_corr_event *e = &s->ev;
	bool xen = fo_corr_switched_by_xen(e);

	fprintf(f, "switch #%" PRIu64 " pair %s (%s, fault %s, path %s): %s -> %s, result %s\n", e->id, e->pair,
		e->kind, e->fault, e->path[0] ? e->path : "?", e->from, e->to, e->result);
	if (xen)
		fo_corr_print_xen_head(f, s);
	fprintf(f, "  %-18s %-18s %12s %7s  %-14s %s\n", "from", "to", "us", "share", "stamps", "what");
	for (size_t i = 0; i < s->nseg; i++) {
		const struct fo_corr_seg *g = &s->seg[i];
		fprintf(f, "  %-18s %-18s %12.1f %6.1f%%  %-14s %s\n", g->from, g->to, us(g->dur_ns),
			s->total_ns > 0 ? 100.0 * (double)g->dur_ns / (double)s->total_ns : 0.0, g->source, g->what);
	}
	fprintf(f, "  %-37s %12.1f          (segments sum %.1f us, %s)\n",
		xen ? "Xen's total fault -> unpause_done" : "daemon total fault -> unpause_done", us(s->total_ns),
		us(s->sum_ns), s->consistent ? "stamps in order" : "STAMPS OUT OF ORDER");
	if (xen) {
		fo_corr_print_xen_tail(f, s);
		return;
	}
	if (s->have_wake)
		fprintf(f, "  wake-up: cpu %u, woken by %.16s[%u], took the CPU from %.16s[%u] prio %d%s, "
			   "run-queue %.1f us\n",
			s->wake.cpu, s->wake.run.waker_comm[0] ? s->wake.run.waker_comm : "?", s->wake.run.waker_pid,
			s->wake.run.prev_pid ? s->wake.run.prev_comm : "idle", s->wake.run.prev_pid,
			s->wake.run.prev_prio, s->wake_in_chain ? "" : " (before the fault stamp: not in the chain)",
			us((int64_t)(s->wake.ts_ns - s->wake.run.wake_ns)));
	fprintf(f, "  ioctls in the switch: %u, %.1f us inside; confirms: pause %u (%.1f us), unpause %u (%.1f us);"
		   " preempted %u times (%.1f us), asleep %u times (%.1f us)\n",
		s->n_ioctls, us((int64_t)s->ioctl_ns), s->pause_confirm_n, us((int64_t)s->pause_confirm_ns),
		s->unpause_confirm_n, us((int64_t)s->unpause_confirm_ns), s->preemptions,
		us((int64_t)s->preempted_ns), s->sleeps, us((int64_t)s->slept_ns));
}

/* Segment key for the summary: "from -> to". */
void fo_corr_print_summary(FILE *f, const struct fo_corr_switch *s, size_t n)
{
	/* Keyed by source as well: Xen's "fault -> detected" is not the daemon's. */
	struct { const char *from, *to, *source; } keys[64];
	size_t nk = 0;
	uint64_t *v = calloc(n ? n : 1, sizeof(*v)), *tot = calloc(n ? n : 1, sizeof(*tot));
	double mean_total = 0;

	if (!v || !tot) {
		free(v);
		free(tot);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		mean_total += us(s[i].total_ns) / (double)n;
		for (size_t j = 0; j < s[i].nseg; j++) {
			size_t k;
			for (k = 0; k < nk; k++)
				if (!strcmp(keys[k].from, s[i].seg[j].from) && !strcmp(keys[k].to, s[i].seg[j].to) &&
				    !strcmp(keys[k].source, s[i].seg[j].source))
					break;
			if (k == nk && nk < 64)
				keys[nk++] = (__typeof__(keys[0])){ s[i].seg[j].from, s[i].seg[j].to, s[i].seg[j].source };
		}
	}
	fprintf(f, "summary over %zu switches (us; share of the mean total)\n", n);
	fprintf(f, "  %-18s %-18s %4s %10s %10s %10s %10s %7s  %s\n", "from", "to", "n", "mean", "min", "p50", "max",
		"share", "stamps");
	for (size_t k = 0; k < nk; k++) {
		size_t m = 0;
		double sum = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < s[i].nseg; j++)
				if (!strcmp(keys[k].from, s[i].seg[j].from) && !strcmp(keys[k].to, s[i].seg[j].to) &&
				    !strcmp(keys[k].source, s[i].seg[j].source)) {
					int64_t d = s[i].seg[j].dur_ns;
					v[m++] = d > 0 ? (uint64_t)d : 0;
					sum += us(d);
				}
		uint64_t p50 = fo_corr_pct(v, m, 50);
		fprintf(f, "  %-18s %-18s %4zu %10.1f %10.1f %10.1f %10.1f %6.1f%%  %s\n", keys[k].from, keys[k].to, m,
			sum / (double)m, us((int64_t)v[0]), us((int64_t)p50), us((int64_t)v[m - 1]),
			mean_total > 0 ? 100.0 * (sum / (double)n) / mean_total : 0.0, keys[k].source);
	}
	for (size_t i = 0; i < n; i++)
		tot[i] = s[i].total_ns > 0 ? (uint64_t)s[i].total_ns : 0;
	uint64_t p50 = fo_corr_pct(tot, n, 50);
	if (n)
		fprintf(f, "  %-37s %4zu %10.1f %10.1f %10.1f %10.1f\n", "total fault -> unpause_done", n, mean_total,
			us((int64_t)tot[0]), us((int64_t)p50), us((int64_t)tot[n - 1]));
	free(v);
	free(tot);
}

void fo_corr_print_xl(FILE *f, const struct fo_corr_xl *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct fo_corr_xl *r = &x[i];
		int64_t before = r->op_enter_ns && r->nseg ? (int64_t)(r->op_enter_ns - r->seg[0].start_ns) : 0;
		fprintf(f, "%s[%u] %s (exit code %d)\n", r->comm[0] ? r->comm : "?", r->tgid,
			r->op_cmd == FO_DOMCTL_PAUSEDOMAIN ? "pause" : r->op_cmd == FO_DOMCTL_UNPAUSEDOMAIN ? "unpause"
												: "no pause/unpause seen",
			r->exit_code >> 8);
		fprintf(f, "  %-16s %-16s %12s %7s  %s\n", "from", "to", "us", "share", "what");
		for (size_t j = 0; j < r->nseg; j++)
			fprintf(f, "  %-16s %-16s %12.1f %6.1f%%  %s\n", r->seg[j].from, r->seg[j].to, us(r->seg[j].dur_ns),
				r->total_ns > 0 ? 100.0 * (double)r->seg[j].dur_ns / (double)r->total_ns : 0.0,
				r->seg[j].what);
		fprintf(f, "  total %.1f us; before the working hypercall %.1f us (%.1f%%); waiting for a CPU %.1f us "
			   "(%u times), asleep %.1f us, in %u privcmd ioctls %.1f us\n",
			us(r->total_ns), us(before), r->total_ns > 0 ? 100.0 * (double)before / (double)r->total_ns : 0.0,
			us((int64_t)r->runq_ns), r->n_runq, us((int64_t)r->blocked_ns), r->n_ioctls,
			us((int64_t)r->ioctl_ns));
	}
}

static cJSON *segs_json(const struct fo_corr_seg *seg, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "from", seg[i].from);
		cJSON_AddStringToObject(o, "to", seg[i].to);
		cJSON_AddStringToObject(o, "what", seg[i].what);
		cJSON_AddStringToObject(o, "source", seg[i].source);
		cJSON_AddNumberToObject(o, "start_ns", (double)seg[i].start_ns);
		cJSON_AddNumberToObject(o, "end_ns", (double)seg[i].end_ns);
		cJSON_AddNumberToObject(o, "us", us(seg[i].dur_ns));
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static cJSON *ioctl_json(const struct fo_trace_event *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "enter_ns", (double)r->ioctl.enter_ns);
	cJSON_AddNumberToObject(o, "exit_ns", (double)r->ts_ns);
	cJSON_AddNumberToObject(o, "us", us((int64_t)(r->ts_ns - r->ioctl.enter_ns)));
	cJSON_AddNumberToObject(o, "ret", (double)r->ioctl.ret);
	cJSON_AddStringToObject(o, "device", r->ioctl.kind == FO_IOC_FO_SWITCH ? "fo_switch" : "privcmd");
	cJSON_AddNumberToObject(o, "domctl_cmd", r->ioctl.domctl_cmd);
	cJSON_AddNumberToObject(o, "domid", r->ioctl.domid == 0xffffffffu ? -1 : (double)r->ioctl.domid);
	cJSON_AddNumberToObject(o, "cpu", r->cpu);
	return o;
}

cJSON *fo_corr_switch_json(const struct fo_corr_switch *s)
{
	cJSON *o = cJSON_CreateObject(), *ph = cJSON_AddObjectToObject(o, "phases_ns");
	static const char *const names[FO_CP_COUNT] = { "fault", "detected", "decided", "pause_issued",
							"pause_done", "unpause_issued", "unpause_done" };

	cJSON_AddNumberToObject(o, "id", (double)s->ev.id);
	cJSON_AddStringToObject(o, "pair", s->ev.pair);
	cJSON_AddStringToObject(o, "kind", s->ev.kind);
	cJSON_AddStringToObject(o, "fault", s->ev.fault);
	cJSON_AddStringToObject(o, "path", s->ev.path);
	/* Who switched: on "hypervisor" nothing in dom0 did, on "kernel" the module. */
	cJSON_AddStringToObject(o, "switched_by", fo_corr_switched_by_xen(&s->ev) ? "xen"
						  : !strcmp(s->ev.path, "kernel") ? "kernel module" : "failoverd");
	cJSON_AddStringToObject(o, "message", s->ev.message);
	cJSON_AddStringToObject(o, "from", s->ev.from);
	cJSON_AddStringToObject(o, "to", s->ev.to);
	cJSON_AddStringToObject(o, "result", s->ev.result);
	for (int i = 0; i < FO_CP_COUNT; i++)
		if (s->ev.ph[i])
			cJSON_AddNumberToObject(ph, names[i], (double)s->ev.ph[i]);
		else
			cJSON_AddNullToObject(ph, names[i]);
	cJSON_AddItemToObject(o, "segments", segs_json(s->seg, s->nseg));
	cJSON_AddNumberToObject(o, "total_us", us(s->total_ns));
	cJSON_AddNumberToObject(o, "sum_us", us(s->sum_ns));
	cJSON_AddNumberToObject(o, "worst_segment_us", us(s->worst_ns));
	cJSON_AddBoolToObject(o, "consistent", s->consistent);
	if (s->have_wake) {
		cJSON *w = cJSON_AddObjectToObject(o, "wakeup");
		cJSON_AddNumberToObject(w, "wake_ns", (double)s->wake.run.wake_ns);
		cJSON_AddNumberToObject(w, "run_ns", (double)s->wake.ts_ns);
		cJSON_AddNumberToObject(w, "runq_us", us((int64_t)(s->wake.ts_ns - s->wake.run.wake_ns)));
		cJSON_AddNumberToObject(w, "cpu", s->wake.cpu);
		cJSON_AddNumberToObject(w, "tid", s->wake.pid);
		cJSON_AddStringToObject(w, "waker", s->wake.run.waker_comm);
		cJSON_AddNumberToObject(w, "waker_pid", s->wake.run.waker_pid);
		cJSON_AddStringToObject(w, "preempted", s->wake.run.prev_pid ? s->wake.run.prev_comm : "idle");
		cJSON_AddNumberToObject(w, "preempted_pid", s->wake.run.prev_pid);
		cJSON_AddNumberToObject(w, "preempted_prio", s->wake.run.prev_prio);
		cJSON_AddBoolToObject(w, "in_chain", s->wake_in_chain);
	} else {
		cJSON_AddNullToObject(o, "wakeup");
	}
	if (s->have_pause)
		cJSON_AddItemToObject(o, "pause_ioctl", ioctl_json(&s->pause_ioc));
	else
		cJSON_AddNullToObject(o, "pause_ioctl");
	if (s->have_unpause)
		cJSON_AddItemToObject(o, "unpause_ioctl", ioctl_json(&s->unpause_ioc));
	else
		cJSON_AddNullToObject(o, "unpause_ioctl");
	if (s->have_switch_ioc)
		cJSON_AddItemToObject(o, "switch_ioctl", ioctl_json(&s->switch_ioc));
	cJSON_AddNumberToObject(o, "pause_confirms", s->pause_confirm_n);
	cJSON_AddNumberToObject(o, "pause_confirm_us", us((int64_t)s->pause_confirm_ns));
	cJSON_AddNumberToObject(o, "unpause_confirms", s->unpause_confirm_n);
	cJSON_AddNumberToObject(o, "unpause_confirm_us", us((int64_t)s->unpause_confirm_ns));
	cJSON_AddNumberToObject(o, "ioctls", s->n_ioctls);
	cJSON_AddNumberToObject(o, "ioctl_us", us((int64_t)s->ioctl_ns));
	cJSON_AddNumberToObject(o, "preemptions", s->preemptions);
	cJSON_AddNumberToObject(o, "preempted_us", us((int64_t)s->preempted_ns));
	cJSON_AddNumberToObject(o, "sleeps", s->sleeps);
	cJSON_AddNumberToObject(o, "slept_us", us((int64_t)s->slept_ns));
	return o;
}

cJSON *fo_corr_xl_json(const struct fo_corr_xl *x)
{
	cJSON *o = cJSON_CreateObject();
	int64_t before = x->op_enter_ns && x->nseg ? (int64_t)(x->op_enter_ns - x->seg[0].start_ns) : 0;

	cJSON_AddNumberToObject(o, "tgid", x->tgid);
	cJSON_AddStringToObject(o, "comm", x->comm);
	cJSON_AddStringToObject(o, "op", x->op_cmd == FO_DOMCTL_PAUSEDOMAIN ? "pause"
				: x->op_cmd == FO_DOMCTL_UNPAUSEDOMAIN ? "unpause" : "none");
	cJSON_AddNumberToObject(o, "exit_status", x->exit_code >> 8);
	cJSON_AddBoolToObject(o, "complete", x->complete);
	cJSON_AddItemToObject(o, "segments", segs_json(x->seg, x->nseg));
	cJSON_AddNumberToObject(o, "total_us", us(x->total_ns));
	cJSON_AddNumberToObject(o, "before_hypercall_us", us(before));
	cJSON_AddNumberToObject(o, "runq_us", us((int64_t)x->runq_ns));
	cJSON_AddNumberToObject(o, "runq_waits", x->n_runq);
	cJSON_AddNumberToObject(o, "blocked_us", us((int64_t)x->blocked_ns));
	cJSON_AddNumberToObject(o, "ioctls", x->n_ioctls);
	cJSON_AddNumberToObject(o, "hypercalls", x->n_hypercalls);
	cJSON_AddNumberToObject(o, "ioctl_us", us((int64_t)x->ioctl_ns));
	return o;
}

cJSON *fo_corr_wakes_json(const struct fo_corr_wakes *w)
{
	cJSON *o = cJSON_CreateObject(), *c = cJSON_AddArrayToObject(o, "per_cpu"),
	      *d = cJSON_AddArrayToObject(o, "displaced");

	cJSON_AddNumberToObject(o, "count", w->count);
	cJSON_AddNumberToObject(o, "after_sleep", w->blocked);
	cJSON_AddNumberToObject(o, "after_preemption", w->preempted);
	cJSON_AddNumberToObject(o, "cpu_was_idle", w->from_idle);
	cJSON_AddNumberToObject(o, "runq_p50_us", us((int64_t)w->p50_ns));
	cJSON_AddNumberToObject(o, "runq_p99_us", us((int64_t)w->p99_ns));
	cJSON_AddNumberToObject(o, "runq_max_us", us((int64_t)w->max_ns));
	cJSON_AddNumberToObject(o, "runq_mean_us", us((int64_t)w->mean_ns));
	for (int i = 0; i < 8; i++)
		cJSON_AddItemToArray(c, cJSON_CreateNumber(w->cpu[i]));
	for (size_t i = 0; i < w->ndisplaced; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "comm", w->displaced[i].comm);
		cJSON_AddNumberToObject(e, "n", w->displaced[i].n);
		cJSON_AddItemToArray(d, e);
	}
	return o;
}

cJSON *fo_corr_hist_json(const struct fo_trace_hist *h)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < FO_TRACE_HIST_SLOTS; i++) {
		cJSON *e;
		if (!h->slots[i])
			continue;
		e = cJSON_CreateObject();
		/* slot i holds latencies with floor(log2(us)) == i (slot 0: 0-1 us) */
		cJSON_AddNumberToObject(e, "lo_us", i ? (double)(1ull << i) : 0);
		cJSON_AddNumberToObject(e, "hi_us", (double)((2ull << i) - 1));
		cJSON_AddNumberToObject(e, "count", h->slots[i]);
		cJSON_AddItemToArray(a, e);
	}
	return a;
}

void fo_corr_print_hist(FILE *f, const char *title, const struct fo_trace_hist *h)
{
	unsigned max = 0;
	int last = -1;

	for (int i = 0; i < FO_TRACE_HIST_SLOTS; i++) {
		if (h->slots[i] > max)
			max = h->slots[i];
		if (h->slots[i])
			last = i;
	}
	fprintf(f, "%s\n", title);
	if (last < 0) {
		fprintf(f, "  (no samples)\n");
		return;
	}
	fprintf(f, "  %20s : %-8s %s\n", "usecs", "count", "distribution");
	for (int i = 0; i <= last; i++) {
		char range[32], bar[41];
		int w = max ? (int)((uint64_t)h->slots[i] * 40 / max) : 0;
		snprintf(range, sizeof(range), "%llu -> %llu", i ? 1ull << i : 0ull, (2ull << i) - 1);
		memset(bar, '*', (size_t)w);
		bar[w] = 0;
		fprintf(f, "  %20s : %-8u |%-40s|\n", range, h->slots[i], bar);
	}
}
