#!/bin/sh
# check-version.sh [BINARY]: the version is written once, in VERSION; the
# places that must repeat it (CHANGELOG.md, the Debian changelog, the RPM
# spec) say the same, and BINARY --version, when given, prints it.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION") || exit 1
failed=0
fail() {
	echo "check-version: $*" >&2
	failed=1
}

printf '%s\n' "$version" | grep -qxE '[0-9]+\.[0-9]+\.[0-9]+' ||
	fail "VERSION holds '$version', not MAJOR.MINOR.PATCH"

first=$(grep -m1 -oE '^## [0-9][^ ]*' "$top/CHANGELOG.md" | cut -c4-)
[ "$first" = "$version" ] ||
	fail "CHANGELOG.md: the newest entry is '$first', not $version"

# "pgleader (0.2.0-1) unstable; urgency=medium": upstream version, then -REVISION.
deb=$(sed -n '1s/^pgleader (\([^)]*\)).*/\1/p' "$top/packaging/debian/changelog")
[ "${deb%-*}" = "$version" ] ||
	fail "packaging/debian/changelog: the newest entry is '$deb', not $version-N"

spec=$(sed -n 's/^Version:[[:space:]]*//p' "$top/packaging/rpm/pgleader.spec")
[ "$spec" = "$version" ] ||
	fail "packaging/rpm/pgleader.spec: Version is '$spec', not $version"

if [ $# -ge 1 ]; then
	out=$("$1" --version 2>&1)
	printf '%s\n' "$out" | grep -qE "^pgleader $version \\(libpq [0-9.]+, libev [0-9]+\\.[0-9]+, libmicrohttpd [0-9.]+\\)\$" ||
		fail "'$1 --version' prints '$out', not 'pgleader $version (libpq ..., libev ..., libmicrohttpd ...)'"
fi

[ $failed -eq 0 ] || exit 1
echo "check-version: $version everywhere"
