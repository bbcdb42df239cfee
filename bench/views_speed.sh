#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# How long emberctl's views take over a busy host's day: writes (once) a history
# of PROFILES cpu profiles of 10 s shaped like a busy host's (tests/tools/mkbusy:
# 2000 distinct stacks of depth 20-40 per profile over 200 processes), then
# times `emberctl top` over all of it R times and prints the median, the peak
# RSS, and the peak RSS over an eighth of the window (streaming: memory follows
# the distinct stacks, not the number of profiles). Prints figures; asserts only
# that the commands succeed, so it is not a timed test. With -R it first builds
# the hourly rollups emberd would have built (tests/tools/mkrollups, once: it
# only adds the missing ones) and the views read them; without -R the views
# read every raw profile (--no-rollups), as before rollups existed.
#
# usage: bench/views_speed.sh [-n PROFILES] [-r REPEATS] [-H DIR] [-b BUILD] [-c COMMAND] [-R]
#   -n  profiles in the history                  (default 8640: 24 h of 10 s)
#   -r  runs of each command; the median is kept (default 3)
#   -H  where the history is (written there when absent;
#       default ${TMPDIR:-/tmp}/ember-views-bench-PROFILES, kept for the next run)
#   -b  the build directory with cli/emberctl and tests/tools/mkbusy (default build)
#   -c  the view to time, quoted (default "top -n 20")
#   -R  with rollups (built first when missing)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PROFILES=8640
REPEAT=3
HIST=
BUILD=$HERE/../build
VIEW="top -n 20"
ROLLUPS=0

usage() { sed -n '14,21p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while getopts 'n:r:H:b:c:Rh' opt; do
	case $opt in
	n) PROFILES=$OPTARG ;;
	r) REPEAT=$OPTARG ;;
	H) HIST=$OPTARG ;;
	b) BUILD=$OPTARG ;;
	c) VIEW=$OPTARG ;;
	R) ROLLUPS=1 ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
HIST=${HIST:-${TMPDIR:-/tmp}/ember-views-bench-$PROFILES}
CTL=$BUILD/cli/emberctl
MK=$BUILD/tests/tools/mkbusy
MKR=$BUILD/tests/tools/mkrollups
die() { echo "views_speed: $*" >&2; exit 1; }
[[ -x $CTL && -x $MK ]] || die "build emberctl and mkbusy first ($CTL, $MK)"

if [[ ! -e $HIST/history.db ]]; then
	echo "views_speed: writing $PROFILES profiles into $HIST (about 3 s per 100)" >&2
	"$MK" -n "$PROFILES" "$HIST" >&2 || die "mkbusy failed"
fi

# run ARGS...: one timed run of emberctl; prints "SECONDS PEAK_RSS_KB CPU_SECONDS"
# (CPU: user + sys, steadier than wall time on a shared machine)
run() {
	local t0 t1 rss=0 cpu=0
	t0=$(date +%s.%N)
	if [[ -x /usr/bin/time ]]; then
		/usr/bin/time -f '%M %U %S' -o "$HIST/.rss" "$CTL" -d "$HIST" "$@" >"$HIST/.out" \
			2>"$HIST/.err" || die "emberctl $* failed: $(cat "$HIST/.err")"
		read -r rss u s < <(tail -1 "$HIST/.rss")
		cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
	else
		"$CTL" -d "$HIST" "$@" >"$HIST/.out" 2>"$HIST/.err" ||
			die "emberctl $* failed: $(cat "$HIST/.err")"
	fi
	t1=$(date +%s.%N)
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $rss $cpu"
}

# median of the first column of stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

read -ra view <<<"$VIEW"
if ((ROLLUPS)); then
	[[ -x $MKR ]] || die "build mkrollups first ($MKR)"
	echo "views_speed: building the missing rollups of $HIST" >&2
	t0=$(date +%s.%N)
	"$MKR" "$HIST" >&2 || die "mkrollups failed"
	echo "views_speed: rollups built in $(awk -v a="$t0" -v b="$(date +%s.%N)" \
		'BEGIN { printf "%.1f", b - a }') s" >&2
	how="with rollups"
else
	view+=(--no-rollups)
	how="raw profiles"
fi
: >"$HIST/.runs"
for _ in $(seq 1 "$REPEAT"); do
	run "${view[@]}" >>"$HIST/.runs"
done
secs=$(median <"$HIST/.runs")
cpu=$(awk '{ print $3 }' "$HIST/.runs" | median)
rss=$(awk '{ print $2 }' "$HIST/.runs" | sort -n | tail -1)
head -1 "$HIST/.out"
# what the history holds, from the header ("8640 cpu profiles from ...")
merged=$(awk 'NR == 1 { print $1 }' "$HIST/.out")
# an eighth of the profiles: same distinct stacks (mostly), 8 times fewer rows
eighth=$((1767225600 + merged * 10 / 8))
read -r esecs erss ecpu < <(run "${view[@]}" --until "$eighth")
echo "emberctl $VIEW over $merged profiles ($how): median $secs s of $REPEAT runs" \
	"($(awk '{ printf "%s ", $1 }' "$HIST/.runs")s), median CPU $cpu s, peak RSS" \
	"$((rss / 1024)) MiB; over the first eighth: $esecs s, CPU $ecpu s, peak RSS" \
	"$((erss / 1024)) MiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
