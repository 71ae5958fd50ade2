/* SPDX-License-Identifier: MIT */
/*
 * manager.c - all pairs: the hypervisor's callbacks routed to their pair,
 * the deadlines and after-work of a loop turn, placement, the verdict
 * file, reload. Beside it: manager_kernel.c (the pairs in an armed owner),
 * manager_metrics.c (the metrics text).
 */
#include "core/manager_internal.h"

#include "placement.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fo_manager_new(const struct fo_config *cfg, struct fo_manager **ret)
{
	/* Allocated once, before mlockall, and never again: the ring and the
	 * pairs are all the memory the switch path touches. */
	struct fo_manager *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->cfg = *cfg;
	m->env.ring = &m->ring;
	m->env.placement_enforce = cfg->placement.enforce;
	fo_verdicts_init(&m->verdicts, NULL);
	m->env.verdicts = &m->verdicts;
	m->env.net = &m->net;
	m->unknown_rl = (struct fo_ratelimit)FO_RATELIMIT_INIT(10000, 5);
	fo_event_ring_init(&m->ring);
	m->n_pairs = cfg->n_pairs;
	for (size_t i = 0; i < cfg->n_pairs; i++)
		fo_pair_init(&m->pairs[i], &cfg->pairs[i], &m->env);
	*ret = m;
	return 0;
}

struct fo_manager *fo_manager_free(struct fo_manager *m)
{
	if (m)
		fo_svcnet_sockets_close(&m->net);
	free(m);
	return NULL;
}

static bool find_member(struct fo_manager *m, fo_domid_t domid, struct fo_pair **ret_pair, int *ret_idx)
{
	for (size_t i = 0; i < m->n_pairs; i++) {
		int idx = fo_pair_member_by_domid(&m->pairs[i], domid);
		if (idx >= 0) {
			*ret_pair = &m->pairs[i];
			*ret_idx = idx;
			return true;
		}
	}
	return false;
}

static void on_heartbeat(void *ctx, fo_domid_t domid, const struct fo_hb_page *page)
{
	struct fo_manager *m = ctx;
	struct fo_pair *p;
	int idx;

	if (find_member(m, domid, &p, &idx))
		fo_pair_on_heartbeat(p, idx, page);
	else if (fo_ratelimit_ok(&m->unknown_rl, m->env.hv->ops->now_ns(m->env.hv)))
		fo_debug("heartbeat from domain %u, which is in no pair", domid);
}

static void on_agent(void *ctx, fo_domid_t domid, int err, const char *reason)
{
	struct fo_manager *m = ctx;
	struct fo_pair *p;
	int idx;

	if (find_member(m, domid, &p, &idx))
		fo_pair_on_agent(p, idx, err, reason);
}

/* Pairs are verified once armed (at arm time first), so that an arming
 * pair's half-built member is not reported as drift; after that, on every
 * check. */
static void check_verified_pairs(struct fo_manager *m)
{
	for (size_t i = 0; i < m->n_pairs; i++)
		if (m->pairs[i].placement_checked)
			fo_pair_check_placement(&m->pairs[i]);
}

static void on_domains_changed(void *ctx)
{
	struct fo_manager *m = ctx;

	/* Every pair's switch before any pair's slow half (lookups, watches):
	 * one pair's bookkeeping never delays another's failover. */
	for (size_t i = 0; i < m->n_pairs; i++)
		fo_pair_domains_fault(&m->pairs[i]);
	for (size_t i = 0; i < m->n_pairs; i++)
		fo_pair_on_domains_changed(&m->pairs[i]);
	/* A member that came back (a rebuild, an operator's `xl create`) was
	 * placed when found; verify that it stuck. */
	check_verified_pairs(m);
}

static void on_domain_created(void *ctx, const char *config_path, int err, const char *reason)
{
	struct fo_manager *m = ctx;

	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++)
			if (strcmp(fo_pair_member_config(&m->pairs[i], j), config_path) == 0)
				fo_pair_on_created(&m->pairs[i], j, err, reason);
}

