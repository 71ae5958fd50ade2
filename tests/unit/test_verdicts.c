/* SPDX-License-Identifier: MIT */
/*
 * test_verdicts.c - the failure verdict that keeps a failed member from
 * ever being adopted as a standby again (issue #16), on the simulated
 * hypervisor: persisted across a restart, cleared by the operator or a new
 * instance, failing closed when its file is lost, corrupt or untrusted.
 */
#include "fence_fixture.h"

static void test_restart_does_not_adopt_failed(void)
{
	struct fx f;

	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED && f.p->active == 1, "DEGRADED after keep-paused failover: %s",
	      fo_pair_state_name(f.p->state));
	CHECK(strstr(f.p->reason, "standby brake-a failed (heartbeat-timeout at ") &&
		      strstr(f.p->reason, "clear with failoverctl clear-failed brake-a"),
	      "status says why and what to do: %s", f.p->reason);
	CHECK(file_has(state_path, "failed brake brake-a "), "verdict on file");
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED && f.p->active == 1, "restart: not adopted (%s: %s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(strstr(f.p->reason, "standby brake-a failed (heartbeat-timeout at "), "reason: %s", f.p->reason);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "left as it was");
	/* And once more: the verdict is still on file. */
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "second restart: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
}

/* A stand-down is remembered across a restart (the SPIN model's finding
 * F): the pair stood down here (served from another host); someone starts
 * a member by hand; failoverd restarts. It stays DISARMED, hands off: that
 * member's heartbeat loss starts nothing. `arm` ends the stand-down (and
 * the file's record). Before, the restart adopted the running member,
 * armed the pair and switched to the other on its fault. */
static void test_stand_down_survives_restart(void)
{
	struct fx f;
	char err[256];

	state_reset();
	fx_armed_state(&f);
	CHECK(fo_pair_stand_down(f.p, err, sizeof(err)) == 0, "stand-down: %s", err);
	CHECK(fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED && fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "both paused");
	CHECK(file_has(state_path, "standdown brake -"), "the stand-down is on file");
	fo_sim_set_state(f.hv, f.a, FO_DOM_RUNNING, true); /* `xl unpause brake-a` */
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DISARMED && strstr(f.p->reason, "stood down before failoverd started"),
	      "restart: still stood down (%s: %s)", fo_pair_state_name(f.p->state), f.p->reason);
	live(&f, 100);
	advance(&f, 500); /* brake-a's agent silent: no heartbeat */
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "brake-b not started: %s",
	      fo_dom_state_name(fo_sim_state(f.hv, f.b)));
	CHECK(count_events(&f, FO_EV_SWITCHOVER) == 0, "no switch");
	fo_pair_arm(f.p);
	CHECK(!file_has(state_path, "standdown brake"), "arm ends the stand-down on file");
	CHECK(f.p->state != FO_PAIR_DISARMED, "armed again: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

static void test_arm_does_not_adopt_failed(void)
{
	struct fx f;
	char err[256];

	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "clear-failed brake-a"), "`arm`: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(!f.p->m[0].usable, "not usable");
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == -EPERM && strstr(err, "clear-failed brake-a"),
	      "no switchover to it either: %s", err);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING && fo_sim_state(f.hv, f.a) == FO_DOM_PAUSED, "nothing touched");
	fx_free(&f);
}

