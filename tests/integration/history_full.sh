#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The history itself fills its file system (issue 15): the data directory on a
# small tmpfs, a file taking all of it but a little, and emberd's profiles (1 s
# intervals) fill the rest. With a collector that accepts, profiles are sent:
# a store that fails for room gives back the reserve (history.db-reserve),
# deletes the oldest sent profiles and is retried, and storing goes on; what
# was deleted is counted (status file, emberctl status, Prometheus) and
# logged, the newest are kept without a gap. Then the collector answers 503:
# new profiles stay unsent, within retention: once the sent ones are gone,
# nothing more is deleted, the stores fail (state store-failing, the backlog
# holds them) and that shows. Then the collector answers again with the disk still full: the
# uploader cannot mark what it sent, keeps those verdicts in memory and pushes no profile
# twice; with room again, they are written. A SIGTERM exits 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector
command -v mount >/dev/null || skip "no mount"
mkdir -p "$T/data"
mount -t tmpfs -o size=8m,mode=0700 ember-test "$T/data" || skip "cannot mount a tmpfs"
umount_data() {
	[ -z "${EMBERD_PID:-}" ] || kill "$EMBERD_PID" 2>/dev/null || true
	[ -z "${EMBERD_PID:-}" ] || wait "$EMBERD_PID" 2>/dev/null || true
	umount "$T/data" 2>/dev/null || umount -l "$T/data" 2>/dev/null || true
}
AT_EXIT=('umount_data' "${AT_EXIT[@]}")

failing() { [ "$(status_key state)" = "store-failing" ]; }
not_failing() { [ "$(status_key state)" = "running" ] && [ "$(status_key store.backlog)" = 0 ]; }
backlog_at_least() { [ "$(status_key store.backlog)" -ge "$1" ] 2>/dev/null; }
# stored: profiles stored since the start (the status file's "profiles LAST TOTAL")
stored() { awk '$1 == "profiles" { print $3 }' "$T/run/status" 2>/dev/null; }
stored_at_least() { [ "$(stored)" -ge "$1" ] 2>/dev/null; }
pruned_at_least() { [ "$(status_key store.pruned)" -ge "$1" ] 2>/dev/null; }
# rows: the profiles the history holds now, every type
rows() {
	"$EMBERCTL" --data-dir "$T/data" list 2>/dev/null |
		awk '$1 ~ /^[0-9][0-9][0-9][0-9]-/ { n++ } END { print n + 0 }'
}
# oldest_cpu: the start of the oldest cpu profile, RFC 3339
oldest_cpu() { "$EMBERCTL" --data-dir "$T/data" list --app "$APP" | awk '/ cpu /{ print $1; exit }'; }
# leave_free KIB: the filler takes all of the tmpfs but KIB
leave_free() {
	dd if=/dev/zero of="$T/data/fill" bs=64k status=none 2>/dev/null || true
	truncate -s "-$1K" "$T/data/fill" || fail "cannot shrink the filler"
}

# reserve_taken: the reserve file holds its blocks (max_size 1 MiB: 128 KiB)
reserve_taken() { [ "$(($(stat -c '%b * %B' "$T/data/history.db-reserve" 2>/dev/null || echo 0)))" -ge 131072 ]; }
# wait_for_long CMD...: wait_for, for up to 90 s (sent profiles go a reserve's half at a time)
wait_for_long() { wait_for "$@" || wait_for "$@" || wait_for "$@"; }
sent_at_least() { [ "$(status_key collector.sent)" -ge "$1" ] 2>/dev/null; }

start_collector
# long retention and a max_size that the disk fills first: only room bounds the history;
# 4096 distinct stacks at 999 Hz: profiles of some KiB each, the history grows fast
{
	printf '[daemon]\nprofile = matched\ngrowth_fault_period = 0\n'
	printf 'retention = 30d\nmax_size = 1MiB\n'
	printf '[app "%s"]\nmatch.cmdline = *fx_many_stacks*%s*\n' "$APP" "$WORK_TAG"
	printf '[collector]\nurl = %s\n' "$COLL_URL"
} >"$T/ember.conf"
"$FX/fx_many_stacks" 600 "$WORK_TAG" >/dev/null &
PIDS+=("$!")
start_emberd --config "$T/ember.conf" --interval 1s --hz 999
wait_for sent_at_least 3 || fail "emberd did not push 3 profiles"
wait_for reserve_taken || fail "no reserve taken: $(ls -ls "$T/data")"
first=$(oldest_cpu)
[ -n "$first" ] || fail "no cpu profile in the history"

