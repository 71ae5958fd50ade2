/* SPDX-License-Identifier: MIT */
/*
 * test_service_net.c - the service's network identity (pairs[].network,
 * failoverd/net/) on a real Linux bridge: the test runs in its own network
 * namespace (root), with veth pairs standing in for the members' netback
 * vifs (`vif1.0`, `vif2.0`: the simulator's domids 1 and 2) and a client
 * port (`c0`) that sees what the bridge floods. What Xen adds (netback,
 * netfront, xl's hotplug) is the lab's (tests/lab, xen_net-*).
 *
 *   - enforce: only the active's vif is up, the service MAC's FDB entry is
 *     on its port; a move hands both over and announces (gratuitous ARP and
 *     unsolicited NA, seen by the client), and a frame to the service MAC
 *     reaches the new active only; the move allocates and logs nothing;
 *   - each bad setup is refused naming its key (no bridge, not a bridge, a
 *     vif missing, a vif on another bridge);
 *   - the pair: arming cuts the standby off, a failover moves the identity
 *     (phase service_moved after unpause_done), the audit cuts a fenced vif
 *     that someone set up, a member with another MAC or a missing bridge is
 *     DEGRADED with the reason and re-armed once the bridge is there, and a
 *     move that cannot complete marks the switch degraded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "lib/log.h"
#include "net/service_net.h"
#include "pair_fixture.h"

static atomic_ulong n_alloc;
void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { atomic_fetch_add(&n_alloc, 1); return __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { atomic_fetch_add(&n_alloc, 1); return __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { atomic_fetch_add(&n_alloc, 1); return __real_realloc(p, n); }

static const uint8_t SVC_MAC[6] = { 0x00, 0x16, 0x3e, 0xf0, 0x00, 0x01 };
#define SVC_MAC_TEXT "00:16:3e:f0:00:01"

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	r = system(cmd);
	if (r != 0) {
		fprintf(stderr, "FATAL: `%s` exited %d\n", cmd, r);
		exit(1);
	}
}

/* A fresh bridge br0 with the members' stand-in vifs and the client port. */
static void topology(void)
{
	(void)!system("ip link del br0 2>/dev/null; for l in vif1.0 vif2.0 vif9.0 c0br; do ip link del $l 2>/dev/null; done; true");
	sh("ip link add br0 type bridge && ip link set br0 up");
	for (int d = 1; d <= 2; d++)
		sh("ip link add vif%d.0 type veth peer name g%d && ip link set g%d address %s && ip link set vif%d.0 master br0 && "
		   "ip link set g%d up && ip link set vif%d.0 up",
		   d, d, d, SVC_MAC_TEXT, d, d, d);
	sh("ip link add c0br type veth peer name c0 && ip link set c0br master br0 && ip link set c0br up && ip link set c0 up");
	sh("ip link set lo up");
	/* The kernel takes a link operational (linkwatch) up to a second
	 * after it is set up, later on a loaded host; a port's state can be
	 * set to forwarding only then. Wait for it, as the lab waits for a
	 * vif: the tests start from a bridge that is ready. */
	for (int i = 0; i < 300; i++) {
		if (system("for l in vif1.0 vif2.0 c0br; do grep -qx up /sys/class/net/$l/operstate || exit 1; done") == 0)
			return;
		usleep(10000);
	}
	fprintf(stderr, "FATAL: the stand-in vifs were not operational after 3 s\n");
	exit(1);
}

static int link_up(const char *name)
{
	char path[128];
	unsigned flags = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/flags", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%x", &flags) != 1)
		flags = 0;
	fclose(f);
	return flags & 1;
}

/* Does the port pass frames: its vif up and its bridge port forwarding? */
static int forwards(const char *name)
{
	char path[128];
	int st = -1;
	FILE *f;

	if (link_up(name) != 1)
		return link_up(name) < 0 ? -1 : 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/brport/state", name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &st) != 1)
		st = -1;
	fclose(f);
	return st == 3;
}

