"""poll_dsn (DESIGN 15, issue 26): the standbys outside the lock's queue
read its state through PgBouncer in transaction pooling and hold no session
of their own on the server; a fleet then holds few backends, and a kill -9
of the leader still fails over in milliseconds (within retry_interval when
the queued standbys die with it). A poll_dsn that is no transaction pooler
in front of a primary is refused with one line and exit code 78; its
password shows nowhere."""

import re
import time

import pytest

import conftest
import pgharness as h
from pgharness import bound

FLEET = 30
DEPTH = 2

pytestmark = pytest.mark.pooler


def waiter_names(pg, key):
    return sorted(w["application_name"] for w in pg.lock_waiters(key))


def direct_backends(pg, bouncer):
    """pgleader's own sessions on the server: the client backends named
    pgleader/..., but those PgBouncer holds (which carry the name of a
    client it served)."""
    pooled = bouncer.server_pids()
    return [a for a in pg.activity() if a["application_name"].startswith("pgleader/")
            and a["pid"] not in pooled]


def start_pooled(fleet, bouncer, names, *extra):
    return {n: fleet.start(n, "--queue-depth", str(DEPTH), "--poll-dsn", bouncer.dsn(), *extra)
            for n in names}


def watch(pg, bouncer, key, seconds, until=None):
    """Samples the queue and the direct backends for that long (or until
    until(queue) holds): the largest queue, the last one, and the
    direct-backend counts seen."""
    most, last, counts = 0, [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        last = waiter_names(pg, key)
        most = max(most, len(last))
        counts.append(len(direct_backends(pg, bouncer)))
        if until and until(last):
            break
    return most, last, counts




def started_after(ledger, nodes, t0, timeout):
    def first():
        later = [e for e in ledger.events("start") if e.time > t0 and e.node in nodes]
        return min(later, key=lambda e: e.time) if later else None
    return h.wait_until(first, bound(timeout), what="a new leader's command")


def test_fleet_through_pooler(pg, pgbouncer, fleet, ledger, lock_key):
    names = ["n%02d" % i for i in range(FLEET)]
    nodes = start_pooled(fleet, pgbouncer, names[:1])
    ledger.wait_for("start", "n00", timeout=bound(10))
    nodes.update(start_pooled(fleet, pgbouncer, names[1:]))
    # the queue fills to queue_depth and no further; the polling standbys
    # hold no backend: the leader's and the queued standbys' two each, and
    # now and then one that tries the lock
    most, last, _ = watch(pg, pgbouncer, lock_key, bound(3 * h.FAST_RETRY + 2),
                          until=lambda w: len(w) == DEPTH)
    assert most <= DEPTH and len(last) == DEPTH, last
    most, last, counts = watch(pg, pgbouncer, lock_key, 4 * h.FAST_RETRY)
    assert most <= DEPTH, "%d standbys in the queue (queue_depth %d)" % (most, DEPTH)
    steady = 2 * (1 + DEPTH)
    assert min(counts) == steady, (counts, direct_backends(pg, pgbouncer),
                                   pgbouncer.server_pids())
    assert max(counts) <= steady + 3, counts
    # every node is up, and the pooled ones poll: their server sessions are
    # PgBouncer's, at most its pool (default_pool_size = 4)
    assert all(p.running() for p in nodes.values())
    assert len(pgbouncer.server_pids()) <= 4
    polled = [n for n in names if nodes[n].count(r"waiting for leader lease")]
    assert len(polled) == FLEET - 1, polled

    # kill -9 of the leader: a queued standby takes over in milliseconds
    queued = [a.split("/", 1)[1] for a in last]
    t0 = h.kill9_all([nodes.pop("n00")])
    s = started_after(ledger, set(nodes), t0, h.FAST_RETRY + 3)
    assert s.node in queued, (s.node, queued)
    assert s.time - t0 < bound(1.0), "started %.3fs after kill -9" % (s.time - t0)

    # the queue refills to queue_depth, never beyond, from the pooler's
    # standbys
    most, last, _ = watch(pg, pgbouncer, lock_key, bound(3 * h.FAST_RETRY + 2),
                          until=lambda w: len(w) == DEPTH)
    assert most <= DEPTH and len(last) == DEPTH, last

    # kill -9 of the leader and every queued standby: a standby that polls
    # through the pooler sees the lock free and takes it within
    # retry_interval
    queued = [a.split("/", 1)[1] for a in last]
    dead = {s.node, *queued}
    t0 = h.kill9_all([nodes.pop(n) for n in dead])
    s = started_after(ledger, set(nodes), t0, h.FAST_RETRY + 5)
    took = s.time - t0
    assert took < bound(h.FAST_RETRY + 1.0), "started %.3fs after kill -9 (retry_interval %.1fs)" % (
        took, h.FAST_RETRY)
    most, last, counts = watch(pg, pgbouncer, lock_key, bound(3 * h.FAST_RETRY + 2),
                               until=lambda w: len(w) == DEPTH)
    assert most <= DEPTH and len(last) == DEPTH, last
    assert len(ledger.starts()) == 3


def refused(p, pattern, within=15):
    rc = p.wait(bound(within))
    assert rc == 78, "exit %s:\n%s" % (rc, p.text())
    errors = [l for l in p.text().splitlines() if " error: " in l]
    assert len(errors) == 1, p.text()
    line = p.wait_for_log(pattern, timeout=0).group(0)
    assert "\n" not in line
    assert not p.count(r"acquired leader lease"), p.text()
    return line


def test_session_pooler_refused(pg, fleet, ledger, lock_key, request):
    bouncer = h.PgBouncer(pg, pool_mode="session")
    conftest.add_logs(request.node, "pgbouncer log", bouncer.log)
    try:
        # a leader and a queued standby (queue_depth 1), which keep "a"
        # polling: it is refused after 10 polls, meanwhile polling as usual
        fleet.start("l", "--queue-depth", "1")
        ledger.wait_for("start", "l", timeout=bound(10))
        fleet.start("q", "--queue-depth", "1")
        h.wait_until(lambda: len(pg.lock_waiters(lock_key)) == 1, bound(10),
                     what="a queued standby")
        p = fleet.start("a", "--queue-depth", "1", "--poll-dsn", bouncer.dsn())
        p.wait_for_log(r"waiting for leader lease", timeout=bound(10))
        # after 10 polls (retry_interval 1s), meanwhile polling as usual
        line = refused(p, r".*poll_dsn is not a transaction pooler: each of two client "
                          r"connections kept a server session of its own.*", within=30)
        assert p.count(r"acquired leader lease") == 0
        assert "pool_mode = transaction" in line, line
    finally:
        bouncer.stop()
    assert [e.node for e in ledger.starts()] == ["l"]


def test_direct_poll_dsn_refused(pg, fleet, ledger, lock_key):
    p = fleet.start("a", "--poll-dsn", pg.dsn())
    refused(p, r".*poll_dsn reaches PostgreSQL directly, not through a connection pooler.*")
    assert not ledger.starts()


def test_hot_standby_behind_pooler_refused(pg, fleet, ledger, lock_key, request):
    replica = h.start_replica(pg)
    conftest.add_logs(request.node, "replica postgresql log", replica.log)
    bouncer = None
    try:
        bouncer = h.PgBouncer(replica, pool_mode="transaction")
        p = fleet.start("a", "--poll-dsn", bouncer.dsn())
        refused(p, r".*poll_dsn reaches a server in recovery \(a hot standby\).*")
    finally:
        if bouncer:
            bouncer.stop()
        replica.destroy()
    assert not ledger.starts()


@pytest.mark.parametrize("elsewhere", ["database", "cluster"])
def test_poll_dsn_elsewhere_refused(pg, fleet, ledger, lock_key, request, elsewhere):
    """A pooler that reaches another database than the lock's, on the same
    server or on another one (where the database has the same name and
    oid, but the cluster another system identifier): its polls read locks
    that nobody takes there. The poll says the
    lock is free, the standby connects directly, and the two databases are
    told apart before it asks for the lock: one line naming both, exit 78."""
    other = bouncer = None
    try:
        if elsewhere == "cluster":
            other = h.PgCluster("other", fresh=True)
            conftest.add_logs(request.node, "other postgresql log", other.log)
            other.start()
            bouncer = h.PgBouncer(other)
            dsn = bouncer.dsn()
        else:
            bouncer = h.PgBouncer(pg, databases={"elsewhere": "template1"})
            dsn = bouncer.dsn(dbname="elsewhere")
        conftest.add_logs(request.node, "pgbouncer log", bouncer.log)
        fleet.start("l")
        ledger.wait_for("start", "l", timeout=bound(10))
        p = fleet.start("a", "--poll-dsn", dsn)
        line = refused(p, r"poll_dsn reaches another database than the lock's "
                          r"\(database oid (\d+) of system (\d+); the lock's: "
                          r"database oid (\d+) of system (\d+)\): point it at a "
                          r"pooler in front of the lock's database")
        m = re.search(r"oid (\d+) of system (\d+); the lock's: database oid (\d+) "
                      r"of system (\d+)", line)
        poll_oid, poll_sys, lock_oid, lock_sys = m.groups()
        assert lock_oid == pg.scalar("SELECT oid FROM pg_database WHERE datname = 'postgres'")
        assert lock_sys == pg.scalar("SELECT system_identifier FROM pg_control_system()")
        if elsewhere == "cluster":
            assert poll_oid == lock_oid and poll_sys != lock_sys, line
            assert poll_sys == other.scalar("SELECT system_identifier FROM pg_control_system()")
        else:
            assert poll_oid != lock_oid and poll_sys == lock_sys, line
            assert poll_oid == pg.scalar("SELECT oid FROM pg_database "
                                         "WHERE datname = 'template1'")
    finally:
        if bouncer:
            bouncer.stop()
        if other:
            other.destroy()
    assert [e.node for e in ledger.starts()] == ["l"]


def test_poll_dsn_password_hidden(pg, pgbouncer, fleet, ledger, lock_key):
    """PgBouncer trusts the client here and ignores the password: the node
    runs with it, and neither ps nor the log shows it; an unusable poll_dsn
    is refused with a line that does not show it either."""
    if h.WRAPPER:
        pytest.skip("the wrapper's own command line shows the arguments")
    secret = "Pelican-Gamma-42"
    dsn = pgbouncer.dsn() + " password=" + secret
    p = fleet.start("a", "--poll-dsn", dsn)
    ledger.wait_for("start", "a", timeout=bound(10))
    b = fleet.start("b", "--poll-dsn", dsn)
    b.wait_for_log(r"waiting for leader lease", timeout=bound(10))
    for node in (p, b):
        assert secret.encode() not in h.cmdline(node.pid)
    assert secret not in "".join(l for l in b.text().splitlines() if not l.startswith("# "))
    bad = fleet.start("c", "--poll-dsn", "password=%s host=x nosuchkeyword=1" % secret)
    rc = bad.wait(bound(10))
    assert rc == 78, bad.text()
    text = "".join(l for l in bad.text().splitlines() if not l.startswith("# "))
    assert "invalid poll_dsn" in text and secret not in text, text
