#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Python script that imports a C extension after emberd read it, as scripts import what
# they need when they need it: json's encoder, _json.so, mapped 0.5 s of CPU into the
# process. Until emberd reads the process again, the walk meets the extension's frames
# outside every mapping it knows and steps from them by frame pointers, a guess (the
# extension keeps none). Debian's python3.11, no flags; 3 s of CPU in json.dumps at 99 Hz:
# - every sample through _json.so is whole (from _start) or says why at its root
#   ([incomplete: no unwind tables]); before, those walked before the read ended in
#   _json.so, silently (5% of them here, 7% of short json scripts' samples);
# - >= 85% are whole: the walk's first frame in the extension marks the process, and
#   emberd reads it again within ~100 ms (95-99.7% measured).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf
[ -x /usr/bin/python3.11 ] || fail "Debian's python3.11 is not installed (scripts/install-deps.sh)"

start_emberd --hz 99 --interval 1h
/usr/bin/python3.11 "$(dirname "$0")/late_import.py" 0.5 3 >"$T/py.out" 2>&1 &
WL=$!
PIDS+=("$WL")
wait "$WL" || fail "python3.11 late_import.py failed: $(tail -3 "$T/py.out")"
stop_and_fold "$WL:$T/py.folded"
JSON=';(_json[.]cpython-[^;]*[+]0x[0-9a-f]+|encoder_[a-z_]+);'
silent "samples through _json.so" "$T/py.folded" '^;_start;' "$JSON"
expect_share "$T/py.folded" "samples through _json.so whole, from _start" 85 150 '^;_start;' "$JSON"
finish "python3.11: a C extension imported late is walked whole, or said not to be"
