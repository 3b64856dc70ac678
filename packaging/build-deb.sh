#!/bin/sh
# build-deb.sh TARBALL OUTDIR: build the Debian package from a `make dist`
# tarball in a temporary directory: unpack it, put packaging/debian at
# debian/, run dpkg-buildpackage -us -uc -b, and copy the .deb to OUTDIR.
# NOCHECK=1 skips the unit tests.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 TARBALL OUTDIR" >&2
	exit 64
fi
tarball=$(realpath "$1")
outdir=$(realpath "$2")
for tool in dpkg-buildpackage dh; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "build-deb: $tool not found; install dpkg-dev and debhelper (make deps)" >&2
		exit 1
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
name=$(basename "$tarball" .tar.gz)      # pgleader-0.2.0
version=${name#pgleader-}

# The tarball is also the upstream source of a 3.0 (quilt) package.
cp "$tarball" "$tmp/pgleader_$version.orig.tar.gz"
tar -xzf "$tarball" -C "$tmp"
src=$tmp/$name
cp -R "$src/packaging/debian" "$src/debian"

# NOCHECK=1: without the unit tests (the nocheck option and build profile).
set -- -us -uc -b
if [ "${NOCHECK:-}" = 1 ]; then
	DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }nocheck"
	export DEB_BUILD_OPTIONS
	set -- "$@" -Pnocheck
fi
echo "build-deb: dpkg-buildpackage $* in $src"
if ! (cd "$src" && dpkg-buildpackage "$@") >"$tmp/build.log" 2>&1; then
	tail -n 60 "$tmp/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed" >&2
	exit 1
fi
for deb in "$tmp"/pgleader_*.deb; do
	cp "$deb" "$outdir/"
	echo "build-deb: $outdir/$(basename "$deb")"
done
