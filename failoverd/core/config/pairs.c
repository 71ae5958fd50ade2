/* SPDX-License-Identifier: MIT */
/*
 * pairs.c - pairs[]: one pair's section (members, heartbeat, policies,
 * health, pins, xl configs) and the rules that span pairs (names, domains).
 */
#include "core/config/config_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int check_domain_name(struct parser *p, const char *kp, const char *s)
{
	char sbuf[FO_SHOWN_BUF];
	size_t len = strlen(s);
	const char *c;

	if (len == 0 || len > FO_DOMNAME_MAX)
		return fo_config_fail(p, kp, "must be a domain name of 1 to %d bytes, got %zu bytes",
				      FO_DOMNAME_MAX, len);
	for (c = s; *c; c++)
		if (*c == '/' || fo_config_is_space(*c) || (unsigned char)*c < 0x20 || *c == 0x7f)
			return fo_config_fail(p, kp, "domain name must not contain '/', whitespace or "
					      "control characters, got \"%s\"", fo_config_shown(s, sbuf));
	return 0;
}

static int parse_heartbeat(struct parser *p, const cJSON *obj, const char *kp,
			   struct fo_pair_config *pc)
{
	const char *const *keys = fo_config_keys(CFG_HEARTBEAT);
	char tkp[KEYPATH_MAX];
	long v;
	int rc;

	rc = fo_config_check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	rc = fo_config_require(p, obj, kp, "period_ms");
	if (rc < 0)
		return rc;
	rc = fo_config_require(p, obj, kp, "timeout_ms");
	if (rc < 0)
		return rc;

	rc = fo_config_read_int(p, obj, kp, "period_ms", 1, PERIOD_MS_MAX, &v);
	if (rc < 0)
		return rc;
	pc->period_ms = (unsigned)v;

	rc = fo_config_read_int(p, obj, kp, "timeout_ms", 1, MS_MAX, &v);
	if (rc < 0)
		return rc;
	/* Fewer than two periods and one late heartbeat (a busy vCPU, a
	 * scheduler hiccup) would be declared a failure. */
	if (v < 2L * pc->period_ms) {
		fo_config_keypath_join(tkp, kp, "timeout_ms");
		return fo_config_fail(p, tkp, "must be >= 2 * period_ms (%lu), got %ld",
				      2UL * pc->period_ms, v);
	}
	pc->timeout_ms = (unsigned)v;

	pc->grace_ms = pc->timeout_ms;
	rc = fo_config_read_int(p, obj, kp, "grace_ms", 1, MS_MAX, &v);
	if (rc < 0)
		return rc;
	if (rc > 0)
		pc->grace_ms = (unsigned)v;
	return 0;
}

static int parse_pin(struct parser *p, const cJSON *obj, const char *kp, struct fo_pin_config *pin)
{
	const char *const *keys = fo_config_keys(CFG_PIN);
	char mkp[KEYPATH_MAX], sbuf[FO_SHOWN_BUF];
	const char *s = NULL;
	int rc;

	rc = fo_config_check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	/* That the pool exists is checked in fo_config_check_placement(), once every
	 * part of the document is read. */
	rc = fo_config_read_string(p, obj, kp, "cpupool", &s);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		fo_config_keypath_join(mkp, kp, "cpupool");
		if (strlen(s) == 0 || strlen(s) > FO_NAME_MAX)
			return fo_config_fail(p, mkp, "must be the name of one of cpupools[], got \"%s\"", fo_config_shown(s, sbuf));
		snprintf(pin->cpupool, sizeof(pin->cpupool), "%s", s);
	}
	rc = fo_config_parse_pcpu_list(p, obj, kp, "active_pcpus", pin->active_pcpus, &pin->n_active_pcpus);
	if (rc < 0)
		return rc;
	rc = fo_config_parse_pcpu_list(p, obj, kp, "standby_pcpus", pin->standby_pcpus, &pin->n_standby_pcpus);
	return rc < 0 ? rc : 0;
}

static int parse_domain_config(struct parser *p, const cJSON *obj, const char *kp,
			       struct fo_pair_config *pc)
{
	const char *const *keys = fo_config_keys(CFG_DOMAIN_CONFIG);
	char mkp[KEYPATH_MAX];
	const char *s = NULL;
	int rc;