static void test_clear_failed_allows_again(void)
{
	struct fx f;
	struct fo_pair *p = NULL;

	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	CHECK(fo_manager_clear_failed(f.mgr, "nobody", &p) == -ENOENT, "unknown member");
	CHECK(fo_manager_clear_failed(f.mgr, "brake-b", &p) == 0 && p == f.p, "nothing on b");
	CHECK(fo_manager_clear_failed(f.mgr, "brake-a", &p) == 1 && p == f.p, "cleared a");
	CHECK(!file_has(state_path, "failed brake brake-a"), "and on file");
	CHECK(has_event_with(&f, FO_EV_INFO, "cleared the failure verdict on brake-a"), "recorded");
	CHECK(f.p->state == FO_PAIR_DEGRADED, "clearing does not arm by itself");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1 && f.p->m[0].usable, "`arm` adopts it: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	/* A restart now adopts as well: b is the recorded active. */
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "restart adopts: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

/* The failed domain destroyed and created again (new domid, new handle):
 * a new instance, clean. */
static void test_new_instance_starts_clean(void)
{
	struct fx f;
	fo_domid_t a2;

	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	/* The operator destroys it and creates it again: libxl builds it
	 * paused and unpauses it last. */
	fo_sim_set_state(f.hv, f.a, FO_DOM_GONE, true);
	a2 = fo_sim_add_domain(f.hv, "brake-a", FO_DOM_PAUSED);
	fo_sim_set_state(f.hv, a2, FO_DOM_PAUSED, true);
	CHECK(f.p->m[0].domid == a2, "found the new brake-a");
	CHECK(!file_has(state_path, "failed brake brake-a"), "the old instance's verdict is gone from the file");
	fo_pair_arm(f.p);
	fo_sim_external_unpause(f.hv, a2);
	prove(&f, a2);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1 && fo_sim_state(f.hv, a2) == FO_DOM_PAUSED,
	      "armed with the new brake-a as standby: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "b untouched");
	fx_free(&f);

	/* The same, found by a restarted daemon with the new one paused. */
	state_reset();
	fx_armed_state(&f);
	fail_a(&f);
	fo_sim_set_state(f.hv, f.a, FO_DOM_GONE, false);
	a2 = fo_sim_add_domain(f.hv, "brake-a", FO_DOM_PAUSED);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1 && f.p->m[0].domid == a2,
	      "the new instance is adopted: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

static void test_corrupt_verdict_file(void)
{
	struct fx f;
	struct fo_config cfg;
	struct fo_pair *p;
	char aside[160];
	FILE *fp;

	state_reset();
	fp = fopen(state_path, "w");
	fputs("failoverd-verdicts 1\nfailed brake brake-b 2 - heartbeat-ti", fp); /* torn */
	fclose(fp);
	/* A restart that would adopt b as the paused standby. */
	sim_base_config(&cfg);
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "standby brake-b may have failed"),
	      "not adopted: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(strstr(f.p->reason, "clear-failed brake-b"), "says how to go on: %s", f.p->reason);
	CHECK(has_event_with(&f, FO_EV_INFO, state_path), "an event names the file");
	snprintf(aside, sizeof(aside), "%s.corrupt", state_path);
	CHECK(access(aside, F_OK) == 0, "the damaged file is kept aside");
	CHECK(file_has(state_path, "unknown brake brake-b") && file_has(state_path, "unknown brake brake-a"),
	      "and the new one says what is unknown");
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "a restart still does not know: %s", fo_pair_state_name(f.p->state));
	CHECK(fo_manager_clear_failed(f.mgr, "brake-b", &p) == 1, "operator clears b");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0, "then adopted: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	CHECK(count_calls(&f, FO_SIM_UNPAUSE, FO_SIM_ANY_DOMAIN) == 0, "nothing unpaused");
	fx_free(&f);

	/* A file that is not ours at all, and one that cannot be read. */
	state_reset();
	fp = fopen(state_path, "w");
	fputs("{\"json\": true}\n", fp);
	fclose(fp);
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "foreign file: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
	state_reset();
	CHECK(mkdir(state_path, 0700) == 0, "a directory where the file should be");
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "unreadable file: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
	rmdir(state_path);
	{
		char x[160];
		snprintf(x, sizeof(x), "%s.corrupt", state_path);
		rmdir(x);
	}
}

/* failoverd restarts with its verdicts in `path` (a changed state_file). */
static void restart_at(struct fx *f, const char *path)
{
	char saved[sizeof(state_path)];

	snprintf(saved, sizeof(saved), "%s", state_path);
	snprintf(state_path, sizeof(state_path), "%s", path);
	restart(f);
	snprintf(state_path, sizeof(state_path), "%s", saved);
}

