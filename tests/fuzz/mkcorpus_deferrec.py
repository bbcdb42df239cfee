#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_deferrec (tests/fuzz/corpus/deferrec/): deferred sample
# records as the ring carries them (struct ember_deferred_sample, include/ember/sample.h, then the
# stack pages): a sound one with kernel frames and a CPython trace, and ones whose lengths
# the program never writes. Run from anywhere: python3 tests/fuzz/mkcorpus_deferrec.py
import os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "deferrec")
PAGE, KSTACK_MAX, TRACE_MAX = 4096, 128, 128
RT_PYTHON = 1
BASE = 0x7FFC0000


def record(sp, stack_len, kstack_len, pages, rt_n=0, rt_kind=RT_PYTHON, kips=3):
    head = struct.pack("<IIQQQQQQQQIIII16s", 42, 0, 1, 0, 1000, 0x401000, sp, 0, 0, BASE,
                       stack_len, kstack_len, 0, 0, b"python3")
    n = min(rt_n, TRACE_MAX)
    words = [0x10 + i for i in range(n)] + [0] * (TRACE_MAX - n)
    rt = struct.pack("<IHH", rt_kind, rt_n, 0) + struct.pack("<2Q", 0, 0)
    rt += struct.pack("<%dQ" % TRACE_MAX, *words)
    k = [0xFFFFFFFF81000000 + i for i in range(kips)] + [0] * (KSTACK_MAX - kips)
    stack = bytes((i * 7) & 0xFF for i in range(pages * PAGE))
    return head + rt + struct.pack("<%dQ" % KSTACK_MAX, *k) + stack


SEEDS = {
    "sound": record(BASE + 0x180, PAGE, 3, 1, rt_n=2),
    "two_pages": record(BASE + 0x40, 2 * PAGE, 0, 2),
    "longer_than_record": record(BASE + 0x180, 2 * PAGE, 3, 1),
    "not_whole_pages": record(BASE + 0x180, 100, 3, 1),
    "sp_off_page": record(BASE + PAGE + 8, PAGE, 3, 1),
    "kstack_over": record(BASE + 0x180, PAGE, 1000, 1),
    "trace_lies": record(BASE + 0x180, PAGE, 3, 1, rt_n=1000),
    "no_stack": record(BASE + 0x180, 0, 3, 0),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