/* The port the bridge has the service MAC on ("" = none). */
static const char *fdb_port(void)
{
	static char dev[32];
	char line[256];
	FILE *f = popen("bridge fdb show br br0", "r");

	dev[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, SVC_MAC_TEXT " dev ", strlen(SVC_MAC_TEXT " dev ")) == 0 && !strstr(line, " self") &&
		    sscanf(line + strlen(SVC_MAC_TEXT " dev "), "%31s", dev) == 1)
			break;
	if (f)
		pclose(f);
	return dev;
}

/* A packet socket listening on `ifname`, non-blocking. */
static int listen_on(const char *ifname)
{
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));

	a.sll_ifindex = (int)if_nametoindex(ifname);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("packet socket");
		exit(1);
	}
	return fd;
}

/* Frames received so far of the given ethertype with the service MAC as
 * source (ARP: also as the sender hardware address). */
static int count_frames(int fd, unsigned type, const uint8_t *dst)
{
	uint8_t buf[2048];
	ssize_t n;
	int k = 0;

	usleep(20000);
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		if (n < 14 || (unsigned)(buf[12] << 8 | buf[13]) != type)
			continue;
		if (dst ? memcmp(buf, dst, 6) != 0 : memcmp(buf + 6, SVC_MAC, 6) != 0)
			continue;
		k++;
	}
	return k;
}

/* One frame from the client to the service MAC (a made-up ethertype). */
static void send_to_service(int fd_c0)
{
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_halen = 6 };
	uint8_t f[60] = { 0 };

	memcpy(f, SVC_MAC, 6);
	memcpy(f + 6, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 0xc0 }, 6);
	f[12] = 0x88;
	f[13] = 0xb5; /* IEEE local experimental */
	a.sll_ifindex = (int)if_nametoindex("c0");
	memcpy(a.sll_addr, SVC_MAC, 6);
	if (sendto(fd_c0, f, sizeof(f), 0, (struct sockaddr *)&a, sizeof(a)) < 0)
		perror("sendto");
}

static void base_net(struct fo_svcnet_config *c)
{
	memset(c, 0, sizeof(*c));
	c->enabled = true;
	snprintf(c->bridge, sizeof(c->bridge), "br0");
	memcpy(c->mac, SVC_MAC, 6);
	c->has_ipv4 = true;
	inet_pton(AF_INET, "10.99.0.10", c->ipv4);
	c->has_ipv6 = true;
	inet_pton(AF_INET6, "fd99::10", c->ipv6);
	c->announce_count = 3;
	c->announce_interval_ms = 100;
	c->flood_pps = 100000;
}

