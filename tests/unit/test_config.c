/* SPDX-License-Identifier: MIT */
/*
 * test_config.c - fo_config_parse/fo_config_load against the shipped example
 * and against config_cases/: every bad file must fail with an error that
 * starts with the key path of the offending value, every good file must
 * parse to the values it spells out.
 *
 * Run from tests/unit (ctest sets WORKING_DIRECTORY).
 */
#include "core/config/config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define CASES "config_cases/"

/* The key path the error must start with, followed by ": ". */
static const struct bad_case {
	const char *file;
	const char *keypath;
} bad_cases[] = {
	{ "bad_not_json", "(root)" },
	{ "bad_empty_file", "(root)" },
	{ "bad_trailing_garbage", "(root)" },
	{ "bad_dup_key", "daemon.cpu" },
	{ "bad_root_array", "(root)" },
	{ "bad_root_unknown", "colour" },
	{ "bad_root_case", "Pairs" },
	{ "bad_no_pairs", "(root)" },
	{ "bad_pairs_empty", "pairs" },
	{ "bad_pairs_not_array", "pairs" },
	{ "bad_pairs_too_many", "pairs" },
	{ "bad_pair_not_object", "pairs[0]" },
	{ "bad_pair_unknown_key", "pairs[0].standy" },
	{ "bad_pair_missing_standby", "pairs[0]" },
	{ "bad_pair_missing_heartbeat", "pairs[0]" },
	{ "bad_pair_missing_deadline", "pairs[0]" },
	{ "bad_name_chars", "pairs[0].name" },
	{ "bad_name_long", "pairs[0].name" },
	{ "bad_name_null", "pairs[0].name" },
	{ "bad_name_dup", "pairs[2].name" },
	{ "bad_active_eq_standby", "pairs[0].standby" },
	{ "bad_network_unknown_key", "pairs[0].network.vlan" },
	{ "bad_network_no_bridge", "pairs[0].network" },
	{ "bad_network_bridge_name", "pairs[0].network.bridge" },
	{ "bad_network_mac", "pairs[0].network.mac" },
	{ "bad_network_mac_multicast", "pairs[0].network.mac" },
	{ "bad_network_ipv4", "pairs[0].network.ipv4" },
	{ "bad_network_ipv6", "pairs[0].network.ipv6" },
	{ "bad_network_two_pairs_same_mac", "pairs[1].network.mac" },
	{ "bad_domain_two_pairs", "pairs[1].standby" },
	{ "bad_domain_slash", "pairs[0].active" },
	{ "bad_domain_space", "pairs[0].standby" },
	{ "bad_domain_control", "pairs[0].standby" },
	{ "bad_domain_empty", "pairs[0].active" },
	{ "bad_domain_long", "pairs[0].active" },
	{ "bad_heartbeat_not_object", "pairs[0].heartbeat" },
	{ "bad_heartbeat_unknown", "pairs[0].heartbeat.perod_ms" },
	{ "bad_heartbeat_missing_period", "pairs[0].heartbeat" },
	{ "bad_period_zero", "pairs[0].heartbeat.period_ms" },
	{ "bad_period_big", "pairs[0].heartbeat.period_ms" },
	{ "bad_period_fraction", "pairs[0].heartbeat.period_ms" },
	{ "bad_timeout_small", "pairs[1].heartbeat.timeout_ms" },
	{ "bad_timeout_string", "pairs[0].heartbeat.timeout_ms" },
	{ "bad_timeout_big", "pairs[0].heartbeat.timeout_ms" },
	{ "bad_grace_zero", "pairs[0].heartbeat.grace_ms" },
	{ "bad_deadline_huge", "pairs[0].deadline_ms" },
	{ "bad_deadline_negative", "pairs[0].deadline_ms" },
	{ "bad_on_failover_value", "pairs[0].on_failover" },
	{ "bad_rebuild_no_domain_config", "pairs[0]" },
	{ "bad_domain_config_relative", "pairs[0].domain_config.active" },
	{ "bad_domain_config_missing_standby", "pairs[0].domain_config" },
	{ "bad_domain_config_same", "pairs[0].domain_config.standby" },
	{ "bad_failback_value", "pairs[0].failback" },
	{ "bad_health_unknown", "pairs[0].health.fail_on_unhealty" },
	{ "bad_health_not_bool", "pairs[0].health.fail_on_unhealthy" },
	{ "bad_deadline_miss_not_object", "pairs[0].health.fail_on_deadline_miss" },
	{ "bad_deadline_miss_unknown", "pairs[0].health.fail_on_deadline_miss.windw" },
	{ "bad_deadline_miss_no_window", "pairs[0].health.fail_on_deadline_miss" },
	{ "bad_deadline_miss_count_zero", "pairs[0].health.fail_on_deadline_miss.count" },
	{ "bad_deadline_miss_count_big", "pairs[0].health.fail_on_deadline_miss.count" },
	{ "bad_deadline_miss_window_zero", "pairs[0].health.fail_on_deadline_miss.window_ms" },
	{ "bad_deadline_miss_window_fraction", "pairs[0].health.fail_on_deadline_miss.window_ms" },
	{ "bad_pin_out_of_range", "pairs[0].pin.active_pcpus[1]" },
	{ "bad_pin_not_array", "pairs[0].pin.standby_pcpus" },
	{ "bad_pin_dup", "pairs[0].pin.active_pcpus[1]" },
	{ "bad_pin_too_many", "pairs[0].pin.active_pcpus" },
	{ "bad_pin_unknown", "pairs[0].pin.active_cpus" },
	{ "bad_daemon_not_object", "daemon" },
	{ "bad_daemon_unknown", "daemon.colour" },
	{ "bad_rt_priority_zero", "daemon.rt_priority" },
	{ "bad_rt_priority_overflow", "daemon.rt_priority" },
	{ "bad_cpu_minus2", "daemon.cpu" },
	{ "bad_require_rt_string", "daemon.require_rt" },
	{ "bad_log_level", "daemon.log_level" },
	{ "bad_socket_relative", "daemon.control_socket" },
	{ "bad_socket_too_long", "daemon.control_socket" },
	{ "bad_control_group_empty", "daemon.control_group" },
	{ "bad_control_group_colon", "daemon.control_group" },
	{ "bad_metrics_listen_name", "daemon.metrics_listen" },
	{ "bad_metrics_listen_port", "daemon.metrics_listen" },
	{ "bad_control_admin_group_empty", "daemon.control_admin_group" },
	{ "bad_kernel_fast_path", "daemon.kernel_fast_path" },
	{ "bad_hypervisor_watch", "daemon.hypervisor_watch" },
	{ "bad_hypervisor_watch_poll", "daemon.hypervisor_watch_poll_us" },
	{ "bad_hypervisor_watch_cpu", "daemon.hypervisor_watch_cpu" },
	{ "bad_cpupool_unknown", "pairs[0].pin.cpupool" },
	{ "bad_cpupool_pcpu_two_pools", "cpupools[1].pcpus[1]" },
	{ "bad_cpupool_pin_outside", "pairs[0].pin.standby_pcpus[1]" },
	{ "bad_cpupool_null_shared", "pairs[0].pin.standby_pcpus[0]" },
	{ "bad_cpupool_null_no_standby_pins", "pairs[0].pin" },
	{ "bad_cpupool_null_two_pairs", "pairs[1].pin.standby_pcpus[0]" },
	{ "bad_cpupool_pool0", "cpupools[0].name" },
	{ "bad_cpupool_pcpu0", "cpupools[0].pcpus[0]" },
	{ "bad_cpupool_scheduler", "cpupools[0].scheduler" },
	{ "bad_cpupool_empty_pcpus", "cpupools[0].pcpus" },
	{ "bad_cpupool_dup_name", "cpupools[1].name" },
	{ "bad_cpupool_missing_scheduler", "cpupools[0]" },
	{ "bad_pin_in_pool_without_cpupool", "pairs[0].pin.active_pcpus[0]" },
	{ "bad_dom0_vcpu_no_cpu", "daemon.dom0_vcpu_pcpu" },
	{ "bad_dom0_vcpu_in_pool", "daemon.dom0_vcpu_pcpu" },
	{ "bad_placement_unknown", "placement.check_every_ms" },
	{ "bad_state_stream_not_object", "state_stream" },
	{ "bad_state_stream_unknown", "state_stream.lisen" },
	{ "bad_state_stream_listen", "state_stream.listen" },
	{ "bad_state_stream_peer_port", "state_stream.peer" },
	{ "bad_state_stream_no_address", "state_stream" },
	{ "bad_state_stream_no_key", "state_stream" },
	{ "bad_state_stream_key_relative", "state_stream.key_file" },
	{ "bad_state_stream_key_missing", "state_stream.key_file" },
	{ "bad_placement_check_big", "placement.check_ms" },
};

