#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fx_dlopen (no frame pointers) loads libfx_nofp.so (none either) after emberd has
# read its mappings, then works in it. The walk meets frames outside every mapping
# it was given and marks the process stale; the mark's event wakes emberd, whose
# unwinder reads the process again and loads the library's table. With an interval
# longer than the fixture's life, nothing but that event triggers the read: at least
# 90% of the samples in nofp_work must be complete (main -> after_dlopen -> nofp_work),
# where frame pointers alone give none. The fixture stays alive until the drain, which
# names the library's frames from its mappings read again. The samples walked before that
# read (frame pointers from a library it did not know: a guess) say so at their root,
# "[incomplete: no unwind tables]", never pass for complete ones.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/unwind_lib.sh"
require_bpf

start_emberd --hz 99 --interval 1h -v
run_dlopen "$FX/libfx_nofp.so" 4
before=$DLOPEN_READS
kill -TERM "$EMBERD_PID"
wait_emberd
kill "$WL"
after=$(grep -c "unwinder: pid $WL: " "$T/emberd.log")
echo "unwinder reads of fx_dlopen: $before before the dlopen, $after in all"
[ "$after" -gt "$before" ] || fail "fx_dlopen's mappings were not read again after its dlopen"
fold_pid "$WL" "$T/dlopen.folded"
expect_share "$T/dlopen.folded" "nofp_work under main -> after_dlopen" 90 200 \
	';main;after_dlopen;nofp_work;' ';nofp_work;'
silent "samples in nofp_work" "$T/dlopen.folded" ';main;after_dlopen;nofp_work;' ';nofp_work;'
finish "fx_dlopen: a library loaded after emberd read the process is unwound by its table"
