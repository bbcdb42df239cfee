// SPDX-License-Identifier: MIT
/* The unwind tables by file identity and by id, and their negative entries (tablecache.c). */
#include <check.h>
#include <stdlib.h>

#include "suites.h"
#include "tablecache.h"

static struct file_key key_of(uint64_t dev, uint64_t ino, uint64_t size)
{
	return (struct file_key){.dev = dev, .ino = ino, .size = size, .mtime_sec = 1};
}

static struct table *find(struct tablecache *c, uint64_t dev, uint64_t ino, uint64_t size)
{
	struct file_key key = key_of(dev, ino, size);

	return tablecache_find(c, &key);
}

static struct table *table_new(struct file_key key, uint32_t id)
{
	struct table *t = calloc(1, sizeof(*t));

	ck_assert_ptr_nonnull(t);
	t->key = key;
	t->id = id;
	return t;
}

/* A table built and loaded, as the unwinder remembers it: placed by id, then by key. */
static struct table *add_loaded(struct tablecache *c, struct file_key key, uint32_t id)
{
	struct table *t = table_new(key, id);

	tablecache_place(c, t);
	ck_assert(tablecache_insert(c, t));
	return t;
}

/* A binary without a usable table. */
static struct table *add_negative(struct tablecache *c, struct file_key key)
{
	struct table *t = table_new(key, NO_ID);

	ck_assert(tablecache_insert(c, t));
	return t;
}

/* Every field of the identity tells two files apart: a file rewritten is another. */
START_TEST(test_find_by_identity)
{
	static struct tablecache c;
	struct file_key other_mtime = key_of(1, 10, 100);
	struct table *a, *b, *r, *n;

	a = add_loaded(&c, key_of(1, 10, 100), 3);
	b = add_loaded(&c, key_of(2, 10, 100), 4); /* the same inode on another device */
	r = add_loaded(&c, key_of(1, 10, 200), 5); /* rewritten: another size */
	n = add_negative(&c, key_of(1, 11, 100));
	ck_assert_ptr_eq(find(&c, 1, 10, 100), a);
	ck_assert_ptr_eq(find(&c, 2, 10, 100), b);
	ck_assert_ptr_eq(find(&c, 1, 10, 200), r);
	ck_assert_ptr_eq(find(&c, 1, 11, 100), n);
	ck_assert_ptr_null(find(&c, 1, 12, 100));
	other_mtime.mtime_nsec = 1;
	ck_assert_ptr_null(tablecache_find(&c, &other_mtime));
	ck_assert_ptr_eq(c.by_id[3], a);
	ck_assert_ptr_eq(c.by_id[5], r);
	ck_assert_ptr_null(c.by_id[6]);
	ck_assert_uint_eq(c.negatives, 1);
	tablecache_free(&c);
}
END_TEST

/* An evicted table is found neither by key nor by id; the others still are. */
START_TEST(test_remove)
{
	static struct tablecache c;
	struct table *a = add_loaded(&c, key_of(1, 10, 100), 0);
	struct table *b = add_loaded(&c, key_of(1, 11, 100), 1);

	tablecache_remove(&c, a);
	ck_assert_ptr_null(tablecache_find(&c, &a->key));
	ck_assert_ptr_null(c.by_id[0]);
	ck_assert_ptr_eq(tablecache_find(&c, &b->key), b);
	ck_assert_ptr_eq(c.by_id[1], b);
	free(a);
	tablecache_free(&c);
}
END_TEST

/*
 * Negative entries are kept up to the cap; the next one forgets them all and
 * is kept alone. Loaded tables are kept, and the vDSO's stays in no tree.
 */
START_TEST(test_negatives_forgotten)
{
	static struct tablecache c;
	static struct table vdso = {.vdso = true, .id = 7};
	struct table *loaded, *first, *last = NULL, *next;

	vdso.key = key_of(0, 1, 8192);
	tablecache_place(&c, &vdso);
	loaded = add_loaded(&c, key_of(1, 10, 100), 2);
	first = add_negative(&c, key_of(2, 0, 100));
	for (uint64_t i = 1; i < TABLECACHE_NEGATIVE_MAX; i++)
		last = add_negative(&c, key_of(2, i, 100));
	ck_assert_uint_eq(c.negatives, TABLECACHE_NEGATIVE_MAX);
	ck_assert_ptr_eq(tablecache_find(&c, &first->key), first);
	ck_assert_ptr_eq(tablecache_find(&c, &last->key), last);
	/* a loaded table takes no negative's room */
	add_loaded(&c, key_of(1, 11, 100), 3);
	ck_assert_uint_eq(c.negatives, TABLECACHE_NEGATIVE_MAX);
	ck_assert_ptr_nonnull(find(&c, 2, 0, 100));

	next = add_negative(&c, key_of(3, 0, 100));
	ck_assert_uint_eq(c.negatives, 1);
	ck_assert_ptr_null(find(&c, 2, 0, 100));
	ck_assert_ptr_null(find(&c, 2, TABLECACHE_NEGATIVE_MAX - 1, 100));
	ck_assert_ptr_eq(tablecache_find(&c, &next->key), next);
	ck_assert_ptr_eq(tablecache_find(&c, &loaded->key), loaded);
	ck_assert_ptr_eq(find(&c, 1, 11, 100), c.by_id[3]);
	ck_assert_ptr_null(tablecache_find(&c, &vdso.key));
	ck_assert_ptr_eq(c.by_id[7], &vdso);
	tablecache_free(&c);
}
END_TEST

Suite *tablecache_suite(void)
{
	Suite *s = suite_create("tablecache");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_find_by_identity);
	tcase_add_test(tc, test_remove);
	tcase_add_test(tc, test_negatives_forgotten);
	suite_add_tcase(s, tc);
	return s;
}