/* A few messages checked whole, because operators read them. */
static const struct exact_case {
	const char *file;
	const char *message;
} exact_cases[] = {
	{ "bad_timeout_small",
	  "pairs[1].heartbeat.timeout_ms: must be >= 2 * period_ms (20), got 15" },
	{ "bad_pair_missing_standby", "pairs[0]: missing required key \"standby\"" },
	{ "bad_period_fraction", "pairs[0].heartbeat.period_ms: must be a whole number, got 1.5" },
	{ "bad_rt_priority_overflow",
	  "daemon.rt_priority: must be between 1 and 99, got 4294967297" },
	{ "bad_dup_key", "daemon.cpu: duplicate key" },
	{ "bad_kernel_fast_path",
	  "daemon.kernel_fast_path: must be one of \"auto\", \"on\", \"off\", got \"yes\"" },
	{ "bad_hypervisor_watch",
	  "daemon.hypervisor_watch: must be one of \"auto\", \"on\", \"off\", got \"maybe\"" },
	{ "bad_hypervisor_watch_poll",
	  "daemon.hypervisor_watch_poll_us: must be between 100 and 1000000, got 50" },
	{ "bad_domain_two_pairs",
	  "pairs[1].standby: domain \"a0\" already belongs to pair \"p0\" (pairs[0])" },
	{ "bad_cpupool_unknown", "pairs[0].pin.cpupool: no cpupool named \"rt2\" (cpupools: rt)" },
	{ "bad_cpupool_null_shared",
	  "pairs[0].pin.standby_pcpus[0]: pCPU 3 is also in active_pcpus: under the null scheduler "
	  "(cpupool \"rt\") a paused vCPU keeps its pCPU, so the standby could never run there" },
	{ "bad_cpupool_pin_outside",
	  "pairs[0].pin.standby_pcpus[1]: pCPU 5 is not in cpupool \"rt\" (its pCPUs: 2,3)" },
	{ "bad_cpupool_pcpu_two_pools",
	  "cpupools[1].pcpus[1]: pCPU 3 is already in cpupool \"rt\" (cpupools[0]); a pCPU belongs to one pool" },
	{ "bad_cpupool_null_two_pairs",
	  "pairs[1].pin.standby_pcpus[0]: pCPU 2 is already pinned to pair \"p0\" (pairs[0]); under the "
	  "null scheduler (cpupool \"rt\") a pCPU runs one vCPU" },
};

