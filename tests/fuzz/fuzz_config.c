/* SPDX-License-Identifier: MIT */
/* libFuzzer: the config parser (core/config/) on arbitrary bytes. Every
 * input must end in a parsed config or a named error, never a crash,
 * a leak or undefined behaviour (ASan + UBSan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fo_config cfg; /* large: not on the fuzzer's stack */
	char err[512];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	err[0] = '\0';
	if (fo_config_parse(text, &cfg, err, sizeof(err)) < 0 && !err[0])
		abort(); /* a refusal must say what was wrong */
	free(text);
	return 0;
}
