/* SPDX-License-Identifier: MIT */
/* stream_hooks.c - see stream_hooks.h. */
#include "stream_hooks.h"

#include "stream/state_stream.h"

static void hook_offer(void *ctx, const char *pair, uint64_t newest_cycle, const void *data, uint32_t len,
		       uint64_t cycle)
{
	fo_stream_offer(ctx, pair, newest_cycle, data, len, cycle);
}

static bool hook_take(void *ctx, const char *pair, uint64_t have, void *buf, uint32_t *len, uint64_t *arrival,
		      uint64_t *cycle, uint64_t *peer_cycle)
{
	struct fo_stream_arrival a;

	if (!fo_stream_take(ctx, pair, have, buf, &a))
		return false;
	*len = a.len;
	*arrival = a.arrival;
	*cycle = a.cycle;
	*peer_cycle = a.peer_cycle;
	return true;
}

static void hook_applied(void *ctx, const char *pair, uint64_t arrival, uint64_t cycle)
{
	fo_stream_applied(ctx, pair, arrival, cycle);
}

const struct fo_hv_state_stream fo_stream_relay_hooks = {
	.offer = hook_offer,
	.take = hook_take,
	.applied = hook_applied,
};
