/* SPDX-License-Identifier: MIT */
/*
 * The control socket (RUNTIME_DIR/control, root only): emberctl asks the
 * running daemon for on-demand captures through it. Non-blocking; driven by
 * the daemon's event loop through one fd.
 */
#ifndef EMBER_CONTROL_H
#define EMBER_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "proctable.h"

/* Captures running at once; each loads a sampler of its own. */
#define CONTROL_MAX_CAPTURES 4
/* Connections at once, captures included. */
#define CONTROL_MAX_CLIENTS 16
/* A client must send its whole request within this. */
#define CONTROL_REQUEST_TIMEOUT_NS (5 * 1000000000LL)
/* A client must take its reply within this, or it is dropped. */
#define CONTROL_REPLY_TIMEOUT_NS (60 * 1000000000LL)

struct control;

/*
 * Creates runtime_dir (0755) if missing and listens on runtime_dir/control
 * (0600), replacing a stale socket. 0, or a negative errno with a one-line
 * cause in err (-EADDRINUSE: another emberd listens there). env must outlive it.
 */
int control_open(const char *runtime_dir, const struct capture_env *env, struct control **out,
		 char *err, size_t errlen);
/* Cancels running captures, closes every client and removes the socket. Accepts NULL. */
void control_close(struct control *c);
/* Readable when the control socket, a client or a capture needs attention. */
int control_fd(const struct control *c);
/* Handles whatever is ready; never blocks on a client. */
void control_dispatch(struct control *c);

/* Hooks for the daemon's process tracking: app captures follow their processes. */
void control_proc_classified(struct control *c, const struct proc_class *pc);
void control_proc_exited(struct control *c, uint32_t pid);
/* The symbol loader is idle: captures whose end was held for it finish now. */
void control_loader_idle(struct control *c);

#endif
