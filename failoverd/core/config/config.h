/* SPDX-License-Identifier: MIT */
/*
 * config.h - failoverd's configuration as a plain validated struct.
 * core/config/ is the only place that sees cJSON. Every error names the key path
 * ("pairs[1].heartbeat.timeout_ms: must be >= 2 * period_ms (20)").
 */
#ifndef FO_CONFIG_H
#define FO_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/limits.h"
#include "lib/log.h" /* enum fo_log_level (daemon.log_level) */
#include "net/service_net.h" /* struct fo_svcnet_config (pairs[].network) */
#include "stream/wire.h"      /* struct fo_wire_key (state_stream.key_file) */

enum fo_on_failover {
	FO_ON_FAILOVER_KEEP_PAUSED = 0,
	FO_ON_FAILOVER_DESTROY,
	FO_ON_FAILOVER_REBUILD,
};

enum fo_failback {
	FO_FAILBACK_MANUAL = 0,
	FO_FAILBACK_NEVER,
};

/* daemon.kernel_fast_path: switch through /dev/fo_switch (kmod-switch/). */
enum fo_kernel_fast_path {
	FO_KERNEL_FAST_PATH_AUTO = 0, /* when the device exists, else libxenctrl */
	FO_KERNEL_FAST_PATH_ON,       /* refuse to start without it */
	FO_KERNEL_FAST_PATH_OFF,
};

/* daemon.hypervisor_watch: Xen's failover watch (our patched Xen) as the
 * armed owner of pairs, so that Xen switches them without dom0. */
enum fo_hypervisor_watch {
	FO_HYPERVISOR_WATCH_AUTO = 0, /* when the hypervisor has it (probed), else the other paths */
	FO_HYPERVISOR_WATCH_ON,       /* refuse to start without it */
	FO_HYPERVISOR_WATCH_OFF,
};

/* cpupools[].scheduler: Xen's scheduler for the pool. */
enum fo_sched {
	FO_SCHED_NULL = 0, /* one vCPU per pCPU, no time slicing: the RT choice */
	FO_SCHED_CREDIT,
	FO_SCHED_CREDIT2,
	FO_SCHED_RTDS,
};

/* A Xen cpupool failoverd creates (or adopts) at start: its pCPUs are
 * taken out of Pool-0. */
struct fo_cpupool_config {
	char name[FO_NAME_MAX + 1];
	enum fo_sched scheduler;
	int pcpus[FO_MAX_PCPUS];
	size_t n_pcpus;
};

/* Where a pair's members run. Pins follow the configured domain (active /
 * standby by name), not the role, so a switch never moves vCPUs. */
struct fo_pin_config {
	int active_pcpus[FO_MAX_PCPUS];
	size_t n_active_pcpus;
	int standby_pcpus[FO_MAX_PCPUS];
	size_t n_standby_pcpus;
	char cpupool[FO_NAME_MAX + 1]; /* "" = leave the members in their pool */
};

/* placement: how the configured placement is kept. */
struct fo_placement_config {
	unsigned check_ms; /* re-verify every check_ms (0 = only at arm time and on domain changes); default 1000 */
	bool enforce;      /* on drift, re-apply (else report only); default false */
};

#define FO_DEADLINE_MISS_MAX 64

struct fo_pair_config {
	char name[FO_NAME_MAX + 1];
	char active[FO_DOMNAME_MAX + 1];   /* preferred active domain name */
	char standby[FO_DOMNAME_MAX + 1];
	unsigned period_ms;        /* heartbeat.period_ms: 1..60000 */
	unsigned timeout_ms;       /* heartbeat.timeout_ms: >= 2 * period_ms */
	unsigned grace_ms;         /* heartbeat.grace_ms: new active must heartbeat within; default timeout_ms */
	unsigned deadline_ms;      /* fault seen -> standby running must be within this */
	bool fail_on_unhealthy;    /* health.fail_on_unhealthy: default true */
	/* health.fail_on_deadline_miss {count, window_ms}: this many cycle
	 * overruns reported by the application (libfoguest) within window_ms
	 * are a fault. count 0 = off (the default). */
	unsigned deadline_miss_count;     /* 1..FO_DEADLINE_MISS_MAX */
	unsigned deadline_miss_window_ms;
	enum fo_on_failover on_failover;
	enum fo_failback failback;
	struct fo_pin_config pin;  /* empty = no Xen-level pinning */
	/* domain_config.active / .standby: xl config files, needed by rebuild */
	char active_config[FO_PATH_MAX];
	char standby_config[FO_PATH_MAX];
	/* network: the service's network identity; enabled = false when absent */
	struct fo_svcnet_config net;
};

