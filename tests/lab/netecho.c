// SPDX-License-Identifier: MIT
// fo-netecho: the service a lab domU offers on the pair's network (issue
// #39), so that a client in dom0 (fo-netclient) sees which member answers.
//
//   fo-netecho --id NAME [--udp-port 7070] [--tcp-port 7071] [--bind ADDR]
//
// UDP: every datagram "FOQ <seq>[ anything]" is answered to its sender with
// "FOR <seq> <id>\n". Anything else is counted and dropped (no reply: an
// echo service must not reflect garbage).
// TCP: up to MAX_CLIENTS connections at once; each line "FOQ <seq>..." is
// answered with "FOR <seq> <id>\n", any other line with "FOE <id>
// bad-request\n". A line longer than LINE_MAX_LEN, a peer that does not
// read its answers, or an error closes that connection only.
// IPv6 sockets with IPV6_V6ONLY off serve IPv4 too; without IPv6 in the
// kernel it falls back to IPv4 sockets.
//
// Robust to garbage by construction: fixed buffers, lengths checked before
// every copy, no allocation after start. SIGTERM/SIGINT end it with a
// counts line on stdout.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netproto.h"

#define MAX_CLIENTS 16
#define LINE_MAX_LEN 256

struct client {
	int fd;
	size_t len;
	unsigned long last_active; // the round it last sent something
	char buf[LINE_MAX_LEN];
};

static volatile sig_atomic_t stop;
static char id[NETPROTO_ID_MAX + 1];
static unsigned long n_udp, n_udp_bad, n_tcp_conn, n_tcp_req, n_tcp_bad, n_tcp_drop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int open_sock(int type, int port, const char *bind_addr)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1, zero = 0;

	memset(&ss, 0, sizeof(ss));
	fd = socket(AF_INET6, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && (!bind_addr || strchr(bind_addr, ':'))) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		s6->sin6_addr = in6addr_any;
		if (bind_addr && inet_pton(AF_INET6, bind_addr, &s6->sin6_addr) != 1) {
			fprintf(stderr, "fo-netecho: --bind %s: not an address\n", bind_addr);
			exit(2);
		}
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		if (fd >= 0)
			close(fd);
		fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			perror("fo-netecho: socket");
			exit(1);
		}
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind_addr && inet_pton(AF_INET, bind_addr, &s4->sin_addr) != 1) {
			fprintf(stderr, "fo-netecho: --bind %s: not an address\n", bind_addr);
			exit(2);
		}
		sl = sizeof(*s4);
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
		fprintf(stderr, "fo-netecho: bind %s port %d: %s\n", type == SOCK_STREAM ? "tcp" : "udp", port,
			strerror(errno));
		exit(1);
	}
	if (type == SOCK_STREAM && listen(fd, 64) < 0) {
		perror("fo-netecho: listen");
		exit(1);
	}
	return fd;
}

static void udp_round(int fd)
{
	char in[NETPROTO_DGRAM_MAX], out[NETPROTO_REPLY_MAX];
	struct sockaddr_storage from;
	socklen_t fl;
	ssize_t n;
	uint64_t seq;
	int k;

	// Drain what is there (bounded, so TCP gets its turn under a flood).
	for (k = 0; k < 64; k++) {
		fl = sizeof(from);
		n = recvfrom(fd, in, sizeof(in), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		if (netproto_parse_request(in, (size_t)n, &seq) < 0) {
			n_udp_bad++;
			continue;
		}
		n_udp++;
		int len = netproto_format_reply(out, sizeof(out), seq, id);
		if (len > 0)
			sendto(fd, out, (size_t)len, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
	}
}

static void client_close(struct client *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
}

// Every connection waiting. With every slot taken, the client idle the
// longest is closed for the new one: a client that reconnects (after a
// switch) is served, whatever went before.
static void accept_all(int lfd, struct client *cl, unsigned long round_no)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1, i, oldest = 0;

		if (fd < 0)
			return;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (i = 0; i < MAX_CLIENTS && cl[i].fd >= 0; i++)
			if (cl[i].last_active < cl[oldest].last_active)
				oldest = i;
		if (i == MAX_CLIENTS) {
			client_close(&cl[oldest]);
			n_tcp_drop++;
			i = oldest;
		}
		cl[i].fd = fd;
		cl[i].len = 0;
		cl[i].last_active = round_no;
		n_tcp_conn++;
	}
}

