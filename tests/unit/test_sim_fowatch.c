/* SPDX-License-Identifier: MIT */
/*
 * test_sim_fowatch.c - the simulated Xen failover watch (hv/sim/fowatch.c)
 * driven by its domctl alone, no daemon: the checks, states, errnos, stamps
 * and VIRQs of rt-patches/xen-4.17/0007, 0008 and 0011, with issue #36's
 * fixes (RELEASE hands the fence to the toolstack, the standby's pause is
 * consumed in one step with its check, "paused" only once stopped), that
 * the daemon's translation layer is later tested against. If the model
 * drifts from the patch, these say where.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hv/sim/hv_sim.h"

#define US 1000ull
#define MS 1000000ull
#define PERIOD_US 10000u  /* 10 ms */
#define TIMEOUT_US 50000u /* 50 ms */

struct t {
	struct fo_hv *hv;
	fo_domid_t a, b;
	unsigned beats[8]; /* heartbeats the daemon got, per domid */
};

static void on_heartbeat(void *ctx, fo_domid_t domid, const struct fo_hb_page *page)
{
	struct t *t = ctx;

	(void)page;
	if (domid < 8)
		t->beats[domid]++;
}

static void on_agent(void *ctx, fo_domid_t domid, int err, const char *reason) {}
static void on_domains_changed(void *ctx) {}

/* An active running and its standby paused once by the toolstack. */
static void setup(struct t *t, bool enable)
{
	struct fo_hv_callbacks cb = { .ctx = t, .heartbeat = on_heartbeat, .agent = on_agent,
				      .domains_changed = on_domains_changed };

	memset(t, 0, sizeof(*t));
	if (fo_hv_sim_new(&cb, &t->hv) < 0)
		abort();
	if (enable)
		fo_sim_enable_fowatch(t->hv);
	t->a = fo_sim_add_domain(t->hv, "act", FO_DOM_RUNNING);
	t->b = fo_sim_add_domain(t->hv, "stby", FO_DOM_PAUSED);
}

static void teardown(struct t *t) { t->hv->ops->free(t->hv); }

static struct fo_xen_failover_watch arm_args(struct t *t)
{
	return (struct fo_xen_failover_watch){ .op = FO_FOWATCH_OP_ARM, .standby = t->b, .cpu = 1,
					       .gref = fo_sim_agent_gref(t->hv, t->a),
					       .offset = offsetof(struct fo_hb_page, sequence),
					       .period_us = PERIOD_US, .timeout_us = TIMEOUT_US };
}

static int arm_with(struct t *t, struct fo_xen_failover_watch fw) { return fo_sim_fowatch_domctl(t->hv, t->a, &fw); }
static int arm(struct t *t) { return arm_with(t, arm_args(t)); }

static int op(struct t *t, fo_domid_t d, uint32_t opcode)
{
	struct fo_xen_failover_watch fw = { .op = opcode };

	return fo_sim_fowatch_domctl(t->hv, d, &fw);
}

/* QUERY on `d`; the state, or -errno. */
static int query(struct t *t, fo_domid_t d, struct fo_xen_failover_watch *fw)
{
	int r;

	memset(fw, 0xa5, sizeof(*fw)); /* every OUT field must be written */
	fw->op = FO_FOWATCH_OP_QUERY;
	r = fo_sim_fowatch_domctl(t->hv, d, fw);
	return r < 0 ? r : (int)fw->state;
}