static const char *good_cases[] = {
	"good_minimal", "good_min_bounds", "good_max_bounds", "good_max_pairs",
	"good_whole_float", "good_rebuild", "good_two_pairs", "good_kernel_fast_path",
	"good_cpupools", "good_deadline_miss", "good_network",
};

static int load_case(const char *name, struct fo_config *c, char *err, size_t errlen)
{
	char path[256];

	snprintf(path, sizeof(path), CASES "%s.json", name);
	return fo_config_load(path, c, err, errlen);
}

static void test_example(void)
{
	static struct fo_config c;
	char err[FO_ERR_MAX], line[1024];
	const struct fo_pair_config *p;
	int r;

	r = fo_config_load("../../configs/failoverd.json", &c, err, sizeof(err));
	CHECK(r == 0, "example config: %s", err);
	if (r != 0)
		return;
	CHECK(strcmp(c.daemon.control_socket, "/run/failoverd/control.sock") == 0, "%s",
	      c.daemon.control_socket);
	CHECK(c.daemon.cpu == 1, "cpu %d", c.daemon.cpu);
	CHECK(c.daemon.rt_priority == 80, "rt %d", c.daemon.rt_priority);
	CHECK(c.n_pairs == 1, "n_pairs %zu", c.n_pairs);
	p = &c.pairs[0];
	CHECK(strcmp(p->name, "brake-ctl") == 0, "%s", p->name);
	CHECK(strcmp(p->active, "brake-a") == 0 && strcmp(p->standby, "brake-b") == 0, "%s %s",
	      p->active, p->standby);
	CHECK(p->period_ms == 10 && p->timeout_ms == 50 && p->grace_ms == 50 &&
	      p->deadline_ms == 100, "%u %u %u %u", p->period_ms, p->timeout_ms, p->grace_ms,
	      p->deadline_ms);
	CHECK(p->on_failover == FO_ON_FAILOVER_KEEP_PAUSED, "%d", p->on_failover);
	CHECK(p->failback == FO_FAILBACK_MANUAL, "%d", p->failback);
	CHECK(p->pin.n_active_pcpus == 1 && p->pin.active_pcpus[0] == 2, "active pins");
	CHECK(p->pin.n_standby_pcpus == 1 && p->pin.standby_pcpus[0] == 3, "standby pins");

	fo_config_describe_pair(p, line, sizeof(line));
	CHECK(strcmp(line, "pair brake-ctl: active=brake-a standby=brake-b period=10ms "
		     "timeout=50ms grace=50ms deadline=100ms on_failover=keep-paused "
		     "failback=manual fail_on_unhealthy=yes pin active=[2] standby=[3]") == 0,
	      "describe: %s", line);
	/* Truncation must stay NUL-terminated and within the buffer. */
	memset(line, 'x', sizeof(line));
	fo_config_describe_pair(p, line, 20);
	CHECK(strlen(line) == 19, "truncated describe: %zu", strlen(line));
}

