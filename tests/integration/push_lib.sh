# SPDX-License-Identifier: MIT
# Helpers of the push tests: run the fake collector, arm its faults, read its
# store, and compare what arrived with what emberd stored. Sourced after lib.sh.

COLLECTOR=$EMBER_BUILD/tests/fake_collector/fake_collector
COLL_PORT=0
COLL_STORE=$T/store
APP=fxab
# This test's fx_work_ab carries WORK_TAG on its command line and the [app] matches it:
# another test's fx_work_ab on the same host must not add profiles to the comparison.
WORK_TAG=${T##*/}

require_collector() {
	[ -x "$COLLECTOR" ] || skip "fake_collector not built (libmicrohttpd-dev missing)"
	command -v curl >/dev/null || fail "curl not installed"
}

# start_collector [ARGS]: runs the collector on $COLL_PORT (0 = ephemeral), storing into
# $COLL_STORE ($T/store); sets COLL_PID, COLL_PORT and COLL_URL.
start_collector() {
	rm -f "$T/port"
	"$COLLECTOR" --store "$COLL_STORE" --port "$COLL_PORT" --port-file "$T/port" "$@" \
		>>"$T/collector.log" 2>&1 &
	COLL_PID=$!
	PIDS+=("$COLL_PID")
	for _ in $(seq 1 100); do
		[ -s "$T/port" ] && break
		kill -0 "$COLL_PID" 2>/dev/null ||
			fail "fake_collector exited: $(tail -3 "$T/collector.log")"
		sleep 0.1
	done
	[ -s "$T/port" ] || fail "fake_collector did not start within 10 s"
	COLL_PORT=$(cat "$T/port")
	COLL_URL=http://127.0.0.1:$COLL_PORT
}

stop_collector() {
	kill "$COLL_PID" 2>/dev/null || true
	wait "$COLL_PID" 2>/dev/null || true
}

# coll_stat KEY: one counter of /admin/stats (0 when absent); fails (printing nothing)
# when the collector does not answer, e.g. while a refuse fault keeps its port closed.
coll_stat() {
	local stats
	stats=$(curl -fs -m 5 "$COLL_URL/admin/stats") || return 1
	awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' <<<"$stats"
}

# stat_ge KEY N: whether counter KEY has reached N (for wait_for).
stat_ge() {
	local v
	v=$(coll_stat "$1") && [ "$v" -ge "$2" ]
}

# coll_fault MODE [COUNT] [QUERY]: the next COUNT pushes get fault MODE.
coll_fault() {
	curl -fsS -m 5 -X POST "$COLL_URL/admin/fault?mode=$1&count=${2:-1}${3:+&$3}" >/dev/null ||
		fail "cannot arm fault $1"
}

# push_conf FILE [LINES]: only this test's fx_work_ab (run with "$WORK_TAG" as its last
# argument) is profiled, as $APP, pushed to the collector.
push_conf() {
	{
		# memory growth off unless asked (PUSH_GROWTH=N): a test that arms one fault
		# for "the next push" must know that push holds a CPU profile
		printf '[daemon]\nprofile = matched\ngrowth_fault_period = %s\n' "${PUSH_GROWTH:-0}"
		printf '[app "%s"]\nmatch.cmdline = *fx_work_ab*%s*\nlabel.team = a\n' "$APP" "$WORK_TAG"
		printf '[collector]\nurl = %s\n' "$COLL_URL"
		[ $# -lt 2 ] || printf '%s\n' "$2"
	} >"$1"
}

# stored_list: emberd's profiles of $APP, oldest first, as "START_MS SAMPLES".
stored_list() {
	local start samples
	"$EMBERCTL" --data-dir "$T/data" list --app "$APP" | awk '/ cpu / { print $1, $5 }' |
		while read -r start samples; do
			echo "$(date -u -d "$start" +%s%3N) $samples"
		done
}

# arrived_list: the CPU profiles the collector accepted for $APP, in arrival order,
# same form (its memory_growth profiles are pushed too, and left out here).
arrived_list() {
	[ -f "$COLL_STORE/index.tsv" ] || return 0
	awk -F '\t' -v s="service_name=$APP" '
		("," $3 ",") ~ ("," s ",") && ("," $3 ",") ~ /,__name__=process_cpu,/ {
			print substr($4, 1, length($4) - 6), $5 }' \
		"$COLL_STORE/index.tsv"
}

# wait_arrived SECONDS: until everything emberd stored arrived (at least one profile).
wait_arrived() {
	local end=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$end" ]; do
		stored_list >"$T/stored.txt"
		arrived_list >"$T/arrived.txt"
		[ -s "$T/stored.txt" ] &&
			sort -u "$T/arrived.txt" | cmp -s - <(sort "$T/stored.txt") && return 0
		sleep 0.5
	done
	return 1
}

# show_lists: both sides, for a failure message.
show_lists() {
	echo "stored by emberd (start_ms samples):"
	sed 's/^/  /' "$T/stored.txt"
	echo "arrived at the collector (arrival order):"
	sed 's/^/  /' "$T/arrived.txt"
	echo "collector stats:"
	curl -fsS -m 5 "$COLL_URL/admin/stats" 2>/dev/null | sed 's/^/  /' || true
}

# backlog_order: checks $T/arrived.txt drains oldest first. The uploader alternates
# the oldest and the newest pending profile (the newest must not wait behind a long
# backlog), so an arrival is "in order" when it is the oldest one not yet arrived,
# and two out-of-order arrivals in a row are an error. Prints the out-of-order count.
backlog_order() {
	awk 'NR == FNR { left[$1] = 1; next }
	     {
		min = ""
		for (k in left) if (min == "" || k + 0 < min + 0) min = k
		if ($1 == min) run = 0
		else { out++; if (++run > 1) bad = 1 }
		delete left[$1]
	     }
	     END { print out + 0; exit bad }' "$T/stored.txt" "$T/arrived.txt"
}
