#!/bin/sh
# check-units.sh [BINARY]: systemd-analyze verify on both unit files; any
# warning or error fails. BINARY (default ./pgleader) replaces /usr/bin/pgleader
# in ExecStart, since verify insists that the program exists.
#
# Then the sandbox: systemd-analyze security must score each unit below
# MAX_EXPOSURE ("OK"), and no setting may take from the command what an
# ordinary job needs: the network, a writable working directory, a JIT.
# Each sandbox setting must be named in pgleader(1), section SYSTEMD UNITS.
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
# security: "Overall exposure level for pgleader.service: 1.8 OK".
MAX_EXPOSURE=5.0
for unit in pgleader.service pgleader@example.service; do
	out=$(systemd-analyze security --offline=yes "$tmp/$unit" 2>&1)
	score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	if [ -z "$score" ]; then
		echo "check-units: $unit: no score from systemd-analyze security:" >&2
		printf '%s\n' "$out" >&2
		status=1
	elif awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s < m) }'; then
		echo "check-units: $unit exposure $score (below $MAX_EXPOSURE)"
	else
		echo "check-units: $unit: exposure $score, not below $MAX_EXPOSURE:" >&2
		printf '%s\n' "$out" | grep -F '✗' >&2
		status=1
	fi
done

# What the job keeps. Each line: a pattern that must not match a unit line.
forbidden='^MemoryDenyWriteExecute=(yes|true|1)
^PrivateNetwork=(yes|true|1)
^IPAddressDeny=
^ProcSubset=pid'
for unit in pgleader.service pgleader@.service; do
	f=$top/systemd/$unit
	# SIGHUP: pgleader@ (files of jobs) reads its file again; pgleader
	# (a single command) would forward it to the command, which may die of it
	reload=$(sed -n 's/^ExecReload=//p' "$f")
	# shellcheck disable=SC2016 # $MAINPID is systemd's, not ours
	want_at='pgleader@.service:/bin/kill -HUP $MAINPID'
	case $unit:$reload in
	pgleader.service: | "$want_at") ;;
	*)
		echo "check-units: $unit: ExecReload=$reload, not what pgleader(1) says" >&2
		status=1
		;;
	esac
	printf '%s\n' "$forbidden" | while IFS= read -r pattern; do
		if grep -qE -- "$pattern" "$f"; then
			echo "check-units: $unit: '$(grep -E -- "$pattern" "$f")' takes from the job what it needs" >&2
			exit 1
		fi
	done || status=1
	# No RestrictAddressFamilies= at all allows every family.
	families=$(sed -n 's/^RestrictAddressFamilies=//p' "$f")
	for family in AF_UNIX AF_INET AF_INET6; do
		case " $families " in
		"  " | *" $family "*) ;;
		*)
			echo "check-units: $unit: RestrictAddressFamilies= lacks $family" >&2
			status=1
			;;
		esac
	done
	# 64, 69 and 78 are not cured by a restart: no restart every 2s for
	# ever after a bad configuration or a missing privilege; pgleader(1)
	# names the same list.
	prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$f")
	for code in 64 69 78; do
		case " $prevent " in
		*" $code "*) ;;
		*)
			echo "check-units: $unit: RestartPreventExitStatus= lacks $code" >&2
			status=1
			;;
		esac
	done
	if ! grep -qF "RestartPreventExitStatus Ns = Ns Li \"$prevent\"" "$top/man/pgleader.1"; then
		echo "check-units: $unit: RestartPreventExitStatus=$prevent is not what man/pgleader.1 says" >&2
		status=1
	fi
	state=$(sed -n 's/^StateDirectory=//p' "$f")
	if ! grep -qx "WorkingDirectory=/var/lib/$state" "$f"; then
		echo "check-units: $unit: WorkingDirectory= is not the writable StateDirectory= ($state)" >&2
		status=1
	fi
done
# Every sandbox setting is named in pgleader(1), section SYSTEMD UNITS, with
# the drop-in that lifts it.
if command -v mandoc >/dev/null 2>&1; then
	bs=$(printf '\b')
	mandoc -Tascii "$top/man/pgleader.1" | sed "s/.$bs//g" |
		awk '/^[A-Z][A-Z ]*[A-Z]$/ { inside = ($0 == "SYSTEMD UNITS"); next } inside' >"$tmp/units.txt"
	sed -n 's/^\(User\|Protect[A-Za-z]*\|Private[A-Za-z]*\|Restrict[A-Za-z]*\|SystemCall[A-Za-z]*\|CapabilityBoundingSet\|NoNewPrivileges\|LockPersonality\)=.*/\1/p' \
		"$top/systemd/pgleader.service" "$top/systemd/pgleader@.service" | sort -u >"$tmp/keys"
	while IFS= read -r key; do
		[ "$key" = SystemCallErrorNumber ] && continue # softens the filter, takes nothing
		grep -qE "(^|[^A-Za-z])$key([^A-Za-z]|\$)" "$tmp/units.txt" || {
			echo "check-units: $key is not in SYSTEMD UNITS in man/pgleader.1" >&2
			status=1
		}
	done <"$tmp/keys"
else
	echo "check-units: mandoc not found; SYSTEMD UNITS in man/pgleader.1 not checked" >&2
	status=1
fi
exit $status
