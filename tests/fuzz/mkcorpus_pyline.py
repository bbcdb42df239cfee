#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_pyline (tests/fuzz/corpus/pyline/): for each layout of
# lib/symbols/python.c, a code object with its names (ASCII, Latin-1, UCS2, UCS4, one past
# PY_STR_MAX) and a location table this interpreter compiled (lines near and far apart), and
# damaged ones: a wrong type, a table cut short, a string claiming 2^40 characters.
# Layout: fuzz_pyline.c's header. Run from anywhere with CPython 3.11 on:
# python3 tests/fuzz/mkcorpus_pyline.py
import os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "pyline")
MEM, CODE_TYPE = 0x10000000, 0x7F00000C0DE0
# py_layouts() order: (co_qualname, co_filename, co_linetable, co_firstlineno, ascii, compact)
LAYOUTS = [(128, 112, 136, 72, 48, 72), (128, 112, 136, 68, 40, 56), (128, 112, 136, 68, 40, 56)]


def string(s, ascii_size, compact_size):
    """a compact str object's bytes"""
    kind = 1 if max(map(ord, s), default=0) < 0x100 else 2 if max(map(ord, s)) < 0x10000 else 4
    is_ascii = all(ord(ch) < 0x80 for ch in s)
    head = bytearray(ascii_size if is_ascii else compact_size)
    struct.pack_into("<QQ", head, 8, 0, len(s))
    struct.pack_into("<I", head, 32, kind << 2 | 1 << 5 | is_ascii << 6)
    enc = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind]
    return bytes(head) + s.encode(enc, "surrogatepass") + b"\0" * kind


def code_memory(layout, qualname, filename, table, first, code_type=CODE_TYPE):
    q_off, f_off, t_off, first_off, ascii_size, compact_size = layout
    code = bytearray(256)
    parts = [string(qualname, ascii_size, compact_size), string(filename, ascii_size, compact_size),
             struct.pack("<QQQQ", 1, 0, len(table), 0) + table + b"\0"]
    at, addrs, blob = 256, [], b""
    for p in parts:
        addrs.append(MEM + at + len(blob))
        blob += p + b"\0" * (-len(p) % 8)
    struct.pack_into("<QQ", code, 0, 1, code_type)
    struct.pack_into("<Q", code, q_off, addrs[0])
    struct.pack_into("<Q", code, f_off, addrs[1])
    struct.pack_into("<Q", code, t_off, addrs[2])
    struct.pack_into("<i", code, first_off, first)
    return bytes(code) + blob


def seed(sel, first, idx, table, memory):
    return struct.pack("<BiIH", sel, first, idx, len(table)) + table + memory


def near(a, b):
    x = (a +
         b)
    for i in range(a):
        x += i
    return x


def far(a):
    b = a + 1



    c = b * 2
    return c


def main():
    os.makedirs(OUT, exist_ok=True)
    t_near, t_far = near.__code__.co_linetable, far.__code__.co_linetable
    f_near, f_far = near.__code__.co_firstlineno, far.__code__.co_firstlineno
    seeds = {}
    for sel, lay in enumerate(LAYOUTS):
        v = "3%d" % (11 + sel)
        seeds[v + "_ascii"] = seed(sel, f_near, 5, t_near,
                                   code_memory(lay, "near", "/srv/app/main.py", t_near, f_near))
        seeds[v + "_latin1"] = seed(sel, f_far, 3, t_far,
                                    code_memory(lay, "caf\u00e9", "m.py", t_far, f_far))
        seeds[v + "_ucs2"] = seed(sel, f_near, 9, t_near,
                                  code_memory(lay, "\u51fd\u6570", "\u6a21.py", t_near, f_near))
        seeds[v + "_ucs4"] = seed(sel, f_near, 2, t_near,
                                  code_memory(lay, "\U00020000x", "a\ud800.py", t_near, f_near))
        seeds[v + "_long"] = seed(sel, f_near, 1, t_near,
                                  code_memory(lay, "\u51fd" * 84 + "\U00020000a" * 100, "l.py",
                                              t_near, f_near))
    lay = LAYOUTS[1]
    seeds["bad_type"] = seed(1, f_near, 0, t_near,
                             code_memory(lay, "near", "m.py", t_near, f_near, CODE_TYPE + 8))
    seeds["cut_table"] = seed(1, f_far, 7, t_far[:-3],
                              code_memory(lay, "far", "m.py", t_far[:-3], f_far))
    # the longest varints: a no-column entry (code 13) of line delta +2^62, then a long-form
    # entry (code 14) whose four varints are as long as varints go
    wide = bytes([0x80 | 13 << 3]) + b"\x40" * 10 + b"\x08" + bytes([0x80 | 14 << 3]) + \
        (b"\x7f" * 10 + b"\x3f") * 4
    seeds["long_varints"] = seed(1, 1, 1, wide, code_memory(lay, "wide", "m.py", wide, 1))
    huge = bytearray(code_memory(lay, "near", "m.py", t_near, f_near))
    struct.pack_into("<Q", huge, 256 + 16, 1 << 40)  # the qualname's length
    seeds["huge_str"] = seed(1, f_near, 0, t_near, bytes(huge))
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
