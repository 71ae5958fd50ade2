/* SPDX-License-Identifier: MIT */
/*
 * service_net.h - the service's network identity: one MAC (and address)
 * for clients, always on the pair's active member's bridge port.
 *
 * Each member has a vif (`vif<domid>.<device>`) on a dom0 bridge, both with
 * the service MAC. The I/O fence is the bridge port: only the active's
 * port forwards. The standby's port is disabled (its vif stays up, so that
 * a switch is one synchronous port-state change: a link set up forwards
 * only once linkwatch has seen it oper-up, up to a second later); the
 * bridge forwards nothing to a disabled port and drops what arrives on
 * it, so a fenced member that someone unpauses cannot reach the service
 * network, and no stale frames queue for a paused standby. A failed
 * member's vif is also set down, so that no carrier event (a netfront
 * reconnecting) makes the kernel enable its port again; the audit puts
 * back any port it finds forwarding.
 *
 * A switch moves the identity in one netlink batch, built when the roles
 * were set: the old active's port disabled, the new active's forwarding,
 * the bridge's FDB entry of the service MAC onto the new port. It runs
 * between the fence and the unpause (the fenced sequence's `fenced` hook,
 * kmod-switch/fenced_sequence.h): at the unpause nothing more reaches the
 * fenced member and the new active's first frames already flow, so no
 * stale frame ever waits for a paused member. It costs the deadline one
 * sendmsg() and its acks (tens of microseconds natively), and the rtnl
 * lock, which an `ip` command or a device event in dom0 may hold for that
 * long. Then, after the unpause, a gratuitous ARP and an unsolicited
 * neighbour advertisement from dom0 on the bridge (prebuilt frames), so
 * that any guest OS works. When the kernel module's fast path runs the
 * whole sequence in one ioctl, or the module or Xen switch without
 * failoverd, the batch follows when failoverd learns of the switch (the
 * event's service_moved phase says when).
 *
 * No allocation and no logging in fo_svcnet_move() and
 * fo_svcnet_announce(): one sendmsg() of the prebuilt batch, its acks read
 * into a fixed buffer, two sendto()s.
 * Everything else (opening, resolving the ports, checks) happens when the
 * roles are set, off the real-time path.
 */
#ifndef FO_SERVICE_NET_H
#define FO_SERVICE_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/domid.h"

#define FO_IFNAME_MAX 15 /* IFNAMSIZ - 1 */

/* pairs[].network (configuration, validated by core/config/pairs.c). */
struct fo_svcnet_config {
	bool enabled;
	char bridge[FO_IFNAME_MAX + 1];
	unsigned vif_device;      /* the member's vif is vif<domid>.<vif_device>; default 0 */
	uint8_t mac[6];           /* the service MAC, both members' vif */
	bool has_ipv4, has_ipv6;  /* announce this address (gratuitous ARP / unsolicited NA) */
	uint8_t ipv4[4];
	uint8_t ipv6[16];
	unsigned announce_count;  /* announcements after a switch (first one at once); default 3 */
	unsigned announce_interval_ms; /* between the later ones; default 100 */
	unsigned flood_pps;       /* the active sending more frames a second floods the bridge; 0 = not checked */
};

/* The sockets all pairs share (one per daemon): a NETLINK_ROUTE socket for
 * the ports and the FDB, a packet socket for the announcements. */
struct fo_svcnet_sockets {
	int nl_fd;
	int pkt_fd;
	int ioctl_fd;  /* SIOCGIFFLAGS for the audit */
	int fdb_fd;    /* the bridges' FDB changes (RTNLGRP_NEIGH), non-blocking */
	uint32_t seq;
	unsigned long fdb_dumps; /* FDB dumps made (fo_svcnet_foreign_mac), for the tests */
};

/* One batch: the netlink messages of a move, back to back. */
#define FO_SVCNET_BATCH_MAX 160

/* Steps of a move, for the error's text (fo_svcnet_step_name). */
enum fo_svcnet_step {
	FO_SVCNET_STEP_NONE = 0,
	FO_SVCNET_STEP_OLD_DOWN,   /* the old active's vif down */
	FO_SVCNET_STEP_NEW_UP,     /* the new active's vif up */
	FO_SVCNET_STEP_FDB,        /* the service MAC onto the new port */
	FO_SVCNET_STEP_ANNOUNCE,   /* gratuitous ARP / unsolicited NA */
	FO_SVCNET_STEP_SEND,       /* the batch could not be sent or its acks read */
};

/* One pair's identity: plain data (pairs are copied at reload), no fds. */
struct fo_svcnet {
	int bridge_ifindex;
	int port[2];                /* ifindex of member i's vif; 0 = not resolved */
	fo_domid_t port_domid[2];   /* the domid it was resolved for */
	/* The batch that moves the identity from member i to the other one. */
	uint8_t batch[2][FO_SVCNET_BATCH_MAX];
	size_t batch_len[2];
	bool batch_ok[2];
	uint8_t garp[42];
	uint8_t na[86];
	/* The last enforce set a vif up: the kernel enables its port once
	 * linkwatch sees it oper-up (up to a second later), and a standby's
	 * port must then be disabled again (the audit, without alarm). */
	bool raised_link;
	/* Announcements still to send after a move (fo_svcnet_announce_due). */
	unsigned announce_left;
	uint64_t announce_next_ns;
};

const char *fo_svcnet_step_name(enum fo_svcnet_step s);