/* After a keep-paused failover (a failed and paused, b active), with the
 * verdict on file: a restart after `damage` must not adopt a. */
static void expect_not_adopted(struct fx *f, const char *what)
{
	CHECK(f->p->state == FO_PAIR_DEGRADED && f->p->active == 1, "%s: not adopted (%s: %s)", what,
	      fo_pair_state_name(f->p->state), f->p->reason);
	CHECK(strstr(f->p->reason, "standby brake-a may have failed") != NULL, "%s: says why: %s", what, f->p->reason);
	CHECK(fo_sim_state(f->hv, f->a) == FO_DOM_PAUSED, "%s: a stays paused", what);
	CHECK(count_calls(f, FO_SIM_UNPAUSE, f->a) == 0, "%s: a never unpaused", what);
}

static void failed_a_on_file(struct fx *f)
{
	state_reset();
	fx_armed_state(f);
	fail_a(f);
	CHECK(file_has(state_path, "failed brake brake-a "), "verdict on file");
	fo_sim_clear_calls(f->hv);
}

/* The file is gone (a deleted /run/failoverd) or state_file now names
 * another one: this boot had verdicts, so a missing file is not "nothing
 * failed". */
static void test_lost_verdict_file_fails_closed(void)
{
	struct fx f;
	char moved[sizeof(state_path)], note[512];
	struct fo_pair *p;

	failed_a_on_file(&f);
	CHECK(f.hv->ops->boot_note_read(f.hv, note, sizeof(note)) == 0 && strstr(note, state_path),
	      "the boot note names the file: %s", note);
	unlink(state_path);
	restart(&f);
	expect_not_adopted(&f, "file deleted");
	CHECK(has_event_with(&f, FO_EV_INFO, "is missing, but this boot had one"), "an event says the file was lost");
	CHECK(file_has(state_path, "unknown brake brake-a"), "the new file keeps it unknown");
	restart(&f);
	expect_not_adopted(&f, "and restarted again");
	CHECK(fo_manager_clear_failed(f.mgr, "brake-a", &p) >= 1, "the operator clears it");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "then adopted: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);

	failed_a_on_file(&f);
	snprintf(moved, sizeof(moved), "%s/elsewhere", state_dir);
	unlink(moved);
	restart_at(&f, moved);
	expect_not_adopted(&f, "state_file changed");
	fx_free(&f);
	unlink(moved);

	/* A first start in a new boot (a new hypervisor): no file, no note. */
	state_reset();
	fx_armed_state(&f);
	CHECK(f.p->state == FO_PAIR_ARMED, "first start arms: %s", fo_pair_state_name(f.p->state));
	CHECK(file_has(state_path, "failoverd-verdicts 2 "), "and writes the file at once");
	fx_free(&f);
}

/* A file someone else could have written, or none at all behind a link:
 * never trusted, never written through. */
