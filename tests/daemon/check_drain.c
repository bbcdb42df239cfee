// SPDX-License-Identifier: MIT
/*
 * drain: folded stacks from a fake sampler (no BPF) into one profile per
 * application, with the profile type's sample types and period, known counts,
 * processes and frames named from this process's own functions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "drain.h"
#include "suites.h"

#define FAKE_MAX 8
#define HZ 20

__attribute__((noinline)) static int drain_test_leaf(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

__attribute__((noinline)) static int drain_test_caller(int x)
{
	__asm__ volatile("" : "+r"(x));
	return drain_test_leaf(x) + 1;
}

/* A fake sampler: stacks handed to the drain once, then forgotten, as the maps are emptied. */
struct fake_source {
	struct ember_sample_key keys[FAKE_MAX];
	uint64_t counts[FAKE_MAX];
	uint64_t ips[2];  /* leaf first: every stack is this user stack */
	uint64_t kips[1]; /* and this kernel stack, when kn is 1 */
	size_t kn;
	bool user_lost[FAKE_MAX];
	size_t n;
	int fail; /* returned instead of draining, when set */
	int drains;
};

static int fake_drain(void *src, int64_t period, profile_sample_cb cb, void *arg)
{
	struct fake_source *f = src;
	int rc = 0;

	f->drains++;
	if (f->fail)
		return f->fail;
	for (size_t i = 0; i < f->n && !rc; i++) {
		struct sampler_stack user = {.ips = f->ips, .n = 2, .lost = f->user_lost[i]};
		struct sampler_stack kern = {.ips = f->kips, .n = f->kn};

		int64_t values[] = {(int64_t)f->counts[i], (int64_t)f->counts[i] * period};

		if (user.lost)
			user.n = 0;
		rc = cb(&(struct profile_sample){.key = &f->keys[i],
						 .values = values,
						 .events = f->counts[i],
						 .user = &user,
						 .kern = &kern},
			arg);
	}
	f->n = 0;
	return rc;
}

static int64_t test_period(unsigned int hz)
{
	return 1000 * (int64_t)hz; /* not the cpu type's: the type decides */
}

/* A type of its own: the drain must take every name and the period from it. */
static const struct profile_type test_type = {
	.name = "test",
	.values = {{"allocs", "count"}, {"alloc_space", "bytes"}},
	.n_values = 2,
	.period_type = {"space", "bytes"},
	.period = test_period,
	.drain = fake_drain,
};

/* Classes by pid: 100 and 101 are "web", 200 is "db", 300 is excluded. */
static struct proc_class classes[4];
static bool classify_fails;
/* The user leaf each lookup was given, by the pid's index in classes. */
static uint64_t leaf_seen[4];

static const struct proc_class *classify(uint32_t pid, const char *comm, uint64_t user_leaf,
					 void *arg)
{
	(void)comm;
	(void)arg;
	if (classify_fails)
		return NULL;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if ((uint32_t)classes[i].pid == pid) {
			leaf_seen[i] = user_leaf;
			return &classes[i];
		}
	return NULL;
}

static void set_class(int i, pid_t pid, const char *service, bool excluded)
{
	classes[i] = (struct proc_class){.pid = pid};
	classes[i].match.app = -1;
	classes[i].match.excluded = excluded;
	snprintf(classes[i].match.service, sizeof(classes[i].match.service), "%s", service);
}

static struct fake_source src;
static struct symbolizer *sym;

static void add(uint32_t tgid, uint64_t count, bool lost)
{
	ck_assert_uint_lt(src.n, FAKE_MAX);
	memset(&src.keys[src.n], 0, sizeof(src.keys[0]));
	src.keys[src.n].tgid = tgid;
	snprintf(src.keys[src.n].comm, sizeof(src.keys[0].comm), "proc%u", tgid);
	src.keys[src.n].user_stack = src.n + 1;
	src.counts[src.n] = count;
	src.user_lost[src.n] = lost;
	src.n++;
}

static void setup(void)
{
	memset(&src, 0, sizeof(src));
	/* this process's own functions: the leaf's first byte, a return address in its caller */
	src.ips[0] = (uint64_t)(uintptr_t)&drain_test_leaf + 1;
	src.ips[1] = (uint64_t)(uintptr_t)&drain_test_caller + 5;
	set_class(0, 100, "web", false);
	set_class(1, 101, "web", false);
	set_class(2, 200, "db", false);
	set_class(3, 300, "noise", true);
	classify_fails = false;
	memset(leaf_seen, 0xff, sizeof(leaf_seen));
	sym = symbolizer_new();
	ck_assert_ptr_nonnull(sym);
	/* as emberd does: this process captured, the drain held until its binaries are parsed */
	ck_assert_int_eq(symbolizer_capture(sym, getpid()), 0);
	ck_assert(symbolizer_settle_until(sym, mono_ns() + 30 * NS_PER_SEC));
}

