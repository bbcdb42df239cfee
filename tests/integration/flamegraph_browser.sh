#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Flame graphs in a real browser: mkflame writes a known tree as SVG and HTML,
# plain and differential; headless Chromium (driven over the DevTools pipe by
# flamegraph_browser.js, no npm) checks the rectangles, hover, click-to-zoom,
# reset, search, and that the page fetched nothing and threw nothing; and that a
# graph taller than a 1366x768 window opens, and reloads, with its root in view.
. "$(dirname "$0")/lib.sh"

CHROMIUM=$(command -v chromium || true)
[ -n "$CHROMIUM" ] || fail "chromium not installed (scripts/install-deps.sh installs it)"
command -v node >/dev/null || fail "node not installed (scripts/install-deps.sh installs nodejs)"
MKFLAME=$EMBER_BUILD/tests/tools/mkflame
[ -x "$MKFLAME" ] || fail "mkflame not built at $MKFLAME"

rc=0
for mode in "" --diff; do
	for ext in svg html; do
		out=$T/flame${mode:+-diff}.$ext
		"$MKFLAME" $mode "$out" || fail "mkflame $mode $out"
		node "$EMBER_SRC/tests/integration/flamegraph_browser.js" "$CHROMIUM" \
			"$T/chrome-$ext$mode" "$out" $mode || rc=1
	done
done
# 80 frames deep: 1402 px (SVG) to 1611 px (HTML, 1366 px wide) tall, over 1.5 times 768
for ext in svg html; do
	out=$T/flame-deep.$ext
	"$MKFLAME" --deep 80 "$out" || fail "mkflame --deep 80 $out"
	node "$EMBER_SRC/tests/integration/flamegraph_browser.js" "$CHROMIUM" \
		"$T/chrome-$ext-deep" "$out" --deep || rc=1
done
[ "$rc" -eq 0 ] || fail "flame graphs misbehave in Chromium (see above)"
pass "flame graphs render, zoom, reset and search in headless Chromium, offline;" \
	"a deep one opens and reloads on its root at 1366x768"
