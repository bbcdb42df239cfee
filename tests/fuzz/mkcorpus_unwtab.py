#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_unwtab (tests/fuzz/corpus/unwtab/): three tiny shared objects
# (CFI in .eh_frame with a PLT, in .debug_frame, and .init and .fini without CFI as crti.o and
# crtn.o make them), and hostile copies of the first two: truncated
# CIEs/FDEs, bad augmentation strings, huge lengths, overlapping and huge FDE ranges.
# Needs gcc; run from anywhere: python3 tests/fuzz/mkcorpus_unwtab.py
import os, struct, subprocess, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "unwtab")

ASM = """
.text
.globl f1
f1: .cfi_startproc
 sub $0x28,%rsp
 .cfi_adjust_cfa_offset 0x28
 call ext@PLT
 add $0x28,%rsp
 .cfi_adjust_cfa_offset -0x28
 ret
 .cfi_endproc
.globl f2
f2: .cfi_startproc
 push %rbp
 .cfi_def_cfa_offset 16
 .cfi_offset rbp, -16
 mov %rsp,%rbp
 .cfi_def_cfa_register rbp
 call ext@PLT
 pop %rbp
 .cfi_def_cfa rsp, 8
 ret
 .cfi_endproc
.globl f3
f3: .cfi_startproc
 .cfi_undefined rip
 nop
 ret
 .cfi_endproc
"""

# .init and .fini as crti.o and crtn.o make them: no CFI, rules from their shape
CRT_ASM = """
.section .init,"ax",@progbits
.globl _init
_init:
 sub $8,%rsp
 mov ext@GOTPCREL(%rip),%rax
 test %rax,%rax
 je 1f
 call *%rax
1:
 call f1
 add $8,%rsp
 ret
.section .fini,"ax",@progbits
.globl _fini
_fini:
 endbr64
 sub $8,%rsp
 add $8,%rsp
 ret
"""


def build(name, debug_frame, asm=ASM):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.s")
        with open(src, "w") as f:
            f.write((".cfi_sections .debug_frame\n" if debug_frame else "") + asm)
        out = os.path.join(d, name)
        subprocess.run(["gcc", "-shared", "-nostdlib", "-Wl,--build-id=none", "-Wl,-z,norelro",
                        "-Wl,-z,noseparate-code", "-s" if not debug_frame else "-g0",
                        "-o", out, src], check=True)
        if debug_frame:
            subprocess.run(["strip", "--keep-section=.debug_frame", out], check=True)
        with open(out, "rb") as f:
            return bytearray(f.read())