static void on_kernel_switched(void *ctx, const struct fo_hv_kevent *ev)
{
	struct fo_manager *m = ctx;

	for (size_t i = 0; i < m->n_pairs; i++)
		if (m->pairs[i].kernel_ok && m->pairs[i].kernel_id == ev->pair_id) {
			fo_pair_on_kernel_event(&m->pairs[i], ev);
			return;
		}
	fo_warn("the kernel module switched dom%u -> dom%u (%s) for pair id %u, which is no configured pair",
		ev->active, ev->standby, ev->result == FO_HV_KSWITCH_OK ? "ok" : "failed", ev->pair_id);
}

static void on_write_failed(void *ctx, fo_domid_t domid, const char *key, const char *value, int err)
{
	struct fo_manager *m = ctx;
	struct fo_pair *p;
	int idx;

	if (find_member(m, domid, &p, &idx))
		fo_pair_on_write_failed(p, idx, key, value, err);
}

struct fo_hv_callbacks fo_manager_hv_callbacks(struct fo_manager *m)
{
	return (struct fo_hv_callbacks){ .ctx = m,
					 .heartbeat = on_heartbeat,
					 .agent = on_agent,
					 .domains_changed = on_domains_changed,
					 .domain_created = on_domain_created,
					 .kernel_switched = on_kernel_switched,
					 .write_failed = on_write_failed };
}

void fo_manager_attach_hv(struct fo_manager *m, struct fo_hv *hv)
{
	m->env.hv = hv;
	fo_manager_assign_kernel_ids(m);
}

int fo_manager_setup_placement(struct fo_manager *m, char *err, size_t errlen)
{
	return fo_placement_setup(m->env.hv, &m->cfg, err, errlen);
}

