#!/bin/sh
# check-units.sh [BINARY]: systemd-analyze verify on both unit files; any
# warning or error fails. BINARY (default ./pgleader) replaces /usr/bin/pgleader
# in ExecStart, since verify insists that the program exists.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:-$top/pgleader}

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "check-units: systemd-analyze not found; install the 'systemd' package (make deps)" >&2
	exit 1
fi
case $binary in
/*) ;;
*) binary=$(pwd)/$binary ;;
esac
if [ ! -x "$binary" ]; then
	echo "check-units: $binary is not an executable; build it first (make)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

for unit in pgleader.service pgleader@.service; do
	sed "s|/usr/bin/pgleader|$binary|g" "$top/systemd/$unit" >"$tmp/$unit"
done

# verify runs "man" on every Documentation= page; point it at our own pages
# so that a wrong reference fails too. Without man-db, skip that part.
man_opt=--man=yes
if command -v man >/dev/null 2>&1; then
	mkdir -p "$tmp/man/man1" "$tmp/man/man5"
	cp "$top/man/pgleader.1" "$tmp/man/man1/"
	cp "$top/man/pgleader.conf.5" "$tmp/man/man5/"
	MANPATH=$tmp/man
	export MANPATH
else
	echo "check-units: man not found; Documentation= references not checked" >&2
	man_opt=--man=no
fi

status=0
# The template is checked through an instance: verify loads pgleader@.service
# from the same directory.
for unit in pgleader.service pgleader@example.service; do
	out=$(systemd-analyze verify "$man_opt" "$tmp/$unit" 2>&1)
	rc=$?
	if [ $rc -ne 0 ] || [ -n "$out" ]; then
		echo "check-units: $unit: systemd-analyze verify failed (exit $rc):" >&2
		printf '%s\n' "$out" >&2
		status=1
	else
		echo "check-units: $unit ok"
	fi
done
exit $status
