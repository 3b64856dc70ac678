"""Failover and faults: kill -9 of the leader, graceful handover, a
terminated session, a frozen backend, the database down at start or
restarted, the fencing token, signals while connecting or waiting."""

import signal
import time

import pytest

import pgharness as h
from pgharness import bound


def lead_and_queue(pg, fleet, ledger, key, mode="wait", a_job=None, b_extra=()):
    """a leads, b is a standby (queued for the lock in wait mode)."""
    a = fleet.start("a", "--acquire", mode, job=a_job)
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, key, "a")
    b = fleet.start("b", "--acquire", mode, *b_extra)
    b.wait_for_log(r"waiting for leader lease")
    if mode == "wait":
        h.wait_queued(pg, key, "b")
    else:
        time.sleep(0.3)  # b has tried once and lost
    return a, sa, b


@pytest.mark.parametrize("mode", [pytest.param("wait", marks=pytest.mark.valgrind), "poll"])
def test_kill9_leader_handover(pg, fleet, ledger, lock_key, mode):
    a, sa, b = lead_and_queue(pg, fleet, ledger, lock_key, mode, a_job=dict(grandchildren=1))
    grand = ledger.wait_for("gstart", "a", timeout=5)
    assert h.pid_alive(sa.pid) and h.pid_alive(grand.pid)
    t0 = time.monotonic()
    assert a.kill9() == -signal.SIGKILL
    # the command and its grandchild die with their pgleader, not later
    h.assert_died_with_pgleader(t0, ((sa.pid, "leader's command"),
                                     (grand.pid, "leader's grandchild")))
    sb = ledger.wait_for("start", "b", timeout=bound(h.FAST_RETRY + 3))
    took = sb.time - t0
    limit = 1.0 if mode == "wait" else h.FAST_RETRY + 1.0
    assert took < bound(limit), "%s mode: standby started %.3fs after kill -9 (limit %.1fs)" % (
        mode, took, limit)
    b.wait_for_log(r"acquired leader lease")
    assert [l["application_name"] for l in pg.lock_holders(lock_key)] == ["pgleader/b"]
    assert len(ledger.starts()) == 2
    assert b.stop() == 0


@pytest.mark.valgrind
def test_sigterm_graceful_handover(pg, fleet, ledger, lock_key):
    a, sa, b = lead_and_queue(pg, fleet, ledger, lock_key, "wait")
    t0 = time.monotonic()
    a.signal(signal.SIGTERM)
    term = ledger.wait_for("term", "a", timeout=bound(2))
    stop = ledger.wait_for("stop", "a", timeout=bound(2))
    assert term.time - t0 < bound(0.5)
    assert a.wait(bound(5)) == 0
    a.wait_for_log(r"received SIGTERM, shutting down")
    a.wait_for_log(r"released leader lease")
    sb = ledger.wait_for("start", "b", timeout=bound(3))
    assert sb.time > stop.time, "the new command started before the old one stopped"
    assert sb.time - stop.time < bound(1.0), "graceful handover took %.3fs" % (sb.time - stop.time)
    ledger.assert_no_overlap()
    assert b.stop() == 0


@pytest.mark.valgrind
def test_terminate_backend_stops_child(pg, fleet, ledger, lock_key):
    a = fleet.start("a")
    s1 = ledger.wait_for("start", "a", timeout=bound(10))
    backend = h.wait_holder(pg, lock_key, "a")["pid"]
    t0 = time.monotonic()
    assert pg.terminate_backend(backend)
    term = ledger.wait_for("term", "a", pid=s1.pid, timeout=bound(3))
    assert term.time - t0 < bound(1.0), "SIGTERM reached the command %.3fs after pg_terminate_backend" % (
        term.time - t0)
    a.wait_for_log(r"lost leader lease")
    stop = ledger.wait_for("stop", "a", pid=s1.pid, timeout=2)
    # leadership regained on a new session, with a new child and a newer term
    s2 = ledger.wait_for("start", "a", count=2, timeout=bound(5))
    assert s2.time > stop.time
    assert int(s2.token) > int(s1.token)
    assert h.wait_holder(pg, lock_key, "a")["pid"] != backend
    assert a.stop() == 0


