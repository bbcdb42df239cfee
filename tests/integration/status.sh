#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# emberctl status against a live emberd (private data and runtime dirs): the
# daemon section (hz, samples of the last interval, processes, RSS, BPF map
# memory, which follows the unwind rows as tables load and a capture's maps while
# it runs), the same numbers in --format prometheus (checked by promcheck),
# "stale" while emberd is stopped, "not running" after it exits or when its pid
# is gone, and a low memory_limit that makes it shrink its caches and say so.
. "$(dirname "$0")/lib.sh"
require_bpf
PROMCHECK=$EMBER_BUILD/tests/tools/promcheck
[ -x "$PROMCHECK" ] || fail "promcheck not built at $PROMCHECK"
RUN=$T/run
ncpu=$(nproc)

# prom_value NAME{LABELS} FILE: the sample's value
prom_value() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }

"$EMBERCTL" status --help | grep -q -- '--format' || fail "status --help does not document --format"
"$EMBERCTL" status --help | grep -q 'textfile' || fail "status --help does not show node_exporter's use"
"$EMBERD" --help | grep -q -- '--runtime-dir' || fail "emberd --help does not document --runtime-dir"

# --- a live daemon: 99 Hz, 1 s intervals, one CPU kept busy ----------------------
"$FX/fx_busy" 60 >/dev/null &
BUSY=$!
PIDS+=("$BUSY")
# the default configuration (memory growth on): the sample counts below are the
# sampling clock's alone, whatever else emberd profiles
start_emberd --hz 99 --interval 1s --runtime-dir "$RUN"
[ -f "$RUN/status" ] || fail "no status file right after start-up"
for _ in $(seq 1 200); do
	n=$(status_key intervals || true)
	[ "${n:-0}" -ge 4 ] && break
	sleep 0.1
done
[ "${n:-0}" -ge 4 ] || fail "the status file did not reach 4 intervals in 20 s (intervals=$n)"

# one snapshot, read by both formats: they must carry the same numbers
mkdir -p "$T/snap"
cp "$RUN/status" "$T/snap/status"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" >"$T/text" ||
	fail "emberctl status failed: $(cat "$T/text")"
EMBER_RUNTIME_DIR=$T/snap "$EMBERCTL" --data-dir "$T/data" status --format prometheus \
	>"$T/prom" || fail "emberctl status --format prometheus failed"
"$PROMCHECK" -m "$T/prom" >"$T/promcheck" 2>&1 || fail "not Prometheus text: $(cat "$T/promcheck")"
cat "$T/text"

grep -q "^emberd: *running, pid $EMBERD_PID," "$T/text" || fail "status does not say running with pid $EMBERD_PID"
grep -q "99 Hz per CPU, one profile per app every 1s" "$T/text" || fail "status does not show 99 Hz and 1s"
samples=$(status_key samples "$T/snap/status")
procs=$(status_key processes_tracked "$T/snap/status")
rss=$(status_key memory.rss "$T/snap/status")
maps=$(status_key memory.bpf_map_bytes "$T/snap/status")
# fx_busy alone gives 99 a second on its CPU; other CPUs add what else runs there. Samples
# scale with the interval's real length: on a starved host one runs late (a 1 s interval
# took 1.5 s or more; its profiles cover all of it) and the next one is short (the timer
# keeps its grid). Its length is its stored CPU profiles' (the last to end before the
# snapshot was written): the bounds, 60 and ncpu x 99 x 1.5 for 1 s, widen with it.
upd_ms=$(($(status_key updated_ns "$T/snap/status") / 1000000))
"$EMBERCTL" --data-dir "$T/data" list --type cpu | awk '$3 == "cpu" { print $1, $2 }' >"$T/rows"
len=$(paste -d' ' <(cut -d' ' -f1 "$T/rows" | date -u -f - +%s%3N) <(cut -d' ' -f2 "$T/rows") |
	awk -v u="$upd_ms" '{ d = $2 + 0	# "0.996s", "2s", "1m" (whole minutes)
		if ($2 ~ /m$/) d *= 60; else if ($2 ~ /h$/) d *= 3600
		e = $1 + d * 1000; if (e <= u && e > best) { best = e; len = d } }
		END { print len }')
