#!/bin/bash
# make demo: two pgleader nodes elect a leader through a throwaway
# PostgreSQL, the leader is killed with SIGKILL, the other node takes over.
#
# Everything lives in one temporary directory (PostgreSQL's data directory,
# its unix socket, the toy job) that is removed at the end; every process the
# demo starts is stopped by its PID on any exit, Ctrl-C included.
#
# Environment: PGLEADER (binary, default ./pgleader), PG_BINDIR (PostgreSQL
# server binaries, default /usr/lib/postgresql/15/bin), DEMO_KEEP=1 (keep the
# temporary directory and its logs).
# shellcheck disable=SC2317  # functions called through wait_for
set -u

cd "$(dirname "$0")/.." || exit 1
PGLEADER=${PGLEADER:-./pgleader}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
START=$(date +%s.%N)

say() { printf '[demo] %s\n' "$*"; }
die() { printf '[demo] error: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

[ -x "$PGLEADER" ] || die "$PGLEADER not found: run make first"
[ -x "$PG_BINDIR/initdb" ] || die "no PostgreSQL server in $PG_BINDIR: run tests/install-deps.sh"
for v in $(compgen -e); do
	case $v in PGLEADER_*) unset "$v" ;; esac
done

# --- clean-up, by PID, on any exit -------------------------------------------
DIR=
PGDATA_DIR=
NODE_PIDS=()     # pgleader processes
declare -A NODE_PID=() RELAY_PID=()   # by node name
REAPED=" "       # PIDs already waited for (never signalled again)
RELAY_PIDS=()    # the output prefixers
PG_STARTED=
CLEANED=

# as_pg OUTFILE COMMAND...: run a PostgreSQL tool as 'postgres' when root.
# The output goes to OUTFILE from inside the subshell: a redirection on the
# function call itself would also swallow what the INT trap prints.
as_pg() {
	local out=$1
	shift
	if [ "$(id -u)" -eq 0 ]; then
		(cd / && exec runuser -u postgres -- "$@") >"$out" 2>&1
	else
		("$@") >"$out" 2>&1
	fi
}

