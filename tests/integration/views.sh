#!/bin/bash
# SPDX-License-Identifier: MIT
# emberctl top, tree, callers, callees and folded over a history with known
# profiles (tests/tools/mkhistory --deep): exact lines and numbers, the
# filters, and the errors. No BPF: it runs anywhere emberctl builds.
# Env: EMBER_BUILD (build dir), EMBER_SRC (source dir). Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/fail_trap.sh"
. "$(dirname "$0")/cli_lib.sh"

cli_setup views
CTL_ARGS=(-d "$hist")
# The three profiles of mkhistory's answer key; the corrupt ones at 00:00:30 and
# 00:00:40 are skipped, and the --deep one at 00:01:00 is left out.
base=(--until 2026-01-01T00:00:50Z)

"$mk" --mem --corrupt --deep "$hist" || { fail mkhistory; exit 1; }

# --- top ------------------------------------------------------------------------------
expect top "${base[@]}" <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 55 samples
 self   self% total  total%  function
   34  61.82%    34  61.82%  f_a
   12  21.82%    21  38.18%  f_b
    9  16.36%     9  16.36%  f_c
    0   0.00%    55 100.00%  main
EOF
expect_err "skipped 2 corrupt stored profiles (ids 4, 5)" top

expect top "${base[@]}" --sort total -n 2 <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 55 samples
 self   self% total  total%  function
    0   0.00%    55 100.00%  main
   34  61.82%    34  61.82%  f_a
... 2 more functions (-n 0 shows all)
EOF

expect top "${base[@]}" -n 0 --pid 200 <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 15 samples, pid 200
 self   self% total  total%  function
    9  60.00%     9  60.00%  f_c
    4  26.67%     4  26.67%  f_a
    2  13.33%    11  73.33%  f_b
    0   0.00%    15 100.00%  main
EOF

# recursion: f_b is twice on every stack of the deep profile, counted once in total;
# the odd name ("odd;name\nx") prints on one line
expect top --app deep <<'EOF'
1 cpu profile from 2026-01-01T00:01:00Z to 2026-01-01T00:01:10Z, 12 samples, app deep
 self   self% total  total%  function
    6  50.00%     6  50.00%  f_a
    4  33.33%    10  83.33%  f_b
    2  16.67%     2  16.67%  odd;name?x
    0   0.00%    12 100.00%  main
    0   0.00%     4  33.33%  f_c
EOF
expect top --app deep --sort total <<'EOF'
1 cpu profile from 2026-01-01T00:01:00Z to 2026-01-01T00:01:10Z, 12 samples, app deep
 self   self% total  total%  function
    0   0.00%    12 100.00%  main
    4  33.33%    10  83.33%  f_b
    6  50.00%     6  50.00%  f_a
    0   0.00%     4  33.33%  f_c
    2  16.67%     2  16.67%  odd;name?x
EOF

# the whole history: the deep profile included, times in journalctl's form
run top --since "100000 days ago" --until tomorrow -n 1
expect_rc 0 "top --since \"100000 days ago\""
[[ $out == "4 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:01:10Z, 67 samples"* ]] ||
	fail "top over the whole history: $out"
[[ $out == *"   40  59.70%    40  59.70%  f_a"* ]] || fail "top over the whole history: $out"

# --data-dir after the command, as views take it too
"$ctl" top --data-dir "$hist" "${base[@]}" -n 1 >"$tmp/dd.out" 2>/dev/null ||
	fail "top --data-dir after the command: exit $?"
grep -q '^   34  61.82%    34  61.82%  f_a$' "$tmp/dd.out" ||
	fail "top --data-dir after the command: $(cat "$tmp/dd.out")"

# --- tree -----------------------------------------------------------------------------
expect tree "${base[@]}" <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 55 samples
total  total%  self   self%  function
   55 100.00%     0   0.00%  main
   34  61.82%    34  61.82%    f_a
   21  38.18%    12  21.82%    f_b
    9  16.36%     9  16.36%      f_c
EOF