static bool virq_readable(struct t *t)
{
	struct pollfd p = { .fd = fo_sim_fowatch_virq_fd(t->hv), .events = POLLIN };

	return p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* `ms` of virtual time in 1 ms steps, the active heartbeating every 10. */
static void live(struct t *t, uint64_t ms)
{
	for (uint64_t i = 1; i <= ms; i++) {
		if (i % 10 == 0)
			fo_sim_heartbeat(t->hv, t->a);
		fo_sim_advance(t->hv, MS);
	}
}

static enum fo_dom_state get_state(struct t *t, fo_domid_t d)
{
	enum fo_dom_state st = FO_DOM_GONE;

	if (t->hv->ops->get_state(t->hv, d, &st) < 0)
		return FO_DOM_GONE;
	return st;
}

/* ----------------------------------------------------------- tests */

static void test_enosys_unless_enabled(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	setup(&t, false);
	CHECK(arm(&t) == -ENOSYS, "stock Xen: ARM is an unknown domctl");
	CHECK(query(&t, t.a, &fw) == -ENOSYS, "stock Xen: QUERY too (the probe)");
	CHECK(query(&t, 0, &fw) == -ENOSYS, "probing on dom0");
	CHECK(query(&t, 77, &fw) == -ESRCH, "a missing domain is looked up first, as do_domctl does");
	CHECK(fo_sim_fowatch_virq_fd(t.hv) == -1, "no VIRQ without the watch");
	fo_sim_enable_fowatch(t.hv);
	CHECK(query(&t, t.a, &fw) == -ENOENT, "enabled: no watch on it");
	fo_sim_fowatch_absent(t.hv, true);
	CHECK(query(&t, t.a, &fw) == -ENOSYS && arm(&t) == -ENOSYS, "absent: every op ENOSYS");
	fo_sim_fowatch_absent(t.hv, false);
	CHECK(arm(&t) == 0, "present again");
	teardown(&t);
}

static void test_arm_query_progress(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;
	uint64_t armed_at;

	setup(&t, true);
	fo_sim_heartbeat(t.hv, t.a);
	fo_sim_heartbeat(t.hv, t.a);
	armed_at = fo_sim_now(t.hv);
	CHECK(arm(&t) == 0, "armed");
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ARMED, "state %u", fw.state);
	CHECK(fw.op == FO_FOWATCH_OP_QUERY && fw.owner == 0 && fw.active == t.a && fw.standby == t.b,
	      "op %u owner %u active %u standby %u", fw.op, fw.owner, fw.active, fw.standby);
	CHECK(fw.cpu == 1 && fw.gref == fo_sim_agent_gref(t.hv, t.a) && fw.offset == offsetof(struct fo_hb_page, sequence),
	      "ARM parameters echoed");
	CHECK(fw.period_us == PERIOD_US && fw.timeout_us == TIMEOUT_US, "period %u timeout %u", fw.period_us,
	      fw.timeout_us);
	CHECK(fw.quiesce_us == FO_FOWATCH_DEF_QUIESCE_US, "quiesce defaulted: %u", fw.quiesce_us);
	CHECK(fw.shutdown_mask == 0x1bu, "mask defaulted to poweroff|reboot|crash|watchdog: %#x", fw.shutdown_mask);
	CHECK(fw.flags == 0 && fw.reason == FO_FOWATCH_REASON_NONE && fw.shutdown_code == FO_FOWATCH_NO_SHUTDOWN_CODE &&
		      fw.port == 0,
	      "flags %#x reason %u code %u", fw.flags, fw.reason, fw.shutdown_code);
	CHECK(fw.seq == 2, "the sequence read at ARM: %llu", (unsigned long long)fw.seq);
	CHECK(fw.t_armed == armed_at + FO_SIM_XEN_AHEAD_NS && fw.t_progress == fw.t_armed,
	      "stamps in Xen time: armed %llu", (unsigned long long)fw.t_armed);
	CHECK(fw.t_detect == 0 && fw.t_fence == 0 && fw.t_quiesced == 0 && fw.t_switched == 0, "no step reached");
	CHECK(fw.t_now == fo_sim_xen_now(t.hv), "t_now is Xen's NOW()");
	CHECK(query(&t, t.b, &fw) == FO_FOWATCH_STATE_ARMED && fw.active == t.a, "found from the standby too");

	live(&t, 1000);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ARMED, "progress keeps it armed: %u", fw.state);
	CHECK(fw.seq == 102, "the last sequence seen: %llu", (unsigned long long)fw.seq);
	CHECK(fw.t_progress > fw.t_armed && fw.t_now - fw.t_progress < PERIOD_US * US, "progress stamped");
	CHECK(fo_sim_state(t.hv, t.b) == FO_DOM_PAUSED && !fo_sim_fowatch_fenced(t.hv, t.a), "nothing switched");
	CHECK(!virq_readable(&t) && fo_sim_fowatch_virqs(t.hv) == 0, "no VIRQ");
	teardown(&t);
}

static void test_timeout_fires(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;
	unsigned beats;
	uint64_t progress, t0;

	setup(&t, true);
	t0 = fo_sim_now(t.hv);
	CHECK(arm(&t) == 0, "armed");
	live(&t, 95); /* beats at 10..90 ms; the tick at 100 sees the last one */
	fo_sim_advance(t.hv, 5 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ARMED, "not yet");
	progress = fw.t_progress;
	fo_sim_advance(t.hv, 100 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED, "fired: %s", fo_fowatch_state_name(fw.state));
	CHECK(fw.reason == FO_FOWATCH_REASON_TIMEOUT && fw.shutdown_code == FO_FOWATCH_NO_SHUTDOWN_CODE,
	      "reason %s", fo_fowatch_reason_name(fw.reason));
	CHECK(fw.flags & FO_FOWATCH_OUT_FENCED, "the watch holds the active");
	CHECK(fw.t_progress == progress && fw.t_detect - fw.t_progress == TIMEOUT_US * US,
	      "detected on the first tick a timeout after the last progress: %llu ns",
	      (unsigned long long)(fw.t_detect - fw.t_progress));
	CHECK(fw.t_armed <= fw.t_progress && fw.t_progress < fw.t_detect && fw.t_detect <= fw.t_fence &&
		      fw.t_fence <= fw.t_quiesced && fw.t_quiesced <= fw.t_switched && fw.t_switched < fw.t_now,
	      "stamps in order");
	CHECK(fw.t_detect == t0 + 140 * MS + FO_SIM_XEN_AHEAD_NS && fw.t_switched == fw.t_detect &&
		      fw.t_now == fo_sim_xen_now(t.hv) && fw.t_now == fo_sim_now(t.hv) + FO_SIM_XEN_AHEAD_NS,
	      "on the period grid, in Xen time: detect at %lld ns after ARM",
	      (long long)(fw.t_detect - FO_SIM_XEN_AHEAD_NS - t0));
	CHECK(fo_sim_state(t.hv, t.b) == FO_DOM_RUNNING && fo_sim_pause_count(t.hv, t.b) == 0,
	      "the standby runs: its one toolstack pause consumed");
	CHECK(fo_sim_fowatch_fenced(t.hv, t.a) && !fo_sim_fowatch_fenced(t.hv, t.b), "the active is fenced");
	CHECK(get_state(&t, t.a) == FO_DOM_PAUSED && fo_sim_pause_count(t.hv, t.a) == 0,
	      "reported paused (rt-patches 0011), though no toolstack pause is held");
	beats = t.beats[t.a];
	fo_sim_heartbeat(t.hv, t.a);
	CHECK(t.beats[t.a] == beats, "a fenced domain does not execute: no heartbeat");
	CHECK(virq_readable(&t) && fo_sim_fowatch_virqs(t.hv) == 1, "VIRQ raised once");
	CHECK(fo_sim_fowatch_virq_take(t.hv) && !virq_readable(&t) && !fo_sim_fowatch_virq_take(t.hv), "taken once");
	fo_sim_advance(t.hv, 1000 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED && fo_sim_fowatch_virqs(t.hv) == 1, "an end state stays");
	teardown(&t);
}