	rc = fo_config_check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	rc = fo_config_require(p, obj, kp, "active");
	if (rc < 0)
		return rc;
	rc = fo_config_require(p, obj, kp, "standby");
	if (rc < 0)
		return rc;

	rc = fo_config_read_string(p, obj, kp, "active", &s);
	if (rc < 0)
		return rc;
	fo_config_keypath_join(mkp, kp, "active");
	rc = fo_config_check_abs_path(p, mkp, s, FO_PATH_MAX);
	if (rc < 0)
		return rc;
	snprintf(pc->active_config, sizeof(pc->active_config), "%s", s);

	rc = fo_config_read_string(p, obj, kp, "standby", &s);
	if (rc < 0)
		return rc;
	fo_config_keypath_join(mkp, kp, "standby");
	rc = fo_config_check_abs_path(p, mkp, s, FO_PATH_MAX);
	if (rc < 0)
		return rc;
	/* One xl config names one domain; rebuilding both members from it
	 * would create two domains with the same name. */
	if (strcmp(s, pc->active_config) == 0)
		return fo_config_fail(p, mkp, "must differ from domain_config.active");
	snprintf(pc->standby_config, sizeof(pc->standby_config), "%s", s);
	return 0;
}

/* health.fail_on_deadline_miss: {"count": N, "window_ms": W}, both required. */
static int parse_deadline_miss(struct parser *p, const cJSON *obj, const char *health_kp,
			       struct fo_pair_config *pc)
{
	const char *const *keys = fo_config_keys(CFG_DEADLINE_MISS);
	char kp[KEYPATH_MAX];
	long count, window;
	int rc;

	pc->deadline_miss_count = 0;
	pc->deadline_miss_window_ms = 0;
	if (!obj)
		return 0;
	fo_config_keypath_join(kp, health_kp, "fail_on_deadline_miss");
	rc = fo_config_check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	rc = fo_config_require(p, obj, kp, "count");
	if (rc == 0)
		rc = fo_config_require(p, obj, kp, "window_ms");
	if (rc < 0)
		return rc;
	rc = fo_config_read_int(p, obj, kp, "count", 1, FO_DEADLINE_MISS_MAX, &count);
	if (rc < 0)
		return rc;
	rc = fo_config_read_int(p, obj, kp, "window_ms", 1, MS_MAX, &window);
	if (rc < 0)
		return rc;
	pc->deadline_miss_count = (unsigned)count;
	pc->deadline_miss_window_ms = (unsigned)window;
	return 0;
}

int fo_config_parse_pair(struct parser *p, const cJSON *obj, const char *kp,
			 struct fo_pair_config *pc)
{
	const char *const *keys = fo_config_keys(CFG_PAIR);
	static const char *const required[] = { "name", "active", "standby", "heartbeat",
						"deadline_ms", NULL };
	const char *const *health_keys = fo_config_keys(CFG_HEALTH);
	char mkp[KEYPATH_MAX];
	const char *const *k;
	const cJSON *sub;
	long v;
	int e, rc;

	rc = fo_config_check_object(p, obj, kp, keys);
	if (rc < 0)
		return rc;
	for (k = required; *k; k++) {
		rc = fo_config_require(p, obj, kp, *k);
		if (rc < 0)
			return rc;
	}

	rc = fo_config_read_checked_name(p, obj, kp, "name", fo_config_check_pair_name, pc->name, sizeof(pc->name));
	if (rc < 0)
		return rc;
	rc = fo_config_read_checked_name(p, obj, kp, "active", check_domain_name, pc->active, sizeof(pc->active));
	if (rc < 0)
		return rc;
	rc = fo_config_read_checked_name(p, obj, kp, "standby", check_domain_name, pc->standby, sizeof(pc->standby));
	if (rc < 0)
		return rc;
	if (strcmp(pc->standby, pc->active) == 0) {
		fo_config_keypath_join(mkp, kp, "standby");
		return fo_config_fail(p, mkp, "must differ from active (\"%s\")", pc->active);
	}

	fo_config_keypath_join(mkp, kp, "heartbeat");
	rc = parse_heartbeat(p, fo_config_member(obj, "heartbeat"), mkp, pc);
	if (rc < 0)
		return rc;

