#!/bin/bash
# check-package.sh [DISTDIR]: the packages that `make deb rpm` left in DISTDIR
# (default dist), as root on Debian 12:
#
#   1. lintian on the .deb and rpmlint on the .rpm: no error, no warning;
#      both hold the files they should;
#   2. dpkg -i the .deb: the pgleader user (no login shell) and
#      /var/lib/pgleader exist, nothing is enabled or started;
#   3. the installed /usr/bin/pgleader leads against a real PostgreSQL and
#      exits 0 on SIGTERM, also as PID 1 (tests/integration, PGLEADER_BIN);
#   4. systemd-analyze verify and security on the installed units;
#   5. dpkg --purge: nothing is left but the pgleader user, which Debian
#      policy keeps.
#
# The package is purged on failure too. It refuses to run when pgleader is
# installed already, to leave an administrator's installation alone.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
distdir=$(realpath "${1:-$top/dist}")
version=$(cat "$top/VERSION")
arch=$(dpkg --print-architecture)
PYTHON=${PYTHON:-/usr/bin/python3}

step() { printf '\n--> check-package: %s\n' "$*"; }
die() {
	echo "check-package: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root: it installs and purges the .deb"
for tool in lintian rpmlint rpm dpkg systemd-analyze; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found (make deps)"
done

# newest NAME-PATTERN in DISTDIR for this version
one() {
	local found
	found=$(find "$distdir" -maxdepth 1 -name "$1" | sort -V | tail -n 1)
	[ -n "$found" ] || die "no $1 in $distdir: run make deb rpm first"
	printf '%s\n' "$found"
}
deb=$(one "pgleader_${version}-*_${arch}.deb")
rpmfile=$(one "pgleader-${version}-*.rpm")

# What both packages install (the unit directory aside, which differs).
EXPECTED="usr/bin/pgleader
usr/share/man/man1/pgleader.1.gz
usr/share/man/man5/pgleader.conf.5.gz
etc/pgleader/pgleader.conf.example
usr/share/bash-completion/completions/pgleader
usr/lib/sysusers.d/pgleader.conf
usr/lib/tmpfiles.d/pgleader.conf
systemd/system/pgleader.service
systemd/system/pgleader@.service"

# has_all LIST: every EXPECTED path ends one line of LIST.
has_all() {
	local path missing=0
	while IFS= read -r path; do
		if ! grep -qE "(^|/)${path//./\\.}\$" <<<"$1"; then
			echo "check-package: missing: $path" >&2
			missing=1
		fi
	done <<<"$EXPECTED"
	return $missing
}

step "lintian $(basename "$deb")"
lintian --fail-on error,warning "$deb" ||
	die "lintian reports errors or warnings"
has_all "$(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's,^\./,,')" ||
	die "$(basename "$deb") lacks files"

step "rpmlint $(basename "$rpmfile")"
out=$(rpmlint -c "$top/packaging/rpm/rpmlint.toml" -r "$top/packaging/rpm/pgleader.rpmlintrc" \
	"$rpmfile" 2>&1) || true
printf '%s\n' "$out"
grep -qE '[^0-9]0 errors, 0 warnings' <<<"$out" || die "rpmlint reports errors or warnings"
has_all "$(rpm -qlp "$rpmfile" 2>/dev/null)" || die "$(basename "$rpmfile") lacks files"
for macro in systemd-sysusers systemctl systemd-tmpfiles; do
	rpm -qp --scripts "$rpmfile" 2>/dev/null | grep -q "$macro" ||
		die "the rpm's scriptlets do not run $macro"
done

if dpkg-query -W -f='${Status}' pgleader 2>/dev/null | grep -q 'installed'; then
	die "pgleader is installed already; dpkg --purge pgleader first"
fi
installed=
cleanup() {
	if [ -n "$installed" ]; then
		echo "check-package: purging pgleader after a failure" >&2
		dpkg --purge pgleader >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

step "dpkg -i $(basename "$deb")"
installed=1
dpkg -i "$deb"
files=$(dpkg-query -L pgleader)

# The user may be left from an earlier install (policy keeps it): what the
# installed sysusers.d entry creates is checked in an empty root as well.
sysroot=$(mktemp -d)
mkdir "$sysroot/etc"
systemd-sysusers --root="$sysroot" /usr/lib/sysusers.d/pgleader.conf
fresh=$(grep '^pgleader:' "$sysroot/etc/passwd") || die "sysusers.d/pgleader.conf creates no user"
rm -rf "$sysroot"
entry=$(getent passwd pgleader) || die "no pgleader user after install"
[ "${entry#*:*:*:*:}" = "${fresh#*:*:*:*:}" ] ||
	die "the pgleader user ($entry) is not the one sysusers.d describes ($fresh)"
IFS=: read -r _ _ uid _ _ home shell <<<"$entry"
[ "$uid" -lt 1000 ] || die "pgleader is not a system user (uid $uid)"
[ "$home" = /var/lib/pgleader ] || die "pgleader's home is $home, not /var/lib/pgleader"
case $shell in
*/nologin | /bin/false) ;;
*) die "pgleader has a login shell: $shell" ;;
esac
[ "$(stat -c '%U:%G %a' /var/lib/pgleader)" = "pgleader:pgleader 750" ] ||
	die "/var/lib/pgleader is $(stat -c '%U:%G %a' /var/lib/pgleader), not pgleader:pgleader 750"
