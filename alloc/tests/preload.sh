#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libember_alloc.so as shipped: its probe notes and exports, its environment variable, and
# real programs (ls, python3, node when installed) run under LD_PRELOAD with the same
# output and exit status as without, sampling off and sampling every allocation.
# usage: preload.sh path/to/libember_alloc.so
set -uo pipefail

LIB=${1:?usage: preload.sh libember_alloc.so}
LIB=$(realpath "$LIB")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

command -v readelf >/dev/null || fail "readelf not installed (binutils)"

# --- the probes, as libbpf's USDT support reads them -------------------------------------
readelf -n "$LIB" >"$TMP/notes" || fail "readelf -n $LIB"
# One probe per block: "Provider: P / Name: N / Location: ..., Semaphore: S / Arguments: A".
probe() { # name -> "semaphore|arguments"
	awk -v want="$1" '
		/Provider:/ { prov = $2 }
		/Name:/ { name = $2 }
		/Semaphore:/ { sem = $NF }
		/Arguments:/ { sub(/^ *Arguments: */, ""); args = $0
			if (prov == "otel_memory" && name == want) print sem "|" args }' "$TMP/notes"
}
alloc=$(probe alloc)
free=$(probe free)
[ -n "$alloc" ] || fail "no otel_memory:alloc note in $LIB"
[ -n "$free" ] || fail "no otel_memory:free note in $LIB"
[ "$(grep -c 'Provider: otel_memory' "$TMP/notes")" -eq 2 ] || fail "not exactly 2 otel_memory probes"
case $(uname -m) in
x86_64) want_alloc="8@%rdi 8@%rsi 8@%rdx" want_free="8@%rdi" ;;
aarch64) want_alloc="8@x0 8@x1 8@x2" want_free="8@x0" ;;
*) want_alloc=${alloc#*|} want_free=${free#*|} ;;
esac
[ "${alloc#*|}" = "$want_alloc" ] || fail "alloc arguments '${alloc#*|}', want '$want_alloc'"
[ "${free#*|}" = "$want_free" ] || fail "free arguments '${free#*|}', want '$want_free'"
# The semaphores: non-zero addresses in the note, the exported symbols' addresses.
nm -D --defined-only "$LIB" >"$TMP/syms" || fail "nm -D $LIB"
symaddr() { awk -v s="$1" '$3 == s { print $1 }' "$TMP/syms"; }
for p in alloc free; do
	v=${!p}
	sem=$(( ${v%%|*} ))
	[ "$sem" -ne 0 ] || fail "otel_memory:$p has no semaphore"
	[ "$sem" -eq $(( 0x$(symaddr otel_memory_${p}_semaphore) )) ] ||
		fail "otel_memory:$p's semaphore is not otel_memory_${p}_semaphore"
done

# --- exports: the allocator, the semaphores, ember_alloc.h; nothing else ------------------
want="aligned_alloc calloc ember_alloc_is_live ember_alloc_read_stats free malloc memalign
otel_memory_alloc_semaphore otel_memory_free_semaphore posix_memalign pvalloc realloc
reallocarray valloc"
got=$(awk '$2 ~ /^[TDBV]$/ { print $3 }' "$TMP/syms" | sort | tr '\n' ' ')
[ "$got" = "$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')" ] || fail "exports: $got"

# --- EMBER_ALLOC_SAMPLE_BYTES --------------------------------------------------------------
for bad in abc 0 -5 1073741825 99999999999999999999999 "12 " ""; do
	EMBER_ALLOC_SAMPLE_BYTES=$bad LD_PRELOAD=$LIB /bin/true 2>"$TMP/err" ||
		fail "/bin/true failed with EMBER_ALLOC_SAMPLE_BYTES='$bad'"
	[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^libember_alloc: EMBER_ALLOC_SAMPLE_BYTES is not' "$TMP/err" ||
		fail "EMBER_ALLOC_SAMPLE_BYTES='$bad': want one message on stderr, got: $(cat "$TMP/err")"
done
for good in 1 4096 524288 1073741824; do
	EMBER_ALLOC_SAMPLE_BYTES=$good LD_PRELOAD=$LIB /bin/true 2>"$TMP/err" ||
		fail "/bin/true failed with EMBER_ALLOC_SAMPLE_BYTES=$good"
	[ ! -s "$TMP/err" ] || fail "EMBER_ALLOC_SAMPLE_BYTES=$good: stderr: $(cat "$TMP/err")"
done

# --- real programs: same output, same status ----------------------------------------------
# Modes: no preload; preloaded, no profiler; preloaded, sampling forced on at M = 4096 bytes;
# and at M = 1 byte (every allocation sampled: the live set overflows, counted).
same() { # name command...
	local name=$1 ref rc mode
	shift
	"$@" >"$TMP/ref" 2>/dev/null
	ref=$?
	for mode in off 4096 1; do
		case $mode in
		off) env LD_PRELOAD="$LIB" "$@" >"$TMP/out" 2>"$TMP/err" ;;
		*) env LD_PRELOAD="$LIB" EMBER_ALLOC_FORCE_SAMPLING=1 EMBER_ALLOC_SAMPLE_BYTES=$mode \
			"$@" >"$TMP/out" 2>"$TMP/err" ;;
		esac
		rc=$?
		[ "$rc" -eq "$ref" ] || fail "$name ($mode): exit $rc, $ref without the library: $(head -c 500 "$TMP/err")"
		cmp -s "$TMP/ref" "$TMP/out" || fail "$name ($mode): output differs from without the library"
	done
	[ "$ref" -eq 0 ] || fail "$name exits $ref even without the library"
	echo "ok: $name: same output ($(wc -c <"$TMP/ref") bytes) and exit status"
}

same ls /bin/ls -la "$(dirname "$0")" /usr/include/stdio.h
PY=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
if [ -n "$PY" ]; then
	same python3 "$PY" -c '
import hashlib, json, threading
d = [{"k": i, "v": str(i) * 10} for i in range(100000)]
def work(n): return sum(len(str(x)) for x in range(n))
ts = [threading.Thread(target=work, args=(50000,)) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(hashlib.sha256(json.dumps(d).encode()).hexdigest())'
else
	echo "note: python3 not installed, not run"
fi
if command -v node >/dev/null; then
	same node node -e '
const a = [];
for (let i = 0; i < 100000; i++) a.push({ k: i, v: String(i).repeat(10) });
console.log(require("crypto").createHash("sha256").update(JSON.stringify(a)).digest("hex"));'
else
	echo "note: node not installed, not run"
fi
echo "ok: preload"
