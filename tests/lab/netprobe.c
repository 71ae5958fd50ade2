// SPDX-License-Identifier: MIT
// fo-netprobe: dom0's small tools for the lab's network (issue #39).
//
//   fo-netprobe burst --dev IF [--count N] [--dst MAC] [--src MAC]
//       N Ethernet frames of the local experimental ethertype 0x88b5 (no
//       guest answers them) out of IF, to DST (default broadcast).
//   fo-netprobe announce --dev IF --mac MAC [--ip4 A] [--ip6 A] [--count N]
//       what a new active's host says for it: a gratuitous ARP (request,
//       sender = target = A) and an unsolicited neighbour advertisement
//       (to ff02::1, override flag, target A, its link-layer address MAC),
//       sent from MAC through a packet socket on IF (the bridge).
//   fo-netprobe sniff --dev IF [--duration-ms D] [--out FILE]
//       counts the frames IF receives (on a vif: what the guest sent),
//       classified: gratuitous ARP, other ARP, unsolicited NA, other
//       neighbour discovery, MLD, IPv4, other IPv6, other. Prints the first
//       frames; summary JSON at SIGTERM/SIGINT or after D ms.
//   fo-netprobe fdb-watch --bridge BR --mac MAC [--out FILE]
//       follows the bridge's forwarding entry of MAC over rtnetlink
//       (RTNLGRP_NEIGH, AF_BRIDGE): the starting port from a dump, then
//       every add, move (port changed) and delete with its CLOCK_MONOTONIC
//       time (fo-labtime's clock). Summary JSON at SIGTERM/SIGINT.
// sniff and fdb-watch write their summary so far on SIGUSR1 and go on.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <netinet/if_ether.h>
#include <netinet/ip6.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netproto.h"

#define ETH_P_LOCAL_EXP 0x88b5
#define MAX_LISTED 200

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void die(const char *fmt, const char *a)
{
	fprintf(stderr, "fo-netprobe: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\n");
	exit(2);
}

static void parse_mac(const char *s, uint8_t *mac)
{
	unsigned v[6];
	char extra;
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &extra) != 6)
		die("'%s' is not a MAC address (xx:xx:xx:xx:xx:xx)", s);
	for (i = 0; i < 6; i++) {
		if (v[i] > 255)
			die("'%s' is not a MAC address (xx:xx:xx:xx:xx:xx)", s);
		mac[i] = (uint8_t)v[i];
	}
}

static void fmt_mac(const uint8_t *m, char *out)
{
	sprintf(out, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static long num_arg(const char *opt, const char *s, long lo, long hi)
{
	return net_num_arg("fo-netprobe", opt, s, lo, hi);
}

static int ifindex_of(const char *dev)
{
	int ix = (int)if_nametoindex(dev);

	if (ix == 0)
		die("no network device '%s'", dev);
	return ix;
}

// A packet socket made with protocol 0 receives nothing until bind() gives
// it the protocol and the device: made with ETH_P_ALL it would take every
// device's frames in between (seen: a sniffer on a vif counting the
// client's frames from another port).
static int packet_socket(const char *dev, int proto, struct sockaddr_ll *sll)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		perror("fo-netprobe: AF_PACKET socket");
		exit(1);
	}
	memset(sll, 0, sizeof(*sll));
	sll->sll_family = AF_PACKET;
	sll->sll_protocol = htons(proto);
	sll->sll_ifindex = ifindex_of(dev);
	sll->sll_halen = ETH_ALEN;
	if (bind(fd, (struct sockaddr *)sll, sizeof(*sll)) < 0) {
		perror("fo-netprobe: bind");
		exit(1);
	}
	return fd;
}

static void dev_mac(int fd, const char *dev, uint8_t *mac)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		perror("fo-netprobe: SIOCGIFHWADDR");
		exit(1);
	}
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
}

static void send_frame(int fd, struct sockaddr_ll *sll, const uint8_t *frame, size_t len)
{
	if (sendto(fd, frame, len, 0, (struct sockaddr *)sll, sizeof(*sll)) != (ssize_t)len) {
		perror("fo-netprobe: send");
		exit(1);
	}
}