struct fo_daemon_config {
	char control_socket[FO_PATH_MAX];  /* default /run/failoverd/control.sock */
	char control_group[FO_NAME_MAX + 1];/* "" = root only (0600); else 0660 with this group */
	/* "" = only root may switch, arm, disarm, drill; else also this group's
	 * members (others who can open the socket may only read) */
	char control_admin_group[FO_NAME_MAX + 1];
	int rt_priority;                    /* 1..99, default 80 */
	int cpu;                            /* -1 = no pinning; default -1 */
	int dom0_vcpu_pcpu;                 /* pin dom0's vCPU `cpu` to this pCPU; -1 = not; default -1 */
	bool require_rt;                    /* default false */
	enum fo_log_level log_level;        /* default info */
	enum fo_kernel_fast_path kernel_fast_path; /* default auto */
	enum fo_hypervisor_watch hypervisor_watch; /* default auto */
	int hypervisor_watch_cpu;                  /* pCPU of Xen's watch timer, default 0 */
	unsigned hypervisor_watch_poll_us;         /* Xen reads the sequence this often, default 1000 */
	char state_file[FO_PATH_MAX];       /* failure verdicts across restarts; "" = failed-members
	                                     * in the control socket's directory (the runtime dir) */
	char metrics_listen[64];            /* "" = no HTTP /metrics (default); "127.0.0.1:9464", "[::1]:9464" */
};

/* state_stream: the state stream across hosts (stream/state_stream.h). */
struct fo_state_stream_config {
	bool enabled;                 /* the object is there */
	char listen[64];              /* "ADDRESS:PORT" this host receives on; "" = none */
	char peer[64];                /* the other host's listen; "" = send nothing */
	char key_file[FO_PATH_MAX];   /* the pre-shared key's file (mode 0600 or stricter) */
	struct fo_wire_key key;       /* its content, read at load */
};

struct fo_config {
	struct fo_daemon_config daemon;
	struct fo_state_stream_config state_stream;
	struct fo_cpupool_config cpupools[FO_MAX_CPUPOOLS];
	size_t n_cpupools;
	struct fo_placement_config placement;
	struct fo_pair_config pairs[FO_MAX_PAIRS];
	size_t n_pairs;
};

/* Parse and validate. On failure returns -EINVAL (or -errno for I/O) and
 * writes one message naming the key path into err. `ret` is untouched on
 * failure. */
int fo_config_parse(const char *json_text, struct fo_config *ret, char *err, size_t errlen);
int fo_config_load(const char *path, struct fo_config *ret, char *err, size_t errlen);
/* "PATH: " when a load error does not name the file already (validation
 * errors name the key path only), else "". For one-line messages. */
const char *fo_config_error_prefix(const char *path, const char *err, char *buf, size_t len);

/* One line per pair, for --config-test. */
void fo_config_describe_pair(const struct fo_pair_config *p, char *buf, size_t len);

const char *fo_on_failover_name(enum fo_on_failover v);
const char *fo_failback_name(enum fo_failback v);
const char *fo_log_level_name(enum fo_log_level v);
const char *fo_kernel_fast_path_name(enum fo_kernel_fast_path v);

struct sockaddr_storage;
/* daemon.metrics_listen: "A.B.C.D:PORT" or "[IPv6]:PORT", port 1..65535,
 * numeric only (no name lookups); "PORT" alone is 127.0.0.1:PORT. 0 or -EINVAL. */
int fo_config_parse_listen(const char *s, struct sockaddr_storage *ss, unsigned *sslen);
const char *fo_sched_name(enum fo_sched v);
/* The configured cpupool of that name, or NULL. */
const struct fo_cpupool_config *fo_config_cpupool(const struct fo_config *c, const char *name);
/* True when the configuration asks for any placement (pools, pins, dom0 vCPU). */
bool fo_config_has_placement(const struct fo_config *c);

#endif
