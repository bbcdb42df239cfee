// SPDX-License-Identifier: MIT
/*
 * A series' labels as pairs, and their one stored form ("name=value" lines).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "labels.h"
#include "utf8.h"

bool label_value_ok(const char *s)
{
	size_t len = strlen(s);

	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return utf8_valid(s, len);
}

bool label_value_sanitize(char *s, size_t size)
{
	char tmp[CONFIG_VALUE_MAX];
	size_t n;

	if (label_value_ok(s))
		return false;
	n = utf8_sanitize(s, strlen(s), tmp, sizeof(tmp) < size ? sizeof(tmp) : size, 0);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)tmp[i] < 0x20 || tmp[i] == 0x7f)
			tmp[i] = '_';
	memcpy(s, tmp, n + 1);
	return true;
}

/* Where name is in s, or where it would go (s->n when after every one). */
static size_t slot(const struct label_set *s, const char *name, bool *found)
{
	size_t i = 0;
	int c = 1;

	while (i < s->n && (c = strcmp(s->v[i].name, name)) < 0)
		i++;
	*found = i < s->n && !c;
	return i;
}

int labels_put(struct label_set *s, const char *name, const char *value, bool *sanitized)
{
	struct config_label *l;
	bool found;
	size_t i;

	if (!config_label_name_ok(name) || !*value)
		return -EINVAL;
	i = slot(s, name, &found);
	if (!found) {
		if (s->n == CONFIG_MAX_SERIES_LABELS)
			return -ENOSPC;
		memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(s->v[0]));
		s->n++;
	}
	l = &s->v[i];
	snprintf(l->name, sizeof(l->name), "%s", name);
	snprintf(l->value, sizeof(l->value), "%s", value);
	if (label_value_sanitize(l->value, sizeof(l->value)) && sanitized)
		*sanitized = true;
	return 0;
}

const char *labels_get(const struct label_set *s, const char *name)
{
	bool found;
	size_t i = slot(s, name, &found);

	return found ? s->v[i].value : NULL;
}

int labels_format(const struct label_set *s, char *out, size_t len)
{
	size_t off = 0;

	if (!len)
		return -ENOSPC;
	out[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		int w = snprintf(out + off, len - off, "%s=%s\n", s->v[i].name, s->v[i].value);

		if (w < 0 || (size_t)w >= len - off)
			return -ENOSPC;
		off += (size_t)w;
	}
	return 0;
}

/* Takes one stored line (without its '\n') into s, or says why not and where its name ends. */
static bool take_line(struct label_set *s, const char *p, size_t len, size_t *nlen,
		      enum label_reject *why)
{
	const char *eq = memchr(p, '=', len);
	char name[CONFIG_NAME_MAX], value[CONFIG_VALUE_MAX];
	size_t vlen;
	bool found;

	*nlen = eq ? (size_t)(eq - p) : len;
	vlen = eq ? len - *nlen - 1 : 0;
	*why = LABEL_REJECT_MALFORMED;
	if (!eq)
		return false;
	*why = LABEL_REJECT_NAME;
	if (*nlen >= sizeof(name))
		return false;
	memcpy(name, p, *nlen);
	name[*nlen] = '\0';
	if (!config_label_name_ok(name))
		return false;
	*why = LABEL_REJECT_VALUE;
	if (!vlen || vlen >= sizeof(value))
		return false;
	memcpy(value, eq + 1, vlen);
	value[vlen] = '\0';
	*why = LABEL_REJECT_TWICE;
	slot(s, name, &found);
	if (found)
		return false;
	*why = LABEL_REJECT_LIMIT;
	return !labels_put(s, name, value, NULL);
}

/* The label every series has: taken first, so that a set over the limit keeps it. */
static bool is_service(const char *p, size_t len)
{
	return len >= 13 && !memcmp(p, "service_name=", 13);
}

size_t labels_parse(const char *text, struct label_set *s, label_reject_fn reject, void *arg)
{
	size_t left_out = 0;

	s->n = 0;
	for (int pass = 0; pass < 2; pass++) {
		const char *p = text;

		while (p && *p) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p), nlen;
			enum label_reject why;

			/* an empty line is no label and nothing lost */
			if (len && is_service(p, len) == !pass &&
			    !take_line(s, p, len, &nlen, &why)) {
				left_out++;
				if (reject)
					reject(arg, p, nlen, why);
			}
			p = nl ? nl + 1 : NULL;
		}
	}
	return left_out;
}
