#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Logging to the journal without systemd: in a private mount namespace a tmpfs
# hides /run and notifylisten binds /run/systemd/journal/socket, the
# socket sd_journal_send(3) writes to. emberd, its stderr a file whose
# device:inode JOURNAL_STREAM names, must send its lines there with PRIORITY,
# SYSLOG_IDENTIFIER and CODE_ fields; with a JOURNAL_STREAM naming another
# stream it must write to stderr.
. "$(dirname "$0")/lib.sh"
require_bpf
LISTEN=$EMBER_BUILD/tests/tools/notifylisten
[ -x "$LISTEN" ] || fail "notifylisten not built at $LISTEN"
command -v unshare >/dev/null || fail "unshare missing (util-linux)"

printf '[daemon]\ninterval = 1s\n' >"$T/ember.conf"
export LISTEN EMBERD T
unshare -m --propagation private bash -c '
	set -e
	mount -t tmpfs -o size=1m tmpfs /run
	mkdir -p /run/systemd/journal
	"$LISTEN" /run/systemd/journal/socket >"$T/journal.log" 2>"$T/listen.err" &
	listener=$!
	for _ in $(seq 1 50); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
	: >"$T/emberd.log"
	export JOURNAL_STREAM=$(stat -c "%d:%i" "$T/emberd.log")
	"$EMBERD" --config "$T/ember.conf" --data-dir "$T/data" --duration 6s 2>>"$T/emberd.log" &
	emberd=$!
	for _ in $(seq 1 300); do grep -q "MESSAGE=sampling" "$T/journal.log" && break; sleep 0.1; done
	printf "[daemon]\nhz = 0\n" >"$T/ember.conf"
	kill -HUP $emberd
	wait $emberd || echo "emberd exited with $?" >>"$T/emberd.log"
	# another stream: stderr
	JOURNAL_STREAM=1:1 "$EMBERD" --data-dir "$T/data" --duration 1s 2>"$T/stderr.log" || true
	kill $listener
' || fail "the namespace script failed: $(cat "$T/listen.err" 2>/dev/null)"

line() { grep -m1 "$1" "$T/journal.log" || true; }
ready=$(line 'MESSAGE=sampling [0-9]* CPUs')
[ -n "$ready" ] || fail "no 'sampling' entry reached the journal socket: $(head -5 "$T/journal.log")"
for f in 'PRIORITY=6' 'SYSLOG_IDENTIFIER=emberd' 'CODE_FILE=[^|]*daemon/loop/main.c' 'CODE_LINE=[0-9]' \
	'CODE_FUNC=main'; do
	echo "$ready" | grep -Eq "(^| |\|)$f" || fail "the 'sampling' entry lacks $f: $ready"
done
# the caller's place only, not log.c's
[ "$(echo "$ready" | grep -o 'CODE_FUNC=' | wc -l)" -eq 1 ] || fail "CODE_FUNC twice: $ready"
pass "info line as a journal entry: PRIORITY=6, SYSLOG_IDENTIFIER, CODE_FILE/LINE/FUNC"

refused=$(line 'MESSAGE=configuration refused')
[ -n "$refused" ] || fail "no 'configuration refused' warning in the journal"
echo "$refused" | grep -q '|PRIORITY=4|' || fail "a warning without PRIORITY=4: $refused"
echo "$refused" | grep -q '|CODE_FUNC=request_reload|' || fail "wrong CODE_FUNC: $refused"
line 'MESSAGE=stopped after storing' | grep -q '|PRIORITY=6|' || fail "no 'stopped' entry"
grep -q "sampling" "$T/emberd.log" && fail "journal lines also went to stderr: $(head -3 "$T/emberd.log")"
grep -q "exited with" "$T/emberd.log" && fail "$(cat "$T/emberd.log")"
pass "warning as PRIORITY=4 from request_reload; nothing duplicated on stderr"

grep -q '^emberd: sampling [0-9]* CPUs' "$T/stderr.log" ||
	fail "with JOURNAL_STREAM naming another stream, no 'emberd: sampling' on stderr: $(head -3 "$T/stderr.log")"
n=$(grep -c 'MESSAGE=sampling' "$T/journal.log")
[ "$n" -eq 1 ] || fail "$n 'sampling' entries in the journal: the second run wrote there too"
pass "JOURNAL_STREAM of another stream: plain stderr"
