#!/bin/bash
# check-completion.sh [BINARY]: shellcheck completion/pgleader.bash, check that
# its value lists match BINARY's --help (default ./pgleader), and complete
# some command lines with it in a clean bash.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:-$top/pgleader}
case $binary in
/*) ;;
*) binary=$(pwd)/$binary ;;
esac
file=$top/completion/pgleader.bash
if [ ! -x "$binary" ]; then
	echo "check-completion: $binary is not an executable; build it first (make)" >&2
	exit 1
fi

failed=0
fail() {
	echo "check-completion: $*" >&2
	failed=1
}

if command -v shellcheck >/dev/null 2>&1; then
	shellcheck -s bash "$file" || fail "shellcheck reports the above"
else
	fail "shellcheck not found; install the 'shellcheck' package (make deps)"
fi

help=$("$binary" --help) || fail "'$binary --help' failed"

# Every value the completion offers must be on its option's line of --help
# ("--restart=POLICY  when COMMAND exits: no, on-failure or always"); an
# option that --help does not have yet (--log-format) is skipped.
# shellcheck disable=SC1090,SC1091 # checked on its own above
. "$file"
for opt in --acquire --restart --log-level --log-format --missed --overlap; do
	helpline=$(printf '%s\n' "$help" | grep -E -- "^ +(-[A-Za-z], )?$opt=")
	[ -n "$helpline" ] || continue
	for value in $(_pgleader_values "$opt"); do
		printf '%s\n' "$helpline" | grep -qE -- "[ ,(]$value([ ,)]|\$)" ||
			fail "$opt: value '$value' is not on its --help line: $helpline"
	done
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/bin" "$tmp/etc"
ln -s "$binary" "$tmp/bin/pgleader"
touch "$tmp/etc/a.conf" "$tmp/etc/b.conf"

# complete EXPECTED WORD...: complete the last WORD (the words as bash splits
# them: "=" on its own) in a bash without rc files; the sorted replies must
# be EXPECTED (blank-separated), or contain it when it starts with "~ ".
complete_line() {
	local expected=$1 got
	shift
	got=$(cd "$tmp/etc" && PATH=$tmp/bin:/usr/bin:/bin bash --norc --noprofile -c '
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_pgleader
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$file" "$@")
	got=${got% }
	case $expected in
	"~ "*)
		for word in ${expected#"~ "}; do
			case " $got " in
			*" $word "*) ;;
			*) fail "'$*': '$word' not offered (got: $got)" ;;
			esac
		done
		;;
	*)
		[ "$got" = "$expected" ] || fail "'$*': expected '$expected', got '$got'"
		;;
	esac
}

# Every long and short option of --help is offered.
options=$(printf '%s\n' "$help" | sed -nE 's/^ +(-[A-Za-z], )?(--[a-z0-9-]+).*/\1\2/p' |
	tr -d ',' | tr '\n' ' ')
complete_line "~ $options" pgleader -
complete_line "--acquire" pgleader --acq
complete_line "poll wait" pgleader --acquire ""
complete_line "poll" pgleader --acquire = p
complete_line "poll wait" pgleader --lock-name x --acquire =
complete_line "always no on-failure" pgleader --restart ""
complete_line "debug error info notice warning" pgleader --log-level ""
if printf '%s\n' "$help" | grep -q -- '--log-format='; then
	complete_line "text" pgleader --log-format t
fi
complete_line "a.conf b.conf" pgleader -c ""
complete_line "a.conf" pgleader --config = a
complete_line "" pgleader --dsn ""
complete_line "status" pgleader statu
complete_line "--json" pgleader status --js
complete_line "~ runs" pgleader run
complete_line "~ init-db" pgleader init-
complete_line "--job" pgleader runs --jo
complete_line "--print-sql" pgleader init-db --print
complete_line "~ switchover" pgleader switcho
complete_line "~ pause" pgleader paus
complete_line "~ resume" pgleader resu
complete_line "--to" pgleader switchover --to
complete_line "" pgleader switchover --wait ""
complete_line "--job" pgleader pause --jo
complete_line "once skip" pgleader --missed ""
complete_line "~ echo" pgleader --lock-name nightly ech
complete_line "~ echo" pgleader -c a.conf -- ech
complete_line "a.conf" pgleader --nonblock -- echo a.
complete_line "a.conf" pgleader --acquire=poll cat a

if [ $failed -ne 0 ]; then
	exit 1
fi
echo "check-completion: completion/pgleader.bash completes options and values"