static void test_bad_cases(void)
{
	static struct fo_config c, before;
	char err[FO_ERR_MAX], prefix[256];
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *bc = &bad_cases[i];
		int r;

		memset(&c, 0xa5, sizeof(c));
		before = c;
		err[0] = '\0';
		r = load_case(bc->file, &c, err, sizeof(err));
		snprintf(prefix, sizeof(prefix), "%s: ", bc->keypath);
		CHECK(r == -EINVAL, "%s: returned %d (%s)", bc->file, r, err);
		CHECK(strncmp(err, prefix, strlen(prefix)) == 0,
		      "%s: error should start with \"%s\", got \"%s\"", bc->file, prefix, err);
		CHECK(strchr(err, '\n') == NULL, "%s: error has a newline: %s", bc->file, err);
		CHECK(memcmp(&c, &before, sizeof(c)) == 0, "%s: ret was modified on failure",
		      bc->file);
		if (getenv("VERBOSE"))
			printf("%-36s %s\n", bc->file, err);
	}

	for (i = 0; i < sizeof(exact_cases) / sizeof(exact_cases[0]); i++) {
		const struct exact_case *ec = &exact_cases[i];

		load_case(ec->file, &c, err, sizeof(err));
		CHECK(strcmp(err, ec->message) == 0, "%s: expected \"%s\", got \"%s\"", ec->file,
		      ec->message, err);
	}
}

