#!/bin/bash
# SPDX-License-Identifier: MIT
# emberctl list/export over a history with known profiles (tests/tools/mkhistory),
# the exported files read back by go tool pprof; and emberctl's answers to bad input.
# Env: EMBER_BUILD (build dir), EMBER_SRC (source dir). Exit 0 pass, 1 fail, 77 skip.
set -u
. "$(dirname "$0")/fail_trap.sh"
. "$(dirname "$0")/cli_lib.sh"

cli_setup cli-export
if ! command -v go >/dev/null || ! go tool -n pprof >/dev/null 2>&1; then
	echo "SKIP: go tool pprof is not installed (golang-go)" >&2
	FAIL_SAID=1
	exit 77
fi

# go wants a writable home and build cache; reading a local file needs no network
# (the integration tests' shared build cache: lib.sh)
export HOME=$tmp/home GOCACHE=${EMBER_TEST_GOCACHE:-/var/tmp/ember-test-gocache}
export PPROF_TMPDIR=$tmp GOFLAGS= GOPROXY=off
mkdir -p "$HOME"

# top FILE: go tool pprof's flat list counted in samples
top() {
	go tool pprof -top -nodecount=50 -sample_index=samples "$1" 2>/dev/null
}

# expect_fn FILE FUNC FLAT CUM: the function's exact sample counts in FILE
expect_fn() {
	local got
	got=$(top "$1" | awk -v f="$2" '$6 == f { print $1 "/" $4 }')
	[[ $got == "$3/$4" ]] || fail "$(basename "$1"): $2 flat/cum is '${got:-absent}', want $3/$4"
}

expect_total() {
	top "$1" | grep -q "of $2 total" ||
		fail "$(basename "$1"): total is not $2: $(top "$1" | grep total)"
}

# export NAME ARGS...: emberctl export into $tmp/NAME.pb.gz, which must be read back
export_ok() {
	local name=$1 file=$tmp/$1.pb.gz
	shift
	run -d "$hist" export "$@" -o "$file"
	expect_rc 0 "export $*"
	[[ -e $file.tmp ]] && fail "export $*: $file.tmp left behind"
	go tool pprof -raw -symbolize=none "$file" >"$tmp/$name.raw" 2>&1 ||
		fail "export $*: go tool pprof cannot read the file: $(head -3 "$tmp/$name.raw")"
}

"$mk" --mem --corrupt "$hist" || { fail mkhistory; exit 1; }

# --- list: 3 good + 2 corrupt cpu profiles and 1 mem profile --------------------------
run --data-dir "$hist" list
expect_rc 0 list
[[ $(grep -c '^2026-01-01T' <<<"$out") == 6 ]] || fail "list: want 6 rows: $out"
expect_out "6 profiles in the history, 75 samples" list
expect_out "checkout" list
grep -q '^2026-01-01T00:00:10Z *10s cpu *- *20 *2$' <<<"$out" || fail "list: row 2 wrong: $out"

run -d "$hist" list --type cpu
[[ $(grep -c ' cpu ' <<<"$out") == 5 ]] || fail "list --type cpu: want 5 rows: $out"
run -d "$hist" list --type cpu --since 2026-01-01T00:00:10Z --until 2026-01-01T00:00:20Z
expect_out "1 profile between 2026-01-01T00:00:10Z and 2026-01-01T00:00:20Z, 20 samples" \
	"list with a window"
EMBER_DATA_DIR=$hist run list --since 1767225630
expect_out "2 profiles since 2026-01-01T00:00:30Z" "list with EMBER_DATA_DIR"

# --- export: the merged numbers of mkhistory's answer key -----------------------------
export_ok all
expect_err "merged 3 cpu profiles in the history: 55 samples" "export"
expect_err "skipped 2 corrupt stored profiles (ids 4, 5)" "export"
expect_total "$tmp/all.pb.gz" 55
expect_fn "$tmp/all.pb.gz" f_a 34 34
expect_fn "$tmp/all.pb.gz" f_b 12 21
expect_fn "$tmp/all.pb.gz" f_c 9 9
expect_fn "$tmp/all.pb.gz" main 0 55
grep -q 'Duration: 30s' "$tmp/all.raw" || fail "export: merged duration is not 30s"

