/* SPDX-License-Identifier: MIT */
/*
 * test_rtpath.c - docs/design.md's "real-time path", enforced: from the moment a
 * fault source hands failoverd a fault (the deadline turn, a heartbeat
 * notification, @releaseDomain, a control request, with and without the
 * kernel module armed) to the standby's unpause, the daemon makes no
 * allocation, no log call and no hypervisor call but domain-info reads,
 * pauses and (kernel-armed) the DISARM that gives the pair back. Lookups,
 * watches, handles, the channel re-bind, roles and logging come after.
 *
 * Allocations are counted with the linker's --wrap (malloc, calloc,
 * realloc, strdup, ...: every call from failoverd's own objects); log calls
 * with fo_log_calls(); hypervisor calls from the simulator's call log. The
 * window closes when the first unpause is issued (an ops-table shim).
 *
 * The switch's phases themselves (the event's pause_issued -> pause_done
 * and unpause_issued -> unpause_done, what the switch benchmark reports as
 * "pause" and "unpause") hold the fence's calls and the unpause with its
 * confirm and nothing else, on the manual path as on the heartbeat-loss
 * path: the phases are the stretches between the sequence's clock reads
 * (a second shim, on now_ns, notes each).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "lib/log.h"
#include "pair_fixture.h"

/* ------------------------------------------------------------ counters */

static atomic_ulong n_alloc;

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

void *__wrap_malloc(size_t n)
{
	atomic_fetch_add(&n_alloc, 1);
	return __real_malloc(n);
}

void *__wrap_calloc(size_t a, size_t b)
{
	atomic_fetch_add(&n_alloc, 1);
	return __real_calloc(a, b);
}

void *__wrap_realloc(void *p, size_t n)
{
	atomic_fetch_add(&n_alloc, 1);
	return __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	atomic_fetch_add(&n_alloc, 1);
	return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	atomic_fetch_add(&n_alloc, 1);
	return __real_strndup(s, n);
}

/* The moment the first unpause is issued: what the counters said then. */
static struct {
	bool taken;
	unsigned long alloc, logs;
	size_t calls;
	int port_state[3]; /* test_deadline_with_network: vif1.0's and vif2.0's bridge port state then */
} snap;
static bool snap_ports; /* read the ports' states at the unpause */

static int port_state(const char *vif)
{
	char path[96];
	int st = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/brport/state", vif);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &st) != 1)
			st = -1;
		fclose(f);
	}
	return st;
}

/* Every clock read since the window opened: the counters then. */
#define CLOCK_READS 64
static struct {
	unsigned long alloc, logs;
	size_t calls;
} reads[CLOCK_READS];
static size_t n_reads;

static struct fo_hv_ops shim_ops;
static int (*real_unpause)(struct fo_hv *hv, fo_domid_t domid);
static uint64_t (*real_now_ns)(struct fo_hv *hv);

static uint64_t shim_now_ns(struct fo_hv *hv)
{
	const struct fo_sim_call *c;

	if (n_reads < CLOCK_READS) {
		reads[n_reads].alloc = atomic_load(&n_alloc);
		reads[n_reads].logs = fo_log_calls();
		reads[n_reads].calls = fo_sim_calls(hv, &c);
		n_reads++;
	}
	return real_now_ns(hv);
}

static int shim_unpause(struct fo_hv *hv, fo_domid_t domid)
{
	const struct fo_sim_call *c;

	if (!snap.taken) {
		snap.taken = true;
		snap.alloc = atomic_load(&n_alloc);
		snap.logs = fo_log_calls();
		snap.calls = fo_sim_calls(hv, &c);
		if (snap_ports) {
			snap.port_state[1] = port_state("vif1.0");
			snap.port_state[2] = port_state("vif2.0");
		}
	}
	return real_unpause(hv, domid);
}

/* After fx_armed_cfg (and fo_sim_enable_kernel, which swaps the table). */
static void shim_install(struct fx *f)
{
	shim_ops = *f->hv->ops;
	real_unpause = shim_ops.unpause;
	shim_ops.unpause = shim_unpause;
	real_now_ns = shim_ops.now_ns;
	shim_ops.now_ns = shim_now_ns;
	f->hv->ops = &shim_ops;
}

struct window {
	size_t calls;
	unsigned long alloc, logs;
};