cleanup() {
	[ -n "$CLEANED" ] && return
	CLEANED=1
	trap '' INT TERM HUP PIPE
	local pid
	# pgleader nodes: SIGTERM, then SIGKILL after 3 s.
	local nodes=()
	for pid in "${NODE_PIDS[@]}"; do
		case $REAPED in *" $pid "*) ;; *) nodes+=("$pid") ;; esac
	done
	for pid in "${nodes[@]}"; do
		kill -TERM "$pid" 2>/dev/null && say "stopping pgleader pid $pid"
	done
	for _ in $(seq 30); do
		alive=
		for pid in "${nodes[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	for pid in "${nodes[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			disown "$pid" 2>/dev/null
			kill -KILL "$pid" 2>/dev/null && say "pgleader pid $pid did not stop: killed"
		fi
	done
	# Jobs left behind (each runs in its own process group, recorded by PID).
	if [ -n "$DIR" ] && [ -f "$DIR/jobs.pids" ]; then
		while read -r pid; do
			if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$DIR/job.sh"; then
				say "job pid $pid still running: killing its process group"
				kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
			fi
		done <"$DIR/jobs.pids"
	fi
	if [ -n "$PG_STARTED" ]; then
		say "stopping PostgreSQL"
		as_pg /dev/null "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 10 stop ||
			as_pg /dev/null "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -m immediate -w -t 10 stop
		if [ -f "$PGDATA_DIR/postmaster.pid" ]; then
			pid=$(head -n 1 "$PGDATA_DIR/postmaster.pid")
			if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
				tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$PGDATA_DIR"; then
				kill -KILL "$pid" 2>/dev/null
			fi
		fi
	fi
	# The prefixers end when their writers are gone; make sure.
	sleep 0.2
	for pid in "${RELAY_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "$DIR" ]; then
		if [ "${DEMO_KEEP:-}" = 1 ]; then
			say "kept $DIR"
		else
			rm -rf -- "$DIR"
			say "removed $DIR"
		fi
	fi
}
trap cleanup EXIT
trap 'echo; say "interrupted"; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
# Output gone (make demo | head): carry on silently and clean up.
trap 'exec >/dev/null 2>&1; exit 141' PIPE

show_logs() {
	[ -n "$DIR" ] || return 0
	if [ -f "$PGDATA_DIR/../postgres.log" ]; then
		say "PostgreSQL log (last lines):"
		tail -n 20 "$PGDATA_DIR/../postgres.log" | sed 's/^/[postgres] /'
	fi
}
fail() {
	printf '[demo] FAILED: %s\n' "$*" >&2
	show_logs
	exit 1
}

# --- a throwaway PostgreSQL --------------------------------------------------
# As root, /tmp: user postgres must reach the data directory (TMPDIR might
# be under /root).
tmp=${TMPDIR:-/tmp}
[ "$(id -u)" -eq 0 ] && tmp=/tmp
DIR=$(mktemp -d "$tmp/pgleader-demo.XXXXXX") || die "mktemp failed"
PGDIR=$DIR/pg
PGDATA_DIR=$PGDIR/data
SOCKDIR=$PGDIR/sock
mkdir -p "$SOCKDIR"
if [ "$(id -u)" -eq 0 ]; then
	getent passwd postgres >/dev/null || die "no 'postgres' user: run tests/install-deps.sh"
	chmod 711 "$DIR"
	chown -R postgres: "$PGDIR"
fi

free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 40000))
		if [ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

say "temporary directory $DIR"
say "initdb (PostgreSQL $("$PG_BINDIR/postgres" --version | awk '{print $3}'))"
as_pg "$PGDIR/initdb.log" "$PG_BINDIR/initdb" -D "$PGDATA_DIR" -U postgres -A trust -E UTF8 --locale=C \
	--no-sync || { cat "$PGDIR/initdb.log" >&2; fail "initdb failed"; }

PORT=
for attempt in 1 2 3; do
	PORT=$(free_port) || fail "no free port found"
	say "starting PostgreSQL on 127.0.0.1:$PORT, socket in $SOCKDIR"
	PG_STARTED=1
	if as_pg /dev/null "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$PGDIR/postgres.log" -w -t 20 \
		-o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$SOCKDIR -c fsync=off -c full_page_writes=off -c synchronous_commit=off" \
		start; then
		break
	fi
	[ -f "$PGDATA_DIR/postmaster.pid" ] || PG_STARTED=
	[ "$attempt" = 3 ] && fail "PostgreSQL did not start"
done
DSN="host=127.0.0.1 port=$PORT dbname=postgres user=postgres connect_timeout=5"

psql_q() {
	"$PG_BINDIR/psql" -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -At -F ' ' -c "$1" 2>/dev/null
}
psql_q 'select 1' >/dev/null || fail "cannot query PostgreSQL"

# --- the toy job and the two nodes -------------------------------------------
mkfifo "$DIR/tick"
cat >"$DIR/job.sh" <<EOF
#!/bin/bash
# The demo's job: say where it runs, once a second. (It waits with read -t on
# a FIFO nobody writes to, not sleep: no child process, and SIGTERM ends it
# at once.)
echo \$\$ >>"$DIR/jobs.pids"
trap 'echo "job on \$PGLEADER_NODE_ID (pid \$\$) got SIGTERM, exiting"; exit 0' TERM
exec 3<>"$DIR/tick"
while :; do
	echo "job running on \$PGLEADER_NODE_ID (pid \$\$, fencing token \${PGLEADER_FENCING_TOKEN:-none})"
	read -r -t 1 -u 3 _
done
EOF
chmod 755 "$DIR/job.sh"

# Prefix every line of a node's output with its name; note the time of the
# node's first job line and when it says it is waiting as a standby.
relay() {
	local node=$1 line
	trap '' INT PIPE   # keep draining the node's output whatever happens
	while IFS= read -r line; do
		printf '[%s] %s\n' "$node" "$line" 2>/dev/null
		case $line in
		"job running on "*)
			if [ ! -e "$DIR/first-job.$node" ]; then
				# written whole, then renamed: a reader never sees it empty
				now >"$DIR/first-job.$node.tmp" && mv "$DIR/first-job.$node.tmp" "$DIR/first-job.$node"
			fi
			;;
		*"waiting for leader lease"*)
			: >"$DIR/standby.$node"
			;;
		esac
	done
}

start_node() {
	local node=$1
	mkfifo "$DIR/out.$node"
	relay "$node" <"$DIR/out.$node" &
	RELAY_PIDS+=($!)
	RELAY_PID[$node]=$!
	disown $!   # never waited for: no "Terminated" notices from bash
	# setsid: Ctrl-C reaches the demo script only, which stops the nodes in order.
	setsid "$PGLEADER" --dsn "$DSN" --node-id "$node" \
		--ping-interval 200ms --ping-timeout 400ms --ping-failures 3 \
		--grace-period 1s --server-lease 4s --retry-interval 1s \
		-- "$DIR/job.sh" >"$DIR/out.$node" 2>&1 </dev/null &
	NODE_PIDS+=($!)
	NODE_PID[$node]=$!
	say "started $node: pgleader pid $! (ping every 200ms, lease lost after 3 missed pings, retry every 1s)"
}

