#!/bin/sh
# The deciders in src/decide/ are pure (DESIGN 14): none of their files
# includes, even through another header, anything of src/act/ (I/O),
# src/observe/ or src/cli/. Asked of the compiler (cc -MM), not grepped, so
# that an include through a header of another folder is seen too.
set -eu
cd "$(dirname "$0")/.."
flags="-std=c11 -D_GNU_SOURCE"
for d in src src/decide src/act src/observe src/cli src/settings; do
	flags="$flags -I$d"
done
bad=0
for f in src/decide/*.c src/decide/*.h; do
	# shellcheck disable=SC2086
	deps=$(${CC:-cc} -MM $flags "$f" | tr ' ' '\n' |
		grep -E '^src/(act|observe|cli)/' || true)
	for h in $deps; do
		echo "check-layers: $f includes $h: src/decide/ does no I/O" >&2
		bad=1
	done
done
exit "$bad"
