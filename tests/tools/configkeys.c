// SPDX-License-Identifier: MIT
/*
 * Prints the keys' table (lib/config/keys.c), one key a line: section, name,
 * default ("-": none), reload class, doc; tab-separated. config_docs.sh checks
 * config/ember.conf and ember.conf(5) against it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "keys.h"

int main(void)
{
	for (size_t i = 0; i < config_keys_n; i++) {
		const struct config_key *k = &config_keys[i];

		printf("%s\t%s\t%s\t%s\t%s\n", config_section_name(k->section), k->name,
		       k->def ? k->def : "-", config_reload_name(k->reload), k->doc);
	}
	return fflush(stdout) || ferror(stdout) ? EXIT_FAILURE : EXIT_SUCCESS;
}