wait_for() { # wait_for SECONDS COMMAND...: poll every 50 ms
	local deadline
	deadline=$(awk -v t="$(now)" -v s="$1" 'BEGIN { printf "%.3f", t + s }')
	shift
	while ! "$@"; do
		if awk -v t="$(now)" -v d="$deadline" 'BEGIN { exit !(t > d) }'; then
			return 1
		fi
		sleep 0.05
	done
}
exists() { [ -e "$1" ]; }
either_leads() { [ -e "$DIR/first-job.node-a" ] || [ -e "$DIR/first-job.node-b" ]; }
alive() { kill -0 "$1" 2>/dev/null; }
dead() { ! kill -0 "$1" 2>/dev/null; }
reap() { wait "$1" 2>/dev/null; local rc=$?; REAPED+="$1 "; return $rc; }

show_lock() {
	say "the advisory locks as PostgreSQL sees them (pg_locks, pg_stat_activity):"
	psql_q "select case when l.objsubid = 2 then 'fence ' else 'lock ' end
	               || case when l.granted then 'held by ' else 'waited for by ' end
	               || a.application_name || ' (backend pid ' || a.pid || ')'
	        from pg_locks l join pg_stat_activity a using (pid)
	        where l.locktype = 'advisory'
	        order by l.objsubid, l.granted desc" | sed 's/^/[demo]   /'
}

say "starting two nodes, node-a and node-b, around the same job"
start_node node-a
start_node node-b

leads_or_gone() { either_leads || { dead "${NODE_PID[node-a]}" && dead "${NODE_PID[node-b]}"; }; }
wait_for 10 leads_or_gone || fail "no node started the job within 10 s"
if ! either_leads; then
	reap "${NODE_PID[node-a]}"; rc_a=$?
	reap "${NODE_PID[node-b]}"; rc_b=$?
	fail "both nodes exited before leading (node-a status $rc_a, node-b status $rc_b)"
fi
if [ -e "$DIR/first-job.node-a" ]; then
	LEADER=node-a STANDBY=node-b
else
	LEADER=node-b STANDBY=node-a
fi
LPID=${NODE_PID[$LEADER]} SPID=${NODE_PID[$STANDBY]}
wait_for 3 exists "$DIR/standby.$STANDBY" || true
alive "$SPID" || fail "$STANDBY exited"
say "$LEADER leads, $STANDBY is a standby"
show_lock

sleep 3
[ -e "$DIR/first-job.$STANDBY" ] && fail "both nodes ran the job"
alive "$LPID" || fail "$LEADER exited"

# --- kill the leader ---------------------------------------------------------
OLD_JOBS=$(cat "$DIR/jobs.pids" 2>/dev/null)
say "kill -KILL $LPID   ($LEADER's pgleader)"
T_KILL=$(now)
disown "$LPID"   # no "Killed" notice from bash; it still reaps it
kill -KILL "$LPID"
wait_for 5 dead "$LPID" || fail "$LEADER's pgleader survived SIGKILL?"
REAPED+="$LPID "
if ! wait_for 15 exists "$DIR/first-job.$STANDBY"; then
	fail "$STANDBY did not take over within 15 s"
fi
T_TAKE=$(cat "$DIR/first-job.$STANDBY")
say "$STANDBY took over: its job printed its first line $(elapsed "$T_KILL" "$T_TAKE") s after the kill"
for pid in $OLD_JOBS; do
	if alive "$pid"; then
		wait_for 2 dead "$pid" ||
			say "WARNING: $LEADER's job (pid $pid) is still running"
	fi
	alive "$pid" || say "$LEADER's job (pid $pid) died with its pgleader"
done
show_lock

sleep 3

# --- stop the survivor -------------------------------------------------------
say "kill -TERM $SPID   ($STANDBY's pgleader: stop the job, release the lock, exit)"
kill -TERM "$SPID"
status=
for _ in $(seq 50); do
	if ! alive "$SPID"; then
		reap "$SPID"
		status=$?
		break
	fi
	sleep 0.1
done
[ -n "$status" ] || fail "$STANDBY did not exit within 5 s of SIGTERM"
wait_for 2 dead "${RELAY_PID[$STANDBY]}"   # let its last lines through first
say "$STANDBY exited with status $status"

cleanup
say "done in $(elapsed "$START" "$(now)") s; takeover took $(elapsed "$T_KILL" "$T_TAKE") s"
[ "$status" = 0 ] || exit 1
exit 0
