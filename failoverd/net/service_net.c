/* SPDX-License-Identifier: MIT */
/*
 * service_net.c - the service's network identity on the dom0 bridge
 * (service_net.h says what and why): netlink batches for the ports and the
 * FDB, built when the roles are set and sent as they are at a switch.
 */
#include "net/service_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/if_bridge.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define MS_NS 1000000ull

const char *fo_svcnet_step_name(enum fo_svcnet_step s)
{
	switch (s) {
	case FO_SVCNET_STEP_OLD_DOWN: return "cut the old active off the bridge";
	case FO_SVCNET_STEP_NEW_UP: return "let the new active's port forward";
	case FO_SVCNET_STEP_FDB: return "move the service MAC's FDB entry";
	case FO_SVCNET_STEP_ANNOUNCE: return "announce the service address";
	case FO_SVCNET_STEP_SEND: return "send the netlink batch";
	default: return "none";
	}
}

int fo_svcnet_sockets_open(struct fo_svcnet_sockets *s, char *err, size_t errlen)
{
	struct sockaddr_nl local = { .nl_family = AF_NETLINK };
	/* A reply that never comes must not hold the real-time loop. */
	struct timeval rcv_timeout = { .tv_sec = 0, .tv_usec = 200000 };
	int one = 1;

	if (s->nl_fd > 0)
		return 0;
	s->nl_fd = s->pkt_fd = s->ioctl_fd = s->fdb_fd = -1;
	s->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (s->nl_fd < 0 || bind(s->nl_fd, (struct sockaddr *)&local, sizeof(local)) < 0)
		goto fail;
	/* The bridges' FDB and link changes as they happen (RTNLGRP_NEIGH,
	 * RTNLGRP_LINK), read without waiting: a guest that sends from a MAC
	 * other than the service's is seen when the bridge learns it, and a
	 * bridge deleted or a vif taken off it when it happens, with no
	 * periodic dump or lookup on the real-time thread. A small buffer: a
	 * guest spraying MACs overflows it, and the overflow is noticed
	 * (fo_svcnet_news says -ENOBUFS). */
	s->fdb_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (s->fdb_fd < 0)
		goto fail;
	{
		struct sockaddr_nl groups = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_NEIGH | RTMGRP_LINK };
		int rcvbuf = 64 * 1024;

		setsockopt(s->fdb_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
		if (bind(s->fdb_fd, (struct sockaddr *)&groups, sizeof(groups)) < 0)
			goto fail;
	}
	/* Acks without the request copied back: they fit a small buffer. */
	setsockopt(s->nl_fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(s->nl_fd, SOL_SOCKET, SO_RCVTIMEO, &rcv_timeout, sizeof(rcv_timeout));
	/* Protocol 0: this socket only sends (it never queues received frames). */
	s->pkt_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s->pkt_fd < 0)
		goto fail;
	s->ioctl_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s->ioctl_fd < 0)
		goto fail;
	return 0;
fail: {
	int e = errno;

	snprintf(err, errlen, "network: could not open the netlink and packet sockets: %s (needs CAP_NET_ADMIN and CAP_NET_RAW)",
		 strerror(e));
	fo_svcnet_sockets_close(s);
	return -e;
}
}

void fo_svcnet_sockets_close(struct fo_svcnet_sockets *s)
{
	if (s->nl_fd > 0)
		close(s->nl_fd);
	if (s->pkt_fd > 0)
		close(s->pkt_fd);
	if (s->ioctl_fd > 0)
		close(s->ioctl_fd);
	if (s->fdb_fd > 0)
		close(s->fdb_fd);
	s->nl_fd = s->pkt_fd = s->ioctl_fd = s->fdb_fd = 0;
}

void fo_svcnet_vif_name(const struct fo_svcnet_config *cfg, fo_domid_t domid, char out[FO_IFNAME_MAX + 1])
{
	snprintf(out, FO_IFNAME_MAX + 1, "vif%u.%u", (unsigned)domid, cfg->vif_device);
}

/* ---- netlink messages, appended to a batch ---- */

