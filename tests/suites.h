/* SPDX-License-Identifier: MIT */
/* One Check suite per module; check_main.c runs them all. */
#ifndef EMBER_TEST_SUITES_H
#define EMBER_TEST_SUITES_H

#include <check.h>

/*
 * Defined under AddressSanitizer, whose malloc mallinfo2() and malloc_trim()
 * do not see: tests that measure glibc's heap skip that part there (the
 * sanitizer build runs the rest).
 */
#if defined(__SANITIZE_ADDRESS__)
#define EMBER_ASAN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_ASAN_ALLOCATOR 1
#endif
#endif

#include <sys/types.h>

/* A child that waits to be killed (shared by the suites that need a live pid): its pid. */
pid_t spawn_paused(void);
/* Kills child pid (one of spawn_paused's, or any) and reaps it. */
void reap_killed(pid_t pid);
/* A child of this process that execs /bin/sleep when exec_child() writes to *go. */
pid_t spawn_exec_later(int *go);
/* Lets the child exec and waits until it is done (its command line is sleep's). */
void exec_child(pid_t pid, int go);
/*
 * A child of this process that execs /bin/sh at the first exec_step() on *go,
 * and sh execs /bin/sleep at the second.
 */
pid_t spawn_exec_twice(int *go);
/* Lets the child take its next exec and waits until its command line starts with cmd's. */
void exec_step(pid_t pid, int go, const char *cmd);

Suite *timeparse_suite(void);
Suite *compress_suite(void);
Suite *pprof_suite(void);
Suite *history_suite(void);
Suite *backlog_suite(void);
Suite *history_damage_suite(void);
Suite *procmaps_suite(void);
Suite *procsnap_suite(void);
Suite *elfsym_suite(void);
Suite *stapsdt_suite(void);
Suite *ksyms_suite(void);
Suite *symbolizer_suite(void);
Suite *config_suite(void);
Suite *keys_suite(void);
Suite *apps_suite(void);
Suite *labels_suite(void);
Suite *deferrec_suite(void);
Suite *perfmap_suite(void);
Suite *symshare_suite(void);
Suite *v8_suite(void);
Suite *demangle_suite(void);
Suite *debugfile_suite(void);
Suite *procinfo_suite(void);
Suite *push_suite(void);
Suite *stackset_suite(void);
Suite *log_suite(void);
Suite *ctlproto_suite(void);
Suite *flamegraph_suite(void);
Suite *statusfile_suite(void);
Suite *unwtab_suite(void);
Suite *uwalk_suite(void);
Suite *python_suite(void);
Suite *utf8_suite(void);
Suite *pushfit_suite(void);
Suite *drain_suite(void);
Suite *membound_suite(void);
Suite *budget_suite(void);
Suite *geometric_suite(void);
Suite *growth_class_suite(void);
Suite *mapsize_suite(void);
Suite *hostrows_suite(void);
Suite *rowspace_suite(void);
Suite *owners_suite(void);
Suite *tablecache_suite(void);
Suite *jobqueue_suite(void);
Suite *recentprocs_suite(void);
Suite *outbox_suite(void);
Suite *waitpair_suite(void);
Suite *bpfload_suite(void);
Suite *stackparts_suite(void);
Suite *clock_suite(void);
Suite *file_suite(void);
Suite *worker_suite(void);
Suite *uploader_suite(void);
Suite *unmarked_suite(void);
Suite *retention_suite(void);
Suite *proctable_suite(void);

#endif