# --- sent profiles go to make room --------------------------------------------------------
leave_free 96
n=$(stored)
wait_for_long pruned_at_least 1 || fail "nothing deleted to make room: $(ls -ls "$T/data")"
pruned=$(status_key store.pruned)
n=$(stored)
wait_for stored_at_least $((n + 5)) || fail "storing stopped after making room once"
wait_for_long pruned_at_least $((pruned + 1)) || fail "room made only once while the disk stays full"
[ "$(status_key store.dropped)" = 0 ] || fail "$(status_key store.dropped) profiles dropped"
grep -q "deleted the [0-9]* oldest profiles that may go .* to make room" "$T/emberd.log" ||
	fail "making room was not logged"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" >"$T/st.txt" 2>&1 || true
grep -Eq "made room +[0-9]+ profiles deleted" "$T/st.txt" ||
	fail "emberctl status does not show what was deleted: $(grep -i store "$T/st.txt")"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" --format prometheus \
	>"$T/st.prom" 2>/dev/null || true
"$EMBER_BUILD/tests/tools/promcheck" -m "$T/st.prom" >"$T/promcheck" 2>&1 ||
	fail "promcheck: $(head -3 "$T/promcheck")"
grep -Eq "^ember_store_pruned_total [1-9]" "$T/st.prom" || fail "no ember_store_pruned_total"
# what went is the oldest; what is kept: every interval from the oldest kept on
"$EMBERCTL" --data-dir "$T/data" list --app "$APP" >"$T/list" 2>&1 || fail "emberctl list failed"
kept=$(awk '/ cpu /{ print $1; exit }' "$T/list")
[ "$(date -u -d "$kept" +%s)" -gt "$(date -u -d "$first" +%s)" ] ||
	fail "the oldest profile ($first) is still there: not the oldest went"
windows=$(awk '/ cpu /{ print $1 }' "$T/list" | sort -u | wc -l)
last=$(awk '/ cpu /{ t = $1 } END { print t }' "$T/list")
span=$(($(date -u -d "$last" +%s) - $(date -u -d "$kept" +%s) + 1))
[ "$windows" -ge $((span - 1)) ] ||
	fail "$windows cpu profiles from $kept to $last ($span s of 1 s intervals): some were lost"
pass "sent profiles made room: $(status_key store.pruned) deleted, the oldest, counted and" \
	"shown; $windows intervals kept from $kept to $last"

# --- unsent within retention: none may go --------------------------------------------------
# Once the sent profiles are gone, the stores fail; a checkpoint may still give back what the
# WAL held beyond its pages now and then (a store or two), but no unsent profile goes.
coll_fault 503 1000000 # every push answered 503: new profiles stay unsent
said() { grep -q "nothing may be deleted to make room in .* profiles not yet pushed" "$T/emberd.log"; }
failed_at_least() { [ "$(status_key store.failed)" -ge "$1" ] 2>/dev/null; }
wait_for_long said || fail "the log does not say that nothing could go, with only unsent profiles"
# Profiles pushed before the 503s may still be in the history (phase 1 may have said the
# above whenever the sent ones ran out before the newest were pushed): they may go first.
# The history holds only unsent ones once three stores in a row failed deleting nothing (a
# failed store deletes what sent profiles it finds); only then is what goes counted.
settled=
for _ in $(seq 10); do
	pruned=$(status_key store.pruned)
	failed=$(status_key store.failed)
	wait_for failed_at_least $((failed + 3)) || fail "the stores did not go on failing"
	[ "$(status_key store.pruned)" = "$pruned" ] && settled=1 && break
done
[ -n "$settled" ] || fail "profiles still deleted after 10 rounds of 3 failed stores under 503s"
unsent=$(rows)
failed=$(status_key store.failed)
wait_for failed_at_least $((failed + 3)) || fail "the stores did not go on failing"
wait_for backlog_at_least 1 || fail "the backlog holds nothing while stores fail"
[ "$(status_key store.pruned)" = "$pruned" ] ||
	fail "$(($(status_key store.pruned) - pruned)) more deleted with only unsent profiles left"
