#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes tests/lib/symbols/py_recorded.h, the known answers of check_python.c, by running real
# CPython interpreters (3.11 on): for a few functions, each code object's location table
# (co_linetable), co_firstlineno and the line of every code unit as co_lines() gives it (the
# ground truth); and, from the live interpreter's memory (ctypes.string_at), the bytes of code
# objects with ASCII, UCS1, UCS2 and UCS4 names, their strings and location tables, at the
# addresses they had, with the UTF-8 a reader should make of each name.
# Usage: python3 tests/lib/symbols/mkpy_recorded.py PYTHON... > tests/lib/symbols/py_recorded.h
import json, os, subprocess, sys

# The functions whose tables are recorded: multi-line expressions, a loop (lines going back),
# lines far apart (the varint and long forms), columns past 80 and 128 (the one-line and long
# forms on one line), and an exception handler (code units with no location).
SRC = (
    "\n"
    "def multi(a, b):\n"
    "    x = (a +\n"
    "         b)\n"
    "    y = [x,\n"
    "         a,\n"
    "         b]\n"
    "    return sum(y)\n"
    "\n"
    "def loop(n):\n"
    "    t = 0\n"
    "    for i in range(n):\n"
    "        if i % 2:\n"
    "            t += i\n"
    "        else:\n"
    "            t -= 1\n"
    "    while t > 100:\n"
    "        t //= 2\n"
    "    return t\n"
    "\n"
    "def far(a):\n"
    "    b = a + 1\n" + "\n" * 70 + "    c = b * 2\n" + "\n" * 300 + "    d = c - 3\n" + "\n" * 5000 +
    "    return d + a\n"
    "\n"
    "def wide(a):\n"
    "    return (a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a,"
    " a, len(a), a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, len(a))\n"
    "\n"
    "def noloc(a):\n"
    "    try:\n"
    "        return 1 / a\n"
    "    except ZeroDivisionError as e:\n"
    "        return str(e)\n"
    "\n"
    "def caf\u00e9():\n"
    "    return 1\n"
    "\n"
    "def \u51fd\u6570():\n"
    "    return 2\n"
    "\n"
    "def \U00020000x():\n"
    "    return 4\n"
)


# The functions whose tables are kept (those without columns: the loop and the far lines).
TABLES = ("multi", "loop", "far", "wide", "noloc")


