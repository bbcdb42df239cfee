#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_stapsdt (tests/fuzz/corpus/stapsdt/): otel_memory's alloc and
# free notes beside another provider's, as raw 64- and 32-bit sections, a malformed note, and
# an ELF file carrying the notes (objcopy onto the unwtab corpus's eh.so).
# Needs objcopy; run from anywhere: python3 tests/fuzz/mkcorpus_stapsdt.py
import os, struct, subprocess, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "stapsdt")


def note(desc):
    """One note named "stapsdt", type 3, its description padded to 4 bytes."""
    return struct.pack("<III", 8, len(desc), 3) + b"stapsdt\0" + desc + b"\0" * (-len(desc) % 4)


def desc(is64, provider, name, args):
    addrs = struct.pack("<QQQ" if is64 else "<III", 0x1130, 0x2004, 0)
    return addrs + provider + b"\0" + name + b"\0" + args + b"\0"


def notes(is64):
    return (note(desc(is64, b"other", b"alloc", b"8@%rdi")) +
            note(desc(is64, b"otel_memory", b"alloc", b"8@%rdi 8@%rsi")) +
            note(desc(is64, b"otel_memory", b"free", b"8@%rdi")))


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    write("notes64", b"\x01" + notes(True))
    write("notes32", b"\x00" + notes(False))
    # a description claiming 256 bytes past the section's end (alloc_hostile.sh's)
    write("bad_descsz", b"\x01" + struct.pack("<III", 8, 256, 3) + b"stapsdt\0otel_memory\0alloc\0")
    with tempfile.TemporaryDirectory() as d:
        sec, out = os.path.join(d, "notes"), os.path.join(d, "out.so")
        with open(sec, "wb") as f:
            f.write(notes(True))
        subprocess.run(["objcopy", "--add-section", ".note.stapsdt=" + sec,
                        "--set-section-flags", ".note.stapsdt=noload,readonly",
                        os.path.join(HERE, "corpus", "unwtab", "eh.so"), out], check=True)
        with open(out, "rb") as f:
            write("elf_notes", b"\x03" + f.read())


main()
