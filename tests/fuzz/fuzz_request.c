/* SPDX-License-Identifier: MIT */
/* libFuzzer: one control request line (io/control_requests.c's parser).
 * A refusal must carry an error that is printable ASCII (it is sent to the
 * client inside JSON and may reach a terminal). */
#include <stdint.h>
#include <stdlib.h>

#include "io/control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fo_request req;
	char err[512];

	err[0] = '\0';
	if (fo_control_parse_request((const char *)data, size, &req, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();
		for (const char *c = err; *c; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
				abort();
	}
	return 0;
}
