// SPDX-License-Identifier: MIT
/*
 * libFuzzer: one input as /proc/PID/cgroup text, as a cgroup path (unit and
 * container), as an environ block, with tight and roomy output buffers, as
 * /proc/PID/stat text, and as the link of a cgroup directory (cgroupid.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroupid.h"
#include "procinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *path)
{
	char unit[256], id[PROCINFO_CONTAINER_ID_LEN + 1], rt[16], small[9];

	if (procinfo_unit_from_cgroup(path, unit, sizeof(unit))) {
		if (!unit[0] || strchr(unit, '/') || strlen(unit) >= sizeof(unit))
			__builtin_trap();
	} else if (unit[0]) {
		__builtin_trap();
	}
	if (procinfo_unit_from_cgroup(path, small, sizeof(small)) && strlen(small) >= sizeof(small))
		__builtin_trap();
	if (procinfo_container_from_cgroup(path, id, sizeof(id), rt, sizeof(rt))) {
		if (strlen(id) != PROCINFO_CONTAINER_ID_LEN ||
		    strspn(id, "0123456789abcdef") != PROCINFO_CONTAINER_ID_LEN)
			__builtin_trap();
	} else if (id[0] || rt[0]) {
		__builtin_trap();
	}
	procinfo_container_from_cgroup(path, id, sizeof(id), rt, 3);
	procinfo_container_from_cgroup(path, id, sizeof(id), NULL, 0);
}

static void check_environ(const char *buf, size_t len, const char *name, size_t outlen)
{
	char out[64];
	int err = procinfo_parse_environ(buf, len, name, out, outlen);

	if (err == 0 && strlen(out) >= outlen)
		__builtin_trap();
	if (err && out[0])
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char cg[PATH_MAX], tiny[5], name[16];
	char *path = malloc(size + 1);
	size_t nlen;

	if (!path)
		return 0;
	memcpy(path, data, size);
	path[size] = '\0';

	if (procinfo_parse_cgroup(text, size, cg, sizeof(cg)) == 0) {
		if (cg[0] != '/')
			__builtin_trap();
		check_path(cg);
	} else if (cg[0]) {
		__builtin_trap();
	}
	if (procinfo_parse_cgroup(text, size, tiny, sizeof(tiny)) == 0 &&
	    strlen(tiny) >= sizeof(tiny))
		__builtin_trap();
	check_path(path);
	(void)procinfo_parse_stat_exiting(text, size);
	if (cgroupid_path_under(text, size, "/sys/fs/cgroup", cg, sizeof(cg)) == 0 &&
	    (cg[0] != '/' || strlen(cg) >= sizeof(cg)))
		__builtin_trap();
	if (cgroupid_path_under(text, size, "/sys/fs/cgroup", tiny, sizeof(tiny)) == 0 &&
	    strlen(tiny) >= sizeof(tiny))
		__builtin_trap();

	/* The environ name: the input's first bytes up to '=' or NUL, else fixed ones. */
	nlen = strcspn(path, "=");
	if (nlen > sizeof(name) - 1)
		nlen = sizeof(name) - 1;
	memcpy(name, path, nlen);
	name[nlen] = '\0';
	if (name[0])
		check_environ(text, size, name, 64);
	check_environ(text, size, "PATH", 64);
	check_environ(text, size, "A", 4);
	check_environ(text, size, "A", 1);
	free(path);
	return 0;
}