static void window_open(struct fx *f, struct window *w)
{
	const struct fo_sim_call *c;

	snap.taken = false;
	n_reads = 0;
	w->calls = fo_sim_calls(f->hv, &c);
	w->alloc = atomic_load(&n_alloc);
	w->logs = fo_log_calls();
}

static const char *op_name(enum fo_sim_op op)
{
	static const char *const names[FO_SIM_OP_COUNT] = {
		[FO_SIM_LOOKUP] = "lookup",	      [FO_SIM_GET_STATE] = "get_state",
		[FO_SIM_PAUSE] = "pause",	      [FO_SIM_UNPAUSE] = "unpause",
		[FO_SIM_SET_AFFINITY] = "set_affinity", [FO_SIM_DESTROY] = "destroy",
		[FO_SIM_CREATE] = "create",	      [FO_SIM_SET_ROLE] = "set_role",
		[FO_SIM_AGENT_COMMAND] = "agent_command", [FO_SIM_KERNEL_ARM] = "kernel_arm",
		[FO_SIM_KERNEL_DISARM] = "kernel_disarm", [FO_SIM_KERNEL_SWITCH] = "kernel_switch",
		[FO_SIM_CPUPOOL_ENSURE] = "cpupool_ensure", [FO_SIM_CPUPOOL_GET] = "cpupool_get",
		[FO_SIM_CPUPOOL_MOVE] = "cpupool_move", [FO_SIM_GET_PLACEMENT] = "get_placement",
		[FO_SIM_PIN_VCPU] = "pin_vcpu",	      [FO_SIM_WATCH_MEMBER] = "watch_member",
		[FO_SIM_UNWATCH_MEMBER] = "unwatch_member", [FO_SIM_GET_HANDLE] = "get_handle",
		[FO_SIM_RECLAIM] = "reclaim_channel",
	};
	return (unsigned)op < FO_SIM_OP_COUNT && names[op] ? names[op] : "?";
}

/* The window closed with an unpause; nothing but the allowed in it. */
static void window_check(struct fx *f, const struct window *w, bool kernel, const char *what)
{
	const struct fo_sim_call *c;

	fo_sim_calls(f->hv, &c);
	CHECK(snap.taken, "%s: the standby was unpaused", what);
	if (!snap.taken)
		return;
	CHECK(snap.alloc == w->alloc, "%s: %lu allocation(s) before the unpause", what, snap.alloc - w->alloc);
	CHECK(snap.logs == w->logs, "%s: %lu log call(s) before the unpause", what, snap.logs - w->logs);
	for (size_t i = w->calls; i < snap.calls; i++) {
		bool ok = c[i].op == FO_SIM_GET_STATE || c[i].op == FO_SIM_PAUSE ||
			  (kernel && c[i].op == FO_SIM_KERNEL_DISARM);
		CHECK(ok, "%s: %s(dom%u) before the unpause", what, op_name(c[i].op), c[i].domid);
	}
}

/* Between clock reads k and k + 1: exactly the calls `ops` on `dom` (n of
 * them), no allocation, no log call. */
static void phase_check(struct fx *f, size_t k, const enum fo_sim_op *ops, size_t n, fo_domid_t dom,
			const char *phase, const char *what)
{
	const struct fo_sim_call *c;
	size_t first, got;

	fo_sim_calls(f->hv, &c);
	CHECK(k + 1 < n_reads, "%s: the %s phase was stamped", what, phase);
	if (k + 1 >= n_reads)
		return;
	first = reads[k].calls;
	got = reads[k + 1].calls - first;
	CHECK(got == n, "%s: the %s phase holds %zu call(s), not %zu", what, phase, got, n);
	for (size_t i = 0; i < got; i++)
		CHECK(i < n && c[first + i].op == ops[i] && c[first + i].domid == dom,
		      "%s: %s(dom%u) in the %s phase", what, op_name(c[first + i].op), c[first + i].domid, phase);
	CHECK(reads[k + 1].alloc == reads[k].alloc, "%s: %lu allocation(s) in the %s phase", what,
	      reads[k + 1].alloc - reads[k].alloc, phase);
	CHECK(reads[k + 1].logs == reads[k].logs, "%s: %lu log call(s) in the %s phase", what,
	      reads[k + 1].logs - reads[k].logs, phase);
}

/* The switch's phases, from the clock read before the active's pause on:
 * pause (confirm running, pause, confirm paused), then nothing up to
 * unpause_issued (the fenced hook: no service network here), then
 * unpause (the unpause and the read that confirms the standby runs). */