/*
 * Event mode (rt-patches 0012): a beat is stamped when the agent notifies,
 * off the period grid, and the watch fires a timeout after it exactly; a
 * notify that does not move the sequence is no progress; without 0012 the
 * flag is refused.
 */
static void test_event_mode(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;
	uint64_t t0, last;

	setup(&t, true);
	fw = arm_args(&t);
	fw.flags = FO_FOWATCH_F_EVENT;
	fw.port = fo_sim_agent_port(t.hv, t.a);
	fo_sim_fowatch_no_event(t.hv, true);
	CHECK(arm_with(&t, fw) == -EINVAL, "a series without 0012 refuses the flag");
	fo_sim_fowatch_no_event(t.hv, false);
	t0 = fo_sim_now(t.hv);
	CHECK(arm_with(&t, fw) == 0, "armed in event mode");
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ARMED && fw.flags == FO_FOWATCH_F_EVENT &&
		      fw.port == fo_sim_agent_port(t.hv, t.a),
	      "flag and port echoed: flags %#x port %u", fw.flags, fw.port);
	/* Beats 7 ms apart (off the 10 ms period), for longer than a timeout. */
	for (int i = 0; i < 12; i++) {
		fo_sim_advance(t.hv, 7 * MS);
		fo_sim_heartbeat(t.hv, t.a);
	}
	last = fo_sim_now(t.hv);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ARMED &&
		      fw.t_progress == last + FO_SIM_XEN_AHEAD_NS,
	      "progress stamped at the notify itself: %lld ns after it",
	      (long long)(fw.t_progress - FO_SIM_XEN_AHEAD_NS - last));
	/* Notifies without counting: a loop that still signals is no progress. */
	for (int i = 0; i < 4; i++) {
		fo_sim_advance(t.hv, 7 * MS);
		fo_sim_kernel_notify_only(t.hv, t.a);
	}
	fo_sim_advance(t.hv, TIMEOUT_US * US);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED && fw.reason == FO_FOWATCH_REASON_TIMEOUT,
	      "fired: %s", fo_fowatch_state_name(fw.state));
	CHECK(fw.t_progress == last + FO_SIM_XEN_AHEAD_NS && fw.t_detect - fw.t_progress == TIMEOUT_US * US,
	      "at the deadline itself, not on a period grid: %lld ns after the last beat (timeout %u us)",
	      (long long)(fw.t_detect - fw.t_progress), TIMEOUT_US);
	CHECK((fw.t_detect - FO_SIM_XEN_AHEAD_NS - t0) % (PERIOD_US * US) != 0, "off the grid a polled watch runs on");
	CHECK(fo_sim_state(t.hv, t.b) == FO_DOM_RUNNING && fo_sim_fowatch_fenced(t.hv, t.a), "switched");
	teardown(&t);

	/* A polled watch with the same beats: the tick after the deadline. */
	setup(&t, true);
	t0 = fo_sim_now(t.hv);
	CHECK(arm(&t) == 0, "armed, polling");
	for (int i = 0; i < 12; i++) {
		fo_sim_advance(t.hv, 7 * MS);
		fo_sim_heartbeat(t.hv, t.a);
	}
	last = fo_sim_now(t.hv);
	fo_sim_advance(t.hv, TIMEOUT_US * US + PERIOD_US * US);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED && fw.t_detect - fw.t_progress == TIMEOUT_US * US &&
		      (fw.t_detect - FO_SIM_XEN_AHEAD_NS - t0) % (PERIOD_US * US) == 0 &&
		      fw.t_progress - FO_SIM_XEN_AHEAD_NS > last,
	      "polled: progress seen on the grid, after the beat (%lld ns late)",
	      (long long)(fw.t_progress - FO_SIM_XEN_AHEAD_NS - last));
	teardown(&t);
}

