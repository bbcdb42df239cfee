#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process that execs twice before one drain, as wrappers do (`sh -c 'exec ...'`, a
# launcher that execs the real program): fx_bigexec computes under [app "first"], execs
# fx_bigexec computing under [app "second"] (sampled and read by emberd), which execs
# fx_work_ab under [app "third"]. emberd is stopped before its first interval ends, so the
# three images' samples are drained together. Each image's samples must be in its own
# application and named: spin_before_exec under first and under second, work_a and work_b
# under third. Before the fix only the image just before the last exec was kept: the
# first image's samples, in neither the second's mappings nor the third's, went to third
# with their frames unnamed.
. "$(dirname "$0")/lib.sh"
require_bpf
cpu=$(($(nproc) - 1))
CONF=$T/ember.conf
# the first rule that matches wins: the first image's command line holds all three
cat >"$CONF" <<EOF
[app "first"]
match.cmdline = *fx_bigexec*go1*
[app "second"]
match.cmdline = *fx_bigexec*go2*
[app "third"]
match.cmdline = *fx_work_ab*third*
EOF
start_emberd --config "$CONF" --hz 99 --interval 10m -v
"$FX/fx_bigexec" "$cpu" 1 "$T/go1" "$FX/fx_bigexec" "$cpu" 1 "$T/go2" \
	"$FX/fx_work_ab" cpu:1 third &
WL=$!
PIDS+=("$WL")

# reads: emberd's reads of the process (its first sample, then each image's after an exec)
reads() { grep -c "pid $WL: first sample" "$T/emberd.log" || true; }
# ticks: the process's user CPU time so far, in clock ticks (across its execs)
ticks() { sed 's/.*) //' "/proc/$WL/stat" 2>/dev/null | awk '{ print $12 }'; }
# exec_past ARG: the process's command line no longer holds ARG (the first image's)
exec_past() { ! tr '\0' ' ' <"/proc/$WL/cmdline" 2>/dev/null | grep -qF -- "$1"; }
# image_done READS TICKS: emberd read the image and it computed up to TICKS; waits on
# the process, however slow the host (3 minutes at most)
image_done() {
	local i
	for i in $(seq 1 360); do
		[ "$(reads)" -ge "$1" ] && [ "$(ticks)" -ge "$2" ] 2>/dev/null && return 0
		kill -0 "$WL" 2>/dev/null || fail "the workload exited before image $1 was done"
		sleep 0.5
	done
	fail "image $1: emberd read it $(reads) times, $(ticks) ticks of CPU (want $2)"
}
hz=$(getconf CLK_TCK)
image_done 1 $((hz * 6 / 10)) # ~60 samples of the first image
t1=$(ticks)
touch "$T/go1"
wait_for exec_past "$T/go1" || fail "the first image never exec'd the second"
image_done 2 $((t1 + hz * 6 / 10)) # ~60 of the second, read by emberd
touch "$T/go2"
wait "$WL" || fail "the workload failed (status $?)"
kill "$EMBERD_PID"
wait_emberd

# folded APP: the process's stacks under APP, one "stack count" line each
folded() {
	"$EMBERCTL" --data-dir "$T/data" folded --app "$1" --pid "$WL" -o "$T/$1.folded" \
		2>"$T/folded.err" || fail "emberctl folded --app $1 failed: $(cat "$T/folded.err")"
}
# count APP REGEX: samples under APP whose stack matches REGEX (all: ".")
count() { awk -v re="$2" '$0 ~ re { n += $NF } END { print n + 0 }' "$T/$1.folded"; }
for app in first second third; do folded "$app"; done
spin='(^|;)spin_before_exec(;| |$)' work='(^|;)work_[ab](;| |$)'
f_all=$(count first .) f_spin=$(count first "$spin")
s_all=$(count second .) s_spin=$(count second "$spin")
t_all=$(count third .) t_work=$(count third "$work") t_spin=$(count third "$spin")
echo "first: $f_all samples ($f_spin in spin_before_exec); second: $s_all ($s_spin);" \
	"third: $t_all ($t_work in work_a/work_b, $t_spin in spin_before_exec)"
# ~60 samples each at least (the ticks waited for): 40 allows for lost samples; the image's
# own code is nearly all of it (its start-up and the exec's kernel frames are the rest)
[ "$f_all" -ge 40 ] || fail "the first image has $f_all samples under its application (want >= 40)"
[ $((f_spin * 100)) -ge $((f_all * 90)) ] ||
	fail "the first image's samples are not named: $f_spin of $f_all in spin_before_exec"
[ "$s_all" -ge 40 ] || fail "the second image has $s_all samples under its application (want >= 40)"
[ $((s_spin * 100)) -ge $((s_all * 90)) ] ||
	fail "the second image's samples are not named: $s_spin of $s_all in spin_before_exec"
[ "$t_all" -ge 40 ] || fail "the third image has $t_all samples (want >= 40)"
[ $((t_work * 100)) -ge $((t_all * 90)) ] ||
	fail "the third image's samples are not its own: $t_work of $t_all in work_a/work_b"
[ "$t_spin" -le 1 ] || fail "$t_spin samples of an earlier image landed in the third's application"
pass "two execs before one drain: first $f_spin/$f_all, second $s_spin/$s_all, third $t_work/$t_all, each in its application"
