// SPDX-License-Identifier: MIT
/*
 * cpu_budget at work (selfcost.h). The measure is cheap: one clock_gettime
 * (CLOCK_PROCESS_CPUTIME_ID: every thread's CPU, what their schedstat sums)
 * and one BPF_OBJ_GET_INFO_BY_FD a loaded program (run_time_ns), read once
 * an interval. The kernel counts run time only while kernel.bpf_stats_enabled
 * is on or a BPF_ENABLE_STATS fd is held: emberd holds one while it has a
 * budget and off-CPU time runs, the programs that run at every context switch.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "budget.h"
#include "clock.h"
#include "log.h"
#include "offcpu.h"
#include "proctrack.h"
#include "sampler.h"
#include "selfcost.h"

/* What the last interval's end read: the next one's deltas count from there. */
struct selfcost_mark {
	int64_t wall, self, bpf, offcpu_bpf;
};

struct selfcost {
	int stats_fd;	    /* BPF_ENABLE_STATS(BPF_STATS_RUN_TIME), held; -1: none */
	bool stats_refused; /* the kernel refused it once: not asked again */
	struct selfcost_mark last;
	struct budget_state st;
	uint64_t lowered, restored;
	bool over; /* over with nothing to lower at the last interval (said once) */
};

/* Run time of every program emberd loaded, and of off-CPU's apart, since their load (ns). */
static void read_bpf(const struct report_sources *src, struct selfcost_mark *m)
{
	m->offcpu_bpf = 0;
	m->bpf = proctrack_run_ns(src->proc);
	for (int s = 0; s < PROFILE_SRC_NR; s++) {
		int64_t ns =
			src->owner[s] && owners[s].run_ns ? owners[s].run_ns(src->owner[s]) : 0;

		m->bpf += ns;
		if (s == PROFILE_SRC_OFFCPU)
			m->offcpu_bpf = ns;
	}
}

static void mark(const struct report_sources *src, struct selfcost_mark *m)
{
	m->wall = mono_ns();
	m->self = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	read_bpf(src, m);
}

/*
 * Run-time stats held while there is a budget and off-CPU time runs, else
 * let go (each program run then pays two clock reads less). True when the
 * kernel counts run time.
 */
static bool hold_stats(struct selfcost *sc, const struct report_sources *src)
{
	bool want = src->cfg->cpu_budget_ns > 0 && owner_offcpu(src->owner);

	if (!want && sc->stats_fd >= 0) {
		close(sc->stats_fd);
		sc->stats_fd = -1;
	}
	if (want && sc->stats_fd < 0 && !sc->stats_refused) {
		sc->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (sc->stats_fd < 0) {
			sc->stats_refused = true;
			log_warnx("cpu_budget: the kernel counts no run time of BPF programs (%s): "
				  "emberd's own CPU alone is measured",
				  strerror(errno));
		}
	}
	return sc->stats_fd >= 0;
}

struct selfcost *selfcost_open(const struct report_sources *src)
{
	struct selfcost *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return NULL;
	sc->stats_fd = -1;
	hold_stats(sc, src);
	mark(src, &sc->last);
	return sc;
}

/* The change in one line: what was lowered or restored, and why. */
static void log_change(const struct selfcost *sc, enum budget_change c, uint64_t cost_ppm,
		       uint64_t budget_ppm, const struct budget_cost *m)
{
	unsigned int shift = sc->st.offcpu_shift;

	if (c == BUDGET_LOWERED)
		log_warnx(
			"cpu_budget: emberd cost %.3f%% of a CPU (its threads %.3f%%, its BPF "
			"programs %.3f%%, off-CPU's %.3f%%), over its %.3f%%: off-CPU's duty cycle "
			"lowered to 1/%u (new waits sampled 1/%u of the time, weighed %u times)",
			cost_ppm / 1e4, m->self_ns * 100.0 / m->wall_ns,
			m->bpf_ns * 100.0 / m->wall_ns, m->offcpu_bpf_ns * 100.0 / m->wall_ns,
			budget_ppm / 1e4, 1u << shift, 1u << shift, 1u << shift);
	else if (c == BUDGET_RESTORED)
		log_info("cpu_budget: emberd cost %.3f%% of a CPU, under half its %.3f%% for %d "
			 "intervals: off-CPU's duty cycle restored to 1/%u",
			 cost_ppm / 1e4, budget_ppm / 1e4, BUDGET_CALM, 1u << shift);
	else if (c == BUDGET_AT_FLOOR && !sc->over)
		/* a warning when a lever was there and is spent, else news (the first interval's tables) */
		log_emit(shift ? LOG_LVL_WARN : LOG_LVL_INFO, false, __FILE__, __LINE__, __func__,
			 "cpu_budget: emberd cost %.3f%% of a CPU (its threads %.3f%%, its BPF "
			 "programs %.3f%%), over its %.3f%%, and nothing it may lower would "
			 "free enough (off-CPU's duty cycle at 1/%u)",
			 cost_ppm / 1e4, m->self_ns * 100.0 / m->wall_ns,
			 m->bpf_ns * 100.0 / m->wall_ns, budget_ppm / 1e4, 1u << shift);
}

void selfcost_interval(struct selfcost *sc, const struct report_sources *src,
		       struct status_budget *out)
{
	struct offcpu *oc = owner_offcpu(src->owner);
	struct budget_config c = {.budget_ns_per_s = src->cfg->cpu_budget_ns,
				  .offcpu = oc != NULL,
				  .offcpu_shift_max = EMBER_OFFCPU_DUTY_SHIFT_MAX};
	struct selfcost_mark now;
	struct budget_cost m;
	enum budget_change ch;

	mark(src, &now);
	m = (struct budget_cost){.wall_ns = now.wall - sc->last.wall,
				 .self_ns = now.self - sc->last.self,
				 .bpf_ns = now.bpf - sc->last.bpf,
				 .offcpu_bpf_ns = now.offcpu_bpf - sc->last.offcpu_bpf,
				 .bpf_known = sc->stats_fd >= 0};
	sc->last = now;
	ch = budget_decide(&c, &m, &sc->st);
	log_change(sc, ch, budget_cost_ppm(&m), budget_ppm(&c), &m);
	sc->over = ch == BUDGET_AT_FLOOR;
	sc->lowered += ch == BUDGET_LOWERED;
	sc->restored += ch == BUDGET_RESTORED;
	if (oc && offcpu_duty(oc) != sc->st.offcpu_shift)
		offcpu_set_duty(oc, sc->st.offcpu_shift);
	/* after the measure: held from now on, its intervals are known */
	hold_stats(sc, src);
	*out = (struct status_budget){.ns_per_s = c.budget_ns_per_s,
				      .wall_ns = m.wall_ns,
				      .self_ns = m.self_ns,
				      .bpf_ns = m.bpf_ns,
				      .offcpu_bpf_ns = m.offcpu_bpf_ns,
				      .bpf_measured = m.bpf_known,
				      .offcpu_duty_shift = sc->st.offcpu_shift,
				      .lowered = sc->lowered,
				      .restored = sc->restored,
				      .over = sc->over};
}

void selfcost_close(struct selfcost *sc)
{
	if (!sc)
		return;
	if (sc->stats_fd >= 0)
		close(sc->stats_fd);
	free(sc);
}