// ---- burst ----------------------------------------------------------------

static int cmd_burst(int argc, char **argv)
{
	const char *dev = NULL;
	uint8_t dst[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, src[6], frame[64];
	long count = 1, i;
	int have_src = 0, fd;
	struct sockaddr_ll sll;

	for (i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dev"))
			dev = argv[i + 1];
		else if (!strcmp(argv[i], "--count"))
			count = num_arg("--count", argv[i + 1], 1, 100000);
		else if (!strcmp(argv[i], "--dst"))
			parse_mac(argv[i + 1], dst);
		else if (!strcmp(argv[i], "--src"))
			parse_mac(argv[i + 1], src), have_src = 1;
		else
			die("burst: unknown option %s", argv[i]);
	}
	if (i != argc || !dev)
		die("usage: %s", "fo-netprobe burst --dev IF [--count N] [--dst MAC] [--src MAC]");
	fd = packet_socket(dev, ETH_P_LOCAL_EXP, &sll);
	if (!have_src)
		dev_mac(fd, dev, src);
	for (i = 0; i < count; i++) {
		memset(frame, 0, sizeof(frame));
		memcpy(frame, dst, 6);
		memcpy(frame + 6, src, 6);
		frame[12] = ETH_P_LOCAL_EXP >> 8;
		frame[13] = ETH_P_LOCAL_EXP & 0xff;
		snprintf((char *)frame + 14, sizeof(frame) - 14, "fo-netprobe burst %ld", i);
		memcpy(sll.sll_addr, dst, 6);
		send_frame(fd, &sll, frame, sizeof(frame));
	}
	printf("fo-netprobe burst: %ld frames out of %s\n", count, dev);
	return 0;
}

// ---- announce ---------------------------------------------------------------

static uint16_t csum_add(uint32_t sum, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		sum += (uint32_t)(b[len - 1] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static int cmd_announce(int argc, char **argv)
{
	const char *dev = NULL, *ip4 = NULL, *ip6 = NULL;
	uint8_t mac[6], frame[128];
	long count = 1, i, k;
	int have_mac = 0, fd4 = -1, fd6 = -1;
	struct sockaddr_ll sll4, sll6;
	struct in_addr a4;
	struct in6_addr a6;

	for (i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dev"))
			dev = argv[i + 1];
		else if (!strcmp(argv[i], "--mac"))
			parse_mac(argv[i + 1], mac), have_mac = 1;
		else if (!strcmp(argv[i], "--ip4"))
			ip4 = argv[i + 1];
		else if (!strcmp(argv[i], "--ip6"))
			ip6 = argv[i + 1];
		else if (!strcmp(argv[i], "--count"))
			count = num_arg("--count", argv[i + 1], 1, 100);
		else
			die("announce: unknown option %s", argv[i]);
	}
	if (i != argc || !dev || !have_mac || (!ip4 && !ip6))
		die("usage: %s", "fo-netprobe announce --dev IF --mac MAC [--ip4 A] [--ip6 A] [--count N]");
	if (ip4 && inet_pton(AF_INET, ip4, &a4) != 1)
		die("--ip4 '%s' is not an IPv4 address", ip4);
	if (ip6 && inet_pton(AF_INET6, ip6, &a6) != 1)
		die("--ip6 '%s' is not an IPv6 address", ip6);
	if (ip4)
		fd4 = packet_socket(dev, ETH_P_ARP, &sll4);
	if (ip6)
		fd6 = packet_socket(dev, ETH_P_IPV6, &sll6);
	for (k = 0; k < count; k++) {
		if (ip4) {
			// Ethernet + ARP request, sender = target = the service address.
			memset(frame, 0, sizeof(frame));
			memset(frame, 0xff, 6);
			memcpy(frame + 6, mac, 6);
			frame[12] = 0x08, frame[13] = 0x06;
			uint8_t *a = frame + 14;
			a[0] = 0, a[1] = 1;	  // Ethernet
			a[2] = 0x08, a[3] = 0x00; // IPv4
			a[4] = 6, a[5] = 4;
			a[6] = 0, a[7] = 1; // request
			memcpy(a + 8, mac, 6);
			memcpy(a + 14, &a4, 4);
			memcpy(a + 24, &a4, 4);
			memset(sll4.sll_addr, 0xff, 6);
			send_frame(fd4, &sll4, frame, 60);
		}
		if (ip6) {
			// Ethernet + IPv6 + ICMPv6 NA (32 bytes with the option).
			static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
			uint8_t *ip = frame + 14, *na = ip + 40;
			memset(frame, 0, sizeof(frame));
			frame[0] = 0x33, frame[1] = 0x33, frame[5] = 1;
			memcpy(frame + 6, mac, 6);
			frame[12] = 0x86, frame[13] = 0xdd;
			ip[0] = 0x60;
			ip[4] = 0, ip[5] = 32; // payload length
			ip[6] = IPPROTO_ICMPV6;
			ip[7] = 255;
			memcpy(ip + 8, &a6, 16);
			memcpy(ip + 24, all_nodes, 16);
			na[0] = ND_NEIGHBOR_ADVERT;
			na[4] = 0x20; // override, not solicited, not a router
			memcpy(na + 8, &a6, 16);
			na[24] = ND_OPT_TARGET_LINKADDR, na[25] = 1;
			memcpy(na + 26, mac, 6);
			// Checksum over the pseudo-header and the message.
			uint8_t pseudo[40] = { 0 };
			memcpy(pseudo, ip + 8, 32);
			pseudo[35] = 32;
			pseudo[39] = IPPROTO_ICMPV6;
			uint32_t sum = csum_add(0, pseudo, sizeof(pseudo));
			uint16_t cs = (uint16_t)~csum_add(sum, na, 32);
			na[2] = (uint8_t)(cs >> 8), na[3] = (uint8_t)cs;
			memcpy(sll6.sll_addr, frame, 6);
			send_frame(fd6, &sll6, frame, 14 + 40 + 32);
		}
	}
	printf("fo-netprobe announce: t=%llu us %ld x%s%s%s%s on %s\n", (unsigned long long)now_us(), count,
	       ip4 ? " garp " : "", ip4 ? ip4 : "", ip6 ? " na " : "", ip6 ? ip6 : "", dev);
	return 0;
}

// ---- signals and summaries ---------------------------------------------------

static int signal_fd(void)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		perror("fo-netprobe: signalfd");
		exit(1);
	}
	return fd;
}

// 1: stop, 0: go on; *peek set on SIGUSR1.
static int read_signals(int sfd, int *peek)
{
	struct signalfd_siginfo si;
	int stop = 0;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGUSR1)
			*peek = 1;
		else
			stop = 1;
	}
	return stop;
}