expect tree "${base[@]}" --min-percent 20 <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 55 samples
total  total%  self   self%  function
   55 100.00%     0   0.00%  main
   34  61.82%    34  61.82%    f_a
   21  38.18%    12  21.82%    f_b
                                 ... 1 more below 20% (9 samples)
EOF

expect tree "${base[@]}" --max-depth 1 <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 55 samples
total  total%  self   self%  function
   55 100.00%     0   0.00%  main
                               ... 55 samples in 2 callees deeper than --max-depth 1
EOF

expect tree --app deep -m 0 <<'EOF'
1 cpu profile from 2026-01-01T00:01:00Z to 2026-01-01T00:01:10Z, 12 samples, app deep
total  total%  self   self%  function
   12 100.00%     0   0.00%  main
   10  83.33%     0   0.00%    f_b
    6  50.00%     0   0.00%      f_b
    6  50.00%     6  50.00%        f_a
    4  33.33%     0   0.00%      f_c
    4  33.33%     4  33.33%        f_b
    2  16.67%     2  16.67%    odd;name?x
EOF

# the label filter: only the checkout profile
expect tree --label service_name=checkout <<'EOF'
1 cpu profile from 2026-01-01T00:00:20Z to 2026-01-01T00:00:30Z, 17 samples, label service_name=checkout
total  total%  self   self%  function
   17 100.00%     0   0.00%  main
   10  58.82%    10  58.82%    f_a
    7  41.18%     7  41.18%    f_b
EOF

# --- callers, callees -----------------------------------------------------------------
expect callers f_c "${base[@]}" <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 55 samples
total    %all     %fn  callers of f_c
    9  16.36% 100.00%  f_c
    9  16.36% 100.00%    f_b
    9  16.36% 100.00%      main
EOF

# recursive: f_b is followed from its innermost call toward main
expect callers f_b --app deep <<'EOF'
1 cpu profile from 2026-01-01T00:01:00Z to 2026-01-01T00:01:10Z, 12 samples, app deep
total    %all     %fn  callers of f_b
   10  83.33% 100.00%  f_b
    6  50.00%  60.00%    f_b
    6  50.00%  60.00%      main
    4  33.33%  40.00%    f_c
    4  33.33%  40.00%      f_b
    4  33.33%  40.00%        main
EOF

# and from its outermost call inward; options after FUNCTION
expect callees f_b -a deep <<'EOF'
1 cpu profile from 2026-01-01T00:01:00Z to 2026-01-01T00:01:10Z, 12 samples, app deep
total    %all     %fn  self  callees of f_b
   10  83.33% 100.00%     0  f_b
    6  50.00%  60.00%     0    f_b
    6  50.00%  60.00%     6      f_a
    4  33.33%  40.00%     0    f_c
    4  33.33%  40.00%     4      f_b
EOF

# pruning is relative to the function: f_b's 21 of main's 55 is under 50%
expect callees main "${base[@]}" -m 50 <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 55 samples
total    %all     %fn  self  callees of main
   55 100.00% 100.00%     0  main
   34  61.82%  61.82%    34    f_a
                               ... 1 more below 50% (21 samples)
EOF

# a unique part of a name resolves
expect callers _c "${base[@]}" --pid 200 <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 15 samples, pid 200
total    %all     %fn  callers of f_c
    9  60.00% 100.00%  f_c
    9  60.00% 100.00%    f_b
    9  60.00% 100.00%      main
EOF

# --- folded ---------------------------------------------------------------------------
expect folded <<'EOF'
main;f_a 34
main;f_b 12
main;f_b;f_b;f_a 6
main;f_b;f_c 9
main;f_b;f_c;f_b 4
main;odd,name?x 2
EOF
expect_err "6 stacks of 4 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:01:10Z, 67 samples" \
	folded

expect folded "${base[@]}" --pid 100 <<'EOF'
main;f_a 30
main;f_b 10
EOF

