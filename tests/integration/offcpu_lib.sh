# SPDX-License-Identifier: MIT
# Shared by the off-CPU tests (offcpu_*.sh): run one mode of fx_offcpu under emberd with
# off-CPU time on, and read its profiles with go tool pprof. Sourced after lib.sh.

# offcpu_run MODE [ARG]: runs fx_offcpu MODE once its unwind tables are loaded, then
# stops emberd (which stores the last interval) and exports the process's offcpu and cpu
# profiles to $T/off.pb.gz and $T/cpu.pb.gz; fx_offcpu's own figures are in $T/fx.out.
# OFFCPU_STATUS: also wait for its run-queue line in the status file, copied then to
# $T/snap/status; emberctl status of that copy goes to $T/status.txt, and its --format
# prometheus (checked by promcheck) to $T/prom: the three hold the same figures.
# OFFCPU_PERIOD: offcpu_sample_period (1, every switch-out: exact answers; "default": the
# daemon's default). cpu_budget = 0 in every off-CPU test but offcpu_budget.sh: they test
# the sampling whole, which the default budget would lower on a loaded host.
offcpu_run() {
	printf '[daemon]\noffcpu = on\ncpu_budget = 0\n' >"$T/ember.conf"
	[ "${OFFCPU_PERIOD:-1}" = default ] ||
		echo "offcpu_sample_period = ${OFFCPU_PERIOD:-1}" >>"$T/ember.conf"
	start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
	grep -q "off-CPU time: 1 switch-out in" "$T/emberd.log" ||
		fail "emberd did not load the off-CPU sampler"
	"$FX/fx_offcpu" "$@" >"$T/fx.out" &
	WL=$!
	PIDS+=("$WL")
	# the fixture spins until its tables are loaded: its stacks are then walked as on a
	# host where emberd has been running (frame pointers alone lose them: none kept)
	wait_for grep -Eq "unwinder: pid $WL: .*\(0 to build\)" "$T/emberd.log" ||
		fail "emberd did not load fx_offcpu's unwind tables within 30 s"
	kill -USR1 "$WL"
	# the status file's run-queue line of fx_offcpu, from an interval while it runs
	if [ -n "${OFFCPU_STATUS:-}" ]; then
		wait_for grep -Eq '^runq fx_offcpu [1-9][0-9]* [1-9]' "$T/run/status" ||
			fail "no run-queue delay of fx_offcpu in the status file: $(grep ^runq "$T/run/status")"
		offcpu_status_snap
	fi
	wait "$WL" || fail "fx_offcpu $1 exited with status $?"
	kill "$EMBERD_PID"
	wait_emberd
	offcpu_export offcpu "$T/off.pb.gz"
	offcpu_export cpu "$T/cpu.pb.gz"
}

# offcpu_status_snap: emberd's status file now copied to $T/snap/status; emberctl status of
# that copy in $T/status.txt, and its --format prometheus (checked by promcheck) in $T/prom.
offcpu_status_snap() {
	mkdir -p "$T/snap"
	cp "$T/run/status" "$T/snap/status"
	"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" >"$T/status.txt" 2>&1 ||
		fail "emberctl status failed: $(cat "$T/status.txt")"
	"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" --format prometheus \
		>"$T/prom" 2>"$T/prom.err" || fail "emberctl status --format prometheus failed: $(cat "$T/prom.err")"
	"$EMBER_BUILD/tests/tools/promcheck" -m "$T/prom" >"$T/promcheck" 2>&1 ||
		fail "not Prometheus text: $(cat "$T/promcheck")"
}

# offcpu_young_run FLAG: fx_short_lived FLAG 20 (20 young children, one after another, that
# wait as soon as they start) under emberd with off-CPU time on, every switch-out sampled,
# once emberd is settled as on a host where it has been running: the host's libraries'
# tables are built (at start-up it builds them all, and a child's tables wait behind that
# queue). Then stops emberd (which stores the last interval) and sets CHILDREN to the
# children's pids.
offcpu_young_run() {
	printf '[daemon]\noffcpu = on\noffcpu_sample_period = 1\ncpu_budget = 0\n' >"$T/ember.conf"
	start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
	settled() {
		intervals_at_least 2 &&
			[ "$(awk '$1 == "unwind" && $2 == "tables_built" { print $3 }' "$T/run/status")" = 0 ]
	}
	wait_for settled || fail "emberd still builds unwind tables after 30 s"
	"$FX/fx_short_lived" "$1" 20 >"$T/fx.out" 2>&1 ||
		fail "fx_short_lived $1 failed: $(tail -3 "$T/fx.out")"
	kill -TERM "$EMBERD_PID"
	wait_emberd
	grep "deferred walks since the start" "$T/emberd.log" | tail -1 | sed 's/.*: deferred/deferred/'
	CHILDREN=$(awk '$1 == "child" { print $2 }' "$T/fx.out")
	[ "$(echo "$CHILDREN" | wc -w)" -eq 20 ] || fail "fx_short_lived $1 did not name its 20 children"
}

# offcpu_export TYPE FILE: the stored TYPE profiles of fx_offcpu ($WL) merged into FILE.
offcpu_export() {
	"$EMBERCTL" --data-dir "$T/data" export --type "$1" --pid "$WL" -o "$2" ||
		fail "export of the $1 profile failed"
}

# ns_of FILE SAMPLE ARGS...: the nanoseconds a filtered (-tagfocus/-focus ARGS) pprof
# listing of SAMPLE accounts for.
ns_of() {
	local f=$1 s=$2
	shift 2
	pprof_top "$f" -sample_index="$s" -unit=ns "$@" | sed 's/\([0-9]\)ns\b/\1/g' >"$T/ns.txt"
	local v
	v=$(shown_of "$T/ns.txt")
	echo "${v:-0}"
}

# fx_sum THREAD COLUMN: the sum of column 2 (wall ns) or 3 (cpu ns) of THREAD's lines.
fx_sum() {
	awk -v t="$1" -v c="$2" '$1 == t { s += $c } END { printf "%.0f\n", s }' "$T/fx.out"
}

# pct A B: A as a whole percentage of B (0 when B is 0).
pct() {
	if [ "$2" -gt 0 ]; then echo $(($1 * 100 / $2)); else echo 0; fi
}

# within A B TOL: whether percentages A and B differ by TOL points at most.
within() {
	local d=$(($1 - $2))
	[ "${d#-}" -le "$3" ]
}