static void test_enforce_and_move(void)
{
	static const uint8_t probe_dst[6] = { 0x00, 0x16, 0x3e, 0xf0, 0x00, 0x01 };
	struct fo_svcnet_sockets s = { 0 };
	struct fo_svcnet n = { 0 };
	struct fo_svcnet_config c;
	fo_domid_t d[2] = { 1, 2 };
	enum fo_svcnet_step step;
	unsigned long allocs, logs;
	char err[256] = "";
	int r, fd_c0, fd_g1, fd_g2;

	topology();
	base_net(&c);
	r = fo_svcnet_enforce(&s, &n, &c, d, 0, false, err, sizeof(err));
	CHECK(r == 0, "enforce: %d %s", r, err);
	CHECK(forwards("vif1.0") == 1 && forwards("vif2.0") == 0, "only the active's port forwards: %d %d",
	      forwards("vif1.0"), forwards("vif2.0"));
	CHECK(link_up("vif2.0") == 1, "the standby's vif stays up, ready for a switch");
	CHECK(strcmp(fdb_port(), "vif1.0") == 0, "service MAC on the active's port: '%s'", fdb_port());

	fd_c0 = listen_on("c0");
	fd_g1 = listen_on("g1");
	fd_g2 = listen_on("g2");
	count_frames(fd_c0, 0, NULL); /* drain */
	allocs = atomic_load(&n_alloc);
	logs = fo_log_calls();
	r = fo_svcnet_move(&s, &n, 0, &step);
	CHECK(r == 0, "move: %d step %s", r, fo_svcnet_step_name(step));
	r = fo_svcnet_announce(&s, &n, &c, 0);
	CHECK(atomic_load(&n_alloc) == allocs && fo_log_calls() == logs,
	      "the move and the announcement allocate (%lu) and log (%lu) nothing", atomic_load(&n_alloc) - allocs,
	      fo_log_calls() - logs);
	CHECK(r == 0, "announce: %d", r);
	CHECK(forwards("vif1.0") == 0 && forwards("vif2.0") == 1, "moved: vif1.0 %d vif2.0 %d", forwards("vif1.0"),
	      forwards("vif2.0"));
	CHECK(strcmp(fdb_port(), "vif2.0") == 0, "service MAC on the new active's port: '%s'", fdb_port());
	CHECK(count_frames(fd_c0, 0x0806, NULL) == 1, "the client saw one gratuitous ARP from the service MAC");
	CHECK(n.announce_left == 2, "two more announcements due: %u", n.announce_left);
	/* The unsolicited NA went out with the ARP; read it from the same drain. */

	count_frames(fd_g1, 0, probe_dst);
	count_frames(fd_g2, 0, probe_dst);
	send_to_service(fd_c0);
	CHECK(count_frames(fd_g2, 0x88b5, probe_dst) == 1, "a frame to the service MAC reaches the new active");
	CHECK(count_frames(fd_g1, 0x88b5, probe_dst) == 0, "and nothing reaches the cut-off member");

	/* The later announcements, when due. */
	{
		uint64_t next = 0;
		int sent = fo_svcnet_announce_due(&s, &n, &c, 50 * MS, &next);
		CHECK(sent == 0 && next == 100 * MS, "not due before the interval: sent %d next %llu", sent,
		      (unsigned long long)next);
		sent = fo_svcnet_announce_due(&s, &n, &c, 100 * MS, &next);
		CHECK(sent == 1, "second announcement sent");
		CHECK(count_frames(fd_c0, 0x86dd, NULL) >= 1, "an unsolicited NA from the service MAC");
	}

	/* The old active's vif gone with its domain: the move back still
	 * runs (it is cut off already). */
	r = fo_svcnet_enforce(&s, &n, &c, d, 1, false, err, sizeof(err));
	CHECK(r == 0, "enforce with 2 active: %s", err);
	sh("ip link del vif2.0");
	r = fo_svcnet_move(&s, &n, 1, &step);
	CHECK(r == 0, "move from a member whose vif is gone: %d (%s)", r, fo_svcnet_step_name(step));
	CHECK(forwards("vif1.0") == 1 && strcmp(fdb_port(), "vif1.0") == 0, "back on vif1.0");

	/* A failed member: its vif down, not only its port. */
	r = fo_svcnet_enforce(&s, &n, &c, (fo_domid_t[2]){ 1, FO_DOMID_INVALID }, 0, false, err, sizeof(err));
	CHECK(r == 0, "enforce with one member: %s", err);
	close(fd_c0);
	close(fd_g1);
	close(fd_g2);
	fo_svcnet_sockets_close(&s);
}

static void expect_refused(struct fo_svcnet_config *c, fo_domid_t d0, fo_domid_t d1, const char *want)
{
	struct fo_svcnet_sockets s = { 0 };
	struct fo_svcnet n = { 0 };
	fo_domid_t d[2] = { d0, d1 };
	char err[256] = "";
	int r = fo_svcnet_enforce(&s, &n, c, d, 0, false, err, sizeof(err));

	CHECK(r < 0 && strstr(err, want), "refused with \"%s\": %d \"%s\"", want, r, err);
	fo_svcnet_sockets_close(&s);
}

static void test_bad_setups(void)
{
	struct fo_svcnet_config c;

	topology();
	base_net(&c);
	snprintf(c.bridge, sizeof(c.bridge), "nobr");
	expect_refused(&c, 1, 2, "network.bridge: no network device \"nobr\"");
	snprintf(c.bridge, sizeof(c.bridge), "c0");
	expect_refused(&c, 1, 2, "network.bridge: \"c0\" is not a bridge");
	base_net(&c);
	expect_refused(&c, 1, 7, "network.vif_device: domain 7 has no vif vif7.0");
	sh("ip link add vif9.0 type veth peer name g9");
	expect_refused(&c, 9, 2, "network.bridge: vif9.0 is not a port of bridge br0");
	CHECK(link_up("vif2.0") == 1, "a refused setup changed nothing");
}

