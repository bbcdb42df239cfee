// SPDX-License-Identifier: MIT
/*
 * The keys' table, row by row: every key's default, its bounds (below the
 * least, above the most, garbage, the bounds themselves) and its field.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "keys.h"
#include "suites.h"

/* Sets k from value in a configuration of defaults; 0 or the setter's error, err its message. */
static int try_set(struct ember_config *c, const struct config_key *k, const char *name,
		   const char *value, char *err, size_t len)
{
	config_defaults(c);
	err[0] = '\0';
	return config_key_set(c, k, name ? name : k->name, value, err, len);
}

/* A refused value: an error naming the key, and the default left in place. */
static void refused(const struct config_key *k, const char *name, const char *value)
{
	struct ember_config c, d;
	char err[256];

	config_defaults(&d);
	ck_assert_msg(try_set(&c, k, name, value, err, sizeof(err)) != 0, "%s = '%.60s' accepted",
		      name ? name : k->name, value);
	ck_assert_msg(err[0], "%s: refused without a message", k->name);
	if (k->type != CONFIG_T_LABEL && k->type != CONFIG_T_HEADER)
		ck_assert_msg(!strncmp(err, k->name, strlen(k->name)),
			      "%s: the message does not name the key: %s", k->name, err);
	ck_assert_msg(config_key_equal(k, &c, &d), "%s: a refused value changed it", k->name);
}

/* An accepted value, read back as the file would write it when want is given. */
static void accepted(const struct config_key *k, const char *name, const char *value,
		     const char *want)
{
	struct ember_config c;
	char err[256], got[PATH_MAX];

	ck_assert_msg(try_set(&c, k, name, value, err, sizeof(err)) == 0, "%s = '%.60s': %s",
		      name ? name : k->name, value, err);
	config_key_format(k, &c, got, sizeof(got));
	if (want)
		ck_assert_msg(!strcmp(got, want), "%s = %s read back as %s", k->name, value, got);
}

/* A bound as the file writes a value of k's type; a duration or a size off by delta. */
static void number(const struct config_key *k, uint64_t v, int delta, char *buf, size_t len)
{
	if (k->type == CONFIG_T_DURATION) /* the finest unit a duration takes: 1ms */
		snprintf(buf, len, "%" PRIu64 "ms", v / 1000000 + delta);
	else
		snprintf(buf, len, "%" PRIu64, v + delta);
}

static void check_number(const struct config_key *k)
{
	uint64_t top = k->type == CONFIG_T_DURATION ? INT64_MAX : UINT64_MAX;
	struct ember_config c;
	char v[64], err[256];

	/* durations' bounds are whole milliseconds, so that the file can write them */
	if (k->type == CONFIG_T_DURATION)
		ck_assert_msg(k->min % 1000000 == 0 && (k->max == top || k->max % 1000000 == 0),
			      "%s: bounds not in ms", k->name);
	number(k, k->min, 0, v, sizeof(v));
	accepted(k, NULL, v, NULL);
	if (k->min > 0) {
		number(k, k->min, -1, v, sizeof(v));
		refused(k, NULL, v);
	}
	if (k->max < top) {
		number(k, k->max, 0, v, sizeof(v));
		accepted(k, NULL, v, NULL);
		number(k, k->max, 1, v, sizeof(v));
		refused(k, NULL, v);
	}
	/* a number the field cannot hold is no bound: the table's max must fit it */
	if (k->size < sizeof(uint64_t)) {
		ck_assert_uint_le(k->max, k->size == 1 ? 1 : UINT32_MAX);
	}
	refused(k, NULL, "-1");
	refused(k, NULL, "12 apples");
	refused(k, NULL, "");
	refused(k, NULL, "99999999999999999999999");
	ck_assert_int_eq(try_set(&c, k, NULL, "ten", err, sizeof(err)), -EINVAL);
}

/* A file only its owner may read, and one its group may read too. */
static void secret_files(char *own, char *shared, size_t len)
{
	int fd;

	snprintf(own, len, "/tmp/ember-keys-XXXXXX");
	fd = mkstemp(own);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(chmod(own, 0600), 0);
	snprintf(shared, len, "/tmp/ember-keys-XXXXXX");
	fd = mkstemp(shared);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(chmod(shared, 0640), 0);
}