static void test_unpause_standby_refused(void)
{
	struct t t;

	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	CHECK(t.hv->ops->unpause(t.hv, t.b) == -EBUSY, "our unpause of the standby: EBUSY (0008)");
	CHECK(fo_sim_external_unpause(t.hv, t.b) == -EBUSY, "xl unpause too");
	CHECK(fo_sim_pause_count(t.hv, t.b) == 1, "its pause kept for the watch");
	CHECK(t.hv->ops->pause(t.hv, t.a) == 0 && t.hv->ops->unpause(t.hv, t.a) == 0, "the active is not guarded");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_DISARM) == 0, "disarmed");
	CHECK(t.hv->ops->unpause(t.hv, t.b) == 0, "the toolstack's again");
	teardown(&t);
}

static void test_disarm_armed(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	CHECK(op(&t, t.b, FO_FOWATCH_OP_DISARM) == 0, "DISARM by the standby's id");
	CHECK(query(&t, t.a, &fw) == -ENOENT && query(&t, t.b, &fw) == -ENOENT, "gone");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_DISARM) == -ENOENT && op(&t, t.a, FO_FOWATCH_OP_RELEASE) == -ENOENT,
	      "nothing to disarm");
	fo_sim_advance(t.hv, 500 * MS);
	CHECK(fo_sim_state(t.hv, t.b) == FO_DOM_PAUSED && !fo_sim_fowatch_fenced(t.hv, t.a), "no switch afterwards");
	CHECK(fo_sim_fowatch_virqs(t.hv) == 0, "a DISARM raises no VIRQ");
	CHECK(arm(&t) == 0, "armed again");
	CHECK(op(&t, t.a, 99) == -EOPNOTSUPP, "an unknown op");
	teardown(&t);
}

static void test_disarm_fenced_release(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;
	unsigned beats;

	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_advance(t.hv, 100 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED, "fired");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_DISARM) == -EBUSY, "DISARM never lets a fenced active run");
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED && fo_sim_fowatch_fenced(t.hv, t.a), "still there");
	/* #36 item 4: whoever sends it (a tool that did not pause it
	 * first), RELEASE hands the fence to the toolstack. */
	CHECK(op(&t, t.a, FO_FOWATCH_OP_RELEASE) == 0, "RELEASE");
	CHECK(query(&t, t.a, &fw) == -ENOENT && !fo_sim_fowatch_fenced(t.hv, t.a), "gone, the watch holds nothing");
	CHECK(get_state(&t, t.a) == FO_DOM_PAUSED && fo_sim_pause_count(t.hv, t.a) == 1,
	      "the failed active stays paused, by a toolstack pause now (count %u)", fo_sim_pause_count(t.hv, t.a));
	CHECK(fo_sim_state(t.hv, t.b) == FO_DOM_RUNNING && fo_sim_violations(t.hv) == 0, "the standby runs alone");
	CHECK(fo_sim_external_unpause(t.hv, t.a) == 0 && get_state(&t, t.a) == FO_DOM_RUNNING,
	      "an explicit unpause (one) starts it again");
	beats = t.beats[t.a];
	fo_sim_heartbeat(t.hv, t.a);
	CHECK(t.beats[t.a] == beats + 1, "and it runs");
	teardown(&t);

	/* The toolstack paused the fenced active too: both pauses stay. */
	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_advance(t.hv, 100 * MS);
	CHECK(fo_sim_external_pause(t.hv, t.a) == 0, "xl pause of the fenced active");
	CHECK(op(&t, t.b, FO_FOWATCH_OP_RELEASE) == 0, "RELEASE by the standby's id");
	CHECK(!fo_sim_fowatch_fenced(t.hv, t.a) && get_state(&t, t.a) == FO_DOM_PAUSED &&
		      fo_sim_pause_count(t.hv, t.a) == 2,
	      "paused by the toolstack's pause and the fence handed over (count %u)", fo_sim_pause_count(t.hv, t.a));
	CHECK(fo_sim_external_unpause(t.hv, t.a) == 0 && get_state(&t, t.a) == FO_DOM_PAUSED,
	      "the `xl unpause` undoing its own pause does not start the failed active");
	teardown(&t);

	/* FAILED_STANDBY with FENCE_ALWAYS: the same. */
	setup(&t, true);
	fw = arm_args(&t);
	fw.flags = FO_FOWATCH_F_FENCE_ALWAYS;
	CHECK(arm_with(&t, fw) == 0, "armed, fence always");
	CHECK(fo_sim_external_pause(t.hv, t.b) == 0, "standby paused twice: unfit");
	fo_sim_advance(t.hv, 100 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FAILED_STANDBY && (fw.flags & FO_FOWATCH_OUT_FENCED), "fenced");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_RELEASE) == 0 && get_state(&t, t.a) == FO_DOM_PAUSED &&
		      fo_sim_pause_count(t.hv, t.a) == 1,
	      "released: the fence is a toolstack pause");
	teardown(&t);

	/* ARMED: RELEASE tears down, nothing was held. */
	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_RELEASE) == 0 && query(&t, t.a, &fw) == -ENOENT, "RELEASE of an armed watch");
	CHECK(get_state(&t, t.a) == FO_DOM_RUNNING && fo_sim_pause_count(t.hv, t.a) == 0, "the active untouched");
	teardown(&t);
}

