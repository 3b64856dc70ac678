#!/bin/sh
# tests/mutants/run.sh [--all-tests] [NAME...]: how many one-line mutants of
# the code outside the election decider the tests catch (issue 25, item 13).
# Not part of make check: it builds the tree once per mutant and runs tests
# that take minutes. Each tests/mutants/NAME.patch starts with two lines,
# "MUTANT: what it breaks" and "tests: ..." (the tests that should catch it:
# unit:TEST a unit test binary, unit:test_sql_pg the statements against a
# real server (make unit-pg), it:FILE an integration test file, sim make
# sim, sim-jobs the simulator's seeds with jobs), then the patch. Each
# mutant is applied to a copy of the tracked files of this tree (never to
# the tree) in $MUTANTS_DIR/NAME, built, and its tests run until one fails
# (caught) or all pass (survived). --all-tests runs make unit, unit-pg and
# sim as well. A patch that no longer applies fails the run: update it.
# The issue25-* mutants are the 8 that survived every test of 0.4.0.
#
#   tests/mutants/run.sh                    # every mutant, its own tests
#   tests/mutants/run.sh ledger-prune-running child-grace-doubled
#   PYTHON=/usr/bin/python3 MUTANTS_DIR=/var/tmp/m tests/mutants/run.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=${MUTANTS_DIR:-/tmp/pgleader-mutants}
python=${PYTHON:-python3}
limit=${MUTANT_TIMEOUT:-1200}
all_tests=false
if [ "${1:-}" = --one ]; then # one test, in a mutant's copy (below)
	one=$2
else
	one=""
fi
if [ "${1:-}" = --all-tests ]; then
	all_tests=true
	shift
fi
names="$*"
mkdir -p "$work"
caught=0 total=0 survived="" broken=""

# One test of a mutant, in its copy: 0 when it passes.
run_test() {
	case $1 in
	unit:test_sql_pg) make -s WERROR=0 unit-pg ;;
	unit:*) make -s WERROR=0 "tests/unit/${1#unit:}" &&
		CK_FORK=yes "./tests/unit/${1#unit:}" ;;
	it:*) "$python" -m pytest -q -x -p no:cacheprovider "tests/integration/${1#it:}" ;;
	sim) make -s WERROR=0 sim ;;
	sim-jobs) make -s WERROR=0 tests/sim/sim &&
		./tests/sim/sim --jobs --first 2000001 --seeds 500 \
			--known tests/sim/known.txt --regress tests/sim/regress-jobs.txt ;;
	all-unit) make -s WERROR=0 unit ;;
	*) echo "run.sh: unknown test $1" >&2; return 2 ;;
	esac
}

if [ -n "$one" ]; then
	run_test "$one"
	exit
fi

for patch in "$here"/*.patch; do
	name=$(basename "$patch" .patch)
	if [ -n "$names" ]; then
		case " $names " in *" $name "*) ;; *) continue ;; esac
	fi
	dir=$work/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$top" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$dir"
	if ! patch -s -p1 -F0 --no-backup-if-mismatch -d "$dir" <"$patch" >"$dir.log" 2>&1; then
		echo "mutants: $name no longer applies: update $patch" >&2
		exit 1
	fi
	tests=$(sed -n 's/^tests: //p' "$patch" | head -n 1)
	if $all_tests; then
		tests="$tests all-unit unit:test_sql_pg sim"
	fi
	total=$((total + 1))
	start=$(date +%s)
	# the mutated files must compile (else a test's build failure would
	# pass for a catch); pgleader only for the integration tests
	objs=$(sed -n 's|^+++ b/\(src/.*\)\.c$|\1.o|p' "$patch")
	case " $tests " in *" it:"*) objs="$objs all" ;; esac
	# shellcheck disable=SC2086 # a word list
	if ! (cd "$dir" && make -s WERROR=0 -j2 $objs) >>"$dir.log" 2>&1; then
		echo "mutants: $name does not build (see $dir.log)"
		broken="$broken $name"
		continue
	fi
	by=""
	for t in $tests; do
		if ! (cd "$dir" && PYTHON=$python timeout "$limit" "$here/run.sh" --one "$t") \
			>>"$dir.log" 2>&1; then
			by=$t
			break
		fi
	done
	took=$(($(date +%s) - start))
	if [ -n "$by" ]; then
		caught=$((caught + 1))
		echo "mutants: $name caught by $by (${took}s)"
	else
		survived="$survived $name"
		echo "mutants: $name SURVIVED $tests (${took}s)"
	fi
done
echo "mutants: caught $caught of $total${survived:+; survived:$survived}${broken:+; do not build:$broken}"
if [ "$total" -gt 0 ]; then
	awk -v c="$caught" -v t="$total" 'BEGIN { printf "mutants: %.0f %% caught\n", 100 * c / t }'
fi
