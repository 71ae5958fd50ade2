/* SPDX-License-Identifier: MIT */
/*
 * test_turn.c - pairs whose faults are due in one turn of the loop, on the
 * simulated hypervisor: every due pair switches before the verdict file is
 * written and before any switch's after-work (issue #37), and a deadline
 * that comes due meanwhile joins the turn.
 */
#include "fence_fixture.h"

/* ------------------------------------------ two pairs faulting in one turn */

/* brake (as sim_base_config) and pump (pump-a active, pump-b standby). */
static void two_pair_config(struct fo_config *cfg)
{
	struct fo_pair_config *p = &cfg->pairs[1];

	sim_base_config(cfg);
	cfg->n_pairs = 2;
	*p = cfg->pairs[0];
	snprintf(p->name, sizeof(p->name), "pump");
	snprintf(p->active, sizeof(p->active), "pump-a");
	snprintf(p->standby, sizeof(p->standby), "pump-b");
	snprintf(p->active_config, sizeof(p->active_config), "/etc/xen/pump-a.cfg");
	snprintf(p->standby_config, sizeof(p->standby_config), "/etc/xen/pump-b.cfg");
}

/* First boot of both pairs, ARMED (brake-a and pump-a active), verdicts in
 * state_path; *pa, *pb: pump's domains. */
static void fx_two_armed(struct fx *f, fo_domid_t *pa, fo_domid_t *pb)
{
	struct fo_config cfg;
	struct fo_pair *pump;

	two_pair_config(&cfg);
	fx_new_state(f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	*pa = fo_sim_add_domain(f->hv, "pump-a", FO_DOM_RUNNING);
	*pb = fo_sim_add_domain(f->hv, "pump-b", FO_DOM_RUNNING);
	fo_sim_set_state(f->hv, *pb, FO_DOM_RUNNING, true); /* xenstore's event: pump finds them */
	prove(f, f->a);
	prove(f, f->b);
	prove(f, *pa);
	prove(f, *pb);
	pump = fo_manager_find_pair(f->mgr, "pump");
	CHECK(f->p->state == FO_PAIR_ARMED && pump && pump->state == FO_PAIR_ARMED, "both ARMED: %s, %s (%s)",
	      fo_pair_state_name(f->p->state), pump ? fo_pair_state_name(pump->state) : "-", pump ? pump->reason : "");
	fo_sim_guard(f->hv, f->a, f->b);
	fo_sim_guard(f->hv, *pa, *pb);
	fo_sim_clear_calls(f->hv);
}

/* A failure verdict's record (the file's header mentions failed members). */
#define FAILED_RECORD "\nfailed "

/* What the verdict file said as each standby's unpause was issued. */
struct unpause_looks {
	size_t n;
	bool verdict_on_file[4];
};

static void look_at_file_on_unpause(void *ctx, const struct fo_sim_call *c)
{
	struct unpause_looks *l = ctx;

	if (c->op == FO_SIM_UNPAUSE && l->n < 4)
		l->verdict_on_file[l->n++] = file_has(state_path, FAILED_RECORD);
}

/* Both actives fall silent together, so that their deadlines come due in
 * the same turn of the loop. */
static void both_actives_silent(struct fx *f)
{
	fo_sim_advance(f->hv, 60 * MS);
}

/* Issue #37 (b, c): the verdict file's write (and fsync) after one pair's
 * switch delayed the next pair's switch. Now the turn's switches all come
 * first, and the file is written once, at the end of the turn. */
static void test_turn_switches_all_before_writing(void)
{
	struct fx f;
	struct unpause_looks look = { 0 };
	fo_domid_t pa, pb;

	state_reset();
	fx_two_armed(&f, &pa, &pb);
	CHECK(file_has(state_path, "active pump pump-a ") && !file_has(state_path, FAILED_RECORD),
	      "on file: the actives, no verdict");
	fo_sim_on_call(f.hv, look_at_file_on_unpause, &look);
	both_actives_silent(&f);
	fx_loop_once(&f);
	fo_sim_on_call(f.hv, NULL, NULL);
	CHECK(look.n == 2, "both standbys unpaused in one turn (%zu unpauses)", look.n);
	CHECK(!look.verdict_on_file[0] && !look.verdict_on_file[1],
	      "no verdict written between the first switch and the last (on file at the unpauses: %d, %d)",
	      look.verdict_on_file[0], look.verdict_on_file[1]);
	CHECK(file_has(state_path, "failed brake brake-a ") && file_has(state_path, "failed pump pump-a ") &&
		      file_has(state_path, "active brake brake-b ") && file_has(state_path, "active pump pump-b "),
	      "both pairs' verdicts and new actives written at the turn's end");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, pb) == FO_DOM_RUNNING &&
		      fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, pa) == FO_DOM_PAUSED,
	      "both switched");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Killed after both switches and before the turn's write: the file still
 * names the old actives, which Xen shows paused beside the running
 * standbys. The restart presumes them failed: neither is started again,
 * neither pair runs both. */