static void test_good_cases(void)
{
	static struct fo_config c;
	char err[FO_ERR_MAX], line[1024];
	size_t i;

	for (i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
		int r = load_case(good_cases[i], &c, err, sizeof(err));

		CHECK(r == 0, "%s: %s", good_cases[i], err);
	}

	/* Defaults. */
	if (load_case("good_minimal", &c, err, sizeof(err)) == 0) {
		CHECK(strcmp(c.daemon.control_socket, "/run/failoverd/control.sock") == 0, "socket");
		CHECK(c.daemon.control_group[0] == '\0', "group");
		CHECK(c.daemon.rt_priority == 80, "rt %d", c.daemon.rt_priority);
		CHECK(c.daemon.cpu == -1, "cpu %d", c.daemon.cpu);
		CHECK(!c.daemon.require_rt, "require_rt");
		CHECK(c.daemon.log_level == FO_LOG_INFO, "log level");
		CHECK(c.daemon.kernel_fast_path == FO_KERNEL_FAST_PATH_AUTO, "kernel_fast_path default");
		CHECK(c.pairs[0].grace_ms == c.pairs[0].timeout_ms, "grace default");
		CHECK(c.pairs[0].fail_on_unhealthy, "fail_on_unhealthy default");
		CHECK(c.pairs[0].deadline_miss_count == 0, "fail_on_deadline_miss default: off");
		CHECK(c.pairs[0].on_failover == FO_ON_FAILOVER_KEEP_PAUSED, "on_failover default");
		CHECK(c.pairs[0].failback == FO_FAILBACK_MANUAL, "failback default");
		CHECK(c.pairs[0].pin.n_active_pcpus == 0 && c.pairs[0].pin.n_standby_pcpus == 0,
		      "no pins");
		CHECK(c.pairs[0].active_config[0] == '\0', "no domain config");
		fo_config_describe_pair(&c.pairs[0], line, sizeof(line));
		CHECK(strstr(line, "pin=none") != NULL, "%s", line);
	}

	if (load_case("good_min_bounds", &c, err, sizeof(err)) == 0) {
		const struct fo_pair_config *p = &c.pairs[0];

		CHECK(c.daemon.rt_priority == 1 && c.daemon.cpu == -1, "daemon min");
		CHECK(p->period_ms == 1 && p->timeout_ms == 2 && p->grace_ms == 1 &&
		      p->deadline_ms == 1, "pair min");
		CHECK(p->pin.n_active_pcpus == 2 && p->pin.active_pcpus[0] == 0 &&
		      p->pin.active_pcpus[1] == 1023 && p->pin.n_standby_pcpus == 0, "pins");
	}

	if (load_case("good_max_bounds", &c, err, sizeof(err)) == 0) {
		const struct fo_pair_config *p = &c.pairs[0];

		CHECK(c.daemon.rt_priority == 99 && c.daemon.cpu == 1023, "daemon max");
		CHECK(c.daemon.require_rt && c.daemon.log_level == FO_LOG_DEBUG, "daemon flags");
		CHECK(strlen(c.daemon.control_socket) == 107, "socket len");
		CHECK(strlen(c.daemon.control_group) == FO_NAME_MAX, "group len");
		CHECK(strlen(p->name) == FO_NAME_MAX && strlen(p->active) == FO_DOMNAME_MAX &&
		      strlen(p->standby) == FO_DOMNAME_MAX, "name lengths");
		CHECK(p->period_ms == 60000 && p->timeout_ms == 3600000 &&
		      p->grace_ms == 3600000 && p->deadline_ms == 3600000, "pair max");
		CHECK(p->pin.n_active_pcpus == FO_MAX_PCPUS &&
		      p->pin.n_standby_pcpus == FO_MAX_PCPUS &&
		      p->pin.standby_pcpus[FO_MAX_PCPUS - 1] == 127, "pins max");
		/* The longest line still fits the caller's usual buffer. */
		fo_config_describe_pair(p, line, sizeof(line));
		CHECK(strlen(line) < sizeof(line) - 1, "describe truncated: %zu", strlen(line));
	}

	if (load_case("good_max_pairs", &c, err, sizeof(err)) == 0) {
		CHECK(c.n_pairs == FO_MAX_PAIRS, "n_pairs %zu", c.n_pairs);
		CHECK(strcmp(c.pairs[FO_MAX_PAIRS - 1].name, "p255") == 0, "%s", c.pairs[FO_MAX_PAIRS - 1].name);
	}

	if (load_case("good_kernel_fast_path", &c, err, sizeof(err)) == 0) {
		CHECK(c.daemon.kernel_fast_path == FO_KERNEL_FAST_PATH_ON, "kernel_fast_path on");
		CHECK(strcmp(fo_kernel_fast_path_name(c.daemon.kernel_fast_path), "on") == 0, "name");
	}

	if (load_case("good_cpupools", &c, err, sizeof(err)) == 0) {
		const struct fo_cpupool_config *rt = fo_config_cpupool(&c, "rt");

		CHECK(c.n_cpupools == 2, "n_cpupools %zu", c.n_cpupools);
		CHECK(rt && rt->scheduler == FO_SCHED_NULL && rt->n_pcpus == 4 && rt->pcpus[3] == 5, "pool rt");
		CHECK(c.cpupools[1].scheduler == FO_SCHED_CREDIT2 && strcmp(fo_sched_name(c.cpupools[1].scheduler),
									 "credit2") == 0, "pool soft");
		CHECK(fo_config_cpupool(&c, "Pool-0") == NULL, "Pool-0 is not ours");
		CHECK(c.daemon.dom0_vcpu_pcpu == 1 && c.daemon.cpu == 1, "dom0 vcpu %d", c.daemon.dom0_vcpu_pcpu);
		CHECK(c.placement.check_ms == 0 && c.placement.enforce, "placement %u %d", c.placement.check_ms,
		      c.placement.enforce);
		CHECK(strcmp(c.pairs[1].pin.cpupool, "rt") == 0 && c.pairs[1].pin.standby_pcpus[0] == 5, "p1 pin");
		CHECK(strcmp(c.pairs[3].pin.cpupool, "soft") == 0 && c.pairs[3].pin.n_active_pcpus == 0, "p3 pin");
		CHECK(c.pairs[4].pin.cpupool[0] == '\0', "p4 stays in its pool");
		CHECK(fo_config_has_placement(&c), "has placement");
		fo_config_describe_pair(&c.pairs[0], line, sizeof(line));
		CHECK(strstr(line, " pin active=[2] standby=[3] cpupool=rt") != NULL, "describe: %s", line);
	}

	if (load_case("good_minimal", &c, err, sizeof(err)) == 0) {
		CHECK(c.n_cpupools == 0 && c.daemon.dom0_vcpu_pcpu == -1, "no placement by default");
		CHECK(c.placement.check_ms == 1000 && !c.placement.enforce, "placement defaults");
		CHECK(!fo_config_has_placement(&c), "minimal has no placement");
	}

	/* The shipped RT example. */
	if (fo_config_load("../../configs/failoverd-rt-pinned.json", &c, err, sizeof(err)) == 0) {
		CHECK(c.n_cpupools == 1 && c.cpupools[0].scheduler == FO_SCHED_NULL, "rt example pool");
		CHECK(c.daemon.dom0_vcpu_pcpu == 1, "rt example dom0 vcpu");
	} else {
		CHECK(0, "configs/failoverd-rt-pinned.json: %s", err);
	}

	if (load_case("good_whole_float", &c, err, sizeof(err)) == 0)
		CHECK(c.pairs[0].period_ms == 10 && c.pairs[0].deadline_ms == 100, "1e1, 100.0");

	if (load_case("good_rebuild", &c, err, sizeof(err)) == 0) {
		const struct fo_pair_config *p = &c.pairs[0];

		CHECK(p->on_failover == FO_ON_FAILOVER_REBUILD, "rebuild");
		CHECK(p->failback == FO_FAILBACK_NEVER, "never");
		CHECK(!p->fail_on_unhealthy, "fail_on_unhealthy false");
		CHECK(strcmp(p->active_config, "/etc/xen/dom-a.cfg") == 0 &&
		      strcmp(p->standby_config, "/etc/xen/dom-b.cfg") == 0, "domain_config");
	}

	if (load_case("good_two_pairs", &c, err, sizeof(err)) == 0) {
		CHECK(c.n_pairs == 2, "n_pairs");
		CHECK(strcmp(c.daemon.control_group, "failoverd") == 0, "group");
		CHECK(c.daemon.log_level == FO_LOG_WARNING, "log level");
		CHECK(c.pairs[0].on_failover == FO_ON_FAILOVER_DESTROY, "destroy");
		CHECK(c.pairs[1].fail_on_unhealthy, "empty health object keeps default");
	}

	/* health.fail_on_deadline_miss */
	if (load_case("good_deadline_miss", &c, err, sizeof(err)) == 0) {
		CHECK(c.pairs[0].deadline_miss_count == 3 && c.pairs[0].deadline_miss_window_ms == 1000,
		      "deadline miss %u/%u", c.pairs[0].deadline_miss_count, c.pairs[0].deadline_miss_window_ms);
		fo_config_describe_pair(&c.pairs[0], line, sizeof(line));
		CHECK(strstr(line, " fail_on_deadline_miss=3/1000ms") != NULL, "describe: %s", line);
	}
}

