// SPDX-License-Identifier: MIT
/*
 * Makes the hostile files of issue 47 from a real x86-64 ELF file: a copy whose
 * section NAME claims SIZE bytes that lie over a hole of a sparse file (cheap to
 * claim, costly to believe). The program still runs: the loader reads segments,
 * not sections.
 *   mkhostile hole IN OUT SECTION SIZE
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "mkhostile: %s: %s\n", what, errno ? strerror(errno) : "bad input");
	exit(1);
}

static void read_at(int fd, void *buf, size_t len, off_t off)
{
	if (pread(fd, buf, len, off) != (ssize_t)len)
		die("read");
}

static void write_at(int fd, const void *buf, size_t len, off_t off)
{
	if (pwrite(fd, buf, len, off) != (ssize_t)len)
		die("write");
}

/* Copies in to out (mode kept), then returns out opened for writing. */
static int copy(const char *in, const char *out)
{
	char buf[1 << 16];
	struct stat st;
	int a = open(in, O_RDONLY), b;
	ssize_t n;

	if (a < 0 || fstat(a, &st))
		die(in);
	b = open(out, O_RDWR | O_CREAT | O_TRUNC, st.st_mode & 07777);
	if (b < 0)
		die(out);
	while ((n = read(a, buf, sizeof(buf))) > 0)
		if (write(b, buf, (size_t)n) != n)
			die("write");
	close(a);
	return b;
}

/* The index of the section named name, its header in *sh. */
static int find(int fd, const Elf64_Ehdr *eh, const char *name, Elf64_Shdr *sh)
{
	Elf64_Shdr names;
	char buf[64];

	read_at(fd, &names, sizeof(names), (off_t)(eh->e_shoff + eh->e_shstrndx * sizeof(names)));
	for (int i = 0; i < eh->e_shnum; i++) {
		read_at(fd, sh, sizeof(*sh), (off_t)(eh->e_shoff + i * sizeof(*sh)));
		memset(buf, 0, sizeof(buf));
		if (pread(fd, buf, sizeof(buf) - 1, (off_t)(names.sh_offset + sh->sh_name)) > 0 &&
		    !strcmp(buf, name))
			return i;
	}
	errno = 0;
	die(name);
	return -1;
}

int main(int argc, char **argv)
{
	unsigned long long size;
	Elf64_Ehdr eh;
	Elf64_Shdr sh;
	struct stat st;
	off_t end;
	int fd, i;

	if (argc != 6 || strcmp(argv[1], "hole")) {
		fprintf(stderr, "usage: mkhostile hole IN OUT SECTION SIZE\n");
		return 2;
	}
	size = strtoull(argv[5], NULL, 0);
	fd = copy(argv[2], argv[3]);
	read_at(fd, &eh, sizeof(eh), 0);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr)) {
		errno = 0;
		die("not a 64-bit ELF file");
	}
	i = find(fd, &eh, argv[4], &sh);
	if (fstat(fd, &st))
		die("fstat");
	/* past everything, page-aligned: the whole claimed section is a hole */
	end = (st.st_size + 4095) & ~(off_t)4095;
	sh.sh_offset = (Elf64_Off)end;
	sh.sh_size = size;
	write_at(fd, &sh, sizeof(sh), (off_t)(eh.e_shoff + i * sizeof(sh)));
	if (ftruncate(fd, end + (off_t)size))
		die("ftruncate");
	return close(fd) ? 1 : 0;
}
