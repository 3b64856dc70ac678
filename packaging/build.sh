#!/bin/sh
# build.sh deb|rpm TARBALL OUTDIR: build a package from a `make dist` tarball
# in a temporary directory, never in the source tree, and copy it to OUTDIR.
#
#   deb: unpack the tarball, put packaging/debian at debian/, run
#        dpkg-buildpackage -us -uc -b;
#   rpm: rpmbuild -bb --nodeps in a temporary _topdir (--nodeps: on Debian
#        the build dependencies are Debian packages, which rpm does not know).
#
# NOCHECK=1 skips the unit tests that both builds run.
set -eu

if [ $# -ne 3 ]; then
	echo "usage: $0 deb|rpm TARBALL OUTDIR" >&2
	exit 64
fi
kind=$1
tarball=$(realpath "$2")
outdir=$(realpath "$3")
name=$(basename "$tarball" .tar.gz) # pgleader-0.2.0
version=${name#pgleader-}

need() {
	if ! command -v "$1" >/dev/null 2>&1; then
		echo "build-$kind: $1 not found; install $2 (make deps)" >&2
		exit 1
	fi
}

# run DIR COMMAND...: COMMAND in DIR, its output in the log, shown on failure.
run() {
	dir=$1
	shift
	echo "build-$kind: $* in $dir"
	if ! (cd "$dir" && "$@") >"$tmp/build.log" 2>&1; then
		tail -n 60 "$tmp/build.log" >&2
		echo "build-$kind: $1 failed" >&2
		exit 1
	fi
}

build_deb() {
	need dpkg-buildpackage dpkg-dev
	need dh debhelper
	# The tarball is also the upstream source of a 3.0 (quilt) package.
	cp "$tarball" "$tmp/pgleader_$version.orig.tar.gz"
	tar -xzf "$tarball" -C "$tmp"
	cp -R "$tmp/$name/packaging/debian" "$tmp/$name/debian"
	set -- -us -uc -b
	if [ "${NOCHECK:-}" = 1 ]; then
		DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }nocheck"
		export DEB_BUILD_OPTIONS
		set -- "$@" -Pnocheck
	fi
	run "$tmp/$name" dpkg-buildpackage "$@"
}

build_rpm() {
	need rpmbuild rpm
	mkdir -p "$tmp/SOURCES" "$tmp/SPECS"
	cp "$tarball" "$tmp/SOURCES/"
	# Source1, which the sysusers macro reads when the spec is parsed.
	tar -xzf "$tarball" -C "$tmp" "$name/packaging/rpm/pgleader.spec" "$name/systemd/pgleader.sysusers"
	cp "$tmp/$name/packaging/rpm/pgleader.spec" "$tmp/SPECS/"
	cp "$tmp/$name/systemd/pgleader.sysusers" "$tmp/SOURCES/"
	set -- -bb --nodeps
	if [ "${NOCHECK:-}" = 1 ]; then
		set -- "$@" --nocheck
	fi
	run "$tmp" rpmbuild --define "_topdir $tmp" "$@" "$tmp/SPECS/pgleader.spec"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
case $kind in
deb)
	build_deb
	pattern="$tmp/pgleader_*.deb"
	;;
rpm)
	build_rpm
	pattern="$tmp/RPMS/*/pgleader-[0-9]*.rpm"
	;;
*)
	echo "usage: $0 deb|rpm TARBALL OUTDIR" >&2
	exit 64
	;;
esac
# shellcheck disable=SC2086 # the pattern is a glob, expanded on purpose
for package in $pattern; do
	[ -e "$package" ] || { echo "build-$kind: no package in $tmp" >&2; exit 1; }
	cp "$package" "$outdir/"
	echo "build-$kind: $outdir/$(basename "$package")"
done
