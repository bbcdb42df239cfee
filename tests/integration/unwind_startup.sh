#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Stacks from emberd's first second (issue 45): workloads started together with emberd,
# as after an upgrade or a reboot, must have stacks in its first interval as complete as
# later. fx_boot_sort (no frame pointers: main -> boot_sort_rounds -> qsort ->
# boot_cmp_records) and fx_boot_copy (frame pointers, its time in libc's memcpy under
# boot_copy_buffers) start, in a unit's cgroup of their own, right before emberd; the
# profiles emberd writes are read with go tool pprof. Before: 90.1% of the sort's samples
# reached main (the rest their leaf alone, walked before their tables were in) and 93.3%
# of the copy's kept boot_copy_buffers. Now:
# - in the first interval as in those after, 98% of each fixture's samples complete
#   (through boot_sort_rounds or boot_copy_buffers to main), and every sample that is not
#   says why in a root frame ("[incomplete: no unwind tables]", "[execve]", ...); on a
#   host too starved for emberd to load the running processes' tables before it samples
#   (it says so), only the latter holds for the first interval;
# - emberd's own start-up (the kernel's verifier: bpf_check, do_check) is in no profile.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf
require_go

APP=ember-boot-$$
service_cgroup "$APP"
spawn_in "$CGROUP_DIR" "$FX/fx_boot_sort" 300
SORT=$!
spawn_in "$CGROUP_DIR" "$FX/fx_boot_copy" 300
COPY=$!
start_emberd --hz 99 --interval 4s
wait_intervals 3 # the first interval, and two whole ones after it: the steady state
kill "$SORT" "$COPY"
kill -TERM "$EMBERD_PID"
wait_emberd
app_windows "$APP"

tables_at_start && loaded=1 || loaded=
[ -n "$loaded" ] || echo "emberd sampled before every running process's tables were in (a" \
	"starved host): the first interval's stacks must say so, not be complete"
for w in first steady; do
	min=98
	[ "$w" = steady ] || [ -n "$loaded" ] || min=0
	for f in sort copy; do
		pprof_folded "$T/$w.pb.gz" "$T/$w.$f" "$([ $f = sort ] && echo "$SORT" || echo "$COPY")"
		# complete: through the workload, or main's own check of its CPU time (fx_boot_copy
		# calls clock_gettime from main: 1 sample in ~400 is there, complete, and 1 in
		# ~800 in its PLT stub, clock_gettime@plt, main's callee as well), or main's own
		# code, its leaf (its loop around them: 1 sample in ~400 under a busy host)
		silent "$w interval: fx_boot_$f" "$T/$w.$f" \
			";main;((boot_${f}_(rounds|buffers)|clock_gettime(@plt)?);|$)"
		# stacks the kernel could not keep (its map full: an interval stretched past what
		# it was sized for, on a starved host) are no walk's: said, and left out here
		grep -v '^\[lost user stack\]' "$T/$w.$f" >"$T/$w.$f.kept" || true
		expect_share "$T/$w.$f.kept" "$w interval: fx_boot_$f reaches main through boot_$f" \
			"$min" 15 ";main;boot_${f}_(rounds|buffers);"
	done
done
# emberd's start-up: the kernel's verifier in none of its own samples of the first
# interval (other emberds, other tests', may start meanwhile: theirs are theirs)
"$EMBERCTL" --data-dir "$T/data" export --type cpu --since "$(awk '$1 ~ /^20/ { print $1; exit }' \
	"$T/list")" --until "$(awk '$1 ~ /^20/ { n++ } n == 2 { print $1; exit }' "$T/list")" \
	-o "$T/all_first.pb.gz" 2>"$T/export.err" || fail "emberctl export failed: $(cat "$T/export.err")"
pprof_folded "$T/all_first.pb.gz" "$T/emberd_first.folded" "$EMBERD_PID"
verifier=$(awk '/(^|;)(bpf_check|do_check_common|do_check|bpf_prog_load)(;| [0-9]+$)/ { n += $NF }
	END { print n + 0 }' "$T/emberd_first.folded")
echo "first interval: $verifier of emberd's samples in the kernel's verifier"
[ "$verifier" -eq 0 ] || FAILED+=("emberd's start-up sampled: $verifier samples in the verifier")
finish "stacks of processes running at emberd's start complete from its first interval"
