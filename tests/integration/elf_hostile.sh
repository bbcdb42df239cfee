#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hostile binaries (issue 47, items 1-3), each run by an unprivileged user while emberd
# samples under the memory limit its unit sets:
# - symhole, strhole: fx_busy whose .symtab, or .strtab, claims 1 GiB over a sparse file's
#   hole (libelf would malloc and read it all);
# - dlprog: fx_busy stripped, its .gnu_debuglink naming a debug file beside it that is not
#   its own (the CRC differs) and whose .symtab claims 1 GiB over a hole;
# - dlfifo: fx_busy stripped, its debug file a link to a FIFO (as it could be to
#   /dev/watchdog, which an open() alone arms): emberd must not open it for reading, which
#   a writer blocked on the FIFO would see (item 6);
# - bigreg (fx_cfi_bigreg): stripped, its entry's CFI names register 2^28 - 12;
# - bigsyms: a program whose 600,000 functions take more than a binary's share of the cache;
# - control: fx_busy, started last, as the same user.
# emberd must keep its pid, its peak RSS well under the limit, every interval on time,
# name the control's burn, the entry of bigreg _start (from its FDE), leave what it
# refused unnamed, and count the binary over its share (or over what its user's share had
# left) in emberctl status.
. "$(dirname "$0")/hostile_lib.sh"
require_bpf
require_go
command -v setpriv >/dev/null || fail "setpriv not installed (util-linux)"
for t in objcopy strip cc; do command -v $t >/dev/null || fail "$t not installed"; done
[ -x "$FX/fx_busy" ] && [ -x "$FX/fx_cfi_bigreg" ] && [ -x "$FX/tools/mkhostile" ] ||
	fail "fx_busy, fx_cfi_bigreg or mkhostile not built under $FX"
INTERVAL_MS=2000
# half the unit's MemoryMax: what emberd holds, and what it parses of the whole host's
# processes meanwhile (other tests' too); the hostile files took 1 to 4 GiB before
HWM_MAX_KIB=$((256 * 1024))

# 1 GiB of whole symbols: libelf refuses a table that is not a multiple of its entries
SYMTAB_GIB=$((24 * ((1 << 30) / 24)))

hostile_dir
B=$T/bin
"$FX/tools/mkhostile" hole "$FX/fx_busy" "$B/symhole" .symtab $SYMTAB_GIB
"$FX/tools/mkhostile" hole "$FX/fx_busy" "$B/strhole" .strtab $((1 << 30))
objcopy --only-keep-debug "$FX/fx_busy" "$B/dl.debug"
strip --strip-all -o "$B/dlprog" "$FX/fx_busy"
objcopy --add-gnu-debuglink="$B/dl.debug" "$B/dlprog"
"$FX/tools/mkhostile" hole "$B/dl.debug" "$B/dl.hostile" .symtab $SYMTAB_GIB
mv "$B/dl.hostile" "$B/dl.debug"
strip --strip-all -o "$B/dlfifo" "$FX/fx_busy"
mkdir -p "$T/dbg" && objcopy --only-keep-debug "$FX/fx_busy" "$T/dbg/dlfifo.debug"
objcopy --add-gnu-debuglink="$T/dbg/dlfifo.debug" "$B/dlfifo" # names dlfifo.debug
mkfifo "$B/fifo"
ln -s "$B/fifo" "$B/dlfifo.debug"
cp "$FX/fx_cfi_bigreg" "$B/bigreg"
cp "$FX/fx_busy" "$B/control"
# 600,000 functions: 24 bytes each (names are read back from the file, not held), 14 MB of
# symbols, over the 12 MiB a binary may take of the 24 MiB cache
printf '.text\n.macro fn\n.globl %s_\\@\n.type %s_\\@, @function\n%s_\\@: ret\n.size %s_\\@, 1\n.endm\n.rept 600000\nfn\n.endr\n.section .note.GNU-stack,"",@progbits\n' \
	f f f f >"$B/fns.S"
cc -O2 -D_GNU_SOURCE -I"$EMBER_SRC/tests/fixtures" -o "$B/bigsyms" "$EMBER_SRC/tests/fixtures/busy.c" \
	"$B/fns.S" || fail "cannot build bigsyms"
