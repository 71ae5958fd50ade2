/* SPDX-License-Identifier: MIT */
/*
 * frames.c - the announcement frames, built once when the roles are set
 * and sent as they are after a switch: a gratuitous ARP (RFC 5227's
 * ARP announcement: a request whose sender and target address are the
 * service address) and an unsolicited neighbour advertisement (RFC 4861
 * 7.2.6: to all-nodes, Override set, the target link-layer address
 * option), both from the service MAC.
 */
#include "net/service_net.h"

#include <string.h>

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void eth_header(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], unsigned type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, type);
}

void fo_svcnet_build_garp(uint8_t f[42], const uint8_t mac[6], const uint8_t ipv4[4])
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t *a = f + 14;

	memset(f, 0, 42);
	eth_header(f, bcast, mac, 0x0806);
	put16(a, 1);          /* Ethernet */
	put16(a + 2, 0x0800); /* IPv4 */
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, 1);      /* request: what Linux and keepalived send */
	memcpy(a + 8, mac, 6);
	memcpy(a + 14, ipv4, 4);
	/* target hardware address stays zero */
	memcpy(a + 24, ipv4, 4);
}

/* The Internet checksum of ICMPv6 over its pseudo-header (RFC 8200 8.1). */
static unsigned icmp6_checksum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *msg, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i < 16; i += 2)
		sum += (uint32_t)(src[i] << 8 | src[i + 1]) + (uint32_t)(dst[i] << 8 | dst[i + 1]);
	sum += (uint32_t)len;
	sum += 58; /* next header: ICMPv6 */
	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(msg[i] << 8 | msg[i + 1]);
	if (len & 1)
		sum += (uint32_t)msg[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

void fo_svcnet_build_na(uint8_t f[86], const uint8_t mac[6], const uint8_t ipv6[16])
{
	static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
	uint8_t *ip = f + 14, *icmp = f + 54;

	memset(f, 0, 86);
	eth_header(f, all_nodes_mac, mac, 0x86dd);
	ip[0] = 0x60;        /* version 6 */
	put16(ip + 4, 32);   /* payload: the advertisement with one option */
	ip[6] = 58;          /* ICMPv6 */
	ip[7] = 255;         /* hop limit: receivers drop any other */
	memcpy(ip + 8, ipv6, 16);
	memcpy(ip + 24, all_nodes, 16);
	icmp[0] = 136;       /* neighbour advertisement */
	icmp[4] = 0x20;      /* Override; not Solicited, not Router */
	memcpy(icmp + 8, ipv6, 16);
	icmp[24] = 2;        /* target link-layer address */
	icmp[25] = 1;        /* in units of 8 bytes */
	memcpy(icmp + 26, mac, 6);
	put16(icmp + 2, icmp6_checksum(ipv6, all_nodes, icmp, 32));
}