static void teardown(void)
{
	symbolizer_free(sym);
}

static struct drain_request request(void)
{
	return (struct drain_request){
		.type = &test_type,
		.src = &src,
		.sym = sym,
		.hz = HZ,
		.start_ns = 1000000000LL,
		.end_ns = 11000000000LL,
		.classify = classify,
	};
}

static const struct drain_profile *find(const struct drain_result *r, const char *service)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].service, service))
			return &r->v[i];
	return NULL;
}

/* Whether the encoded profile has a function named name. */
static bool has_function(const struct drain_profile *p, const char *name)
{
	pprof_profile *pp = NULL;
	uint8_t *buf = NULL;
	size_t len;
	bool found = false;

	ck_assert_int_eq(pprof_encode(p->b, &buf, &len), 0);
	ck_assert_int_eq(pprof_decode(buf, len, &pp, NULL, 0), 0);
	for (size_t i = 0; i < pp->n_function; i++)
		if (!strcmp(pp->string_table[pp->function[i]->name], name))
			found = true;
	pprof_profile_free(pp);
	free(buf);
	return found;
}

START_TEST(test_profiles_per_app)
{
	struct drain_request q = request();
	const struct drain_profile *web, *db;
	struct drain_result r;

	/* this process's frames are named from its own binary: pid 100 is us */
	set_class(0, getpid(), "web", false);
	add(getpid(), 3, false);
	add(101, 4, false);
	add(200, 5, false);
	add(300, 7, false);
	ck_assert_int_eq(drain_profiles(&q, &r), 0);
	ck_assert_ptr_eq(r.type, &test_type);
	ck_assert_uint_eq(r.n, 2);
	web = find(&r, "web");
	db = find(&r, "db");
	ck_assert_ptr_nonnull(web);
	ck_assert_ptr_nonnull(db);
	ck_assert_uint_eq(web->st.samples, 7);
	ck_assert_uint_eq(web->st.stacks, 2);
	ck_assert_uint_eq(web->st.processes, 2);
	ck_assert_uint_eq(db->st.samples, 5);
	ck_assert_uint_eq(db->st.processes, 1);
	ck_assert_uint_eq(r.total.samples, 12);
	ck_assert_uint_eq(r.total.stacks, 3);
	ck_assert_uint_eq(r.total.processes, 3);
	ck_assert_uint_eq(r.total.lost_stacks, 0);
	ck_assert_uint_eq(r.excluded, 7);
	/* the type's sample types and period, values count and count x period */
	const struct pprof_meta *m = pprof_builder_meta(web->b);
	ck_assert_str_eq(m->sample_types[0].type, "allocs");
	ck_assert_str_eq(m->sample_types[1].unit, "bytes");
	ck_assert_str_eq(m->period_type.type, "space");
	ck_assert_int_eq(m->period, 1000 * HZ);
	ck_assert_int_eq(m->time_nanos, 1000000000LL);
	ck_assert_int_eq(m->duration_nanos, 10000000000LL);
	ck_assert_int_eq(pprof_value_total(web->b, 0), 7);
	ck_assert_int_eq(pprof_value_total(web->b, 1), 7 * 1000 * HZ);
	ck_assert(has_function(web, "drain_test_leaf"));
	ck_assert(has_function(web, "drain_test_caller"));
	drain_result_free(&r);
	ck_assert_uint_eq(r.n, 0);
}
END_TEST

START_TEST(test_lost_stack)
{
	struct drain_request q = request();
	struct drain_result r;

	add(200, 2, true);
	add(200, 3, false);
	ck_assert_int_eq(drain_profiles(&q, &r), 0);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.v[0].st.samples, 5);
	ck_assert_uint_eq(r.v[0].st.lost_stacks, 2);
	ck_assert_uint_eq(r.total.lost_stacks, 2);
	ck_assert(has_function(&r.v[0], "[lost user stack]"));
	drain_result_free(&r);
}
END_TEST

/* An on-demand capture drains several times into one profile; each drain empties the source. */
START_TEST(test_more_accumulates)
{
	struct drain_request q = request();
	struct drain_result r = {};

	add(100, 2, false);
	ck_assert_int_eq(drain_more(&q, &r), 0);
	add(100, 3, false);
	add(101, 1, false);
	ck_assert_int_eq(drain_more(&q, &r), 0);
	ck_assert_int_eq(drain_more(&q, &r), 0); /* nothing new */
	ck_assert_int_eq(src.drains, 3);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.v[0].st.samples, 6);
	ck_assert_uint_eq(r.v[0].st.processes, 2);
	ck_assert_uint_eq(r.total.samples, 6);
	ck_assert_int_eq(pprof_value_total(r.v[0].b, 0), 6);
	drain_result_free(&r);
}
END_TEST

START_TEST(test_empty)
{
	struct drain_request q = request();
	struct drain_result r;

	ck_assert_int_eq(drain_profiles(&q, &r), 0);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_uint_eq(r.total.samples, 0);
	drain_result_free(&r);
}
END_TEST

