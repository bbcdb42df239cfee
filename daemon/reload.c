// SPDX-License-Identifier: MIT
/*
 * Loading the configuration, and reloading it on SIGHUP: a valid file takes
 * effect after the next interval is stored; what needs a restart (hz, paths,
 * a longer interval than the BPF maps were sized for) keeps its running value.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* What the BPF programs, the history and the control socket were opened with. */
static void keep_restart_only(const struct ember_config *cur, struct ember_config *n)
{
	if (n->hz == cur->hz && !strcmp(n->data_dir, cur->data_dir) &&
	    n->include_idle == cur->include_idle && !strcmp(n->runtime_dir, cur->runtime_dir) &&
	    n->unwind_memory == cur->unwind_memory)
		return;
	log_warnx("hz, data_dir, include_idle, runtime_dir and unwind_memory change only "
		  "with a restart: keeping %u Hz, %s, include_idle=%s, %s, %" PRIu64 " MiB",
		  cur->hz, cur->data_dir, cur->include_idle ? "yes" : "no", cur->runtime_dir,
		  cur->unwind_memory >> 20);
	n->unwind_memory = cur->unwind_memory;
	n->hz = cur->hz;
	snprintf(n->data_dir, sizeof(n->data_dir), "%s", cur->data_dir);
	snprintf(n->runtime_dir, sizeof(n->runtime_dir), "%s", cur->runtime_dir);
	n->include_idle = cur->include_idle;
}

/* The growth sampler's period and minimum age are set at load. */
static void keep_growth_period(const struct ember_config *cur, struct ember_config *n)
{
	if (n->growth_fault_period != cur->growth_fault_period)
		log_warnx("growth_fault_period changes only with a restart: keeping %u",
			  cur->growth_fault_period);
	if (n->growth_min_age_ns != cur->growth_min_age_ns)
		log_warnx("growth_min_age changes only with a restart: keeping %lld ms",
			  (long long)(cur->growth_min_age_ns / 1000000));
	n->growth_fault_period = cur->growth_fault_period;
	n->growth_min_age_ns = cur->growth_min_age_ns;
}

/* The off-CPU sampler's switches are set at load. */
static void keep_offcpu(const struct ember_config *cur, struct ember_config *n)
{
	if (n->offcpu == cur->offcpu && n->offcpu_sample_period == cur->offcpu_sample_period &&
	    n->offcpu_min_block_ns == cur->offcpu_min_block_ns &&
	    n->offcpu_parked == cur->offcpu_parked)
		return;
	log_warnx("offcpu, offcpu_sample_period, offcpu_min_block and offcpu_parked_stacks change "
		  "only with a restart: keeping them");
	n->offcpu = cur->offcpu;
	n->offcpu_sample_period = cur->offcpu_sample_period;
	n->offcpu_min_block_ns = cur->offcpu_min_block_ns;
	n->offcpu_parked = cur->offcpu_parked;
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
	if (n->interval_ns == d->cfg.interval_ns)
		return;
	if (!sampler_fits(d->sampler, d->cfg.hz, n->interval_ns)) {
		log_warnx("interval %gs needs bigger BPF maps than emberd sized at start: it "
			  "changes only with a restart; keeping %gs",
			  n->interval_ns / 1e9, d->cfg.interval_ns / 1e9);
		n->interval_ns = d->cfg.interval_ns;
		return;
	}
	timer_arm(d->ev[EV_TICK].fd, n->interval_ns, n->interval_ns);
	log_info("one profile every %gs from now on", n->interval_ns / 1e9);
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

	keep_restart_only(&d->cfg, n);
	keep_growth_period(&d->cfg, n);
	keep_offcpu(&d->cfg, n);
	apply_interval(d, n);
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
