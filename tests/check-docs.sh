#!/bin/sh
# check-docs.sh BINARY: fails when an option or config key is missing from
# the man pages or conf/pgleader.conf, when they document one that does not
# exist, or when an exit code of src/exit_codes.h is missing from the man
# page's EXIT STATUS or from --help, or EXIT STATUS lists one it does not have.
#
# Options and keys come from `BINARY --help` alone, which src/settings/config.c prints
# from the same table that parses them: adding a key touches that table, the
# man pages and conf/pgleader.conf, not this script. --help lists each option
# on a line of its own, "  -c, --config=FILE ..." or "      --acquire=MODE ...",
# each key under its option as "  key: NAME, default: ...", and each key of
# the file and environment only as "  NAME = ...". The exit codes are the
# names src/exit_codes.h uses (its EXIT_* and the <sysexits.h> ones they
# stand for), with the numbers the C compiler ($CC, else cc) gives them.

# The lists below are blank-separated words, split on purpose.
# shellcheck disable=SC2086
set -u

if [ $# -ne 1 ]; then
	echo "usage: $0 BINARY" >&2
	exit 64
fi
binary=$1
top=$(cd "$(dirname "$0")/.." && pwd)
man1=$top/man/pgleader.1
man5=$top/man/pgleader.conf.5
conf=$top/conf/pgleader.conf
exit_codes=$top/src/exit_codes.h

if ! command -v mandoc >/dev/null 2>&1; then
	echo "check-docs: mandoc not found; install the 'mandoc' package (make deps)" >&2
	exit 1
fi
for f in "$man1" "$man5" "$conf" "$exit_codes"; do
	if [ ! -r "$f" ]; then
		echo "check-docs: ${f#"$top"/} is missing" >&2
		exit 1
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

if ! "$binary" --help >"$tmp/help" 2>&1; then
	echo "check-docs: '$binary --help' failed:" >&2
	cat "$tmp/help" >&2
	exit 1
fi

# Man pages as plain text, without the overstrike that marks bold/underline.
bs=$(printf '\b')
render() {
	mandoc -Tascii "$1" | sed "s/.$bs//g"
}
render "$man1" >"$tmp/man1"

# section FILE TITLE: the body of one top-level section of a rendered page.
section() {
	awk -v title="$2" '
		/^[A-Z][A-Z ]*[A-Z]$/ { inside = ($0 == title); next }
		inside { print }
	' "$1"
}
section "$tmp/man1" "EXIT STATUS" >"$tmp/exit"
# source FILE TITLE: the same from the mdoc source, where an entry's head
# (.It) cannot be taken for a line of text that happens to start with "-".
source_section() {
	awk -v title="$2" '
		/^\.Sh / { inside = ($0 == ".Sh " title); next }
		inside { print }
	' "$1"
}
source_section "$man1" OPTIONS | grep -E '^\.It Fl ' >"$tmp/option_tags"
source_section "$man1" ENVIRONMENT >"$tmp/environment"
source_section "$man5" KEYS | grep -E '^\.It Cm [a-z]' >"$tmp/key_tags"

failed=0
fail() {
	echo "check-docs: $*" >&2
	failed=1
}

# What --help says. An option line starts with two blanks and either "-X, --"
# or four blanks and "--"; the file-only keys follow their heading.
options=$(grep -E -- '^  (-[A-Za-z], |    )--[a-z]' "$tmp/help" |
	sed -E 's/^ *(-[A-Za-z], )?--([a-z][a-z0-9-]*).*/\2/' | sort -u)
shorts=$(grep -E -- '^  -[A-Za-z], --[a-z]' "$tmp/help" |
	sed -E 's/^  -([A-Za-z]),.*/\1/' | sort -u)
keys=$( { grep -E '^ +key: [a-z][a-z0-9_]*,' "$tmp/help" |
	sed -E 's/^ +key: ([a-z0-9_]+),.*/\1/'
	sed -n '/^In the file and the environment only:/,/^$/p' "$tmp/help" |
	grep -E '^  [a-z][a-z0-9_]* = ' | sed -E 's/^  ([a-z0-9_]+) = .*/\1/'
	} | sort -u)
# A --help whose layout changed would give nothing here and pass anything.
for what in options shorts keys; do
	eval "list=\$$what"
	if [ -z "$list" ]; then
		echo "check-docs: no $what found in '$binary --help'; has its layout changed?" >&2
		exit 1
	fi
done

# What the documents say: the .It Fl heads of pgleader(1) OPTIONS, the .It Cm
# heads of pgleader.conf(5) KEYS, the "#key =" lines of conf/pgleader.conf.
doc_options=$(grep -oE -- 'Fl \\-[a-z][a-z0-9-]*' "$tmp/option_tags" |
	sed 's/^Fl \\-//' | sort -u)
doc_shorts=$(grep -oE -- 'Fl [A-Za-z]( |$)' "$tmp/option_tags" |
	sed -E 's/^Fl ([A-Za-z]).*/\1/' | sort -u)
doc_keys=$(sed -E 's/^\.It Cm ([a-z][a-z0-9_]*).*/\1/' "$tmp/key_tags" | sort -u)
conf_keys=$(grep -E '^[#;]?[a-z][a-z0-9_]*[[:space:]]*=' "$conf" |
	sed -E 's/^[#;]?([a-z0-9_]+).*/\1/' | sort -u)

in_list() {
	printf '%s\n' $2 | grep -qx -- "$1"
}

# missing WORDS LIST BEFORE AFTER: fails for each of WORDS not in LIST, with
# the message BEFORE word AFTER.
missing() {
	for word in $1; do
		in_list "$word" "$2" || fail "$3$word$4"
	done
}

missing "$options" "$doc_options" "option --" " missing from OPTIONS in man/pgleader.1"
missing "$shorts" "$doc_shorts" "option -" " missing from OPTIONS in man/pgleader.1"
missing "$doc_options" "$options" "man/pgleader.1 documents --" \
	", which '$binary --help' does not list"
missing "$doc_shorts" "$shorts" "man/pgleader.1 documents -" \
	", which '$binary --help' does not list"

missing "$keys" "$doc_keys" "key " " missing from KEYS in man/pgleader.conf.5"
missing "$keys" "$conf_keys" "key " " missing from conf/pgleader.conf (as a '#key = ...' line)"
missing "$doc_keys" "$keys" "man/pgleader.conf.5 documents key " \
	", which '$binary --help' does not list"
missing "$conf_keys" "$keys" "conf/pgleader.conf sets key " \
	", which '$binary --help' does not list"
for key in $keys; do
	var=PGLEADER_$(printf '%s' "$key" | tr '[:lower:]' '[:upper:]')
	grep -qE -- "Ev $var( |\$)" "$tmp/environment" ||
		fail "variable $var missing from ENVIRONMENT in man/pgleader.1"
done

# Exit codes: each of the table must start a row of a table in EXIT STATUS
# and be in --help's "Exit status" lines; EXIT_SIGNAL_BASE is written 128+N.
# Each row of EXIT STATUS must be one of the table, or N (the command's own).
if ! printf '#include "exit_codes.h"\n' |
	${CC:-cc} -E -dM -I "$top/src" -x c - >"$tmp/macros"; then
	echo "check-docs: cannot preprocess src/exit_codes.h with ${CC:-cc}" >&2
	exit 1
fi
codes=
names=$(grep -oE '\<EX(IT)?_[A-Z][A-Z_]*' "$exit_codes" | sort -u)
for name in $names; do
	# a name may stand for another (EXIT_USAGE for EX_USAGE): follow it
	value=$(awk -v name="$name" '$1 == "#define" { def[$2] = $3 }
		END { v = def[name]; for (i = 0; i < 4 && v in def; i++) v = def[v]
		      print v }' "$tmp/macros")
	case $value in
	[0-9]*) ;;
	*) fail "src/exit_codes.h: $name is not a number ('$value')"; continue ;;
	esac
	[ "$name" = EXIT_SIGNAL_BASE ] && value=$value+N
	codes="$codes $value"
