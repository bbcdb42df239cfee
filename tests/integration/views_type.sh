#!/bin/bash
# SPDX-License-Identifier: MIT
# --type and --sample: a history with profiles of two readable types (tests/tools/mkhistory
# --offcpu: 3 cpu profiles, 55 samples; 1 offcpu profile, 7 samples in f_c) and an unreadable
# "mem" one. Each view and command reads only the type asked for; a type the history does not
# hold is an error that names those it holds. No BPF: it runs anywhere emberctl builds.
# Env: EMBER_BUILD (build dir). Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/fail_trap.sh"
. "$(dirname "$0")/cli_lib.sh"

cli_setup views-type
CTL_ARGS=(-d "$hist")

"$mk" --mem --offcpu "$hist" || { fail mkhistory; exit 1; }

# --- the default type is cpu: the offcpu profile stays out -------------------------------
expect top <<'EOF'
3 cpu profiles from 2026-01-01T00:00:00Z to 2026-01-01T00:00:30Z, 55 samples
 self   self% total  total%  function
   34  61.82%    34  61.82%  f_a
   12  21.82%    21  38.18%  f_b
    9  16.36%     9  16.36%  f_c
    0   0.00%    55 100.00%  main
EOF

# --- --type offcpu: only its profile, in every view --------------------------------------
expect top --type offcpu <<'EOF'
1 offcpu profile from 2026-01-01T00:00:00Z to 2026-01-01T00:00:10Z, 7 samples
 self   self% total  total%  function
    7 100.00%     7 100.00%  f_c
    0   0.00%     7 100.00%  f_b
    0   0.00%     7 100.00%  main
EOF
expect folded -t offcpu <<'EOF'
main;f_b;f_c 7
EOF
expect tree -t offcpu <<'EOF'
1 offcpu profile from 2026-01-01T00:00:00Z to 2026-01-01T00:00:10Z, 7 samples
total  total%  self   self%  function
    7 100.00%     0   0.00%  main
    7 100.00%     0   0.00%    f_b
    7 100.00%     7 100.00%      f_c
EOF
run callers f_a --type offcpu
expect_rc 1 "callers f_a --type offcpu"
expect_err "no function is named or contains \"f_a\" in 1 offcpu profile" "callers f_a --type offcpu"
run list --type offcpu
expect_rc 0 "list --type offcpu"
[[ $(grep -c ' offcpu ' <<<"$out") == 1 && $(grep -c ' cpu ' <<<"$out") == 0 ]] ||
	fail "list --type offcpu: want its one row: $out"
run export --type offcpu -o "$tmp/off.pb.gz"
expect_rc 0 "export --type offcpu"
[[ -s $tmp/off.pb.gz ]] || fail "export --type offcpu wrote nothing"

# --- --sample: which value is counted ---------------------------------------------------
expect top -t offcpu --sample cpu <<'EOF'
1 offcpu profile from 2026-01-01T00:00:00Z to 2026-01-01T00:00:10Z, 70000000 cpu
    self   self%    total  total%  function
70000000 100.00% 70000000 100.00%  f_c
       0   0.00% 70000000 100.00%  f_b
       0   0.00% 70000000 100.00%  main
EOF
run top --sample bogus
expect_rc 1 "top --sample bogus"
expect_err "the 3 cpu profiles in the history record no \"bogus\" values (see --sample)" \
	"top --sample bogus"
[[ $err != *corrupt* ]] || fail "top --sample bogus: a missing value is no corruption: $err"

# --- a type the history does not hold: an error naming those it holds --------------------
while read -r -a args; do
	run "${args[@]}" --type bogus
	expect_rc 1 "${args[*]} --type bogus"
	expect_err 'no profiles of type "bogus" in the history; it holds: cpu, mem, offcpu' \
		"${args[*]} --type bogus"
done <<EOF
top
tree
callers main
callees main
folded -o $tmp/x
list
export -o $tmp/x
flamegraph -o $tmp/x.svg
diff --base-since 2026-01-01T00:00:00Z --base-until 2026-01-01T00:00:10Z
EOF
[[ ! -e $tmp/x && ! -e $tmp/x.svg ]] || fail "an unknown type wrote an output file"

# --help teaches both options
run top --help
[[ $out == *"--type TYPE"* && $out == *"--sample NAME"* ]] || fail "top --help: no --type/--sample"

cli_finish
