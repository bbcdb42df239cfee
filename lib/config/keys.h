/* SPDX-License-Identifier: MIT */
/*
 * The [daemon] and [collector] keys of ember.conf, one row each: type, bounds,
 * default, what a reload does with it, one line of doc. The parser, the
 * defaults, emberd's reload and the tests (bounds, the docs) all read it.
 */
#ifndef EMBER_CONFIG_KEYS_H
#define EMBER_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The sections whose keys are in the table ([app] sections have their own parser). */
enum config_section {
	CONFIG_SECTION_DAEMON,
	CONFIG_SECTION_COLLECTOR,
};

/* How a key's value is read; what min and max bound. */
enum config_type {
	CONFIG_T_UINT,	   /* a whole number from min to max */
	CONFIG_T_DURATION, /* 500ms, 10s, 2m, 1h, 7d or seconds: ns from min to max */
	CONFIG_T_SIZE,	   /* bytes, with KiB, MiB, GiB, TiB: from min to max */
	CONFIG_T_BOOL,	   /* yes/no, true/false, on/off, 1/0 */
	CONFIG_T_CHOICE,   /* one word of choices, stored as its index */
	CONFIG_T_PATH,	   /* an absolute path of at most max bytes */
	CONFIG_T_SECRET,   /* the same, of a regular file only its owner may access */
	CONFIG_T_TEXT,	   /* at most max bytes, without a line break, '|' or ':' */
	CONFIG_T_URL,	   /* an http:// or https:// URL, its trailing '/' dropped */
	CONFIG_T_LABEL,	   /* prefix.NAME = VALUE: a label */
	CONFIG_T_HEADER,   /* prefix.NAME = VALUE: an HTTP request header */
};

/* What a SIGHUP does with a changed value: never nothing. */
enum config_reload {
	CONFIG_RELOAD_LIVE,    /* applied with the rest of the file */
	CONFIG_RELOAD_RESTART, /* kept at its running value until a restart: logged, by name */
	/* applied when the running daemon can take it, else kept and logged (reload.c weighs it) */
	CONFIG_RELOAD_REFUSED,
};

struct config_key {
	const char *name; /* ending in '.', a prefix: "labels." takes labels.NAME */
	enum config_section section;
	enum config_type type;
	enum config_reload reload;
	uint64_t min, max;	    /* the value's bounds; for text, its longest length */
	const char *def;	    /* the default as the file writes it; NULL: none */
	const char *const *choices; /* CONFIG_T_CHOICE: the words, NULL-terminated */
	size_t off, size;	    /* the field in struct ember_config */
	size_t n_off;		    /* CONFIG_T_LABEL and _HEADER: the field counting them */
	const char *doc;	    /* one line */
};

extern const struct config_key config_keys[];
extern const size_t config_keys_n;

const char *config_section_name(enum config_section s);
const char *config_reload_name(enum config_reload r);
/* The key that takes name in section (a prefix's own: header.X-Team), or NULL. */
const struct config_key *config_key_find(enum config_section s, const char *name);
/*
 * Sets key k, named name in the file, from value. 0, or a negative errno and
 * a message naming the key and the value in err; c keeps its value then.
 */
int config_key_set(struct ember_config *c, const struct config_key *k, const char *name,
		   const char *value, char *err, size_t errlen);
/* Whether a and b hold the same value of k. */
bool config_key_equal(const struct config_key *k, const struct ember_config *a,
		      const struct ember_config *b);
/* Copies k's value from src to dst. */
void config_key_copy(const struct config_key *k, struct ember_config *dst,
		     const struct ember_config *src);
/* k's value in c as the file would write it ("64MiB", "10s"; labels: how many). */
void config_key_format(const struct config_key *k, const struct ember_config *c, char *buf,
		       size_t len);

/* Shared with the [app] parser: a yes/no word; a label added to v[*n]. */
int config_parse_bool(const char *v, bool *out);
int config_add_label(struct config_label *v, size_t *n, const char *name, const char *value,
		     char *err, size_t errlen);

#endif
