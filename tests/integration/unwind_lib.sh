# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers of the unwind_* tests (sourced after lib.sh): run a fixture under emberd
# at 99 Hz and measure, from its folded stacks, the share of samples whose stack
# has the expected shape. bench/unwind.sh sources it too, for share.

# fold_pid PID FILE: PID's stacks in emberd's history (start_emberd's), folded into FILE.
fold_pid() {
	"$EMBERCTL" --data-dir "$T/data" folded --pid "$1" -o "$2" 2>"$T/folded.err" ||
		fail "emberctl folded failed: $(cat "$T/folded.err")"
}

# stop_and_fold PID:FILE...: stops emberd (it stores its last interval), then folds each
# PID's stacks into its FILE.
stop_and_fold() {
	local pf
	kill -TERM "$EMBERD_PID"
	wait_emberd
	for pf in "$@"; do fold_pid "${pf%%:*}" "${pf#*:}"; done
}

# profile_fixture NAME CMD...: runs CMD (it stops by itself) under a fresh emberd at
# 99 Hz, stops emberd (which stores its last interval), and writes the folded stacks
# of CMD's process to $T/NAME.folded. Sets WL to CMD's pid.
profile_fixture() {
	local name=$1
	shift
	start_emberd --hz 99 --interval 5s
	"$@" >"$T/$name.out" 2>&1 &
	WL=$!
	PIDS+=("$WL")
	wait "$WL" || fail "$name exited with status $?: $(tail -3 "$T/$name.out")"
	stop_and_fold "$WL:$T/$name.folded"
}

# share FOLDED WANT [OF]: of the samples whose stack matches the ERE OF (all if
# empty), those whose stack also matches the ERE WANT. Stacks are matched as
# ";root;...;leaf;" (kernel frames follow the user leaf), so ";main;" is a whole
# frame. Prints "WANT_SAMPLES OF_SAMPLES PERCENT".
share() {
	WANT=$2 OF=${3:-} awk '
		{
			n = $NF
			s = $0
			sub(/ [0-9]+$/, "", s)
			s = ";" s ";"
			if (ENVIRON["OF"] != "" && s !~ ENVIRON["OF"])
				next
			of += n
			if (s ~ ENVIRON["WANT"])
				want += n
		}
		END { printf "%d %d %.1f\n", want, of, of ? 100 * want / of : 0 }' "$1"
}

# expect_share FOLDED WHAT MIN_PERCENT MIN_SAMPLES WANT [OF]: fails unless at least
# MIN_PERCENT of at least MIN_SAMPLES samples (those matching OF) match WANT;
# prints the figure either way, and the most frequent stacks that miss.
expect_share() {
	local f=$1 what=$2 min=$3 least=$4 want=$5 of=${6:-} r
	r=$(share "$f" "$want" "$of")
	set -- $r
	echo "$what: $1 of $2 samples ($3%), want >= $min%"
	[ "$2" -ge "$least" ] || fail "$what: only $2 samples, want >= $least"
	if awk -v p="$3" -v m="$min" 'BEGIN { exit !(p < m) }'; then
		echo "most frequent stacks that miss:"
		WANT=$want OF=$of awk '{ s = $0; sub(/ [0-9]+$/, "", s); s = ";" s ";"
			if ((ENVIRON["OF"] == "" || s ~ ENVIRON["OF"]) && s !~ ENVIRON["WANT"]) print $NF "\t" $0 }' "$f" |
			sort -nr | head -5 | cut -f2- | cut -c1-300 | sed 's/^/  /' || true # SIGPIPE: head
		FAILED+=("$what: $3% < $min%")
	fi
}

FAILED=()
# exec_when_loaded WHAT: once emberd has loaded every unwind table of $WL (0 to build: walked
# before, its samples would be raw addresses), creates $T/go, which it waits for to exec
# fx_qsort; waits for that to end, stops emberd, and writes the process's folded stacks to
# $T/exec.folded. WHAT names $WL's first program in a failure.
exec_when_loaded() {
	loaded() { grep -Eq "unwinder: pid $WL: .* mappings with a table \(0 to build\)" "$T/emberd.log"; }
	wait_for loaded || fail "emberd never loaded $1's unwind tables"
	touch "$T/go"
	wait "$WL" || fail "fx_qsort exited with status $?: $(tail -3 "$T/exec.out")"
	stop_and_fold "$WL:$T/exec.folded"
}

# finish PASSMSG: fails with every expect_share that missed, else passes
finish() {
	[ "${#FAILED[@]}" -eq 0 ] || fail "$(IFS=';'; echo "${FAILED[*]}")"
	pass "$1"
}

