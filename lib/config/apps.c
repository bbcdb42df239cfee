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

/* The property a rule looks at; NULL when the process does not have it. */
static const char *rule_subject(const struct app_rule *r, const struct proc_info *pi,
				app_env_fn env, void *arg, char *buf, size_t len)
{
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
		return env && !env(r->env, buf, len, arg) ? buf : NULL;
	}
	return NULL;
}

static bool app_matches(const struct app_config *a, const struct proc_info *pi, app_env_fn env,
			void *arg)
{
	char buf[CONFIG_VALUE_MAX * 4];

	for (size_t i = 0; i < a->n_rules; i++) {
		const char *s = rule_subject(&a->rules[i], pi, env, arg, buf, sizeof(buf));

		if (!s || fnmatch(a->rules[i].pattern, s, 0))
			return false;
	}
	return a->n_rules > 0;
}

void apps_infer_service(const struct proc_info *pi, char *out, size_t len)
{
	size_t n = strlen(pi->unit);
	const char *base;

	if (n > 8 && !strcmp(pi->unit + n - 8, ".service"))
		snprintf(out, len, "%.*s", (int)(n - 8), pi->unit);
	else if (n)
		snprintf(out, len, "%s", pi->unit);
	else if (pi->container_id[0])
		snprintf(out, len, "container-%.12s", pi->container_id);
	else if (pi->exe[0] && (base = strrchr(pi->exe, '/')) && base[1])
		snprintf(out, len, "%s", base + 1);
	else if (!pi->exe[0] && pi->pid != 0 && pi->comm[0] && pi->cmdline[0])
		snprintf(out, len, "%s", pi->comm);
	else
		snprintf(out, len, "kernel");
}

void apps_classify(const struct ember_config *c, const struct proc_info *pi, app_env_fn env,
		   void *arg, struct app_match *out)
{
	out->app = -1;
	for (size_t i = 0; i < c->n_apps; i++) {
		if (app_matches(&c->apps[i], pi, env, arg)) {
			out->app = (int)i;
			break;
		}
	}
	if (out->app >= 0) {
		snprintf(out->service, sizeof(out->service), "%s", c->apps[out->app].name);
		out->excluded = c->apps[out->app].exclude;
	} else {
		apps_infer_service(pi, out->service, sizeof(out->service));
		out->excluded = c->profile_matched;
	}
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct config_label *)a)->name,
		      ((const struct config_label *)b)->name);
}

int apps_labels_text(const struct ember_config *c, int app, const char *service,
		     const char *hostname, char *out, size_t len)
{
	struct config_label v[CONFIG_MAX_SERIES_LABELS];
	const struct app_config *a = app >= 0 ? &c->apps[app] : NULL;
	size_t n = 0, off = 0;

	snprintf(v[n].name, sizeof(v[n].name), "service_name");
	snprintf(v[n++].value, sizeof(v[0].value), "%s", service);
	snprintf(v[n].name, sizeof(v[n].name), "hostname");
	snprintf(v[n++].value, sizeof(v[0].value), "%s", hostname);
	for (size_t i = 0; i < c->n_labels; i++) {
		bool overridden = false;

		for (size_t j = 0; a && j < a->n_labels; j++)
			overridden |= !strcmp(a->labels[j].name, c->labels[i].name);
		if (!overridden && n < CONFIG_MAX_SERIES_LABELS)
			v[n++] = c->labels[i];
	}
	for (size_t j = 0; a && j < a->n_labels && n < CONFIG_MAX_SERIES_LABELS; j++)
		v[n++] = a->labels[j];
	qsort(v, n, sizeof(v[0]), cmp_label);
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(out + off, len - off, "%s=%s\n", v[i].name, v[i].value);

		if (w < 0 || (size_t)w >= len - off)
			return -ENOSPC;
		off += w;
	}
	if (!n && len)
		out[0] = '\0';
	return 0;
}
