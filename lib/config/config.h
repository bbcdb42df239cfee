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
#define EMBER_DEFAULT_RUNTIME_DIR "/run/ember"

/*
 * Bounds of user-settable values, shared with their other users; the keys'
 * table (keys.c) holds the defaults, but for those used elsewhere too.
 */
#define EMBER_HZ_MIN 1
#define EMBER_HZ_MAX 999
/* growth_fault_period: sampled page faults, 1 in N (0: memory growth off). */
#define EMBER_GROWTH_PERIOD_MAX 1000000
/* growth_min_age: a process's growth before this age is left out (0 to 10 s). */
#define EMBER_GROWTH_MIN_AGE_MAX_NS 10000000000LL
/* offcpu_sample_period: sampled switch-outs, 1 in N; offcpu_min_block: up to 1 s. */
#define EMBER_OFFCPU_PERIOD_MAX 65536
#define EMBER_OFFCPU_MIN_BLOCK_MAX_NS (1000000000LL)
/* cpu_budget: CPU time a second, up to the whole of one CPU. */
#define EMBER_CPU_BUDGET_MAX_NS (1000000000LL)
/* offcpu_parked_stacks: stacks of threads away kept in the kernel, 2.3 KiB each. */
#define EMBER_OFFCPU_PARKED_DEFAULT 4096
#define EMBER_OFFCPU_PARKED_MIN 256
#define EMBER_OFFCPU_PARKED_LIMIT 65536
#define EMBER_INTERVAL_MIN_NS (1000000000LL)	      /* 1 s */
#define EMBER_INTERVAL_MAX_NS (3600LL * 1000000000LL) /* 1 h */
#define CONFIG_MIN_RETENTION_NS (60LL * 1000000000LL) /* 1m */
#define CONFIG_MIN_MAX_SIZE (64ULL << 10)	      /* 64 KiB */
#define CONFIG_MIN_MEMORY_LIMIT (16ULL << 20)	      /* 16 MiB */
/* Kernel memory for the .eh_frame unwind tables (a BPF map, preallocated). */
#define CONFIG_MIN_UNWIND_MEMORY (1ULL << 20) /* 1 MiB */
#define CONFIG_MAX_UNWIND_MEMORY (4ULL << 30) /* 4 GiB: rows stay 32-bit */
#define CONFIG_MAX_ERRORS 64
#define CONFIG_MAX_BYTES (1u << 20)
#define CONFIG_MAX_APPS 256
#define CONFIG_MAX_RULES 16 /* match rules per application */
/*
 * Labels a profile series may carry: Pyroscope's limit is 30, of which ember
 * sets __name__, __delta__, service_name and hostname itself.
 */
#define CONFIG_MAX_SERIES_LABELS 30
#define CONFIG_MAX_USER_LABELS (CONFIG_MAX_SERIES_LABELS - 4)
#define CONFIG_NAME_MAX 128  /* application and label names */
#define CONFIG_VALUE_MAX 256 /* label values and patterns */

/* What a match rule looks at. */
enum app_rule_kind {
	RULE_UNIT,	/* systemd unit, e.g. checkout.service */
	RULE_CGROUP,	/* cgroup path */
	RULE_EXE,	/* executable path */
	RULE_COMM,	/* thread-group leader's comm */
	RULE_CMDLINE,	/* command line, arguments joined by spaces */
	RULE_CONTAINER, /* container id (64 hex digits) */
	RULE_ENV,	/* an environment variable's value (opt-in) */
};

/* One match rule: a glob (fnmatch, '*' crosses '/') on one property. */
struct app_rule {
	enum app_rule_kind kind;
	char env[CONFIG_NAME_MAX]; /* the variable, for RULE_ENV */
	char pattern[CONFIG_VALUE_MAX];
};

struct config_label {
	char name[CONFIG_NAME_MAX]; /* [a-zA-Z_][a-zA-Z0-9_]*, not __-prefixed */
	char value[CONFIG_VALUE_MAX];
};

/* Bounds of [daemon] live_allocs and live_allocs_per_process. */
#define CONFIG_LIVE_ALLOCS_MIN 16
#define CONFIG_LIVE_ALLOCS_MAX (1U << 20)

/* memory = off|alloc|inuse of an [app]: which sampled-allocation values it gets. */
enum app_memory {
	APP_MEMORY_OFF = 0, /* no USDT attach (the default) */
	APP_MEMORY_ALLOC,   /* alloc_objects and alloc_space per interval */
	APP_MEMORY_INUSE,   /* those, and the live sampled allocations (inuse_*) */
};

/* One [app "NAME"] section: every rule must hold; the first matching app wins. */
struct app_config {
	char name[CONFIG_NAME_MAX]; /* becomes service_name */
	unsigned int line;	    /* of its section header, for messages */
	struct app_rule rules[CONFIG_MAX_RULES];
	size_t n_rules;
	struct config_label labels[CONFIG_MAX_USER_LABELS];
	size_t n_labels;
	bool exclude; /* never profile these processes */

	enum app_memory memory; /* sampled allocations through otel_memory USDT probes */
};

#define CONFIG_MAX_HEADERS 16
/*
 * Pyroscope refuses a profile whose time is before now - validation.reject-older-than
 * (1h by default). max_age must stay under that window by CONFIG_CLOCK_MARGIN_NS
 * (the host's and the server's clocks differ), and a profile, written when its
 * interval ends, needs CONFIG_PUSH_SLACK_NS left to be pushed and retried
 * (hence max_age's default, 50m).
 */
