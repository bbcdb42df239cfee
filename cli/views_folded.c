// SPDX-License-Identifier: MIT
/*
 * Folded stacks (emberctl folded): one "frame;frame count" line per stack, the
 * input of flamegraph.pl, inferno and speedscope.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

static const char folded_help[] =
	"Usage: emberctl folded [-o FILE] [--since T] [--until T] ...\n"
	"\n"
	"Every stack of the window as one \"frame;frame;frame count\" line, outermost\n"
	"frame first, count in samples: the format of flamegraph.pl (FlameGraph's\n"
	"stackcollapse output), inferno and speedscope. Lines are sorted, so two\n"
	"windows can be compared with diff. What was merged is said on stderr.\n"
	"\n"
	"Frame names are made safe for the format: ';' in a name becomes ',', and\n"
	"control characters (newline, tab, ...) become '?'. Spaces stay (a count is\n"
	"what follows the last space).\n"
	"\n"
	"  -o, --output FILE  write to FILE (through FILE.tmp, renamed when complete)\n"
	"                     instead of stdout\n"
	"\n" SELECTION_HELP "\n"
	"Examples:\n"
	"  emberctl folded --since -10m | flamegraph.pl > cpu.svg\n"
	"  emberctl folded --since today -o cpu.folded    # speedscope cpu.folded\n"
	"For pprof tools (go tool pprof, Pyroscope), see \"emberctl export\".\n";

/* One output line: the stack's frames as text, and its count. */
struct folded_line {
	char *text;
	int64_t count;
};

/* A frame name as the format can carry it: ';' -> ',', control characters -> '?'. */
static char *safe_name(const char *name)
{
	char *s = strdup(name);

	for (char *p = s; p && *p; p++) {
		if (*p == ';')
			*p = ',';
		else if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	return s;
}

/* "a;b;c" of one stack from the safe names. */
static char *stack_text(char *const *names, const struct stackset_stack *st)
{
	size_t len = 1, off = 0;
	char *text;

	for (uint32_t j = 0; j < st->n; j++)
		len += strlen(names[st->frames[j]]) + 1;
	if (!st->n)
		return strdup("[no frames]");
	text = malloc(len);
	for (uint32_t j = 0; text && j < st->n; j++) {
		size_t n = strlen(names[st->frames[j]]);

		memcpy(text + off, names[st->frames[j]], n);
		off += n;
		text[off++] = j + 1 < st->n ? ';' : '\0';
	}
	return text;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* The sorted lines of every stack with samples; equal texts (once made safe) summed. */
static struct folded_line *folded_lines(const struct stackset *set, size_t *n_out)
{
	size_t n_names = stackset_names(set), n = 0;
	char **names = calloc(n_names ? n_names : 1, sizeof(char *));
	struct folded_line *lines = calloc(stackset_len(set) + 1, sizeof(*lines));
	struct stackset_stack st;
	bool ok = names && lines;

	for (size_t i = 0; ok && i < n_names; i++)
		ok = (names[i] = safe_name(stackset_name(set, (uint32_t)i))) != NULL;
	for (size_t i = 0; ok && i < stackset_len(set); i++) {
		stackset_get(set, i, &st);
		if (!st.value[0])
			continue;
		lines[n] =
			(struct folded_line){.text = stack_text(names, &st), .count = st.value[0]};
		ok = lines[n++].text != NULL;
	}
	for (size_t i = 0; names && i < n_names; i++)
		free(names[i]);
	free(names);
	if (ok)
		qsort(lines, n, sizeof(*lines), line_cmp);
	*n_out = 0;
	for (size_t i = 0; ok && i < n; i++) {
		if (*n_out && !strcmp(lines[*n_out - 1].text, lines[i].text)) {
			lines[*n_out - 1].count += lines[i].count;
			free(lines[i].text);
		} else {
			lines[(*n_out)++] = lines[i];
		}
	}
	if (ok)
		return lines;
	for (size_t i = 0; lines && i < n; i++)
		free(lines[i].text);
	free(lines);
	return NULL;
}

static int write_folded(const char *path, const struct folded_line *lines, size_t n)
{
	FILE *f = stdout;
	char *buf = NULL;
	size_t len = 0;
	int ret = 0;

	if (path && strcmp(path, "-")) {
		f = open_memstream(&buf, &len);
		if (!f)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %" PRId64 "\n", lines[i].text, lines[i].count);
	if (f == stdout)
		return view_finish_stdout() ? -EIO : 0;
	if (fclose(f))
		ret = -ENOMEM;
	if (!ret)
		ret = write_file_atomic(path, (const uint8_t *)buf, len);
	free(buf);
	return ret;
}

int cmd_folded(const char *data_dir, int argc, char **argv)
{
	struct view_opts o = {.help = folded_help, .flags = VO_OUTPUT, .data_dir = data_dir};
	struct merge_state s = {0};
	struct folded_line *lines;
	char what[1024];
	size_t n = 0;
	int ret;

	ret = view_load(argc, argv, &o, &s);
	if (ret)
		goto out;
	ret = EXIT_RUNTIME;
	lines = folded_lines(s.set, &n);
	if (!lines) {
		note("out of memory");
		goto out;
	}
	ret = write_folded(o.output, lines, n);
	if (ret && ret != -EIO)
		note("cannot write %s: %s", o.output, strerror(-ret));
	if (!ret) {
		view_describe(&o, &s, what, sizeof(what));
		note("%zu stacks of %s, written to %s", n, what,
		     o.output && strcmp(o.output, "-") ? o.output : "stdout");
	}
	ret = ret ? EXIT_RUNTIME : EXIT_SUCCESS;
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
out:
	merge_state_free(&s);
	return ret;
}