/* ---- the pair ---- */

static void net_config(struct fo_config *cfg)
{
	sim_base_config(cfg);
	base_net(&cfg->pairs[0].net);
}

/* A fresh bridge, and the pair armed on it with the base network section. */
static void armed_with_network(struct fx *f, struct fo_config *cfg)
{
	topology();
	net_config(cfg);
	fx_armed_cfg(f, cfg, false);
}

static const struct fo_event *last_switch(struct fx *f)
{
	return last_event_of(f, FO_EV_SWITCHOVER);
}

static void test_pair_failover_moves_identity(void)
{
	struct fo_config cfg;
	const struct fo_event *e;
	struct fx f;

	armed_with_network(&f, &cfg);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(forwards("vif1.0") == 1 && forwards("vif2.0") == 0 && link_up("vif2.0") == 1,
	      "arming cut the standby off (port disabled, vif up): %d %d %d", forwards("vif1.0"), forwards("vif2.0"),
	      link_up("vif2.0"));
	CHECK(strcmp(fdb_port(), "vif1.0") == 0, "service MAC on the active: '%s'", fdb_port());

	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	advance(&f, 1);
	live(&f, 100);
	e = last_switch(&f);
	CHECK(e && e->result == FO_RESULT_OK, "switched: %s", e ? e->message : "no event");
	CHECK(forwards("vif1.0") == 0 && forwards("vif2.0") == 1, "identity moved: %d %d", forwards("vif1.0"),
	      forwards("vif2.0"));
	CHECK(link_up("vif1.0") == 0, "the failed member's vif is down");
	CHECK(strcmp(fdb_port(), "vif2.0") == 0, "service MAC on the new active: '%s'", fdb_port());
	CHECK(e && e->phase_ns[FO_PHASE_SERVICE_MOVED] >= e->phase_ns[FO_PHASE_PAUSE_DONE] &&
		      e->phase_ns[FO_PHASE_SERVICE_MOVED] <= e->phase_ns[FO_PHASE_UNPAUSE_ISSUED] &&
		      e->phase_ns[FO_PHASE_PAUSE_DONE] != 0,
	      "service_moved between the fence (pause_done) and the unpause");

	CHECK(f.p->net_recuts == 0, "no re-cut counted for the switch's own cut: %llu",
	      (unsigned long long)f.p->net_recuts);
	/* Someone sets the failed member's vif up and its port forwarding:
	 * the audit cuts it again, and counts it. */
	sh("ip link set vif1.0 up");
	for (int i = 0; i < 30 && forwards("vif1.0") != 1; i++) { /* linkwatch enables the port */
		usleep(100000);
		(void)!system("bridge link set dev vif1.0 state 3 2>/dev/null");
	}
	CHECK(forwards("vif1.0") == 1, "set up by hand: forwarding");
	live(&f, 30);
	CHECK(link_up("vif1.0") == 0 && forwards("vif1.0") == 0, "the audit cut the failed member's vif again");
	CHECK(f.p->net_recuts == 1, "counted: %llu", (unsigned long long)f.p->net_recuts);
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* First boot with the standby's vif MAC `b_mac` (NULL: it cannot be
 * read, a malformed backend value): not taken as the service MAC, the
 * pair DEGRADED with `why`, the standby still paused. */
static void check_degraded_at_arm(const uint8_t *b_mac, const char *why)
{
	struct fo_config cfg;
	struct fx f;

	topology();
	net_config(&cfg);
	fx_new(&f, &cfg, FO_DOM_RUNNING, FO_DOM_RUNNING, false);
	fo_sim_set_vif_mac(f.hv, f.a, SVC_MAC);
	fo_sim_set_vif_mac(f.hv, f.b, b_mac);
	prove(&f, f.a);
	prove(&f, f.b);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "DEGRADED: %s", fo_pair_state_name(f.p->state));
	CHECK(strstr(f.p->reason, why), "reason: %s", f.p->reason);
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_PAUSED, "standby still paused");
	fx_free(&f);
}

