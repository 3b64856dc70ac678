#!/bin/sh
# tests/sim/mutants.sh BUILDDIR SEEDS CC FLAGS... (SIM_ELECTION, SIM_OTHERS
# and SIM_LIBS in the environment, from the Makefile): each patch in
# tests/sim/mutants/ is applied to a copy of src/ (every source the
# simulator links: the decider, and outside it jobs.c, ledger.c,
# ledger_sql.c, tickplan.c, schedule.c, params.c ...) in
# BUILDDIR/sim-mutants/NAME (never to the tree), the simulator is built with
# that copy, and it must fail on the default seeds (a controls-* patch: on
# the seeds with switchovers and pauses, sim --controls; a jobs-* patch: on
# the seeds with jobs, sim --jobs; a triggers-* patch: on the seeds with
# runs asked for now and overlap, sim --triggers). A patch that no longer
# applies, or a mutant that survives, fails the target. NAMES (in the
# environment, space separated) runs only those.
#
# Every source is compiled once, unpatched, into BUILDDIR/sim-mutants/base;
# a mutant recompiles only the files its patch touches (all of them if it
# touches a header) and links them with the rest: a whole compile per
# mutant was most of this target's minutes.
set -eu
build=${1%/} default_seeds=$2 cc=$3
shift 3
here=$(dirname "$0")
# from the Makefile: the decider's sources, the rest the simulator links
srcs_of_sim="$SIM_ELECTION $SIM_OTHERS"
survived=""

# the object of source $1 in folder $2: its path with / as _
object_of() {
	printf '%s/%s.o' "$2" "$(printf '%s' "${1%.c}" | tr / _)"
}

base=$build/sim-mutants/base
rm -rf "$base"
mkdir -p "$base"
for f in "$here"/*.c $srcs_of_sim; do
	"$cc" -c "$@" -o "$(object_of "$f" "$base")" "$f"
done
for patch in "$here"/mutants/*.patch; do
	name=$(basename "$patch" .patch)
	if [ -n "${NAMES:-}" ]; then
		case " $NAMES " in *" $name "*) ;; *) continue ;; esac
	fi
	dir=$build/sim-mutants/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -R src "$dir/"
	if ! patch -s -p1 -F0 --no-backup-if-mismatch -d "$dir" <"$patch"; then
		echo "sim-mutants: $patch no longer applies to src/: update it" >&2
		exit 1
	fi
	touched=" $(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$patch" | tr '\n' ' ')"
	# the copy's headers before the tree's (FLAGS name the tree's folders)
	incs=$(find "$dir/src" -type d | sed 's/^/-I/')
	objs=""
	for f in "$here"/*.c $srcs_of_sim; do
		case $touched in
		*" $f "* | *".h "*)
			# shellcheck disable=SC2086 # word list on purpose
			"$cc" $incs -c "$@" -o "$(object_of "$f" "$dir")" \
				"$(if [ -f "$dir/$f" ]; then echo "$dir/$f"; else echo "$f"; fi)"
			objs="$objs $(object_of "$f" "$dir")" ;;
		*) objs="$objs $(object_of "$f" "$base")" ;;
		esac
	done
	# shellcheck disable=SC2086 # word lists on purpose
	"$cc" "$@" -o "$dir/sim" $objs $SIM_LIBS
	# a mutant of the operator controls runs the controls' seeds
	extra=""
	case $name in
	controls-*) extra="--controls --first 1000001" seeds=$default_seeds
		regress=$here/regress.txt ;;
	jobs-*) extra="--jobs --first 2000001" seeds=${SIM_JOBS_SEEDS:-500}
		regress=$here/regress-jobs.txt ;;
	triggers-*) extra="--triggers --first 3000001" seeds=${SIM_TRIGGER_SEEDS:-300}
		regress=$here/regress-triggers.txt ;;
	*) seeds=$default_seeds regress=$here/regress.txt ;;
	esac
	start=$(date +%s.%N)
	# shellcheck disable=SC2086 # word list on purpose
	if "$dir/sim" $extra --seeds "$seeds" --known "$here/known.txt" \
		--regress "$regress" --mutant "$name" \
		--keep 12 >"$dir/out.txt" 2>&1; then
		echo "sim-mutants: $name SURVIVED the default seeds"
		survived="$survived $name"
	else
		seed=$(sed -n 's/^sim: seed \([0-9]*\) FAILED: \(.*\)/\1: \2/p' "$dir/out.txt" | head -n 1)
		took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		echo "sim-mutants: $name caught in ${took}s by seed $seed"
	fi
done
if [ -n "$survived" ]; then
	echo "sim-mutants: survived:$survived" >&2
	exit 1
fi
