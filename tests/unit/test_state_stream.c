/* SPDX-License-Identifier: MIT */
/*
 * test_state_stream.c - the state stream across hosts (stream/), its two
 * ends in one process over 127.0.0.1, each end plugged into a real state
 * relay (hv/state_relay.c) whose members' regions are plain memory, as in
 * test_state_relay.c: host A serves the pair (its active commits), host B
 * has stood it down (its standby's state-in is fed from A).
 *
 * Checked: the wire's own refusals (tampered, replayed, oversized, wrong
 * key); a state committed on A reaches B's standby and the lag in cycles
 * is exported; a state is held while B has no standby mapped and written
 * once it maps; a peer with a wrong key, a tampered, replayed, truncated
 * or oversized message, a silent peer and a flood of connections are
 * refused and counted, and the real peer still gets through; a restart of
 * either end resumes; a takeover on B restores the newest state that
 * arrived. Every wait is bounded polling.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-heartbeat/abi/fo_state.h"
#include "check.h"
#include "wait_until.h"
#include "hv/state_relay.h"
#include "stream/state_stream.h"
#include "stream/wire.h"
#include "stream_hooks.h"

#define WAIT_MS 8000u
#define PAIR    "brake-ctl"

/* ------------------------------------------------------------- helpers */

static void fill(unsigned char *p, size_t len, uint64_t cycle)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(cycle * 31u + i * 7u);
}

static bool filled(const unsigned char *p, size_t len, uint64_t cycle)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (unsigned char)(cycle * 31u + i * 7u))
			return false;
	return true;
}

/* ------------------------------------------------------------- a host: two members, a relay */

struct fake_dom {
	fo_domid_t domid;
	unsigned char *out, *in;
	struct fo_st_writer w;
	atomic_bool publish;
};

struct host {
	const char *name;
	struct fake_dom d[2];      /* d[0] the configured active, d[1] the standby */
	struct fo_state_relay *relay;
	struct fo_stream *stream;
};

static struct host ha = { .name = "A" }, hb = { .name = "B" };

static struct fake_dom *dom_of(struct host *h, fo_domid_t domid)
{
	for (int i = 0; i < 2; i++)
		if (h->d[i].domid == domid)
			return &h->d[i];
	return NULL;
}

static int t_event_fd(void *ctx)
{
	return -1;
}

static bool t_events(void *ctx, struct fo_state_relay *r)
{
	return false;
}

static bool t_map(void *ctx, unsigned slot, fo_domid_t domid, volatile void **out, volatile void **in)
{
	struct fake_dom *d = dom_of(ctx, domid);

	if (!d || !atomic_load(&d->publish))
		return false;
	*out = d->out;
	*in = d->in;
	return true;
}

static void t_unmap(void *ctx, volatile void *out, volatile void *in)
{
}

static void t_drop(void *ctx, unsigned slot, fo_domid_t domid)
{
}

static bool t_alive(void *ctx, fo_domid_t domid)
{
	return true;
}

static const struct fo_state_relay_ops test_ops = {
	.name = "test",
	.event_fd = t_event_fd,
	.events = t_events,
	.map = t_map,
	.unmap = t_unmap,
	.drop = t_drop,
	.alive = t_alive,
};

static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg, int signo)
{
	return -pthread_create(t, NULL, fn, arg);
}

static void host_doms(struct host *h, fo_domid_t first)
{
	for (int i = 0; i < 2; i++) {
		struct fake_dom *d = &h->d[i];

		if (!d->out) {
			d->out = aligned_alloc(FO_ST_PAGE_SIZE, FO_ST_REGION_SIZE);
			d->in = aligned_alloc(FO_ST_PAGE_SIZE, FO_ST_REGION_SIZE);
			if (!d->out || !d->in)
				exit(1);
		}
		d->domid = first + (fo_domid_t)i;
		fo_st_init(d->out, 0xa000u + d->domid);
		fo_st_init(d->in, 0);
		memset(&d->w, 0, sizeof(d->w));
		atomic_store(&d->publish, true);
	}
}

