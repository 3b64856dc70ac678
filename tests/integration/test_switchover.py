"""Planned database events and ended sessions while the leader's command
takes seconds to stop (issue 17, items 1 and 6.11): a switchover (fast
shutdown of the primary, promotion of its streaming replica), a plain
restart, and the lock session then the fence session ended one after the
other. In none may two commands overlap: the old leader takes its fence
again as soon as it reaches the database, a standby that saw the database
go away leaves it ELECTION_SETTLE (1 s) to do so, and a leader that loses
its fence while its command stops kills the command at once."""

import threading
import time

import pytest

import pgharness as h
from pgharness import bound
from test_promote import replica  # noqa: F401 (a fixture)

STOP_TAKES = 3.0        # the job's own shutdown
GRACE = 5.0             # above it: the job stops by itself, no SIGKILL
# 0.2 * 3 + 0.4 + 5 = 6 < 8: the timing rule holds
TIMING = h.timing(grace_period="%gs" % GRACE, server_lease="8s")
SETTLE = 1.0            # ELECTION_SETTLE
MARGIN = 1.5            # process start-up, reconnect backoff, a loaded machine


def lead_and_wait(fleet, ledger, pg, lock_key, dsn=None):
    """a leads with a slow-stopping job, b waits in the lock queue."""
    job = dict(term_delay=STOP_TAKES)
    a = fleet.start("a", dsn=dsn, timing=TIMING, job=job)
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    b = fleet.start("b", dsn=dsn, timing=TIMING, job=job)
    h.wait_queued(pg, lock_key, "b")
    return a, sa, b


def no_overlap_after(ledger, sa, t0, server, lock_key):
    """The old command got SIGTERM at once and stopped by itself; the next
    one started after it, and within its stop plus the settle and a
    margin; a node holds the lock on server."""
    term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(3))
    assert term.time - t0 < bound(1.0), "SIGTERM %.2fs after the event" % (term.time - t0)
    stop = ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(GRACE + 2))
    new = ledger.wait_for("start", count=2, timeout=bound(STOP_TAKES + SETTLE + 5))
    print("old stopped %.3fs, new started %.3fs after the event (%s)" % (
        stop.time - t0, new.time - t0, new.node))
    assert new.time >= stop.time, "overlap %.3fs:\n%s" % (stop.time - new.time, ledger.text())
    assert new.time - stop.time < bound(SETTLE + MARGIN), \
        "the new command started %.2fs after the old one stopped" % (new.time - stop.time)
    h.wait_holder(server, lock_key, new.node, timeout=5)
    ledger.assert_no_overlap()
    return new


@pytest.mark.parametrize("pause", [0.0, 1.3], ids=["at-once", "patroni-like"])
def test_switchover_no_overlap(pg, replica, fleet, ledger, lock_key, pause):  # noqa: F811
    """Fast shutdown of the primary, then promotion of the replica, as a
    failover manager's switchover does (Patroni's left the database
    unwritable for 1.3 s): the old command stops in 3 s, and the new one
    starts only after it, on whichever node."""
    dsn = h.multi_host_dsn([pg, replica], connect_timeout=2)
    a, sa, b = lead_and_wait(fleet, ledger, pg, lock_key, dsn=dsn)
    t0 = time.monotonic()
    pg.stop("fast")
    time.sleep(max(0.0, t0 + pause - time.monotonic()))
    replica.promote()
    print("database unwritable for %.3fs" % (time.monotonic() - t0))
    no_overlap_after(ledger, sa, t0, replica, lock_key)
    for n in (a, b):
        assert n.running(), n.text()
        assert n.stop() == 0, n.text()


def test_restart_no_overlap(pg, fleet, ledger, lock_key):
    """pg_ctl restart -m fast: the same, on one server."""
    a, sa, b = lead_and_wait(fleet, ledger, pg, lock_key)
    t0 = time.monotonic()
    pg.restart("fast")
    print("database away for %.3fs" % (time.monotonic() - t0))
    no_overlap_after(ledger, sa, t0, pg, lock_key)
    for n in (a, b):
        assert n.running(), n.text()
        assert n.stop() == 0, n.text()


class GoneWatch:
    """Polls a pid every millisecond from a thread: when it was first seen
    gone (or a zombie)."""

    def __init__(self, pid):
        self.pid, self.gone_at = pid, None
        self._stop = False
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop:
            if not h.pid_alive(self.pid):
                self.gone_at = time.monotonic()
                return
            time.sleep(0.001)

    def close(self):
        self._stop = True
        self._t.join(5)


@pytest.mark.parametrize("gap", [1.0])
def test_lock_then_fence_terminated(pg, fleet, ledger, lock_key, gap):
    """The lock session is terminated, then the fence session `gap` later,
    while the command takes 3 s to stop: the fence was all that kept the
    standby's command out, so the old command is killed at once, before
    the standby's starts."""
    a, sa, b = lead_and_wait(fleet, ledger, pg, lock_key)
    fence = h.wait_until(lambda: [l for l in pg.fence_holders(lock_key)
                                  if l["application_name"] == h.app_name("a")],
                         bound(5), what="a's fence")[0]
    lock = h.wait_holder(pg, lock_key, "a")
    watch = GoneWatch(sa.pid)
    try:
        t0 = time.monotonic()
        assert pg.terminate_backend(lock["pid"])
        ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(2))
        time.sleep(max(0.0, t0 + gap - time.monotonic()))
        # b holds the lock and waits for the fence meanwhile
        assert [l["application_name"] for l in pg.lock_holders(lock_key)] == [h.app_name("b")]
        assert len(ledger.starts()) == 1, ledger.text()
        t1 = time.monotonic()
        assert pg.terminate_backend(fence["pid"])
        new = ledger.wait_for("start", "b", timeout=bound(STOP_TAKES + 2))
        h.wait_until(lambda: watch.gone_at is not None, bound(2), what="a's command gone")
    finally:
        watch.close()
    print("old command gone %.3fs, new started %.3fs after the fence was ended" % (
        watch.gone_at - t1, new.time - t1))
    assert watch.gone_at < new.time, "overlap: the old command lived until %.3fs, " \
        "the new one started at %.3fs after the fence was ended" % (
            watch.gone_at - t1, new.time - t1)
    assert watch.gone_at - t1 < bound(0.5)
    a.wait_for_log(r"fence session lost while the command is stopping: killing "
                   r"the command now")
    for n in (a, b):
        assert n.running(), n.text()
        assert n.stop() == 0, n.text()
