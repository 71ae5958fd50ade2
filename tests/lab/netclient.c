// SPDX-License-Identifier: MIT
// fo-netclient: the lab's client of a pair's service (issue #39). Run in
// dom0 inside the client's network namespace:
//
//   ip netns exec foclient fo-netclient [--name N] [--addr A | -6] [--period-ms 10]
//       [--udp-port 7070] [--tcp-port 7071] [--no-tcp] [--tcp-timeout-ms 3000]
//       [--duration-ms D] [--out FILE] [--rt PRIO]
//
// Every period it sends one UDP request "FOQ <seq>" to ADDR:7070 (default
// 10.99.0.10; -6: fd99::10) and, on its own connection, one TCP request
// line to ADDR:7071 (netproto.h). A reply is matched to its request by the
// sequence number. It runs until SIGTERM/SIGINT or --duration-ms, waits one
// more period (at least 50 ms) for the last answers, then writes the JSON
// summary to --out (atomically: FILE.tmp, rename) and one line to stdout.
// SIGUSR1 writes the summary so far and goes on (a scenario's peek).
//
// Definitions (the summary's fields are listed in tests/lab/README.md):
// - a request is answered when any reply with its sequence arrived; a reply
//   that arrives after the next request went out is late (answered, and
//   listed in udp.late_replies);
// - an outage is a run of unanswered requests: from the send time of the
//   first unanswered one to that of the first answered one after it (ms
//   and cycles); a run still open at the end is listed with "open": true;
//   requests answered late shorten it, so the longest silence (the longest
//   time between two answers arriving, whatever they answered) is given
//   too;
// - a cycle has two answerers when its request got replies from two
//   different ids, or replies from two ids arrived between its request and
//   the next one; double_answered counts only the first kind (one request,
//   two members answering it: two members serving it at once), where the
//   second also counts a member's last reply, sent before its pause,
//   arriving in the cycle of the next member's first;
// - responders: every change of the UDP responder id, with its
//   CLOCK_MONOTONIC time in microseconds (fo-labtime's clock);
// - TCP: any error (refused, reset, EOF, connect or answer silent for
//   --tcp-timeout-ms, default 3000: longer than TCP's own retransmissions
//   take to meet a new peer's reset) closes the connection and reconnects
//   at once, then every period; each reconnect is timed from the error to
//   connected and to the first answer on the new connection, and from the
//   old connection's last answer to that first answer (the TCP outage);
// - rtt: request sent -> its first answer (median, 99th percentile, max).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "netproto.h"

#define MAX_IDS 16
#define MAX_LISTED 200

struct rec {
	uint64_t t_send_us;
	uint32_t rtt_us; // to the first answer
	int8_t id0, id1; // first and second distinct responder, -1: none
	uint8_t late, two;
};

struct change {
	uint64_t t_us, seq;
	int id;
};

struct reconnect {
	uint64_t t_error_us, t_connected_us, t_answer_us;
	uint64_t t_last_answer_us; // the old connection's last answer
	unsigned attempts;
	int initial; // before the first connection ever succeeded
	char reason[24];
};

enum tcp_state { TCP_DOWN, TCP_CONNECTING, TCP_UP };

