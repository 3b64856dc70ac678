#!/bin/sh
# check-dist.sh: `make dist` is reproducible and complete. Two runs, the
# second with another umask, time zone and locale, must give the same bytes;
# the tarball holds exactly the files git knows, under pgleader-VERSION/,
# owned by 0:0, all with the last commit's time.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
name=pgleader-$version
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

failed=0
fail() {
	echo "check-dist: $*" >&2
	failed=1
}

make -s -C "$top" dist DISTDIR="$tmp/a" >"$tmp/a.log" 2>&1 ||
	{ cat "$tmp/a.log" >&2; echo "check-dist: make dist failed" >&2; exit 1; }
# A second run a second later, as someone else might run it.
sleep 1
(umask 077 && TZ=America/New_York LC_ALL=C.UTF-8 make -s -C "$top" dist DISTDIR="$tmp/b") \
	>"$tmp/b.log" 2>&1 ||
	{ cat "$tmp/b.log" >&2; echo "check-dist: the second make dist failed" >&2; exit 1; }

a=$tmp/a/$name.tar.gz
b=$tmp/b/$name.tar.gz
if cmp -s "$a" "$b"; then
	echo "check-dist: two runs give the same bytes ($(sha256sum <"$a" | cut -c1-16)...)"
else
	fail "two runs of make dist differ: $(cmp "$a" "$b" 2>&1)"
fi

# Contents: the files git knows, nothing else.
tar -tzf "$a" | sort >"$tmp/listed"
(cd "$top" && git ls-files) | sed "s,^,$name/," | sort >"$tmp/known"
if ! cmp -s "$tmp/listed" "$tmp/known"; then
	fail "the tarball's files are not the ones git knows:"
	diff "$tmp/known" "$tmp/listed" | sed -n 's/^[<>]/  &/p' >&2
fi
grep -q '/\.git/' "$tmp/listed" && fail "the tarball holds .git"
for f in VERSION LICENSE Makefile packaging/debian/control packaging/rpm/pgleader.spec; do
	grep -qx "$name/$f" "$tmp/listed" || fail "$f is missing from the tarball"
done

# Owners and times: "-rw-r--r-- 0/0 1077 2026-11-22 20:12 pgleader-0.2.0/LICENSE".
TZ=UTC tar -tvzf "$a" --numeric-owner | awk '{ print $2, $4, $5 }' | sort -u >"$tmp/meta"
commit=$(cd "$top" && TZ=UTC git log -1 --date=format-local:'%Y-%m-%d %H:%M' --format=%cd)
if [ "$(cat "$tmp/meta")" != "0/0 $commit" ]; then
	fail "owners and times are not all 0/0 and the last commit's ($commit):"
	sed 's/^/  /' "$tmp/meta" >&2
fi

[ $failed -eq 0 ] || exit 1
echo "check-dist: $name.tar.gz holds the $(wc -l <"$tmp/listed") files git knows, owned by 0/0, dated $commit"
