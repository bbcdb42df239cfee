// SPDX-License-Identifier: MIT
/*
 * mkflame: writes a flame graph of a fixed call tree whose geometry is known,
 * for the browser test (tests/integration/flamegraph_browser.*). The table
 * below is the answer key.
 */
#include <errno.h>
#include <stdio.h>
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

int main(int argc, char **argv)
{
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
	} else if (argc != 2) {
		fprintf(stderr, "usage: mkflame [--diff] FILE.svg|FILE.html\n");
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