static void relay_start(struct host *h)
{
	h->relay = NULL;
	CHECK(fo_state_relay_new(&test_ops, h, start_thread, &h->relay) == 0 && h->relay, "host %s: relay", h->name);
	if (!h->relay)
		exit(1);
	if (h->stream)
		fo_state_relay_set_stream(h->relay, &fo_stream_relay_hooks, h->stream);
}

static void key_of(struct fo_wire_key *k, char c)
{
	memset(k->k, c, 40);
	k->len = 40;
}

/* listen on `port` (0: any) and/or send to `peer_port` (0: no sender). */
static struct fo_stream *stream_start(unsigned port, unsigned peer_port, char keyc)
{
	struct fo_stream_params p;
	struct fo_stream *s = NULL;
	char err[256] = "";

	memset(&p, 0, sizeof(p));
	snprintf(p.listen, sizeof(p.listen), "127.0.0.1:%u", port);
	if (port == 0)
		snprintf(p.listen, sizeof(p.listen), "127.0.0.1:0");
	if (peer_port)
		snprintf(p.peer, sizeof(p.peer), "127.0.0.1:%u", peer_port);
	key_of(&p.key, keyc);
	p.handshake_ms = 300;
	p.idle_ms = 1200;
	p.retry_ms = 50;
	/* port 0 is no valid ADDRESS:PORT for the config; the stream binds it for the tests */
	if (port == 0) {
		int rc = fo_stream_new(&(struct fo_stream_params){ 0 }, NULL, &s, err, sizeof(err));

		CHECK(rc == -EINVAL, "a stream without a key is refused (%d)", rc);
	}
	CHECK(fo_stream_new(&p, start_thread, &s, err, sizeof(err)) == 0 && s, "stream: %s", err);
	if (!s)
		exit(1);
	return s;
}

static void commit(struct fake_dom *d, uint64_t cycle, size_t len)
{
	static unsigned char src[FO_ST_SLOT_SIZE];

	fill(src, len, cycle);
	CHECK(fo_st_commit(d->out, &d->w, src, len, cycle) == 0, "commit %llu", (unsigned long long)cycle);
}

static void beat(struct host *h, fo_domid_t domid, uint64_t cycle)
{
	struct fo_hb_page page;

	memset(&page, 0, sizeof(page));
	page.ext_magic = FO_HB_EXT_MAGIC;
	page.ext_version = FO_HB_EXT_VERSION;
	page.app_cycle = cycle;
	page.period_ms = 1;
	fo_state_relay_beat(h->relay, domid, &page);
}

/* d's state-in holds a valid commit of `cycle` with its bytes. */
static bool in_holds(struct fake_dom *d, uint64_t cycle, size_t len)
{
	static unsigned char buf[FO_ST_SLOT_SIZE];
	struct fo_st_found f;
	enum fo_st_result res;
	int tries = 0;

	do
		res = fo_st_read(d->in, buf, &f);
	while (res == FO_ST_TORN && ++tries < 100);
	return res == FO_ST_OK && f.cycle == cycle && f.len == len && filled(buf, len, cycle);
}

static struct fo_stream_pair_stats pstats(struct fo_stream *s)
{
	struct fo_stream_pair_stats ps;

	fo_stream_pair_stats(s, PAIR, &ps);
	return ps;
}

static struct fo_stream_stats gstats(struct fo_stream *s)
{
	struct fo_stream_stats st;

	fo_stream_stats(s, &st);
	return st;
}

static uint64_t refused(struct fo_stream *s, enum fo_wire_refusal r)
{
	return gstats(s).refused[r];
}

/* Commit `cycle` on A's active and wait until B's standby holds it and
 * B's stream counts it applied (the relay says so right after writing). */
static bool crosses(uint64_t cycle, size_t len)
{
	bool ok;

	commit(&ha.d[0], cycle, len);
	WAIT_UNTIL(ok, (beat(&ha, ha.d[0].domid, cycle), in_holds(&hb.d[1], cycle, len) &&
						     pstats(hb.stream).applied_cycle == cycle), WAIT_MS);
	return ok;
}

/* ------------------------------------------------------------- a raw peer (the test is the sender) */

static int raw_connect(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 3, 0 };

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool read_n(int fd, unsigned char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = recv(fd, buf + got, n - got, 0);

		if (k <= 0)
			return false;
		got += (size_t)k;
	}
	return true;
}

