// SPDX-License-Identifier: MIT
/*
 * libFuzzer: .note.stapsdt notes, as a section's bytes or inside an ELF file. The first byte
 * chooses: bit 0 64-bit addresses (raw notes), bit 1 the rest is a whole file, read by
 * stapsdt_fd from a memfd as emberd reads the mapped file.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stapsdt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {"alloc", "free"};

/* A memfd holding the file (created once), or -1. */
static int file_of(const uint8_t *data, size_t size)
{
	static int fd = -1;

	if (fd < 0 && (fd = memfd_create("fuzz_stapsdt", MFD_CLOEXEC)) < 0)
		return -1;
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return -1;
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int found = 0;
	int rc, fd;

	if (!size)
		return 0;
	if (data[0] & 2) {
		if ((fd = file_of(data + 1, size - 1)) < 0)
			return 0;
		rc = stapsdt_fd(fd, "otel_memory", names, 2, &found);
	} else {
		rc = stapsdt_scan(data + 1, size - 1, data[0] & 1, "otel_memory", names, 2, &found);
	}
	/* Only the names asked for are reported; an error is -EINVAL, or a read's -errno. */
	if ((found & ~3u) || rc > 0)
		__builtin_trap();
	return 0;
}