static void host_event(struct fo_manager *m, enum fo_event_result result, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void host_event(struct fo_manager *m, enum fo_event_result result, const char *fmt, ...)
{
	struct fo_event *e = fo_event_ring_claim(&m->ring, m->env.hv->ops->now_ns(m->env.hv));
	va_list ap;

	e->kind = FO_EV_PLACEMENT;
	e->result = result;
	snprintf(e->pair, sizeof(e->pair), "-"); /* the host, not one pair */
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

void fo_manager_check_placement(struct fo_manager *m)
{
	const struct fo_config *c = &m->cfg;
	char found[sizeof(m->host_placement)] = "";
	bool ok;

	if (!fo_config_has_placement(c))
		return;
	ok = fo_placement_check_host(m->env.hv, c, found, sizeof(found));
	if (!ok && c->placement.enforce && fo_placement_apply_host(m->env.hv, c) == 0) {
		char again[sizeof(found)] = "";

		if (fo_placement_check_host(m->env.hv, c, again, sizeof(again))) {
			host_event(m, FO_RESULT_OK, "drift re-applied (placement.enforce): was %s", found);
			found[0] = '\0';
			ok = true;
		} else {
			snprintf(found, sizeof(found), "%s", again);
		}
	}
	if (!ok && (!m->host_drift || strcmp(found, m->host_placement) != 0))
		host_event(m, FO_RESULT_DEGRADED, "drift: %s", found);
	else if (ok && m->host_drift)
		host_event(m, FO_RESULT_OK, "as configured again");
	m->host_drift = !ok;
	m->host_checked = true;
	snprintf(m->host_placement, sizeof(m->host_placement), "%s", found);

	check_verified_pairs(m);
}

bool fo_manager_host_placement(const struct fo_manager *m, const char **ret_detail)
{
	*ret_detail = m->host_placement;
	return m->host_checked && !m->host_drift;
}

static void placement_timer_arm(struct fo_manager *m)
{
	uint64_t every = (uint64_t)m->cfg.placement.check_ms * 1000000ull;

	m->placement_next_ns = fo_config_has_placement(&m->cfg) && every ? m->env.hv->ops->now_ns(m->env.hv) + every : 0;
}

void fo_manager_set_state_file(struct fo_manager *m, const char *path)
{
	snprintf(m->verdicts.path, sizeof(m->verdicts.path), "%s", path ? path : "");
}

/*
 * Whether this boot already had a verdict file: the boot note (hv.h) a
 * daemon before us left, naming the file and the boot. Without the note a
 * missing file cannot be told from a first start, so a backend without one
 * trusts a missing file as before. Sets `note` to the note's text.
 */
static bool boot_had_verdicts(struct fo_manager *m, char *note, size_t len)
{
	struct fo_hv *hv = m->env.hv;
	const char *ours = m->verdicts.boot_id;
	char boot[FO_BOOT_ID_MAX + 1] = "-";

	if (!hv->ops->boot_note_read || hv->ops->boot_note_read(hv, note, len) < 0)
		return false;
	/* xenstore forgets the note at a reboot; still, a note naming another
	 * boot (where both sides know theirs) is no witness of this one. */
	sscanf(note, "boot=%36[0-9a-f-]", boot);
	return !ours[0] || strcmp(boot, "-") == 0 || strcmp(boot, ours) == 0;
}

/* From the first start on, the file exists and the boot note names it:
 * from then on a missing file means a lost one. */
static void keep_verdict_file(struct fo_manager *m)
{
	struct fo_hv *hv = m->env.hv;
	char err[FO_PATH_MAX + 128], note[FO_PATH_MAX + 64];
	int r;

	m->verdicts.dirty = true;
	if (fo_verdicts_save(&m->verdicts, err, sizeof(err)) < 0) {
		fo_err("%s", err);
		return;
	}
	if (!hv->ops->boot_note_write)
		return;
	snprintf(note, sizeof(note), "boot=%s file=%s", m->verdicts.boot_id[0] ? m->verdicts.boot_id : "-",
		 m->verdicts.path);
	r = hv->ops->boot_note_write(hv, note);
	if (r < 0)
		fo_warn("cannot note this boot's verdict file (%s) with the hypervisor: %s; if the file is lost, a "
			"restarted failoverd cannot tell it from a first start",
			m->verdicts.path, strerror(-r));
}

/*
 * The verdicts a daemon before us left. A file that cannot be read, or
 * cannot be trusted (a link, another owner, writable by others), or that
 * is missing although this boot had one (deleted, or state_file changed),
 * may have said that any member failed: every member gets an UNKNOWN
 * verdict (no paused member is adopted as a standby until the operator
 * clears it), a damaged file is kept aside for inspection and replaced by
 * one that says so, so that the next restart still knows.
 */
static void load_verdicts(struct fo_manager *m)
{
	char err[FO_PATH_MAX + 128], aside[FO_PATH_MAX + 16], note[FO_PATH_MAX + 64];
	struct fo_hv *hv = m->env.hv;
	struct fo_event *e;
	int r;

	if (!m->verdicts.path[0])
		return;
	r = fo_verdicts_load(&m->verdicts, err, sizeof(err));
	if (r == 0 && m->verdicts.missing && boot_had_verdicts(m, note, sizeof(note))) {
		snprintf(err, sizeof(err), "verdict file %s is missing, but this boot had one (%s)", m->verdicts.path,
			 note);
		r = -ENOENT;
	}
	if (r == 0) {
		if (m->verdicts.other_boot)
			fo_notice("verdict file %s was written in another boot: nothing in it applies to this one",
				  m->verdicts.path);
		keep_verdict_file(m);
		return;
	}
	snprintf(aside, sizeof(aside), "%s.corrupt", m->verdicts.path);
	if (r == -ENOENT || rename(m->verdicts.path, aside) < 0)
		snprintf(aside, sizeof(aside), "(left in place)");
	fo_err("%s; kept as %s. Not knowing which members failed, no paused member of any pair is adopted as a "
	       "standby until `failoverctl clear-failed MEMBER`",
	       err, aside);
	e = fo_event_ring_claim(&m->ring, hv->ops->now_ns(hv));
	e->kind = FO_EV_INFO;
	e->result = FO_RESULT_FAILED;
	snprintf(e->pair, sizeof(e->pair), "-");
	snprintf(e->message, sizeof(e->message), "%.100s: every member's verdict unknown until cleared", err);
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++)
			fo_verdicts_set_unknown(&m->verdicts, m->pairs[i].cfg.name, m->pairs[i].m[j].name);
	keep_verdict_file(m);
}

int fo_manager_clear_failed(struct fo_manager *m, const char *member, struct fo_pair **ret_pair)
{
	for (size_t i = 0; i < m->n_pairs; i++)
		for (int j = 0; j < 2; j++)
			if (strcmp(m->pairs[i].m[j].name, member) == 0) {
				*ret_pair = &m->pairs[i];
				return fo_pair_clear_failed(&m->pairs[i], j);
			}
	return -ENOENT;
}

void fo_manager_start(struct fo_manager *m)
{
	load_verdicts(m);
	/* Switches the module did while no daemon ran come first: arming
	 * must know that the member Xen shows paused failed, rather than
	 * adopt it as a verified standby. */
	if (m->env.hv->ops->kernel_poll_events)
		m->env.hv->ops->kernel_poll_events(m->env.hv);
	fo_manager_kernel_sweep(m, false);
	for (size_t i = 0; i < m->n_pairs; i++)
		fo_pair_start(&m->pairs[i]);
	fo_manager_kernel_sweep(m, true);
	fo_manager_check_placement(m);
	placement_timer_arm(m);
}

void fo_manager_turn_begin(struct fo_manager *m) { m->env.in_turn = true; }

void fo_manager_write_held_verdicts(struct fo_manager *m)
{
	fo_manager_after_work(m);
	fo_pairs_write_held_verdicts(&m->env, m->pairs, m->n_pairs);
}

void fo_manager_turn_end(struct fo_manager *m)
{
	fo_manager_write_held_verdicts(m);
	m->env.in_turn = false;
}

uint64_t fo_manager_next_deadline(struct fo_manager *m)
{
	uint64_t next = m->placement_next_ns;

	for (size_t i = 0; i < m->n_pairs; i++) {
		uint64_t d = m->pairs[i].audit_next_ns;

		if (d && (!next || d < next))
			next = d;
		for (int j = 0; j < 2; j++) {
			d = m->pairs[i].m[j].deadline_ns;
			if (d && (!next || d < next))
				next = d;
		}
	}
	return next;
}

static void on_net_news(void *ctx, int ifindex, const uint8_t *mac)
{
	struct fo_manager *m = ctx;

	for (size_t i = 0; i < m->n_pairs; i++)
		fo_pair_net_news(&m->pairs[i], ifindex, mac);
}

/* The bridges' news since the last turn (fo_svcnet_news): a few
 * reads without waiting, one when nothing changed. News lost to a burst
 * (ENOBUFS), or more than those reads take, makes every pair with a
 * network look for itself: its port's entries (a bounded dump) and its
 * bridge, where draining a guest's burst of news would not be bounded. */
static void read_net_news(struct fo_manager *m)
{
	if (fo_svcnet_news(&m->net, 16, on_net_news, m) == -ENOBUFS)
		on_net_news(m, 0, NULL);
}

/*
 * Every member deadline due by now (heartbeat deadlines, and the waits of
 * arming, grace, rebuild, drills); the clock as it was at the end. One that
 * came due while another was handled (a switch takes time) is handled now
 * as well, in a pass of its own if its pair came earlier: it would
 * otherwise wait for the next turn, behind this one's verdict write
 * (turn_end). Handlers set their next deadlines ahead of now; the passes
 * are bounded all the same.
 */
static uint64_t run_due_members(struct fo_manager *m)
{
	uint64_t now = m->env.hv->ops->now_ns(m->env.hv);

	for (int pass = 0, handled = 1; handled && pass < 4; pass++) {
		handled = 0;
		for (size_t i = 0; i < m->n_pairs; i++)
			for (int j = 0; j < 2; j++) {
				uint64_t d = m->pairs[i].m[j].deadline_ns;
				if (d && d <= now) {
					fo_pair_on_deadline(&m->pairs[i], j);
					handled = 1;
					now = m->env.hv->ops->now_ns(m->env.hv);
				}
			}
	}
	return now;
}

void fo_manager_after_work(struct fo_manager *m)
{
	/* Pairs whose after-work is held, in pair order; a switch made on
	 * the way (below) holds its own, and is taken in another pass if
	 * its pair came earlier. Each pass needs a fault that came due
	 * during the one before; bounded all the same. */
	for (int pass = 0; m->env.after_work_held && pass < 8; pass++) {
		m->env.after_work_held = false;
		for (size_t i = 0; i < m->n_pairs; i++) {
			if (!m->pairs[i].after_work_pending)
				continue;
			/* A fault that came due during the after-work so far
			 * (on Xen, a destroy takes milliseconds) switches
			 * before the rest of it. */
			run_due_members(m);
			fo_pair_after_work(&m->pairs[i]);
		}
	}
	/* Past the bound (a fault due in every pass): the rest now. */
	for (size_t i = 0; m->env.after_work_held && i < m->n_pairs; i++)
		fo_pair_after_work(&m->pairs[i]);
	m->env.after_work_held = false;
}

void fo_manager_run_due(struct fo_manager *m)
{
	/* Heartbeat deadlines first: a switch that is due never waits for a
	 * placement check. */
	uint64_t now = run_due_members(m);

	/* The fence audit, once a heartbeat period per pair: two domain
	 * info reads. After the deadlines, for the same reason. The bridges'
	 * news first, once for all the audits of this turn. */
	for (size_t i = 0, news_read = 0; i < m->n_pairs; i++) {
		struct fo_pair *p = &m->pairs[i];

		if (!p->audit_next_ns || p->audit_next_ns > now)
			continue;
		if (!news_read++)
			read_net_news(m);
		fo_pair_audit(p);
		p->audit_next_ns = now + (uint64_t)p->cfg.period_ms * 1000000ull;
	}
	if (m->placement_next_ns && m->placement_next_ns <= now) {
		fo_manager_check_placement(m);
		placement_timer_arm(m);
	}
}

void fo_manager_publish_events(struct fo_manager *m, fo_event_sink sink, void *ctx)
{
	size_t n = fo_event_ring_count(&m->ring);

	for (size_t i = 0; i < n; i++) {
		struct fo_event *e = (struct fo_event *)fo_event_ring_get(&m->ring, i);
		if (e->published || e->pending)
			continue;
		e->published = true;
		sink(ctx, e);
	}
}

static bool same_members(const struct fo_pair_config *a, const struct fo_pair_config *b)
{
	return strcmp(a->active, b->active) == 0 && strcmp(a->standby, b->standby) == 0;
}

static const struct fo_pair_config *config_pair(const struct fo_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_pairs; i++)
		if (strcmp(cfg->pairs[i].name, name) == 0)
			return &cfg->pairs[i];
	return NULL;
}

