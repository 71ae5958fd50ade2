/* SPDX-License-Identifier: MIT */
/* libFuzzer: a hostile guest's heartbeat pages, one after the other, into
 * one tracker (core/monitor.c). Checks the one property that matters: a
 * page is progress only if it is valid and its sequence moved forward
 * from the last accepted one of the same agent instance. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fo_hb_tracker t;
	struct fo_hb_page page;
	uint64_t now = 1000000000ull;

	memset(&t, 0, sizeof(t));
	fo_hb_reset(&t);
	/* Each input byte after a page decides the gap and, rarely, a
	 * reset or a require-progress, like the daemon's own calls. */
	while (size >= sizeof(page) + 1) {
		const char *why = NULL;
		uint64_t before_seq, before_boot;
		bool had;
		enum fo_hb_verdict v;
		uint8_t op = data[sizeof(page)];

		memcpy(&page, data, sizeof(page));
		data += sizeof(page) + 1;
		size -= sizeof(page) + 1;
		now += (uint64_t)(op & 0x3f) * 1000000ull;
		if (op == 0xff)
			fo_hb_reset(&t);
		else if (op == 0xfe)
			fo_hb_require_progress(&t);
		before_seq = t.sequence, before_boot = t.boot_id, had = t.have_seq;
		v = fo_hb_observe(&t, &page, now, &why);
		if (v == FO_HB_INVALID && !why)
			abort(); /* garbage is always named */
		if (v == FO_HB_PROGRESS &&
		    (!had || page.boot_id != before_boot || page.sequence <= before_seq ||
		     page.sequence - before_seq > 1000000ull ||
		     page.magic != FO_HB_MAGIC || page.abi_version != FO_HB_ABI_VERSION))
			abort();
	}
	return 0;
}
