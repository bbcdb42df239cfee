// SPDX-License-Identifier: MIT
/*
 * ksymcheck: names every STEP-th kernel text symbol of /proc/kallsyms (its
 * address + 1, inside the function) with the daemon's BPF namer and checks
 * the answer is a name listed at that address; also that an address outside
 * kernel text stays unnamed. Prints the counts; exit 0 all agree, 1 a
 * mismatch, 77 the program cannot be loaded here (not root, old kernel).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksymbpf.h"

#define MAX_LINES (1u << 20)

/* One text line of kallsyms: its address and name (module suffix cut). */
struct line {
	unsigned long long addr;
	char name[512];
};

static struct line *read_text(size_t *n)
{
	struct line *v = calloc(MAX_LINES, sizeof(*v));
	char buf[1024], type;
	FILE *f = fopen("/proc/kallsyms", "re");

	*n = 0;
	if (!v || !f) {
		free(v);
		if (f)
			fclose(f);
		return NULL;
	}
	while (*n < MAX_LINES && fgets(buf, sizeof(buf), f)) {
		struct line *l = &v[*n];

		if (sscanf(buf, "%llx %c %511s", &l->addr, &type, l->name) == 3 &&
		    strchr("tTwW", type) && l->addr)
			(*n)++;
	}
	fclose(f);
	return v;
}

/*
 * Lines the daemon never named anyway: section ends (ksyms.c drops them too),
 * and ftrace trampolines, which "%ps" does not look up (a known difference:
 * such a frame stays unnamed).
 */
static int skipped(const char *name)
{
	static const char *const v[] = {"_etext", "_einittext", "ftrace_trampoline"};

	if (!strncmp(name, "__pfx_", 6)) /* padding before a function: nothing runs there */
		return 1;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (!strcmp(name, v[i]))
			return 1;
	return 0;
}

/* Whether name is listed at addr: kallsyms is sorted, aliases are neighbours. */
static int listed(const struct line *v, size_t n, size_t i, const char *name)
{
	for (size_t j = i; j < n && v[j].addr == v[i].addr; j++)
		if (!strcmp(v[j].name, name))
			return 1;
	for (size_t j = i; j-- > 0 && v[j].addr == v[i].addr;)
		if (!strcmp(v[j].name, name))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	size_t step = argc > 1 ? strtoul(argv[1], NULL, 10) : 97, n, asked = 0, bad = 0;
	struct ksymbpf *k;
	struct line *v;
	char name[640];
	int rc;

	rc = ksymbpf_open(&k);
	if (rc) {
		printf("SKIP: cannot load the ksym program: %s\n", strerror(-rc));
		return 77;
	}
	v = read_text(&n);
	if (!v || n == 0) {
		printf("FAIL: no text symbol in /proc/kallsyms\n");
		return 1;
	}
	for (size_t i = 0; i < n; i += step ? step : 1) {
		if (skipped(v[i].name) || (i + 1 < n && v[i + 1].addr == v[i].addr + 1))
			continue;
		rc = ksymbpf_name(k, v[i].addr + 1, name, sizeof(name));
		asked++;
		*strchrnul(name, ' ') = '\0';
		if (rc != 1 || !listed(v, n, i, name)) {
			if (bad++ < 10)
				printf("mismatch at %llx: kallsyms %s, BPF %s (rc %d)\n", v[i].addr,
				       v[i].name, rc == 1 ? name : "-", rc);
		}
	}
	rc = ksymbpf_name(k, 0x1000, name, sizeof(name));
	if (rc != 0) {
		printf("address 0x1000 named '%s' (rc %d), expected unknown\n", name, rc);
		bad++;
	}
	printf("%zu of %zu kernel text symbols checked, %zu mismatches\n", asked, n, bad);
	ksymbpf_close(k);
	free(v);
	return bad ? 1 : 0;
}