/* A source that fails, or a classification out of memory: an error, nothing half-built. */
START_TEST(test_errors)
{
	struct drain_request q = request();
	struct drain_result r;

	add(100, 1, false);
	src.fail = -EIO;
	ck_assert_int_eq(drain_profiles(&q, &r), -EIO);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_ptr_null(r.v);
	src.fail = 0;
	classify_fails = true;
	ck_assert_int_eq(drain_profiles(&q, &r), -ENOMEM);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_ptr_null(r.v);
}
END_TEST

/* A comm cut inside a character (the kernel cuts at 15 bytes) becomes valid UTF-8. */
START_TEST(test_comm_utf8)
{
	struct drain_request q = request();
	struct drain_result r;
	pprof_profile *pp = NULL;
	uint8_t *buf = NULL;
	size_t len;
	bool found = false;

	add(100, 1, false);
	memset(src.keys[0].comm, 0, sizeof(src.keys[0].comm));
	memcpy(src.keys[0].comm, "abcdefghijklm\xc3", 14); /* a 2-byte character, cut */
	ck_assert_int_eq(drain_profiles(&q, &r), 0);
	ck_assert_int_eq(pprof_encode(r.v[0].b, &buf, &len), 0);
	ck_assert_int_eq(pprof_decode(buf, len, &pp, NULL, 0), 0);
	for (size_t i = 0; i < pp->n_string_table; i++) {
		ck_assert_ptr_null(strstr(pp->string_table[i], "\xc3"));
		if (!strncmp(pp->string_table[i], "abcdefghijklm", 13))
			found = true;
	}
	ck_assert(found);
	pprof_profile_free(pp);
	free(buf);
	drain_result_free(&r);
}
END_TEST

/*
 * The lookup of a sample's application is given its user stack's leaf (a
 * sample from before an exec is its old image's), 0 when the stack was lost.
 */
/* Kernel addresses the fake kernel namer knows: a page fault's entry and a system call's. */
#define KERN_FAULT 0xffffffff81001000ull
#define KERN_SYSCALL 0xffffffff81002000ull

static int kernel_name(void *arg, uint64_t addr, char *buf, size_t len)
{
	(void)arg;
	if (addr >> 8 == KERN_FAULT >> 8)
		return snprintf(buf, len, "asm_exc_page_fault"), 1;
	if (addr >> 8 == KERN_SYSCALL >> 8)
		return snprintf(buf, len, "entry_SYSCALL_64_after_hwframe"), 1;
	buf[0] = '\0';
	return 0;
}

/*
 * The user frame under a kernel stack: where a page fault entered the kernel,
 * the faulting instruction itself (a function's first byte is that function's);
 * where a system call did, the instruction after it, stepped back into it.
 */
START_TEST(test_user_leaf_after_kernel_entry)
{
	struct drain_request q = request();
	struct drain_result r;

	symbolizer_set_kernel_namer(sym, kernel_name, NULL);
	set_class(0, getpid(), "web", false);
	src.ips[0] = (uint64_t)(uintptr_t)&drain_test_leaf;
	src.kn = 1;
	src.kips[0] = KERN_FAULT + 0x20;
	add(getpid(), 1, false);
	ck_assert_int_eq(drain_profiles(&q, &r), 0);
	ck_assert(has_function(find(&r, "web"), "asm_exc_page_fault"));
	ck_assert(has_function(find(&r, "web"), "drain_test_leaf"));
	drain_result_free(&r);

	src.kips[0] = KERN_SYSCALL + 0x20;
	add(getpid(), 1, false);
	ck_assert_int_eq(drain_profiles(&q, &r), 0);
	ck_assert(has_function(find(&r, "web"), "entry_SYSCALL_64_after_hwframe"));
	ck_assert(!has_function(find(&r, "web"), "drain_test_leaf"));
	ck_assert(has_function(find(&r, "web"), "drain_test_caller"));
	drain_result_free(&r);
}
END_TEST

START_TEST(test_classify_gets_user_leaf)
{
	struct drain_request q = request();
	struct drain_result r;

	add(200, 5, false);
	add(101, 4, true);
	ck_assert_int_eq(drain_profiles(&q, &r), 0);
	ck_assert_uint_eq(leaf_seen[2], src.ips[0]);
	ck_assert_uint_eq(leaf_seen[1], 0);
	drain_result_free(&r);
}
END_TEST

Suite *drain_suite(void)
{
	Suite *s = suite_create("drain");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_profiles_per_app);
	tcase_add_test(tc, test_lost_stack);
	tcase_add_test(tc, test_more_accumulates);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_comm_utf8);
	tcase_add_test(tc, test_classify_gets_user_leaf);
	tcase_add_test(tc, test_user_leaf_after_kernel_entry);
	suite_add_tcase(s, tc);
	return s;
}