static size_t put_link_flags(uint8_t *buf, size_t off, int ifindex, bool up)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(buf + off);
	struct ifinfomsg *ifi = NLMSG_DATA(h);

	memset(h, 0, NLMSG_SPACE(sizeof(*ifi)));
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*ifi));
	h->nlmsg_type = RTM_NEWLINK;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	ifi->ifi_flags = up ? IFF_UP : 0;
	ifi->ifi_change = IFF_UP;
	return off + NLMSG_ALIGN(h->nlmsg_len);
}

/* A bridge port's STP state (BR_STATE_DISABLED, BR_STATE_FORWARDING), as
 * `bridge link set dev PORT state N`: synchronous, unlike a link going up
 * (whose port forwards only once linkwatch has seen it oper-up, up to a
 * second later). */
static size_t put_port_state(uint8_t *buf, size_t off, int port, uint8_t state)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(buf + off);
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *nest = (struct rtattr *)((uint8_t *)h + NLMSG_SPACE(sizeof(*ifi)));
	struct rtattr *st = (struct rtattr *)((uint8_t *)nest + RTA_LENGTH(0));
	size_t len = NLMSG_SPACE(sizeof(*ifi)) + RTA_LENGTH(0) + RTA_SPACE(1);

	memset(h, 0, len);
	h->nlmsg_type = RTM_SETLINK;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifi->ifi_family = AF_BRIDGE;
	ifi->ifi_index = port;
	st->rta_type = IFLA_BRPORT_STATE;
	st->rta_len = RTA_LENGTH(1);
	*(uint8_t *)RTA_DATA(st) = state;
	nest->rta_type = IFLA_PROTINFO | NLA_F_NESTED;
	nest->rta_len = (unsigned short)(RTA_LENGTH(0) + RTA_SPACE(1));
	h->nlmsg_len = (uint32_t)len;
	return off + NLMSG_ALIGN(h->nlmsg_len);
}

/* The service MAC's entry on `port`, as if learnt there (dynamic: it ages
 * and a port going down flushes it, like any learnt entry). */
static size_t put_fdb(uint8_t *buf, size_t off, int port, const uint8_t mac[6])
{
	struct nlmsghdr *h = (struct nlmsghdr *)(buf + off);
	struct ndmsg *nd = NLMSG_DATA(h);
	struct rtattr *rta;

	memset(h, 0, NLMSG_SPACE(sizeof(*nd)) + RTA_SPACE(6));
	h->nlmsg_type = RTM_NEWNEIGH;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
	nd->ndm_family = AF_BRIDGE;
	nd->ndm_ifindex = port;
	nd->ndm_state = NUD_REACHABLE;
	nd->ndm_flags = NTF_MASTER;
	rta = (struct rtattr *)((uint8_t *)h + NLMSG_SPACE(sizeof(*nd)));
	rta->rta_type = NDA_LLADDR;
	rta->rta_len = RTA_LENGTH(6);
	memcpy(RTA_DATA(rta), mac, 6);
	h->nlmsg_len = NLMSG_SPACE(sizeof(*nd)) + RTA_LENGTH(6);
	return off + NLMSG_ALIGN(h->nlmsg_len);
}

/* Which step a message of a batch is: the message's position is in its
 * sequence number's low byte, its step in the next one (set_seqs). */
#define SEQ_STEP(seq) (((seq) >> 8) & 0xff)

/* Number the batch's messages: the batch's number (s->seq, one per batch)
 * in the high half, so that a late ack of an earlier batch is told apart;
 * the step and the position ride along. Returns how many messages. */
static unsigned set_seqs(struct fo_svcnet_sockets *s, uint8_t *buf, size_t len, const uint8_t *steps)
{
	uint32_t batch = ++s->seq & 0xffff;
	unsigned n = 0;
	size_t off = 0;

	while (off < len) {
		struct nlmsghdr *h = (struct nlmsghdr *)(buf + off);

		h->nlmsg_seq = batch << 16 | (uint32_t)steps[n] << 8 | n;
		off += NLMSG_ALIGN(h->nlmsg_len);
		n++;
	}
	return n;
}