/* The handshake as a sender with key `keyc`; the session key in *session. */
static int raw_handshake(unsigned port, char keyc, struct fo_wire_key *session, bool *proved)
{
	unsigned char hello[FO_WIRE_HELLO], auth[FO_WIRE_AUTH], proof[FO_WIRE_PROOF];
	unsigned char ns[FO_WIRE_NONCE], nc[FO_WIRE_NONCE];
	struct fo_wire_key k;
	int fd = raw_connect(port);

	*proved = false;
	if (fd < 0 || !read_n(fd, hello, sizeof(hello)) || !fo_wire_hello_parse(hello, ns))
		return fd;
	key_of(&k, keyc);
	fo_wire_nonce(nc);
	fo_wire_auth(auth, &k, ns, nc);
	if (send(fd, auth, sizeof(auth), MSG_NOSIGNAL) != (ssize_t)sizeof(auth))
		return fd;
	if (read_n(fd, proof, sizeof(proof)) && fo_wire_proof_check(proof, &k, ns, nc)) {
		*proved = true;
		fo_wire_session(session, &k, ns, nc);
	}
	return fd;
}

/* The receiver closed fd (after refusing what we sent). */
static bool closed_by_peer(int fd)
{
	unsigned char b[64];
	struct pollfd p = { .fd = fd, .events = POLLIN };

	/* the challenge may still be unread */
	while (poll(&p, 1, 3000) == 1) {
		ssize_t k = recv(fd, b, sizeof(b), 0);

		if (k == 0)
			return true;
		if (k < 0)
			return false;
	}
	return false;
}

static size_t state_msg(unsigned char *msg, const struct fo_wire_key *session, uint64_t seq, uint64_t cycle,
			size_t len)
{
	static unsigned char body[FO_WIRE_BODY_MAX], data[FO_ST_SLOT_SIZE];
	uint32_t bl;

	fill(data, len, cycle);
	bl = fo_wire_state_body(body, PAIR, cycle, cycle, data, (uint32_t)len);
	return fo_wire_seal(msg, session, seq, FO_WIRE_STATE, body, bl);
}

/* ------------------------------------------------------------- the tests */

static void test_wire(void)
{
	static unsigned char msg[FO_WIRE_MSG_MAX];
	unsigned char ns[FO_WIRE_NONCE], nc[FO_WIRE_NONCE], nc2[FO_WIRE_NONCE], auth[FO_WIRE_AUTH];
	struct fo_wire_key k, other, sa, sb;
	struct fo_wire_state st;
	enum fo_wire_refusal r;
	const char *why = NULL;
	uint32_t bl;
	size_t n;

	key_of(&k, 'k');
	key_of(&other, 'x');
	CHECK(fo_wire_nonce(ns) == 0 && fo_wire_nonce(nc) == 0 && memcmp(ns, nc, sizeof(ns)) != 0, "two nonces differ");
	fo_wire_auth(auth, &k, ns, nc);
	CHECK(fo_wire_auth_check(auth, &k, ns, nc2, &why) && memcmp(nc, nc2, sizeof(nc)) == 0, "the right key passes");
	CHECK(!fo_wire_auth_check(auth, &other, ns, nc2, &why) && strstr(why, "wrong key"), "a wrong key: %s",
	      why ? why : "-");
	ns[0] ^= 1; /* another connection's challenge: the answer does not carry over */
	CHECK(!fo_wire_auth_check(auth, &k, ns, nc2, &why), "an answer to another challenge is refused");
	ns[0] ^= 1;
	auth[0] = 'X';
	CHECK(!fo_wire_auth_check(auth, &k, ns, nc2, &why) && strstr(why, "handshake"), "not a handshake: %s",
	      why ? why : "-");

	fo_wire_session(&sa, &k, ns, nc);
	fo_wire_session(&sb, &k, ns, nc);
	CHECK(sa.len == sb.len && memcmp(sa.k, sb.k, sa.len) == 0, "both ends derive one session key");
	n = state_msg(msg, &sa, 7, 42, 100);
	bl = (uint32_t)(n - FO_WIRE_HEADER - FO_WIRE_MAC);
	CHECK(fo_wire_open(msg, bl, &sb, 7, &st, &r, &why) == FO_WIRE_STATE && st.cycle == 42 && st.len == 100 &&
		      filled(st.data, 100, 42) && strcmp(st.pair, PAIR) == 0, "a sealed STATE opens as sent");
	CHECK(fo_wire_open(msg, bl, &sb, 8, &st, &r, &why) < 0 && r == FO_REFUSED_REPLAY, "seq 7 when 8 is due: replay");
	msg[FO_WIRE_HEADER + 30] ^= 0x10;
	CHECK(fo_wire_open(msg, bl, &sb, 7, &st, &r, &why) < 0 && r == FO_REFUSED_TAMPERED, "a flipped bit: tampered");
	msg[FO_WIRE_HEADER + 30] ^= 0x10;
	CHECK(fo_wire_open(msg, bl, &other, 7, &st, &r, &why) < 0 && r == FO_REFUSED_TAMPERED,
	      "another key's session: tampered");
	msg[0] = 0xff, msg[1] = 0xff, msg[2] = 0xff, msg[3] = 0x7f;
	CHECK(!fo_wire_header_len(msg, &bl) && bl == 0x7fffffffu, "a 2 GiB length is oversized");
	/* authentic but inconsistent: a data length beyond the body */
	{
		static unsigned char body[FO_WIRE_BODY_MAX];
		uint32_t b2 = fo_wire_state_body(body, PAIR, 1, 1, "abcd", 4);

		body[1 + strlen(PAIR) + 16] = 9; /* data length 9 in a body with 4 */
		n = fo_wire_seal(msg, &sa, 1, FO_WIRE_STATE, body, b2);
		CHECK(fo_wire_open(msg, b2, &sb, 1, &st, &r, &why) < 0 && r == FO_REFUSED_MALFORMED,
		      "a data length that does not match: malformed (%s)", why ? why : "-");
	}
}