static FILE *out_open(const char *out, char *tmp, size_t size)
{
	FILE *f;

	if (!out)
		return stdout;
	snprintf(tmp, size, "%s.tmp", out);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "fo-netprobe: cannot write %s: %s\n", tmp, strerror(errno));
		exit(1);
	}
	return f;
}

static void out_close(FILE *f, const char *out, const char *tmp)
{
	if (!out) {
		fflush(f);
		return;
	}
	if (fclose(f) != 0 || rename(tmp, out) != 0) {
		fprintf(stderr, "fo-netprobe: cannot write %s: %s\n", out, strerror(errno));
		exit(1);
	}
}

// ---- sniff --------------------------------------------------------------------

enum kind { K_GARP, K_ARP, K_UNSOL_NA, K_NDP, K_MLD, K_IPV4, K_IPV6, K_OTHER, K_N };
static const char *const kind_name[K_N] = { "garp", "arp", "unsolicited_na", "ndp", "mld", "ipv4", "ipv6", "other" };

static enum kind classify(const uint8_t *b, size_t n, char *detail, size_t dsize)
{
	uint16_t et;

	if (n < 14) {
		snprintf(detail, dsize, "runt %zu bytes", n);
		return K_OTHER;
	}
	et = (uint16_t)(b[12] << 8 | b[13]);
	if (et == 0x0806 && n >= 42) {
		const uint8_t *a = b + 14;
		int op = a[6] << 8 | a[7];
		char spa[16], tpa[16];
		inet_ntop(AF_INET, a + 14, spa, sizeof(spa));
		inet_ntop(AF_INET, a + 24, tpa, sizeof(tpa));
		snprintf(detail, dsize, "arp op %d %s -> %s", op, spa, tpa);
		return memcmp(a + 14, a + 24, 4) == 0 ? K_GARP : K_ARP;
	}
	if (et == 0x0800) {
		snprintf(detail, dsize, "ipv4 proto %d", n >= 24 ? b[23] : -1);
		return K_IPV4;
	}
	if (et == 0x86dd && n >= 54) {
		const uint8_t *ip = b + 14;
		int nh = ip[6];
		const uint8_t *p = ip + 40;
		size_t left = n - 54;
		// One hop-by-hop header (MLD reports carry the router alert).
		if (nh == 0 && left >= 8) {
			size_t hl = (size_t)(p[1] + 1) * 8;
			nh = p[0];
			if (hl > left)
				hl = left;
			p += hl;
			left -= hl;
		}
		if (nh == IPPROTO_ICMPV6 && left >= 4) {
			int type = p[0];
			snprintf(detail, dsize, "icmpv6 type %d", type);
			if (type == ND_NEIGHBOR_ADVERT && left >= 8) {
				snprintf(detail, dsize, "icmpv6 na flags 0x%02x", p[4]);
				return (p[4] & 0x40) ? K_NDP : K_UNSOL_NA; // not solicited
			}
			if (type >= 133 && type <= 137)
				return K_NDP;
			if (type == 130 || type == 131 || type == 132 || type == 143)
				return K_MLD;
		} else {
			snprintf(detail, dsize, "ipv6 next header %d", nh);
		}
		return K_IPV6;
	}
	snprintf(detail, dsize, "ethertype 0x%04x", et);
	return K_OTHER;
}