static void test_good_network(void)
{
	static struct fo_config c;
	char err[FO_ERR_MAX];
	const struct fo_svcnet_config *n;

	CHECK(load_case("good_minimal", &c, err, sizeof(err)) == 0 && !c.pairs[0].net.enabled,
	      "no network section: the identity is not managed");
	if (load_case("good_network", &c, err, sizeof(err)) != 0) {
		CHECK(0, "good_network: %s", err);
		return;
	}
	n = &c.pairs[0].net;
	CHECK(n->enabled && strcmp(n->bridge, "xenbr0") == 0 && n->vif_device == 1, "bridge %s vif %u", n->bridge,
	      n->vif_device);
	CHECK(memcmp(n->mac, (uint8_t[6]){ 0x00, 0x16, 0x3e, 0xf0, 0x00, 0x01 }, 6) == 0, "mac");
	CHECK(n->has_ipv4 && n->ipv4[0] == 10 && n->ipv4[3] == 10, "ipv4");
	CHECK(n->has_ipv6 && n->ipv6[0] == 0xfd && n->ipv6[15] == 0x10, "ipv6");
	CHECK(n->announce_count == 5 && n->announce_interval_ms == 200, "announce %u/%u", n->announce_count,
	      n->announce_interval_ms);
	CHECK(n->flood_pps == 5000, "flood_pps %u", n->flood_pps);
	{
		char line[1024];

		fo_config_describe_pair(&c.pairs[0], line, sizeof(line));
		CHECK(strstr(line, " network bridge=xenbr0 vif=vif<domid>.1 mac=00:16:3e:f0:00:01 announce=5x200ms"),
		      "describe: %s", line);
	}
}

static void test_parse_direct(void)
{
	static struct fo_config c;
	char err[FO_ERR_MAX], small[16];
	int r;

	/* A tiny error buffer is truncated, not overrun. */
	r = fo_config_parse("[]", &c, small, sizeof(small));
	CHECK(r == -EINVAL && strlen(small) == sizeof(small) - 1, "small buffer: %s", small);

	/* No error buffer at all is allowed. */
	r = fo_config_parse("[]", &c, NULL, 0);
	CHECK(r == -EINVAL, "NULL err: %d", r);

	/* Deep nesting is cJSON's to refuse, not a stack overflow. */
	{
		char *deep = malloc(200002);
		int i;

		if (deep) {
			for (i = 0; i < 100000; i++)
				deep[i] = '[';
			for (i = 0; i < 100000; i++)
				deep[100000 + i] = ']';
			deep[200000] = '\0';
			r = fo_config_parse(deep, &c, err, sizeof(err));
			CHECK(r == -EINVAL && strncmp(err, "(root): ", 8) == 0, "deep: %s", err);
			free(deep);
		}
	}

	/* The line is exact; the column is wherever cJSON gave up. */
	load_case("bad_not_json", &c, err, sizeof(err));
	CHECK(strncmp(err, "(root): not valid JSON near line 3, column ", 43) == 0, "%s", err);
	load_case("bad_empty_file", &c, err, sizeof(err));
	CHECK(strcmp(err, "(root): empty document, expected a JSON object") == 0, "%s", err);

	/* A key with a newline in it is shown on one line. */
	r = fo_config_parse("{\"a\\nb\": 1}", &c, err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "a\\x0ab: unknown key (known keys: daemon, cpupools, placement, state_stream, pairs)") == 0,
	      "%s", err);

	CHECK(strcmp(fo_on_failover_name(FO_ON_FAILOVER_REBUILD), "rebuild") == 0, "name");
	CHECK(strcmp(fo_failback_name(FO_FAILBACK_NEVER), "never") == 0, "name");
	CHECK(strcmp(fo_log_level_name(FO_LOG_NOTICE), "notice") == 0, "name");
	CHECK(strcmp(fo_log_level_name((enum fo_log_level)42), "unknown") == 0, "bad name");
}

