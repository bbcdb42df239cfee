// SPDX-License-Identifier: MIT
/* procsnap: copies of mappings, keys carried from an earlier read, and this process read once. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "ember/proc.h"
#include "procsnap.h"
#include "suites.h"

static const char text[] = "1000-2000 r-xp 00000000 fd:01 11 /usr/bin/a\n"
			   "2000-3000 rw-p 00001000 fd:01 11 /usr/bin/a\n"
			   "4000-5000 r-xp 00000000 00:00 0 [vdso]\n"
			   "6000-7000 r-xp 00000000 fd:01 12 /usr/lib/libb.so\n"
			   "8000-9000 r-xp 00000000 00:00 0\n";

static struct proc_snap *snap_of(pid_t pid, const char *t)
{
	struct proc_maps m = {0};
	struct proc_snap *s;

	ck_assert_int_eq(procmaps_parse(t, strlen(t), &m), 0);
	s = procsnap_wrap(pid, &m);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_null(m.v); /* taken over */
	return s;
}

START_TEST(test_dup)
{
	struct proc_snap *s = snap_of(7, text);
	struct proc_maps c = {0};

	ck_assert_int_eq(procmaps_dup(&s->maps, &c), 0);
	ck_assert_uint_eq(c.n, 5);
	for (size_t i = 0; i < c.n; i++) {
		ck_assert_uint_eq(c.v[i].start, s->maps.v[i].start);
		ck_assert_uint_eq(c.v[i].inode, s->maps.v[i].inode);
		ck_assert(!c.v[i].path == !s->maps.v[i].path);
		if (c.v[i].path) {
			ck_assert_str_eq(c.v[i].path, s->maps.v[i].path);
			ck_assert_ptr_ne(c.v[i].path, s->maps.v[i].path); /* its own copy */
		}
	}
	procsnap_unref(s); /* the copy outlives the snapshot */
	ck_assert_str_eq(c.v[3].path, "/usr/lib/libb.so");
	procmaps_free(&c);
}
END_TEST

START_TEST(test_wants_and_keys)
{
	struct proc_snap *s = snap_of(7, text);
	const struct file_key *k = NULL;

	ck_assert(procsnap_wants_file(&s->maps.v[0]));
	ck_assert(!procsnap_wants_file(&s->maps.v[1])); /* not code */
	ck_assert(!procsnap_wants_file(&s->maps.v[2])); /* [vdso] */
	ck_assert(procsnap_wants_file(&s->maps.v[3]));
	ck_assert(!procsnap_wants_file(&s->maps.v[4]));	    /* anonymous: JIT code */
	ck_assert_int_eq(procsnap_key(s, 0, &k), -ENODATA); /* wrapped: nothing stat'ed */
	ck_assert_ptr_null(k);
	ck_assert_int_eq(procsnap_key(s, 5, &k), -EINVAL);
	ck_assert_ptr_eq(procsnap_ref(s), s);
	ck_assert_int_eq(s->refs, 2);
	procsnap_unref(s);
	procsnap_unref(s);
	procsnap_unref(NULL);
}
END_TEST

/* Keys of unchanged mappings are carried; a moved or replaced one is not; nor another pid's. */
START_TEST(test_carry)
{
	struct proc_snap *prev = snap_of(7, text), *s, *other;
	const struct file_key *k;

	prev->key_err[0] = 0;
	prev->keys[0].ino = 11;
	prev->keys[0].size = 4096;
	prev->key_err[3] = 0;
	prev->keys[3].ino = 12;
	s = snap_of(7, "1000-2000 r-xp 00000000 fd:01 11 /usr/bin/a\n"
		       "6000-7000 r-xp 00000000 fd:01 13 /usr/lib/libb.so\n" /* replaced */
		       "a000-b000 r-xp 00000000 fd:01 14 /usr/lib/libc.so\n");
	ck_assert_uint_eq(procsnap_carry(s, prev), 1);
	ck_assert_int_eq(procsnap_key(s, 0, &k), 0);
	ck_assert_uint_eq(k->ino, 11);
	ck_assert_uint_eq(k->size, 4096);
	ck_assert_int_eq(procsnap_key(s, 1, &k), -ENODATA);
	ck_assert_int_eq(procsnap_key(s, 2, &k), -ENODATA);
	other = snap_of(8, text);
	ck_assert_uint_eq(procsnap_carry(other, prev), 0);
	ck_assert_uint_eq(procsnap_carry(other, NULL), 0);
	procsnap_unref(prev);
	procsnap_unref(s);
	procsnap_unref(other);
}
END_TEST

