// SPDX-License-Identifier: MIT
/*
 * Loading the configuration, and reloading it on SIGHUP: a valid file takes
 * effect after the next interval is stored; each key that needs a restart
 * (config_keys' reload class: hz, paths, BPF map sizes) keeps its running
 * value, said by name, and a longer interval than the BPF maps were sized for
 * is refused.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"
#include "log.h"
#include "notify.h"
#include "proctable.h"
#include "reload.h"
#include "sampler.h"
#include "timer.h"
#include "uploader.h"

/* Errors go to stderr at start-up (plain lines) and to the log on reload. */
static void print_errors(const struct config_errors *errs, bool to_log)
{
	for (size_t i = 0; i < errs->n; i++) {
		if (to_log)
			log_warnx("%s", errs->msg[i]);
		else
			fprintf(stderr, "%s\n", errs->msg[i]);
	}
	if (errs->dropped && to_log)
		log_warnx("... and %zu more errors", errs->dropped);
	else if (errs->dropped)
		fprintf(stderr, "... and %zu more errors\n", errs->dropped);
}

int reload_load(const struct args *a, struct ember_config *cfg, bool to_log)
{
	struct config_errors errs = {};
	const char *path = a->config_path;
	char err[256];

	config_defaults(cfg);
	if (!path && access(EMBER_DEFAULT_CONFIG, F_OK) == 0)
		path = EMBER_DEFAULT_CONFIG;
	if (path && config_load(path, cfg, &errs)) {
		print_errors(&errs, to_log);
		config_free(cfg);
		return 1;
	}
	if ((a->hz && config_set(cfg, "hz", a->hz, err, sizeof(err))) ||
	    (a->interval && config_set(cfg, "interval", a->interval, err, sizeof(err))) ||
	    (a->data_dir && config_set(cfg, "data_dir", a->data_dir, err, sizeof(err))) ||
	    (a->runtime_dir && config_set(cfg, "runtime_dir", a->runtime_dir, err, sizeof(err)))) {
		if (to_log)
			log_warnx("command line: %s", err);
		else
			fprintf(stderr, "emberd: command line: %s\n", err);
		config_free(cfg);
		return 1;
	}
	return 0;
}

void request_reload(struct daemon *d)
{
	struct ember_config next;

	notify_reloading();
	if (reload_load(d->args, &next, true)) {
		log_warnx("configuration refused: keeping the running one");
		notify_ready("configuration refused: running with the previous one");
		return;
	}
	if (d->reload_pending)
		config_free(&d->next_cfg);
	d->next_cfg = next;
	d->reload_pending = true;
	log_info("configuration reloaded: %zu apps; it takes effect at the next interval",
		 next.n_apps);
}

int reload_start_uploader(struct daemon *d)
{
	const struct collector_config *cc = &d->cfg.collector;
	char err[512];
	int rc;

	if (!cc->url[0])
		return 0;
	if (cc->insecure_skip_verify)
		log_warnx("[collector] insecure_skip_verify = yes: the collector's TLS certificate "
			  "is NOT checked; profiles and credentials can be intercepted");
	rc = uploader_start(cc, d->cfg.data_dir, &d->up, err, sizeof(err));
	if (rc)
		log_err("collector: %s", err);
	else
		log_info("pushing profiles to %s (%s)%s", cc->url,
			 cc->protocol == COLLECTOR_PUSH ? "push API" : "legacy ingest",
			 cc->server_symbolization ? ", unnamed frames left for the server to name" :
						    "");
	return rc;
}

/*
 * A new interval takes effect only where the BPF maps, sized at load for the
 * first one, hold its samples as well as maps sized for it would
 * (sampler_fits: a shorter interval always does); a longer one is refused as
 * needing a restart, like hz. Resizing them instead would need a new BPF
 * object (the maps are preallocated, and sized only between open and load):
 * loading the programs again, re-attaching a perf event per CPU, sharing
 * proctrack's and the unwinder's maps again and refilling the kernel filter,
 * mid-run, with samples lost or counted twice around the switch. Refusing is
 * safe and simple; a restart stores the last interval and loses nothing.
 */
static void apply_interval(struct daemon *d, struct ember_config *n)
{
	if (!sampler_fits(owner_sampler(d->owner), d->cfg.hz, n->interval_ns)) {
		log_warnx("interval %gs needs bigger BPF maps than emberd sized at start: it "
			  "changes only with a restart; keeping %gs",
			  n->interval_ns / 1e9, d->cfg.interval_ns / 1e9);
		n->interval_ns = d->cfg.interval_ns;
		return;
	}
	timer_arm(d->ev[EV_TICK].fd, n->interval_ns, n->interval_ns);
	log_info("one profile every %gs from now on", n->interval_ns / 1e9);
}

/* What weighs a new value of a key a reload may refuse (CONFIG_RELOAD_REFUSED); NULL: none. */
static void (*weigher(const char *key))(struct daemon *d, struct ember_config *n)
{
	return !strcmp(key, "interval") ? apply_interval : NULL;
}

/*
 * Every changed key the table says a reload cannot simply apply: one the
 * running daemon may refuse is weighed; one that needs a restart keeps its
 * running value, and the log names it. No change goes unsaid.
 */
static void apply_keys(struct daemon *d, struct ember_config *n)
{
	char run[PATH_MAX], want[PATH_MAX];

	for (size_t i = 0; i < config_keys_n; i++) {
		const struct config_key *k = &config_keys[i];
		void (*weigh)(struct daemon *, struct ember_config *) = weigher(k->name);

		if (k->reload == CONFIG_RELOAD_LIVE || config_key_equal(k, &d->cfg, n))
			continue;
		if (k->reload == CONFIG_RELOAD_REFUSED && weigh) {
			weigh(d, n);
			continue;
		}
		/* a restart key, or a refusable one nothing weighs: kept all the same */
		config_key_format(k, &d->cfg, run, sizeof(run));
		config_key_format(k, n, want, sizeof(want));
		log_warnx("[%s] %s = %s needs a restart: keeping %s until then",
			  config_section_name(k->section), k->name, want, run);
		config_key_copy(k, n, &d->cfg);
	}
}

static void apply_collector(struct daemon *d, bool changed)
{
	if (!changed)
		return;
	uploader_stop(d->up);
	d->up = NULL;
	if (reload_start_uploader(d))
		log_warnx("collector disabled until the next valid reload");
}

void apply_reload(struct daemon *d)
{
	struct ember_config *n = &d->next_cfg;
	bool collector_changed;

	apply_keys(d, n);
	collector_changed = memcmp(&n->collector, &d->cfg.collector, sizeof(n->collector));
	config_free(&d->cfg);
	d->cfg = *n;
	memset(n, 0, sizeof(*n));
	apply_collector(d, collector_changed);
	d->reload_pending = false;
	proctable_reclassify(d->procs, &d->cfg, procevents_apply_class, d);
	log_info("configuration applied: %zu apps, profile = %s", d->cfg.n_apps,
		 d->cfg.profile_matched ? "matched" : "all");
	notify_ready("configuration applied: %zu apps", d->cfg.n_apps);
}
