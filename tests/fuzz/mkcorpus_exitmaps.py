#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_exitmaps (tests/fuzz/corpus/exitmaps/): EMBER_PROC_MAPS
# records as bpf/proc.bpf.c sends them (include/ember/proc.h): a process's program, ld.so,
# libc and the vDSO; one whose path could not be read; one of every mapping it holds.
# Run from anywhere: python3 tests/fuzz/mkcorpus_exitmaps.py
import os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "exitmaps")
EMBER_PROC_MAPS, NO_PATH, CUT, PATH_MAX = 8, 1, 1, 256


def mapping(start, end, offset, ino, dev, path, flags=0):
    p = path.encode()
    return struct.pack("<QQQQII", start, end, offset, ino, dev, flags) + p + bytes(PATH_MAX - len(p))


def record(maps, flags=0, pid=4242):
    head = struct.pack("<HHIQQ", EMBER_PROC_MAPS, 0, pid, 123456789, 1) + struct.pack("<II", len(maps), flags)
    return head + b"".join(maps)


dev = (254 << 20) | 1
seeds = {
    "program": record([
        mapping(0x55D4C8A02000, 0x55D4C8A07000, 0x2000, 1234, dev, "/usr/bin/as"),
        mapping(0x7F1C3A228000, 0x7F1C3A37D000, 0x28000, 2345, dev, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
        mapping(0x7F1C3A3D1000, 0x7F1C3A3F6000, 0x1000, 3456, dev, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
        mapping(0x7FFD1C1F0000, 0x7FFD1C1F2000, 0, 0, 0, "[vdso]"),
    ]),
    "no_path": record([
        mapping(0x400000, 0x401000, 0, 77, dev, "", NO_PATH),
        mapping(0x402000, 0x403000, 0x2000, 78, dev, "/a/b/c"),
    ]),
    "full": record([mapping(0x1000 * (2 * i + 1), 0x1000 * (2 * i + 2), 0, 100 + i, dev, "/lib/%d" % i)
                    for i in range(24)], CUT),
}
os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