static void test_load_errors(void)
{
	static struct fo_config c;
	char err[FO_ERR_MAX], path[] = "/tmp/test_config.XXXXXX";
	FILE *f;
	int fd, r, i;

	r = fo_config_load(CASES "does-not-exist.json", &c, err, sizeof(err));
	CHECK(r == -ENOENT, "missing file: %d", r);
	CHECK(strcmp(err, CASES "does-not-exist.json: No such file or directory") == 0, "%s", err);

	r = fo_config_load(CASES, &c, err, sizeof(err));
	CHECK(r == -EISDIR, "directory: %d (%s)", r, err);

	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	/* Valid JSON up to the limit's far side: size must be refused first. */
	fputs("{\"pairs\": [] ", f);
	for (i = 0; i < 1024 * 1024; i++)
		fputc(' ', f);
	fputs("}", f);
	fclose(f);
	r = fo_config_load(path, &c, err, sizeof(err));
	CHECK(r == -EFBIG && strstr(err, path) == err, "big file: %d %s", r, err);

	f = fopen(path, "w");
	fwrite("{\"pairs\"\0: []}", 1, 14, f);
	fclose(f);
	r = fo_config_load(path, &c, err, sizeof(err));
	CHECK(r == -EINVAL && strncmp(err, "(root): ", 8) == 0, "NUL byte: %d %s", r, err);
	unlink(path);
}

/* A FIFO (or any non-regular file) at the config path is refused at once,
 * naming the file: SIGHUP reads the config on the daemon's loop, and an
 * open() waiting for a FIFO's writer would freeze every failover. */
static void test_load_fifo(void)
{
	static struct fo_config c;
	char err[FO_ERR_MAX], path[64];
	int r;

	snprintf(path, sizeof(path), "/tmp/test_config_fifo.%d", (int)getpid());
	unlink(path);
	CHECK(mkfifo(path, 0600) == 0, "mkfifo: %s", strerror(errno));
	/* Without the check the open blocks for ever: fail instead of hang. */
	signal(SIGALRM, SIG_DFL);
	alarm(5);
	r = fo_config_load(path, &c, err, sizeof(err));
	alarm(0);
	CHECK(r == -EINVAL && strstr(err, path) == err && strstr(err, "not a regular file (a FIFO)"), "fifo: %d %s",
	      r, err);
	unlink(path);
}

#define PAIR_WITH(name_json, pool_json)                                                                     \
	"{\"pairs\": [{\"name\": " name_json ", \"active\": \"a\", \"standby\": \"b\", \"deadline_ms\": 10, " \
	"\"heartbeat\": {\"period_ms\": 10, \"timeout_ms\": 30}" pool_json "}]}"

/* What cJSON lets through: a \u0000 escape (the value would be cut short at
 * the NUL), bytes that are not UTF-8, and a value echoed raw in an error. */
static void test_hostile_text(void)
{
	static struct fo_config c;
	char err[FO_ERR_MAX];
	int r;

	r = fo_config_parse(PAIR_WITH("\"brake\"", ""), &c, err, sizeof(err));
	CHECK(r == 0 && c.daemon.control_admin_group[0] == '\0', "baseline: %s", err);
	r = fo_config_parse("{\"daemon\": {\"control_group\": \"fo\", \"control_admin_group\": \"fo-admin\"}, "
			    "\"pairs\": [{\"name\": \"b\", \"active\": \"a\", \"standby\": \"b\", \"deadline_ms\": 10, "
			    "\"heartbeat\": {\"period_ms\": 10, \"timeout_ms\": 30}}]}", &c, err, sizeof(err));
	CHECK(r == 0 && strcmp(c.daemon.control_admin_group, "fo-admin") == 0 &&
		      strcmp(c.daemon.control_group, "fo") == 0, "admin group: %s", err);
	r = fo_config_parse(PAIR_WITH("\"brake\\u0000evil\"", ""), &c, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "(root): \\u0000 (NUL) in a string at line 1, column 27"), "NUL: %s", err);
	/* An escaped backslash before u0000 is the text "\u0000", harmless. */
	r = fo_config_parse(PAIR_WITH("\"brake\"", ", \"domain_config\": {\"active\": \"/x\\\\u0000\", "
				      "\"standby\": \"/y\"}"), &c, err, sizeof(err));
	CHECK(r == 0, "escaped backslash: %s", err);
	r = fo_config_parse(PAIR_WITH("\"br\xc3\x28ke\"", ""), &c, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "(root): not valid UTF-8 at line 1, column 24"), "UTF-8: %s", err);
	/* The pool name is echoed, but a crafted one cannot forge a log line. */
	r = fo_config_parse(PAIR_WITH("\"brake\"", ", \"pin\": {\"cpupool\": \"p\\n<3>forged \\u001b[2J\xc3\xa9\"}"), &c,
			    err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "pairs[0].pin.cpupool: no cpupool named \"p\\x0a<3>forged "
				     "\\x1b[2J\\xc3\\xa9\" (cpupools: none configured)") == 0, "pool: %s", err);
}