static void test_killed_before_the_turns_write(void)
{
	struct fx f;
	struct fo_pair *pump;
	fo_domid_t pa, pb;

	state_reset();
	fx_two_armed(&f, &pa, &pb);
	both_actives_silent(&f);
	fo_manager_turn_begin(f.mgr);
	fo_manager_run_due(f.mgr);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, pb) == FO_DOM_RUNNING,
	      "both switched");
	CHECK(!file_has(state_path, FAILED_RECORD) && file_has(state_path, "active brake brake-a ") &&
		      file_has(state_path, "active pump pump-a "),
	      "the turn has not ended: the file is as before it");
	restart(&f); /* SIGKILL: fo_manager_turn_end never ran */
	pump = fo_manager_find_pair(f.mgr, "pump");
	CHECK(f.p->state == FO_PAIR_DEGRADED && f.p->active == 1 &&
		      strstr(f.p->reason, "standby brake-a failed (unrecorded-switch at "),
	      "brake: the old active presumed failed: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(pump && pump->state == FO_PAIR_DEGRADED && pump->active == 1 &&
		      strstr(pump->reason, "standby pump-a failed (unrecorded-switch at "),
	      "pump: the old active presumed failed: %s (%s)", pump ? fo_pair_state_name(pump->state) : "-",
	      pump ? pump->reason : "");
	CHECK(file_has(state_path, "failed brake brake-a ") && file_has(state_path, "failed pump pump-a "),
	      "the presumption is on file (a second restart keeps it)");
	/* The new actives live on; the failed ones stay paused. */
	for (int t = 0; t < 20; t++) {
		fo_sim_heartbeat(f.hv, f.b);
		fo_sim_heartbeat(f.hv, pb);
		advance(&f, 10);
	}
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, pa) == FO_DOM_PAUSED &&
		      count_calls(&f, FO_SIM_UNPAUSE, f.a) == 0 && count_calls(&f, FO_SIM_UNPAUSE, pa) == 0,
	      "the failed members never started again");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, pb) == FO_DOM_RUNNING,
	      "the new actives run");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* pump's deadline comes due while brake switches (its unpause takes 5 ms):
 * pump switches in the same turn, not in the next one, which would come
 * after this turn's verdict write. */