static void test_crash_fires_at_once(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	live(&t, 3);
	fo_sim_set_state(t.hv, t.a, FO_DOM_CRASHED, false);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED, "fired without waiting a period: %s",
	      fo_fowatch_state_name(fw.state));
	CHECK(fw.reason == FO_FOWATCH_REASON_SHUTDOWN && fw.shutdown_code == FO_SIM_SHUTDOWN_CRASH, "reason %s code %u",
	      fo_fowatch_reason_name(fw.reason), fw.shutdown_code);
	CHECK(fw.t_detect == fo_sim_xen_now(t.hv) && fw.t_switched == fw.t_detect, "at the crash");
	CHECK(fo_sim_state(t.hv, t.b) == FO_DOM_RUNNING && fo_sim_fowatch_fenced(t.hv, t.a), "switched, fenced");
	CHECK(fo_sim_fowatch_virq_take(t.hv), "VIRQ");
	teardown(&t);
}

static void test_shutdowns_that_abort(void)
{
	struct t t;
	struct fo_xen_failover_watch fw = { 0 };

	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_advance(t.hv, 30 * MS); /* no heartbeat since ARM, not yet a timeout */
	fo_sim_shutdown(t.hv, t.a, FO_SIM_SHUTDOWN_SUSPEND, false);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ABORTED, "a suspend aborts: %s", fo_fowatch_state_name(fw.state));
	CHECK(fw.reason == FO_FOWATCH_REASON_SUSPEND && fw.shutdown_code == FO_SIM_SHUTDOWN_SUSPEND, "reason %s",
	      fo_fowatch_reason_name(fw.reason));
	CHECK(!(fw.flags & FO_FOWATCH_OUT_FENCED) && fo_sim_state(t.hv, t.b) == FO_DOM_PAUSED, "no fence, no switch");
	CHECK(fo_sim_fowatch_virq_take(t.hv), "VIRQ");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_DISARM) == 0, "DISARM of an end state");
	CHECK(t.hv->ops->unpause(t.hv, t.b) == 0, "an ended watch's standby is the toolstack's");
	teardown(&t);

	/* A shutdown code outside the mask: ABORTED, reason SHUTDOWN. */
	setup(&t, true);
	fw = arm_args(&t);
	fw.shutdown_mask = 1u << FO_SIM_SHUTDOWN_CRASH;
	CHECK(arm_with(&t, fw) == 0, "armed for crashes only");
	fo_sim_set_state(t.hv, t.a, FO_DOM_SHUTDOWN, false); /* poweroff */
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ABORTED && fw.reason == FO_FOWATCH_REASON_SHUTDOWN &&
		      fw.shutdown_code == FO_SIM_SHUTDOWN_POWEROFF,
	      "poweroff outside the mask: %s/%s", fo_fowatch_state_name(fw.state), fo_fowatch_reason_name(fw.reason));
	teardown(&t);

	/* The standby shuts down. */
	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_set_state(t.hv, t.b, FO_DOM_CRASHED, false);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ABORTED && fw.reason == FO_FOWATCH_REASON_STANDBY_LOST &&
		      fw.shutdown_code == FO_FOWATCH_NO_SHUTDOWN_CODE,
	      "standby lost: %s/%s", fo_fowatch_state_name(fw.state), fo_fowatch_reason_name(fw.reason));
	CHECK(!fo_sim_fowatch_fenced(t.hv, t.a) && fo_sim_fowatch_virq_take(t.hv), "no fence, VIRQ");
	teardown(&t);
}

static void test_domain_death_tears_down(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	/* The active destroyed while armed. */
	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	CHECK(t.hv->ops->destroy(t.hv, t.a) == 0, "xl destroy of the active");
	CHECK(query(&t, t.b, &fw) == -ENOENT, "torn down: QUERY ENOENT");
	CHECK(virq_readable(&t) && fo_sim_fowatch_virqs(t.hv) == 1, "VIRQ raised");
	CHECK(t.hv->ops->unpause(t.hv, t.b) == 0, "the standby is the toolstack's again");
	teardown(&t);

	/* The standby destroyed while armed. */
	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_set_state(t.hv, t.b, FO_DOM_DYING, false);
	CHECK(query(&t, t.a, &fw) == -ENOENT && fo_sim_fowatch_virq_take(t.hv), "torn down at domain_kill, VIRQ");
	fo_sim_advance(t.hv, 500 * MS);
	CHECK(fo_sim_fowatch_virqs(t.hv) == 1 && !fo_sim_fowatch_fenced(t.hv, t.a), "nothing fires after");
	teardown(&t);

	/* The standby goes while the active is fenced: the fence becomes a
	 * toolstack pause, never a restart of the failed active. */
	setup(&t, true);
	fo_sim_fowatch_quiesce_delay(t.hv, FO_SIM_NEVER);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_advance(t.hv, 200 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FAILED_QUIESCE && fo_sim_fowatch_fenced(t.hv, t.a),
	      "failed, fenced");
	fo_sim_set_state(t.hv, t.b, FO_DOM_GONE, false);
	CHECK(query(&t, t.a, &fw) == -ENOENT && !fo_sim_fowatch_fenced(t.hv, t.a), "torn down");
	CHECK(fo_sim_pause_count(t.hv, t.a) == 1 && get_state(&t, t.a) == FO_DOM_RUNNING,
	      "the fence handed to the toolstack (one `xl unpause` releases it); its vCPU that never stopped "
	      "still runs, and it reads so");
	CHECK(fo_sim_fowatch_virqs(t.hv) == 2, "a VIRQ for the end state, one for the teardown");
	teardown(&t);

	/* The fenced active goes: nothing to hand over. */
	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_advance(t.hv, 100 * MS);
	fo_sim_vanish_on(t.hv, FO_SIM_GET_STATE, t.a);
	CHECK(get_state(&t, t.a) == FO_DOM_GONE && query(&t, t.b, &fw) == -ENOENT, "gone with its active");
	CHECK(fo_sim_state(t.hv, t.b) == FO_DOM_RUNNING && fo_sim_pause_count(t.hv, t.b) == 0, "the standby runs on");
	teardown(&t);
}