/* One buffer of netlink messages to the kernel: 0, or -1 with errno. */
static int nl_send(struct fo_svcnet_sockets *s, const void *buf, size_t len)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	return sendto(s->nl_fd, buf, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) == (ssize_t)len ? 0 : -1;
}

/* One read of replies (EINTR retried): its length, or -errno. The socket's
 * receive timeout bounds a reply that never comes. */
static ssize_t nl_recv(struct fo_svcnet_sockets *s, uint8_t *buf, size_t len)
{
	for (;;) {
		ssize_t r = recv(s->nl_fd, buf, len, 0);

		if (r >= 0 || errno != EINTR)
			return r < 0 ? -errno : r;
	}
}

/*
 * Send a batch in one sendmsg() and read one ack per message. rtnetlink
 * handles the messages in order inside the send, each on its own (a
 * failed one does not stop the next). Returns 0 or the first error, with
 * its step; an error whose step is in `ignore_enodev` and is -ENODEV
 * counts as done (a vif that is gone is cut off).
 */
static int send_batch(struct fo_svcnet_sockets *s, uint8_t *buf, size_t len, const uint8_t *steps,
		      enum fo_svcnet_step ignore_enodev, enum fo_svcnet_step *ret_step)
{
	uint8_t reply[512] __attribute__((aligned(4)));
	unsigned want = set_seqs(s, buf, len, steps), got = 0;
	uint32_t batch = s->seq & 0xffff;
	int first_err = 0;

	*ret_step = FO_SVCNET_STEP_NONE;
	if (nl_send(s, buf, len) < 0) {
		*ret_step = FO_SVCNET_STEP_SEND;
		return errno ? -errno : -EIO;
	}
	while (got < want) {
		ssize_t r = nl_recv(s, reply, sizeof(reply));
		struct nlmsghdr *h;
		size_t left;

		if (r < 0) {
			*ret_step = FO_SVCNET_STEP_SEND;
			return (int)r;
		}
		left = (size_t)r;
		for (h = (struct nlmsghdr *)reply; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			enum fo_svcnet_step step;

			/* An ack of an earlier batch that timed out: not ours. */
			if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq >> 16 != batch)
				continue;
			got++;
			step = (enum fo_svcnet_step)SEQ_STEP(h->nlmsg_seq);
			if (e->error == 0 || (e->error == -ENODEV && step == ignore_enodev))
				continue;
			if (!first_err) {
				first_err = e->error;
				*ret_step = step;
			}
		}
	}
	return first_err;
}

/* ---- resolving the ports ---- */

/* Is `ifname` a port of the bridge `bridge`? 0, or -errno with a message. */
static int check_port(const struct fo_svcnet_config *cfg, const char *ifname, char *err, size_t errlen)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/net/%s/master", ifname);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0) {
		snprintf(err, errlen, "network.bridge: %s is not a port of bridge %s (it has no master)", ifname,
			 cfg->bridge);
		return -ENOLINK;
	}
	target[n] = '\0';
	if (strcmp(basename(target), cfg->bridge) != 0) {
		snprintf(err, errlen, "network.bridge: %s is a port of %s, not of bridge %s", ifname, basename(target),
			 cfg->bridge);
		return -ENOLINK;
	}
	return 0;
}