static int cmd_sniff(int argc, char **argv)
{
	const char *dev = NULL, *out = NULL;
	long duration_ms = 0, i;
	unsigned long counts[K_N] = { 0 }, frames = 0, listed = 0;
	static char list[MAX_LISTED][128];
	uint8_t buf[2048];
	struct sockaddr_ll sll;
	int fd, sfd, stop = 0;
	uint64_t t0;

	for (i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dev"))
			dev = argv[i + 1];
		else if (!strcmp(argv[i], "--duration-ms"))
			duration_ms = num_arg("--duration-ms", argv[i + 1], 1, 86400000);
		else if (!strcmp(argv[i], "--out"))
			out = argv[i + 1];
		else
			die("sniff: unknown option %s", argv[i]);
	}
	if (i != argc || !dev)
		die("usage: %s", "fo-netprobe sniff --dev IF [--duration-ms D] [--out FILE]");
	sfd = signal_fd();
	fd = packet_socket(dev, ETH_P_ALL, &sll);
	t0 = now_us();
	fprintf(stderr, "fo-netprobe sniff: t=%llu us on %s\n", (unsigned long long)t0, dev);
	while (!stop) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
		int peek = 0;
		poll(p, 2, 100);
		if (p[1].revents)
			stop = read_signals(sfd, &peek);
		if (duration_ms && now_us() - t0 >= (uint64_t)duration_ms * 1000u)
			stop = 1;
		while (p[0].revents) {
			struct sockaddr_ll from;
			socklen_t fl = sizeof(from);
			char detail[96], src[18];
			ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
			if (n < 0)
				break;
			if (from.sll_pkttype == PACKET_OUTGOING)
				continue; // what the bridge sends toward the guest
			enum kind k = classify(buf, (size_t)n, detail, sizeof(detail));
			counts[k]++;
			frames++;
			fmt_mac(buf + 6, src);
			if (listed < MAX_LISTED)
				snprintf(list[listed++], sizeof(list[0]), "%llu %s %s %s",
					 (unsigned long long)now_us(), kind_name[k], src, detail);
			fprintf(stderr, "fo-netprobe sniff %s: %s from %s (%s)\n", dev, kind_name[k], src, detail);
		}
		if (peek || stop) {
			char tmp[4096];
			FILE *f = out_open(out, tmp, sizeof(tmp));
			fprintf(f, "{\"dev\":\"%s\",\"t_start_us\":%llu,\"t_end_us\":%llu,\"frames\":%lu", dev,
				(unsigned long long)t0, (unsigned long long)now_us(), frames);
			for (i = 0; i < K_N; i++)
				fprintf(f, ",\"%s\":%lu", kind_name[i], counts[i]);
			fprintf(f, ",\"list\":[");
			for (i = 0; i < (long)listed; i++)
				fprintf(f, "%s\"%s\"", i ? "," : "", list[i]);
			fprintf(f, "]}\n");
			out_close(f, out, tmp);
		}
	}
	return 0;
}