def record():
    """Run by each interpreter: its tables and objects as JSON on stdout."""
    import ctypes

    nocol = "no_debug_ranges" in sys._xoptions
    mod = compile(SRC, "pylines_src.py", "exec")
    codes = {c.co_name: c for c in mod.co_consts if hasattr(c, "co_linetable")}
    tables = []
    for name, c in codes.items():
        lines = [0] * (len(c.co_code) // 2)
        for start, end, line in c.co_lines():
            for i in range(start // 2, end // 2):
                lines[i] = line or 0
        tables.append({"name": name, "first": c.co_firstlineno,
                       "table": list(c.co_linetable), "lines": lines})
    out = {"minor": sys.version_info[1], "version": sys.version.split()[0],
           "nocol": nocol, "tables": tables, "objects": [], "code_type": id(type(mod))}
    if nocol:
        print(json.dumps(out))
        return
    # names the compiler cannot make: a lone surrogate, and a cut inside a 4-byte character
    codes["surrogate"] = codes["multi"].replace(co_qualname="a\ud800b")
    codes["cut"] = codes["multi"].replace(co_qualname="\u51fd" * 84 + "\U00020000a",
                                          co_filename="/srv/app/\u6a21\u5757.py")
    keep = list(codes.values())  # alive until the bytes are read

    def dump(o, n):
        return {"addr": id(o), "bytes": list(ctypes.string_at(id(o), n))}

    def utf8(s):
        s = "".join("\ufffd" if 0xD800 <= ord(ch) < 0xE000 else ch for ch in s[:255])
        b = s.encode()
        while len(b) > 255:  # whole characters that fit 255 bytes: a prefix
            s = s[:-1]
            b = s.encode()
        return list(b)

    for key in ("multi", "caf\u00e9", "\u51fd\u6570", "\U00020000x", "surrogate", "cut"):
        c = codes[key]
        size = min(type(c).__basicsize__ + type(c).__itemsize__ * (len(c.co_code) // 2), 256)
        out["objects"].append({
            "code": dump(c, size),
            "qualname": dump(c.co_qualname, sys.getsizeof(c.co_qualname)),
            "filename": dump(c.co_filename, sys.getsizeof(c.co_filename)),
            "linetable": dump(c.co_linetable, sys.getsizeof(c.co_linetable)),
            "want_qualname": utf8(c.co_qualname), "want_filename": utf8(c.co_filename),
            "first": c.co_firstlineno,
        })
    del keep
    print(json.dumps(out))


def c_str(b):
    """bytes as a C string literal, broken into lines of at most 80 characters"""
    parts = [chr(x) if 0x20 <= x < 0x7F and x not in (0x22, 0x5C) else "\\%03o" % x for x in b]
    lines, cur = [], ""
    for p in parts:
        if len(cur) + len(p) > 80:
            lines.append(cur)
            cur = ""
        cur += p
    lines.append(cur)
    return "\n\t ".join('"%s"' % l for l in lines)


def c_bytes(v, indent="\t"):
    rows = [", ".join("0x%02x" % b for b in v[i:i + 12]) for i in range(0, len(v), 12)]
    return "{\n" + ",\n".join(indent + "\t" + r for r in rows) + ",\n" + indent + "}"


def c_words(v, indent="\t"):
    rows = [", ".join(str(x) for x in v[i:i + 12]) for i in range(0, len(v), 12)]
    return "{\n" + ",\n".join(indent + "\t" + r for r in rows) + ",\n" + indent + "}"


def main():
    runs = []
    for py in sys.argv[1:]:
        for flags in ([], ["-X", "no_debug_ranges"]):
            p = subprocess.run([py, *flags, os.path.abspath(__file__), "--record"], check=True,
                               capture_output=True, text=True)
            runs.append(json.loads(p.stdout))
    w = sys.stdout.write
    w("/* SPDX-License-Identifier: MIT */\n"
      "/*\n"
      " * Generated by tests/lib/symbols/mkpy_recorded.py from CPython "
      + ", ".join(r["version"] for r in runs if not r["nocol"]) + ":\n"
      " * location tables with the line of each code unit as co_lines() gives it, and code\n"
      " * objects as they lay in those interpreters' memory. Do not edit: run the script.\n"
      " */\n"
      "/* clang-format off */\n\n")
    w("struct py_rec_table {\n\tconst char *what;\n\tuint32_t minor;\n\tint32_t first;\n"
      "\tconst uint8_t *tab;\n\tsize_t len;\n\tconst uint32_t *lines;\n\tsize_t n;\n};\n\n")
    w("struct py_rec_region {\n\tuint64_t addr;\n\tconst uint8_t *bytes;\n\tsize_t len;\n};\n\n")
    w("struct py_rec_object {\n\tuint32_t minor;\n\tuint64_t code_type;\n"
      "\tstruct py_rec_region code, qualname, filename, linetable;\n"
      "\tconst char *want_qualname, *want_filename;\n\tint32_t first;\n};\n\n")
    tabs, objs = [], []
    for r in runs:
        tag = "py3%d%s" % (r["minor"], "_nocol" if r["nocol"] else "")
        for t in r["tables"]:
            if t["name"] not in (("loop", "far") if r["nocol"] else TABLES):
                continue
            ident = "%s_%s" % (tag, t["name"])
            codes = sorted({(b >> 3) & 15 for b in t["table"] if b & 0x80})
            sys.stderr.write("%s: entry codes %s\n" % (ident, codes))
            w("static const uint8_t %s_tab[] = %s;\n" % (ident, c_bytes(t["table"], "")))
            w("static const uint32_t %s_lines[] = %s;\n\n" % (ident, c_words(t["lines"], "")))
            what = "3.%d %s%s" % (r["minor"], t["name"], " (no columns)" if r["nocol"] else "")
            tabs.append('\t{"%s", %d, %d,\n\t %s_tab, sizeof(%s_tab),\n'
                        '\t %s_lines, sizeof(%s_lines) / sizeof(uint32_t)},\n'
                        % (what, r["minor"], t["first"], ident, ident, ident, ident))
        for i, o in enumerate(r["objects"]):
            ident = "%s_obj%d" % (tag, i)
            regs = []
            for part in ("code", "qualname", "filename", "linetable"):
                w("static const uint8_t %s_%s[] = %s;\n" % (ident, part,
                                                           c_bytes(o[part]["bytes"], "")))
                regs.append("{0x%xull, %s_%s, sizeof(%s_%s)}"
                            % (o[part]["addr"], ident, part, ident, part))
            objs.append("\t{%d, 0x%xull,\n\t %s,\n\t %s,\n\t %s,\n\t %d},\n"
                        % (r["minor"], r["code_type"], ",\n\t ".join(regs),
                           c_str(o["want_qualname"]), c_str(o["want_filename"]), o["first"]))
            w("\n")
    w("static const struct py_rec_table py_rec_tables[] = {\n" + "".join(tabs) + "};\n\n")
    w("static const struct py_rec_object py_rec_objects[] = {\n" + "".join(objs) + "};\n\n")
    w("/* clang-format on */\n")


if __name__ == "__main__":
    record() if sys.argv[1:] == ["--record"] else main()