static bool listed(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		if (strcmp(name, bad_cases[i].file) == 0)
			return true;
	for (i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++)
		if (strcmp(name, good_cases[i]) == 0)
			return true;
	return false;
}

/* A case file nobody checks is a test that silently stopped running. */
static void test_every_file_listed(void)
{
	struct dirent *de;
	DIR *d = opendir(CASES);

	CHECK(d != NULL, "opendir " CASES ": %s", strerror(errno));
	if (!d)
		return;
	while ((de = readdir(d))) {
		char name[256];
		size_t len = strlen(de->d_name);

		if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), de->d_name);
		CHECK(listed(name), "%s is not in any table", de->d_name);
	}
	closedir(d);
}

/* state_stream.key_file: the key file's mode and size, on files made here
 * (git keeps no mode but 0644/0755). Each error names the file. */
static void test_state_stream_key(void)
{
	static struct fo_config c;
	char dir[] = "/tmp/test_config_key.XXXXXX", key[64], json[1024], err[FO_ERR_MAX];
	const char *hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
	FILE *f;
	int r;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(key, sizeof(key), "%s/stream.key", dir);
	snprintf(json, sizeof(json),
		 "{\"state_stream\": {\"listen\": \"0.0.0.0:7410\", \"peer\": \"192.0.2.2:7410\", "
		 "\"key_file\": \"%s\"}, \"pairs\": [{\"name\": \"p0\", \"active\": \"a\", \"standby\": \"b\", "
		 "\"heartbeat\": {\"period_ms\": 10, \"timeout_ms\": 50}, \"deadline_ms\": 100}]}", key);

	f = fopen(key, "w");
	fputs(hex, f);
	fclose(f);
	chmod(key, 0600);
	r = fo_config_parse(json, &c, err, sizeof(err));
	CHECK(r == 0, "a 0600 key of 64 bytes: %s", err);
	CHECK(c.state_stream.enabled && c.state_stream.key.len == 64 && memcmp(c.state_stream.key.k, hex, 64) == 0 &&
		      strcmp(c.state_stream.listen, "0.0.0.0:7410") == 0 &&
		      strcmp(c.state_stream.peer, "192.0.2.2:7410") == 0 && strcmp(c.state_stream.key_file, key) == 0,
	      "state_stream read: len %zu listen %s peer %s", c.state_stream.key.len, c.state_stream.listen,
	      c.state_stream.peer);

	chmod(key, 0640);
	r = fo_config_parse(json, &c, err, sizeof(err));
	CHECK(r == -EINVAL && strncmp(err, "state_stream.key_file: ", 23) == 0 && strstr(err, key) &&
		      strstr(err, "0640"), "a group-readable key is refused, naming it: %s", err);
	chmod(key, 0604);
	r = fo_config_parse(json, &c, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, key) && strstr(err, "0604"), "a world-readable key is refused: %s", err);

	f = fopen(key, "w");
	fputs("short\n", f);
	fclose(f);
	chmod(key, 0600);
	r = fo_config_parse(json, &c, err, sizeof(err));
	CHECK(r == -EINVAL && strncmp(err, "state_stream.key_file: ", 23) == 0 && strstr(err, key) &&
		      strstr(err, "5 bytes"), "a 5-byte key is refused, naming it: %s", err);

	unlink(key);
	r = fo_config_parse(json, &c, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, key) && strstr(err, "No such file"), "a missing key, named: %s", err);
	rmdir(dir);
}

int main(void)
{
	test_every_file_listed();
	test_example();
	test_bad_cases();
	test_good_cases();
	test_good_network();
	test_parse_direct();
	test_load_errors();
	test_load_fifo();
	test_hostile_text();
	test_state_stream_key();
	if (check_failures) {
		fprintf(stderr, "test_config: %d check(s) failed\n", check_failures);
		return 1;
	}
	printf("test_config: ok (%zu bad cases, %zu good cases)\n",
	       sizeof(bad_cases) / sizeof(bad_cases[0]), sizeof(good_cases) / sizeof(good_cases[0]));
	return 0;
}