static int resolve_bridge(struct fo_svcnet *n, const struct fo_svcnet_config *cfg, char *err, size_t errlen)
{
	char path[PATH_MAX];

	n->bridge_ifindex = (int)if_nametoindex(cfg->bridge);
	if (!n->bridge_ifindex) {
		snprintf(err, errlen, "network.bridge: no network device \"%s\" in dom0", cfg->bridge);
		return -ENODEV;
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/bridge", cfg->bridge);
	if (access(path, F_OK) != 0) {
		snprintf(err, errlen, "network.bridge: \"%s\" is not a bridge", cfg->bridge);
		n->bridge_ifindex = 0;
		return -ENOTSUP;
	}
	return 0;
}

static int resolve_port(struct fo_svcnet *n, const struct fo_svcnet_config *cfg, int i, fo_domid_t domid,
			char *err, size_t errlen)
{
	char name[FO_IFNAME_MAX + 1];

	n->port[i] = 0;
	n->port_domid[i] = domid;
	if (domid == FO_DOMID_INVALID)
		return 0;
	fo_svcnet_vif_name(cfg, domid, name);
	n->port[i] = (int)if_nametoindex(name);
	if (!n->port[i]) {
		snprintf(err, errlen, "network.vif_device: domain %u has no vif %s (vif_device %u)", (unsigned)domid,
			 name, cfg->vif_device);
		return -ENODEV;
	}
	return check_port(cfg, name, err, errlen);
}

/* The batch that hands the identity from member `from` to the other. */
static void build_batch(struct fo_svcnet *n, const struct fo_svcnet_config *cfg, int from)
{
	int to = !from;
	size_t off = 0;

	n->batch_ok[from] = n->port[to] != 0;
	if (!n->batch_ok[from]) {
		n->batch_len[from] = 0;
		return;
	}
	if (n->port[from])
		off = put_port_state(n->batch[from], off, n->port[from], BR_STATE_DISABLED);
	off = put_port_state(n->batch[from], off, n->port[to], BR_STATE_FORWARDING);
	off = put_fdb(n->batch[from], off, n->port[to], cfg->mac);
	n->batch_len[from] = off;
}

/* The steps of a batch built by build_batch, in order. */
static void batch_steps(const struct fo_svcnet *n, int from, uint8_t steps[3])
{
	int k = 0;

	if (n->port[from])
		steps[k++] = FO_SVCNET_STEP_OLD_DOWN;
	steps[k++] = FO_SVCNET_STEP_NEW_UP;
	steps[k] = FO_SVCNET_STEP_FDB;
}

static int announce(struct fo_svcnet_sockets *s, const struct fo_svcnet *n, const struct fo_svcnet_config *cfg)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = n->bridge_ifindex, .sll_halen = 6 };
	int r = 0;

	if (cfg->has_ipv4) {
		to.sll_protocol = htons(ETH_P_ARP);
		memcpy(to.sll_addr, n->garp, 6);
		if (sendto(s->pkt_fd, n->garp, sizeof(n->garp), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
			r = -errno;
	}
	if (cfg->has_ipv6) {
		to.sll_protocol = htons(ETH_P_IPV6);
		memcpy(to.sll_addr, n->na, 6);
		if (sendto(s->pkt_fd, n->na, sizeof(n->na), 0, (struct sockaddr *)&to, sizeof(to)) < 0 && !r)
			r = -errno;
	}
	return r;
}

/* Is the device `name` up (IFF_UP)? 1, 0, or -errno (-ENODEV: none). */
static int link_up_by_name(struct fo_svcnet_sockets *s, const char *name)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(s->ioctl_fd, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	return (ifr.ifr_flags & IFF_UP) ? 1 : 0;
}

/* The same for a device known by its index. */
static int link_admin_up(struct fo_svcnet_sockets *s, int ifindex)
{
	char name[IF_NAMESIZE];

	if (!if_indextoname((unsigned)ifindex, name))
		return -errno;
	return link_up_by_name(s, name);
}

/* A number from /sys/class/net/DEV/LEAF (a counter, a port state): 0 and
 * *ret, or -errno. */
static int sysfs_net_number(const char *dev, const char *leaf, long long *ret)
{
	char path[96], text[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", dev, leaf);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	text[n] = '\0';
	return sscanf(text, "%lld", ret) == 1 ? 0 : -EIO;
}

int fo_svcnet_enforce(struct fo_svcnet_sockets *s, struct fo_svcnet *n, const struct fo_svcnet_config *cfg,
		      const fo_domid_t domid[2], int active, bool other_failed, char *err, size_t errlen)
{
	uint8_t buf[256] __attribute__((aligned(4)));
	enum fo_svcnet_step step;
	uint8_t steps[8];
	size_t off = 0;
	int k = 0, r;

	r = fo_svcnet_sockets_open(s, err, errlen);
	if (r < 0)
		return r;
	r = resolve_bridge(n, cfg, err, errlen);
	if (r < 0)
		return r;
	for (int i = 0; i < 2; i++) {
		r = resolve_port(n, cfg, i, domid[i], err, errlen);
		if (r < 0)
			return r;
	}
	if (!n->port[active]) {
		snprintf(err, errlen, "network: the active member has no domain, so no vif to put the service on");
		return -ENODEV;
	}
	fo_svcnet_build_garp(n->garp, cfg->mac, cfg->ipv4);
	fo_svcnet_build_na(n->na, cfg->mac, cfg->ipv6);
	build_batch(n, cfg, 0);
	build_batch(n, cfg, 1);
	/* The bridge as the roles say. The other member first: a failed one's
	 * vif down (no carrier event can make its port forward again), a
	 * standby's port disabled with its vif up, so that a switch to it is
	 * one synchronous port-state change. */
	n->raised_link = false;
	if (n->port[!active]) {
		if (other_failed) {
			off = put_link_flags(buf, off, n->port[!active], false);
			steps[k++] = FO_SVCNET_STEP_OLD_DOWN;
		} else {
			if (link_admin_up(s, n->port[!active]) == 0) {
				off = put_link_flags(buf, off, n->port[!active], true);
				steps[k++] = FO_SVCNET_STEP_OLD_DOWN;
				n->raised_link = true;
			}
			off = put_port_state(buf, off, n->port[!active], BR_STATE_DISABLED);
			steps[k++] = FO_SVCNET_STEP_OLD_DOWN;
		}
	}
	if (link_admin_up(s, n->port[active]) == 0) {
		off = put_link_flags(buf, off, n->port[active], true);
		steps[k++] = FO_SVCNET_STEP_NEW_UP;
	}
	off = put_port_state(buf, off, n->port[active], BR_STATE_FORWARDING);
	steps[k++] = FO_SVCNET_STEP_NEW_UP;
	off = put_fdb(buf, off, n->port[active], cfg->mac);
	steps[k++] = FO_SVCNET_STEP_FDB;
	r = send_batch(s, buf, off, steps, FO_SVCNET_STEP_NONE, &step);
	if (r < 0) {
		snprintf(err, errlen, "network: could not %s: %s", fo_svcnet_step_name(step), strerror(-r));
		return r;
	}
	return 0;
}

int fo_svcnet_move(struct fo_svcnet_sockets *s, struct fo_svcnet *n, int from, enum fo_svcnet_step *ret_step)
{
	uint8_t steps[3];

	*ret_step = FO_SVCNET_STEP_NONE;
	if (!n->batch_ok[from]) {
		*ret_step = FO_SVCNET_STEP_NEW_UP;
		return -ENODEV;
	}
	batch_steps(n, from, steps);
	/* The old active's vif gone with its domain is cut off already. */
	return send_batch(s, n->batch[from], n->batch_len[from], steps, FO_SVCNET_STEP_OLD_DOWN, ret_step);
}

int fo_svcnet_announce(struct fo_svcnet_sockets *s, struct fo_svcnet *n, const struct fo_svcnet_config *cfg,
		       uint64_t now_ns)
{
	n->announce_left = cfg->announce_count > 1 ? cfg->announce_count - 1 : 0;
	n->announce_next_ns = now_ns + cfg->announce_interval_ms * MS_NS;
	return announce(s, n, cfg);
}

int fo_svcnet_cut(struct fo_svcnet_sockets *s, const struct fo_svcnet_config *cfg, fo_domid_t domid, bool failed,
		  char *err, size_t errlen)
{
	char name[FO_IFNAME_MAX + 1];
	uint8_t buf[64] __attribute__((aligned(4)));
	uint8_t steps[1] = { FO_SVCNET_STEP_OLD_DOWN };
	enum fo_svcnet_step step;
	int ifindex, r;

	r = fo_svcnet_sockets_open(s, err, errlen);
	if (r < 0)
		return r;
	fo_svcnet_vif_name(cfg, domid, name);
	ifindex = (int)if_nametoindex(name);
	if (!ifindex)
		return -ENODEV;
	/* A failed member's vif down; a standby's port disabled (its vif
	 * stays up, ready to forward at a switch). A vif that is down is cut
	 * off already. */
	if (failed)
		r = send_batch(s, buf, put_link_flags(buf, 0, ifindex, false), steps, FO_SVCNET_STEP_NONE, &step);
	else if (link_up_by_name(s, name) == 1)
		r = send_batch(s, buf, put_port_state(buf, 0, ifindex, BR_STATE_DISABLED), steps, FO_SVCNET_STEP_NONE,
			       &step);
	else
		r = 0;
	if (r < 0)
		snprintf(err, errlen, "network: could not cut %s off: %s", name, strerror(-r));
	return r;
}

int fo_svcnet_port_state(struct fo_svcnet_sockets *s, const struct fo_svcnet_config *cfg, fo_domid_t domid,
			 bool *ret_up, bool *ret_forwarding)
{
	char name[FO_IFNAME_MAX + 1];
	long long st;
	int up, r;

	if (s->ioctl_fd <= 0)
		return -EBADF;
	fo_svcnet_vif_name(cfg, domid, name);
	up = link_up_by_name(s, name);
	if (up < 0)
		return up;
	*ret_up = up;
	*ret_forwarding = false;
	if (!up)
		return 0;
	r = sysfs_net_number(name, "brport/state", &st);
	if (r == -ENOENT)
		return 0; /* no longer a bridge port: nothing it sends reaches the bridge */
	if (r < 0)
		return r;
	*ret_forwarding = st == BR_STATE_FORWARDING || st == BR_STATE_LEARNING;
	return 0;
}

/* Delete one learnt FDB entry (MAC on port). */
static int fdb_delete(struct fo_svcnet_sockets *s, int port, const uint8_t mac[6])
{
	uint8_t buf[64] __attribute__((aligned(4)));
	uint8_t steps[1] = { FO_SVCNET_STEP_FDB };
	enum fo_svcnet_step step;
	size_t len = put_fdb(buf, 0, port, mac);

	((struct nlmsghdr *)buf)->nlmsg_type = RTM_DELNEIGH;
	((struct nlmsghdr *)buf)->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	return send_batch(s, buf, len, steps, FO_SVCNET_STEP_NONE, &step);
}

/* A learnt (not permanent, not static) bridge FDB entry in `h` on some
 * port: 1 with its port and MAC, else 0. */
static int learnt_entry(const struct nlmsghdr *h, int *ret_port, uint8_t ret_mac[6])
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	const struct rtattr *a;
	int alen;

	if (h->nlmsg_type != RTM_NEWNEIGH || h->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)) ||
	    nd->ndm_family != AF_BRIDGE || (nd->ndm_state & (NUD_PERMANENT | NUD_NOARP)))
		return 0;
	alen = (int)NLMSG_PAYLOAD(h, sizeof(*nd));
	for (a = (const struct rtattr *)((const uint8_t *)nd + NLMSG_ALIGN(sizeof(*nd))); RTA_OK(a, alen);
	     a = RTA_NEXT(a, alen))
		if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6) {
			memcpy(ret_mac, RTA_DATA(a), 6);
			*ret_port = nd->ndm_ifindex;
			return 1;
		}
	return 0;
}

