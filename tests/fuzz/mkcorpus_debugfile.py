#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_debugfile (tests/fuzz/corpus/debugfile/): a tiny stripped PIE
# whose .gnu_debuglink names bin.debug with the right CRC32, beside it and in .debug/, and hostile
# variants: the CRC wrong, names with '/' and "..", the debug file truncated (its CRC right), the
# unstripped binary or a symtab-less file as the debug file, a build-id only; and with the
# header's FIX_CRC, the CRC wrong in the binary but made right by the fuzzer.
# Layout: fuzz_debugfile.c's header. Needs gcc and objcopy; run from anywhere:
# python3 tests/fuzz/mkcorpus_debugfile.py
import os, struct, subprocess, tempfile, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "debugfile")
IN_DOT_DEBUG = 1  # header flags: the debug file goes in .debug/, not beside bin;
FIX_CRC = 2  # the CRC32 after "bin.debug" in bin made the debug file's

SRC = """
static volatile unsigned long sink;
__attribute__((noinline)) void work_a(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink = sink * 6364136223846793005UL + 1;
}
__attribute__((noinline)) void work_b(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink = sink * 2862933555777941757UL + 3;
}
int main(int argc, char **argv)
{
	(void)argv;
	work_a(3 * (unsigned long)argc);
	work_b((unsigned long)argc);
	return 0;
}
"""


def run(*cmd):
    subprocess.run(cmd, check=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def seed(name, binary, debug, flags=0):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([flags]) + struct.pack("<I", len(binary)) + binary + debug)


def linked(d, stripped, name, crc):
    """stripped with a .gnu_debuglink naming name, crc as its CRC32 (any name: objcopy's
    --add-gnu-debuglink keeps only a real file's base name and computes its CRC)."""
    sec, out = os.path.join(d, "link"), os.path.join(d, "linked")
    raw = name + b"\0"
    with open(sec, "wb") as f:
        f.write(raw + b"\0" * (-len(raw) % 4) + struct.pack("<I", crc))
    run("objcopy", "--add-section", ".gnu_debuglink=" + sec, stripped, out)
    return read(out)


def main():
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        src, full = os.path.join(d, "prog.c"), os.path.join(d, "full")
        stripped, debug = os.path.join(d, "stripped"), os.path.join(d, "bin.debug")
        with open(src, "w") as f:
            f.write(SRC)
        # noseparate-code: no page of padding between segments, seeds a third the size
        run("gcc", "-O1", "-g", "-fdebug-prefix-map=" + d + "=.", "-fPIE", "-pie",
            "-Wl,--build-id=0x0e3b1d0000000000fd",
            "-Wl,-z,noseparate-code", "-o", full, src)
        run("objcopy", "--only-keep-debug", full, debug)
        run("objcopy", "--strip-all", full, stripped)
        bin_linked = os.path.join(d, "bin")
        run("objcopy", "--add-gnu-debuglink=" + debug, stripped, bin_linked)
        dbg, strip_b, full_b = read(debug), read(stripped), read(full)
        crc = zlib.crc32(dbg)

        seed("debuglink", read(bin_linked), dbg)
        seed("debuglink_dot_debug", read(bin_linked), dbg, IN_DOT_DEBUG)
        seed("crc_wrong", linked(d, stripped, b"bin.debug", crc ^ 1), dbg)
        seed("name_slash", linked(d, stripped, b"./bin.debug", crc), dbg)
        seed("name_dotdot", linked(d, stripped, b"..", crc), dbg)
        cut = dbg[:len(dbg) // 2]
        seed("truncated", linked(d, stripped, b"bin.debug", zlib.crc32(cut)), cut)
        seed("truncated_crc_wrong", read(bin_linked), cut)
        seed("crc_fixed", linked(d, stripped, b"bin.debug", crc ^ 1), dbg, FIX_CRC)
        seed("truncated_crc_fixed", read(bin_linked), cut, FIX_CRC | IN_DOT_DEBUG)
        # some distributions ship the whole unstripped binary as the debug file
        seed("full_as_debug", linked(d, stripped, b"bin.debug", zlib.crc32(full_b)), full_b)
        # the CRC right but no .symtab: refused
        seed("no_symtab", linked(d, stripped, b"bin.debug", zlib.crc32(strip_b)), strip_b)
        # a build-id (looked up under /usr/lib/debug/.build-id, not here) and no debuglink
        seed("build_id_only", strip_b, dbg)


main()