/* This process read once: every code mapping of a file identified, as a stat of it says. */
START_TEST(test_read_self)
{
	struct proc_snap *s, *again;
	size_t files = 0;
	int64_t before = mono_ns();

	ck_assert_int_eq(procsnap_read(getpid(), NULL, &s), 0);
	ck_assert_int_eq(s->pid, getpid());
	/* when it was read, for the unwinder's check against a later exec */
	ck_assert_int_ge(s->read_ns, before);
	ck_assert_int_le(s->read_ns, mono_ns());
	ck_assert_uint_gt(s->maps.n, 0);
	for (size_t i = 0; i < s->maps.n; i++) {
		const struct proc_map *m = &s->maps.v[i];
		const struct file_key *k = NULL;
		struct file_key direct;
		int err = procsnap_key(s, i, &k);

		if (!procsnap_wants_file(m)) {
			ck_assert_int_eq(err, -ENODATA);
			continue;
		}
		if (mapfile_key(getpid(), m, &direct)) {
			ck_assert_int_ne(err, 0);
			continue;
		}
		ck_assert_int_eq(err, 0);
		ck_assert_int_eq(file_key_cmp(k, &direct), 0);
		files++;
	}
	ck_assert_uint_gt(files, 0); /* check_ember's own code at least (root: map_files) */
	/* read again with the first: the same keys, carried */
	ck_assert_int_eq(procsnap_read(getpid(), s, &again), 0);
	ck_assert_uint_ge(procsnap_carry(again, s), files);
	procsnap_unref(again);
	procsnap_unref(s);
	ck_assert_int_eq(procsnap_read(0x3fffffff, NULL, &s), -ENOENT);
}
END_TEST

/*
 * This process's executable mappings as its exit would send them, for a pid
 * that does not exist: each file is found by its path in our own root and
 * identified as procsnap_read identifies it; one whose device is wrong is not.
 */
START_TEST(test_read_exit)
{
	struct ember_proc_maps_event r = {0};
	struct proc_snap *live, *gone;
	uint32_t n = 0, files = 0;
	int self = -1;

	ck_assert_int_eq(procsnap_read(getpid(), NULL, &live), 0);
	for (size_t i = 0; i < live->maps.n && n < EMBER_PROC_MAPS_MAX; i++) {
		const struct proc_map *m = &live->maps.v[i];
		struct ember_proc_map *e = &r.m[n];

		if (!procsnap_wants_file(m) || live->key_err[i])
			continue;
		e->start = m->start;
		e->end = m->end;
		e->offset = m->offset;
		e->ino = m->inode;
		e->dev = m->dev_major << 20 | m->dev_minor;
		snprintf(e->path, sizeof(e->path), "%s", m->path);
		if (m->start <= (uintptr_t)&procsnap_suite && (uintptr_t)&procsnap_suite < m->end)
			self = (int)n;
		n++;
	}
	ck_assert_int_ge(self, 0);
	r.e.type = EMBER_PROC_MAPS;
	r.e.tgid = 0x3fffffff;
	r.e.ktime_ns = 123456789;
	r.n = n;
	r.m[self].dev ^= 1; /* check_ember on another device: refused */
	ck_assert_int_eq(
		procsnap_read_exit(
			&r, offsetof(struct ember_proc_maps_event, m) + n * sizeof(r.m[0]), &gone),
		0);
	ck_assert_int_eq(gone->pid, 0x3fffffff);
	ck_assert_int_eq(gone->read_ns, 123456789); /* its exit's time: after any exec of it */
	ck_assert(procsnap_at_exit(gone));
	ck_assert(!procsnap_at_exit(live));
	ck_assert_uint_eq(gone->maps.n, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct file_key *k = NULL, *want = NULL;
		int err = procsnap_key(gone, i, &k);
		size_t j = 0;

		if ((int)i == self) {
			ck_assert_int_eq(err, -ESTALE);
			continue;
		}
		ck_assert_int_eq(err, 0);
		while (live->maps.v[j].start != gone->maps.v[i].start)
			j++;
		ck_assert_int_eq(procsnap_key(live, j, &want), 0);
		ck_assert_int_eq(file_key_cmp(k, want), 0);
		files++;
	}
	ck_assert_uint_ge(files, 1); /* libc at least */
	procsnap_unref(gone);
	procsnap_unref(live);
	r.n = 0;
	ck_assert_int_eq(procsnap_read_exit(&r, sizeof(r), &gone), -EINVAL);
}
END_TEST

Suite *procsnap_suite(void)
{
	Suite *s = suite_create("procsnap");
	TCase *tc = tcase_create("procsnap");

	tcase_add_test(tc, test_dup);
	tcase_add_test(tc, test_wants_and_keys);
	tcase_add_test(tc, test_carry);
	tcase_add_test(tc, test_read_self);
	tcase_add_test(tc, test_read_exit);
	suite_add_tcase(s, tc);
	return s;
}
