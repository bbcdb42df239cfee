// SPDX-License-Identifier: MIT
/*
 * mkflame: writes a flame graph of a fixed call tree whose geometry is known,
 * for the browser test (tests/integration/flamegraph_browser.*). The table
 * below is the answer key. With --deep N, a chain of N frames above main
 * instead: a graph taller than a browser's window.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"

/*
 * 1000 samples over 1180 px: 1.18 px each. x and width of each rect:
 * all, main 10 + 1180; alpha 10 + 590; leaf 10 + 236; beta 600 + 354;
 * the hostile name 954 + 236. In the diff, the base window has 1000 samples
 * too: leaf doubled (100 -> 200), beta shrank (500 -> 300).
 */
static const struct flame_frame tree[] = {
	{"all", 0, 1000, 1000},
	{"main", 1, 1000, 1000},
	{"alpha", 2, 500, 300},
	{"leaf", 3, 200, 100},
	{"beta", 2, 300, 500},
	{"std::vector<int>::push_back</script><img src=\"http://127.0.0.1:9/x\"> & \x01\xff", 2,
	 200, 200},
};

/* The deepest chain --deep draws: the tallest window's height, several times over. */
#define DEEP_MAX 512

/* all, main, then f1 calling f2 ... calling fN, every frame 1000 samples. */
static size_t deep_tree(struct flame_frame *out, char names[][16], size_t n)
{
	out[0] = (struct flame_frame){"all", 0, 1000, 1000};
	out[1] = (struct flame_frame){"main", 1, 1000, 1000};
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "f%zu", i + 1);
		out[i + 2] = (struct flame_frame){names[i], (uint32_t)(i + 2), 1000, 1000};
	}
	return n + 2;
}

int main(int argc, char **argv)
{
	static struct flame_frame deep[DEEP_MAX + 2];
	static char deep_names[DEEP_MAX][16];
	struct flame_doc doc = {
		.title = "CPU flame graph",
		.subtitle = "app test, type cpu, 1000 samples",
		.unit = "samples",
		.frames = tree,
		.n_frames = sizeof(tree) / sizeof(tree[0]),
	};
	const char *path = argv[argc - 1];
	int fmt, ret;
	FILE *f;

	if (argc == 3 && !strcmp(argv[1], "--diff")) {
		doc.diff = true;
		doc.title = "CPU differential flame graph";
	} else if (argc == 4 && !strcmp(argv[1], "--deep")) {
		char *end;
		unsigned long n = strtoul(argv[2], &end, 10);

		if (*end || !n || n > DEEP_MAX) {
			fprintf(stderr, "mkflame: --deep: 1 to %d frames\n", DEEP_MAX);
			return 2;
		}
		doc.frames = deep;
		doc.n_frames = deep_tree(deep, deep_names, n);
	} else if (argc != 2) {
		fprintf(stderr, "usage: mkflame [--diff | --deep N] FILE.svg|FILE.html\n");
		return 2;
	}
	fmt = flame_format_of(path);
	if (fmt < 0) {
		fprintf(stderr, "mkflame: %s: not .svg or .html\n", path);
		return 2;
	}
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "mkflame: %s: %s\n", path, strerror(errno));
		return 1;
	}
	ret = flame_write(f, &doc, (enum flame_format)fmt);
	if (fclose(f) && !ret)
		ret = -EIO;
	if (ret)
		fprintf(stderr, "mkflame: %s: %s\n", path, strerror(-ret));
	return ret ? 1 : 0;
}