	rc = fo_config_read_int(p, obj, kp, "deadline_ms", 1, MS_MAX, &v);
	if (rc < 0)
		return rc;
	pc->deadline_ms = (unsigned)v;

	pc->on_failover = FO_ON_FAILOVER_KEEP_PAUSED;
	rc = fo_config_read_enum(p, obj, kp, "on_failover", fo_config_on_failover_names, &e);
	if (rc < 0)
		return rc;
	if (rc > 0)
		pc->on_failover = (enum fo_on_failover)e;

	pc->failback = FO_FAILBACK_MANUAL;
	rc = fo_config_read_enum(p, obj, kp, "failback", fo_config_failback_names, &e);
	if (rc < 0)
		return rc;
	if (rc > 0)
		pc->failback = (enum fo_failback)e;

	pc->fail_on_unhealthy = true;
	pc->deadline_miss_count = 0;
	pc->deadline_miss_window_ms = 0;
	sub = fo_config_member(obj, "health");
	if (sub) {
		fo_config_keypath_join(mkp, kp, "health");
		rc = fo_config_check_object(p, sub, mkp, health_keys);
		if (rc < 0)
			return rc;
		rc = fo_config_read_bool(p, sub, mkp, "fail_on_unhealthy", &pc->fail_on_unhealthy);
		if (rc < 0)
			return rc;
		rc = parse_deadline_miss(p, fo_config_member(sub, "fail_on_deadline_miss"), mkp, pc);
		if (rc < 0)
			return rc;
	}

	sub = fo_config_member(obj, "pin");
	if (sub) {
		fo_config_keypath_join(mkp, kp, "pin");
		rc = parse_pin(p, sub, mkp, &pc->pin);
		if (rc < 0)
			return rc;
	}

	sub = fo_config_member(obj, "domain_config");
	if (sub) {
		fo_config_keypath_join(mkp, kp, "domain_config");
		rc = parse_domain_config(p, sub, mkp, pc);
		if (rc < 0)
			return rc;
	} else if (pc->on_failover == FO_ON_FAILOVER_REBUILD) {
		return fo_config_fail(p, kp, "missing required key \"domain_config\" "
				      "(on_failover \"rebuild\" needs the xl config files)");
	}

	memset(&pc->net, 0, sizeof(pc->net));
	sub = fo_config_member(obj, "network");
	if (sub) {
		fo_config_keypath_join(mkp, kp, "network");
		rc = fo_config_parse_network(p, sub, mkp, &pc->net);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Rules that span pairs: names are handles for the CLI, and a domain that
 * two pairs could pause and unpause would be fought over. */
int fo_config_check_against_earlier_pairs(struct parser *p, const struct fo_config *c, size_t i,
					  const char *kp)
{
	const struct fo_pair_config *pc = &c->pairs[i];
	char mkp[KEYPATH_MAX], sbuf[FO_SHOWN_BUF];
	size_t j;

	for (j = 0; j < i; j++) {
		const struct fo_pair_config *q = &c->pairs[j];

		if (strcmp(pc->name, q->name) == 0) {
			fo_config_keypath_join(mkp, kp, "name");
			return fo_config_fail(p, mkp, "duplicate pair name \"%s\" (also pairs[%zu])",
					      fo_config_shown(pc->name, sbuf), j);
		}
		if (strcmp(pc->active, q->active) == 0 || strcmp(pc->active, q->standby) == 0) {
			fo_config_keypath_join(mkp, kp, "active");
			return fo_config_fail(p, mkp, "domain \"%s\" already belongs to pair \"%s\" "
					      "(pairs[%zu])", fo_config_shown(pc->active, sbuf), q->name, j);
		}
		if (strcmp(pc->standby, q->active) == 0 || strcmp(pc->standby, q->standby) == 0) {
			fo_config_keypath_join(mkp, kp, "standby");
			return fo_config_fail(p, mkp, "domain \"%s\" already belongs to pair \"%s\" "
					      "(pairs[%zu])", fo_config_shown(pc->standby, sbuf), q->name, j);
		}
		if (fo_config_check_network_against(p, pc, q, j, kp) < 0)
			return -EINVAL;
	}
	return 0;
}