/* A string of n copies of c after prefix. */
static char *long_text(const char *prefix, char c, size_t n)
{
	size_t p = strlen(prefix);
	char *s = malloc(p + n + 1);

	ck_assert_ptr_nonnull(s);
	memcpy(s, prefix, p);
	memset(s + p, c, n);
	s[p + n] = '\0';
	return s;
}

static void check_text(const struct config_key *k)
{
	char own[64], shared[64], *s;

	switch (k->type) {
	case CONFIG_T_URL:
		accepted(k, NULL, "https://pyro.example:4040/", "https://pyro.example:4040");
		refused(k, NULL, "ftp://pyro.example");
		refused(k, NULL, "https://");
		s = long_text("https://", 'a', k->max - 8);
		accepted(k, NULL, s, s);
		free(s);
		s = long_text("https://", 'a', k->max - 7);
		refused(k, NULL, s);
		free(s);
		break;
	case CONFIG_T_TEXT:
		accepted(k, NULL, "team-a", "team-a");
		refused(k, NULL, "a|b");
		refused(k, NULL, "a:b");
		s = long_text("", 'a', k->max);
		accepted(k, NULL, s, s);
		free(s);
		s = long_text("", 'a', k->max + 1);
		refused(k, NULL, s);
		free(s);
		break;
	case CONFIG_T_SECRET:
		secret_files(own, shared, sizeof(own));
		accepted(k, NULL, own, own);
		refused(k, NULL, shared);
		refused(k, NULL, "relative/secret");
		refused(k, NULL, "/nonexistent/secret");
		unlink(own);
		unlink(shared);
		break;
	default: /* paths */
		accepted(k, NULL, "/srv/ember", "/srv/ember");
		refused(k, NULL, "relative/dir");
		s = long_text("/", 'a', k->max - 1);
		accepted(k, NULL, s, s);
		free(s);
		s = long_text("/", 'a', k->max);
		refused(k, NULL, s);
		free(s);
	}
}

/* prefix.NAME = VALUE: good and bad names, and one past the most the array holds. */
static void check_pairs(const struct config_key *k)
{
	struct ember_config c;
	char name[64], err[256];
	size_t most = k->size / sizeof(struct config_label);
	int rc = 0;

	snprintf(name, sizeof(name), "%sTeam_1", k->name);
	accepted(k, name, "payments", "1 set");
	snprintf(name, sizeof(name), "%s", k->name);
	refused(k, name, "x");
	snprintf(name, sizeof(name), "%s%s", k->name,
		 k->type == CONFIG_T_LABEL ? "__name__" : "Authorization");
	refused(k, name, "x");
	snprintf(name, sizeof(name), "%sx", k->name);
	refused(k, name, k->type == CONFIG_T_LABEL ? "" : "a\nb");
	config_defaults(&c);
	for (size_t i = 0; i <= most && !rc; i++) {
		snprintf(name, sizeof(name), "%sk%zu", k->name, i);
		rc = config_key_set(&c, k, name, "v", err, sizeof(err));
		ck_assert_msg(i == most || rc == 0, "%s: %s", name, err);
	}
	ck_assert_int_eq(rc, -E2BIG);
}

START_TEST(test_every_key_bounds)
{
	for (size_t i = 0; i < config_keys_n; i++) {
		const struct config_key *k = &config_keys[i];

		switch (k->type) {
		case CONFIG_T_UINT:
		case CONFIG_T_DURATION:
		case CONFIG_T_SIZE:
			check_number(k);
			break;
		case CONFIG_T_BOOL:
			accepted(k, NULL, "yes", "yes");
			accepted(k, NULL, "Off", "no");
			accepted(k, NULL, "1", "yes");
			refused(k, NULL, "maybe");
			refused(k, NULL, "");
			break;
		case CONFIG_T_CHOICE:
			for (size_t j = 0; k->choices[j]; j++)
				accepted(k, NULL, k->choices[j], k->choices[j]);
			refused(k, NULL, "none");
			refused(k, NULL, "ALL");
			break;
		case CONFIG_T_LABEL:
		case CONFIG_T_HEADER:
			check_pairs(k);
			break;
		default:
			check_text(k);
		}
	}
}
END_TEST

