#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_uwalk (tests/fuzz/corpus/uwalk/): stacks walked by each rule
# kind (rsp, rbp, rbx, PLT, signal frame, end), by frame pointers, and one that never ends.
# Layout: fuzz_uwalk.c's header. Run from anywhere: python3 tests/fuzz/mkcorpus_uwalk.py
import os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "uwalk")
TEXT, STACK = 0x400000, 0x7FFC0000
RSP, RBP, PLT, END, SIGNAL, FP, NONE, RBX = 0, 1, 2, 3, 4, 5, 6, 7


def row(pc, kind, off, rbp_kind=0, rbp_off=0, rbx_kind=0, rbx_off=0):
    return struct.pack("<IBBhiBxh", pc, kind, rbp_kind, rbp_off, off, rbx_kind, rbx_off)


def seed(ip, sp, bp, rows, words, with_map=True, table=0, bx=0, trace=None):
    maps = struct.pack("<QQQI", TEXT, TEXT + 0x100000, TEXT, table) if with_map else b""
    flags = (1 if with_map else 0x80) | (0x40 if trace is not None else 0)
    head = struct.pack("<QQQQ", ip, sp, bp, bx) + bytes([flags]) + maps
    stack = b"".join(struct.pack("<Q", w) for w in words)
    body = head + bytes([len(rows)]) + b"".join(rows)
    if trace is not None:  # (words, run ends): CPython's frames read at the sample
        tw, ends = trace
        last = sum(1 << i for i in ends)
        body += bytes([len(tw)]) + struct.pack("<QQ", last & (2**64 - 1), last >> 64)
        body += b"".join(struct.pack("<Q", w) for w in tw)
    return body + stack


def main():
    os.makedirs(OUT, exist_ok=True)
    sp = STACK  # sp at the start of its page: the stack bytes begin at sp
    seeds = {
        "rsp": seed(TEXT + 0x150, sp, 0, [row(0, RSP, 8), row(0x100, RSP, 16), row(0x200, END, 0)],
                    [0, TEXT + 0x81, TEXT + 0x250]),
        "rbp": seed(TEXT + 0x40, sp, sp + 16, [row(0, RBP, 16, 1, -16), row(0x100, END, 0)],
                    [0, 0, sp + 64, TEXT + 0x101]),
        "plt": seed(TEXT + 0x2C, sp, 0, [row(0, PLT, 11), row(0x100, END, 0)],
                    [TEXT + 0x111, TEXT + 0x121]),
        "signal": seed(TEXT + 0x10, sp, 0,
                       [row(0, SIGNAL, 0), row(0x100, RSP, 8), row(0x200, END, 0)],
                       [0] * 21 + [TEXT + 0x180] + [0] * 4 + [sp + 0x100, TEXT + 0x180] +
                       [0] * 4 + [TEXT + 0x201]),
        "fp": seed(0x7F0000000010, sp, sp + 16, [], [0, 0, sp + 48, 0x7F0000001234, 0, 0,
                                                      0, 0x7F0000005678], with_map=False),
        "rbx": seed(TEXT + 0x240, sp, 0,
                    [row(0, RSP, 8), row(0x100, RBX, 32, 0, 0, 1, -32),
                     row(0x200, RSP, 24, 0, 0, 1, -16), row(0x300, END, 0)],
                    [0, sp + 0x60, TEXT + 0x151] + [0] * 9 + [0x1234, 0, 0, TEXT + 0x81,
                                                               TEXT + 0x301], bx=0xBAD0),
        "forever": seed(TEXT + 0x10, sp, 0, [row(0, RSP, 8)], [TEXT + 0x11] * 300),
        "bad_rule": seed(TEXT + 0x10, sp, sp + 16, [row(0, FP, 0)], [0, 0, 0x10, 0x7F0000001234]),
        # two eval frames of the rsp rules, each given a run of a Python trace (tagged words)
        "python_trace": seed(TEXT + 0x150, sp, 0,
                             [row(0, RSP, 8), row(0x100, RSP, 16), row(0x200, END, 0)],
                             [0, TEXT + 0x81, TEXT + 0x250],
                             trace=([(1 << 63) | (1 << 60) | (i << 44) | 0x2000000 + i
                                     for i in range(5)], [2, 4])),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