static void test_pair_other_mac_degraded(void)
{
	static const uint8_t other[6] = { 0x00, 0x16, 0x3e, 0x00, 0x00, 0x99 };

	check_degraded_at_arm(other, "network.mac: brake-b (domain 2) has MAC 00:16:3e:00:00:99");
}

static void test_pair_unreadable_mac_degraded(void)
{
	check_degraded_at_arm(NULL, "network.mac: the MAC of brake-b's vif 0 (domain 2) cannot be read");
}

static void test_pair_bridge_missing_then_there(void)
{
	struct fo_config cfg;
	struct fx f;

	topology();
	sh("ip link del br0");
	net_config(&cfg);
	fx_armed_cfg(&f, &cfg, false);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "network.bridge: no network device \"br0\""),
	      "DEGRADED without the bridge: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	{
		struct fo_pair_view v;

		fo_pair_view(f.p, &v);
		CHECK(v.net_enabled && v.net_blocked, "the view (status, metrics) says blocked");
	}
	sh("ip link add br0 type bridge && ip link set br0 up && ip link set vif1.0 master br0 && ip link set vif2.0 master br0");
	live(&f, 1200);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed once the bridge is there: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	{
		struct fo_pair_view v;

		fo_pair_view(f.p, &v);
		CHECK(!v.net_blocked && v.net_active_port == (int)if_nametoindex("vif1.0"),
		      "the view: not blocked, on vif1.0 (%d)", v.net_active_port);
	}
	CHECK(forwards("vif2.0") == 0 && forwards("vif1.0") == 1, "and the standby cut off");
	fx_free(&f);
}

static void test_pair_move_fails_degraded(void)
{
	struct fo_config cfg;
	const struct fo_event *e;
	struct fx f;

	armed_with_network(&f, &cfg);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed");
	sh("ip link del vif2.0"); /* the standby's vif disappears */
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	advance(&f, 1);
	live(&f, 100);
	e = last_switch(&f);
	CHECK(e && e->result == FO_RESULT_DEGRADED && strstr(e->message, "service network did not follow"),
	      "the switch says the network did not follow: %s", e ? e->message : "none");
	CHECK(fo_sim_state(f.hv, f.b) == FO_DOM_RUNNING, "the standby runs (the function is served)");
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "network"), "pair DEGRADED: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(forwards("vif1.0") == 0, "the failed member is cut off all the same");
	fx_free(&f);
}

/* A reload that adds the network section to an armed pair sets the
 * bridge at once (the standby cut off), not at the next switch. */
static void test_reload_adds_network(void)
{
	struct fo_config cfg;
	struct fx f;

	topology();
	sim_base_config(&cfg);
	fx_armed_cfg(&f, &cfg, false);
	CHECK(link_up("vif2.0") == 1, "without a network section the bridge is left alone");
	base_net(&cfg.pairs[0].net);
	fo_manager_reload(f.mgr, &cfg);
	f.p = fo_manager_pair(f.mgr, 0);
	CHECK(f.p->state == FO_PAIR_ARMED && forwards("vif2.0") == 0 && forwards("vif1.0") == 1,
	      "after the reload: %s, vif1.0 %d vif2.0 %d", fo_pair_state_name(f.p->state), forwards("vif1.0"),
	      forwards("vif2.0"));
	fx_free(&f);
}

/* on_failover rebuild: the failed member's new domain gets a new vif,
 * which the toolstack's hotplug brings up on the bridge; the audit cuts it
 * off while the member is rebuilt (not counted as a re-cut), and arming it
 * as the standby keeps it cut off. */
