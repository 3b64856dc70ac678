#!/bin/sh
# tests/check-layers.sh [CFLAGS...]: the deciders in src/decide/ are pure
# (DESIGN 14). None of their files includes, even through another header,
# anything of src/act/ (I/O), src/observe/ or src/cli/, nor libev or libpq;
# none reads a clock or logs (the lines they want said are actions).
# The includes are asked of the compiler (cc -M, with the build's flags
# when make passes them), not grepped, so that one through a header of
# another folder is seen too.
set -eu
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
	set -- -std=c11 -D_GNU_SOURCE
	for d in src src/*/; do
		set -- "$@" "-I${d%/}"
	done
fi
bad=0
for f in src/decide/*.c src/decide/*.h; do
	made=$(${CC:-cc} -M "$@" "$f") # fails the check when cc does
	deps=$(printf '%s\n' "$made" | tr ' ' '\n' |
		grep -E '^src/(act|observe|cli)/|(^|/)(ev|libpq-fe)\.h$' || true)
	for h in $deps; do
		echo "check-layers: $f includes $h: src/decide/ does no I/O" >&2
		bad=1
	done
	case $f in *.h) continue ;; esac
	if grep -nE '\b(clocks_monotonic|clocks_wall|clock_gettime|log_(msg|event|error|warning|notice|info|debug))\(' "$f" >&2; then
		echo "check-layers: $f reads a clock or logs: src/decide/ is told the time and says its lines as actions" >&2
		bad=1
	fi
done
exit "$bad"