static void phases_check(struct fx *f, fo_domid_t active, fo_domid_t standby, const char *what)
{
	static const enum fo_sim_op pause_ops[] = { FO_SIM_GET_STATE, FO_SIM_PAUSE, FO_SIM_GET_STATE };
	static const enum fo_sim_op unpause_ops[] = { FO_SIM_UNPAUSE, FO_SIM_GET_STATE };
	const struct fo_sim_call *c;
	size_t n = fo_sim_calls(f->hv, &c), k;

	/* the stretch that holds the active's pause */
	for (k = 0; k + 1 < n_reads; k++) {
		bool has = false;

		for (size_t i = reads[k].calls; i < reads[k + 1].calls && i < n; i++)
			has |= c[i].op == FO_SIM_PAUSE && c[i].domid == active;
		if (has)
			break;
	}
	CHECK(k + 1 < n_reads, "%s: the active's pause lies between two clock reads", what);
	if (k + 1 >= n_reads)
		return;
	phase_check(f, k, pause_ops, 3, active, "pause", what);
	phase_check(f, k + 1, NULL, 0, active, "pause_done -> unpause_issued", what);
	phase_check(f, k + 2, unpause_ops, 2, standby, "unpause", what);
}

/* The loop, 1 ms at a time, until a deadline's switch unpauses the
 * standby (at most 400 ms); w is the window of the turn that did. */
static void run_until_unpause(struct fx *f, struct window *w)
{
	for (int i = 0; i < 400; i++) {
		fo_sim_advance(f->hv, MS);
		window_open(f, w);
		fx_loop_once(f);
		if (snap.taken)
			break;
	}
}

static void fx_rt(struct fx *f, bool kernel)
{
	struct fo_config cfg;

	sim_base_config(&cfg);
	fx_armed_cfg(f, &cfg, kernel);
	shim_install(f);
	live(f, 50);
}

/* ---------------------------------------------------------------- tests */

static void run_deadline(bool kernel)
{
	const char *what = kernel ? "deadline, kernel module stalled (backstop)" : "heartbeat deadline";
	struct window w;
	struct fx f;

	fx_rt(&f, kernel);
	if (kernel)
		fo_sim_kernel_stall(f.hv, true); /* the module does not act: failoverd's backstop does */
	run_until_unpause(&f, &w);
	window_check(&f, &w, kernel, what);
	phases_check(&f, f.a, f.b, what);
	CHECK(f.p->active == 1, "%s: switched", what);
	fx_free(&f);
}

static void test_deadline(void)
{
	run_deadline(false);
}

static void test_deadline_kernel_backstop(void)
{
	run_deadline(true);
}

static void test_unhealthy_notification(void)
{
	struct window w;
	struct fx f;

	fx_rt(&f, false);
	window_open(&f, &w);
	fo_sim_heartbeat_status(f.hv, f.a, FO_HB_APP_UNHEALTHY);
	window_check(&f, &w, false, "unhealthy page (event channel)");
	fx_free(&f);
}

static void run_release(bool kernel, enum fo_dom_state st, const char *what)
{
	struct window w;
	struct fx f;

	fx_rt(&f, kernel);
	window_open(&f, &w);
	fo_sim_set_state(f.hv, f.a, st, true); /* @releaseDomain */
	window_check(&f, &w, kernel, what);
	CHECK(f.p->active == 1, "%s: switched", what);
	/* What was kept off the path happened after it. */
	fx_loop_once(&f);
	if (st == FO_DOM_GONE)
		CHECK(count_calls(&f, FO_SIM_UNWATCH_MEMBER, f.a) == 1, "%s: the gone member unwatched afterwards", what);
	if (kernel)
		CHECK(count_calls(&f, FO_SIM_RECLAIM, FO_SIM_ANY_DOMAIN) == 1, "%s: the channel re-bound afterwards",
		      what);
	CHECK(fo_sim_violations(f.hv) == 0, "%s: never both running", what);
	fx_free(&f);
}

static void test_release_destroyed(void)
{
	run_release(false, FO_DOM_GONE, "@releaseDomain, active destroyed");
}

static void test_release_crashed(void)
{
	run_release(false, FO_DOM_CRASHED, "@releaseDomain, active crashed");
}

static void test_release_destroyed_kernel(void)
{
	run_release(true, FO_DOM_GONE, "@releaseDomain, active destroyed, kernel-armed");
}