run folded --app checkout -o "$tmp/out.folded"
expect_rc 0 "folded -o"
[[ -z $out ]] || fail "folded -o wrote to stdout: $out"
[[ $(<"$tmp/out.folded") == $'main;f_a 10\nmain;f_b 7' ]] ||
	fail "folded -o: $(cat "$tmp/out.folded")"
[[ -e $tmp/out.folded.tmp ]] && fail "folded -o left its .tmp behind"

if command -v flamegraph.pl >/dev/null; then
	"$ctl" -d "$hist" folded 2>/dev/null | flamegraph.pl >"$tmp/cpu.svg" ||
		fail "flamegraph.pl rejected folded output"
	grep -q 'f_a (40 samples' "$tmp/cpu.svg" || fail "flamegraph.pl: no f_a with 40 samples"
fi

# --- one reader or one per CPU: the same answers ---------------------------------------
if command -v taskset >/dev/null && (($(nproc) > 1)); then
	for view in "top -n 0" "tree -m 0" "callers f_b -m 0" folded; do
		read -ra v <<<"$view"
		one=$(taskset -c 0 "$ctl" -d "$hist" "${v[@]}" 2>&1)
		many=$("$ctl" -d "$hist" "${v[@]}" 2>&1)
		[[ $one == "$many" ]] || fail "$view on one CPU differs from all CPUs: $one / $many"
	done
fi

# --- what goes wrong, and how emberctl says so ----------------------------------------
run callers nosuch "${base[@]}"
expect_rc 1 "callers nosuch"
expect_err 'no function is named or contains "nosuch" in 3 cpu profiles' "callers nosuch"

run callees f_ "${base[@]}"
expect_rc 1 "callees f_"
expect_err '"f_" is part of 3 function names: f_a, f_b, f_c; give one of them whole' "callees f_"

run callers
expect_rc 2 "callers without a function"
expect_err "which function?" "callers without a function"

run top --since 2026-01-01T01:00:00Z --until 2026-01-01T02:00:00Z
expect_rc 1 "top of an empty window"
expect_err "no cpu profiles between 2026-01-01T01:00:00Z and 2026-01-01T02:00:00Z" \
	"top of an empty window"
[[ -z $out ]] || fail "top of an empty window printed: $out"

run tree --pid 999
expect_rc 1 "tree --pid 999"
expect_err "no samples of pid 999" "tree --pid 999"

run top --app nosuch
expect_rc 1 "top --app nosuch"
expect_err "no cpu profiles of app nosuch" "top --app nosuch"

for bad in abc -1 101 1e999 ""; do
	run tree --min-percent "$bad"
	expect_rc 2 "tree --min-percent '$bad'"
	expect_err "--min-percent: \"$bad\" is not a percentage from 0 to 100" "tree --min-percent '$bad'"
done
run top -n -3
expect_rc 2 "top -n -3"
run top --sort name
expect_rc 2 "top --sort name"
expect_err '--sort: "name" is neither self nor total' "top --sort name"
run top --min-percent 5
expect_rc 2 "top --min-percent"
expect_err "unknown option --min-percent" "top --min-percent"
run tree --max-depth 0
expect_rc 2 "tree --max-depth 0"
run top extra
expect_rc 2 "top extra"
run folded --since "10 parsecs ago"
expect_rc 2 "folded --since '10 parsecs ago'"
expect_err 'cannot read "10 parsecs ago" as a time' "folded --since '10 parsecs ago'"

# --- help teaches ---------------------------------------------------------------------
run top --help
expect_rc 0 "top --help"
for word in self total --sort "-n" "10 min ago"; do
	[[ $out == *"$word"* ]] || fail "top --help lacks \"$word\""
done
run tree --help
for word in --min-percent --max-depth "more below"; do
	[[ $out == *"$word"* ]] || fail "tree --help lacks \"$word\""
done
run folded --help
[[ $out == *flamegraph.pl* && $out == *"becomes ','"* ]] || fail "folded --help: $out"
run --help
for word in top tree callers callees folded yesterday; do
	[[ $out == *"$word"* ]] || fail "emberctl --help lacks \"$word\""
done

cli_finish
