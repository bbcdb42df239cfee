/* SPDX-License-Identifier: MIT */
/*
 * An on-demand capture: a second sampler at a higher rate over one process or
 * one application's processes, drained into a single profile until it ends.
 */
#ifndef EMBER_CAPTURE_H
#define EMBER_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ctlproto.h"
#include "symbolizer.h"
#include "unwinder.h"

/* What a capture needs from the running daemon. */
struct capture_env {
	int events_fd, known_fd;	/* proctrack's shared maps, as the main sampler has */
	struct unwinder *unw;		/* the daemon's unwinder, or NULL: frame pointers */
	struct symbolizer *sym;		/* the daemon's, shared: names the frames */
	const struct ember_config *cfg; /* the running configuration (a stable address) */
};

struct capture;

/*
 * Checks req's target (a CTL_CAPTURE, already validated) and prepares its
 * capture, nothing loaded yet. 0, or a negative errno with a one-line cause
 * in err: -ESRCH (no such process), -EINVAL (a thread id), -ENOMEM.
 */
int capture_prepare(const struct capture_env *env, const struct ctl_msg *req, struct capture **out,
		    char *err, size_t errlen);
/*
 * Loads and attaches the capture's BPF programs (sampling begins), after the
 * tables of a malloc capture's process: the kernel's verifier and the
 * unwinder take their time, so this runs on a thread (capload.h) and touches
 * nothing but the capture and the kernel. 0, or a negative errno and a cause.
 */
int capture_load(struct capture *c, char *err, size_t errlen);
/*
 * On the loop, once loaded: an app capture lets its app's running processes
 * in, and the duration counts from now. 0, or a negative errno with a cause
 * in err: -ESRCH (its process exited while it loaded, or no running process
 * belongs to its app).
 */
int capture_begin(struct capture *c, char *err, size_t errlen);
/* Stops sampling and frees everything; accepts NULL. */
void capture_free(struct capture *c);

/* A timerfd that becomes readable when the capture's duration has passed. */
int capture_timer_fd(const struct capture *c);
/* "pid 1234" or "app checkout". */
const char *capture_target(const struct capture *c);
/* What was asked: target, kind, rate, duration. */
const struct ctl_msg *capture_request(const struct capture *c);
bool capture_same_target(const struct capture *c, const struct ctl_msg *req);
int64_t capture_end_ns(const struct capture *c); /* CLOCK_REALTIME */
uint32_t capture_elapsed_ms(const struct capture *c);
/* Samples counted so far, as the BPF program counted them. */
uint64_t capture_samples(struct capture *c);

/* Drains what was sampled so far when it is due (every few seconds): the
 * sampler's maps are sized for that, not for the whole duration. */
void capture_tick(struct capture *c);

/*
 * Ends the capture: a last drain, then the profile encoded and gzipped into a
 * malloc'd *gz; res gets the counts. 0, -ENODATA when nothing was sampled, or
 * a negative errno with a cause in err.
 */
int capture_finish(struct capture *c, uint8_t **gz, size_t *gz_len, struct ctl_msg *res, char *err,
		   size_t errlen);

/* A process was classified (first sight, exec, reload): an app capture lets it
 * in when its service is the app's, out otherwise. */
void capture_proc_classified(struct capture *c, uint32_t pid, const char *service);
/* A process exited; true when it was the capture's one process (nothing more to sample). */
bool capture_proc_exited(struct capture *c, uint32_t pid);

#endif