/* Open the shared sockets once (idempotent). 0 or -errno with a message. */
int fo_svcnet_sockets_open(struct fo_svcnet_sockets *s, char *err, size_t errlen);
void fo_svcnet_sockets_close(struct fo_svcnet_sockets *s);

/* The vif name of a member: vif<domid>.<device>. */
void fo_svcnet_vif_name(const struct fo_svcnet_config *cfg, fo_domid_t domid, char out[FO_IFNAME_MAX + 1]);

/*
 * Off the real-time path. Resolve the bridge and both members' ports
 * (domid FO_DOMID_INVALID: that member has none, e.g. it is gone), check
 * each is a port of the bridge, build the announcement frames and both
 * move batches, and make the bridge say so: member `active`'s port
 * forwarding with the service MAC's FDB entry on it, the other cut off
 * (its vif down when `other_failed`, else its port disabled). A member whose
 * domid is invalid is skipped. Returns 0, or -errno with a message naming
 * the configuration key (network.bridge, network.vif_device).
 */
int fo_svcnet_enforce(struct fo_svcnet_sockets *s, struct fo_svcnet *n, const struct fo_svcnet_config *cfg,
		      const fo_domid_t domid[2], int active, bool other_failed, char *err, size_t errlen);

/*
 * The real-time move from member `from` to the other: the prebuilt batch.
 * 0, or -errno with *ret_step the first step that failed (the others were
 * still tried). No allocation, no logging.
 */
int fo_svcnet_move(struct fo_svcnet_sockets *s, struct fo_svcnet *n, int from, enum fo_svcnet_step *ret_step);

/* The first announcement now (gratuitous ARP, unsolicited NA: the
 * prebuilt frames), the others scheduled (fo_svcnet_announce_due). 0 or
 * -errno. No allocation, no logging. */
int fo_svcnet_announce(struct fo_svcnet_sockets *s, struct fo_svcnet *n, const struct fo_svcnet_config *cfg,
		       uint64_t now_ns);

/* Cut one member off: a failed one's vif down, a standby's port disabled
 * (its vif up, ready for a switch). -ENODEV when it has no vif (gone). */
int fo_svcnet_cut(struct fo_svcnet_sockets *s, const struct fo_svcnet_config *cfg, fo_domid_t domid, bool failed,
		  char *err, size_t errlen);

/* The audit: member `domid`'s vif is up (*ret_up) and its bridge port
 * passes frames (*ret_forwarding: forwarding or learning). 0, or -ENODEV
 * when it has no vif. */
int fo_svcnet_port_state(struct fo_svcnet_sockets *s, const struct fo_svcnet_config *cfg, fo_domid_t domid,
			 bool *ret_up, bool *ret_forwarding);

/*
 * A MAC other than the service MAC that the bridge learnt on member i's
 * port: the guest sends from another MAC (it changed its address), so
 * clients' frames to the service MAC no longer reach its stack. 1 with
 * *ret_mac (and that FDB entry deleted, so that a guest that went back is
 * seen at the next look), 0 if none, -errno. A dump of the port's FDB
 * entries (filtered by the kernel): at arm time and while the pair is
 * DEGRADED; an armed pair learns of a foreign MAC from fo_svcnet_news.
 */
int fo_svcnet_foreign_mac(struct fo_svcnet_sockets *s, const struct fo_svcnet *n, const struct fo_svcnet_config *cfg,
			  int i, uint8_t ret_mac[6]);

/*
 * The bridges' news since the last call (their change notifications, read
 * without waiting): fn(ctx, port ifindex, MAC) for each FDB entry learnt,
 * on any bridge; fn(ctx, ifindex, NULL) for each link changed or deleted
 * (a bridge, a port). At most `max` reads. Returns the reads made, or
 * -ENOBUFS when news was lost (a burst overflowed the socket) or more
 * waits than `max` reads: the caller then looks for itself
 * (fo_svcnet_foreign_mac, fo_svcnet_verify), which sees things as they are.
 */
typedef void (*fo_svcnet_news_fn)(void *ctx, int ifindex, const uint8_t *mac);
int fo_svcnet_news(struct fo_svcnet_sockets *s, unsigned max, fo_svcnet_news_fn fn, void *ctx);

/*
 * A look without changing anything: the bridge is still the one the roles
 * were set on (same ifindex) and the active's vif still one of its ports.
 * 0, or -errno with a message naming the key (network.bridge,
 * network.vif_device).
 */
int fo_svcnet_verify(const struct fo_svcnet *n, const struct fo_svcnet_config *cfg, fo_domid_t active,
		     char *err, size_t errlen);

/* Frames the member's vif received from its guest so far (its rx_packets),
 * or -errno. */
int64_t fo_svcnet_frames_from(const struct fo_svcnet_config *cfg, fo_domid_t domid);

/* Send the announcements due at `now_ns` (the later ones of a move).
 * Returns the number sent; *ret_next_ns the next due time (0: none left). */
int fo_svcnet_announce_due(struct fo_svcnet_sockets *s, struct fo_svcnet *n, const struct fo_svcnet_config *cfg,
			   uint64_t now_ns, uint64_t *ret_next_ns);

/* Frames (frames.c): exposed for the unit tests. */
void fo_svcnet_build_garp(uint8_t frame[42], const uint8_t mac[6], const uint8_t ipv4[4]);
void fo_svcnet_build_na(uint8_t frame[86], const uint8_t mac[6], const uint8_t ipv6[16]);

#endif