[ -n "$len" ] || fail "no stored CPU profile ended before the snapshot: $(cat "$T/rows")"
read -r lo hi < <(awk -v l="$len" -v n="$ncpu" 'BEGIN {
	printf "%d %d\n", 60 * (l < 1 ? l : 1), n * 99 * 1.5 * (l > 1 ? l : 1) }')
[ "$samples" -ge "$lo" ] && [ "$samples" -le "$hi" ] ||
	fail "last interval has $samples samples in ${len}s: expected $lo..$hi (99 Hz, $ncpu CPUs)"
grep -q "last interval $samples samples in" "$T/text" || fail "text does not show $samples samples"
[ "$procs" -gt 0 ] || fail "no process tracked"
[ "$rss" -gt $((1 << 20)) ] || fail "RSS $rss is not plausible"
[ "$maps" -gt $((1 << 20)) ] || fail "BPF map memory $maps is not plausible (maps are MiBs)"
grep -q "bpf maps .* in [0-9]* maps (charged to the memory cgroup" "$T/text" || fail "no BPF map line"

[ "$(prom_value ember_up "$T/prom")" = 1 ] || fail "ember_up is not 1"
[ "$(prom_value ember_sampling_frequency_hertz "$T/prom")" = 99 ] || fail "hz differs in prometheus"
[ "$(prom_value ember_last_interval_samples "$T/prom")" = "$samples" ] || fail "samples differ"
[ "$(prom_value ember_processes_tracked "$T/prom")" = "$procs" ] || fail "processes differ"
[ "$(prom_value ember_process_resident_memory_bytes "$T/prom")" = "$rss" ] || fail "RSS differs"
[ "$(prom_value ember_bpf_map_memory_bytes "$T/prom")" = "$maps" ] || fail "map memory differs"
[ "$(prom_value 'ember_cache_limit_bytes{cache="binaries"}' "$T/prom")" = $((24 << 20)) ] ||
	fail "the binaries cache is not capped at 3/8 of the default 64 MiB"
for c in user_stack_unreadable kernel_stack_unreadable stack_map_full counts_map_full \
	process_event_lost first_sample_event_retried; do
	grep -q "^ember_bpf_drops_total{cause=\"$c\"} [0-9]" "$T/prom" || fail "no drop cause $c"
done
grep -q '^ember_bpf_map_bytes{map="counts0"} [1-9]' "$T/prom" || fail "no per-map memory"
[ "$(prom_value ember_history_profiles "$T/prom")" -gt 0 ] || fail "no history profiles in prometheus"

# --- the maps' memory follows their use, and a capture's maps come and go ---------
# map_bytes NAME [FILE]: the status's bytes of map NAME ("bpf_map NAME MAX BYTES")
map_bytes() { awk -v n="$1" '$1 == "bpf_map" && $2 == n { print $4 }' "${2:-$RUN/status}"; }
# kernel_rows: the unwind rows map's memlock as the kernel counts it (bpftool reads fdinfo)
kernel_rows() {
	bpftool map show -j 2>/dev/null | python3 -c 'import json, sys
print(sum(m.get("bytes_memlock", 0) for m in json.load(sys.stdin) if m.get("name") == "unwind_rows"))'
}
command -v bpftool >/dev/null || fail "bpftool not installed (scripts/install-deps.sh installs it)"
rows0=$(map_bytes unwind_rows)
[ -n "$rows0" ] || fail "no unwind_rows line in the status: $(grep bpf_map "$RUN/status")"
# python3.11's tables (its interpreter, libc's and the rest are loaded): the rows map grows
/usr/bin/python3.11 -c 'while True: pass' &
PY=$!
PIDS+=("$PY")
rows_grew() { krows=$(kernel_rows) && [ "${krows:-0}" -gt "$rows0" ]; }
wait_for rows_grew || fail "python3.11's tables never grew unwind_rows ($rows0 bytes)"
# no object was loaded: the status follows the map's memlock between its scans
rows_shown() { srows=$(map_bytes unwind_rows) && [ "${srows:-0}" -ge "$krows" ]; }
wait_for rows_shown ||
	fail "the status's unwind_rows stayed at $srows bytes, the kernel's at $krows (from $rows0)"
kill "$PY"
pass "unwind_rows followed in the status: $rows0 -> $srows bytes (kernel: $krows)"
# a capture loads its own maps: counted while it runs, not after
total0=$(status_key memory.bpf_map_bytes)
"$EMBERCTL" capture --runtime-dir "$RUN" --pid "$BUSY" --hz 99 --duration 6s -o "$T/cap.pb.gz" \
	>"$T/cap.out" 2>&1 &