static void test_rebuilt_member_starts_cut_off(void)
{
	struct fo_config cfg;
	struct fx f;
	fo_domid_t rebuilt;

	topology();
	net_config(&cfg);
	cfg.pairs[0].on_failover = FO_ON_FAILOVER_REBUILD;
	/* The rebuilt domain will be domid 3: its vif, up on the bridge. */
	sh("ip link add vif3.0 type veth peer name g3 && ip link set g3 address %s && ip link set vif3.0 master br0 && "
	   "ip link set g3 up && ip link set vif3.0 up", SVC_MAC_TEXT);
	fx_armed_cfg(&f, &cfg, false);
	fo_sim_set_state(f.hv, f.a, FO_DOM_CRASHED, true);
	advance(&f, 1);
	live(&f, 60);
	rebuilt = f.p->m[0].domid;
	CHECK(f.p->state == FO_PAIR_REBUILDING && rebuilt == 3, "rebuilding as domain 3: %s, %u",
	      fo_pair_state_name(f.p->state), rebuilt);
	live(&f, 20);
	CHECK(forwards("vif3.0") == 0, "the rebuilt member's new vif is cut off while it boots");
	CHECK(f.p->net_recuts == 0, "not counted as a re-cut: %llu", (unsigned long long)f.p->net_recuts);
	prove(&f, rebuilt);
	live(&f, 30);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 1, "armed with the rebuilt standby: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(forwards("vif3.0") == 0 && forwards("vif2.0") == 1 && strcmp(fdb_port(), "vif2.0") == 0,
	      "standby cut off, the service on the active: vif3.0 %d vif2.0 %d fdb %s", forwards("vif3.0"),
	      forwards("vif2.0"), fdb_port());
	fx_free(&f);
	(void)!system("ip link del vif3.0");
}

/* `count` frames into the bridge from a guest's side, from MAC `src`, or
 * (`spray`) each from its own MAC 02:00:5e:xx:xx:xx, xx the frame's number
 * (one socket: closing a packet socket waits for an RCU grace period). */
static void frames_from(const char *guest_if, const uint8_t src[6], int count, bool spray)
{
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_halen = 6 };
	uint8_t f[60] = { 0 };
	int fd = socket(AF_PACKET, SOCK_RAW, 0);

	memset(f, 0xff, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x88;
	f[13] = 0xb5;
	a.sll_ifindex = (int)if_nametoindex(guest_if);
	memset(a.sll_addr, 0xff, 6);
	for (int i = 0; fd >= 0 && i < count; i++) {
		if (spray) {
			const uint8_t m[6] = { 0x02, 0x00, 0x5e, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i };

			memcpy(f + 6, m, 6);
		}
		if (sendto(fd, f, sizeof(f), 0, (struct sockaddr *)&a, sizeof(a)) < 0)
			perror("guest frame");
	}
	if (fd >= 0)
		close(fd);
}

static void guest_sends_from(const char *guest_if, const uint8_t src[6], int count)
{
	frames_from(guest_if, src, count, false);
}

/* The active's guest changes its MAC: the bridge learns the new one on
 * its port; within a second the pair is DEGRADED naming it; once the
 * guest is back on the service MAC, armed again. */
static void test_active_changes_mac(void)
{
	static const uint8_t other[6] = { 0x00, 0x16, 0x3e, 0xaa, 0xbb, 0xcc };
	struct fo_config cfg;
	struct fx f;

	armed_with_network(&f, &cfg);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed");
	/* The guest keeps sending from the new MAC (every 100 ms). */
	for (int i = 0; i < 12; i++) {
		guest_sends_from("g1", other, 1);
		live(&f, 100);
	}
	CHECK(f.p->state == FO_PAIR_DEGRADED &&
		      strstr(f.p->reason, "network.mac: brake-a (domain 1) sends from MAC 00:16:3e:aa:bb:cc on vif1.0"),
	      "DEGRADED naming the MAC: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	/* Its last frame is seen at the next look, then one clean look. */
	live(&f, 2200);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed again once the guest is back: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* Has the bridge learnt `mac` (text) on some port? Waits up to a second
 * of real time: a frame is learnt in the sender's softirq, normally before
 * its send returns. */
static bool bridge_learnt(const char *mac)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "bridge fdb show br br0 | grep -q '^%s dev '", mac);
	for (int i = 0; i < 100; i++) {
		if (system(cmd) == 0)
			return true;
		usleep(10000);
	}
	return false;
}