static void test_release_crashed_kernel(void)
{
	run_release(true, FO_DOM_CRASHED, "@releaseDomain, active crashed, kernel-armed");
}

static void run_request(bool kernel)
{
	const char *what = kernel ? "control request, kernel-armed" : "control request";
	char err[256] = "";
	struct window w;
	struct fx f;
	int r;

	fx_rt(&f, kernel);
	window_open(&f, &w);
	r = fo_pair_request_switchover(f.p, err, sizeof(err));
	CHECK(r == 0, "%s: %s", what, err);
	window_check(&f, &w, kernel, what);
	phases_check(&f, f.a, f.b, what);
	fx_free(&f);
}

static void test_request(void)
{
	run_request(false);
}

static void test_request_kernel(void)
{
	run_request(true);
}

/*
 * pairs[].network: the identity moves between the fence and the unpause
 * (core/pair/service.c, fo_pair_service_fenced), so its netlink batch is inside the
 * window: still no allocation, no log, no hypervisor call but the fence's.
 * On a real bridge with veth "vifs" in a network namespace of its own, in
 * a child process (root; test_service_net.c has the rest).
 */
static int deadline_with_network_child(void)
{
	struct fo_config cfg;
	struct window w;
	struct fx f;
	int r;

	if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("sysfs", "/sys", "sysfs", 0, NULL) != 0) {
		fprintf(stderr, "FATAL: a network namespace with its own sysfs: %s (run as root)\n", strerror(errno));
		return 1;
	}
	r = system("ip link add br0 type bridge && ip link set br0 up && "
		   "for d in 1 2; do ip link add vif$d.0 type veth peer name g$d && ip link set g$d address 00:16:3e:f0:00:01 && "
		   "ip link set vif$d.0 master br0 && "
		   "ip link set g$d up && ip link set vif$d.0 up || exit 1; done");
	if (r != 0) {
		fprintf(stderr, "FATAL: could not build the bridge (ip: %d)\n", r);
		return 1;
	}
	sim_base_config(&cfg);
	cfg.pairs[0].net.enabled = true;
	snprintf(cfg.pairs[0].net.bridge, sizeof(cfg.pairs[0].net.bridge), "br0");
	memcpy(cfg.pairs[0].net.mac, (uint8_t[6]){ 0x00, 0x16, 0x3e, 0xf0, 0x00, 0x01 }, 6);
	cfg.pairs[0].net.has_ipv4 = true;
	inet_pton(AF_INET, "10.99.0.10", cfg.pairs[0].net.ipv4);
	cfg.pairs[0].net.announce_count = 3;
	cfg.pairs[0].net.announce_interval_ms = 100;
	fx_armed_cfg(&f, &cfg, false);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed with the network: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	shim_install(&f);
	live(&f, 50);
	snap_ports = true;
	run_until_unpause(&f, &w);
	window_check(&f, &w, false, "heartbeat deadline, service network");
	{
		const struct fo_event *e = last_event_of(&f, FO_EV_SWITCHOVER);

		CHECK(e && e->phase_ns[FO_PHASE_SERVICE_MOVED] && e->phase_ns[FO_PHASE_PAUSE_DONE] &&
			      e->phase_ns[FO_PHASE_SERVICE_MOVED] >= e->phase_ns[FO_PHASE_PAUSE_DONE] &&
			      e->phase_ns[FO_PHASE_SERVICE_MOVED] <= e->phase_ns[FO_PHASE_UNPAUSE_ISSUED],
		      "the service moved between the fence and the unpause");
	}
	/* 0 disabled, 3 forwarding (linux/if_bridge.h BR_STATE_*). */
	CHECK(snap.port_state[1] == 0 && snap.port_state[2] == 3,
	      "at the unpause the fenced member's port was disabled (%d) and the new active's forwarding (%d)",
	      snap.port_state[1], snap.port_state[2]);
	fx_free(&f);
	return check_failures ? 1 : 0;
}

static void test_deadline_with_network(void)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(deadline_with_network_child());
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the window with the service network (child's checks above)");
}

int main(void)
{
	RUN(test_deadline);
	RUN(test_deadline_kernel_backstop);
	RUN(test_unhealthy_notification);
	RUN(test_release_destroyed);
	RUN(test_release_crashed);
	RUN(test_release_destroyed_kernel);
	RUN(test_release_crashed_kernel);
	RUN(test_request);
	RUN(test_request_kernel);
	RUN(test_deadline_with_network);
	return check_summary("test_rtpath");
}
