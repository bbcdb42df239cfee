#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process sampled only in its first 20 ms wakes emberd for nothing (issue 15): 1000
# short-lived processes (a fork, an exec of /bin/true, an exit: about 1 ms each) at
# 999 Hz, so that most of them are sampled. Each child that lived under 20 ms from its
# fork to its reaping is reported young, without a wakeup, never wakes emberd later, and
# is read at emberd's next wakeup, by then gone: it costs one failed open, is counted
# (processes_unread) and logged ("gone before its mappings were read"). Before, each
# sampled child woke emberd at once. A child a loaded host kept alive longer may be
# sampled older and wake emberd, as a process still running should (short_lived.sh: named).
# A child gone when read is named by its cgroup, which its event carries: the children run
# in a service's cgroup (system.slice/ember-young-PID.service, made for the test), and
# their samples are in that service's application, as those of children read alive are,
# never in "true" (their comm: a service's helper must not be split off from it) nor in
# "kernel" (the name of a process with neither executable nor comm). 1 s intervals, so that
# the churn spans a flip or two: a child whose exit emberd reads after a flip may have its
# last samples in the new buffers, and must still be named at the next drain (with the
# process dropped at the first, 3 runs of 6 put a sample in "true").
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
N=1000

start_emberd --hz 999 --interval 1s -v
wait_for intervals_at_least 1 || fail "no interval stored at 1 s"
w0=$(status_key proc_wakeups) u0=$(status_key processes_unread)
[ -n "$w0" ] && [ -n "$u0" ] || fail "no proc_wakeups or processes_unread in the status file"
SVC=ember-young-$$
service_cgroup "$SVC"
(
	echo "$BASHPID" >"$CGROUP_DIR/cgroup.procs"
	true_children "$N" "$T/children"
)
n=$(status_key intervals)
wait_for intervals_at_least $((n + 2)) || fail "no interval stored after the churn"
wakeups=$(($(status_key proc_wakeups) - w0)) unread=$(($(status_key processes_unread) - u0))

# pids of the children (of those in file $2) whose debug line matches sed pattern $1
pids_said() { sed -n "s/.*debug: pid \([0-9]*\): $1.*/\1/p" "$T/emberd.log" | sort -u | comm -12 "$2" -; }
awk '$2 < 20000 { print $1 }' "$T/children" | sort -u >"$T/young"
young=$(wc -l <"$T/young")
pids_said "first sample" "$T/young" >"$T/reported"
reported=$(wc -l <"$T/reported")
# a child's age when sampled is under the time from its fork to its reaping
said_young=$(pids_said "first sample ([a-zA-Z -]*, young" "$T/reported" | wc -l)
# a child sampled only in its exit is reported so (for its cgroup), never remembered as known
exiting=$(pids_said "first sample ([a-zA-Z -]*, exiting" "$T/reported" | comm -23 - <(pids_said "first sample ([a-zA-Z -]*, young" "$T/reported") | wc -l)
woke=$(pids_said "sampled again, older: woke emberd" "$T/young" | wc -l)
gone=$(pids_said "gone before its mappings were read" "$T/reported" | wc -l)
echo "children: $young of $N lived under 20 ms, $reported of them sampled and reported" \
	"($said_young young, $exiting only in their exit, $woke waking emberd), $gone of those" \
	"gone when read; $wakeups" \
	"wakeups by process events (the older children's and the host's), $unread processes" \
	"counted unread"
[ "$young" -ge $((N / 4)) ] ||
	fail "only $young of $N children lived under 20 ms: the host is too loaded to judge"
[ "$reported" -ge $((young / 4)) ] ||
	fail "only $reported of $young young children were reported at 999 Hz"
[ $((said_young + exiting)) -eq "$reported" ] ||
	fail "$((reported - said_young - exiting)) of $reported children that lived under 20 ms were reported as older (a wakeup each)"
[ "$woke" -eq 0 ] || fail "$woke children that lived under 20 ms woke emberd when sampled again"
# a wakeup for another cause (a drain, another process) may find one alive: seldom
[ "$gone" -ge $((reported * 9 / 10)) ] ||
	fail "only $gone of $reported young children reported were gone when read: were they read at once?"
[ "$unread" -ge "$gone" ] || fail "processes_unread rose by $unread, but $gone children were logged so"
kill -TERM "$EMBERD_PID"
wait_emberd
# samples of the children after their exec (comm "true", pid one of theirs: another /bin/true
# on the host is no child) in application $1's profiles
true_samples() {
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --app "$1" -o "$T/$1.pb.gz" 2>/dev/null ||
		{ echo 0; return; }
	# -raw: each sample's "count value: locations", then its labels
	go tool pprof -raw "$T/$1.pb.gz" 2>/dev/null |
		awk 'NR == FNR { kid["pid:[" $1 "]"] = 1; next }
		     $2 ~ /:$/ { n = $1; c = "" } $1 == "comm:[true]" { c = 1 }
		     $1 ~ /^pid:/ && c && ($1 in kid) { s += n } END { print s + 0 }' "$T/children" -
}
as_svc=$(true_samples "$SVC") as_true=$(true_samples true) as_kernel=$(true_samples kernel)
echo "samples of comm true: ${as_svc:-0} in application $SVC, ${as_true:-0} in true," \
	"${as_kernel:-0} in kernel"
[ "${as_kernel:-0}" -eq 0 ] || fail "${as_kernel} samples of the children are in application kernel"
[ "${as_true:-0}" -eq 0 ] ||
	fail "${as_true} samples of the children are in application true, not their service's"
[ "${as_svc:-0}" -ge $((reported / 4)) ] ||
	fail "only ${as_svc:-0} samples of the children in application $SVC, for $reported reported"
pass "$reported of $young young children reported without a wakeup, $gone of them gone when read and counted"
