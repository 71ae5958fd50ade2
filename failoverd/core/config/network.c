/* SPDX-License-Identifier: MIT */
/*
 * network.c - pairs[].network: the service's network identity (one MAC,
 * optionally its addresses, on a dom0 bridge; net/service_net.h). What can
 * be checked without the system is checked here; that the bridge and the
 * vifs exist and the members' MACs agree is checked when the pair arms.
 */
#include "core/config/config_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

/* Linux's dev_valid_name(): 1..15 bytes, not "." or "..", no '/', ':' or
 * whitespace. */
static int check_ifname(struct parser *p, const char *kp, const char *s)
{
	char sbuf[FO_SHOWN_BUF];
	size_t len = strlen(s);

	if (len == 0 || len > FO_IFNAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return fo_config_fail(p, kp, "must be a network device name of 1 to %d bytes, got \"%s\"", FO_IFNAME_MAX,
				      fo_config_shown(s, sbuf));
	for (const char *c = s; *c; c++)
		if (*c == '/' || *c == ':' || fo_config_is_space(*c) || (unsigned char)*c < 0x20 || *c == 0x7f)
			return fo_config_fail(p, kp, "a network device name has no '/', ':', whitespace or control characters, got \"%s\"",
					      fo_config_shown(s, sbuf));
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "00:16:3e:f0:00:01": six hex octets; a unicast address (the members'
 * vif MAC), not all zeros. */
static int parse_mac(struct parser *p, const char *kp, const char *s, uint8_t mac[6])
{
	char sbuf[FO_SHOWN_BUF];

	if (strlen(s) != 17)
		goto bad;
	for (int i = 0; i < 6; i++) {
		int hi = hexval(s[3 * i]), lo = hexval(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			goto bad;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	if (mac[0] & 1)
		return fo_config_fail(p, kp, "must be a unicast MAC (the members' vif MAC), got the multicast \"%s\"",
				      fo_config_shown(s, sbuf));
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return fo_config_fail(p, kp, "must not be 00:00:00:00:00:00");
	return 0;
bad:
	return fo_config_fail(p, kp, "must be a MAC address like \"00:16:3e:00:00:01\", got \"%s\"", fo_config_shown(s, sbuf));
}

/* An optional address: 1 if present, 0 if absent, < 0 on error. */
static int read_addr(struct parser *p, const cJSON *obj, const char *kp, const char *key, int af, void *ret)
{
	char mkp[KEYPATH_MAX], sbuf[FO_SHOWN_BUF];
	const char *s = NULL;
	int rc = fo_config_read_string(p, obj, kp, key, &s);

	if (rc <= 0)
		return rc;
	fo_config_keypath_join(mkp, kp, key);
	if (inet_pton(af, s, ret) != 1)
		return fo_config_fail(p, mkp, "must be one %s address without a prefix length, got \"%s\"",
				      af == AF_INET ? "IPv4" : "IPv6", fo_config_shown(s, sbuf));
	return 1;
}

int fo_config_parse_network(struct parser *p, const cJSON *obj, const char *kp, struct fo_svcnet_config *n)
{
	const char *const *keys = fo_config_keys(CFG_NETWORK);
	char mkp[KEYPATH_MAX];
	const char *s = NULL;
	long v;
	int rc;

	memset(n, 0, sizeof(*n));
	rc = fo_config_check_object(p, obj, kp, keys);
	if (rc == 0)
		rc = fo_config_require(p, obj, kp, "bridge");
	if (rc == 0)
		rc = fo_config_require(p, obj, kp, "mac");
	if (rc < 0)
		return rc;

	rc = fo_config_read_string(p, obj, kp, "bridge", &s);
	if (rc < 0)
		return rc;
	fo_config_keypath_join(mkp, kp, "bridge");
	rc = check_ifname(p, mkp, s);
	if (rc < 0)
		return rc;
	snprintf(n->bridge, sizeof(n->bridge), "%s", s);

	rc = fo_config_read_string(p, obj, kp, "mac", &s);
	if (rc < 0)
		return rc;
	fo_config_keypath_join(mkp, kp, "mac");
	rc = parse_mac(p, mkp, s, n->mac);
	if (rc < 0)
		return rc;

	/* vif<domid>.<device> must fit a device name: domids are < 32752. */
	rc = fo_config_read_int(p, obj, kp, "vif_device", 0, 999, &v);
	if (rc < 0)
		return rc;
	n->vif_device = rc > 0 ? (unsigned)v : 0;

	rc = read_addr(p, obj, kp, "ipv4", AF_INET, n->ipv4);
	if (rc < 0)
		return rc;
	n->has_ipv4 = rc > 0;
	rc = read_addr(p, obj, kp, "ipv6", AF_INET6, n->ipv6);
	if (rc < 0)
		return rc;
	n->has_ipv6 = rc > 0;

	rc = fo_config_read_int(p, obj, kp, "announce_count", 1, 20, &v);
	if (rc < 0)
		return rc;
	n->announce_count = rc > 0 ? (unsigned)v : 3;
	rc = fo_config_read_int(p, obj, kp, "announce_interval_ms", 10, 10000, &v);
	if (rc < 0)
		return rc;
	n->announce_interval_ms = rc > 0 ? (unsigned)v : 100;
	/* A control function's I/O is hundreds of frames a second, a busy
	 * one thousands: 100000 is a runaway guest, not a workload. */
	rc = fo_config_read_int(p, obj, kp, "flood_pps", 0, 100000000, &v);
	if (rc < 0)
		return rc;
	n->flood_pps = rc > 0 ? (unsigned)v : 100000;
	n->enabled = true;
	return 0;
}

/* Two pairs cannot both own one service MAC on one bridge: each would cut
 * the other's member off. */
int fo_config_check_network_against(struct parser *p, const struct fo_pair_config *pc, const struct fo_pair_config *q,
				    size_t j, const char *kp)
{
	char mkp[KEYPATH_MAX];

	if (!pc->net.enabled || !q->net.enabled || strcmp(pc->net.bridge, q->net.bridge) != 0 ||
	    memcmp(pc->net.mac, q->net.mac, 6) != 0)
		return 0;
	fo_config_keypath_join(mkp, kp, "network.mac");
	return fo_config_fail(p, mkp, "pair \"%s\" (pairs[%zu]) has the same service MAC on bridge %s", q->name, j,
			      pc->net.bridge);
}
