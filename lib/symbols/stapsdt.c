// SPDX-License-Identifier: MIT
/* Finds a provider's USDT probes in an ELF file's .note.stapsdt section, bounded. */
#include <errno.h>
#include <gelf.h>
#include <stdint.h>
#include <string.h>

#include "stapsdt.h"

/* n_type of SystemTap's probe notes, under the note name "stapsdt". */
#define NT_STAPSDT 3
#define STAPSDT_NOTE_NAME "stapsdt"

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* The NUL-terminated string at *pos of desc; NULL when it runs past the end. */
static const char *desc_string(const char *desc, size_t descsz, size_t *pos)
{
	const char *s = desc + *pos;
	size_t n;

	if (*pos >= descsz)
		return NULL;
	n = strnlen(s, descsz - *pos);
	if (n == descsz - *pos)
		return NULL;
	*pos += n + 1;
	return s;
}

/* One stapsdt note's description: pc, base, semaphore, provider, name, args. */
static int scan_desc(const char *desc, size_t descsz, bool is64, const char *provider,
		     const char *const *names, size_t n_names, unsigned int *found)
{
	size_t pos = (is64 ? 8 : 4) * 3;
	const char *prov, *name;

	if (descsz < pos + 3)
		return -EINVAL;
	prov = desc_string(desc, descsz, &pos);
	name = prov ? desc_string(desc, descsz, &pos) : NULL;
	if (!name || !desc_string(desc, descsz, &pos))
		return -EINVAL;
	if (strcmp(prov, provider))
		return 0;
	for (size_t i = 0; i < n_names && i < STAPSDT_NAMES_MAX; i++)
		if (!strcmp(name, names[i]))
			*found |= 1U << i;
	return 0;
}

int stapsdt_scan(const void *notes, size_t len, bool is64, const char *provider,
		 const char *const *names, size_t n_names, unsigned int *found)
{
	const char *p = notes;
	size_t off = 0;

	*found = 0;
	while (off < len) {
		uint32_t hdr[3]; /* namesz, descsz, type */
		size_t name_off, desc_off, end;
		int rc;

		if (len - off < sizeof(hdr))
			return -EINVAL;
		memcpy(hdr, p + off, sizeof(hdr));
		name_off = off + sizeof(hdr);
		if (hdr[0] > len - name_off)
			return -EINVAL;
		desc_off = name_off + align4(hdr[0]);
		if (desc_off > len || hdr[1] > len - desc_off)
			return -EINVAL;
		end = desc_off + align4(hdr[1]);
		if (hdr[2] == NT_STAPSDT && hdr[0] == sizeof(STAPSDT_NOTE_NAME) &&
		    !memcmp(p + name_off, STAPSDT_NOTE_NAME, sizeof(STAPSDT_NOTE_NAME))) {
			rc = scan_desc(p + desc_off, hdr[1], is64, provider, names, n_names, found);
			if (rc)
				return rc;
		}
		off = end;
	}
	return 0;
}

/* The .note.stapsdt section of elf, or NULL. */
static Elf_Scn *find_section(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".note.stapsdt"))
			return scn;
	}
	return NULL;
}

static int scan_elf(Elf *elf, const char *provider, const char *const *names, size_t n_names,
		    unsigned int *found)
{
	const unsigned char host_data =
		__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	const char *ident = elf_getident(elf, NULL);
	Elf_Scn *scn;
	Elf_Data *data;
	GElf_Shdr sh;

	if (!ident)
		return 0;
	scn = find_section(elf);
	if (!scn)
		return 0;
	if (!gelf_getshdr(scn, &sh) || sh.sh_size > STAPSDT_SECTION_MAX ||
	    (unsigned char)ident[EI_DATA] != host_data)
		return -EINVAL;
	data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf)
		return -EINVAL;
	return stapsdt_scan(data->d_buf, data->d_size, ident[EI_CLASS] == ELFCLASS64, provider,
			    names, n_names, found);
}

int stapsdt_fd(int fd, const char *provider, const char *const *names, size_t n_names,
	       unsigned int *found)
{
	int rc = 0;
	Elf *elf;

	*found = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	/* Read, not mapped: a file truncated while it is read must not raise SIGBUS. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		rc = scan_elf(elf, provider, names, n_names, found);
	elf_end(elf);
	return rc;
}
