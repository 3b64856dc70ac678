#!/bin/sh
# build-rpm.sh TARBALL OUTDIR: build the RPM from a `make dist` tarball with
# rpmbuild -bb --nodeps in a temporary _topdir (--nodeps: on Debian the
# build dependencies are Debian packages, which rpm does not know), and copy
# it to OUTDIR. NOCHECK=1 skips the unit tests (%check).
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 TARBALL OUTDIR" >&2
	exit 64
fi
tarball=$(realpath "$1")
outdir=$(realpath "$2")
if ! command -v rpmbuild >/dev/null 2>&1; then
	echo "build-rpm: rpmbuild not found; install the 'rpm' package (make deps)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
name=$(basename "$tarball" .tar.gz)      # pgleader-0.2.0
mkdir -p "$tmp/SOURCES" "$tmp/SPECS"
cp "$tarball" "$tmp/SOURCES/"
tar -xzf "$tarball" -C "$tmp" "$name/packaging/rpm/pgleader.spec" "$name/systemd/pgleader.sysusers"
cp "$tmp/$name/packaging/rpm/pgleader.spec" "$tmp/SPECS/"
cp "$tmp/$name/systemd/pgleader.sysusers" "$tmp/SOURCES/"

set -- -bb --nodeps
if [ "${NOCHECK:-}" = 1 ]; then
	set -- "$@" --nocheck
fi
echo "build-rpm: rpmbuild $* in $tmp"
if ! rpmbuild --define "_topdir $tmp" "$@" "$tmp/SPECS/pgleader.spec" >"$tmp/build.log" 2>&1; then
	tail -n 60 "$tmp/build.log" >&2
	echo "build-rpm: rpmbuild failed" >&2
	exit 1
fi
for rpm in "$tmp"/RPMS/*/pgleader-[0-9]*.rpm; do
	cp "$rpm" "$outdir/"
	echo "build-rpm: $outdir/$(basename "$rpm")"
done
