"""A real failover of the database: a primary and its streaming replica, both
named in one DSN (target_session_attrs=read-write). The primary crashes
(pg_ctl stop -m immediate), the replica is promoted (pg_ctl promote): the old
command is stopped at once, a node leads through the new primary, and the
commands overlap no more than the man page's bound for a database failover
(grace_period minus the time the database was away), and not at all with a
--takeover-delay of grace_period or once the old command has stopped."""

import time

import pytest

import conftest
import pgharness as h
from pgharness import bound

GRACE = 2.0
STOP_TAKES = 1.0        # the toy job's own shutdown, below GRACE
CONNECT_TIMEOUT = 2
# 0.2 * 3 + 0.4 + 2 = 3 < 4: the timing rule holds
TIMING = h.timing(grace_period="%gs" % GRACE, server_lease="4s")
MARGIN = 1.0            # process start-up, a loaded machine


@pytest.fixture
def replica(pg, request):
    r = h.start_replica(pg)
    conftest.add_logs(request.node, "replica postgresql log", r.log)
    try:
        yield r
    finally:
        r.destroy()


def two_nodes(fleet, ledger, pg, replica, lock_key, *extra):
    """a leads through the primary, b waits; both know both servers."""
    dsn = h.multi_host_dsn([pg, replica], connect_timeout=CONNECT_TIMEOUT)
    job = dict(term_delay=STOP_TAKES)
    a = fleet.start("a", *extra, dsn=dsn, timing=TIMING, job=job)
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    b = fleet.start("b", *extra, dsn=dsn, timing=TIMING, job=job)
    h.wait_queued(pg, lock_key, "b")
    return a, sa, b


def new_leader(ledger, replica, lock_key, after, timeout):
    """The first command started after `after`, and its node holding the
    lock on the promoted server."""
    st = ledger.wait_for("start", after=after, timeout=timeout)
    holder = h.wait_holder(replica, lock_key, st.node)
    return st, holder


def finish(nodes, ledger):
    assert [n for n in nodes if not n.running()] == []
    for n in nodes:
        assert n.stop() == 0, n.text()
    ledger.assert_no_overlap()


def test_promote_after_old_command_stopped(pg, replica, fleet, ledger, lock_key):
    """A failover manager promotes once the old primary has been gone for a
    while (here: once the old command has stopped): no overlap at all, and
    the new command starts within the reconnect backoff (retry_interval)."""
    a, sa, b = two_nodes(fleet, ledger, pg, replica, lock_key)
    t_crash = time.monotonic()
    pg.crash()
    term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(3))
    assert term.time - t_crash < bound(0.5), "the old command got SIGTERM %.2fs after the crash" % (
        term.time - t_crash)
    stop = ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(GRACE + 1))
    # no primary: both nodes are refused by the replica (read-write) and wait
    time.sleep(0.5)
    assert len(ledger.starts()) == 1 and replica.in_recovery()
    t_promote = time.monotonic()
    replica.promote()
    st, _ = new_leader(ledger, replica, lock_key, t_promote,
                       bound(h.FAST_RETRY + CONNECT_TIMEOUT + MARGIN))
    assert st.time > stop.time
    print("promote->start %.3fs" % (st.time - t_promote))
    assert st.time - t_promote < bound(h.FAST_RETRY + CONNECT_TIMEOUT + MARGIN)
    finish([a, b], ledger)


@pytest.mark.parametrize("takeover", [None, "%gs" % GRACE], ids=["at-once", "takeover-delay"])
def test_promote_at_once(pg, replica, fleet, ledger, lock_key, takeover):
    """The replica is promoted the moment the primary is gone. The old
    command got SIGTERM at once and is gone within grace_period of the
    crash, so an overlap is at most grace_period minus the time the
    database was away; with --takeover-delay grace_period there is none."""
    extra = ("--takeover-delay", takeover) if takeover else ()
    a, sa, b = two_nodes(fleet, ledger, pg, replica, lock_key, *extra)
    t_crash = time.monotonic()
    pg.crash()
    t_promote = time.monotonic()
    replica.promote()
    st, _ = new_leader(ledger, replica, lock_key, t_promote,
                       bound(h.FAST_RETRY + CONNECT_TIMEOUT + GRACE + MARGIN))
    stop = ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(GRACE + 1))
    away = st.time - t_crash
    overlap = stop.time - st.time
    print("away %.3fs overlap %.3fs promote->start %.3fs" % (away, overlap, st.time - t_promote))
    assert stop.time - t_crash < GRACE + bound(0.5), "the old command outlived the grace period"
    assert overlap <= GRACE - away + bound(0.5), \
        "overlap %.2fs, above grace_period %.1fs - away %.2fs" % (overlap, GRACE, away)
    if takeover:
        assert overlap < 0, "overlap %.2fs despite --takeover-delay" % overlap
        finish([a, b], ledger)
    else:
        assert [n for n in (a, b) if not n.running()] == []
        for n in (a, b):
            assert n.stop() == 0, n.text()