[ "$(rows)" -ge "$unsent" ] || fail "the history held $unsent profiles, now $(rows): unsent ones went"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" >"$T/st.txt" 2>&1 || true
grep -Eq "store +(FAILING since|working; last failure at) .*No space left on device" "$T/st.txt" ||
	fail "emberctl status does not show the failure: $(grep store "$T/st.txt")"
pass "unsent profiles within retention: none deleted ($unsent kept), $(status_key store.failed)" \
	"failed stores, $(status_key store.backlog) profiles kept in memory"

# --- the collector back, the disk still full: no profile pushed twice ---------------------
# The disk is kept full to the last block (what a checkpoint gives back is taken again
# within 0.1 s): the uploader cannot write its verdicts (sent) either. It keeps them in
# memory and does not take those profiles again (before, a profile it could not mark sent
# was pushed again and again), up to UPLOADER_UNMARKED_MAX (256) of them. The backoff that
# phase 2's 503s grew (at most 5 min) runs out first.
keep_full() {
	while :; do
		dd if=/dev/zero of="$T/data/fill2" bs=4k oflag=append conv=notrunc status=none \
			2>/dev/null || true
		sleep 0.1
	done
}
keep_full &
FILL_PID=$!
PIDS+=("$FILL_PID")
p0=$(rows) # pending: once the sent ones went, every row is unsent
a0=$(coll_stat accepted) || fail "the collector does not answer"
want=$((p0 < 256 ? p0 : 256))
[ "$want" -ge 1 ] || fail "no unsent profile in the history"
coll_fault none
# snapshot: a copy of the status file taken while it shows kept verdicts (emberctl reads it)
snapshot() {
	[ "$(status_key collector.unmarked)" -gt 0 ] 2>/dev/null || return 0
	[ -s "$T/snap/status" ] && return 0
	mkdir -p "$T/snap"
	cp "$T/run/status" "$T/snap/status.tmp" && mv "$T/snap/status.tmp" "$T/snap/status"
}
arrived() { snapshot; stat_ge accepted $((a0 + want)); }
end=$((SECONDS + 330))
until arrived; do
	[ "$SECONDS" -lt "$end" ] ||
		fail "$(($(coll_stat accepted) - a0)) of the $p0 unsent profiles arrived in 330 s"
	sleep 0.5
done
# dups: profiles the collector accepted more than once (same labels, same start), every phase
dups() {
	awk -F '\t' '{ n[$3 "\t" $4]++ } END { for (k in n) if (n[k] > 1) print n[k] "x " k }' \
		"$COLL_STORE/index.tsv"
}
[ -z "$(dups)" ] || fail "profiles pushed more than once: $(dups | head -5)"
# with every block taken, the marks failed: they stay kept while the disk is full, and the
# status file (written each interval) shows them, as emberctl does
took_snapshot() { snapshot; [ -s "$T/snap/status" ]; }
wait_for took_snapshot || fail "no verdict was kept in memory (collector.unmarked stayed 0)"
seen=$(status_key collector.unmarked "$T/snap/status")
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/snap" >"$T/st.txt" 2>&1 || true
grep -Eq "push verdicts +$seen verdicts not yet written" "$T/st.txt" ||
	fail "emberctl status does not show $seen kept verdicts: $(grep -i push "$T/st.txt")"
grep -q "cannot record push verdicts in .*; kept in memory" "$T/emberd.log" ||
	fail "keeping verdicts in memory was not logged"
pass "collector back, disk full: $want unsent profiles arrived, each once" \
	"($(($(coll_stat accepted) - a0)) accepted, none twice); $seen verdicts seen kept in memory"

# --- room again: the kept verdicts are written --------------------------------------------
kill "$FILL_PID"
wait "$FILL_PID" 2>/dev/null || true
rm -f "$T/data/fill" "$T/data/fill2"
none_kept() { [ "$(status_key collector.unmarked)" = 0 ]; }
wait_for_long none_kept || fail "$(status_key collector.unmarked) verdicts still kept with room"
grep -q "push verdicts kept in memory are written" "$T/emberd.log" ||
	fail "writing the kept verdicts was not logged"
[ -z "$(dups)" ] || fail "profiles pushed more than once: $(dups | head -5)"
pass "room again: no verdict kept, no profile pushed twice ($(coll_stat accepted) accepted)"

kill -TERM "$EMBERD_PID"
wait_emberd
