#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Push to a real Pyroscope (or Alloy), only when EMBER_TEST_PYROSCOPE_URL names
# one: every profile is answered 200 and the application shows up in its labels.
. "$(dirname "$0")/lib.sh"
[ -n "${EMBER_TEST_PYROSCOPE_URL:-}" ] ||
	skip "EMBER_TEST_PYROSCOPE_URL is not set: no live Pyroscope to push to"
require_bpf
. "$(dirname "$0")/push_lib.sh"
URL=${EMBER_TEST_PYROSCOPE_URL%/}
APP=ember_live_$$

{
	printf '[daemon]\nprofile = matched\n'
	printf '[app "%s"]\nmatch.cmdline = *fx_work_ab*%s*\n' "$APP" "$WORK_TAG"
	printf '[collector]\nurl = %s\n' "$URL"
	[ -z "${EMBER_TEST_PYROSCOPE_TENANT:-}" ] ||
		printf 'tenant = %s\n' "$EMBER_TEST_PYROSCOPE_TENANT"
} >"$T/ember.conf"
start_emberd --config "$T/ember.conf" --hz 99 --interval 2s -v
"$FX/fx_work_ab" 8 "$WORK_TAG"
sleep 2.5	# the interval holding the workload's end is stored
drained() {
	"$EMBERCTL" --data-dir "$T/data" status >"$T/status.txt" 2>&1 &&
		grep -q 'queue  *0 pending' "$T/status.txt"
}
wait_for drained || { cat "$T/status.txt"; fail "the queue did not drain within 30 s"; }
n=$("$EMBERCTL" --data-dir "$T/data" list --app "$APP" | grep -c ' cpu ' || true)
kill "$EMBERD_PID"
wait_emberd
sent=$(sed -n 's/.*sent \([0-9]*\),.*/\1/p' "$T/status.txt")
rej=$(sed -n 's/.*rejected \([0-9]*\),.*/\1/p' "$T/status.txt")
[ "${sent:-0}" -ge "$n" ] && [ "${rej:-0}" -eq 0 ] ||
	{ cat "$T/status.txt"; fail "sent ${sent:-?} of $n profiles, ${rej:-?} rejected"; }
pass "$URL answered 200 to $sent pushes, none rejected"

# Pyroscope's querier: the application is a service_name value now.
now=$(date +%s%3N)
hdr=()
[ -z "${EMBER_TEST_PYROSCOPE_TENANT:-}" ] || hdr=(-H "X-Scope-OrgID: $EMBER_TEST_PYROSCOPE_TENANT")
curl -fsS -m 10 "${hdr[@]}" -H 'Content-Type: application/json' \
	-d "{\"name\":\"service_name\",\"start\":$((now - 600000)),\"end\":$now}" \
	"$URL/querier.v1.QuerierService/LabelValues" >"$T/values.json" ||
	fail "the querier did not answer"
grep -q "\"$APP\"" "$T/values.json" ||
	fail "service_name $APP not found: $(head -c 300 "$T/values.json")"
pass "Pyroscope lists service_name=$APP"
