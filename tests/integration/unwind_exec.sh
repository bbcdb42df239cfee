#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process emberd sampled and read (a shell spinning) execs fx_qsort (as
# distributions build: no frame pointers). Its first sample after the exec must
# report it again, whichever CPU takes it, so that the new program's tables are
# loaded and its frames named: at least 95% of fx_qsort's samples reach main, as
# in unwind_qsort. The shell's samples from before the exec, in the same interval, stay
# named by the shell's own mappings (bash's execute_command), not left unnamed, and in
# the shell's application (bash), not the new program's (fx_qsort).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

# the shell spins until emberd loaded its tables (after its first sample), and 2 s at least
# (bash's table, built at emberd's start for the shells running then, is loaded within
# 0.1 s: a dozen samples before the exec, too few to judge by), then execs
start_emberd --hz 99 --interval 5s -v
bash -c 'while [ ! -e "$1" ] || [ "$SECONDS" -lt 2 ]; do :; done; exec "$2" 8' spin "$T/go" \
	"$FX/fx_qsort" \
	>"$T/exec.out" 2>&1 &
WL=$!
PIDS+=("$WL")
# all its tables loaded, not just read (when bash's table had to be built, the shell once
# exec'd first: 2 runs in 20 with the other CPU busy)
exec_when_loaded "the shell"
# fx_qsort's samples: not the shell's (whose main is bash's, its frames bash's own)
grep -vE '(^|;)(execute_command|bash\+0x[0-9a-f]+)(;| )' "$T/exec.folded" >"$T/qsort.folded" || true
expect_share "$T/qsort.folded" "fx_qsort after the exec reaches main through sort_rounds" 95 300 \
	';main;sort_rounds;' ';(sort_rounds|cmp_records|main);'
# the shell's samples from before the exec, drained after emberd read fx_qsort's mappings:
# named by the shell's image (bash's execute_command), not left as raw addresses
awk '{ s = $0; sub(/ [0-9]+$/, "", s) }
	s ~ /(^|;)execute_command(;|$)/ { named += $NF; next }
	s ~ /(^|;)0x[0-9a-f]+(;|$)/ { raw += $NF }
	END { print named + 0, raw + 0 }' "$T/exec.folded" >"$T/shell"
read -r named raw <"$T/shell"
echo "the shell before the exec: $named samples through execute_command, $raw with unnamed frames"
[ "$named" -ge 10 ] && [ "$raw" -le $((named / 10)) ] ||
	FAILED+=("the shell's samples from before the exec: $named named, $raw with unnamed frames")
# and classified as the shell's: application bash, none of them in fx_qsort's
app_samples() { # APP PATTERN: APP's samples of the process whose stack matches PATTERN
	"$EMBERCTL" --data-dir "$T/data" folded --app "$1" --pid "$WL" -o "$T/app.folded" \
		2>"$T/folded.err" || { echo 0; return; }
	awk -v p="$2" '{ s = $0; sub(/ [0-9]+$/, "", s) } s ~ p { n += $NF } END { print n + 0 }' \
		"$T/app.folded"
}
in_bash=$(app_samples bash '(^|;)execute_command(;|$)')
in_qsort=$(app_samples fx_qsort '(^|;)execute_command(;|$)')
echo "the shell before the exec: $in_bash samples in application bash, $in_qsort in fx_qsort"
[ "$in_bash" -ge $((named * 9 / 10)) ] && [ "$in_qsort" -le $((named / 10)) ] ||
	FAILED+=("the shell's samples from before the exec: $in_bash of $named in bash's application, $in_qsort in fx_qsort's (want them in bash's)")
finish "a sampled process that execs is read again: the new program's stacks are whole"
