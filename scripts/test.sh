#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds with -Werror, and runs the whole test suite:
# unit suites and BPF integration tests (ctest), the unit suites again under
# ASan+UBSan, and a short run of every fuzz target over its seed corpus.
# FUZZ_SECONDS (default 20) sets the time per fuzz target; they run one a CPU at a time.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh || exit 1
jobs=$(nproc)
passed=0
failed=0
stage() { # stage NAME CMD...: runs one stage and counts it
	local name=$1; shift
	echo "=== $name"
	if "$@"; then passed=$((passed + 1)); echo "=== $name: ok"
	else failed=$((failed + 1)); echo "=== $name: FAILED"; fi
}

build_main() {
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_WERROR=ON >/dev/null &&
		cmake --build build -j"$jobs"
}
run_ctest() { (cd build && rm -f Testing/Temporary/LastTestsFailed.log &&
	ctest --output-on-failure --timeout 600); }
# failed_tails: each failed test's FAIL lines and last lines again, at the end of the run's
# output, where a log cut to its head and tail still shows them (whole in LastTest.log)
failed_tails() {
	local dir=build/Testing/Temporary
	[ -s "$dir/LastTestsFailed.log" ] && [ -s "$dir/LastTest.log" ] || return 0
	echo "=== failed tests, again: their FAIL lines and last 30 lines"
	cut -d: -f2- "$dir/LastTestsFailed.log" | while read -r name; do
		echo "--- $name"
		awk -v n="$name" 'index($0, "Testing: " n) && $0 ~ (" " n "$") { p = 1; next }
			p && index($0, "\"" n "\" end time:") == 1 { exit }
			p { print }' "$dir/LastTest.log" >"$dir/$name.tail" || true
		grep -E '^(FAIL|SKIP)' "$dir/$name.tail" | head -10
		tail -30 "$dir/$name.tail"
	done
}
build_asan() {
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DEMBER_SANITIZE=ON -DEMBER_WERROR=ON \
		>/dev/null && cmake --build build-asan -j"$jobs" --target check_ember
}
run_asan() { CK_FORK=yes CK_TIMEOUT_MULTIPLIER=10 ASAN_OPTIONS=detect_leaks=1 build-asan/tests/check_ember; }
build_fuzz() {
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DEMBER_FUZZ=ON >/dev/null &&
		cmake --build build-fuzz -j"$jobs" --target $(fuzz_targets)
}
fuzz_targets() { for f in tests/fuzz/fuzz_*.c; do basename "$f" .c; done; }
run_fuzz() {
	local t=$1 corpus=tests/fuzz/corpus/${1#fuzz_} work
	work=$(mktemp -d)
	[ -d "$corpus" ] && cp -r "$corpus/." "$work/"
	# a crash's input is kept under build-fuzz/, and its report shown; an input that runs
	# past 120 s is a hang, reported as one (libFuzzer's default waits 20 minutes)
	mkdir -p build-fuzz/artifacts
	build-fuzz/tests/$t -max_total_time="${FUZZ_SECONDS:-20}" -rss_limit_mb=2048 -timeout=120 \
		-artifact_prefix=build-fuzz/artifacts/"$t"- -print_final_stats=1 "$work" \
		>"$work.log" 2>&1
	local rc=$?
	if [ "$rc" -ne 0 ]; then grep -v '^#' "$work.log" | head -40; else tail -3 "$work.log"; fi
	rm -rf "$work" "$work.log"
	return "$rc"
}

# the fuzz targets, $jobs at a time (each is one thread): output and status kept per target,
# then reported in order as stages
fuzz_all() {
	local t n=0
	for t in $(fuzz_targets); do
		if [ "$n" -ge "$jobs" ]; then wait -n; n=$((n - 1)); fi
		(run_fuzz "$t" >"build-fuzz/$t.out" 2>&1; echo $? >"build-fuzz/$t.rc") &
		n=$((n + 1))
	done
	wait
}
fuzz_report() { cat "build-fuzz/$1.out"; return "$(cat "build-fuzz/$1.rc" 2>/dev/null || echo 1)"; }

stage build build_main || true
stage ctest run_ctest
stage build-asan build_asan
stage unit-asan run_asan
if stage build-fuzz build_fuzz; then
	fuzz_all
	for t in $(fuzz_targets); do stage "$t" fuzz_report "$t"; done
fi
failed_tails
echo "summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
