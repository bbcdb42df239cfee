// SPDX-License-Identifier: MIT
/*
 * Application matching: [app] rules (fnmatch globs, every rule must hold, first
 * app wins), service-name inference, and the label set of a profile series.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps.h"
#include "labels.h"
#include "utf8.h"

/* A process's facts, read on demand when fill is set (else pi holds them all). */
struct facts {
	struct proc_info *pi;
	app_fill_fn fill;
	app_env_fn env;
	void *arg;
	int err; /* of fill: the process is gone */
};

/* Whether the fields of mask are in pi, reading them first if need be. */
static bool have(struct facts *f, unsigned int mask)
{
	if (!f->fill || (f->pi->have & mask) == mask)
		return true;
	if (!f->err)
		f->err = f->fill(mask & ~f->pi->have, f->pi, f->arg);
	return !f->err;
}

static unsigned int rule_field(enum app_rule_kind kind)
{
	switch (kind) {
	case RULE_UNIT:
	case RULE_CGROUP:
	case RULE_CONTAINER:
		return PROCINFO_CGROUP;
	case RULE_EXE:
		return PROCINFO_EXE;
	case RULE_COMM:
		return PROCINFO_COMM;
	case RULE_CMDLINE:
		return PROCINFO_CMDLINE;
	case RULE_ENV:
		break;
	}
	return 0;
}

/* The property a rule looks at; NULL when the process does not have it. */
static const char *rule_subject(const struct app_rule *r, struct facts *f, char *buf, size_t len)
{
	const struct proc_info *pi = f->pi;

	if (!have(f, rule_field(r->kind)))
		return NULL;
	switch (r->kind) {
	case RULE_UNIT:
		return pi->unit[0] ? pi->unit : NULL;
	case RULE_CGROUP:
		return pi->cgroup[0] ? pi->cgroup : NULL;
	case RULE_EXE:
		return pi->exe[0] ? pi->exe : NULL;
	case RULE_COMM:
		return pi->comm;
	case RULE_CMDLINE:
		return pi->cmdline[0] ? pi->cmdline : NULL;
	case RULE_CONTAINER:
		return pi->container_id[0] ? pi->container_id : NULL;
	case RULE_ENV:
		return f->env && !f->env(r->env, buf, len, f->arg) ? buf : NULL;
	}
	return NULL;
}

static bool app_matches(const struct app_config *a, struct facts *f)
{
	char buf[CONFIG_VALUE_MAX * 4];

	for (size_t i = 0; i < a->n_rules; i++) {
		const char *s = rule_subject(&a->rules[i], f, buf, sizeof(buf));

		if (!s || fnmatch(a->rules[i].pattern, s, 0))
			return false;
	}
	return a->n_rules > 0;
}

/* apps_infer_service, reading each fact only when the ones before it said nothing. */
static void infer_service(struct facts *f, char *out, size_t len)
{
	const struct proc_info *pi = f->pi;
	size_t n;
	const char *base;

	if (!have(f, PROCINFO_CGROUP))
		return;
	n = strlen(pi->unit);
	if (n > 8 && !strcmp(pi->unit + n - 8, ".service"))
		snprintf(out, len, "%.*s", (int)(n - 8), pi->unit);
	else if (n)
		snprintf(out, len, "%s", pi->unit);
	else if (pi->container_id[0])
		snprintf(out, len, "container-%.12s", pi->container_id);
	else if (!have(f, PROCINFO_EXE))
		return;
	else if (pi->exe[0] && (base = strrchr(pi->exe, '/')) && base[1])
		snprintf(out, len, "%s", base + 1);
	else if (!have(f, PROCINFO_COMM | PROCINFO_CMDLINE))
		return;
	else if (!pi->exe[0] && pi->pid != 0 && pi->comm[0] && pi->cmdline[0])
		snprintf(out, len, "%s", pi->comm);
	else
		snprintf(out, len, "kernel");
}

void apps_infer_service(const struct proc_info *pi, char *out, size_t len)
{
	/* without fill, pi is only read */
	struct facts f = {.pi = (struct proc_info *)pi};

	infer_service(&f, out, len);
	label_value_sanitize(out, len);
}

static int classify(const struct ember_config *c, struct facts *f, struct app_match *out)
{
	out->app = -1;
	for (size_t i = 0; i < c->n_apps && !f->err; i++) {
		if (app_matches(&c->apps[i], f)) {
			out->app = (int)i;
			break;
		}
	}
	if (out->app >= 0) {
		snprintf(out->service, sizeof(out->service), "%s", c->apps[out->app].name);
		out->excluded = c->apps[out->app].exclude;
	} else {
		infer_service(f, out->service, sizeof(out->service));
		out->excluded = c->profile_matched;
	}
	/* a file name or comm is anyone's: data, never a second label line */
	out->sanitized = label_value_sanitize(out->service, sizeof(out->service));
	return f->err;
}

void apps_classify(const struct ember_config *c, const struct proc_info *pi, app_env_fn env,
		   void *arg, struct app_match *out)
{
	/* without fill, pi is only read */
	struct facts f = {.pi = (struct proc_info *)pi, .env = env, .arg = arg};

	classify(c, &f, out);
}

int apps_classify_lazy(const struct ember_config *c, struct proc_info *pi, app_fill_fn fill,
		       app_env_fn env, void *arg, struct app_match *out)
{
	struct facts f = {.pi = pi, .fill = fill, .env = env, .arg = arg};

	return classify(c, &f, out);
}

/* labels_put, where an empty value is no label (a process with no name); *rc keeps the first error. */
static void put(struct label_set *s, const char *name, const char *value, int *rc)
{
	int r = *value ? labels_put(s, name, value, NULL) : 0;

	if (r && !*rc)
		*rc = r;
}

int apps_labels(const struct ember_config *c, int app, const char *service, const char *hostname,
		struct label_set *out)
{
	const struct app_config *a = app >= 0 ? &c->apps[app] : NULL;
	int rc = 0;

	out->n = 0;
	/* the hostname is root's; a service name anyone's: both sanitized as values */
	put(out, "service_name", service, &rc);
	put(out, "hostname", hostname, &rc);
	for (size_t i = 0; i < c->n_labels; i++)
		put(out, c->labels[i].name, c->labels[i].value, &rc);
	/* the app's own override the host's */
	for (size_t j = 0; a && j < a->n_labels; j++)
		put(out, a->labels[j].name, a->labels[j].value, &rc);
	return rc;
}