/* An armed pair's look for a foreign MAC follows the bridge's FDB news:
 * no dump of the FDB while nothing changes (it was once a second on the
 * real-time thread), the active's new MAC seen at the next audit (a
 * heartbeat period, not the next second), and news lost to a burst of
 * learning elsewhere (the socket overflowed) makes the pair look once,
 * not raise a false alarm. */
static void test_foreign_mac_from_fdb_news(void)
{
	static const uint8_t other[6] = { 0x00, 0x16, 0x3e, 0xaa, 0xbb, 0xcd };
	struct fo_config cfg;
	struct fx f;
	unsigned long dumps;

	armed_with_network(&f, &cfg);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed");
	dumps = f.p->env->net->fdb_dumps;
	live(&f, 3000);
	CHECK(f.p->env->net->fdb_dumps == dumps, "no FDB dump in 3 s of quiet: %lu", f.p->env->net->fdb_dumps - dumps);
	CHECK(f.p->state == FO_PAIR_ARMED, "still armed");

	frames_from("c0", SVC_MAC, 4000, true); /* each from its own MAC */
	CHECK(bridge_learnt("02:00:5e:00:0f:9f"), "the bridge learnt the client's last MAC");
	live(&f, 30);
	CHECK(f.p->env->net->fdb_dumps > dumps, "lost news looked at: %lu dumps", f.p->env->net->fdb_dumps - dumps);
	CHECK(f.p->state == FO_PAIR_ARMED, "MACs on a client's port are no alarm: %s (%s)",
	      fo_pair_state_name(f.p->state), f.p->reason);

	guest_sends_from("g1", other, 1);
	CHECK(bridge_learnt("00:16:3e:aa:bb:cd"), "the bridge learnt the guest's new MAC");
	live(&f, 30);
	CHECK(f.p->state == FO_PAIR_DEGRADED &&
		      strstr(f.p->reason, "network.mac: brake-a (domain 1) sends from MAC 00:16:3e:aa:bb:cd on vif1.0"),
	      "DEGRADED within 30 ms naming the MAC: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	fx_free(&f);
}

/* The bridge is deleted under an armed pair, then made again: DEGRADED
 * at the next audit naming the bridge (its news, not a lookup every
 * period); once it is back with the vifs on it, armed again with the
 * bridge set as the roles say. */
static void test_bridge_deleted_while_armed(void)
{
	struct fo_config cfg;
	struct fx f;
	size_t n_degraded;

	armed_with_network(&f, &cfg);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed");
	sh("ip link del br0");
	live(&f, 30);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "network.bridge: bridge \"br0\" is gone from dom0"),
	      "DEGRADED within 30 ms naming the bridge: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	n_degraded = count_events(&f, FO_EV_DEGRADED);
	live(&f, 3500);
	CHECK(f.p->state == FO_PAIR_DEGRADED, "still DEGRADED while there is no bridge");
	/* Retried every second, failing the same way: one event for the
	 * reason the retry gives (the verify's was first), not one a second. */
	CHECK(count_events(&f, FO_EV_DEGRADED) - n_degraded <= 1, "%zu more degraded events in 3.5 s of retries",
	      count_events(&f, FO_EV_DEGRADED) - n_degraded);
	sh("ip link add br0 type bridge && ip link set br0 up && ip link set vif1.0 master br0 && "
	   "ip link set vif2.0 master br0 && ip link set c0br master br0");
	live(&f, 2200);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed again on the new bridge: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	CHECK(forwards("vif1.0") == 1 && forwards("vif2.0") == 0, "the active's port forwards, the standby's not: %d %d",
	      forwards("vif1.0"), forwards("vif2.0"));
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

/* The active's guest floods the bridge (network.flood_pps 1000, 3000
 * frames in one second): DEGRADED with the rate; quiet again, armed. */
static void test_active_floods(void)
{
	struct fo_config cfg;
	struct fx f;

	topology();
	net_config(&cfg);
	cfg.pairs[0].net.flood_pps = 1000;
	fx_armed_cfg(&f, &cfg, false);
	live(&f, 1100); /* a first look, quiet */
	CHECK(f.p->state == FO_PAIR_ARMED, "armed and quiet");
	guest_sends_from("g1", SVC_MAC, 3000);
	live(&f, 1000);
	CHECK(f.p->state == FO_PAIR_DEGRADED && strstr(f.p->reason, "network.flood_pps: brake-a (domain 1) floods the bridge"),
	      "DEGRADED naming the flood: %s (%s)", fo_pair_state_name(f.p->state), f.p->reason);
	live(&f, 2200);
	CHECK(f.p->state == FO_PAIR_ARMED, "armed again once quiet: %s (%s)", fo_pair_state_name(f.p->state),
	      f.p->reason);
	fx_free(&f);
}

/* failoverd restarts (killed, started again) on a bridge someone changed
 * meanwhile (the standby's port forwarding, the service MAC's entry on its
 * port): the restarted daemon adopts the roles from Xen and sets the bridge
 * as they say before it reports the pair ARMED. */
static void test_restart_adopts_and_sets_the_bridge(void)
{
	struct fo_hv_callbacks cb;
	struct fo_config cfg;
	struct fx f;

	armed_with_network(&f, &cfg);
	CHECK(f.p->state == FO_PAIR_ARMED && forwards("vif2.0") == 0, "armed, standby cut off");
	sh("bridge link set dev vif2.0 state 3 && bridge fdb replace %s dev vif2.0 master dynamic", SVC_MAC_TEXT);
	CHECK(forwards("vif2.0") == 1 && strcmp(fdb_port(), "vif2.0") == 0, "changed by hand while no daemon ran");
	fo_manager_free(f.mgr);
	if (fo_manager_new(&f.cfg, &f.mgr) < 0)
		abort();
	cb = fo_manager_hv_callbacks(f.mgr);
	fo_sim_set_callbacks(f.hv, &cb);
	fo_manager_attach_hv(f.mgr, f.hv);
	fo_manager_start(f.mgr);
	f.p = fo_manager_pair(f.mgr, 0);
	live(&f, 50);
	CHECK(f.p->state == FO_PAIR_ARMED && f.p->active == 0, "adopted: %s, active %d (%s)",
	      fo_pair_state_name(f.p->state), f.p->active, f.p->reason);
	CHECK(forwards("vif1.0") == 1 && forwards("vif2.0") == 0 && strcmp(fdb_port(), "vif1.0") == 0,
	      "the restarted daemon set the bridge as the roles say: vif1.0 %d vif2.0 %d fdb %s", forwards("vif1.0"),
	      forwards("vif2.0"), fdb_port());
	CHECK(fo_sim_violations(f.hv) == 0, "never both running");
	fx_free(&f);
}

int main(void)
{
	/* Its own network namespace, and a sysfs that shows it (failoverd
	 * reads /sys/class/net; a sysfs shows the namespace it was mounted in). */
	if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("sysfs", "/sys", "sysfs", 0, NULL) != 0) {
		fprintf(stderr, "FATAL: a network namespace with its own sysfs: %s (run as root)\n", strerror(errno));
		return 1;
	}
	RUN(test_enforce_and_move);
	RUN(test_bad_setups);
	RUN(test_pair_failover_moves_identity);
	RUN(test_pair_other_mac_degraded);
	RUN(test_pair_unreadable_mac_degraded);
	RUN(test_pair_bridge_missing_then_there);
	RUN(test_pair_move_fails_degraded);
	RUN(test_reload_adds_network);
	RUN(test_rebuilt_member_starts_cut_off);
	RUN(test_active_changes_mac);
	RUN(test_active_floods);
	RUN(test_foreign_mac_from_fdb_news);
	RUN(test_bridge_deleted_while_armed);
	RUN(test_restart_adopts_and_sets_the_bridge);
	return check_summary("test_service_net");
}
