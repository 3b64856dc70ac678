"""Faults that take a server lease to resolve: a network partition between
the leader and the database, and a frozen (SIGSTOP) leader."""

import signal
import time

import pytest

import pgharness as h
from pgharness import bound


@pytest.mark.slow
def test_network_partition(pg, fleet, ledger, lock_key, proxy):
    """The leader reaches the database through a proxy that freezes: its
    command is stopped after the failed pings, the server ends the silent
    session after server_lease, the standby (direct) leads, and the two
    commands never run at the same time."""
    a = fleet.start("a", dsn=proxy.dsn())
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    backend_a = h.wait_holder(pg, lock_key, "a")["pid"]
    assert proxy.connections >= 1
    b = fleet.start("b")
    b.wait_for_log(r"waiting for leader lease")
    h.wait_queued(pg, lock_key, "b")
    time.sleep(0.5)  # a few pings have gone through

    mark = a.mark()
    t0 = time.monotonic()
    proxy.freeze()
    try:
        term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(5))
        dt = term.time - t0
        assert 0.3 < dt < bound(h.FAST_DETECT + 0.8), "SIGTERM %.3fs after the partition" % dt
        stop = ledger.wait_for("stop", "a", pid=sa.pid, timeout=2)
        a.wait_for_log(r"lost leader lease: ping timed out")
        # the server still sees the session; nobody else may lead yet
        assert pg.lock_holders(lock_key)[0]["pid"] == backend_a
        assert not ledger.starts("b")

        t_gone = h.wait_until(lambda: pg.backend_pid("pgleader/a") != backend_a and time.monotonic(),
                              h.FAST_LEASE + 5, interval=0.02, what="the server to end a's session")
        assert h.FAST_LEASE - 0.5 <= t_gone - t0 <= h.FAST_LEASE + 2.0, (
            "server ended the session %.2fs after the partition (server_lease %.1fs)" % (
                t_gone - t0, h.FAST_LEASE))
        assert "idle-session timeout" in pg.log()

        sb = ledger.wait_for("start", "b", timeout=bound(3))
        assert sb.time - t_gone < bound(1.0), "standby led %.2fs after the session ended" % (sb.time - t_gone)
        assert sb.time > stop.time
        ledger.assert_no_overlap()
        assert len(ledger.starts("a")) == 1
        assert int(sb.token) > int(sa.token)
    finally:
        proxy.thaw()
    # back from the partition, a is a standby again and does not lead
    a.wait_for_log(r"waiting for leader lease", after=mark, timeout=15)
    time.sleep(0.5)
    assert len(ledger.starts("a")) == 1
    assert [l["application_name"] for l in pg.lock_holders(lock_key)] == ["pgleader/b"]
    ledger.assert_no_overlap()
    assert a.stop() == 0
    assert b.stop() == 0


@pytest.mark.slow
def test_frozen_leader(pg, fleet, ledger, lock_key):
    """SIGSTOP of the leader's pgleader: the standby leads after server_lease
    (the frozen node's command keeps running: without a watchdog this overlap
    is by design); after SIGCONT the old leader demotes at once."""
    a = fleet.start("a")
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    b = fleet.start("b")
    b.wait_for_log(r"waiting for leader lease")
    h.wait_queued(pg, lock_key, "b")

    t0 = time.monotonic()
    a.signal(signal.SIGSTOP)
    try:
        sb = ledger.wait_for("start", "b", timeout=h.FAST_LEASE + 5)
        dt = sb.time - t0
        assert h.FAST_LEASE - 0.5 <= dt <= h.FAST_LEASE + bound(2.0), (
            "standby led %.2fs after the freeze (server_lease %.1fs)" % (dt, h.FAST_LEASE))
        b.wait_for_log(r"acquired leader lease")
        assert h.pid_alive(sa.pid), "the frozen leader's command died (expected to run on)"
        assert not ledger.events("term", "a")
        time.sleep(0.3)
        mark = a.mark()
        t1 = time.monotonic()
    finally:
        a.signal(signal.SIGCONT)
    term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(3))
    assert term.time - t1 < bound(1.0), "old leader demoted %.2fs after SIGCONT" % (term.time - t1)
    a.wait_for_log(r"lost leader lease", after=mark)
    ledger.wait_for("stop", "a", pid=sa.pid, timeout=2)
    a.wait_for_log(r"waiting for leader lease", after=mark, timeout=10)
    assert len(ledger.starts("a")) == 1
    assert not ledger.events("term", "b")
    assert [l["application_name"] for l in pg.lock_holders(lock_key)] == ["pgleader/b"]
    assert a.stop() == 0
    assert b.stop() == 0
