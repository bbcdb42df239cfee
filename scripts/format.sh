#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Formats ember's own C sources with .clang-format (clang-format 14, as CI has it).
# Usage: scripts/format.sh [--check] [FILE...]
#   (no option)  rewrites the files that differ, in place
#   --check      changes nothing; prints FAIL: for each file that differs, exits 1 if any does
# Without FILE, every *.c and *.h the repository tracks under bpf/ include/ lib/ daemon/ cli/ alloc/
# tests/ (or, outside a git checkout, found there), less the exclusions below.
set -euo pipefail
cd "$(dirname "$0")/.."

# Not ours to format, should any ever sit in the source tree: generated files (vmlinux.h from
# bpftool btf dump, *.skel.h from bpftool gen skeleton, *.pb-c.[ch] from protoc-c; all are
# written into the build tree today) and build trees themselves. tests/fixtures/*.cpp is C++
# (a demangling fixture) and is not matched by *.c / *.h.
EXCLUDE_RE='(^|/)(vmlinux\.h|[^/]*\.skel\.h|[^/]*\.pb-c\.[ch])$|^build[^/]*/'
DIRS=(bpf include lib daemon cli tests alloc)

check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi

CLANG_FORMAT=${CLANG_FORMAT:-}
if [ -z "$CLANG_FORMAT" ]; then
	for c in clang-format-14 clang-format; do
		if command -v "$c" >/dev/null; then
			CLANG_FORMAT=$c
			break
		fi
	done
fi
if [ -z "$CLANG_FORMAT" ]; then
	echo "FAIL: clang-format-14 not found (bash scripts/install-deps.sh installs it)" >&2
	exit 2
fi
# Another major version formats some constructs differently: say so, since CI uses 14.
ver=$("$CLANG_FORMAT" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$ver" = 14 ] || echo "format: warning: $CLANG_FORMAT is version $ver, CI uses 14" >&2

if [ "$#" -gt 0 ]; then
	files=("$@")
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files -- "${DIRS[@]/%//*.c}" "${DIRS[@]/%//*.h}" |
		grep -Ev "$EXCLUDE_RE" | sort)
else
	mapfile -t files < <(find "${DIRS[@]}" -type f -name '*.[ch]' | grep -Ev "$EXCLUDE_RE" | sort)
fi
if [ "${#files[@]}" -eq 0 ]; then
	echo "FAIL: no C sources found" >&2
	exit 2
fi

bad=0
for f in "${files[@]}"; do
	if [ "$check" -eq 1 ]; then
		# --dry-run -Werror: exits non-zero, with the places, when the file would change
		if ! out=$("$CLANG_FORMAT" --style=file --dry-run -Werror "$f" 2>&1); then
			echo "FAIL: $f is not formatted ($(grep -c 'error:' <<<"$out") places)"
			bad=$((bad + 1))
		fi
	else
		"$CLANG_FORMAT" --style=file -i "$f"
	fi
done

if [ "$check" -eq 1 ]; then
	if [ "$bad" -ne 0 ]; then
		echo "FAIL: $bad of ${#files[@]} files differ from .clang-format;" \
			"run scripts/format.sh to format them (git diff shows what changed)"
		exit 1
	fi
	echo "format: all ${#files[@]} files pass clang-format ($CLANG_FORMAT)"
fi