def section(img, name):
    shoff, = struct.unpack_from("<Q", img, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", img, 0x3a)
    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", img, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        s = sh(i)
        end = img.index(b"\0", stroff + s[0])
        if img[stroff + s[0]:end].decode() == name:
            return s[4], s[5]
    raise SystemExit("no section " + name)


def compressed_debug_info(img):
    """A copy with a .debug_info of 64 KB of zeros, zlib-compressed (objcopy)."""
    with tempfile.TemporaryDirectory() as d:
        for name, data in (("in", img), ("zeros", bytes(65536))):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        subprocess.run(["objcopy", "--add-section", ".debug_info=" + os.path.join(d, "zeros"),
                        "--set-section-flags", ".debug_info=readonly,debug",
                        os.path.join(d, "in"), os.path.join(d, "raw")], check=True)
        subprocess.run(["objcopy", "--compress-debug-sections=zlib", os.path.join(d, "raw"),
                        os.path.join(d, "out")], check=True)
        with open(os.path.join(d, "out"), "rb") as f:
            return bytearray(f.read())


def shdrs(img):
    shoff, = struct.unpack_from("<Q", img, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", img, 0x3a)
    stroff = struct.unpack_from("<IIQQQQIIQQ", img, shoff + shstrndx * shentsize)[4]
    for i in range(shnum):
        s = struct.unpack_from("<IIQQQQIIQQ", img, shoff + i * shentsize)
        end = img.index(b"\0", stroff + s[0])
        yield shoff + i * shentsize, img[stroff + s[0]:end].decode(), s


def section_addr(img, name):
    return [s[3] for _, n, s in shdrs(img) if n == name][0]


def rename(img, name, to):
    """A copy with section name's sh_name pointed at section to's name."""
    m = bytearray(img)
    to_name = [s[0] for _, n, s in shdrs(img) if n == to][0]
    at = [a for a, n, _ in shdrs(img) if n == name][0]
    struct.pack_into("<I", m, at, to_name)
    return m


def entries(img, off, size):
    """(offset, length, is_cie) of each CFI entry."""
    out, p = [], off
    while p + 4 <= off + size:
        length, = struct.unpack_from("<I", img, p)
        if length == 0:
            break
        cie_id, = struct.unpack_from("<I", img, p + 4)
        out.append((p, length, cie_id == 0 or cie_id == 0xffffffff))
        p += 4 + length
    return out


def write(name, img):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(img)


def main():
    os.makedirs(OUT, exist_ok=True)
    eh = build("eh.so", False)
    dbg = build("dbg.so", True)
    write("eh.so", eh)
    write("debug_frame.so", dbg)
    write("crt.so", build("crt.so", False, ASM + CRT_ASM))
    off, size = section(eh, ".eh_frame")
    ents = entries(eh, off, size)
    cie = [e for e in ents if e[2]][0]
    fdes = [e for e in ents if not e[2]]

    m = bytearray(eh); struct.pack_into("<I", m, cie[0], 0xfffffff0); write("cie_huge_len.so", m)
    m = bytearray(eh); struct.pack_into("<I", m, fdes[0][0], 0x7ffffff0); write("fde_huge_len.so", m)
    m = bytearray(eh); struct.pack_into("<IQ", m, fdes[0][0], 0xffffffff, 1 << 62)
    write("fde_len64.so", m)
    m = bytearray(eh); m[cie[0] + 9:cie[0] + 11] = b"zQ"; write("cie_bad_aug.so", m)
    m = bytearray(eh); m[cie[0] + 9] = ord("y"); write("cie_no_z.so", m)
    m = bytearray(eh); m[cie[0] + 9:cie[0] + 12] = b"zzz"; write("cie_aug_zzz.so", m)
    # Truncations: the section cut inside the CIE and inside the second FDE.
    write("cut_cie.so", eh[:cie[0] + 10])
    write("cut_fde.so", eh[:fdes[1][0] + 12])
    # FDE ranges (pcrel sdata4 start, udata4 length) at +8 and +12 from the entry.
    m = bytearray(eh)
    a0 = fdes[0][0] + 8 + struct.unpack_from("<i", m, fdes[0][0] + 8)[0]
    for f in fdes[1:]:
        struct.pack_into("<i", m, f[0] + 8, a0 - (f[0] + 8))
    write("fde_overlap.so", m)
    m = bytearray(eh); struct.pack_into("<I", m, fdes[0][0] + 12, 0xfffffff0); write("fde_huge_range.so", m)
    m = bytearray(eh); struct.pack_into("<I", m, fdes[0][0] + 4, 0x7fff0000); write("fde_bad_cie_ptr.so", m)
    # Instructions: every byte of the first FDE's instructions turned into advance_loc1.
    m = bytearray(eh)
    for i in range(fdes[0][0] + 17, fdes[0][0] + 4 + fdes[0][1]):
        m[i] = 0x41
    write("fde_advances.so", m)
    # f3's "undefined rip" made register 2^28 - 12: the FDE is FP, the others compiled.
    m = bytearray(eh); m[fdes[2][0] + 17:fdes[2][0] + 22] = b"\x07\xf4\xff\xff\x7f"
    write("fde_huge_regno.so", m)
    # .eh_frame_hdr naming offsets that are not FDEs of the chain: inside one, and two
    # sections named .eh_frame (.eh_frame_hdr renamed; libdw would take one of them).
    hoff, hsize = section(eh, ".eh_frame_hdr")
    m = bytearray(eh); struct.pack_into("<i", m, hoff + 16, struct.unpack_from("<i", m, hoff + 16)[0] + 8)
    write("hdr_inside_fde.so", m)
    write("two_eh_frames.so", rename(eh, ".eh_frame_hdr", ".eh_frame"))
    # An FDE for f3's range with register 2^28 - 12, hidden in the expression block of f3's
    # own DW_CFA_def_cfa_expression (whose bytes only libdw's expression evaluator reads);
    # the search table's entry for f3 names it. libdw would pick it for f3's addresses and
    # allocate 2 GiB for its registers.
    hid = build("hid.so", False, ASM.replace(".cfi_undefined rip",
                                             ".cfi_undefined rip\n .cfi_escape 0x0f,22" + ",0" * 22))
    off, size = section(hid, ".eh_frame")
    vaddr = section_addr(hid, ".eh_frame")
    ents = entries(hid, off, size)
    f3 = [e for e in ents if not e[2]][2]
    lo = f3[0] + 8 + struct.unpack_from("<i", hid, f3[0] + 8)[0]
    n, = struct.unpack_from("<I", hid, f3[0] + 12)
    at = hid.index(b"\x0f\x16" + b"\0" * 22, f3[0]) + 2
    struct.pack_into("<IIiIB5s", hid, at, 18, at + 4 - off, lo - (at + 8), n, 0,
                     b"\x07\xf4\xff\xff\x7f")
    hoff, hsize = section(hid, ".eh_frame_hdr")
    haddr = section_addr(hid, ".eh_frame_hdr")
    for i in range(struct.unpack_from("<I", hid, hoff + 8)[0]):
        loc, fde = struct.unpack_from("<ii", hid, hoff + 12 + 8 * i)
        if haddr + fde == vaddr + f3[0] - off:
            struct.pack_into("<i", hid, hoff + 16 + 8 * i, vaddr + at - off - haddr)
    write("hdr_hidden_fde.so", hid)
    # .debug_frame beside a compressed .debug_info: read while what libdw would inflate is
    # small, left unread when the section claims 1 TiB uncompressed.
    gz = compressed_debug_info(dbg)
    write("debug_frame_gz.so", gz)
    at = [a for a, n, _ in shdrs(gz) if n == ".debug_info"][0]
    m = bytearray(gz); struct.pack_into("<Q", m, struct.unpack_from("<Q", gz, at + 24)[0] + 8, 1 << 40)
    write("debug_frame_inflate.so", m)
    doff, dsize = section(dbg, ".debug_frame")
    m = bytearray(dbg); struct.pack_into("<I", m, doff, 0xfffffff0); write("debug_frame_huge.so", m)


main()