/* A serves (its relay offers), B stood down (its relay takes). */
static void setup_hosts(void)
{
	bool ok;

	host_doms(&ha, 11);
	host_doms(&hb, 21);
	hb.stream = stream_start(0, 0, 'k');
	ha.stream = stream_start(0, fo_stream_listen_port(hb.stream), 'k');
	relay_start(&ha);
	relay_start(&hb);
	fo_state_relay_pair(ha.relay, PAIR, ha.d[0].domid, ha.d[1].domid, true);
	fo_state_relay_pair(hb.relay, PAIR, hb.d[0].domid, hb.d[1].domid, false);
	WAIT_UNTIL(ok, gstats(ha.stream).peer_out && gstats(hb.stream).peer_in, WAIT_MS);
	CHECK(ok, "A connected to B and both proved the key");
}

static void test_arrives_and_lag(void)
{
	struct fo_stream_pair_stats ps;
	struct fo_hv_state_info si;
	bool ok;

	CHECK(crosses(10, 3000), "cycle 10 committed on A is in B's standby's state-in");
	CHECK(crosses(11, FO_ST_SLOT_SIZE), "a full-size state (cycle 11) too");
	/* B's own paused active holds an old commit: never copied over the stream's */
	commit(&hb.d[0], 5, 64);
	beat(&hb, hb.d[0].domid, 5);
	CHECK(crosses(12, 500), "cycle 12");
	ps = pstats(hb.stream);
	CHECK(ps.applied && ps.applied_cycle == 12 && ps.lag_cycles == 0 && ps.received >= 3,
	      "B applied cycle 12, lag 0 (applied %llu, lag %llu, received %llu)",
	      (unsigned long long)ps.applied_cycle, (unsigned long long)ps.lag_cycles,
	      (unsigned long long)ps.received);
	CHECK(pstats(ha.stream).sent >= 3 && pstats(ha.stream).sent_cycle == 12, "A counts what it sent");
	/* the active moves on without committing: B knows it is 7 cycles behind */
	WAIT_UNTIL(ok, (beat(&ha, ha.d[0].domid, 19), pstats(hb.stream).lag_cycles == 7), WAIT_MS);
	ps = pstats(hb.stream);
	CHECK(ok, "lag 7 cycles once A's active is at 19 with state of 12 (peer %llu, lag %llu)",
	      (unsigned long long)ps.peer_cycle, (unsigned long long)ps.lag_cycles);
	/* the age libfoguest would compute on B: the peer's newest cycle in the header */
	CHECK(crosses(20, 100), "cycle 20");
	CHECK(((struct fo_st_header *)hb.d[1].in)->src_last_cycle == 20, "B's state-in names the peer's newest cycle");
	CHECK(fo_state_relay_info(hb.relay, hb.d[1].domid, &si) && si.streamed >= 4, "B's relay counts %llu streamed",
	      (unsigned long long)si.streamed);
	CHECK(in_holds(&hb.d[1], 20, 100) && !in_holds(&hb.d[1], 5, 64), "B's own active's cycle 5 never reached it");
}

