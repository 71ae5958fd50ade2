/* SPDX-License-Identifier: MIT */
/*
 * reader.c - the xenstore reader thread. A guest can make xenstored slow
 * (key storms, big transactions), and reading a member's four keys takes six
 * round trips, so that never happens on the daemon's loop: the loop queues a
 * request, this thread reads over its own connection and posts the keys back
 * through an eventfd. Mapping, binding and every callback stay on the loop
 * thread; the thread shares nothing but these two queues.
 */
#include "hv/xen/xen_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xen_agent_keys_free(struct agent_keys *k)
{
	free(k->ready);
	free(k->gref);
	free(k->port);
	free(k->abi);
	memset(k, 0, sizeof(*k));
}

/* Read the four keys as one consistent snapshot. Missing keys stay NULL. */
static int agent_keys_read(struct xs_handle *xs, fo_domid_t domid, struct agent_keys *k)
{
	static const char *const names[4] = { FO_HB_XS_READY, FO_HB_XS_GREF, FO_HB_XS_PORT,
					      FO_HB_XS_ABI };
	int attempt;

	for (attempt = 0; attempt < 4; attempt++) {
		char **slots[4] = { &k->ready, &k->gref, &k->port, &k->abi };
		xs_transaction_t t = xs_transaction_start(xs);
		char path[128];
		int i;

		if (t == XBT_NULL)
			return neg_errno();
		for (i = 0; i < 4; i++) {
			unsigned len;

			snprintf(path, sizeof(path), "/local/domain/%" PRIu32 "/%s", domid, names[i]);
			*slots[i] = xs_read(xs, t, path, &len);
			if (*slots[i] && strlen(*slots[i]) != len) {
				/* An embedded NUL would hide the rest of the
				 * value from the parser: refuse it visibly. */
				free(*slots[i]);
				*slots[i] = strdup("<embedded NUL>");
			}
		}
		/* Committing a read-only transaction tells us whether the
		 * four values were consistent (EAGAIN: a key changed under us). */
		if (xs_transaction_end(xs, t, false))
			return 0;
		if (errno != EAGAIN)
			return neg_errno();
		xen_agent_keys_free(k);
	}
	return -EAGAIN;
}

static void *reader_main(void *arg)
{
	struct xen_reader *rd = arg;

	pthread_mutex_lock(&rd->h.lock);
	for (;;) {
		struct reader_res res = { 0 };
		uint64_t t0;

		while (!rd->h.stop && rd->n_req == 0)
			pthread_cond_wait(&rd->h.wake, &rd->h.lock);
		if (rd->h.stop)
			break;
		res.domid = rd->req[0].domid;
		res.gen = rd->req[0].gen;
		memmove(&rd->req[0], &rd->req[1], --rd->n_req * sizeof(rd->req[0]));
		pthread_mutex_unlock(&rd->h.lock);

		t0 = mono_ns();
		res.err = agent_keys_read(rd->xs, res.domid, &res.keys);
		res.took_ns = mono_ns() - t0;

		pthread_mutex_lock(&rd->h.lock);
		/* outstanding counted this result in, so there is room */
		rd->res[rd->n_res++] = res;
		xen_helper_post(&rd->h);
	}
	pthread_mutex_unlock(&rd->h.lock);
	return NULL;
}

/* Always paired with xen_reader_stop(), even when xen_reader_start() never ran. */
void xen_reader_init(struct xen_reader *rd)
{
	xen_helper_init(&rd->h);
}

int xen_reader_start(struct xen_reader *rd)
{
	rd->xs = xs_open(0);
	if (!rd->xs)
		return neg_errno();
	return xen_helper_start(&rd->h, reader_main, rd, 0);
}

void xen_reader_stop(struct xen_reader *rd)
{
	size_t i;

	xen_helper_join(&rd->h);
	for (i = 0; i < rd->n_res; i++)
		xen_agent_keys_free(&rd->res[i].keys);
	rd->n_res = 0;
	if (rd->xs)
		xs_close(rd->xs);
	xen_helper_destroy(&rd->h);
}

bool xen_reader_request(struct xen_reader *rd, fo_domid_t domid, uint64_t gen)
{
	bool queued = false;

	pthread_mutex_lock(&rd->h.lock);
	if (rd->outstanding < READER_QUEUE) {
		rd->req[rd->n_req].domid = domid;
		rd->req[rd->n_req].gen = gen;
		rd->n_req++;
		rd->outstanding++;
		pthread_cond_signal(&rd->h.wake);
		queued = true;
	}
	pthread_mutex_unlock(&rd->h.lock);
	return queued;
}

/* Take every waiting result; returns how many were copied into out. */
size_t xen_reader_collect(struct xen_reader *rd, struct reader_res *out)
{
	size_t n;

	xen_helper_clear(&rd->h);
	pthread_mutex_lock(&rd->h.lock);
	n = rd->n_res;
	memcpy(out, rd->res, n * sizeof(*out));
	rd->n_res = 0;
	rd->outstanding -= (unsigned)n;
	pthread_mutex_unlock(&rd->h.lock);
	return n;
}
