// SPDX-License-Identifier: MIT
/* libFuzzer target: the configuration parser on arbitrary text. */
#include <stddef.h>
#include <stdint.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_config c;
	struct config_errors e = {};

	config_defaults(&c);
	config_parse((const char *)data, size, "fuzz", &c, &e);
	config_free(&c);
	return 0;
}