static void test_held_without_standby(void)
{
	bool ok;

	/* B's standby shares no regions (a member not booted yet): held */
	atomic_store(&hb.d[1].publish, false);
	fo_state_relay_forget(hb.relay, hb.d[1].domid);
	fo_state_relay_pair(hb.relay, PAIR, hb.d[0].domid, hb.d[1].domid, false);
	commit(&ha.d[0], 30, 256);
	WAIT_UNTIL(ok, (beat(&ha, ha.d[0].domid, 30), pstats(hb.stream).arrived_cycle == 30), WAIT_MS);
	CHECK(ok && pstats(hb.stream).held && pstats(hb.stream).applied_cycle == 20,
	      "cycle 30 arrived and is held, 20 still the applied one");
	CHECK(pstats(hb.stream).lag_cycles == 10, "lag 10 while held (%llu)",
	      (unsigned long long)pstats(hb.stream).lag_cycles);
	atomic_store(&hb.d[1].publish, true);
	fo_state_relay_forget(hb.relay, hb.d[1].domid);
	fo_state_relay_pair(hb.relay, PAIR, hb.d[0].domid, hb.d[1].domid, false);
	WAIT_UNTIL(ok, in_holds(&hb.d[1], 30, 256) && !pstats(hb.stream).held, WAIT_MS);
	CHECK(ok, "the held state is written once the standby maps");
}

static void test_wrong_key(void)
{
	struct fo_stream *bad;
	struct fo_wire_key s;
	uint64_t before = refused(hb.stream, FO_REFUSED_AUTH), rx = gstats(hb.stream).received;
	bool ok, proved;
	int fd;

	/* a whole stream with another key: refused, and it refuses B in turn */
	bad = stream_start(0, fo_stream_listen_port(hb.stream), 'x');
	fo_stream_offer(bad, PAIR, 999, "evil", 4, 999);
	WAIT_UNTIL(ok, refused(hb.stream, FO_REFUSED_AUTH) >= before + 2, WAIT_MS);
	CHECK(ok, "B refused the wrong key, again at each retry (%llu)",
	      (unsigned long long)refused(hb.stream, FO_REFUSED_AUTH));
	CHECK(!gstats(bad).peer_out && gstats(bad).connected == 0, "the wrong-key sender never got through");
	fo_stream_free(bad);
	CHECK(gstats(hb.stream).received == rx && pstats(hb.stream).arrived_cycle != 999, "nothing of it arrived");

	/* by hand: the challenge answered with another key; B closes */
	fd = raw_handshake(fo_stream_listen_port(hb.stream), 'y', &s, &proved);
	CHECK(fd >= 0 && !proved, "no proof for a wrong key");
	if (fd >= 0)
		close(fd);
	/* the real peer still sends */
	CHECK(crosses(31, 64), "A still gets through");
}

