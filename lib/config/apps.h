/* SPDX-License-Identifier: MIT */
/*
 * Which application a process belongs to: the first [app] whose rules all hold,
 * or a service name inferred from the process. Pure: process facts in, answer out.
 */
#ifndef EMBER_APPS_H
#define EMBER_APPS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "labels.h"
#include "procinfo.h"

/* The answer for one process. */
struct app_match {
	int app;		       /* index in cfg->apps, or -1 when none matched */
	bool excluded;		       /* exclude = yes, or profile = matched and no app */
	char service[CONFIG_NAME_MAX]; /* service_name of its profiles */
	bool sanitized;		       /* service was not a valid label value (label_value_ok) */
};

/* Reads environment variable name of the process into out; 0 or -errno. */
typedef int (*app_env_fn)(const char *name, char *out, size_t outlen, void *arg);

/* Classifies pi; env (may be NULL) is asked only for the variables rules name. */
void apps_classify(const struct ember_config *c, const struct proc_info *pi, app_env_fn env,
		   void *arg, struct app_match *out);

/* Reads the PROCINFO_* fields of mask into pi (pi->have says what it holds); 0 or -errno. */
typedef int (*app_fill_fn)(unsigned int mask, struct proc_info *pi, void *arg);

/*
 * apps_classify on a process read lazily: pi starts with what is known, and
 * fill is asked for a field only when a rule (then the service name's
 * inference) looks at it, so that a configuration with no cmdline rule never
 * reads a command line. arg goes to fill and env. 0, or the error of fill
 * (the process is gone: out is then undefined).
 */
int apps_classify_lazy(const struct ember_config *c, struct proc_info *pi, app_fill_fn fill,
		       app_env_fn env, void *arg, struct app_match *out);

/*
 * service_name of a process no [app] matched: its systemd unit without
 * ".service", else "container-" and the first 12 digits of its container id,
 * else its executable's base name, else its comm; "kernel" for kernel threads.
 */
void apps_infer_service(const struct proc_info *pi, char *out, size_t len);

/*
 * The labels of a profile series: service_name, hostname, the [daemon] labels
 * and the app's (which override the host's); an empty one is left out. 0, or
 * labels_put's first error (the configuration prevents them: not seen), with
 * every label that could be put in out.
 */
int apps_labels(const struct ember_config *c, int app, const char *service, const char *hostname,
		struct label_set *out);

#endif