static struct {
	// options
	const char *name, *out;
	char addr[64];
	int udp_port, tcp_port, use_tcp, rt_prio;
	long period_ms, tcp_timeout_ms, duration_ms;
	struct sockaddr_storage udp_sa, tcp_sa;
	socklen_t sa_len;
	// responder ids
	char ids[MAX_IDS][NETPROTO_ID_MAX + 1];
	int n_ids;
	unsigned long udp_by_id[MAX_IDS], tcp_by_id[MAX_IDS];
	// UDP
	struct rec *recs;
	uint64_t n_recs, cap_recs;
	unsigned window_mask;
	unsigned long udp_garbage, udp_dups, missed_ticks, unknown_ids;
	// The longest time without any answer arriving (late ones count):
	// the outage as the client lives it.
	uint64_t t_last_reply_us, silence_us, silence_start_us;
	struct change *changes;
	size_t n_changes, cap_changes;
	int last_id;
	// TCP
	int tfd;
	enum tcp_state tstate;
	uint64_t t_connect_start_us, tcp_seq, tcp_sent, tcp_answered, tcp_last_answered, t_oldest_unanswered_us;
	uint64_t t_last_tcp_answer_us;
	unsigned long tcp_connects, tcp_garbage;
	char tbuf[1024];
	size_t tlen;
	struct reconnect *recon;
	size_t n_recon, cap_recon;
	int recon_open; // the last reconnect still waits for its first answer
	uint64_t t_start_us, t_end_us;
} c = {
	.name = "client",
	.udp_port = NETPROTO_UDP_PORT,
	.tcp_port = NETPROTO_TCP_PORT,
	.use_tcp = 1,
	.period_ms = 10,
	.tcp_timeout_ms = 3000,
	.tfd = -1,
	.last_id = -1,
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void *grow(void *p, size_t *cap, size_t size)
{
	size_t n = *cap ? *cap * 2 : 1024;
	void *q = realloc(p, n * size);

	if (!q) {
		fprintf(stderr, "fo-netclient: out of memory\n");
		exit(1);
	}
	*cap = n;
	return q;
}

static int id_index(const char *id)
{
	int i;

	for (i = 0; i < c.n_ids; i++)
		if (!strcmp(c.ids[i], id))
			return i;
	if (c.n_ids == MAX_IDS) {
		c.unknown_ids++;
		return -1;
	}
	snprintf(c.ids[c.n_ids], sizeof(c.ids[0]), "%s", id);
	return c.n_ids++;
}

// ---- UDP ------------------------------------------------------------------

static void udp_send(int ufd)
{
	char msg[32];
	int n;

	// The closing window: replies from two ids between this cycle's
	// request and the next one.
	if (c.n_recs > 0 && __builtin_popcount(c.window_mask) >= 2)
		c.recs[c.n_recs - 1].two = 1;
	c.window_mask = 0;
	if (c.n_recs == c.cap_recs) {
		size_t cap = c.cap_recs;
		c.recs = grow(c.recs, &cap, sizeof(*c.recs));
		c.cap_recs = cap;
	}
	struct rec *r = &c.recs[c.n_recs];
	r->t_send_us = now_us();
	r->id0 = r->id1 = -1;
	r->late = r->two = 0;
	n = snprintf(msg, sizeof(msg), "FOQ %llu", (unsigned long long)c.n_recs);
	c.n_recs++;
	// Errors (ICMP unreachable reported on a connected socket, no
	// route yet) are an unanswered request like any other.
	(void)send(ufd, msg, (size_t)n, MSG_DONTWAIT);
}

static void udp_receive(int ufd)
{
	char buf[NETPROTO_DGRAM_MAX], id[NETPROTO_ID_MAX + 1];
	uint64_t seq, t = now_us();
	ssize_t n;
	int k;

	for (;;) {
		n = recv(ufd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			continue; // ECONNREFUSED etc.: pending error consumed
		}
		if (netproto_parse_reply(buf, (size_t)n, &seq, id) < 0 || seq >= c.n_recs) {
			c.udp_garbage++;
			continue;
		}
		k = id_index(id);
		if (k < 0)
			continue;
		if (c.t_last_reply_us && t - c.t_last_reply_us > c.silence_us) {
			c.silence_us = t - c.t_last_reply_us;
			c.silence_start_us = c.t_last_reply_us;
		}
		c.t_last_reply_us = t;
		struct rec *r = &c.recs[seq];
		c.udp_by_id[k]++;
		c.window_mask |= 1u << k;
		if (r->id0 < 0) {
			// Late: its first answer came after the next request left.
			r->late = seq + 1 < c.n_recs;
			r->rtt_us = (uint32_t)(t - r->t_send_us > UINT32_MAX ? UINT32_MAX : t - r->t_send_us);
			r->id0 = (int8_t)k;
		} else if (r->id0 == k || r->id1 == k) {
			c.udp_dups++;
		} else {
			r->id1 = (int8_t)k;
			r->two = 1;
		}
		if (k != c.last_id) {
			if (c.n_changes == c.cap_changes)
				c.changes = grow(c.changes, &c.cap_changes, sizeof(*c.changes));
			c.changes[c.n_changes++] = (struct change){ .t_us = t, .seq = seq, .id = k };
			fprintf(stderr, "fo-netclient %s: t=%llu us seq %llu answered by %s%s\n", c.name,
				(unsigned long long)t, (unsigned long long)seq, id, r->late ? " (late)" : "");
			c.last_id = k;
		}
	}
}

// ---- TCP ------------------------------------------------------------------

static void tcp_close(const char *reason)
{
	uint64_t t = now_us();

	if (c.tfd >= 0)
		close(c.tfd);
	c.tfd = -1;
	c.tstate = TCP_DOWN;
	c.tlen = 0;
	c.t_oldest_unanswered_us = 0;
	if (c.n_recon == c.cap_recon)
		c.recon = grow(c.recon, &c.cap_recon, sizeof(*c.recon));
	// An error while a reconnect is still open (connect refused again):
	// the same outage, one more attempt.
	if (c.recon_open && c.recon[c.n_recon - 1].t_answer_us == 0) {
		c.recon[c.n_recon - 1].t_connected_us = 0;
		return;
	}
	struct reconnect *r = &c.recon[c.n_recon++];
	memset(r, 0, sizeof(*r));
	r->t_error_us = t;
	r->t_last_answer_us = c.t_last_tcp_answer_us;
	r->initial = c.tcp_connects == 0;
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	c.recon_open = 1;
	fprintf(stderr, "fo-netclient %s: t=%llu us tcp error: %s\n", c.name, (unsigned long long)t, reason);
}

static void tcp_connect(void)
{
	int one = 1;

	c.tfd = socket(c.tcp_sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c.tfd < 0) {
		perror("fo-netclient: socket");
		exit(1);
	}
	setsockopt(c.tfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c.t_connect_start_us = now_us();
	if (c.recon_open)
		c.recon[c.n_recon - 1].attempts++;
	if (connect(c.tfd, (struct sockaddr *)&c.tcp_sa, c.sa_len) == 0) {
		c.tstate = TCP_UP;
	} else if (errno == EINPROGRESS) {
		c.tstate = TCP_CONNECTING;
		return;
	} else {
		tcp_close("connect-failed");
		return;
	}
	c.tcp_connects++;
	if (c.recon_open)
		c.recon[c.n_recon - 1].t_connected_us = now_us();
}

static void tcp_connected(void)
{
	int err = 0;
	socklen_t l = sizeof(err);

	if (getsockopt(c.tfd, SOL_SOCKET, SO_ERROR, &err, &l) < 0 || err != 0) {
		tcp_close(err == ECONNREFUSED ? "connect-refused" : "connect-failed");
		return;
	}
	c.tstate = TCP_UP;
	c.tcp_connects++;
	if (c.recon_open)
		c.recon[c.n_recon - 1].t_connected_us = now_us();
}

static void tcp_tick(void)
{
	char msg[32];
	uint64_t t = now_us();
	int n;

	if (c.tstate == TCP_DOWN) {
		tcp_connect();
		return;
	}
	if (c.tstate == TCP_CONNECTING) {
		if (t - c.t_connect_start_us > (uint64_t)c.tcp_timeout_ms * 1000u)
			tcp_close("connect-timeout");
		return;
	}
	if (c.t_oldest_unanswered_us && t - c.t_oldest_unanswered_us > (uint64_t)c.tcp_timeout_ms * 1000u) {
		tcp_close("answer-timeout");
		return;
	}
	n = snprintf(msg, sizeof(msg), "FOQ %llu\n", (unsigned long long)c.tcp_seq);
	if (send(c.tfd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) != n) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return; // not sent; the answer timeout catches a dead peer
		tcp_close(errno == ECONNRESET ? "reset" : errno == EPIPE ? "broken-pipe" : "send-failed");
		return;
	}
	c.tcp_seq++;
	c.tcp_sent++;
	if (!c.t_oldest_unanswered_us)
		c.t_oldest_unanswered_us = t;
}

static void tcp_receive(void)
{
	char id[NETPROTO_ID_MAX + 1];
	size_t i, start = 0;
	uint64_t seq, t;
	ssize_t n;
	int k;

	n = recv(c.tfd, c.tbuf + c.tlen, sizeof(c.tbuf) - c.tlen, MSG_DONTWAIT);
	if (n == 0) {
		tcp_close("eof");
		return;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		tcp_close(errno == ECONNRESET ? "reset" : errno == ETIMEDOUT ? "timeout" : "recv-failed");
		return;
	}
	c.tlen += (size_t)n;
	t = now_us();
	for (i = 0; i < c.tlen; i++) {
		if (c.tbuf[i] != '\n')
			continue;
		if (netproto_parse_reply(c.tbuf + start, i - start, &seq, id) < 0 || seq >= c.tcp_seq) {
			c.tcp_garbage++;
		} else if ((k = id_index(id)) >= 0) {
			c.tcp_answered++;
			c.tcp_by_id[k]++;
			c.tcp_last_answered = seq;
			c.t_last_tcp_answer_us = t;
			// Everything sent so far is answered (one connection, in order).
			c.t_oldest_unanswered_us = seq + 1 >= c.tcp_seq ? 0 : t;
			if (c.recon_open) {
				c.recon[c.n_recon - 1].t_answer_us = t;
				c.recon_open = 0;
				struct reconnect *r = &c.recon[c.n_recon - 1];
				fprintf(stderr, "fo-netclient %s: tcp back after %llu ms (%s, %u attempts), answered by %s\n",
					c.name, (unsigned long long)((t - r->t_error_us) / 1000), r->reason, r->attempts, id);
			}
		}
		start = i + 1;
	}
	memmove(c.tbuf, c.tbuf + start, c.tlen - start);
	c.tlen -= start;
	if (c.tlen == sizeof(c.tbuf))
		tcp_close("line-too-long");
}

// ---- summary --------------------------------------------------------------

static void json_ids(FILE *f, const unsigned long *by_id)
{
	int i, first = 1;

	fputc('{', f);
	for (i = 0; i < c.n_ids; i++) {
		if (!by_id[i])
			continue;
		fprintf(f, "%s\"%s\":%lu", first ? "" : ",", c.ids[i], by_id[i]);
		first = 0;
	}
	fputc('}', f);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double ms(uint64_t a, uint64_t b)
{
	return b >= a ? (double)(b - a) / 1000.0 : 0.0;
}

static void summary(FILE *f, int final, char *line, size_t line_size)
{
	uint64_t i, answered = 0, late = 0, two = 0, dbl = 0, longest_cycles = 0, run_start = 0, n_out = 0;
	double longest_ms = 0;
	int in_run = 0, first;
	uint64_t t_end = final ? c.t_end_us : now_us();
	char idsum[256] = "";
	size_t il = 0;
	int k;

	fprintf(f, "{\"name\":\"%s\",\"addr\":\"%s\",\"period_ms\":%ld,\"t_start_us\":%llu,\"t_end_us\":%llu,"
		   "\"final\":%s,\"udp\":{",
		c.name, c.addr, c.period_ms, (unsigned long long)c.t_start_us, (unsigned long long)t_end,
		final ? "true" : "false");
	fprintf(f, "\"outages\":[");
	first = 1;
	// A request this recent is still in flight, not unanswered (a peek).
	uint64_t last = c.n_recs;
	while (!final && last > 0 && now_us() - c.recs[last - 1].t_send_us < (uint64_t)c.period_ms * 1000u &&
	       c.recs[last - 1].id0 < 0)
		last--;
	for (i = 0; i <= last; i++) {
		int ans = i < last && c.recs[i].id0 >= 0;
		if (i < last) {
			answered += ans;
			late += c.recs[i].late;
			two += c.recs[i].two;
			dbl += c.recs[i].id1 >= 0;
		}
		if (i < last && !ans && !in_run) {
			in_run = 1;
			run_start = i;
		} else if (in_run && (ans || i == last)) {
			int open = !ans;
			uint64_t t1 = open ? t_end : c.recs[i].t_send_us;
			double d = ms(c.recs[run_start].t_send_us, t1);
			uint64_t cyc = i - run_start;
			if (d > longest_ms)
				longest_ms = d;
			if (cyc > longest_cycles)
				longest_cycles = cyc;
			if (n_out++ < MAX_LISTED) {
				char ans_seq[24] = "null";
				if (!open)
					snprintf(ans_seq, sizeof(ans_seq), "%llu", (unsigned long long)i);
				fprintf(f, "%s{\"first_seq\":%llu,\"answered_seq\":%s,\"cycles\":%llu,\"ms\":%.1f,"
					   "\"t_start_us\":%llu,\"t_end_us\":%llu,\"open\":%s}",
					first ? "" : ",", (unsigned long long)run_start, ans_seq, (unsigned long long)cyc, d,
					(unsigned long long)c.recs[run_start].t_send_us, (unsigned long long)t1,
					open ? "true" : "false");
				first = 0;
			}
			in_run = 0;
		}
	}
	fprintf(f, "],\"n_outages\":%llu,\"sent\":%llu,\"answered\":%llu,\"unanswered\":%llu,\"late\":%llu,"
		   "\"two_answerers\":%llu,\"double_answered\":%llu,\"longest_outage_ms\":%.1f,\"longest_outage_cycles\":%llu,",
		(unsigned long long)n_out, (unsigned long long)last, (unsigned long long)answered,
		(unsigned long long)(last - answered), (unsigned long long)late, (unsigned long long)two,
		(unsigned long long)dbl, longest_ms, (unsigned long long)longest_cycles);
	// Round trips to the first answer: median, 99th percentile, maximum.
	{
		static uint32_t *rt;
		static size_t rt_cap;
		size_t nr = 0, j;
		if (rt_cap < last) {
			uint32_t *q = realloc(rt, last * sizeof(*rt));
			if (q)
				rt = q, rt_cap = last;
		}
		for (j = 0; j < last && j < rt_cap; j++)
			if (c.recs[j].id0 >= 0)
				rt[nr++] = c.recs[j].rtt_us;
		qsort(rt, nr, sizeof(*rt), cmp_u32);
		if (nr)
			fprintf(f, "\"rtt_p50_ms\":%.2f,\"rtt_p99_ms\":%.2f,\"rtt_max_ms\":%.2f,", rt[nr / 2] / 1000.0,
				rt[(nr * 99) / 100] / 1000.0, rt[nr - 1] / 1000.0);
		else
			fprintf(f, "\"rtt_p50_ms\":null,\"rtt_p99_ms\":null,\"rtt_max_ms\":null,");
	}
	fprintf(f, "\"longest_silence_ms\":%.1f,\"longest_silence_start_us\":%llu,", c.silence_us / 1000.0,
		(unsigned long long)c.silence_start_us);
	fprintf(f, "\"by_id\":");
	json_ids(f, c.udp_by_id);
	fprintf(f, ",\"late_replies\":[");
	first = 1;
	for (i = 0, k = 0; i < last && k < MAX_LISTED; i++) {
		if (!c.recs[i].late)
			continue;
		fprintf(f, "%s{\"seq\":%llu,\"id\":\"%s\"}", first ? "" : ",", (unsigned long long)i,
			c.recs[i].id0 >= 0 ? c.ids[(int)c.recs[i].id0] : "");
		first = 0;
		k++;
	}
	fprintf(f, "],\"two_answerer_seqs\":[");
	first = 1;
	for (i = 0, k = 0; i < last && k < MAX_LISTED; i++) {
		if (!c.recs[i].two)
			continue;
		fprintf(f, "%s%llu", first ? "" : ",", (unsigned long long)i);
		first = 0;
		k++;
	}
	fprintf(f, "],\"responders\":[");
	for (i = 0; i < c.n_changes && i < 1000; i++)
		fprintf(f, "%s{\"t_us\":%llu,\"seq\":%llu,\"id\":\"%s\"}", i ? "," : "",
			(unsigned long long)c.changes[i].t_us, (unsigned long long)c.changes[i].seq,
			c.ids[c.changes[i].id]);
	fprintf(f, "],\"n_responder_changes\":%zu,\"garbage\":%lu,\"duplicates\":%lu,\"missed_ticks\":%lu,"
		   "\"ids_over_limit\":%lu}",
		c.n_changes, c.udp_garbage, c.udp_dups, c.missed_ticks, c.unknown_ids);

	double longest_rc = 0;
	fprintf(f, ",\"tcp\":{\"enabled\":%s,\"sent\":%llu,\"answered\":%llu,\"connects\":%lu,\"garbage\":%lu,"
		   "\"connected\":%s,\"by_id\":",
		c.use_tcp ? "true" : "false", (unsigned long long)c.tcp_sent, (unsigned long long)c.tcp_answered,
		c.tcp_connects, c.tcp_garbage, c.tstate == TCP_UP ? "true" : "false");
	json_ids(f, c.tcp_by_id);
	fprintf(f, ",\"reconnects\":[");
	for (i = 0; i < c.n_recon && i < MAX_LISTED; i++) {
		struct reconnect *r = &c.recon[i];
		double d_ans = r->t_answer_us ? ms(r->t_error_us, r->t_answer_us) : ms(r->t_error_us, t_end);
		if (d_ans > longest_rc)
			longest_rc = d_ans;
		fprintf(f, "%s{\"t_error_us\":%llu,\"reason\":\"%s\",\"attempts\":%u,\"error_to_connected_ms\":",
			i ? "," : "", (unsigned long long)r->t_error_us, r->reason, r->attempts);
		if (r->t_connected_us)
			fprintf(f, "%.1f", ms(r->t_error_us, r->t_connected_us));
		else
			fprintf(f, "null");
		fprintf(f, ",\"error_to_answer_ms\":");
		if (r->t_answer_us)
			fprintf(f, "%.1f", d_ans);
		else
			fprintf(f, "null");
		fprintf(f, ",\"last_answer_to_answer_ms\":");
		if (r->t_answer_us && r->t_last_answer_us)
			fprintf(f, "%.1f", ms(r->t_last_answer_us, r->t_answer_us));
		else
			fprintf(f, "null");
		fprintf(f, ",\"open\":%s,\"initial\":%s}", r->t_answer_us ? "false" : "true",
			r->initial ? "true" : "false");
	}
	fprintf(f, "],\"n_reconnects\":%zu,\"longest_reconnect_ms\":%.1f}}\n", c.n_recon, longest_rc);

	for (k = 0; k < c.n_ids && il + 1 < sizeof(idsum); k++)
		if (c.udp_by_id[k])
			il += (size_t)snprintf(idsum + il, sizeof(idsum) - il, "%s%s:%lu", il ? "," : "", c.ids[k],
					       c.udp_by_id[k]);
	if (il >= sizeof(idsum))
		il = sizeof(idsum) - 1;
	snprintf(line, line_size,
		 "fo-netclient %s: sent=%llu answered=%llu late=%llu longest_outage=%.1fms/%llu cycles "
		 "two_answerers=%llu responders=%s tcp_sent=%llu tcp_answered=%llu tcp_reconnects=%zu",
		 c.name, (unsigned long long)last, (unsigned long long)answered, (unsigned long long)late, longest_ms,
		 (unsigned long long)longest_cycles, (unsigned long long)two, il ? idsum : "none",
		 (unsigned long long)c.tcp_sent, (unsigned long long)c.tcp_answered, c.n_recon);
}

static void write_summary(int final)
{
	char line[512], tmp[4096];
	FILE *f = stdout;

	if (c.out) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", c.out);
		f = fopen(tmp, "w");
		if (!f) {
			fprintf(stderr, "fo-netclient: cannot write %s: %s\n", tmp, strerror(errno));
			exit(1);
		}
	}
	summary(f, final, line, sizeof(line));
	if (c.out) {
		if (fclose(f) != 0 || rename(tmp, c.out) != 0) {
			fprintf(stderr, "fo-netclient: cannot write %s: %s\n", c.out, strerror(errno));
			exit(1);
		}
	}
	if (final) {
		printf("%s\n", line);
		fflush(stdout);
	}
}

// ---- main -----------------------------------------------------------------

static void usage(void)
{
	fprintf(stderr, "usage: fo-netclient [--name N] [--addr A | -6] [--period-ms 10] [--udp-port P] "
			"[--tcp-port P] [--no-tcp]\n"
			"                    [--tcp-timeout-ms 3000] [--duration-ms D] [--out FILE] [--rt PRIO]\n");
	exit(2);
}

static long num_arg(const char *opt, const char *s, long lo, long hi)
{
	return net_num_arg("fo-netclient", opt, s, lo, hi);
}

static void set_addr(void)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)&c.udp_sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&c.udp_sa;

	memset(&c.udp_sa, 0, sizeof(c.udp_sa));
	if (inet_pton(AF_INET, c.addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(c.udp_port);
		c.sa_len = sizeof(*s4);
		c.tcp_sa = c.udp_sa;
		((struct sockaddr_in *)&c.tcp_sa)->sin_port = htons(c.tcp_port);
	} else if (inet_pton(AF_INET6, c.addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(c.udp_port);
		c.sa_len = sizeof(*s6);
		c.tcp_sa = c.udp_sa;
		((struct sockaddr_in6 *)&c.tcp_sa)->sin6_port = htons(c.tcp_port);
	} else {
		fprintf(stderr, "fo-netclient: --addr '%s': not an IPv4 or IPv6 address\n", c.addr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	int i, ufd, tmfd, sfd, stopping = 0;
	sigset_t mask;
	struct itimerspec its;
	uint64_t t_stop = 0;

	snprintf(c.addr, sizeof(c.addr), "10.99.0.10");
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-6")) {
			snprintf(c.addr, sizeof(c.addr), "fd99::10");
			continue;
		}
		if (!strcmp(a, "--no-tcp")) {
			c.use_tcp = 0;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (!strcmp(a, "--name")) {
			if (netproto_valid_id(v) < 0) {
				fprintf(stderr, "fo-netclient: --name '%s': 1-%d characters of [A-Za-z0-9._-]\n", v,
					NETPROTO_ID_MAX);
				return 2;
			}
			c.name = v;
		} else if (!strcmp(a, "--addr")) {
			snprintf(c.addr, sizeof(c.addr), "%s", v);
		} else if (!strcmp(a, "--period-ms")) {
			c.period_ms = num_arg(a, v, 1, 10000);
		} else if (!strcmp(a, "--udp-port")) {
			c.udp_port = (int)num_arg(a, v, 1, 65535);
		} else if (!strcmp(a, "--tcp-port")) {
			c.tcp_port = (int)num_arg(a, v, 1, 65535);
		} else if (!strcmp(a, "--tcp-timeout-ms")) {
			c.tcp_timeout_ms = num_arg(a, v, 1, 3600000);
		} else if (!strcmp(a, "--duration-ms")) {
			c.duration_ms = num_arg(a, v, 1, 86400000);
		} else if (!strcmp(a, "--out")) {
			c.out = v;
		} else if (!strcmp(a, "--rt")) {
			c.rt_prio = (int)num_arg(a, v, 1, 99);
		} else {
			usage();
		}
	}
	set_addr();
	if (c.rt_prio) {
		struct sched_param sp = { .sched_priority = c.rt_prio };
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			fprintf(stderr, "fo-netclient: SCHED_FIFO %d: %s (running without)\n", c.rt_prio,
				strerror(errno));
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	ufd = socket(c.udp_sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	tmfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (sfd < 0 || ufd < 0 || tmfd < 0) {
		perror("fo-netclient: setup");
		return 1;
	}
	if (connect(ufd, (struct sockaddr *)&c.udp_sa, c.sa_len) < 0) {
		fprintf(stderr, "fo-netclient: udp to %s: %s\n", c.addr, strerror(errno));
		return 1;
	}
	its.it_interval.tv_sec = c.period_ms / 1000;
	its.it_interval.tv_nsec = (c.period_ms % 1000) * 1000000L;
	its.it_value = its.it_interval;
	timerfd_settime(tmfd, 0, &its, NULL);
	c.t_start_us = now_us();
	fprintf(stderr, "fo-netclient %s: t=%llu us to %s udp %d%s, period %ld ms\n", c.name,
		(unsigned long long)c.t_start_us, c.addr, c.udp_port, c.use_tcp ? " tcp" : "", c.period_ms);
	if (c.use_tcp)
		tcp_connect();
	udp_send(ufd);

	for (;;) {
		struct pollfd p[4] = {
			{ .fd = tmfd, .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
			{ .fd = ufd, .events = POLLIN },
			{ .fd = c.tfd, .events = c.tstate == TCP_CONNECTING ? POLLOUT : POLLIN },
		};
		if (poll(p, 4, 100) < 0 && errno != EINTR) {
			perror("fo-netclient: poll");
			return 1;
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGUSR1) {
					write_summary(0);
				} else if (!stopping) {
					stopping = 1;
					t_stop = now_us();
				}
			}
		}
		if (p[2].revents)
			udp_receive(ufd);
		if (c.tfd >= 0 && p[3].revents) {
			if (c.tstate == TCP_CONNECTING)
				tcp_connected();
			else if (p[3].revents & (POLLIN | POLLERR | POLLHUP))
				tcp_receive();
		}
		if (p[0].revents) {
			uint64_t exp = 0;
			if (read(tmfd, &exp, sizeof(exp)) == sizeof(exp) && exp > 1)
				c.missed_ticks += exp - 1;
			if (!stopping && c.duration_ms && now_us() - c.t_start_us >= (uint64_t)c.duration_ms * 1000u) {
				stopping = 1;
				t_stop = now_us();
			}
			if (!stopping) {
				udp_send(ufd);
				if (c.use_tcp)
					tcp_tick();
			}
		}
		// The last requests get one more period (at least 50 ms) to be
		// answered before they count as unanswered.
		if (stopping && now_us() - t_stop >= (uint64_t)(c.period_ms > 50 ? c.period_ms : 50) * 1000u)
			break;
	}
	if (c.n_recs > 0 && __builtin_popcount(c.window_mask) >= 2)
		c.recs[c.n_recs - 1].two = 1;
	c.t_end_us = now_us();
	write_summary(1);
	return 0;
}
