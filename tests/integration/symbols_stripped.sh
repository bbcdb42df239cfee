#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Stripped binaries, all running at once: fx_dynsym (stripped to .dynsym, its hot
# function exported) is named from .dynsym; fx_buildid from its debug file found by
# build-id under /usr/lib/debug/.build-id (installed here, removed on exit);
# fx_debuglink from the debug file its .gnu_debuglink names; fx_stripped (no
# symbols at all) stays unnamed, its frames in a mapping that carries its file name
# and build-id, but for its entry function, _start (the root of its stacks), which
# its entry point and CFI name.
. "$(dirname "$0")/lib.sh"
require_bpf
require_go
for f in fx_dynsym fx_buildid fx_buildid.debug fx_debuglink fx_debuglink.debug fx_stripped; do
	[ -f "$FX/$f" ] || fail "fixture $f not built in $FX"
done

build_id() { readelf -n "$1" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p' | head -1; }
id=$(build_id "$FX/fx_buildid")
[ -n "$id" ] || fail "fx_buildid has no build-id"
DBG=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
[ -e "$DBG" ] && fail "$DBG already exists: not overwriting it"
# Remove afterwards exactly what was created here.
made=$(mkdir -pv "$(dirname "$DBG")" | sed -n "s/^mkdir: created directory '\(.*\)'$/\1/p" | tac)
at_exit 'rm -f "$DBG"; for d in $made; do rmdir "$d"; done'
cp "$FX/fx_buildid.debug" "$DBG"
stripped_id=$(build_id "$FX/fx_stripped")

start_emberd --hz 99 --interval 2s
declare -A PID_OF
for f in fx_dynsym fx_buildid fx_debuglink fx_stripped; do
	"$FX/$f" cpu:5 &	# ~500 samples each, however loaded the host (see check_work_ab)
	PID_OF[$f]=$!
	PIDS+=("$!")
done
# Their exit status is their result's low bit: not a failure.
for f in "${!PID_OF[@]}"; do wait "${PID_OF[$f]}" || true; done
kill "$EMBERD_PID"	# SIGTERM: emberd stores the last interval, then exits 0
wait_emberd

# top FIXTURE: exports the fixture's profile and prints its -top table to $T/FIXTURE.top.
top() {
	"$EMBERCTL" --data-dir "$T/data" export --type cpu --pid "${PID_OF[$1]}" \
		-o "$T/$1.pb.gz" >/dev/null || fail "export of $1 failed"
	pprof_top "$T/$1.pb.gz" -sample_index=samples >"$T/$1.top"
}

# work_ab fixtures: work_a must be named and hold 3/4 of work_a + work_b. The share of n
# samples is binomial, sigma = sqrt(.75 x .25 / n): 10 points were 3.9 sigma at the ~290
# samples of cpu:3 (for the two fixtures, a failure in ~6000 runs), 5.1 at the ~490 of
# cpu:5. The band is 10 points or 5 sigma, the larger: 10 points with cpu:5's samples.
check_work_ab() {
	local f=$1 how=$2 a b share tol
	top "$f"
	a=$(flat_of "$T/$f.top" work_a)
	b=$(flat_of "$T/$f.top" work_b)
	[ "$((a + b))" -ge 100 ] || { head -15 "$T/$f.top"; fail "$f: work_a/work_b not named from $how"; }
	read -r share tol < <(share_band "$a" "$b" 10)
	echo "$f: work_a=$a work_b=$b of $(total_of "$T/$f.top") samples: work_a $share% (75 +- $tol%)"
	in_band "$share" "$tol" ||
		fail "$f: work_a share $a/($a+$b) = $share% is not 75 +- $tol% (10 points or 5 sigma)"
}

top fx_dynsym
hot=$(flat_of "$T/fx_dynsym.top" pie_hot_function)
shl=$(flat_of "$T/fx_dynsym.top" shlib_hot_function)
echo "fx_dynsym: pie_hot_function=$hot shlib_hot_function=$shl of $(total_of "$T/fx_dynsym.top")"
[ "$((hot + shl))" -ge 100 ] || { head -15 "$T/fx_dynsym.top"; fail "fx_dynsym not named from .dynsym"; }

check_work_ab fx_buildid "the build-id debug file"
check_work_ab fx_debuglink "the .gnu_debuglink debug file"

top fx_stripped
total=$(total_of "$T/fx_stripped.top")
grep -qE ' work_[ab]$' "$T/fx_stripped.top" && fail "fx_stripped has names it cannot have"
go tool pprof -raw -symbolize=none "$T/fx_stripped.pb.gz" >"$T/raw.txt" 2>"$T/pprof.err" ||
	fail "go tool pprof -raw rejected the profile: $(cat "$T/pprof.err")"
# -raw lists mappings as "ID: 0xSTART/0xLIMIT/0xOFFSET FILE BUILDID [FN]".
grep -E "/fx_stripped $stripped_id" "$T/raw.txt" >"$T/map.txt" ||
	{ sed -n '/^Mappings/,$p' "$T/raw.txt"; fail "no mapping of fx_stripped with build-id $stripped_id"; }
map_id=$(awk -F: 'NR == 1 { print $1 + 0 }' "$T/map.txt")
# Locations: "ID: 0xADDR M=MAPPING" with no function after them when unnamed.
unnamed=$(awk -v m="M=$map_id" '/^Locations/ { on = 1; next } /^Mappings/ { on = 0 }
	on && $3 == m && NF == 3 { n++ } END { print n + 0 }' "$T/raw.txt")
echo "fx_stripped: $total samples, $unnamed unnamed locations in mapping $map_id ($stripped_id)"
[ "$unnamed" -ge 1 ] || { sed -n '/^Locations/,$p' "$T/raw.txt" | head -30; fail "no unnamed location in fx_stripped's mapping"; }
[ "${total:-0}" -ge 100 ] || fail "fx_stripped has only $total samples"
# The mapping is rebased to its file offset (START == OFFSET), so that each unnamed
# address is file-relative: inside the file, where nm would find work_a and work_b.
size=$(stat -c %s "$FX/fx_stripped")
for addr in $(awk -v m="M=$map_id" '/^Locations/ { on = 1; next } /^Mappings/ { on = 0 }
	on && $3 == m { print $2 }' "$T/raw.txt"); do
	[ $((addr)) -lt "$size" ] || fail "fx_stripped's address $addr is not file-relative ($size bytes)"
done
read -r start off < <(awk '{ split($2, a, "/"); print a[1], a[3]; exit }' "$T/map.txt")
[ "$start" = "$off" ] || fail "fx_stripped's mapping starts at $start, not at its file offset $off"
# Its stacks start at _start; a few of its first ones in ld.so (named where libc6-dbg is).
"$EMBERCTL" --data-dir "$T/data" folded --pid "${PID_OF[fx_stripped]}" -o "$T/stripped.folded" \
	2>"$T/folded.err" || fail "emberctl folded --pid failed: $(cat "$T/folded.err")"
read -r rooted all < <(awk '{ n = $NF; t += n; if ($0 ~ /^_start;__libc_start_main;/) r += n }
	END { print r + 0, t + 0 }' "$T/stripped.folded")
echo "fx_stripped: $rooted of $all samples root at _start;__libc_start_main"
[ $((rooted * 100)) -ge $((all * 95)) ] ||
	{ head "$T/stripped.folded"; fail "fx_stripped: $rooted of $all samples root at _start (95% wanted)"; }
pass "dynsym $((hot + shl)), build-id and debuglink named, fully stripped left unnamed with its build-id"