static void test_failed_standby(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	CHECK(fo_sim_external_pause(t.hv, t.b) == 0, "a second toolstack pause of the standby is allowed");
	fo_sim_advance(t.hv, 100 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FAILED_STANDBY && fw.reason == FO_FOWATCH_REASON_TIMEOUT,
	      "unfit: %s", fo_fowatch_state_name(fw.state));
	CHECK(!fo_sim_fowatch_fenced(t.hv, t.a) && !(fw.flags & FO_FOWATCH_OUT_FENCED) && fw.t_fence == 0,
	      "the active left alone");
	CHECK(fo_sim_pause_count(t.hv, t.b) == 2 && fw.t_switched == 0, "the standby untouched");
	CHECK(fo_sim_fowatch_virq_take(t.hv), "VIRQ");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_DISARM) == 0, "DISARM: nothing fenced");
	teardown(&t);

	/* F_FENCE_ALWAYS: fenced all the same. */
	setup(&t, true);
	fw = arm_args(&t);
	fw.flags = FO_FOWATCH_F_FENCE_ALWAYS;
	CHECK(arm_with(&t, fw) == 0, "armed, fence always");
	CHECK(fo_sim_external_pause(t.hv, t.b) == 0, "paused twice");
	fo_sim_advance(t.hv, 100 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FAILED_STANDBY && (fw.flags & FO_FOWATCH_OUT_FENCED) &&
		      (fw.flags & FO_FOWATCH_F_FENCE_ALWAYS) && fo_sim_fowatch_fenced(t.hv, t.a),
	      "failed standby, active fenced: flags %#x", fw.flags);
	CHECK(op(&t, t.a, FO_FOWATCH_OP_DISARM) == -EBUSY && op(&t, t.a, FO_FOWATCH_OP_RELEASE) == 0,
	      "only RELEASE drops it");
	teardown(&t);
}

static void test_quiesce(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	/* The vCPUs stop 300 us after the fence: FIRED, t_quiesced later. */
	setup(&t, true);
	fo_sim_fowatch_quiesce_delay(t.hv, 300 * US);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_advance(t.hv, 50 * MS); /* no progress: the tick at 50 ms detects */
	/* #36 item 6: not "paused" before it stopped. */
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_QUIESCING && !(fw.flags & FO_FOWATCH_OUT_FENCED),
	      "quiescing, not reported fenced yet: %s, flags %#x", fo_fowatch_state_name(fw.state), fw.flags);
	CHECK(get_state(&t, t.a) == FO_DOM_RUNNING && fo_sim_fowatch_fenced(t.hv, t.a),
	      "held by the watch, its vCPUs still running: reads as running");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_DISARM) == -EBUSY && op(&t, t.a, FO_FOWATCH_OP_RELEASE) == -EBUSY,
	      "QUIESCING is let end");
	CHECK(t.hv->ops->unpause(t.hv, t.b) == -EBUSY, "the standby is still the watch's");
	fo_sim_advance(t.hv, MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED, "fired: %s", fo_fowatch_state_name(fw.state));
	CHECK(fw.t_quiesced - fw.t_fence >= 300 * US && fw.t_quiesced - fw.t_fence < 400 * US &&
		      fw.t_switched == fw.t_quiesced,
	      "quiesced %llu ns after the fence", (unsigned long long)(fw.t_quiesced - fw.t_fence));
	CHECK((fw.flags & FO_FOWATCH_OUT_FENCED) && get_state(&t, t.a) == FO_DOM_PAUSED, "stopped: reported fenced, paused");
	teardown(&t);

	/* Still running after quiesce_us: FAILED_QUIESCE, fenced, no switch. */
	setup(&t, true);
	fo_sim_fowatch_quiesce_delay(t.hv, 3 * MS);
	fw = arm_args(&t);
	fw.quiesce_us = 2000;
	CHECK(arm_with(&t, fw) == 0, "armed, quiesce 2 ms");
	fo_sim_advance(t.hv, 52 * MS + 500 * US); /* fenced at 50 ms, given up at 52, stops at 53 */
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FAILED_QUIESCE && fw.quiesce_us == 2000,
	      "failed quiesce: %s", fo_fowatch_state_name(fw.state));
	CHECK(fw.t_quiesced == 0 && fw.t_switched == 0 && fw.t_fence != 0, "fenced, never quiesced");
	CHECK(fo_sim_fowatch_fenced(t.hv, t.a) && fo_sim_state(t.hv, t.b) == FO_DOM_PAUSED, "active fenced, standby not started");
	CHECK(fo_sim_fowatch_virq_take(t.hv), "VIRQ");
	/* #36 item 6: neither QUERY nor getdomaininfo says paused while a
	 * vCPU runs (a synchronous pause of it would wait in Xen). */
	CHECK(!(fw.flags & FO_FOWATCH_OUT_FENCED) && get_state(&t, t.a) == FO_DOM_RUNNING,
	      "not stopped: not reported fenced (flags %#x), reads as running", fw.flags);
	CHECK(op(&t, t.a, FO_FOWATCH_OP_RELEASE) == 0 && fo_sim_pause_count(t.hv, t.a) == 1 &&
		      get_state(&t, t.a) == FO_DOM_RUNNING,
	      "RELEASE: the fence is the toolstack's, the vCPU still runs");
	fo_sim_advance(t.hv, MS); /* past 53 ms, when it stops */
	CHECK(get_state(&t, t.a) == FO_DOM_PAUSED && fo_sim_pause_count(t.hv, t.a) == 1, "it stops: paused, by the toolstack");
	teardown(&t);
}