#define CONFIG_CLOCK_MARGIN_NS (5LL * 60 * 1000000000LL)
#define CONFIG_PUSH_SLACK_NS (5LL * 60 * 1000000000LL)
/* Pyroscope's defaults: the distributor's 2 MiB ingestion burst and 16000 samples. */
#define CONFIG_DEFAULT_MAX_PROFILE_BYTES (2ULL << 20)
#define CONFIG_MIN_MAX_PROFILE_BYTES (64ULL << 10)
#define CONFIG_DEFAULT_MAX_SAMPLES 16000
#define CONFIG_MIN_MAX_SAMPLES 16
/*
 * Labels a series gets besides the configured ones: __name__, __delta__,
 * service_name and hostname from ember; with protocol = ingest the server adds
 * pyroscope_spy as well.
 */
#define CONFIG_OWN_LABELS_PUSH 4
#define CONFIG_OWN_LABELS_INGEST 5

/* How profiles reach the collector. */
enum collector_protocol {
	COLLECTOR_PUSH = 0, /* POST {url}/push.v1.PusherService/Push (Connect) */
	COLLECTOR_INGEST,   /* POST {url}/ingest?format=pprof (legacy) */
};

/* The [collector] section. Secrets stay in their files; only paths are kept here. */
struct collector_config {
	char url[1024]; /* "" = no collector: local history only */
	enum collector_protocol protocol;
	char tenant[CONFIG_VALUE_MAX]; /* X-Scope-OrgID, "" for none */
	char basic_auth_user[CONFIG_VALUE_MAX];
	char basic_auth_password_file[PATH_MAX];
	char bearer_token_file[PATH_MAX];
	struct config_label headers[CONFIG_MAX_HEADERS]; /* header.NAME = VALUE */
	size_t n_headers;
	char ca_file[PATH_MAX];
	bool insecure_skip_verify;    /* TLS certificates not checked: loud warning */
	int64_t timeout_ns;	      /* per request */
	int64_t max_age_ns;	      /* older unsent profiles are expired, not pushed */
	int64_t reject_older_than_ns; /* the server's ingestion window */
	uint64_t max_profile_bytes;   /* a pushed profile, uncompressed, is folded to fit */
	uint64_t max_samples;	      /* and to hold at most this many samples */
	bool server_symbolization;    /* unnamed frames pushed without a Line, for the server */
	struct config_label external_labels[CONFIG_MAX_USER_LABELS]; /* external_labels.K */
	size_t n_external_labels;
};

struct ember_config {
	unsigned int hz;	    /* samples per second per CPU */
	int64_t interval_ns;	    /* one profile per interval */
	char data_dir[PATH_MAX];    /* local history lives here */
	char runtime_dir[PATH_MAX]; /* control socket and status file */
	int64_t retention_ns;	    /* profiles older than this are deleted */
	uint64_t max_size;	    /* history.db bytes: oldest profiles go past it */
	uint64_t memory_limit;	    /* emberd's own memory: caches shrink to stay under */
	uint64_t store_backlog;	    /* profiles kept in memory while the history cannot take them */
	uint64_t unwind_memory;	    /* unwind tables in the kernel (restart to change) */
	bool include_idle;	    /* count the idle task's samples too */
	/* memory growth: sample 1 page fault in N; 0 = off */
	unsigned int growth_fault_period;
	int64_t growth_min_age_ns; /* memory growth: a process's first this many ns left out */
	/* off-CPU time (restart to change): on, 1 switch-out in N sampled, shortest kept */
	bool offcpu;
	unsigned int offcpu_sample_period;
	int64_t offcpu_min_block_ns;
	unsigned int offcpu_parked; /* stacks of threads away across a drain kept in the kernel */
	int64_t cpu_budget_ns;	    /* emberd's CPU a second, its programs' included; 0: none */
	bool profile_matched;	    /* profile = matched: only processes an [app] matches */
	struct config_label labels[CONFIG_MAX_USER_LABELS]; /* labels.K: on every profile */
	size_t n_labels;
	struct app_config *apps; /* in file order; owned, see config_free() */
	size_t n_apps;
	struct collector_config collector;

	/* [daemon] live_allocs*: the live-pointer map of memory = inuse (restart to change) */
	uint32_t live_allocs;		  /* live sampled pointers held in the kernel */
	uint32_t live_allocs_per_process; /* ... of which one process may hold */
};

/*
 * Errors collected while parsing, each "FILE:LINE: message" in line order
 * ("FILE: message" for what concerns the whole file, last).
 */
struct config_errors {
	char msg[CONFIG_MAX_ERRORS][256];
	unsigned int line[CONFIG_MAX_ERRORS]; /* msg[i]'s line; 0: the whole file */
	size_t n;
	size_t dropped; /* errors past CONFIG_MAX_ERRORS */
};

/* Defaults; a config given to config_defaults() must later go to config_free(). */
void config_defaults(struct ember_config *c);
void config_free(struct ember_config *c);
/* Parses text over c (which holds defaults). 0, or -EINVAL with errs filled. */
int config_parse(const char *text, size_t len, const char *filename, struct ember_config *c,
		 struct config_errors *errs);
/* Reads and parses a file; a missing or unreadable file is an error in errs. */
int config_load(const char *path, struct ember_config *c, struct config_errors *errs);
/* Labels a series may carry from the configuration, for this protocol. */
size_t config_label_budget(enum collector_protocol protocol);
/*
 * Whether value survives the legacy ingest form name=APP{k=v,...} unchanged:
 * no ',', '{' or '}', no surrounding spaces (the server trims them).
 */
bool config_ingest_value_ok(const char *value);
/* Whether name is a label name ember accepts: [a-zA-Z_][a-zA-Z0-9_]*, not __-prefixed. */
bool config_label_name_ok(const char *name);
/* Validates a value given on the command line, e.g. ("hz", "99"). Same rules. */
int config_set(struct ember_config *c, const char *key, const char *value, char *err,
	       size_t errlen);

#endif