def test_backend_sigstop_term_then_kill(pg, fleet, ledger, lock_key):
    """A frozen backend: the pings fail, the command gets SIGTERM, then
    SIGKILL after the grace period since it ignores SIGTERM, and its
    grandchildren are gone too."""
    a = fleet.start("a", job=dict(ignore_term=True, grandchildren=2, grandchildren_ignore_term=True))
    st = ledger.wait_for("start", "a", timeout=bound(10))
    grand = [ledger.wait_for("gstart", "a", count=i, timeout=5) for i in (1, 2)]
    backend = h.wait_holder(pg, lock_key, "a")["pid"]
    t0 = time.monotonic()
    h.kill_quietly(backend, signal.SIGSTOP)
    try:
        term = ledger.wait_for("term", "a", pid=st.pid, timeout=bound(5))
        dt = term.time - t0
        assert dt > 0.4, "SIGTERM %.3fs after the freeze: before any ping could fail" % dt
        assert dt < bound(h.FAST_DETECT + 1.0), "SIGTERM only %.3fs after the freeze" % dt
        a.wait_for_log(r"lost leader lease: ping timed out")
        gone = h.wait_pid_gone(st.pid, bound(h.FAST_GRACE + 3))
        assert gone is not None, "the command survived the grace period"
        assert h.FAST_GRACE - 0.2 < gone - term.time < h.FAST_GRACE + bound(1.0), (
            "SIGKILL %.3fs after SIGTERM, grace period %.1fs" % (gone - term.time, h.FAST_GRACE))
        a.wait_for_log(r"grace period \S+ expired: sending SIGKILL to process group")
        for g in grand:
            assert h.wait_pid_gone(g.pid, 1), "grandchild %d survived" % g.pid
        assert len(ledger.events("gterm")) == 2, "the grandchildren did not get SIGTERM"
        time.sleep(0.5)
        assert not h.zombies_of(a.pid)
        assert not h.command_descendants(a.pid)
        # the frozen backend still holds the lock: no new command may start
        assert len(ledger.starts()) == 1
        assert a.running()
    finally:
        h.kill_quietly(backend, signal.SIGCONT)
    assert a.stop() == 0


@pytest.mark.valgrind
def test_pg_down_at_start(pg, fleet, ledger, lock_key):
    pg.stop()
    a = fleet.start("a")
    a.wait_for_log(r"database connection failed", count=3, timeout=10)
    assert a.running() and not ledger.starts()
    pg.start()
    t0 = time.monotonic()
    st = ledger.wait_for("start", "a", timeout=bound(h.FAST_RETRY + 3))
    assert st.time - t0 < bound(h.FAST_RETRY + 1.5)
    a.wait_for_log(r"acquired leader lease")
    h.wait_holder(pg, lock_key, "a")
    assert a.stop() == 0


@pytest.mark.parametrize("mode", [pytest.param("fast", marks=pytest.mark.valgrind), "immediate"])
def test_pg_restart_while_leading(pg, fleet, ledger, lock_key, mode):
    a = fleet.start("a")
    s1 = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    t0 = time.monotonic()
    pg.stop(mode)
    term = ledger.wait_for("term", "a", pid=s1.pid, timeout=bound(3))
    assert term.time - t0 < bound(1.5)
    ledger.wait_for("stop", "a", pid=s1.pid, timeout=2)
    a.wait_for_log(r"lost leader lease")
    time.sleep(0.5)
    assert len(ledger.starts()) == 1
    pg.start()
    s2 = ledger.wait_for("start", "a", count=2, timeout=bound(h.FAST_RETRY + 4))
    assert int(s2.token) > int(s1.token), "fencing token did not grow across a restart"
    h.wait_holder(pg, lock_key, "a")
    assert a.count(r"acquired leader lease") == 2
    ledger.assert_no_overlap()
    assert a.stop() == 0


def start_until_ready(pg):
    """Starts the server without waiting; returns time.monotonic() at the
    moment it accepts connections: the postmaster writes "ready" into
    postmaster.pid then (pg_ctl -w would see it only at its next 0.1 s
    poll). Polled every 2 ms."""
    pg._pg_ctl("-l", pg.logfile, "-W", "start")
    path = pg.data + "/postmaster.pid"

    def ready():
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return False
        return len(lines) >= 8 and lines[7].strip() == "ready"
    h.wait_until(ready, bound(30), interval=0.002, what="the server to accept connections")
    return time.monotonic()


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_pg_restart_back_at_once(pg, fleet, ledger, lock_key, mode):
    """The command runs again within 0.5 s of the restarted server
    accepting connections, with the default retry interval (5 s): after a
    working session was lost, pgleader retries every 0.1 s (the backoff,
    0.5 s doubling, would have waited until 7.5 s after the loss). The
    figure itself is in the bench (promote_to_command)."""
    a = fleet.start("a", timing=h.timing(retry_interval=None, server_lease=None,
                                         grace_period=None, ping_interval=None,
                                         ping_timeout=None, ping_failures=None))
    s1 = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    pg.stop(mode)
    ledger.wait_for("stop", "a", pid=s1.pid, timeout=bound(3))
    time.sleep(4)  # past the backoff's tries at 0.5, 1.5 and 3.5 s
    assert len(ledger.starts()) == 1
    ready = start_until_ready(pg)
    s2 = ledger.wait_for("start", "a", count=2, timeout=bound(10))
    # the cadence (<= 0.15 s) + connect, lock, fence, token + the toy job's
    # start-up (~0.03 s): about 0.2 s
    took = s2.time - ready
    assert took < bound(0.5), "the command started %.3fs after the server was ready" % took
    assert int(s2.token) > int(s1.token)
    a.wait_for_log(r"retrying every 0\.1s for up to 15s \(the database may be restarting\)")
    ledger.assert_no_overlap()
    assert a.stop() == 0