done
if [ -z "$codes" ]; then
	echo "check-docs: no exit codes found in src/exit_codes.h; has its layout changed?" >&2
	exit 1
fi
sed -n '/^Exit status:/,$p' "$tmp/help" >"$tmp/help_exit"
for code in $codes; do
	pattern=$(printf '%s' "$code" | sed 's/+/[+]/')
	grep -qE -- "^ {1,8}$pattern([ ,]|\$)" "$tmp/exit" ||
		fail "exit code $code missing from the table in EXIT STATUS in man/pgleader.1"
	grep -qE -- "(^|[^0-9])$pattern([^0-9]|\$)" "$tmp/help_exit" ||
		fail "exit code $code missing from 'Exit status' in '$binary --help'"
done
rows=$(grep -E '^ {1,8}[0-9N][0-9N+]*(, [0-9N][0-9N+]*)* {2,}' "$tmp/exit" |
	sed -E 's/^ +([^ ]+(, [^ ]+)*) {2,}.*/\1/; s/, /\n/g' | sort -u)
for code in $rows; do
	[ "$code" = N ] || in_list "$code" "$codes" ||
		fail "EXIT STATUS in man/pgleader.1 lists $code, which src/exit_codes.h does not"
done

if [ $failed -ne 0 ]; then
	exit 1
fi
echo "check-docs: options, keys and exit codes documented"