export_ok pid100 --pid 100
expect_err "merged 3 cpu profiles in the history: 40 samples of pid 100" "export --pid 100"
expect_total "$tmp/pid100.pb.gz" 40
expect_fn "$tmp/pid100.pb.gz" f_a 30 30
expect_fn "$tmp/pid100.pb.gz" f_b 10 10
grep -q 'pid:\[200\]' "$tmp/pid100.raw" && fail "export --pid 100 kept samples of pid 200"
grep -q 'comm:\[app100\]' "$tmp/pid100.raw" || fail "export --pid 100 lost the comm label"

export_ok pid200 --pid 200 --since -100000d
expect_total "$tmp/pid200.pb.gz" 15
expect_fn "$tmp/pid200.pb.gz" f_c 9 9
expect_fn "$tmp/pid200.pb.gz" f_b 2 11

export_ok second --since 2026-01-01T00:00:10Z --until 2026-01-01T00:00:20Z
expect_err "merged 1 cpu profile between" "export of one interval"
[[ $err == *skipped* ]] && fail "export of one interval reported corrupt rows outside it"
expect_total "$tmp/second.pb.gz" 20
expect_fn "$tmp/second.pb.gz" f_a 14 14
expect_fn "$tmp/second.pb.gz" f_c 6 6

# [00:05, 00:15) overlaps the first two intervals; times in two forms
export_ok overlap --since 2026-01-01T01:00:05+01:00 --until 1767225615
expect_total "$tmp/overlap.pb.gz" 38

export_ok app --app checkout
expect_total "$tmp/app.pb.gz" 17

"$ctl" -d "$hist" export --until 2026-01-01T00:00:30Z -o - >"$tmp/stdout.pb.gz" 2>/dev/null ||
	fail "export -o -: exit $?"
expect_total "$tmp/stdout.pb.gz" 55

# --- what goes wrong, and how emberctl says so ----------------------------------------
run -d "$hist" frobnicate
expect_rc 2 frobnicate
expect_err 'emberctl: unknown command "frobnicate"' frobnicate

run -d "$hist" export --since last-week -o "$tmp/x.pb.gz"
expect_rc 2 "export --since last-week"
expect_err 'cannot read "last-week" as a time' "export --since last-week"
[[ $(wc -l <"$tmp/stderr") == 1 ]] || fail "a bad time takes more than one line: $err"

run -d "$hist" export --since 2026-01-01T01:00:00Z --until 2026-01-01T02:00:00Z -o "$tmp/x.pb.gz"
expect_rc 1 "export of an empty window"
expect_err "no cpu profiles between 2026-01-01T01:00:00Z and 2026-01-01T02:00:00Z" \
	"export of an empty window"
[[ -e $tmp/x.pb.gz || -e $tmp/x.pb.gz.tmp ]] && fail "export of an empty window wrote a file"

run -d "$hist" export --pid 999 -o "$tmp/x.pb.gz"
expect_rc 1 "export --pid 999"
expect_err "no samples of pid 999" "export --pid 999"

run -d "$hist" export --type mem -o "$tmp/x.pb.gz"
expect_rc 1 "export --type mem"
expect_err "none of the 1 mem profiles in the history could be read" "export --type mem"

run -d "$tmp/nowhere" list
expect_rc 1 "list without a history"
expect_err "no history in $tmp/nowhere" "list without a history"
[[ -e $tmp/nowhere ]] && fail "list created the data directory"

run -d "$hist" export
expect_rc 2 "export without -o"
expect_err "-o FILE is required" "export without -o"
run -d "$hist" list --since -1h --until -2h
expect_rc 2 "list with since after until"
run -d "$hist" list --bogus
expect_rc 2 "list --bogus"
expect_err "unknown option --bogus" "list --bogus"
run -d "$hist" list --since
expect_rc 2 "list --since (no value)"
expect_err "option --since needs a value" "list --since (no value)"
run -d "$hist" export --pid abc -o "$tmp/x.pb.gz"
expect_rc 2 "export --pid abc"
run
expect_rc 2 "(no command)"

# --- help teaches ---------------------------------------------------------------------
run --help
expect_rc 0 --help
for word in list export --data-dir EMBER_DATA_DIR "RFC 3339" -15m history.db; do
	expect_out "$word" --help
done
run export --help
expect_rc 0 "export --help"
expect_out "--pid" "export --help"
run --version
expect_out "emberctl " --version

cli_finish
