"""A burst of signals at a node that is shutting down: the first SIGTERM
starts the shutdown, the rest must not kill it while it tears down (libev
gives a signal its default action back when its watcher stops)."""

import os
import signal
import time

import pytest

import pgharness as h
from pgharness import bound

RUNS = 20
BURST = 20


def burst(pid, sig, count=BURST, gap=0.0002):
    """count signals, gap seconds apart: the tail lands while the node
    tears down."""
    for _ in range(count):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        time.sleep(gap)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_standby_burst_exits_0(pg_shared, fleet_shared, ledger, lock_key, sig):
    """A standby sent 20 SIGTERMs (or SIGINTs) in a row exits 0 every time,
    over 20 runs; it used to exit 143 (130) when one arrived during the
    teardown."""
    holder = fleet_shared.start("holder")
    ledger.wait_for("start", "holder", timeout=bound(10))
    h.wait_holder(pg_shared, lock_key, "holder")
    codes = []
    for i in range(RUNS):
        # a node id per run: a session queued for a lock ends only when its
        # lock_timeout (retry_interval) ends, after its pgleader is gone
        s = fleet_shared.start("s%d" % i)
        h.wait_queued(pg_shared, lock_key, "s%d" % i)
        burst(s.pid, sig)
        codes.append(s.wait(bound(10)))
    assert codes == [0] * RUNS, codes
    assert [e.node for e in ledger.starts()] == ["holder"]
    assert holder.stop() == 0


def test_leader_burst_exits_0(pg_shared, fleet_shared, ledger, lock_key):
    """The same for a leader, whose command takes a while to stop: a
    shutdown asked for with a signal exits 0, whatever came after it."""
    codes = []
    for i in range(5):
        a = fleet_shared.start("a", name="a%d" % i, job=dict(term_delay=0.2))
        st = ledger.wait_for("start", "a", count=i + 1, timeout=bound(10))
        h.wait_holder(pg_shared, lock_key, "a")
        burst(a.pid, signal.SIGTERM)
        codes.append(a.wait(bound(10)))
        assert h.wait_pid_gone(st.pid, bound(5)) is not None
    assert codes == [0] * 5, codes
