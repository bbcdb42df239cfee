// SPDX-License-Identifier: MIT
/*
 * Runtime frames (include/ember/runtime.h): named from the live process's
 * memory with the runtime's layout the walk used, cached per process
 * (runtime.h) until the process is dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_int.h"

void symbolizer_set_runtime(struct symbolizer *s, symbolizer_runtime_fn fn, void *arg)
{
	s->runtime = fn;
	s->runtime_arg = arg;
}

/* The runtime of pe's process, asked of the unwinder once per process: kind 0 when none. */
static void pid_runtime(struct symbolizer *s, struct pid_entry *pe, pid_t pid)
{
	if (pe && !pe->rt_asked) {
		pe->rt_asked = true;
		if (!s->runtime || !s->runtime(s->runtime_arg, pid, &pe->rt))
			memset(&pe->rt, 0, sizeof(pe->rt));
	}
}

/*
 * Where pe maps its CPython's binary (the mapping of its eval loop), once that
 * file's segments are known (parsed: no wait here); its user read again each
 * interval (one who changed users no longer shares with the first).
 */
static void share_image(struct symbolizer *s, struct pid_entry *pe)
{
	uint64_t text = pe->rt.text[0], vaddr, lo, hi;
	struct file_entry *f;
	uid_t uid;

	if (pe->rt.kind != EMBER_RT_PYTHON || !text)
		return;
	for (size_t i = 0; !pe->rt_img_set && i < pe->maps.n; i++) {
		const struct proc_map *m = &pe->maps.v[i];

		if (text < m->start || text >= m->end)
			continue;
		f = mapping_file(s, pe, i);
		if (!f || f == &no_file || !f->settled || !f->syms ||
		    !elf_syms_offset_to_vaddr(f->syms, text - m->start + m->offset, &vaddr) ||
		    !elf_syms_span(f->syms, &lo, &hi))
			return;
		pe->rt_img = (struct rt_image){.file = f->key,
					       .lo = lo + (text - vaddr),
					       .hi = hi + (text - vaddr),
					       .bias = text - vaddr};
		pe->rt_img_set = true;
	}
	if (!pe->rt_img_set)
		return;
	uid = pid_uid(s, pe);
	pe->rt_img.uid = (uint32_t)uid;
	rt_cache_share(pe->rt_names, uid != SYMSHARE_NO_UID ? s->rt_shared : NULL, &pe->rt_img);
}

/* The memory of a live process pid: one process_vm_readv() a read. */
static struct rt_mem live_mem(pid_t pid)
{
	return (struct rt_mem){rt_read_pid, (void *)(intptr_t)pid, rt_readv_pid};
}

/*
 * Names runtime frame word of pid into *n (its cache, else a name saying why
 * not): 0 when named. sampled_ns >= 0: the cache's name checked first against
 * what lies at the object's address now (rt_cache_check()), for a word
 * sampled then.
 */
static int rt_name_into(struct symbolizer *s, pid_t pid, const struct rt_mem *mem, uint64_t word,
			int64_t sampled_ns, struct rt_name *n)
{
	struct pid_entry *pe = pid_maps(s, pid);
	struct ember_rt_proc none = {0};

	pid_runtime(s, pe, pid);
	if (pe && !pe->rt_names)
		pe->rt_names = rt_cache_new();
	if (!pe || !pe->rt_names) {
		memset(n, 0, sizeof(*n));
		snprintf(n->function, sizeof(n->function), "[runtime frame 0x%" PRIx64 "]",
			 (uint64_t)EMBER_RT_WORD_PTR(word));
		return -ENOMEM;
	}
	share_image(s, pe);
	if (sampled_ns >= 0)
		switch (rt_cache_check(pe->rt_names, mem, pe->rt.kind ? &pe->rt : &none, word,
				       sampled_ns)) {
		case RT_CHECK_READ:
			s->st.runtime_reread++;
			/* fall through */
		case RT_CHECK_SAME:
			s->st.runtime_checked++;
			break;
		case RT_CHECK_NONE:
			break;
		}
	return rt_cache_name(pe->rt_names, mem, pe->rt.kind ? &pe->rt : &none, word, n);
}

void runtime_frame(struct symbolizer *s, pid_t pid, uint64_t word, struct sym_frame *out)
{
	struct rt_name *n = &s->rt_last;

	struct rt_mem mem = live_mem(pid);

	rt_name_into(s, pid, &mem, word, -1, n);
	out->function = n->function;
	out->file = NULL;
	out->address = word;
	out->source_file = n->file[0] ? n->file : NULL;
	out->line = n->line;
	out->start_line = n->start_line;
	out->inlined = n->n_inlined ? n->inlined : NULL;
	out->n_inlined = n->n_inlined;
	s->st.runtime_frames++;
}

bool runtime_jit_unsupported(struct symbolizer *s, struct pid_entry *pe, pid_t pid,
			     struct sym_frame *out)
{
	pid_runtime(s, pe, pid);
	if (!pe || pe->rt.kind != EMBER_RT_V8 || !(pe->rt.flags & EMBER_RT_F_UNSUPPORTED))
		return false;
	/* the word of no object: the name says the version */
	struct rt_mem mem = live_mem(pid);

	rt_name_into(s, pid, &mem, EMBER_RT_WORD(EMBER_RT_V8, 0, 0), -1, &s->rt_last);
	out->function = s->rt_last.function;
	s->st.runtime_unsupported++;
	return true;
}

/*
 * The memory pid's stack of words is named from: the objects its checks and names will
 * read (CPython's code objects), their first bytes read at once (up to 8 a system call,
 * where each was one), the rest from the process.
 */
static struct rt_mem stack_mem(struct symbolizer *s, pid_t pid, const uint64_t *words, size_t n,
			       int64_t sampled_ns)
{
	struct pid_entry *pe = pid_maps(s, pid);
	struct rt_mem live = live_mem(pid);
	uint64_t addrs[RT_PREFETCH_MAX];
	size_t na = 0;

	pid_runtime(s, pe, pid);
	if (!pe || pe->rt.kind != EMBER_RT_PYTHON || !pe->rt_names)
		return live; /* a process's first stack: its cache made by the first name */
	share_image(s, pe);
	for (size_t i = 0; i < n && na < RT_PREFETCH_MAX; i++)
		if (EMBER_RT_IS_WORD(words[i]) &&
		    (addrs[na] = rt_cache_to_read(pe->rt_names, &pe->rt, words[i], sampled_ns)))
			na++;
	if (na < 2 || (!s->prefetch && !(s->prefetch = malloc(sizeof(*s->prefetch)))))
		return live;
	rt_prefetch_fill(s->prefetch, &live, addrs, na);
	return rt_prefetch_mem(s->prefetch);
}

void symbolizer_runtime_seen(struct symbolizer *s, pid_t pid, const uint64_t *words, size_t n,
			     int64_t sampled_ns)
{
	struct rt_mem mem = stack_mem(s, pid, words, n, sampled_ns);
	struct rt_name scratch;

	s->st.runtime_seen_stacks++;
	for (size_t i = 0; i < n; i++)
		if (EMBER_RT_IS_WORD(words[i])) {
			s->st.runtime_seen++;
			if (rt_name_into(s, pid, &mem, words[i], sampled_ns, &scratch))
				s->st.runtime_seen_unread++;
		}
}