// Answers every complete line in c->buf; 0 to keep the connection.
static int client_lines(struct client *c)
{
	char out[NETPROTO_REPLY_MAX];
	size_t start = 0, i;
	uint64_t seq;
	int len;

	for (i = 0; i < c->len; i++) {
		if (c->buf[i] != '\n')
			continue;
		if (netproto_parse_request(c->buf + start, i - start, &seq) == 0) {
			n_tcp_req++;
			len = netproto_format_reply(out, sizeof(out), seq, id);
		} else {
			n_tcp_bad++;
			len = snprintf(out, sizeof(out), "FOE %s bad-request\n", id);
		}
		// A full send buffer means the peer does not read: drop it
		// rather than block the other connections.
		if (len <= 0 || send(c->fd, out, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL) != len) {
			n_tcp_drop++;
			return -1;
		}
		start = i + 1;
	}
	if (start > 0) {
		memmove(c->buf, c->buf + start, c->len - start);
		c->len -= start;
	}
	if (c->len == sizeof(c->buf)) {
		n_tcp_drop++; // a line longer than the buffer
		return -1;
	}
	return 0;
}

static void client_read(struct client *c)
{
	ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_close(c);
		return;
	}
	if (n < 0)
		return;
	c->len += (size_t)n;
	if (client_lines(c) < 0)
		client_close(c);
}

static void usage(void)
{
	fprintf(stderr, "usage: fo-netecho --id NAME [--udp-port P] [--tcp-port P] [--bind ADDR]\n");
	exit(2);
}

static int port_arg(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0 || v > 65535) {
		fprintf(stderr, "fo-netecho: bad port '%s'\n", s);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	int udp_port = NETPROTO_UDP_PORT, tcp_port = NETPROTO_TCP_PORT, i, ufd, lfd;
	const char *bind_addr = NULL;
	struct client cl[MAX_CLIENTS];
	struct pollfd pfd[2 + MAX_CLIENTS];
	struct sigaction sa;
	unsigned long round_no = 0;

	for (i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--id")) {
			if (netproto_valid_id(argv[++i]) < 0) {
				fprintf(stderr, "fo-netecho: --id '%s': 1-%d characters of [A-Za-z0-9._-]\n", argv[i],
					NETPROTO_ID_MAX);
				return 2;
			}
			snprintf(id, sizeof(id), "%s", argv[i]);
		} else if (!strcmp(argv[i], "--udp-port")) {
			udp_port = port_arg(argv[++i]);
		} else if (!strcmp(argv[i], "--tcp-port")) {
			tcp_port = port_arg(argv[++i]);
		} else if (!strcmp(argv[i], "--bind")) {
			bind_addr = argv[++i];
		} else {
			usage();
		}
	}
	if (id[0] == '\0')
		usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	ufd = open_sock(SOCK_DGRAM, udp_port, bind_addr);
	lfd = open_sock(SOCK_STREAM, tcp_port, bind_addr);
	for (i = 0; i < MAX_CLIENTS; i++)
		cl[i].fd = -1, cl[i].len = 0, cl[i].last_active = 0;
	printf("fo-netecho: ready id=%s udp=%d tcp=%d\n", id, udp_port, tcp_port);
	fflush(stdout);

	while (!stop) {
		int n = 2;
		pfd[0] = (struct pollfd){ .fd = ufd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < MAX_CLIENTS; i++)
			pfd[n++] = (struct pollfd){ .fd = cl[i].fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n, 1000) < 0) {
			if (errno == EINTR)
				continue;
			perror("fo-netecho: poll");
			return 1;
		}
		round_no++;
		if (pfd[0].revents)
			udp_round(ufd);
		// The clients first, so that those that closed free their
		// slots before new ones are taken.
		for (i = 0; i < MAX_CLIENTS; i++)
			if (cl[i].fd >= 0 && pfd[2 + i].revents) {
				cl[i].last_active = round_no;
				client_read(&cl[i]);
			}
		if (pfd[1].revents & POLLIN)
			accept_all(lfd, cl, round_no);
	}
	printf("fo-netecho: id=%s udp_requests=%lu udp_bad=%lu tcp_connections=%lu tcp_requests=%lu "
	       "tcp_bad=%lu tcp_dropped=%lu\n",
	       id, n_udp, n_udp_bad, n_tcp_conn, n_tcp_req, n_tcp_bad, n_tcp_drop);
	return 0;
}
