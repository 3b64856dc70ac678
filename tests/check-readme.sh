#!/bin/sh
# check-readme.sh: the README stays what a new user needs and true to the
# tree: under 300 lines (figures live in BENCHMARKS.md); every version it
# names is the one in VERSION; every configuration path it names is one the
# units and packages use (/etc/pgleader/NAME.conf, the .example); every file
# of the tree it names in backquotes exists (a built helper: its .c).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
readme=$top/README.md
version=$(cat "$top/VERSION") || exit 1
failed=0
fail() {
	echo "check-readme: $*" >&2
	failed=1
}

lines=$(wc -l <"$readme")
[ "$lines" -lt 300 ] ||
	fail "README.md has $lines lines, 300 at most: move detail to the man pages or BENCHMARKS.md"

# "pgleader-0.4.0.tar.gz", "pgleader_0.4.0-1_amd64.deb", "(0.4.0, in the file".
versions=$(grep -oE '(pgleader[-_][0-9]+\.[0-9]+\.[0-9]+|\([0-9]+\.[0-9]+\.[0-9]+, in the file)' "$readme" |
	grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | sort -u)
for v in $versions; do
	[ "$v" = "$version" ] || fail "README.md names version $v, VERSION says $version"
done
grep -q "($version, in the file \`VERSION\`" "$readme" ||
	fail "README.md does not say the version ($version, in the file \`VERSION\`)"

# Configuration paths: the units read /etc/pgleader/pgleader.conf and
# /etc/pgleader/NAME.conf; make install writes the .example beside them.
paths=$(grep -oE '/etc/pgleader[^ `)]*' "$readme" | sort -u)
for p in $paths; do
	printf '%s\n' "$p" | grep -qxE '/etc/pgleader/([a-z<>-]+\.conf|pgleader\.conf\.example)' ||
		fail "README.md names the path $p, not /etc/pgleader/NAME.conf"
done
grep -q '/etc/pgleader/pgleader.conf' "$top/systemd/pgleader.service" ||
	fail "systemd/pgleader.service no longer reads /etc/pgleader/pgleader.conf"
grep -q '/etc/pgleader/%i.conf' "$top/systemd/pgleader@.service" ||
	fail "systemd/pgleader@.service no longer reads /etc/pgleader/%i.conf"

# Files of the tree named in backquotes: `tests/install-deps.sh`, `VERSION`.
# shellcheck disable=SC2016 # the backquotes are Markdown's, not the shell's
files=$(grep -oE '`[A-Za-z.][A-Za-z0-9_./-]*(/[A-Za-z0-9_.-]+|\.md|VERSION|LICENSE)`' "$readme" |
	tr -d '`' | sort -u)
for f in $files; do
	case $f in
	*/*.conf | */*.service | *.*.* | ./*) ;; # installed paths and examples
	*) [ -e "$top/$f" ] || [ -e "$top/$f.c" ] || fail "README.md names $f, which is not in the tree" ;;
	esac
done

[ $failed -eq 0 ] || exit 1
echo "check-readme: $lines lines, version $version, paths as in the tree"
