// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the input as a process's service name (a file name or comm is anyone's),
 * through the labels stored in the history and the series labels pushed from them. The
 * name must stay one label value: the labels pushed are the configured ones, whatever
 * the name holds, and service_name is the name as sanitized.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "apps.h"
#include "config.h"
#include "push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *value_of(const struct push_labels *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].name, name))
			return l->v[i].value;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ember_config c;
	static int init;
	char name[CONFIG_NAME_MAX], text[4096];
	struct push_profile p = {.type = "cpu", .app = "", .labels = text};
	struct push_labels l;
	size_t n = size < sizeof(name) - 1 ? size : sizeof(name) - 1;

	if (!init) {
		config_defaults(&c);
		init = 1;
	}
	memcpy(name, data, n);
	name[n] = '\0';
	apps_label_value_sanitize(name, sizeof(name));
	if (!apps_label_value_ok(name))
		__builtin_trap();
	if (apps_labels_text(&c, -1, name, "host", text, sizeof(text)))
		return 0;
	push_series_labels(&p, NULL, 0, &l);
	/* __name__, __delta__, service_name, hostname: nothing of the name's own */
	for (size_t i = 0; i < l.n; i++)
		if (strcmp(l.v[i].name, "__name__") && strcmp(l.v[i].name, "__delta__") &&
		    strcmp(l.v[i].name, "service_name") && strcmp(l.v[i].name, "hostname"))
			__builtin_trap();
	if (strcmp(value_of(&l, "hostname"), "host") ||
	    (value_of(&l, "service_name") && strcmp(value_of(&l, "service_name"), name)))
		__builtin_trap();
	return 0;
}
