// SPDX-License-Identifier: MIT
/*
 * The symbolizer's kernel names: kallsyms, or the kernel namer's answers
 * cached by address.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "symbolizer_int.h"
#include "util.h"

void kname_reset(struct kname_cache *c)
{
	free(c->v);
	free(c->arena);
	memset(c, 0, sizeof(*c));
}

static size_t kname_slot(const struct kname_cache *c, uint64_t addr)
{
	size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ULL) >> 20) & (c->cap - 1);

	while (c->v[i].addr && c->v[i].addr != addr)
		i = (i + 1) & (c->cap - 1);
	return i;
}

/* Room for one more entry and len bytes of name; false on ENOMEM. */
static bool kname_reserve(struct kname_cache *c, size_t len)
{
	if (c->n + 1 > SYM_MAX_KNAMES || c->arena_len + len > SYM_MAX_KNAME_BYTES)
		kname_reset(c);
	if (2 * (c->n + 1) > c->cap) {
		struct kname *old = c->v;
		size_t old_cap = c->cap, cap = old_cap ? 2 * old_cap : 4096;

		c->v = calloc(cap, sizeof(*c->v));
		if (!c->v) {
			c->v = old;
			return false;
		}
		c->cap = cap;
		for (size_t i = 0; i < old_cap; i++)
			if (old[i].addr)
				c->v[kname_slot(c, old[i].addr)] = old[i];
		free(old);
	}
	return array_grow((void **)&c->arena, &c->arena_cap, c->arena_len + len, 1, 64 << 10) == 0;
}

/*
 * Asks the namer once per address and caches its answer, a name with its
 * " [module]" suffix dropped, or "unknown". Negative errno when it failed.
 */
static int kname_lookup(struct symbolizer *s, uint64_t addr, const char **name)
{
	struct kname_cache *c = &s->knames;
	char buf[SYM_KNAME_MAX];
	size_t i, len;
	char *sp;
	int rc;

	*name = NULL;
	if (c->cap) {
		i = kname_slot(c, addr);
		if (c->v[i].addr) {
			if (c->v[i].name != KNAME_UNKNOWN)
				*name = c->arena + c->v[i].name;
			return 0;
		}
	}
	s->st.kernel_asked++;
	rc = s->namer(s->namer_arg, addr, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	buf[sizeof(buf) - 1] = '\0';
	sp = strchr(buf, ' '); /* "func [module]": named alone, as for [kernel.kallsyms] */
	if (sp)
		*sp = '\0';
	len = strlen(buf) + 1;
	if (!addr || !kname_reserve(c, len))
		return 0; /* 0 marks free slots; and no memory is no reason to fail */
	i = kname_slot(c, addr);
	c->v[i].addr = addr;
	c->v[i].name = KNAME_UNKNOWN;
	if (rc > 0 && buf[0]) {
		memcpy(c->arena + c->arena_len, buf, len);
		c->v[i].name = (uint32_t)c->arena_len;
		c->arena_len += len;
		*name = c->arena + c->v[i].name;
	}
	c->n++;
	return 0;
}

void kernel_frame(struct symbolizer *s, uint64_t addr, struct sym_frame *out)
{
	int err;

	/* Module functions are named alone, as perf does for [kernel.kallsyms]. */
	out->kernel = true;
	out->file = kernel_file;
	if (s->namer) {
		err = kname_lookup(s, addr, &out->function);
		if (!err)
			return;
		log_warnx("naming kernel frames in the kernel failed (%s): reading /proc/kallsyms "
			  "instead",
			  strerror(-err));
		s->namer = NULL;
		kname_reset(&s->knames);
	}
	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		err = ksyms_load(&s->ksyms);
		if (err)
			log_warnx("kernel symbols unavailable, kernel frames stay unnamed: %s",
				  strerror(-err));
	}
	out->function = ksyms_lookup(s->ksyms, addr, NULL);
}

/* Names addr in a mapped ELF file; false when the mapping is no readable ELF file. */
