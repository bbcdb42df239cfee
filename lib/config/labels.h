/* SPDX-License-Identifier: MIT */
/*
 * A profile series' labels as name/value pairs, from the application that
 * gives them to the collector that takes them. The history stores a set as
 * text (labels_format) and hands the text back (labels_parse): the one
 * encoding, written and read here only, so that no value can become a name,
 * a second label or a line of its own.
 */
#ifndef EMBER_LABELS_H
#define EMBER_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* A series' labels: sorted by name, each name once, every value a label_value_ok one. */
struct label_set {
	struct config_label v[CONFIG_MAX_SERIES_LABELS];
	size_t n;
};

/* Why a stored line did not come back as a label. */
enum label_reject {
	LABEL_REJECT_MALFORMED = 0, /* no '=' */
	LABEL_REJECT_NAME,	    /* not a name config_label_name_ok accepts */
	LABEL_REJECT_VALUE,	    /* empty, or longer than CONFIG_VALUE_MAX - 1 bytes */
	LABEL_REJECT_TWICE,	    /* a name an earlier line had */
	LABEL_REJECT_LIMIT,	    /* past CONFIG_MAX_SERIES_LABELS */
};

/* Told of each line not taken: its name (the whole line when malformed). */
typedef void (*label_reject_fn)(void *arg, const char *name, size_t len, enum label_reject why);

/*
 * Whether s is a label value ember stores and sends: valid UTF-8 without
 * control characters, so that it cannot end a line or reach a terminal as an
 * escape sequence.
 */
bool label_value_ok(const char *s);
/*
 * Makes s (a string in size bytes) such a value: invalid UTF-8 becomes U+FFFD,
 * control characters '_'. Whether it had to change.
 */
bool label_value_sanitize(char *s, size_t size);

/*
 * Sets name to value in s, replacing the value a name had. The value is cut
 * to CONFIG_VALUE_MAX - 1 bytes and sanitized; *sanitized (when set) is raised
 * when it had to change. 0, -EINVAL for a name config_label_name_ok refuses or an
 * empty value, -ENOSPC when s is full.
 */
int labels_put(struct label_set *s, const char *name, const char *value, bool *sanitized);
/* The value of name in s, or NULL. */
const char *labels_get(const struct label_set *s, const char *name);

/*
 * The stored form: one "name=value\n" line per label, in s's order. 0, or
 * -ENOSPC when out (len bytes) is too small.
 */
int labels_format(const struct label_set *s, char *out, size_t len);
/*
 * s from stored text (NULL reads as none). A line that is not a label is left
 * out and told to reject (when set); a value that is not a label_value_ok one
 * (stored by an older ember) is sanitized; service_name is taken before the
 * others, so that a set over the limit keeps it. The number of lines left out.
 */
size_t labels_parse(const char *text, struct label_set *s, label_reject_fn reject, void *arg);

#endif