# --- the first interval against the steady state (unwind_startup*.sh) ---

# spawn_in CGROUP_DIR CMD...: runs CMD in that cgroup, in the background ($! is its pid)
spawn_in() {
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$@" >>"$T/fx.out" 2>&1 &
	PIDS+=("$!")
}

# app_windows APP: exports APP's cpu profiles of emberd's first interval to $T/first.pb.gz
# and of the whole ones after it (from 0.5 s into the second, the listed times being
# rounded, to the start of the last, which the stop cuts) to $T/steady.pb.gz
app_windows() {
	local starts s1
	"$EMBERCTL" --data-dir "$T/data" list --type cpu --app "$1" >"$T/list" 2>&1 ||
		fail "emberctl list failed: $(cat "$T/list")"
	mapfile -t starts < <(awk '$1 ~ /^20[0-9][0-9]-/ { print $1 }' "$T/list" | sort -u)
	[ "${#starts[@]}" -ge 3 ] || fail "only ${#starts[@]} intervals of $1: $(cat "$T/list")"
	s1=$(date -u -d "${starts[1]}" +%s%3N)
	s1=$(date -u -d "@$(((s1 + 500) / 1000)).$(printf %03d $(((s1 + 500) % 1000)))" \
		+%Y-%m-%dT%H:%M:%S.%3NZ)
	app_export "$1" first "${starts[0]}" "${starts[1]}"
	app_export "$1" steady "$s1" "${starts[-1]}"
}
app_export() { # APP NAME SINCE UNTIL
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --app "$1" --since "$3" --until "$4" \
		-o "$T/$2.pb.gz" 2>"$T/export.err" || fail "emberctl export failed: $(cat "$T/export.err")"
}

# pprof_folded PROFILE OUT [PID]: the samples (of PID) as go tool pprof -traces reads
# them, one "root;...;leaf count" line per sample (kernel frames below the user leaf)
pprof_folded() {
	go tool pprof -traces -symbolize=none -sample_index=samples ${3:+-tagfocus="pid=$3"} "$1" \
		2>"$T/pprof.err" >"$T/traces" || fail "go tool pprof rejected $1: $(cat "$T/pprof.err")"
	awk '
		function flush() { if (n) { s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]; print s, c }; n = 0 }
		/^-+\+/ { flush(); next }
		!n && /^ +[0-9]+ +[^ ]/ { c = $1; sub(/^ +[0-9]+ +/, ""); f[++n] = $0; next }
		n && substr($0, 1, 13) == "             " && substr($0, 14, 1) != " " {
			f[++n] = substr($0, 14)
		}
		END { flush() }' "$T/traces" >"$2"
}

# The root frames that say why a stack is not whole (daemon/interval/drain.h).
MARKED='^\[(incomplete: [a-z ]+|execve|truncated|lost user stack)\](;| [0-9]+$)'

# silent WHAT FOLDED WANT [OF]: of the samples whose stack matches the ERE OF (all if
# empty), fails (FAILED) when one neither matches WANT nor says why at its root (MARKED);
# stacks matched as share() matches them. Prints the count, and the first of them.
silent() {
	local bad n
	bad=$(WANT=$3 OF=${4:-} M=$MARKED awk '{ s = ";" $0; sub(/ [0-9]+$/, ";", s)
		if ((ENVIRON["OF"] == "" || s ~ ENVIRON["OF"]) && s !~ ENVIRON["WANT"] &&
		    $0 !~ ENVIRON["M"]) print }' "$2")
	n=$(awk '{ n += $NF } END { print n + 0 }' <<<"$bad")
	echo "$1: $n samples incomplete without a frame saying so"
	[ "$n" -eq 0 ] && return
	head -3 <<<"$bad" | cut -c1-400 | sed 's/^/  /'
	FAILED+=("$1: $n samples silently incomplete")
}

# wait_intervals N: emberd's status counts N intervals, polled for 2 min (a starved host
# stretches an interval: 38 s for 4 s seen beside soak tests)
wait_intervals() {
	for _ in $(seq 1 240); do
		intervals_at_least "$1" && return 0
		sleep 0.5
	done
	fail "fewer than $1 intervals within 2 min"
}

# tables_at_start: emberd loaded the tables of every process running at its start before
# it sampled (else, on a host too starved to build them within its bound, their first
# samples say they were walked without)
tables_at_start() { grep -q "processes running at start loaded in" "$T/emberd.log"; }
