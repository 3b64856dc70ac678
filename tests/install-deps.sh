#!/bin/bash
# Install the Debian 12 packages that building pgleader and running every
# test (make check, make package-check, make demo, make bench) need.
#
#   - everything installed already: prints nothing, exits 0;
#   - something missing, run as root: apt-get installs it, non-interactively,
#     without starting the PostgreSQL or PgBouncer services (the tests start
#     their own servers);
#   - something missing, not root: prints the one command to run as root and
#     exits 1.
set -eu

PACKAGES=(
	gcc make pkg-config
	libpq-dev libev-dev libinih-dev libsystemd-dev libjansson-dev check
	libmicrohttpd-dev libcurl4-openssl-dev prometheus
	postgresql-15 postgresql-client-15 pgbouncer
	python3 python3-pytest python3-pytest-xdist
	# the schedule arithmetic: its zones, and the oracle of make schedule-diff
	tzdata python3-croniter
	mandoc man-db valgrind
	cppcheck shellcheck pmccabe
	systemd procps iproute2 util-linux
	# make dist, deb, rpm and package-check
	git dpkg-dev debhelper lintian rpm rpmlint
	# make sim-mutants
	patch
)

is_installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

missing=()
for p in "${PACKAGES[@]}"; do
	is_installed "$p" || missing+=("$p")
done

have_postgres_user() { getent passwd postgres >/dev/null 2>&1; }

# postgresql-common creates the 'postgres' system user; the tests run initdb
# and postgres as that user when they are started as root (as any other user,
# they run them as that user and do not need it).
ensure_postgres_user() {
	have_postgres_user && return 0
	[ "$(id -u)" -eq 0 ] || return 0
	echo "install-deps: creating the 'postgres' system user"
	useradd --system --user-group --home-dir /var/lib/postgresql \
		--shell /bin/bash --comment "PostgreSQL administrator" postgres
}

if [ ${#missing[@]} -eq 0 ]; then
	ensure_postgres_user
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run this as root, then try again:" >&2
	echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"

# Keep the packages' own services (postgresql, pgbouncer) from starting: a
# policy-rc.d that answers 101 ("action forbidden") is honoured by
# invoke-rc.d and deb-systemd-invoke, and also keeps the install from failing
# in a container without an init system. Ours is removed afterwards; one that
# was already there (Docker images ship one) is left alone.
policy=/usr/sbin/policy-rc.d
created_policy=
cleanup() {
	if [ -n "$created_policy" ]; then
		rm -f "$policy"
	fi
}
trap cleanup EXIT
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# temporary, from pgleader tests/install-deps.sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	created_policy=1
fi

export DEBIAN_FRONTEND=noninteractive
# Wait for a dpkg lock held by e.g. unattended-upgrades on a freshly booted
# machine instead of failing at once.
APT_OPTS=(-qq -o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)
apt-get "${APT_OPTS[@]}" update
apt-get "${APT_OPTS[@]}" install -y --no-install-recommends \
	-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
	"${missing[@]}" </dev/null

# Should a service have been started all the same (a policy-rc.d that was
# already there and allows it), stop the ones that this run installed.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	for p in "${missing[@]}"; do
		case "$p" in
		postgresql-15) systemctl stop postgresql.service postgresql@15-main.service >/dev/null 2>&1 || true ;;
		pgbouncer) systemctl stop pgbouncer.service >/dev/null 2>&1 || true ;;
		esac
	done
else
	for p in "${missing[@]}"; do
		case "$p" in
		postgresql-15)
			if command -v pg_ctlcluster >/dev/null 2>&1; then
				pg_ctlcluster 15 main stop >/dev/null 2>&1 || true
			fi
			;;
		pgbouncer)
			if [ -x /etc/init.d/pgbouncer ]; then
				/etc/init.d/pgbouncer stop >/dev/null 2>&1 || true
			fi
			;;
		esac
	done
fi

still=()
for p in "${missing[@]}"; do
	is_installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
	echo "install-deps: still not installed: ${still[*]}" >&2
	exit 1
fi

ensure_postgres_user
echo "install-deps: done"