echo "check-package: user $entry; /var/lib/pgleader pgleader:pgleader 750"

enabled=$(find /etc/systemd/system -name 'pgleader*' 2>/dev/null || true)
[ -z "$enabled" ] || die "the package enabled units: $enabled"
for exe in /proc/[0-9]*/exe; do
	if [ "$(readlink "$exe" 2>/dev/null)" = /usr/bin/pgleader ]; then
		die "the installed pgleader runs after the install: ${exe%/exe}"
	fi
done
cmp -s /usr/share/bash-completion/completions/pgleader "$top/completion/pgleader.bash" ||
	die "the installed completion is not completion/pgleader.bash"
"$top/tests/check-version.sh" /usr/bin/pgleader

step "the installed /usr/bin/pgleader against PostgreSQL"
(cd "$top" && PGLEADER_BIN=/usr/bin/pgleader "$PYTHON" -m pytest -q -p no:cacheprovider \
	tests/integration/test_lead.py::test_one_node_leads tests/integration/test_pid1.py)

step "systemd-analyze verify and security on the installed units"
for unit in pgleader.service pgleader@example.service; do
	out=$(systemd-analyze verify "$unit" 2>&1) || die "verify $unit failed: $out"
	[ -z "$out" ] || die "verify $unit: $out"
	score=$(systemd-analyze security --offline=yes "$unit" 2>&1 |
		sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	awk -v s="${score:-99}" 'BEGIN { exit !(s < 5.0) }' ||
		die "$unit: exposure ${score:-unknown}, not below 5.0"
	echo "check-package: $unit verified, exposure $score"
done

step "dpkg --purge pgleader"
dpkg --purge pgleader
installed=
dpkg-query -W -f='${Status}' pgleader 2>/dev/null | grep -q 'installed' &&
	die "pgleader is still installed"
left=""
while IFS= read -r path; do
	# Directories shared with other packages (/usr/bin, ...) stay.
	if [ -e "$path" ] && ! [ -d "$path" ]; then
		left="$left $path"
	fi
done <<<"$files"
for path in /etc/pgleader /var/lib/pgleader; do
	[ ! -e "$path" ] || left="$left $path"
done
if find /etc/systemd /var/lib/systemd -name 'pgleader*' 2>/dev/null | grep -q .; then
	left="$left $(find /etc/systemd /var/lib/systemd -name 'pgleader*' | tr '\n' ' ')"
fi
[ -z "$left" ] || die "left after purge:$left"
getent passwd pgleader >/dev/null ||
	die "the pgleader user is gone: Debian policy keeps system users (their files may remain)"
echo "check-package: purged; only the pgleader user is left, as Debian policy wants"

step "ok: $(basename "$deb") and $(basename "$rpmfile")"
