#!/usr/bin/python3
"""pgleader's fleet benchmark (DESIGN 15; `make bench`, not part of `make
check`): what N pgleader nodes on one lock cost one PostgreSQL.

For each fleet size N (--sizes, default 100,300,1000), against a private
PostgreSQL 15 with default settings but max_connections (2 N + 50):
N nodes with the same configuration (default timings, queue_depth 3,
tests/stampjob as the command) are started, 50 at a time (the next 50
once the server has a session for each); once
every node has a session and their number is steady, and --warmup seconds
later (a fleet that just started ranks each of its standbys once), over
--seconds:

  backends      pgleader's sessions in pg_stat_activity (at the end)
  waiters       the lock's queue in pg_locks, the most seen (sampled)
  server CPU    the PostgreSQL processes' time on a CPU (the scheduler's
                count, /proc/PID/schedstat), in % of one core
  server PSS    their proportional memory (smaps_rollup), MiB
  statements/s  pg_stat_database's xact_commit + xact_rollback: every
                pgleader statement is one transaction (autocommit)
  pgleader CPU  the N pgleader processes' time, % of one core
  (--queue-depth 1000: every standby queues, the fleet as it was before)

then --kills times: kill -9 of the leader (a node started in its place,
so the fleet stays N) -> the next command's start stamp: p50, p99, max.

The machine may be shared: the load average is printed with the figures.

With --poll-dsn, PgBouncer (pool_mode = transaction, default_pool_size 4,
started by the bench in front of the same PostgreSQL, max_connections 100
whatever N) is every node's poll_dsn: backends then counts pgleader's own sessions only, the pooler's
server sessions are given apart (pooled: at the end, the most seen), and
the pooler's CPU too; server CPU counts every PostgreSQL process, the
pooler's server sessions included.

    /usr/bin/python3 tests/bench_fleet.py [--sizes 100,300] [--seconds 30] [--poll-dsn]
"""

import argparse
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration"))

import pgharness as h  # noqa: E402
from bench_ticks import line  # noqa: E402

STAMPJOB = os.environ.get("PGLEADER_STAMPJOB") or os.path.join(h.REPO, "tests", "stampjob")


def starts(path):
    """[(node, mono)] of stampjob's start lines."""
    out = []
    for ln in h.read_text(path).splitlines():
        p = ln.split()
        if len(p) >= 5 and p[0] == "start" and p[-1] == ".":
            out.append((p[1], float(p[3][2:])))
    return out


def cpu_seconds(pids):
    """{pid: seconds on a CPU} (pgharness.cpu_seconds: the scheduler's
    count, not the ticks)."""
    out = {}
    for pid in pids:
        t = h.cpu_seconds(pid)
        if t is not None:
            out[pid] = t
    return out


def cpu_used(before, pids):
    """Seconds the processes pids ran since the snapshot before (one
    started since: all of its time)."""
    now = cpu_seconds(pids)
    return sum(t - before.get(pid, 0.0) for pid, t in now.items())


def pss_kb(pids):
    total = 0
    for pid in pids:
        for ln in h.read_text("/proc/%d/smaps_rollup" % pid).splitlines():
            if ln.startswith("Pss:"):
                total += int(ln.split()[1])
    return total