chmod 755 "$B"/*

start_bounded_emberd --hz 99 --interval 2s -v
hwm_start=$(hwm_kib "$EMBERD_PID")
ticks_start=$(cpu_ticks "$EMBERD_PID")

declare -A PID
# run NAME ARGS: runs $B/NAME as the hostile user in the background.
run() {
	local n=$1; shift
	(as_hostile "$B/$n" "$@" >"$T/$n.out") &
	PID[$n]=$!
	PIDS+=("$!")
}
# a writer's open of the FIFO returns once anything opens it for reading
(exec 3>"$B/fifo" && echo opened >"$T/fifo_opened") &
FIFO_WRITER=$!
PIDS+=("$FIFO_WRITER")
run symhole cpu:2
run dlfifo cpu:2
run strhole cpu:2
run dlprog cpu:2
run bigreg
run bigsyms cpu:4
intervals_after 2 # bigsyms was seen and refused before the control starts
run control cpu:2
for n in symhole strhole dlprog dlfifo bigsyms control; do
	wait "${PID[$n]}" || fail "$n failed"
done
intervals_after 2 # their last samples are drained
kill "${PID[bigreg]}"
wait "${PID[bigreg]}" 2>/dev/null || true
intervals_after 1
pid_alive "$EMBERD_PID" || fail "emberd died (pid $EMBERD_PID gone)"
hwm=$(hwm_kib "$EMBERD_PID")
cpu=$(($(cpu_ticks "$EMBERD_PID") - ticks_start))
"$EMBERCTL" --data-dir "$T/data" status --runtime-dir "$T/run" >"$T/status.txt" ||
	fail "emberctl status failed"
kill "$EMBERD_PID"
wait_emberd

longest=$(longest_interval_ms)
echo "emberd ($(uname -r)): VmHWM $((hwm_start / 1024)) -> $((hwm / 1024)) MiB," \
	"CPU $cpu ticks of $(getconf CLK_TCK)/s, longest interval $longest ms of $INTERVAL_MS"
[ "$hwm" -le "$HWM_MAX_KIB" ] || fail "emberd's peak RSS $((hwm / 1024)) MiB is over $((HWM_MAX_KIB / 1024)) MiB"
[ "$longest" -le $((2 * INTERVAL_MS + 1000)) ] ||
	fail "an interval lasted $longest ms where $INTERVAL_MS were due"

for n in symhole strhole dlprog dlfifo bigreg bigsyms control; do pid_top "${PID[$n]}" "$T/$n.top"; done
for n in symhole strhole dlprog dlfifo bigsyms control; do
	[ "$(total_of "$T/$n.top")" -gt 0 ] || fail "$n was not profiled"
done
c=$(flat_of "$T/control.top" burn)
echo "control: burn $c of $(total_of "$T/control.top"); bigreg: _start $(cum_of "$T/bigreg.top" _start) of $(total_of "$T/bigreg.top")"
[ "$c" -gt 0 ] || fail "the control process's burn is unnamed: $(head -20 "$T/control.top")"
[ "$(cum_of "$T/bigreg.top" _start)" -gt 0 ] ||
	fail "bigreg's entry is not named _start from its FDE: $(head -20 "$T/bigreg.top")"
# a table whose strings are refused, a debug file whose CRC differs, a binary over its
# share: their own burn is unnamed (the hole's .symtab holds no symbol at all)
for n in symhole strhole dlprog dlfifo bigsyms; do
	[ "$(flat_of "$T/$n.top" burn)" -eq 0 ] || fail "$n's burn was named: from which table?"
done
[ ! -e "$T/fifo_opened" ] || fail "emberd opened the FIFO dlfifo's debug file links to"
kill "$FIFO_WRITER" 2>/dev/null || true
line=$(grep '^  refused' "$T/status.txt" || true)
echo "status: ${line# *}"
# counted by the tightest limit it met: its own share, or what its user's (nobody's, whose
# other hostile binaries are charged too) had left
n=$(sed -n 's/.*binaries \([0-9]*\) over their share, \([0-9]*\) over.*/\1 \2/p' <<<"$line" |
	awk '{ print $1 + $2 }')
[ "${n:-0}" -ge 1 ] ||
	fail "the binary over its share is not counted: $(cat "$T/status.txt")"
pass "hostile binaries: emberd kept its pid, peak RSS $((hwm / 1024)) MiB, intervals <= $longest ms"
