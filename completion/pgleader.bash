# pgleader(1) completion for bash: options, the values of those that take
# one of a fixed set, files for -c/--config, then the command and its words.
# Installed as /usr/share/bash-completion/completions/pgleader; needs nothing
# from the bash-completion package but uses its _command_offset when loaded.
#
# The options are read from `pgleader --help` each time, so that they follow
# the binary being completed; only the value sets are listed here
# (tests/check-completion.sh checks them against --help).

# _pgleader_values OPTION: the words OPTION accepts; fails for an option
# whose value is free (a DSN, a duration, a name).
_pgleader_values() {
	case $1 in
	--acquire) echo "wait poll" ;;
	--restart) echo "no on-failure always" ;;
	--log-level) echo "error warning notice info debug" ;;
	--log-format) echo "text json" ;;
	--missed) echo "once skip" ;;
	--overlap) echo "skip queue replace" ;;
	--output) echo "inherit log" ;; # with runs: a run id, free
	*) return 1 ;;
	esac
}

# _pgleader_options BINARY: fills the caller's arrays all (every option of
# BINARY's --help) and takes (those that read a value: "--config=FILE").
# A BINARY that does not run (a word not expanded yet, such as
# ~/bin/pgleader) falls back to the pgleader on PATH.
_pgleader_options() {
	local help line short long
	help=$("$1" --help 2>/dev/null) || help=$(command pgleader --help 2>/dev/null) || return 0
	while IFS= read -r line; do
		[[ $line =~ ^\ +(-[A-Za-z],\ )?(--[a-z0-9-]+)(=?) ]] || continue
		short=${BASH_REMATCH[1]%, }
		long=${BASH_REMATCH[2]}
		all+=("$long")
		[ -z "$short" ] || all+=("$short")
		if [ -n "${BASH_REMATCH[3]}" ]; then
			takes+=("$long")
			[ -z "$short" ] || takes+=("$short")
		fi
	done <<<"$help"
}

# _pgleader_takes WORD: whether WORD is an option that reads a value.
_pgleader_takes() {
	local t
	for t in "${takes[@]}"; do
		[ "$t" = "$1" ] && return 0
	done
	return 1
}

_pgleader() {
	local cur prev word i=1
	local -a all=() takes=()
	_pgleader_options "${COMP_WORDS[0]}"

	# Skip the options and values before the word being completed: "--" or
	# a word that is neither starts the command.
	while [ "$i" -lt "$COMP_CWORD" ]; do
		word=${COMP_WORDS[i]}
		if [ "$word" = -- ]; then
			_pgleader_command $((i + 1))
			return
		fi
		case $word in
		status | runs | init-db | switchover | pause | resume | trigger)
			[ "$i" -eq 1 ] || { _pgleader_command "$i"; return; }
			;;
		-*)
			if _pgleader_takes "$word"; then
				# "--acquire=poll" arrives as "--acquire" "=" "poll":
				# COMP_WORDBREAKS holds "=".
				[ "${COMP_WORDS[i + 1]:-}" != = ] || i=$((i + 1))
				i=$((i + 1))
			fi
			;;
		*)
			_pgleader_command "$i"
			return
			;;
		esac
		i=$((i + 1))
	done

	cur=${COMP_WORDS[COMP_CWORD]}
	prev=""
	[ "$COMP_CWORD" -eq 0 ] || prev=${COMP_WORDS[COMP_CWORD - 1]}
	if [ "$cur" = = ]; then
		cur=""
	elif [ "$prev" = = ] && [ "$COMP_CWORD" -gt 1 ]; then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi
	if _pgleader_takes "$prev"; then
		_pgleader_value "$prev" "$cur"
	elif [ "${cur#-}" != "$cur" ]; then
		mapfile -t COMPREPLY < <(compgen -W "${all[*]}" -- "$cur")
	elif [ "$COMP_CWORD" -eq 1 ]; then
		mapfile -t COMPREPLY < <(compgen -W "status runs init-db switchover pause resume trigger" -- "$cur"; compgen -c -- "$cur")
	else
		_pgleader_command "$COMP_CWORD"
	fi
}

# _pgleader_value OPTION CUR: the value of OPTION.
_pgleader_value() {
	local values
	case $1 in
	-c | --config | --environment-file)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$2")
		;;
	--working-directory)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -d -- "$2")
		;;
	--user) mapfile -t COMPREPLY < <(compgen -u -- "$2") ;;
	--group) mapfile -t COMPREPLY < <(compgen -g -- "$2") ;;
	--on-failure)
		# a shell line run by /bin/sh -c: its first word is a command
		mapfile -t COMPREPLY < <(compgen -c -- "$2")
		;;
	*)
		if values=$(_pgleader_values "$1"); then
			mapfile -t COMPREPLY < <(compgen -W "$values" -- "$2")
		else
			COMPREPLY=()
		fi
		;;
	esac
}

# _pgleader_command FIRST: the command that starts at word FIRST, and its
# arguments (through the command's own completion when bash-completion is
# loaded, else file names).
_pgleader_command() {
	if declare -F _command_offset >/dev/null 2>&1; then
		_command_offset "$1"
		return
	fi
	if [ "$1" -eq "$COMP_CWORD" ]; then
		mapfile -t COMPREPLY < <(compgen -c -- "${COMP_WORDS[COMP_CWORD]}")
	else
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "${COMP_WORDS[COMP_CWORD]}")
	fi
}

complete -F _pgleader pgleader