// ---- fdb-watch ------------------------------------------------------------------

struct fdb_event {
	uint64_t t_us;
	char kind[8], from[IF_NAMESIZE + 4], to[IF_NAMESIZE + 4], state[12];
};

static void port_name(int ix, char *out, size_t size)
{
	char n[IF_NAMESIZE];

	if (ix <= 0)
		snprintf(out, size, "-");
	else if (if_indextoname((unsigned)ix, n))
		snprintf(out, size, "%s", n);
	else
		snprintf(out, size, "if%d", ix);
}

static const char *nud_name(int s)
{
	if (s & NUD_PERMANENT)
		return "permanent";
	if (s & NUD_NOARP)
		return "static";
	if (s & NUD_REACHABLE)
		return "dynamic";
	if (s & NUD_STALE)
		return "stale";
	return "other";
}

static int cmd_fdb_watch(int argc, char **argv)
{
	const char *br = NULL, *out = NULL;
	uint8_t mac[6];
	int have_mac = 0, nl, sfd, br_ix, port = 0, stop = 0, dump_done = 0;
	long i;
	unsigned long events = 0, adds = 0, moves = 0, deletes = 0, n_list = 0;
	static struct fdb_event list[MAX_LISTED];
	static char buf[65536];
	char cur_state[12] = "-";

	for (i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--bridge"))
			br = argv[i + 1];
		else if (!strcmp(argv[i], "--mac"))
			parse_mac(argv[i + 1], mac), have_mac = 1;
		else if (!strcmp(argv[i], "--out"))
			out = argv[i + 1];
		else
			die("fdb-watch: unknown option %s", argv[i]);
	}
	if (i != argc || !br || !have_mac)
		die("usage: %s", "fo-netprobe fdb-watch --bridge BR --mac MAC [--out FILE]");
	br_ix = ifindex_of(br);
	sfd = signal_fd();
	nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_NEIGH };
	if (nl < 0 || bind(nl, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("fo-netprobe: netlink");
		return 1;
	}
	// The starting point: a dump of the bridge family's entries.
	struct {
		struct nlmsghdr h;
		struct ndmsg n;
	} req = { .h = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETNEIGH, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			 .nlmsg_seq = 1 },
		  .n = { .ndm_family = AF_BRIDGE } };
	if (send(nl, &req, sizeof(req), 0) < 0) {
		perror("fo-netprobe: netlink dump");
		return 1;
	}
	while (!stop) {
		struct pollfd p[2] = { { .fd = nl, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
		int peek = 0;
		poll(p, 2, 1000);
		if (p[1].revents)
			stop = read_signals(sfd, &peek);
		while (p[0].revents) {
			ssize_t n = recv(nl, buf, sizeof(buf), MSG_DONTWAIT);
			struct nlmsghdr *h;
			if (n < 0) {
				if (errno == ENOBUFS)
					fprintf(stderr, "fo-netprobe fdb-watch: netlink overrun: events lost\n");
				break;
			}
			uint64_t t = now_us();
			for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
				if (h->nlmsg_type == NLMSG_DONE) {
					dump_done = 1;
					char pn[IF_NAMESIZE + 4];
					port_name(port, pn, sizeof(pn));
					fprintf(stderr, "fo-netprobe fdb-watch: t=%llu us start: port %s (%s)\n",
						(unsigned long long)t, pn, cur_state);
					continue;
				}
				if (h->nlmsg_type != RTM_NEWNEIGH && h->nlmsg_type != RTM_DELNEIGH)
					continue;
				struct ndmsg *nd = NLMSG_DATA(h);
				if (nd->ndm_family != AF_BRIDGE)
					continue;
				struct rtattr *rta = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
				int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd)));
				int match = 0, master = 0;
				for (; RTA_OK(rta, alen); rta = RTA_NEXT(rta, alen)) {
					if (rta->rta_type == NDA_LLADDR && RTA_PAYLOAD(rta) == 6 &&
					    !memcmp(RTA_DATA(rta), mac, 6))
						match = 1;
					if (rta->rta_type == NDA_MASTER && RTA_PAYLOAD(rta) == 4)
						master = *(int *)RTA_DATA(rta);
				}
				// Entries of the bridge's ports carry NDA_MASTER; the
				// ports' own (self) entries do not.
				if (!match || master != br_ix)
					continue;
				int newport = h->nlmsg_type == RTM_NEWNEIGH ? nd->ndm_ifindex : 0;
				const char *kind = NULL;
				if (!dump_done && h->nlmsg_seq == 1) {
					port = newport;
					snprintf(cur_state, sizeof(cur_state), "%s", nud_name(nd->ndm_state));
					continue;
				}
				events++;
				if (newport == port)
					continue; // a refresh or a state change on the same port
				if (port == 0)
					kind = "add", adds++;
				else if (newport == 0)
					kind = "delete", deletes++;
				else
					kind = "move", moves++;
				struct fdb_event *e = &list[n_list < MAX_LISTED ? n_list : MAX_LISTED - 1];
				e->t_us = t;
				snprintf(e->kind, sizeof(e->kind), "%s", kind);
				port_name(port, e->from, sizeof(e->from));
				port_name(newport, e->to, sizeof(e->to));
				snprintf(e->state, sizeof(e->state), "%s",
					 newport ? nud_name(nd->ndm_state) : "-");
				fprintf(stderr, "fo-netprobe fdb-watch: t=%llu us %s %s -> %s (%s)\n",
					(unsigned long long)t, kind, e->from, e->to, e->state);
				if (n_list < MAX_LISTED)
					n_list++;
				port = newport;
			}
		}
		if (peek || stop) {
			char tmp[4096], pn[IF_NAMESIZE + 4];
			FILE *f = out_open(out, tmp, sizeof(tmp));
			port_name(port, pn, sizeof(pn));
			fprintf(f, "{\"bridge\":\"%s\",\"t_us\":%llu,\"events\":%lu,\"changes\":%lu,\"adds\":%lu,"
				   "\"moves\":%lu,\"deletes\":%lu,\"port\":\"%s\",\"list\":[",
				br, (unsigned long long)now_us(), events, adds + moves + deletes, adds, moves, deletes,
				pn);
			for (i = 0; i < (long)n_list; i++)
				fprintf(f, "%s{\"t_us\":%llu,\"kind\":\"%s\",\"from\":\"%s\",\"to\":\"%s\",\"state\":\"%s\"}",
					i ? "," : "", (unsigned long long)list[i].t_us, list[i].kind, list[i].from,
					list[i].to, list[i].state);
			fprintf(f, "]}\n");
			out_close(f, out, tmp);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die("usage: %s", "fo-netprobe burst|announce|sniff|fdb-watch OPTIONS (see netprobe.c)");
	if (!strcmp(argv[1], "burst"))
		return cmd_burst(argc - 2, argv + 2);
	if (!strcmp(argv[1], "announce"))
		return cmd_announce(argc - 2, argv + 2);
	if (!strcmp(argv[1], "sniff"))
		return cmd_sniff(argc - 2, argv + 2);
	if (!strcmp(argv[1], "fdb-watch"))
		return cmd_fdb_watch(argc - 2, argv + 2);
	die("unknown command '%s' (burst, announce, sniff, fdb-watch)", argv[1]);
	return 2;
}
