// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the input as a process's service name (a file name or comm is anyone's),
 * through the labels stored in the history and the series labels pushed from them. The
 * name must stay one label value: the labels pushed are the configured ones, whatever
 * the name holds, and service_name is the name as sanitized. Then the input as stored
 * label text (a damaged history): what comes back are labels ember could have stored,
 * and storing them again reads back the same set.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "apps.h"
#include "config.h"
#include "labels.h"
#include "push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *value_of(const struct push_labels *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].name, name))
			return l->v[i].value;
	return NULL;
}

/* The input as stored text: every label read is valid, and reads back the same once stored. */
static void stored_round_trip(const uint8_t *data, size_t size)
{
	static char in[1 << 16],
		out[CONFIG_MAX_SERIES_LABELS * (CONFIG_NAME_MAX + CONFIG_VALUE_MAX)];
	struct label_set s, back;
	size_t n = size < sizeof(in) - 1 ? size : sizeof(in) - 1;

	memcpy(in, data, n);
	in[n] = '\0';
	labels_parse(in, &s, NULL, NULL);
	for (size_t i = 0; i < s.n; i++)
		if (!config_label_name_ok(s.v[i].name) || !label_value_ok(s.v[i].value) ||
		    !s.v[i].value[0] || (i && strcmp(s.v[i - 1].name, s.v[i].name) >= 0))
			__builtin_trap();
	if (labels_format(&s, out, sizeof(out)) || labels_parse(out, &back, NULL, NULL) ||
	    back.n != s.n)
		__builtin_trap();
	for (size_t i = 0; i < s.n; i++)
		if (strcmp(back.v[i].name, s.v[i].name) || strcmp(back.v[i].value, s.v[i].value))
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ember_config c;
	static int init;
	char name[CONFIG_NAME_MAX], text[16384];
	struct label_set set;
	struct push_profile p = {.type = "cpu", .app = "", .labels = text};
	struct push_labels l;
	size_t n = size < sizeof(name) - 1 ? size : sizeof(name) - 1;

	if (!init) {
		config_defaults(&c);
		init = 1;
	}
	memcpy(name, data, n);
	name[n] = '\0';
	label_value_sanitize(name, sizeof(name));
	if (!label_value_ok(name))
		__builtin_trap();
	if (apps_labels(&c, -1, name, "host", &set) || labels_format(&set, text, sizeof(text)))
		__builtin_trap();
	push_series_labels(&p, NULL, 0, &l);
	/* __name__, __delta__, service_name, hostname: nothing of the name's own */
	for (size_t i = 0; i < l.n; i++)
		if (strcmp(l.v[i].name, "__name__") && strcmp(l.v[i].name, "__delta__") &&
		    strcmp(l.v[i].name, "service_name") && strcmp(l.v[i].name, "hostname"))
			__builtin_trap();
	if (strcmp(value_of(&l, "hostname"), "host") ||
	    (value_of(&l, "service_name") && strcmp(value_of(&l, "service_name"), name)))
		__builtin_trap();
	stored_round_trip(data, size);
	return 0;
}