int fo_svcnet_foreign_mac(struct fo_svcnet_sockets *s, const struct fo_svcnet *n, const struct fo_svcnet_config *cfg,
			  int i, uint8_t ret_mac[6])
{
	/* The loop's thread only: one buffer for the dump's parts. */
	static uint8_t reply[32768] __attribute__((aligned(4)));
	/* The port's entries only, filtered by the kernel: an ifinfomsg with
	 * the port's index and the bridge as IFLA_MASTER (the form `bridge fdb
	 * show brport PORT` sends), so the reply holds that port's entries,
	 * not the whole bridge's. */
	struct {
		struct nlmsghdr h;
		struct ifinfomsg ifi;
		struct rtattr master;
		uint32_t master_index;
	} req = { .h = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETNEIGH,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		  .ifi = { .ifi_family = AF_BRIDGE, .ifi_index = n->port[i] },
		  .master = { .rta_len = RTA_LENGTH(sizeof(uint32_t)), .rta_type = IFLA_MASTER },
		  .master_index = (uint32_t)n->bridge_ifindex };
	int port = n->port[i], found = 0;

	if (!port || s->nl_fd <= 0)
		return 0;
	s->fdb_dumps++;
	req.h.nlmsg_seq = (++s->seq & 0xffff) << 16;
	if (nl_send(s, &req, sizeof(req)) < 0)
		return -errno;
	for (;;) {
		ssize_t r = nl_recv(s, reply, sizeof(reply));
		size_t left;

		if (r < 0)
			return (int)r;
		left = (size_t)r;
		for (struct nlmsghdr *h = (struct nlmsghdr *)reply; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			uint8_t mac[6];
			int on;

			if (h->nlmsg_seq != req.h.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				goto done;
			if (!found && learnt_entry(h, &on, mac) && on == port && memcmp(mac, cfg->mac, 6) != 0) {
				memcpy(ret_mac, mac, 6);
				found = 1;
			}
		}
	}
done:
	if (found)
		fdb_delete(s, port, ret_mac);
	return found;
}

int fo_svcnet_news(struct fo_svcnet_sockets *s, unsigned max, fo_svcnet_news_fn fn, void *ctx)
{
	/* The loop's thread only. */
	static uint8_t buf[8192] __attribute__((aligned(4)));
	int n = 0;

	if (s->fdb_fd <= 0)
		return 0;
	for (;;) {
		ssize_t r;
		size_t left;

		if ((unsigned)n == max)
			return -ENOBUFS; /* more may wait: a burst the caller looks past */
		r = recv(s->fdb_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno; /* ENOBUFS: changes were lost */
		}
		n++;
		left = (size_t)r;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			uint8_t mac[6];
			int port;

			if (learnt_entry(h, &port, mac))
				fn(ctx, port, mac);
			else if ((h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK) &&
				 h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg)))
				fn(ctx, ((const struct ifinfomsg *)NLMSG_DATA(h))->ifi_index, NULL);
		}
	}
	return n;
}

