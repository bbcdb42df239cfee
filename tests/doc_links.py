#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Every relative link of the Markdown pages resolves: the file or folder exists,
# and a #fragment names a heading of the target page (GitHub's anchors).
# usage: doc_links.py SOURCE_DIR. Exit 0 when all resolve, 1 naming each that does not.
import os
import re
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path):
    """GitHub's anchors of a page's headings: lower case, punctuation out, spaces to -."""
    seen, out = {}, set()
    fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"#{1,6} (.*)", line)
            if not m:
                continue
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f"{a}-{n}")
    return out


def pages():
    try:
        files = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                                "--exclude-standard", "*.md"], capture_output=True,
                               text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root)
                 for d, _, fs in os.walk(root) for f in fs if f.endswith(".md")]
    return [f for f in files if not f.startswith("build")]


bad = 0
for page in pages():
    path = os.path.join(root, page)
    fence = False
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                print(f"{page}:{lineno}: {target}: no such file")
                bad += 1
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                print(f"{page}:{lineno}: {target}: no heading #{frag}")
                bad += 1
print(f"doc links: {bad} broken" if bad else "doc links: all resolve")
sys.exit(1 if bad else 0)
