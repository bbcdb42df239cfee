/* SPDX-License-Identifier: MIT */
/*
 * emberd's configuration: an INI file (libinih) parsed into a struct, with every
 * error reported as "FILE:LINE: message". Pure: text in, struct out.
 */
#ifndef EMBER_CONFIG_H
#define EMBER_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_DEFAULT_CONFIG "/etc/ember/ember.conf"
#define EMBER_DEFAULT_DATA_DIR "/var/lib/ember"

/* Bounds of user-settable values. */
#define EMBER_HZ_MIN 1
#define EMBER_HZ_MAX 999
#define EMBER_INTERVAL_MIN_NS (1000000000LL)		/* 1 s */
#define EMBER_INTERVAL_MAX_NS (3600LL * 1000000000LL)	/* 1 h */
#define CONFIG_MAX_ERRORS 64
#define CONFIG_MAX_BYTES (1u << 20)

struct ember_config {
	unsigned int hz;		/* samples per second per CPU */
	int64_t interval_ns;		/* one profile per interval */
	char data_dir[PATH_MAX];	/* local history lives here */
	bool include_idle;		/* count the idle task's samples too */
};

/* Errors collected while parsing, each "FILE:LINE: message". */
struct config_errors {
	char msg[CONFIG_MAX_ERRORS][256];
	size_t n;
	size_t dropped;			/* errors past CONFIG_MAX_ERRORS */
};

void config_defaults(struct ember_config *c);
/* Parses text over c (which holds defaults). 0, or -EINVAL with errs filled. */
int config_parse(const char *text, size_t len, const char *filename, struct ember_config *c,
		 struct config_errors *errs);
/* Reads and parses a file; a missing or unreadable file is an error in errs. */
int config_load(const char *path, struct ember_config *c, struct config_errors *errs);
/* Validates a value given on the command line, e.g. ("hz", "99"). Same rules. */
int config_set(struct ember_config *c, const char *key, const char *value, char *err,
	       size_t errlen);

#endif
