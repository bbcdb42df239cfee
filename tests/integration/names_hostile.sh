#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Names are data, never structure (issue 47, item 5). User nobody runs a copy of fx_busy
# named "x", newline, "zone=evil", newline, "team=evil", newline, "region=evil", then an
# escape sequence that clears a terminal; no [app] matches it, so its service name comes
# from that file name. Pushed to a fake collector, its series must keep the configured
# zone and the external region, carry no team, and have a sanitized service_name; no
# series may say "evil" in a label of its own; emberctl list must print no escape byte;
# emberctl status must count the name sanitized. Its function burn is renamed to carry
# that escape sequence too: emberctl top and callers must name it without the byte.
. "$(dirname "$0")/hostile_lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_bpf
require_collector
command -v setpriv >/dev/null || fail "setpriv not installed (util-linux)"
[ -x "$FX/fx_busy" ] || fail "fx_busy not built at $FX/fx_busy"

hostile_dir
name=$'x\nzone=evil\nteam=evil\nregion=evil\e[2J'
fn=$'burn\e[2J'
objcopy --redefine-sym "burn=$fn" "$FX/fx_busy" "$T/bin/$name" || fail "objcopy failed"
chmod 755 "$T/bin/$name"

start_collector
cat >"$T/ember.conf" <<CONF
[daemon]
labels.zone = prod
[collector]
url = $COLL_URL
external_labels.region = eu-1
CONF
start_bounded_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
(as_hostile "$T/bin/$name" cpu:3 >"$T/x.out") &
X=$!
PIDS+=("$X")
wait "$X" || fail "the hostile program failed"
intervals_after 2

# service_name=x...: what the collector received for the hostile process
series() { awk -F '\t' '("," $3 ",") ~ /,service_name=x/ { print $3 }' "$COLL_STORE/index.tsv" 2>/dev/null; }
wait_for test -n "$(series)" || fail "no series of the hostile program arrived"
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" >"$T/status.txt" ||
	fail "emberctl status failed"
"$EMBERCTL" --data-dir "$T/data" list >"$T/list.txt" || fail "emberctl list failed"
"$EMBERCTL" --data-dir "$T/data" top -n 0 >"$T/top.txt" || fail "emberctl top failed"
"$EMBERCTL" --data-dir "$T/data" callers burn >"$T/callers.txt" 2>&1 ||
	fail "emberctl callers failed: $(cat -v "$T/callers.txt")"
pid_alive "$EMBERD_PID" || fail "emberd died (pid $EMBERD_PID gone)"
kill "$EMBERD_PID"
wait_emberd

s=$(series | sort -u | head -1)
echo "series: $s"
grep -q ',zone=prod,' <<<",$s," || fail "the configured zone was overridden: $s"
grep -q ',region=eu-1,' <<<",$s," || fail "the external region was overridden: $s"
grep -q ',team=' <<<",$s," && fail "the file name added a label: $s"
awk -F '\t' '{ n = split($3, l, ","); for (i = 1; i <= n; i++)
	if (l[i] ~ /=evil$/ && l[i] !~ /^service_name=/) { print $3; exit 1 } }' \
	"$COLL_STORE/index.tsv" || fail "a series has a label of the file name's"
grep -q $'\e' "$T/list.txt" && fail "emberctl list printed an escape byte"
grep -q $'\e' "$T/top.txt" "$T/callers.txt" && fail "emberctl top or callers printed an escape byte"
grep -qF 'burn?[2J' "$T/top.txt" ||
	fail "emberctl top does not name the function safely: $(grep -a burn "$T/top.txt" | cat -v)"
grep -qF 'callers of burn\x1b[2J' "$T/callers.txt" ||
	fail "emberctl callers does not name the function safely: $(head -3 "$T/callers.txt" | cat -v)"
grep -q ' x_zone=evil' "$T/list.txt" ||
	fail "emberctl list does not show the name sanitized: $(grep -a ' x' "$T/list.txt" | head -3)"
line=$(grep '^  refused' "$T/status.txt" || true)
echo "status: ${line# *}"
n=$(sed -n 's/.*names sanitized \([0-9]*\).*/\1/p' <<<"$line")
[ "${n:-0}" -ge 1 ] || fail "the sanitized name is not counted: $(cat "$T/status.txt")"
pass "a hostile file name stayed one label value, sanitized and counted"