static void test_tampered_replayed_truncated_oversized(void)
{
	static unsigned char msg[FO_WIRE_MSG_MAX];
	/* a receiver of its own: A's sender would replace each raw peer once
	 * it connects again (the newest authenticated peer is the one) */
	struct fo_stream *rx = stream_start(0, 0, 'k');
	unsigned port = fo_stream_listen_port(rx);
	struct fo_wire_key s;
	uint64_t t0 = refused(rx, FO_REFUSED_TAMPERED), r0 = refused(rx, FO_REFUSED_REPLAY);
	uint64_t tr0 = refused(rx, FO_REFUSED_TRUNCATED), o0 = refused(rx, FO_REFUSED_OVERSIZED);
	bool proved, ok;
	size_t n;
	int fd;

	/* tampered: the right key, one byte of the state changed after sealing */
	fd = raw_handshake(port, 'k', &s, &proved);
	CHECK(proved, "the raw peer proved the key");
	n = state_msg(msg, &s, 1, 777, 64);
	msg[FO_WIRE_HEADER + 40] ^= 1;
	CHECK(send(fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n, "sent");
	CHECK(closed_by_peer(fd), "B closed the connection of a tampered message");
	close(fd);
	CHECK(refused(rx, FO_REFUSED_TAMPERED) == t0 + 1, "tampered counted");

	/* replayed: message 1 twice */
	fd = raw_handshake(port, 'k', &s, &proved);
	n = state_msg(msg, &s, 1, 778, 64);
	CHECK(send(fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n && send(fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n, "sent");
	CHECK(closed_by_peer(fd), "B closed the connection of a replay");
	close(fd);
	CHECK(refused(rx, FO_REFUSED_REPLAY) == r0 + 1, "replay counted");
	CHECK(pstats(rx).arrived_cycle == 778, "the first copy of 778 was taken (it was authentic)");

	/* truncated: half a message, then the connection ends */
	fd = raw_handshake(port, 'k', &s, &proved);
	n = state_msg(msg, &s, 1, 779, 4000);
	CHECK(send(fd, msg, n / 2, MSG_NOSIGNAL) == (ssize_t)(n / 2), "sent half");
	close(fd);
	WAIT_UNTIL(ok, refused(rx, FO_REFUSED_TRUNCATED) == tr0 + 1, WAIT_MS);
	CHECK(ok, "truncated counted");
	CHECK(pstats(rx).arrived_cycle != 779, "nothing of the truncated message arrived");

	/* oversized: a header claiming 1 MiB; refused at the header */
	fd = raw_handshake(port, 'k', &s, &proved);
	memset(msg, 0, FO_WIRE_HEADER);
	msg[2] = 0x10; /* 0x100000 */
	msg[4] = 1;
	msg[12] = FO_WIRE_STATE;
	CHECK(send(fd, msg, FO_WIRE_HEADER, MSG_NOSIGNAL) == FO_WIRE_HEADER, "sent a header");
	CHECK(closed_by_peer(fd), "B closed the connection of an oversized message");
	close(fd);
	CHECK(refused(rx, FO_REFUSED_OVERSIZED) == o0 + 1, "oversized counted");
	fo_stream_free(rx);
	CHECK(crosses(32, 64), "A's own link went on meanwhile");
}

static void test_silent_and_flood(void)
{
	unsigned port = fo_stream_listen_port(hb.stream);
	uint64_t to0 = refused(hb.stream, FO_REFUSED_TIMEOUT), f0 = refused(hb.stream, FO_REFUSED_FLOOD);
	int fds[12];
	bool ok;
	uint64_t t;

	/* connects, reads the challenge, says nothing: dropped at handshake_ms (300) */
	fds[0] = raw_connect(port);
	t = now_ms();
	CHECK(closed_by_peer(fds[0]), "B closed a silent peer");
	t = now_ms() - t;
	CHECK(t >= 200 && t < 2500, "after about its handshake time (%llu ms)", (unsigned long long)t);
	close(fds[0]);
	CHECK(refused(hb.stream, FO_REFUSED_TIMEOUT) == to0 + 1, "timeout counted");

	/* a flood: 12 silent connections at once; FO_STREAM_PENDING are served */
	for (int i = 0; i < 12; i++)
		fds[i] = raw_connect(port);
	WAIT_UNTIL(ok, refused(hb.stream, FO_REFUSED_FLOOD) >= f0 + 12 - FO_STREAM_PENDING, WAIT_MS);
	CHECK(ok, "the connections beyond %u refused as a flood (%llu)", FO_STREAM_PENDING,
	      (unsigned long long)(refused(hb.stream, FO_REFUSED_FLOOD) - f0));
	/* while the flood holds its slots, the loop (the relay) is never held up,
	 * and once they time out A is through again */
	CHECK(crosses(33, 64), "A gets through after the flood");
	for (int i = 0; i < 12; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void test_restarts(void)
{
	unsigned port = fo_stream_listen_port(hb.stream);
	uint64_t acc;
	bool ok;

	/* B restarts (its daemon: stream and relay): A connects again and
	 * sends its newest at once */
	fo_state_relay_free(hb.relay);
	fo_stream_free(hb.stream);
	hb.stream = stream_start(port, 0, 'k');
	relay_start(&hb);
	fo_state_relay_pair(hb.relay, PAIR, hb.d[0].domid, hb.d[1].domid, false);
	WAIT_UNTIL(ok, pstats(hb.stream).arrived_cycle == 33 && pstats(hb.stream).applied_cycle == 33, WAIT_MS);
	CHECK(ok, "the restarted receiver has A's newest (33) without a new commit, and wrote it");
	CHECK(crosses(34, 64), "and the next one");

	/* A restarts (stream and relay, as its daemon): B takes it as the peer again */
	acc = gstats(hb.stream).accepted;
	fo_state_relay_free(ha.relay);
	fo_stream_free(ha.stream);
	ha.stream = stream_start(0, port, 'k');
	relay_start(&ha);
	fo_state_relay_pair(ha.relay, PAIR, ha.d[0].domid, ha.d[1].domid, true);
	WAIT_UNTIL(ok, gstats(hb.stream).accepted > acc && pstats(hb.stream).received > 0, WAIT_MS);
	CHECK(ok, "B accepted the restarted A");
	CHECK(crosses(35, 64), "cycle 35 after A's restart");
}

static void test_takeover_on_b(void)
{
	struct fo_hv_state_info si;
	static unsigned char buf[FO_ST_SLOT_SIZE];
	struct fo_st_found f;
	bool ok;

	CHECK(crosses(40, 1234), "cycle 40");
	/* A is lost; its newest cycle known on B is 40. Pacemaker promotes B:
	 * `switchover` unpauses the standby, the roles are published swapped */
	fo_state_relay_pair(hb.relay, PAIR, hb.d[1].domid, hb.d[0].domid, true);
	WAIT_UNTIL(ok, fo_state_relay_info(hb.relay, hb.d[1].domid, &si) && si.takeover, WAIT_MS);
	CHECK(ok, "B's relay saw the takeover");
	CHECK(si.takeover_streamed && si.handed_cycle == 40 && si.old_last_cycle == 40 && si.cycles_lost == 0,
	      "handed the state of cycle 40 from A (handed %llu, A's newest %llu, lost %lld)",
	      (unsigned long long)si.handed_cycle, (unsigned long long)si.old_last_cycle, (long long)si.cycles_lost);
	/* what libfoguest restores on the new active */
	CHECK(fo_st_read(hb.d[1].in, buf, &f) == FO_ST_OK && f.cycle == 40 && f.len == 1234 && filled(buf, 1234, 40),
	      "the new active restores cycle 40, byte for byte");
	/* B serves now: its commits go to its stream (no peer configured on B: nothing sent, nothing breaks) */
	commit(&hb.d[1], 41, 10);
	beat(&hb, hb.d[1].domid, 41);
	WAIT_UNTIL(ok, in_holds(&hb.d[0], 41, 10), WAIT_MS);
	CHECK(ok, "B relays locally to its new standby");
}

int main(void)
{
	RUN(test_wire);
	setup_hosts();
	RUN(test_arrives_and_lag);
	RUN(test_held_without_standby);
	RUN(test_wrong_key);
	RUN(test_tampered_replayed_truncated_oversized);
	RUN(test_silent_and_flood);
	RUN(test_restarts);
	RUN(test_takeover_on_b);
	fo_state_relay_free(ha.relay);
	fo_state_relay_free(hb.relay);
	fo_stream_free(ha.stream);
	fo_stream_free(hb.stream);
	for (int i = 0; i < 2; i++) {
		free(ha.d[i].out), free(ha.d[i].in);
		free(hb.d[i].out), free(hb.d[i].in);
	}
	return check_summary("test_state_stream");
}
