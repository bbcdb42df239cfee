#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The [daemon] and [collector] keys of the table (lib/config/keys.c, printed by configkeys)
# against their docs, config/ember.conf and docs/man/ember.conf.5: fails when a key is in
# one and not another, when a doc shows another default than the table's, or when a key
# that needs a restart is documented without saying so.
# Usage: config_docs.sh CONFIGKEYS SRCDIR
set -u
CONFIGKEYS=$1 SRC=$2
CONF=$SRC/config/ember.conf MAN=$SRC/docs/man/ember.conf.5
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
bad() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

"$CONFIGKEYS" >"$T/table" || { echo "FAIL: $CONFIGKEYS failed"; exit 1; }
[ "$(wc -l <"$T/table")" -ge 30 ] || { echo "FAIL: only $(wc -l <"$T/table") keys in the table"; exit 1; }

# ember.conf: "[#]key = value" lines of [daemon] and [collector] (commented out or not);
# each with whether its paragraph (since the last blank line) says "restart".
awk -F '\t' '
	function flush() { for (k in pending) print pending[k] "\t" (para ~ /restart/); delete pending }
	/^$/ { flush(); para = ""; next }
	{ para = para " " $0 }
	/^#?\[[^]]*\]/ { s = $0; sub(/^#?\[/, "", s); sub(/[] "].*/, "", s); sec = s; next }
	(sec == "daemon" || sec == "collector") && /^#?[A-Za-z_][A-Za-z0-9_.-]* = / {
		line = $0; sub(/^#/, "", line)
		key = line; sub(/ = .*/, "", key)
		val = line; sub(/^[^=]* = /, "", val)
		if (index(key, ".")) key = substr(key, 1, index(key, "."))
		pending[key] = sec "\t" key "\t" val
	}
	END { flush() }
' "$CONF" >"$T/conf"

# ember.conf(5): ".BI key \" = value\"" entries under .SH [daemon] and .SH [collector] (.TQ
# groups share their paragraph); each with whether its paragraph says "restart".
awk '
	function flush() { for (k in pending) print pending[k] "\t" (para ~ /restart/); delete pending; para = "" }
	/^\.SH/ { flush(); sec = ""; if ($0 ~ /^\.SH \[(daemon|collector)\]/) { sec = $2; gsub(/[][]/, "", sec) } next }
	/^\.TP/ { flush(); next }
	sec != "" && /^\.BI / {
		key = $2; val = ""
		if (match($0, /" = [^"]*"/)) val = substr($0, RSTART + 4, RLENGTH - 5)
		pending[key] = sec "\t" key "\t" val
		next
	}
	{ para = para " " $0 }
	END { flush() }
' "$MAN" >"$T/man"

cut -f1,2 "$T/table" | sort >"$T/want"
for doc in conf man; do
	name=$([ $doc = conf ] && echo "$CONF" || echo "$MAN")
	cut -f1,2 "$T/$doc" | sort -u >"$T/$doc.keys"
	comm -23 "$T/want" "$T/$doc.keys" | while IFS=$'\t' read -r s k; do
		echo "FAIL: [$s] $k is in the table but not in $name"
	done >>"$T/diff"
	comm -13 "$T/want" "$T/$doc.keys" | while IFS=$'\t' read -r s k; do
		echo "FAIL: [$s] $k is in $name but not in the table"
	done >>"$T/diff"
	while IFS=$'\t' read -r s k def reload _; do
		got=$(awk -F '\t' -v s="$s" -v k="$k" '$1 == s && $2 == k { print $3 "\t" $4; exit }' "$T/$doc")
		[ -n "$got" ] || continue
		if [ "$def" != - ] && [ "${got%%$'\t'*}" != "$def" ]; then
			bad "[$s] $k: $name shows '${got%%$'\t'*}', the table's default is '$def'"
		fi
		if [ "$reload" = restart ] && [ "${got##*$'\t'}" != 1 ]; then
			bad "[$s] $k needs a restart, which $name does not say where it documents it"
		fi
	done <"$T/table"
done
if [ -s "$T/diff" ]; then
	cat "$T/diff"
	fails=$((fails + $(wc -l <"$T/diff")))
fi
[ $fails -eq 0 ] || exit 1
echo "PASS: $(wc -l <"$T/table") keys in the table, in $CONF and $MAN with their defaults"