static void test_deadline_due_during_a_switch_joins_the_turn(void)
{
	struct fx f;
	struct unpause_looks look = { 0 };
	struct fo_pair *pump;
	fo_domid_t pa, pb;

	state_reset();
	fx_two_armed(&f, &pa, &pb);
	pump = fo_manager_find_pair(f.mgr, "pump");
	/* pump's active beats 1 ms after brake's: its deadline is 1 ms later. */
	fo_sim_advance(f.hv, 1 * MS);
	fo_sim_heartbeat(f.hv, pa);
	fo_sim_delay(f.hv, FO_SIM_UNPAUSE, 5 * MS);
	fo_sim_on_call(f.hv, look_at_file_on_unpause, &look);
	fo_sim_advance(f.hv, 49 * MS + MS / 2); /* brake's deadline (50 ms after its beat) is due, pump's not yet */
	CHECK(pump->state == FO_PAIR_ARMED, "pump not due before the turn");
	fx_loop_once(&f);
	fo_sim_on_call(f.hv, NULL, NULL);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, pb) == FO_DOM_RUNNING,
	      "both switched in one turn: brake-b %s, pump-b %s", fo_dom_state_name(fo_sim_state(f.hv, f.b)),
	      fo_dom_state_name(fo_sim_state(f.hv, pb)));
	CHECK(look.n == 2 && !look.verdict_on_file[1], "no verdict written before pump's unpause (%zu unpauses)",
	      look.n);
	CHECK(file_has(state_path, "failed brake brake-a ") && file_has(state_path, "failed pump pump-a "),
	      "both written at the turn's end");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* ------------------------------------- the turn's two phases (issue #37) */

#define MANY 4
static const char *const many_names[MANY] = { "brake", "pump", "fan", "valve" };

/* MANY pairs (brake, then pump, fan, valve: NAME-a active, NAME-b
 * standby), on_failover destroy (so that each switch's after-work makes a
 * hypervisor call of its own), all ARMED; dom[i][0..1] pair i's domains. */
static void fx_many_armed(struct fx *f, fo_domid_t dom[MANY][2])
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	cfg.n_pairs = MANY;
	for (int i = 0; i < MANY; i++) {
		struct fo_pair_config *p = &cfg.pairs[i];

		*p = cfg.pairs[0];
		snprintf(p->name, sizeof(p->name), "%s", many_names[i]);
		snprintf(p->active, sizeof(p->active), "%s-a", many_names[i]);
		snprintf(p->standby, sizeof(p->standby), "%s-b", many_names[i]);
		snprintf(p->active_config, sizeof(p->active_config), "/etc/xen/%s-a.cfg", many_names[i]);
		snprintf(p->standby_config, sizeof(p->standby_config), "/etc/xen/%s-b.cfg", many_names[i]);
		p->on_failover = FO_ON_FAILOVER_DESTROY;
	}
	fx_new_state(f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	dom[0][0] = f->a;
	dom[0][1] = f->b;
	for (int i = 1; i < MANY; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%s-a", many_names[i]);
		dom[i][0] = fo_sim_add_domain(f->hv, name, FO_DOM_RUNNING);
		snprintf(name, sizeof(name), "%s-b", many_names[i]);
		dom[i][1] = fo_sim_add_domain(f->hv, name, FO_DOM_RUNNING);
	}
	fo_sim_set_state(f->hv, dom[MANY - 1][1], FO_DOM_RUNNING, true); /* xenstore's event: the pairs find them */
	for (int i = 0; i < MANY; i++) {
		prove(f, dom[i][0]);
		prove(f, dom[i][1]);
	}
	for (int i = 0; i < MANY; i++) {
		struct fo_pair *p = fo_manager_find_pair(f->mgr, many_names[i]);

		CHECK(p && p->state == FO_PAIR_ARMED, "%s ARMED: %s (%s)", many_names[i],
		      p ? fo_pair_state_name(p->state) : "-", p ? p->reason : "");
		fo_sim_guard(f->hv, dom[i][0], dom[i][1]);
	}
	fo_sim_clear_calls(f->hv);
}

/* Index in the call log of the first call of the after-work (a role
 * published, a failed member destroyed), or -1. */
static long first_after_work_call(struct fx *f)
{
	long r = first_call(f, FO_SIM_SET_ROLE, FO_SIM_ANY_DOMAIN), d = first_call(f, FO_SIM_DESTROY, FO_SIM_ANY_DOMAIN);

	return r < 0 ? d : d < 0 ? r : r < d ? r : d;
}

/* Issue #37 (b): every pair whose fault is due in a turn is switched
 * (fence, confirm, unpause) before any pair's after-work (its roles, its
 * on_failover) starts. */