def test_fencing_token_grows(pg, fleet, ledger, lock_key):
    a, sa, b = lead_and_queue(pg, fleet, ledger, lock_key, "wait")
    a.kill9()
    sb = ledger.wait_for("start", "b", timeout=bound(3))
    assert int(sb.token) > int(sa.token), "token %s after kill -9 failover, was %s" % (sb.token, sa.token)
    # a crash of the server (no checkpoint): the token still grows
    pg.crash()
    ledger.wait_for("term", "b", pid=sb.pid, timeout=bound(3))
    pg.start()
    s3 = ledger.wait_for("start", "b", count=2, timeout=bound(h.FAST_RETRY + 4))
    assert int(s3.token) > int(sb.token), "token %s after a server restart, was %s" % (s3.token, sb.token)
    assert b.stop() == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
@pytest.mark.parametrize("db", ["down", "hanging"])
def test_signal_while_connecting(pg, fleet, ledger, proxy, sig, db):
    """Shutdown is prompt while the database is down (refused) or hangs (a
    frozen proxy: TCP connects, nothing answers)."""
    if db == "down":
        pg.stop()
        a = fleet.start("a")
        a.wait_for_log(r"database connection failed")
    else:
        proxy.freeze()
        a = fleet.start("a", dsn=proxy.dsn(connect_timeout=30))
        time.sleep(1.0)
        assert "acquired" not in a.text()
    assert a.running()
    t0 = time.monotonic()
    a.signal(sig)
    assert a.wait(bound(2)) == 0
    assert time.monotonic() - t0 < bound(1.0)
    assert not ledger.starts()


def test_sigterm_while_waiting_in_queue(pg, fleet, ledger, lock_key):
    """A standby blocked in pg_advisory_lock exits at once on SIGTERM and
    closes that session (its lock request's outcome is unknown)."""
    a, sa, b = lead_and_queue(pg, fleet, ledger, lock_key, "wait")
    t0 = time.monotonic()
    b.signal(signal.SIGTERM)
    assert b.wait(bound(2)) == 0
    assert time.monotonic() - t0 < bound(1.0)
    h.wait_until(lambda: pg.backend_pid("pgleader/b") is None, 2, what="b's session to close")
    assert not pg.lock_waiters(lock_key)
    assert [l["application_name"] for l in pg.lock_holders(lock_key)] == ["pgleader/a"]
    assert not ledger.starts("b")
    assert a.stop() == 0


def test_fence_taken_while_the_claim_waits(pg, fleet, ledger, lock_key):
    """The lock granted, its claim (a durable commit) under way: the fence
    is asked for at once, not after the claim, so that the two round trips
    overlap; the command still waits for the claim. A synchronous standby
    that never answers holds the claim's commit back."""
    pg.psql("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
    pg.psql("SELECT pg_reload_conf()")
    h.wait_until(lambda: pg.scalar("SHOW synchronous_standby_names") == "nobody", 10,
                 what="synchronous_standby_names")
    a = fleet.start("a")
    h.wait_holder(pg, lock_key, "a")
    fence = h.wait_until(lambda: pg.fence_holders(lock_key), bound(1.0),
                         what="a's fence while its claim waits")
    assert [l["application_name"] for l in fence] == ["pgleader/a"]
    time.sleep(0.3)
    assert not ledger.starts(), "the command started before its fencing token was durable"
    assert "acquired leader lease" not in a.text()
    pg.psql("ALTER SYSTEM RESET synchronous_standby_names")
    pg.psql("SELECT pg_reload_conf()")
    ledger.wait_for("start", "a", timeout=bound(5))
    a.wait_for_log(r"acquired leader lease")
    assert a.stop() == 0