int fo_svcnet_verify(const struct fo_svcnet *n, const struct fo_svcnet_config *cfg, fo_domid_t active,
		     char *err, size_t errlen)
{
	char name[FO_IFNAME_MAX + 1];
	int ifindex = (int)if_nametoindex(cfg->bridge);

	if (ifindex != n->bridge_ifindex) {
		snprintf(err, errlen, ifindex ? "network.bridge: bridge \"%s\" was replaced (ifindex %d, was %d)"
					      : "network.bridge: bridge \"%s\" is gone from dom0",
			 cfg->bridge, ifindex, n->bridge_ifindex);
		return -ENODEV;
	}
	fo_svcnet_vif_name(cfg, active, name);
	if (!if_nametoindex(name)) {
		snprintf(err, errlen, "network.vif_device: the active (domain %u) has no vif %s", (unsigned)active, name);
		return -ENODEV;
	}
	return check_port(cfg, name, err, errlen);
}

int64_t fo_svcnet_frames_from(const struct fo_svcnet_config *cfg, fo_domid_t domid)
{
	char name[FO_IFNAME_MAX + 1];
	long long v;
	int r;

	fo_svcnet_vif_name(cfg, domid, name);
	r = sysfs_net_number(name, "statistics/rx_packets", &v);
	if (r < 0)
		return r;
	return v < 0 ? -EIO : v;
}

int fo_svcnet_announce_due(struct fo_svcnet_sockets *s, struct fo_svcnet *n, const struct fo_svcnet_config *cfg,
			   uint64_t now_ns, uint64_t *ret_next_ns)
{
	int sent = 0;

	if (n->announce_left && now_ns >= n->announce_next_ns) {
		if (announce(s, n, cfg) == 0)
			sent = 1;
		n->announce_left--;
		n->announce_next_ns = now_ns + cfg->announce_interval_ms * MS_NS;
	}
	*ret_next_ns = n->announce_left ? n->announce_next_ns : 0;
	return sent;
}
