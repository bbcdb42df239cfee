#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Demangling: fx_cpp spends its time in ns::Klass<long>::method(int). The profile
# must name that frame demangled, keep the mangled name as its system_name, and
# have it on top.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
[ -x "$FX/fx_cpp" ] || fail "fx_cpp not built at $FX/fx_cpp"

start_emberd --hz 99 --interval 2s
"$FX/fx_cpp" cpu:4 &	# ~400 samples, however loaded the host
WL=$!
PIDS+=("$WL")
wait "$WL"
kill "$EMBERD_PID"	# SIGTERM: emberd stores the last interval, then exits 0
wait_emberd

"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "$WL" -o "$T/cpu.pb.gz" ||
	fail "export failed"
pprof_top "$T/cpu.pb.gz" -sample_index=samples >"$T/top.txt"
total=$(total_of "$T/top.txt")
hot=$(flat_of "$T/top.txt" 'ns::Klass<long>::method(int)')
echo "ns::Klass<long>::method(int): $hot of $total samples"
grep -q '_ZN2ns5KlassIlE6methodEi' "$T/top.txt" &&
	fail "a mangled name reached the function name"
[ "${hot:-0}" -gt 0 ] || { head -20 "$T/top.txt"; fail "no sample of ns::Klass<long>::method(int)"; }
awk -v h="$hot" -v t="$total" 'BEGIN { exit !(t > 0 && h / t >= 0.8) }' ||
	fail "ns::Klass<long>::method(int) has $hot of $total samples (expected >= 80%)"
# The mangled name is kept as the function's system_name: pprof shows it with -symbolize=none
# only through the raw proto; check it is in the (decompressed) profile.
gzip -dc "$T/cpu.pb.gz" | grep -aq '_ZN2ns5KlassIlE6methodEi' ||
	fail "the mangled name is not in the profile (system_name)"
grep -q ' main$' "$T/top.txt" || fail "main is missing: stacks were not walked to the root"
pass "ns::Klass<long>::method(int) demangled, $hot of $total samples"