static void test_untrusted_verdict_file_fails_closed(void)
{
	struct fx f;
	char target[160], buf[64] = "";
	struct stat st;
	FILE *fp;

	snprintf(target, sizeof(target), "%s/target", state_dir);

	/* A link to a file of the right form that says nothing failed. */
	failed_a_on_file(&f);
	fp = fopen(target, "w");
	fputs("failoverd-verdicts 1\n", fp);
	fclose(fp);
	unlink(state_path);
	CHECK(symlink(target, state_path) == 0, "symlink");
	restart(&f);
	expect_not_adopted(&f, "a link");
	fp = fopen(target, "r");
	CHECK(fp && fgets(buf, sizeof(buf), fp) && strcmp(buf, "failoverd-verdicts 1\n") == 0 && !fgets(buf, sizeof(buf), fp),
	      "the link's target is untouched");
	if (fp)
		fclose(fp);
	CHECK(lstat(state_path, &st) == 0 && S_ISREG(st.st_mode), "the link was replaced by our own file");
	fx_free(&f);

	/* A dangling link: not "no file". */
	failed_a_on_file(&f);
	unlink(state_path);
	unlink(target);
	CHECK(symlink(target, state_path) == 0, "symlink");
	restart(&f);
	expect_not_adopted(&f, "a dangling link");
	CHECK(access(target, F_OK) != 0, "nothing written through the link");
	fx_free(&f);

	/* Writable by others. */
	failed_a_on_file(&f);
	fp = fopen(state_path, "w");
	fputs("failoverd-verdicts 1\n", fp);
	fclose(fp);
	chmod(state_path, 0666);
	restart(&f);
	expect_not_adopted(&f, "mode 0666");
	CHECK(has_event_with(&f, FO_EV_INFO, "mode 0666"), "the event names the mode");
	fx_free(&f);

	/* Another owner (root can make one; the suite runs as root in CI). */
	if (geteuid() == 0) {
		failed_a_on_file(&f);
		CHECK(chown(state_path, 1, 1) == 0, "chown");
		restart(&f);
		expect_not_adopted(&f, "owner uid 1");
		fx_free(&f);
	}

	/* Empty. */
	failed_a_on_file(&f);
	fp = fopen(state_path, "w");
	fclose(fp);
	restart(&f);
	expect_not_adopted(&f, "an empty file");
	fx_free(&f);

	/* A link planted where the temporary file is made: the save replaces
	 * it and never writes through it. */
	state_reset();
	{
		char tmp[200];
		snprintf(tmp, sizeof(tmp), "%s.tmp", state_path);
		unlink(tmp);
		unlink(target);
		CHECK(symlink(target, tmp) == 0, "symlink at the temporary file");
		fx_armed_state(&f);
		fail_a(&f);
		CHECK(file_has(state_path, "failed brake brake-a "), "verdict written all the same");
		CHECK(access(target, F_OK) != 0, "nothing written through the planted link");
		fx_free(&f);
		unlink(tmp);
	}
	unlink(target);
}

/* A file another boot wrote names instances that no longer exist: dropped,
 * not refused (a state_file kept on a disk across reboots). */
static void test_other_boot_verdict_file_dropped(void)
{
	struct fx f;
	struct fo_config cfg;
	FILE *fp;

	state_reset();
	fp = fopen(state_path, "w");
	fputs("failoverd-verdicts 2 00000000-0000-4000-8000-000000000000\n"
	      "failed brake brake-b 2 - heartbeat-timeout 1700000000\n",
	      fp);
	fclose(fp);
	chmod(state_path, 0600);
	sim_base_config(&cfg);
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0, "adopted: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	CHECK(!file_has(state_path, "failed brake brake-b") && !file_has(state_path, "00000000-0000-4000"),
	      "rewritten for this boot");
	fx_free(&f);

	/* The same record, written in this boot: it holds. */
	{
		struct fo_verdicts vs;
		fo_verdicts_init(&vs, state_path);
		CHECK(vs.boot_id[0], "this kernel has a boot id");
		fp = fopen(state_path, "w");
		fprintf(fp, "failoverd-verdicts 2 %s\nfailed brake brake-b 2 - heartbeat-timeout 1700000000\n", vs.boot_id);
		fclose(fp);
	}
	fx_new_state(&f, &cfg, FO_DOM_RUNNING, FO_DOM_PAUSED, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "this boot's verdict holds: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
}

/* Every record's key (what the lookups compare first) says what the
 * record says. */
static bool keys_match(const struct fo_verdicts *vs)
{
	for (size_t i = 0; i < FO_VERDICT_MAX; i++)
		if (vs->key[i].kind != vs->v[i].kind ||
		    (vs->v[i].kind != FO_VERDICT_NONE && vs->key[i].domid != vs->v[i].inst.domid))
			return false;
	return true;
}

/* The table's lookups read the records in use (v[0..n)) through their
 * keys, not the whole capacity: a dropped record leaves a hole that the
 * next one fills, a file read sets the bound and the keys, a full table
 * still finds every record; every change keeps the keys as the records. */