/*
 * #36 item 5: a third party pauses the standby while the active quiesces.
 * The check of the standby's one toolstack pause and its consumption are
 * one step: FAILED_STANDBY, nothing unpaused, the active stays fenced
 * (and, RELEASEd, paused by the toolstack). Checking at the fire alone, or
 * unpausing whatever pause is there, would report FIRED with the standby
 * still paused.
 */
static void test_standby_paused_while_quiescing(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	setup(&t, true);
	fo_sim_guard(t.hv, t.a, t.b);
	fo_sim_fowatch_quiesce_delay(t.hv, 300 * US);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_advance(t.hv, 50 * MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_QUIESCING, "quiescing: %s", fo_fowatch_state_name(fw.state));
	CHECK(fo_sim_external_unpause(t.hv, t.b) == -EBUSY, "an unpause of the standby is refused (0008)");
	CHECK(fo_sim_external_pause(t.hv, t.b) == 0, "a pause is not");
	fo_sim_advance(t.hv, MS);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FAILED_STANDBY && fw.t_switched == 0 && fw.t_quiesced != 0,
	      "FAILED_STANDBY after the quiesce: %s", fo_fowatch_state_name(fw.state));
	CHECK(fo_sim_pause_count(t.hv, t.b) == 2 && fo_sim_state(t.hv, t.b) == FO_DOM_PAUSED,
	      "nothing unpaused: the standby's count %u", fo_sim_pause_count(t.hv, t.b));
	CHECK((fw.flags & FO_FOWATCH_OUT_FENCED) && get_state(&t, t.a) == FO_DOM_PAUSED, "the active stays fenced");
	CHECK(fo_sim_fowatch_virq_take(t.hv), "VIRQ");
	CHECK(op(&t, t.a, FO_FOWATCH_OP_RELEASE) == 0 && get_state(&t, t.a) == FO_DOM_PAUSED &&
		      fo_sim_pause_count(t.hv, t.a) == 1,
	      "RELEASE: the active paused by the toolstack");
	CHECK(fo_sim_violations(t.hv) == 0, "never both running");
	teardown(&t);
}