class Fleet:
    def __init__(self, opts, n):
        self.opts = opts
        self.n = n
        self.work = h.make_tempdir("pgleader-bench-fleet")
        # with poll_dsn the fleet's backends do not grow with it, and
        # neither need max_connections, whose lock table every poll's
        # pg_locks walks: 100
        settings = {"max_connections": "100" if opts.poll_dsn else str(2 * n + 50),
                    "log_connections": "off",
                    "log_disconnections": "off"}
        if opts.top:
            settings["shared_preload_libraries"] = "'pg_stat_statements'"
        self.cluster = h.PgCluster("fleet", settings=settings)
        self.stamps = os.path.join(self.work, "stamps")
        self.nodes = {}
        self.next_id = 0
        self.bouncer = None

    def start_node(self):
        name = "n%04d" % self.next_id
        self.next_id += 1
        self.nodes[name] = h.Pgleader(
            ["--dsn", self.cluster.dsn(), "--lock-name", "bench-fleet", "--node-id", name] +
            (["--queue-depth", str(self.opts.queue_depth)] if self.opts.queue_depth else []) +
            (["--poll-dsn", self.bouncer.dsn()] if self.bouncer else []) +
            ["--", STAMPJOB, self.stamps], self.work, name=name, use_wrapper=False)
        return name

    def scalar(self, sql):
        return int(self.cluster.scalar(sql) or 0)

    def backends(self):
        """pgleader's own sessions (not the pooler's server sessions, which
        carry the name of a client they served)."""
        pooled = self.pooled_pids()
        rows = self.cluster.psql("SELECT pid FROM pg_stat_activity "
                                 "WHERE application_name LIKE 'pgleader/%'")
        return len([r for r in rows if int(r[0]) not in pooled])

    def pooled_pids(self):
        return self.bouncer.server_pids() if self.bouncer else set()

    def waiters(self):
        return self.scalar("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                           "AND objsubid = 1 AND NOT granted")

    def statements(self):
        return self.scalar("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                           "WHERE datname = 'postgres'")

    def leader(self):
        rows = self.cluster.psql("SELECT a.application_name FROM pg_locks l JOIN "
                                 "pg_stat_activity a USING (pid) WHERE l.locktype = "
                                 "'advisory' AND l.objsubid = 1 AND l.granted")
        return rows[0][0].split("/", 1)[1] if rows else None

    def settle(self):
        """Every node connected, tried and settled: a backend for each node
        at least (with --poll-dsn: a pooler's client), and their number
        steady."""
        h.wait_until(lambda: starts(self.stamps), 60, interval=0.1, what="a leader")
        last, steady = -1, 0
        deadline = time.monotonic() + 180
        while (steady < 3 or self.reached() < self.n) and time.monotonic() < deadline:
            time.sleep(2)
            b = self.backends()
            steady = steady + 1 if b == last else 0
            last = b
        if self.reached() < self.n:
            raise AssertionError("%d nodes reached for %d after 180 s" % (self.reached(), self.n))

    def reached(self):
        """The nodes with a session: a backend, or a pooler's client (the
        bench's own psql aside)."""
        if not self.bouncer:
            return self.backends()
        clients = [c for c in self.bouncer.show("CLIENTS")
                   if c.get("database") == "postgres"]
        return len(clients) + self.backends() // 2

    def bouncer_pids(self):
        return [self.bouncer.pid] if self.bouncer else []

    def measure(self):
        if self.opts.top:
            self.cluster.psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; "
                              "SELECT pg_stat_statements_reset()")
        server = self.cluster.server_pids()
        nodes = [p.pid for p in self.nodes.values()]
        t0, s0 = time.monotonic(), self.statements()
        c0, n0 = cpu_seconds(server), cpu_seconds(nodes)
        b0 = cpu_seconds(self.bouncer_pids())
        most = pooled = 0
        while time.monotonic() - t0 < self.opts.seconds:
            most = max(most, self.waiters())
            pooled = max(pooled, len(self.pooled_pids()))
            time.sleep(0.5)
        dt = time.monotonic() - t0
        server = self.cluster.server_pids()  # the pooler's sessions, new ones too
        c1, n1, s1 = cpu_used(c0, server), cpu_used(n0, nodes), self.statements()
        b1 = cpu_used(b0, self.bouncer_pids())
        if self.opts.top:
            for r in self.cluster.psql(
                    "SELECT calls, round(total_exec_time::numeric, 1), "
                    "round(mean_exec_time::numeric, 3), left(regexp_replace(query, "
                    "'\\s+', ' ', 'g'), 90) FROM pg_stat_statements ORDER BY "
                    "total_exec_time DESC LIMIT %d" % self.opts.top):
                print("  top: calls %s total %s ms mean %s ms: %s" % tuple(r))
        return dict(backends=self.backends(), waiters=most, pooled=pooled,
                    pooler_cpu=100.0 * b1 / dt,
                    server_cpu=100.0 * c1 / dt,
                    server_pss_mib=pss_kb(server) / 1024.0,
                    statements=(s1 - s0) / dt,
                    pgleader_cpu=100.0 * n1 / dt)

    def kills(self):
        ms = []
        for _ in range(self.opts.kills):
            leader = self.leader()
            if leader is None or leader not in self.nodes:
                time.sleep(1)
                continue
            before = len(starts(self.stamps))
            t0 = time.monotonic()
            p = self.nodes.pop(leader)
            os.kill(p.pid, signal.SIGKILL)
            h.wait_until(lambda: len(starts(self.stamps)) > before, 30, interval=0.002,
                         what="the next leader's command")
            ms.append((starts(self.stamps)[before][1] - t0) * 1000)
            p.wait(10)
            self.start_node()
            time.sleep(3)  # the queue full again
        return ms

    def run(self):
        self.cluster.start()
        if self.opts.poll_dsn:
            self.bouncer = h.PgBouncer(self.cluster, settings={
                "max_client_conn": str(2 * self.n + 100), "max_db_connections": "20",
                # the default: a server session released within 30 s is
                # reused without a check query (the tests check every time)
                "server_check_delay": "30"})
        # 50 at a time, the next 50 once the server has a session for
        # each node started (or after 60 s): a thousand processes started
        # in one go would measure the machine's run queue, not the fleet,
        # and on a machine that forks slowly (a backend's start took 20 ms
        # on one VM here), connections waiting past connect_timeout in the
        # listen queue are given up and tried again, and the fleet never
        # gets in
        for k in range(self.n):
            self.start_node()
            if k % 50 == 49 or k == self.n - 1:
                h.wait_until(lambda: self.reached() >= k + 1, 60, interval=0.2,
                             what="a session for each of %d nodes" % (k + 1))
        self.settle()
        # each node's second count, and with it the ranking each does
        # once per session, comes 16 tries (ELECTION_COUNT_EVERY_MAX, at
        # 5 s) after its first: the figure is the steady fleet's, not one
        # that just started
        time.sleep(self.opts.warmup)
        m = self.measure()
        ms = self.kills()
        return m, ms

    def cleanup(self):
        for p in self.nodes.values():
            p.cleanup()
        if self.bouncer:
            self.bouncer.stop()
        self.cluster.destroy()
        shutil.rmtree(self.work, ignore_errors=True)


def main(argv):
    ap = argparse.ArgumentParser(description="pgleader fleet benchmark")
    ap.add_argument("--sizes", default="100,300,1000", help="fleet sizes (100,300,1000)")
    ap.add_argument("--seconds", type=float, default=30, help="measuring window (30)")
    ap.add_argument("--warmup", type=float, default=100,
                    help="seconds between the fleet's settling and the window (100)")
    ap.add_argument("--kills", type=int, default=10, help="kill -9 failovers per size (10)")
    ap.add_argument("--queue-depth", type=int, default=0,
                    help="the nodes' queue_depth (default: pgleader's, 3); 1000: every "
                    "standby queues, as before DESIGN 15")
    ap.add_argument("--poll-dsn", action="store_true",
                    help="every node polls through PgBouncer (transaction pooling)")
    ap.add_argument("--top", type=int, default=0,
                    help="with pg_stat_statements: the N statements that took the "
                    "server's time")
    opts = ap.parse_args(argv)
    print("pgleader fleet benchmark: %s; queue_depth %s%s; %d cores; load average %s" % (
        h.pgleader_bin(), opts.queue_depth or "3 (default)",
        "; poll_dsn through PgBouncer (transaction pooling)" if opts.poll_dsn else "",
        os.cpu_count(),
        open("/proc/loadavg").read().split()[:3]))
    print("%6s %9s %8s %11s %12s %13s %13s" % ("nodes", "backends", "waiters", "server CPU",
                                                 "server PSS", "statements/s", "pgleader CPU"))
    failed = False
    for n in (int(x) for x in opts.sizes.split(",")):
        f = Fleet(opts, n)
        try:
            m, ms = f.run()
        except AssertionError as e:
            print("%6d FAILED: %s" % (n, e))
            failed = True
            continue
        finally:
            f.cleanup()
        print("%6d %9d %8d %10.1f%% %8.0f MiB %13.0f %12.1f%%" % (
            n, m["backends"], m["waiters"], m["server_cpu"], m["server_pss_mib"],
            m["statements"], m["pgleader_cpu"]))
        if opts.poll_dsn:
            print("  pooler: %d server sessions at most, PgBouncer CPU %.1f%%" % (
                m["pooled"], m["pooler_cpu"]))
        if ms:
            print(line("  kill9 (%d)" % n, ms))
        print("  load average %s" % open("/proc/loadavg").read().split()[:3])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
