// SPDX-License-Identifier: MIT
// netproto.h: the lab's service protocol between fo-netclient (dom0, in the
// client's network namespace) and fo-netecho (each member domU). Text, one
// message per UDP datagram or per TCP line:
//   request  "FOQ <seq>"            seq: decimal, 1-20 digits, < 2^64;
//                                   anything after a space is ignored
//   reply    "FOR <seq> <id>\n"     id: the member's name (fo.netid)
//   refusal  "FOE <id> bad-request\n" (TCP only, for a line that is no request)
#ifndef FO_LAB_NETPROTO_H
#define FO_LAB_NETPROTO_H

#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define NETPROTO_UDP_PORT 7070
#define NETPROTO_TCP_PORT 7071
#define NETPROTO_ID_MAX 32
#define NETPROTO_DGRAM_MAX 512
#define NETPROTO_REPLY_MAX (4 + 20 + 1 + NETPROTO_ID_MAX + 2)

static inline int netproto_id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
	       c == '_' || c == '-';
}

// 0 when s is 1..NETPROTO_ID_MAX characters of [A-Za-z0-9._-].
static inline int netproto_valid_id(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= NETPROTO_ID_MAX || !netproto_id_char(s[n]))
			return -1;
	return n > 0 ? 0 : -1;
}

// Decimal digits at p (at most len bytes) into *v; returns how many were
// used, 0 for none or an overflow of 64 bits.
static inline size_t netproto_u64(const char *p, size_t len, uint64_t *v)
{
	size_t i;
	uint64_t x = 0;

	for (i = 0; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
		uint64_t d = (uint64_t)(p[i] - '0');
		if (i >= 20 || x > (UINT64_MAX - d) / 10)
			return 0;
		x = x * 10 + d;
	}
	*v = x;
	return i;
}

// "FOQ <seq>" then the end, a space, CR or LF. 0 and *seq, or -1.
static inline int netproto_parse_request(const char *p, size_t len, uint64_t *seq)
{
	size_t n;

	if (len < 5 || p[0] != 'F' || p[1] != 'O' || p[2] != 'Q' || p[3] != ' ')
		return -1;
	n = netproto_u64(p + 4, len - 4, seq);
	if (n == 0)
		return -1;
	n += 4;
	if (n < len && p[n] != ' ' && p[n] != '\r' && p[n] != '\n')
		return -1;
	return 0;
}

// "FOR <seq> <id>" then the end or a newline. 0 with *seq and id (NUL
// terminated, NETPROTO_ID_MAX + 1 bytes), or -1.
static inline int netproto_parse_reply(const char *p, size_t len, uint64_t *seq, char *id)
{
	size_t n, k = 0;

	if (len < 7 || p[0] != 'F' || p[1] != 'O' || p[2] != 'R' || p[3] != ' ')
		return -1;
	n = netproto_u64(p + 4, len - 4, seq);
	if (n == 0)
		return -1;
	n += 4;
	if (n >= len || p[n] != ' ')
		return -1;
	for (n++; n < len && p[n] != '\n' && p[n] != '\r'; n++) {
		if (k >= NETPROTO_ID_MAX || !netproto_id_char(p[n]))
			return -1;
		id[k++] = p[n];
	}
	id[k] = '\0';
	return k > 0 ? 0 : -1;
}

static inline int netproto_format_reply(char *out, size_t size, uint64_t seq, const char *id)
{
	int n = snprintf(out, size, "FOR %llu %s\n", (unsigned long long)seq, id);

	return n > 0 && (size_t)n < size ? n : -1;
}

/* A command-line number for the lab's network tools: the whole of `s`, in
 * [lo, hi], or a line naming `prog` and the option, and exit 2. */
static inline long net_num_arg(const char *prog, const char *opt, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno || v < lo || v > hi) {
		fprintf(stderr, "%s: %s '%s': a number from %ld to %ld\n", prog, opt, s, lo, hi);
		exit(2);
	}
	return v;
}

#endif
