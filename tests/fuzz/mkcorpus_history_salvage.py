#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of fuzz_history_salvage (tests/fuzz/corpus/history_salvage/): each
# seed is an options byte (fuzz_history_salvage.c's OPT_*) then a history.db. Sound ones made
# by the store itself (tests/tools/mkhistory, mkrollups) in 512-byte pages, so that a few
# profiles fill several table and index pages in 8 KiB: schema v4, v4 with rollups, v2; and
# damaged copies of the v4 one: a table leaf, the table's root, an index, the schema page
# overwritten; cut in half; a header that is not SQLite's; garbage; nothing.
# Needs a build with the tools: python3 tests/fuzz/mkcorpus_history_salvage.py [BUILD_DIR]
# (default build/ beside tests/).
import os, sqlite3, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "history_salvage")
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "build")
TOOLS = os.path.join(BUILD, "tests", "tools")
PAGE = 512
BLOB, ROLLUPS, LABEL, TYPE, RECOVER = 1, 2, 4, 8, 16


def history(*runs):
    """history.db after each run of a tool (name, args...) on a data dir of 512-byte pages"""
    with tempfile.TemporaryDirectory() as d:
        db = sqlite3.connect(os.path.join(d, "history.db"))
        db.executescript("PRAGMA page_size = %d; PRAGMA auto_vacuum = INCREMENTAL; VACUUM" % PAGE)
        db.close()
        for tool, *args in runs:
            subprocess.run([os.path.join(TOOLS, tool), *args, d], check=True,
                           stdout=subprocess.DEVNULL)
        if os.path.exists(os.path.join(d, "history.db-wal")):
            sys.exit("a -wal is left: the tools' last close did not checkpoint")
        with open(os.path.join(d, "history.db"), "rb") as f:
            return f.read()


def root(data, name):
    """the root page of a table or index, from a copy of the file"""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "h.db")
        with open(path, "wb") as f:
            f.write(data)
        db = sqlite3.connect(path)
        sql = "SELECT rootpage FROM sqlite_schema WHERE name = ?"
        (page,) = db.execute(sql, (name,)).fetchone()
        db.close()
        return page


def first_leaf(data, page):
    """the leftmost leaf under a b-tree page (interior pages: 0x02, 0x05)"""
    while data[(page - 1) * PAGE] in (0x02, 0x05):
        off = (page - 1) * PAGE
        (cell,) = struct.unpack_from(">H", data, off + 12)
        (page,) = struct.unpack_from(">I", data, off + cell)
    return page


def garbage_page(data, page, fill=0xA5, start=0):
    """page (1-based) overwritten from start on, as dd would"""
    b = bytearray(data)
    off = (page - 1) * PAGE
    b[off + start:off + PAGE] = bytes([fill]) * (PAGE - start)
    return bytes(b)


def flip(data, page, at, n):
    """n bytes flipped in page from offset at (a cell pointer array, a cell)"""
    b = bytearray(data)
    for i in range((page - 1) * PAGE + at, (page - 1) * PAGE + at + n):
        b[i] ^= 0xFF
    return bytes(b)


v4 = history(("mkhistory", "--mem", "--corrupt"))
rollups = history(("mkhistory", "--count", "3"), ("mkrollups", "-p", "20"))
v2 = history(("mkhistory", "--v2", "--count", "2"))
table, table_r = root(v4, "profiles"), root(rollups, "profiles")
header = bytearray(v4)
header[16:18] = struct.pack(">H", 0x0300)  # not a power of two: SQLITE_NOTADB

seeds = {
    "v4": (BLOB, v4),
    "v4_filters": (BLOB | LABEL | TYPE, v4),
    "rollups": (BLOB | ROLLUPS, rollups),
    "v2_recover": (BLOB | RECOVER, v2),
    "table_leaf": (BLOB, garbage_page(v4, first_leaf(v4, table))),
    "table_root": (BLOB, flip(v4, table, 8, 8)),
    "index_kind": (BLOB, garbage_page(v4, root(v4, "profiles_kind"))),
    "index_type_start": (ROLLUPS | TYPE, garbage_page(v4, root(v4, "profiles_type_start"))),
    "schema_page": (0, garbage_page(v4, 1, start=100)),
    "rollups_leaf": (BLOB | ROLLUPS, garbage_page(rollups, first_leaf(rollups, table_r))),
    "v2_leaf": (BLOB, garbage_page(v2, first_leaf(v2, root(v2, "profiles")))),
    "cut": (BLOB, v4[:len(v4) // 2]),
    "header": (0, bytes(header)),
    "garbage": (0, b"z" * 1024),
    "empty": (RECOVER, b""),
}
os.makedirs(OUT, exist_ok=True)
for name, (opt, data) in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([opt]) + data)