bool fo_manager_reload_must_wait(const struct fo_manager *m, const struct fo_config *cfg, char *why, size_t len)
{
	for (size_t i = 0; i < m->n_pairs; i++) {
		const struct fo_pair *p = &m->pairs[i];
		const struct fo_pair_config *pc = config_pair(cfg, p->cfg.name);
		const char *doing = p->drill_active		     ? "running a drill"
				    : p->state == FO_PAIR_SWITCHING  ? "switching (waiting for the new active's first heartbeat)"
				    : p->state == FO_PAIR_REBUILDING ? "rebuilding a member"
								     : NULL;

		if (doing && !(pc && same_members(&p->cfg, pc))) {
			snprintf(why, len, "pair %s, which the new config %s, is %s", p->cfg.name,
				 pc ? "gives other members" : "removes", doing);
			return true;
		}
	}
	return false;
}

void fo_manager_reload(struct fo_manager *m, const struct fo_config *cfg)
{
	/* Build the new pair table beside the old one, moving live pairs over so
	 * their state (who is active, heartbeat trackers) survives the reload. */
	static struct fo_pair next[FO_MAX_PAIRS];
	bool kept[FO_MAX_PAIRS] = { false };

	for (size_t i = 0; i < cfg->n_pairs; i++) {
		const struct fo_pair_config *pc = &cfg->pairs[i];
		struct fo_pair *old = fo_manager_find_pair(m, pc->name);

		if (old && same_members(&old->cfg, pc)) {
			next[i] = *old;
			kept[old - m->pairs] = true;
			fo_pair_update_config(&next[i], pc);
			fo_info("reload: pair %s updated", pc->name);
		} else {
			fo_pair_init(&next[i], pc, &m->env);
			next[i].state = FO_PAIR_ARMING;
			next[i].started_blind = true; /* a daemon before us may have had it */
			fo_info("reload: pair %s %s", pc->name, old ? "re-armed with new members" : "added");
		}
	}
	for (size_t i = 0; i < m->n_pairs; i++) {
		if (kept[i])
			continue;
		fo_info("reload: pair %s %s; its domains are left as they are", m->pairs[i].cfg.name,
			m->pairs[i].kernel_armed ? "removed (and disarmed in the kernel module)" : "removed");
		fo_pair_kernel_release(&m->pairs[i]);
		for (int j = 0; j < 2; j++)
			if (m->pairs[i].m[j].domid != FO_DOMID_INVALID)
				m->env.hv->ops->unwatch_member(m->env.hv, m->pairs[i].m[j].domid);
	}
	memcpy(m->pairs, next, sizeof(next[0]) * cfg->n_pairs);
	m->n_pairs = cfg->n_pairs;
	m->cfg = *cfg;
	m->env.placement_enforce = cfg->placement.enforce;
	placement_timer_arm(m);
	fo_manager_assign_kernel_ids(m);
	fo_manager_kernel_sweep(m, false);
	for (size_t i = 0; i < m->n_pairs; i++)
		if (m->pairs[i].state == FO_PAIR_ARMING)
			fo_pair_arm(&m->pairs[i]);
	fo_manager_kernel_sweep(m, true);
}

const struct fo_config *fo_manager_config(const struct fo_manager *m) { return &m->cfg; }
size_t fo_manager_pair_count(const struct fo_manager *m) { return m->n_pairs; }
struct fo_pair *fo_manager_pair(struct fo_manager *m, size_t i) { return i < m->n_pairs ? &m->pairs[i] : NULL; }
const struct fo_event_ring *fo_manager_events(const struct fo_manager *m) { return &m->ring; }
struct fo_hv *fo_manager_hv(struct fo_manager *m) { return m->env.hv; }

struct fo_pair *fo_manager_find_pair(struct fo_manager *m, const char *name)
{
	for (size_t i = 0; i < m->n_pairs; i++)
		if (strcmp(m->pairs[i].cfg.name, name) == 0)
			return &m->pairs[i];
	return NULL;
}

bool fo_manager_settled(const struct fo_manager *m)
{
	for (size_t i = 0; i < m->n_pairs; i++)
		if (m->pairs[i].state == FO_PAIR_ARMING)
			return false;
	return true;
}

void fo_manager_status_line(const struct fo_manager *m, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < m->n_pairs && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s %s", i ? ", " : "", m->pairs[i].cfg.name,
			      fo_pair_state_name(m->pairs[i].state));
}
