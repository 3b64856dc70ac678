#!/bin/sh
# check-docs.sh BINARY: fails when an option or config key is missing from
# --help, the man pages or conf/pgleader.conf, or an exit code from the man
# page's EXIT STATUS section.
#
# Options come from `BINARY --help` (every --long-option it prints, and the
# short ones that start an option line) and from the fixed list below; keys
# come from every "key: NAME," line in --help and from the fixed list below, so
# that something dropped from --help is caught too.

# The lists below are blank-separated words, split on purpose.
# shellcheck disable=SC2086
set -u

# What pgleader is built with: DESIGN.md section 5 without --metrics-addr,
# which is not built. A new option or key goes here as well as in the docs.
OPTIONS="config dsn lock-key lock-name acquire retry-interval ping-interval
ping-timeout ping-failures server-lease grace-period takeover-delay restart
nonblock wait-timeout conflict-exit-code shell node-id log-level verbose quiet
json help version"
SHORT="c d k n v q h V"
KEYS="dsn lock_key lock_name acquire retry_interval ping_interval ping_timeout
ping_failures server_lease grace_period takeover_delay restart wait_timeout
conflict_exit_code shell node_id log_level command"
EXIT_CODES="0 3 64 69 75 78 126 127 128+N"

if [ $# -ne 1 ]; then
	echo "usage: $0 BINARY" >&2
	exit 64
fi
binary=$1
top=$(cd "$(dirname "$0")/.." && pwd)
man1=$top/man/pgleader.1
man5=$top/man/pgleader.conf.5
conf=$top/conf/pgleader.conf

if ! command -v mandoc >/dev/null 2>&1; then
	echo "check-docs: mandoc not found; install the 'mandoc' package (make deps)" >&2
	exit 1
fi
for f in "$man1" "$man5" "$conf"; do
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
render "$man5" >"$tmp/man5"

# section FILE TITLE: the body of one top-level section of a rendered page.
section() {
	awk -v title="$2" '
		/^[A-Z][A-Z ]*[A-Z]$/ { inside = ($0 == title); next }
		inside { print }
	' "$1"
}
section "$tmp/man1" OPTIONS >"$tmp/options"
section "$tmp/man1" "EXIT STATUS" >"$tmp/exit"
section "$tmp/man1" ENVIRONMENT >"$tmp/environment"
section "$tmp/man5" KEYS >"$tmp/keys"
# Tag lines: an entry's head, at most 8 columns in, not its wrapped body.
grep -E '^ {1,8}-' "$tmp/options" >"$tmp/option_tags"
grep -E '^ {1,8}[a-z]' "$tmp/keys" >"$tmp/key_tags"

# in_list WORD LIST: whether WORD is one of the words of LIST.
in_list() {
	case " $(printf '%s ' $2)" in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

failed=0
fail() {
	echo "check-docs: $*" >&2
	failed=1
}

# Options.
help_long=$(grep -oE -- '--[a-z][a-z0-9-]*' "$tmp/help" | sed 's/^--//' | sort -u)
help_short=$(grep -oE -- '^[[:space:]]+-[A-Za-z]([,[:space:]]|$)' "$tmp/help" |
	sed -E 's/^[[:space:]]+-//; s/[,[:space:]]*$//' | sort -u)
for opt in $OPTIONS; do
	printf '%s\n' "$help_long" | grep -qx -- "$opt" ||
		fail "option --$opt missing from '$binary --help'"
done
for opt in $SHORT; do
	printf '%s\n' "$help_short" | grep -qx -- "$opt" ||
		fail "option -$opt missing from '$binary --help'"
done
for opt in $(printf '%s\n' $OPTIONS $help_long | sort -u); do
	grep -qE -- "(^|[^a-z0-9-])--$opt([^a-z0-9-]|\$)" "$tmp/option_tags" ||
		fail "option --$opt missing from OPTIONS in man/pgleader.1"
	in_list "$opt" "$OPTIONS" ||
		fail "option --$opt (in --help) is not in the list in tests/check-docs.sh"
done
for opt in $(printf '%s\n' $SHORT $help_short | sort -u); do
	grep -qE -- "(^|[^A-Za-z0-9-])-$opt([^A-Za-z0-9-]|\$)" "$tmp/option_tags" ||
		fail "option -$opt missing from OPTIONS in man/pgleader.1"
done

# Config keys.
# --help prints each option's key on its own line as "  key: NAME, default: ..."
# and the file-only command as "  command = COMMAND [ARG]...".
help_keys=$( { grep -oE '^[[:space:]]+key: [a-z][a-z0-9_]*,' "$tmp/help" |
	sed -E 's/^[[:space:]]+key: //; s/,$//'
	grep -oE '^[[:space:]]+command = ' "$tmp/help" | sed -E 's/[[:space:]=]//g'
	} | sort -u)
for key in $KEYS; do
	printf '%s\n' "$help_keys" | grep -qx -- "$key" ||
		fail "key $key missing from '$binary --help' (expected 'key: $key')"
done
for key in $(printf '%s\n' $KEYS $help_keys | sort -u); do
	in_list "$key" "$KEYS" ||
		fail "key $key (in --help) is not in the list in tests/check-docs.sh"
	grep -qE -- "^ {1,8}$key( |\$)" "$tmp/key_tags" ||
		fail "key $key missing from KEYS in man/pgleader.conf.5"
	grep -qE -- "^[#;]?[[:space:]]*${key}[[:space:]]*=" "$conf" ||
		fail "key $key missing from conf/pgleader.conf (expected '#$key = ...')"
	var=PGLEADER_$(printf '%s' "$key" | tr '[:lower:]' '[:upper:]')
	grep -qE -- "(^|[^A-Z_])$var([^A-Z_]|\$)" "$tmp/environment" ||
		fail "variable $var missing from ENVIRONMENT in man/pgleader.1"
done

# Exit codes: each must start a row of a table in EXIT STATUS.
for code in $EXIT_CODES; do
	pattern=$(printf '%s' "$code" | sed 's/+/[+]/')
	grep -qE -- "^ {1,8}$pattern([ ,]|\$)" "$tmp/exit" ||
		fail "exit code $code missing from the table in EXIT STATUS in man/pgleader.1"
done

if [ $failed -ne 0 ]; then
	exit 1
fi
echo "check-docs: options, keys and exit codes documented"