static void test_arm_refused(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;
	fo_domid_t c, d;
	struct fo_xen_failover_watch bad[20];
	size_t n = 0;

	setup(&t, true);
	c = fo_sim_add_domain(t.hv, "c", FO_DOM_RUNNING);
	d = fo_sim_add_domain(t.hv, "d", FO_DOM_PAUSED);
	for (size_t i = 0; i < 20; i++)
		bad[i] = arm_args(&t);
	bad[n++].period_us = FO_FOWATCH_MIN_PERIOD_US - 1;
	bad[n++].timeout_us = 2 * PERIOD_US - 1;
	bad[n].period_us = 1000000, bad[n++].timeout_us = FO_FOWATCH_MAX_TIMEOUT_US + 1;
	bad[n++].quiesce_us = FO_FOWATCH_MAX_QUIESCE_US + 1;
	bad[n++].shutdown_mask = 1u << FO_SIM_SHUTDOWN_SUSPEND;
	bad[n++].shutdown_mask = 1u << (FO_FOWATCH_SHUTDOWN_MAX + 1);
	bad[n++].flags = 1u << 2;
	bad[n++].flags = FO_FOWATCH_F_EVENT; /* and no port */
	bad[n].flags = FO_FOWATCH_F_EVENT, bad[n++].port = fo_sim_agent_port(t.hv, t.a) + 1; /* never bound */
	bad[n++].port = fo_sim_agent_port(t.hv, t.a); /* a port without event mode */
	bad[n++].state = FO_FOWATCH_STATE_ARMED;
	bad[n++].t_now = 1;
	bad[n++].cpu = 8;
	bad[n++].standby = t.a;
	bad[n++].standby = 0;
	bad[n++].offset = 4;
	bad[n++].offset = 4096 - 4;
	for (size_t i = 0; i < n; i++)
		CHECK(arm_with(&t, bad[i]) == -EINVAL, "bad argument #%zu: EINVAL", i);
	fw = arm_args(&t);
	CHECK(fo_sim_fowatch_domctl(t.hv, 0, &fw) == -EINVAL, "dom0 as the active");
	fw.standby = 99;
	CHECK(arm_with(&t, fw) == -ESRCH, "missing standby");
	fw = arm_args(&t);
	CHECK(fo_sim_fowatch_domctl(t.hv, 99, &fw) == -ESRCH, "missing active");
	CHECK(query(&t, t.a, &fw) == -ENOENT, "none of them armed anything");

	/* Busy. */
	fo_sim_external_pause(t.hv, t.a);
	CHECK(arm(&t) == -EBUSY, "active paused by the toolstack");
	fo_sim_external_unpause(t.hv, t.a);
	fo_sim_external_unpause(t.hv, t.b);
	CHECK(arm(&t) == -EBUSY, "standby running");
	fo_sim_external_pause(t.hv, t.b);
	fo_sim_external_pause(t.hv, t.b);
	CHECK(arm(&t) == -EBUSY, "standby paused twice");
	fo_sim_external_unpause(t.hv, t.b);
	fo_sim_set_state(t.hv, t.a, FO_DOM_DYING, false);
	CHECK(arm(&t) == -ESRCH, "active dying");
	fo_sim_set_state(t.hv, t.a, FO_DOM_RUNNING, false);
	fo_sim_set_state(t.hv, t.a, FO_DOM_CRASHED, false);
	CHECK(arm(&t) == -EBUSY, "active shutting down");
	fo_sim_set_state(t.hv, t.a, FO_DOM_RUNNING, false);

	/* The grant. */
	fw = arm_args(&t);
	fw.gref = fo_sim_agent_gref(t.hv, t.b);
	CHECK(arm_with(&t, fw) == -EACCES, "the standby's ref is no grant of the active's");
	fw.gref = 600;
	CHECK(arm_with(&t, fw) == -ENOENT, "a ref beyond the grant table");
	fo_sim_agent_revoke(t.hv, t.a);
	CHECK(arm(&t) == -EACCES, "the grant ended");
	fo_sim_agent_grant(t.hv, t.a, 77);
	CHECK(fo_sim_agent_gref(t.hv, t.a) == 77 && arm(&t) == 0, "granted again under 77: armed");
	CHECK(arm(&t) == -EBUSY, "already in a watch");
	fw = arm_args(&t);
	fw.gref = fo_sim_agent_gref(t.hv, c);
	fw.standby = t.b;
	CHECK(fo_sim_fowatch_domctl(t.hv, c, &fw) == -EBUSY, "the standby already in a watch");

	/* fowatch-max */
	fo_sim_fowatch_set_max(t.hv, 1);
	fw.standby = d;
	CHECK(fo_sim_fowatch_domctl(t.hv, c, &fw) == -ENOSPC, "over fowatch-max");
	fo_sim_fowatch_set_max(t.hv, 2);
	CHECK(fo_sim_fowatch_domctl(t.hv, c, &fw) == 0, "a second watch");
	teardown(&t);
}

/* The agent ends its grant while armed: the pin holds, the page still
 * counts. It grants a new page (restarted): the pinned one no longer moves. */
static void test_grant_changes_while_armed(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_agent_revoke(t.hv, t.a);
	live(&t, 500);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_ARMED && fw.seq == 50, "still reads the pinned page: seq %llu",
	      (unsigned long long)fw.seq);
	fo_sim_agent_grant(t.hv, t.a, 42);
	live(&t, 100);
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED && fw.reason == FO_FOWATCH_REASON_TIMEOUT && fw.seq == 50,
	      "a new page is not the pinned one: fired on timeout (%s), seq %llu", fo_fowatch_state_name(fw.state),
	      (unsigned long long)fw.seq);
	teardown(&t);
}

/* Xen's timer does not wait for a slow call of ours. */
static void test_fires_under_a_slow_call(void)
{
	struct t t;
	struct fo_xen_failover_watch fw;

	setup(&t, true);
	CHECK(arm(&t) == 0, "armed");
	fo_sim_delay(t.hv, FO_SIM_GET_STATE, 200 * MS);
	CHECK(get_state(&t, t.b) == FO_DOM_RUNNING, "the watch switched during the call");
	CHECK(query(&t, t.a, &fw) == FO_FOWATCH_STATE_FIRED, "fired");
	teardown(&t);
}

int main(void)
{
	RUN(test_enosys_unless_enabled);
	RUN(test_arm_query_progress);
	RUN(test_timeout_fires);
	RUN(test_event_mode);
	RUN(test_unpause_standby_refused);
	RUN(test_disarm_armed);
	RUN(test_disarm_fenced_release);
	RUN(test_crash_fires_at_once);
	RUN(test_shutdowns_that_abort);
	RUN(test_domain_death_tears_down);
	RUN(test_failed_standby);
	RUN(test_quiesce);
	RUN(test_standby_paused_while_quiescing);
	RUN(test_arm_refused);
	RUN(test_grant_changes_while_armed);
	RUN(test_fires_under_a_slow_call);
	return check_summary("test_sim_fowatch");
}