static void test_turn_switches_all_before_after_work(void)
{
	fo_domid_t dom[MANY][2];
	long first_aw, unpause[MANY];
	struct fx f;

	state_reset();
	fx_many_armed(&f, dom);
	fo_sim_advance(f.hv, 60 * MS); /* every active silent past its timeout */
	fx_loop_once(&f);
	first_aw = first_after_work_call(&f);
	CHECK(first_aw >= 0, "the after-work ran in the turn");
	for (int i = 0; i < MANY; i++) {
		unpause[i] = first_call(&f, FO_SIM_UNPAUSE, dom[i][1]);
		CHECK(unpause[i] >= 0 && unpause[i] < first_aw,
		      "%s's standby unpaused (call %ld) before any pair's after-work (call %ld)", many_names[i],
		      unpause[i], first_aw);
	}
	for (int i = 0; i < MANY; i++) {
		CHECK(fo_sim_state(f.hv, dom[i][1]) == FO_DOM_RUNNING &&
			      count_calls(&f, FO_SIM_DESTROY, dom[i][0]) == 1 &&
			      !strcmp(fo_sim_role(f.hv, dom[i][1]), "active"),
		      "%s: switched, its failed member destroyed, the new active's role published in the turn",
		      many_names[i]);
	}
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* A fault that comes due while the after-work runs (each destroy takes
 * 5 ms here) switches before the rest of the after-work: brake and pump
 * are due together, fan 1 ms later, during brake's destroy. fan's standby
 * runs before pump's after-work, not after it (nor in the next turn). */
static void test_deadline_due_during_after_work_switches_first(void)
{
	fo_domid_t dom[MANY][2];
	long fan_unpause, pump_aw;
	struct fx f;

	state_reset();
	fx_many_armed(&f, dom);
	fo_sim_advance(f.hv, 1 * MS);
	fo_sim_heartbeat(f.hv, dom[2][0]); /* fan's deadline: 1 ms after brake's and pump's */
	fo_sim_heartbeat(f.hv, dom[3][0]);
	fo_sim_advance(f.hv, 19 * MS);
	fo_sim_heartbeat(f.hv, dom[3][0]); /* valve stays healthy */
	fo_sim_delay(f.hv, FO_SIM_DESTROY, 5 * MS);
	fo_sim_advance(f.hv, 30 * MS + MS / 2); /* brake's and pump's deadlines due, fan's not yet */
	CHECK(fo_manager_find_pair(f.mgr, "fan")->state == FO_PAIR_ARMED, "fan not due before the turn");
	fx_loop_once(&f);
	fan_unpause = first_call(&f, FO_SIM_UNPAUSE, dom[2][1]);
	pump_aw = first_call(&f, FO_SIM_DESTROY, dom[1][0]);
	CHECK(first_call(&f, FO_SIM_UNPAUSE, dom[1][1]) < first_call(&f, FO_SIM_DESTROY, dom[0][0]),
	      "pump switched before brake's after-work");
	CHECK(fan_unpause >= 0, "fan switched in the same turn");
	CHECK(fan_unpause >= 0 && pump_aw >= 0 && fan_unpause < pump_aw,
	      "fan's standby unpaused (call %ld) before pump's after-work (destroy: call %ld)", fan_unpause, pump_aw);
	CHECK(count_calls(&f, FO_SIM_DESTROY, dom[2][0]) == 1, "fan's after-work done in the turn too");
	CHECK(fo_sim_state(f.hv, dom[3][0]) == FO_DOM_RUNNING && count_calls(&f, FO_SIM_UNPAUSE, dom[3][1]) == 0,
	      "valve untouched");
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

int main(void)
{
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_turn_switches_all_before_writing);
	RUN(test_killed_before_the_turns_write);
	RUN(test_deadline_due_during_a_switch_joins_the_turn);
	RUN(test_turn_switches_all_before_after_work);
	RUN(test_deadline_due_during_after_work_switches_first);
	state_cleanup();
	return check_summary("test_turn");
}
