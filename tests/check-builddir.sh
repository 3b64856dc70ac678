#!/bin/sh
# check-builddir.sh: make check and make sanitize never clean the tree (it
# stays usable while they run), and a BUILDDIR= build writes its objects,
# binary and unit tests there and nowhere else.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
status=0

# What check would run, recursive makes included (make -n runs those).
plan=$(make -n WERROR=1 check 2>&1)
if printf '%s\n' "$plan" | grep -nE 'make[^ ]* +([^ ]+ +)*clean( |$)|rm -f pgleader|rm -rf build'; then
	echo "check-builddir: make check cleans the tree" >&2
	status=1
fi
if ! printf '%s\n' "$plan" | grep -q 'BUILDDIR=build/asan'; then
	echo "check-builddir: make check does not build the sanitizers in build/asan" >&2
	status=1
fi

dir=$(mktemp -d /tmp/check-builddir.XXXXXX)
trap 'rm -rf "$dir"' EXIT
outputs=$(make -n -B BUILDDIR="$dir" all "$dir/tests/unit/test_value" 2>&1 |
	grep -oE ' -o [^ ]+' | sed 's/^ -o //')
if [ -z "$outputs" ]; then
	echo "check-builddir: make -n BUILDDIR=$dir built nothing" >&2
	status=1
fi
for o in $outputs; do
	case $o in
	"$dir"/*) ;;
	*) echo "check-builddir: BUILDDIR=$dir writes $o" >&2; status=1 ;;
	esac
done
[ "$status" -eq 0 ] && echo "check-builddir: check keeps the tree, BUILDDIR holds the build"
exit "$status"