/* Every default is a value of the key, and what config_defaults() holds reads back as it. */
START_TEST(test_defaults_from_table)
{
	struct ember_config d, c;
	char err[256], text[PATH_MAX];

	config_defaults(&d);
	for (size_t i = 0; i < config_keys_n; i++) {
		const struct config_key *k = &config_keys[i];

		if (!k->def)
			continue;
		memset(&c, 0, sizeof(c));
		ck_assert_msg(config_key_set(&c, k, k->name, k->def, err, sizeof(err)) == 0,
			      "%s's default '%s': %s", k->name, k->def, err);
		ck_assert_msg(config_key_equal(k, &c, &d), "%s: the default is not set", k->name);
		config_key_format(k, &d, text, sizeof(text));
		memset(&c, 0, sizeof(c));
		ck_assert_int_eq(config_key_set(&c, k, k->name, text, err, sizeof(err)), 0);
		ck_assert_msg(config_key_equal(k, &c, &d), "%s: '%s' reads back otherwise", k->name,
			      text);
	}
	/* the defaults other modules name too */
	ck_assert_uint_eq(d.offcpu_parked, EMBER_OFFCPU_PARKED_DEFAULT);
	ck_assert_uint_eq(d.collector.max_profile_bytes, CONFIG_DEFAULT_MAX_PROFILE_BYTES);
	ck_assert_uint_eq(d.collector.max_samples, CONFIG_DEFAULT_MAX_SAMPLES);
	ck_assert_int_eq(d.collector.protocol, COLLECTOR_PUSH);
}
END_TEST

/* Names: unique in their section, a doc line each, found by name; prefixes take NAME. */
START_TEST(test_names)
{
	for (size_t i = 0; i < config_keys_n; i++) {
		const struct config_key *k = &config_keys[i];

		ck_assert_msg(k->doc && k->doc[0], "%s has no doc line", k->name);
		ck_assert_ptr_eq(config_key_find(k->section, k->name), k);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(k->section != config_keys[j].section ||
					      strcmp(k->name, config_keys[j].name),
				      "%s twice", k->name);
	}
	ck_assert_ptr_nonnull(config_key_find(CONFIG_SECTION_DAEMON, "labels.env"));
	ck_assert_ptr_null(config_key_find(CONFIG_SECTION_DAEMON, "url"));
	ck_assert_ptr_null(config_key_find(CONFIG_SECTION_COLLECTOR, "hz"));
	ck_assert_ptr_null(config_key_find(CONFIG_SECTION_DAEMON, "offcpu_foo"));
	ck_assert_str_eq(config_reload_name(CONFIG_RELOAD_RESTART), "restart");
}
END_TEST

/* What a reload compares and keeps: one key's field, and nothing else. */
START_TEST(test_equal_copy)
{
	const struct config_key *hz = config_key_find(CONFIG_SECTION_DAEMON, "hz");
	const struct config_key *dir = config_key_find(CONFIG_SECTION_DAEMON, "data_dir");
	struct ember_config a, b;
	char err[256];

	config_defaults(&a);
	config_defaults(&b);
	ck_assert_int_eq(config_key_set(&b, hz, "hz", "99", err, sizeof(err)), 0);
	ck_assert_int_eq(config_key_set(&b, dir, "data_dir", "/srv/x", err, sizeof(err)), 0);
	ck_assert(!config_key_equal(hz, &a, &b));
	config_key_copy(hz, &b, &a);
	ck_assert(config_key_equal(hz, &a, &b));
	ck_assert_str_eq(b.data_dir, "/srv/x");
	/* set back to the default: equal again */
	ck_assert_int_eq(config_key_set(&b, dir, "data_dir", "/var/lib/ember", err, sizeof(err)),
			 0);
	ck_assert(config_key_equal(dir, &a, &b));
}
END_TEST

Suite *keys_suite(void)
{
	Suite *s = suite_create("keys");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_every_key_bounds);
	tcase_add_test(tc, test_defaults_from_table);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_equal_copy);
	suite_add_tcase(s, tc);
	return s;
}
