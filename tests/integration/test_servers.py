"""Which server pgleader may lead through: never a hot standby (its advisory
locks are local to it); a multi-host DSN finds the primary."""

import time

import pytest

import pgharness as h
from pgharness import bound


@pytest.fixture
def standby(pg, request):
    import conftest
    s = h.PgCluster("standby", standby_of=pg)
    conftest.add_logs(request.node, "standby postgresql log", s.log)
    try:
        s.start()
        h.wait_until(s.in_recovery, 10, what="the standby to be in recovery")
        yield s
    finally:
        s.destroy()


def test_refuses_server_in_recovery(pg, standby, fleet, ledger, lock_key):
    a = fleet.start("a", dsn=standby.dsn())
    # the setup query sees it, before any lock is asked for (a lock asked
    # of a standby fails too, but says less)
    a.wait_for_log(r"the server is in recovery \(a hot standby\): its advisory locks are"
                   r" its own, pgleader leads only through a primary", timeout=5)
    time.sleep(2 * h.FAST_RETRY)
    assert not ledger.starts(), "led through a hot standby"
    assert not standby.lock_holders(lock_key)
    assert a.running()
    assert a.count(r"acquired leader lease") == 0
    # once promoted, the same server is fine: pgleader kept trying
    standby.promote()
    st = ledger.wait_for("start", "a", timeout=bound(10))
    assert h.wait_holder(standby, lock_key, "a")
    assert st.node == "a"
    assert a.stop() == 0


def test_multi_host_dsn_finds_primary(pg, standby, fleet, ledger, lock_key):
    dsn = "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=postgres user=postgres " \
          "target_session_attrs=read-write" % (standby.port, pg.port)
    a = fleet.start("a", dsn=dsn)
    ledger.wait_for("start", "a", timeout=bound(10))
    assert h.wait_holder(pg, lock_key, "a")
    assert not standby.lock_holders(lock_key)
    assert a.stop() == 0