static void test_verdict_table_lookups(void)
{
	static struct fo_verdicts vs;
	struct fo_instance in[4], again;
	char err[256];

	state_reset();
	fo_verdicts_init(&vs, state_path);
	for (int i = 0; i < 4; i++) {
		memset(&in[i], 0, sizeof(in[i]));
		snprintf(in[i].name, sizeof(in[i].name), "m%d", i);
		in[i].domid = (fo_domid_t)(10 + i);
	}
	CHECK(vs.n == 0, "empty: bound %zu", vs.n);
	fo_verdicts_set_failed(&vs, "p", &in[0], "crashed");
	fo_verdicts_set_active(&vs, "p", &in[1]);
	fo_verdicts_set_failed(&vs, "q", &in[2], "heartbeat-timeout");
	fo_verdicts_set_active(&vs, "q", &in[3]);
	CHECK(vs.n == 4 && keys_match(&vs), "four records, bound %zu", vs.n);
	fo_verdicts_set_failed(&vs, "p", &in[0], "crashed");
	fo_verdicts_set_active(&vs, "p", &in[1]);
	CHECK(vs.n == 4, "recorded again: no new record, bound %zu", vs.n);
	CHECK(fo_verdicts_find(&vs, &in[0]) == &vs.v[0] && fo_verdicts_find(&vs, &in[2]) == &vs.v[2] &&
		      !fo_verdicts_find(&vs, &in[1]),
	      "the failed ones found, the active not");
	CHECK(fo_verdicts_active(&vs, "p") == &vs.v[1] && fo_verdicts_active(&vs, "q") == &vs.v[3] &&
		      !fo_verdicts_active(&vs, "r"),
	      "each pair's active found by its name");
	fo_verdicts_set_active(&vs, "p", &in[0]);
	CHECK(fo_verdicts_active(&vs, "p") == &vs.v[1] && vs.v[1].inst.domid == in[0].domid && keys_match(&vs),
	      "a new active replaces the pair's record");
	/* Another instance of m2 (re-created, another domid): the old one's
	 * verdict is forgotten, the new one has none. */
	again = in[2];
	again.domid = 42;
	CHECK(!fo_verdicts_find(&vs, &again), "the new m2 has no verdict of its own");
	fo_verdicts_forget_other(&vs, &again);
	CHECK(!fo_verdicts_find(&vs, &in[2]) && vs.v[2].kind == FO_VERDICT_NONE && keys_match(&vs),
	      "the old m2's verdict forgotten");
	CHECK(fo_verdicts_clear(&vs, "m0") == 1 && !fo_verdicts_find(&vs, &in[0]) && keys_match(&vs), "m0 cleared");
	fo_verdicts_set_failed(&vs, "r", &in[3], "gone");
	CHECK(vs.n == 4 && fo_verdicts_find(&vs, &in[3]) == &vs.v[0] && keys_match(&vs),
	      "the first hole reused: bound %zu", vs.n);
	fo_verdicts_set_unknown(&vs, "q", "m2");
	CHECK(vs.n == 4 && fo_verdicts_find(&vs, &again) == &vs.v[2] && keys_match(&vs),
	      "an unknown verdict on the name m2 applies to any m2");
	CHECK(fo_verdicts_save(&vs, err, sizeof(err)) == 0, "%s", err);
	memset(vs.key, 0xff, sizeof(vs.key)); /* the load must set every key */
	CHECK(fo_verdicts_load(&vs, err, sizeof(err)) == 0, "%s", err);
	CHECK(vs.n == 4 && keys_match(&vs) && fo_verdicts_find(&vs, &in[3]) && fo_verdicts_find(&vs, &again) &&
		      fo_verdicts_active(&vs, "p") && fo_verdicts_active(&vs, "q") && !fo_verdicts_find(&vs, &in[0]),
	      "read back: four records, bound %zu", vs.n);

	/* Full: every slot taken by a last active; a verdict then replaces
	 * one of them and is found, and every pair's record still is. */
	fo_verdicts_init(&vs, "");
	for (size_t i = 0; i < FO_VERDICT_MAX; i++) {
		char pair[32];

		snprintf(pair, sizeof(pair), "p%zu", i);
		fo_verdicts_set_active(&vs, pair, &in[1]);
	}
	{
		char last[32];

		snprintf(last, sizeof(last), "p%d", FO_VERDICT_MAX - 1);
		CHECK(vs.n == FO_VERDICT_MAX && fo_verdicts_active(&vs, "p0") == &vs.v[0] &&
			      fo_verdicts_active(&vs, last) == &vs.v[FO_VERDICT_MAX - 1] && keys_match(&vs),
		      "full: bound %zu", vs.n);
	}
	fo_verdicts_set_failed(&vs, "q", &in[2], "crashed");
	CHECK(vs.n == FO_VERDICT_MAX && fo_verdicts_find(&vs, &in[2]) && keys_match(&vs),
	      "a verdict in a full table is found");
	state_reset();
}