CAP=$!
maps_added() { during=$(status_key memory.bpf_map_bytes) && [ "${during:-0}" -gt "$total0" ]; }
wait_for maps_added || fail "a capture's maps never showed in the status ($total0 bytes)"
wait "$CAP" || fail "the capture failed: $(cat "$T/cap.out")"
maps_gone() { after=$(status_key memory.bpf_map_bytes) && [ "${after:-0}" -lt "$during" ]; }
wait_for maps_gone || fail "the capture's maps stayed in the status: $after bytes"
pass "BPF map memory $total0 -> $during bytes during a capture -> $after after"

# stopped (SIGSTOP) for more than 3 intervals: stale, not running
kill -STOP "$EMBERD_PID"
sleep 4.5
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$RUN" >"$T/stale" || true
EMBER_RUNTIME_DIR=$T/run "$EMBERCTL" --data-dir "$T/data" status --format prometheus >"$T/prom2"
kill -CONT "$EMBERD_PID"
grep -q "STALE: pid $EMBERD_PID is alive" "$T/stale" || fail "a stopped emberd is not stale: $(head -2 "$T/stale")"
"$PROMCHECK" -m "$T/prom2" >/dev/null 2>&1 || fail "stale output is not Prometheus text"
[ "$(prom_value ember_up "$T/prom2")" = 0 ] || fail "ember_up is not 0 while stale"

# exits: not running, the history still shown; the snapshot's pid is gone
kill -TERM "$EMBERD_PID"
wait_emberd
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$RUN" >"$T/down" || fail "status failed after exit"
grep -q "^emberd: *not running (pid $EMBERD_PID stopped at" "$T/down" || fail "not 'not running': $(head -1 "$T/down")"
grep -q "^history: .*history.db, .*, [1-9][0-9]* profiles" "$T/down" || fail "no history section after exit"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" >"$T/gone"
grep -q "not running (pid $EMBERD_PID is gone" "$T/gone" || fail "a dead pid is not 'gone': $(head -1 "$T/gone")"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/none" >"$T/none.txt"
grep -q "not running (no status file" "$T/none.txt" || fail "missing status file not reported"
"$EMBERCTL" --data-dir "$T/data" status --format prometheus --runtime-dir "$RUN" >"$T/prom3"
"$PROMCHECK" -m "$T/prom3" >/dev/null || fail "down output is not Prometheus text"
[ "$(prom_value ember_up "$T/prom3")" = 0 ] || fail "ember_up is not 0 after exit"
if "$EMBERCTL" status --format json >/dev/null 2>&1; then fail "--format json accepted"; fi

# --- memory_limit = 16MiB: under emberd's baseline, so it shrinks and says so --------
printf '[daemon]\nmemory_limit = 16MiB\n' >"$T/low.conf"
start_emberd --config "$T/low.conf" --hz 99 --interval 1s --runtime-dir "$RUN"
for _ in $(seq 1 200); do
	n=$(status_key intervals || true)
	[ "${n:-0}" -ge 4 ] && break
	sleep 0.1
done
kill -0 "$EMBERD_PID" 2>/dev/null || fail "emberd died under memory_limit = 16MiB"
[ "${n:-0}" -ge 4 ] || fail "no 4 intervals under memory_limit = 16MiB"
cp "$RUN/status" "$T/snap/status"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" >"$T/low" || fail "status failed"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" --format prometheus >"$T/lowprom"
"$PROMCHECK" -m "$T/lowprom" >/dev/null || fail "low-limit output is not Prometheus text"
grep -E "^  (memory|shrinks|caches)" "$T/low"
events=$(status_key memory.shrink_events "$T/snap/status")
[ "$(status_key memory.limit "$T/snap/status")" = $((16 << 20)) ] || fail "memory_limit not 16 MiB"
[ "$(prom_value 'ember_cache_limit_bytes{cache="binaries"}' "$T/lowprom")" = $((6 << 20)) ] ||
	fail "the binaries cache is not capped at 6 MiB"