/* Killed after the switch and before the verdict was written (or the
 * switch was not ours): the last recorded active is found paused and the
 * other running. It is presumed failed. */
static void test_unrecorded_switch_presumed_failed(void)
{
	struct fx f;
	char err[256];

	state_reset();
	fx_armed_state(&f);
	CHECK(file_has(state_path, "active brake brake-a "), "the active is on record");
	/* What the switch did, without the daemon recording it. */
	fo_sim_external_pause(f.hv, f.a);
	fo_sim_external_unpause(f.hv, f.b);
	restart(&f);
	CHECK(f.p->state == FO_PAIR_DEGRADED && f.p->active == 1, "not adopted: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(strstr(f.p->reason, "brake-a failed (unrecorded-switch at "), "reason: %s", f.p->reason);
	fx_free(&f);

	/* A recorded manual switchover is no such thing. */
	state_reset();
	fx_armed_state(&f);
	CHECK(fo_pair_request_switchover(f.p, err, sizeof(err)) == 0, "%s", err);
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "switched over");
	restart(&f);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "adopted after a manual switchover: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

/* The verdict is written after the switch, never before the standby runs. */
static void test_verdict_written_after_unpause(void)
{
	struct fx f;
	const struct fo_event *e;

	state_reset();
	fx_armed_state(&f);
	fo_sim_delay(f.hv, FO_SIM_UNPAUSE, 5 * MS);
	advance(&f, 50);
	e = last_event_of(&f, FO_EV_SWITCHOVER);
	CHECK(e && e->result == FO_RESULT_OK, "switched");
	CHECK(file_has(state_path, "failed brake brake-a "), "written once the switch returned");
	fx_free(&f);

	/* A state file that cannot be written: the switch still happens, the
	 * failure is said, and the verdict holds in memory. */
	state_reset();
	snprintf(state_path, sizeof(state_path), "/proc/fo-no-such-dir/failed-members");
	fx_armed_state(&f);
	advance(&f, 60);
	prove(&f, f.b);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "switched");
	CHECK(has_event_with(&f, FO_EV_INFO, "cannot"), "the write failure is an event");
	fo_pair_arm(f.p);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "the verdict holds in memory: %s", fo_pair_state_name(f.p->state));
	fx_free(&f);
	snprintf(state_path, sizeof(state_path), "%s/failed-members", state_dir);
}

int main(void)
{
	fo_log_set_level(FO_LOG_ERR);
	RUN(test_restart_does_not_adopt_failed);
	RUN(test_stand_down_survives_restart);
	RUN(test_arm_does_not_adopt_failed);
	RUN(test_clear_failed_allows_again);
	RUN(test_new_instance_starts_clean);
	RUN(test_corrupt_verdict_file);
	RUN(test_lost_verdict_file_fails_closed);
	RUN(test_untrusted_verdict_file_fails_closed);
	RUN(test_other_boot_verdict_file_dropped);
	RUN(test_unrecorded_switch_presumed_failed);
	RUN(test_verdict_written_after_unpause);
	RUN(test_verdict_table_lookups);
	state_cleanup();
	return check_summary("test_verdicts");
}