runs=0 logged=0
low_rss=$(status_key memory.rss "$T/snap/status")
peak=$(status_key memory.rss_peak "$T/snap/status" || echo "$low_rss")
[ "$(prom_value ember_memory_shrinks_total "$T/lowprom")" = "$events" ] || fail "shrinks differ"
# emberd's baseline is about the limit (14-16 MiB since kallsyms is no longer parsed). It
# compares the VmRSS it reads each interval, the one the status file shows; VmHWM (peak)
# tells nothing here: RSS can peak between two readings, and VmHWM lags VmRSS (seen: a
# shrink at RSS just over 16 MiB, VmHWM 16.0 MiB after). An RSS over the limit in the
# status must have shrunk; any shrink must be said and shown.
[ "$low_rss" -le $((16 << 20)) ] || [ "$events" -ge 1 ] ||
	fail "RSS $low_rss (peak $peak) over 16 MiB but no shrink"
if [ "$events" -ge 1 ]; then
	# over the limit at some point: it shrank, said so once per excursion, and shows it
	grep -Eq "memory: RSS (1[6-9]|[2-9][0-9]) MiB over memory_limit 16 MiB" "$T/emberd.log" ||
		fail "$events shrinks, but no log line of an RSS over the limit"
	grep -q "^  shrinks *$events time" "$T/low" || fail "text does not show the shrinks"
	runs=$(status_key memory.shrink_runs "$T/snap/status")
	logged=$(grep -c "over memory_limit" "$T/emberd.log" || true)
	[ "$logged" -le "$events" ] && [ "$logged" -ge 1 ] ||
		fail "$logged log lines for $events excursions over the limit ($runs shrinking intervals)"
else
	# emberd fitted in 16 MiB: nothing shrunk, and status must say so; check_symbolizer
	# covers the shrink itself
	grep -q "^  shrinks *never needed" "$T/low" || fail "text does not say no shrink was needed"
fi
kill -TERM "$EMBERD_PID"
wait_emberd

# --- a collector (the fake one, when built): pushes counted, no credentials shown ----
COLLECTOR=$EMBER_BUILD/tests/fake_collector/fake_collector
pushed=skipped
if [ -x "$COLLECTOR" ]; then
	"$COLLECTOR" --store "$T/store" --port 0 --port-file "$T/port" >"$T/collector.log" 2>&1 &
	PIDS+=("$!")
	for _ in $(seq 1 100); do [ -s "$T/port" ] && break; sleep 0.1; done
	[ -s "$T/port" ] || fail "fake_collector did not start"
	printf '[collector]\nurl = http://ember:s3cret@127.0.0.1:%s\n' "$(cat "$T/port")" >"$T/coll.conf"
	start_emberd --config "$T/coll.conf" --hz 99 --interval 1s --runtime-dir "$RUN"
	for _ in $(seq 1 200); do
		[ "$(status_key collector.sent || echo 0)" -ge 2 ] && break
		sleep 0.1
	done
	cp "$RUN/status" "$T/snap/status"
	"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" >"$T/coll"
	"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" --format prometheus >"$T/collprom"
	"$PROMCHECK" -m "$T/collprom" >/dev/null || fail "collector output is not Prometheus text"
	grep -q s3cret "$T/snap/status" "$T/coll" "$T/collprom" && fail "the collector's password is shown"
	[ "$(status_key collector.url "$T/snap/status")" = "http://127.0.0.1:$(cat "$T/port")/" ] ||
		fail "collector url: $(status_key collector.url "$T/snap/status")"
	pushed=$(prom_value 'ember_collector_pushes_total{result="sent"}' "$T/collprom")
	[ "${pushed:-0}" -ge 2 ] || fail "ember_collector_pushes_total{result=\"sent\"} is '$pushed'"
	grep -q "^  pushes  *since the start: sent $pushed," "$T/coll" || fail "no pushes line in the text"
	[ "$(prom_value ember_collector_up "$T/collprom")" = 1 ] || fail "ember_collector_up is not 1"
	kill -TERM "$EMBERD_PID"
	wait_emberd
fi
pass "emberctl status: pushes sent $pushed; $samples samples in a ${len}s interval at 99 Hz ($lo..$hi), RSS $((rss >> 20)) MiB, BPF maps $((maps >> 20)) MiB; 16 MiB limit: RSS $((low_rss >> 20)) MiB, $events excursion(s), $runs shrinking interval(s), $logged log line(s)"
