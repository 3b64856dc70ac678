"""poll_dsn (DESIGN 15): the standbys outside the lock's queue read its
state through PgBouncer in transaction pooling and hold no direct session;
a fleet then holds few backends, and a kill -9 of the leader still fails
over in milliseconds. A poll_dsn that is no transaction pooler is refused
with one line."""

import os
import signal
import time

import pytest

import pgharness as h
from pgharness import bound

FLEET = 30
DEPTH = 2

pytestmark = pytest.mark.pooler


def waiter_names(pg, key):
    return sorted(w["application_name"] for w in pg.lock_waiters(key))


def direct_pgleader_backends(pg):
    """pgleader's own sessions (its application_name): the pooler's server
    sessions carry the name of the client that opened them, so only those
    with a lock or fence tag count."""
    return [a for a in pg.activity() if a["application_name"].startswith("pgleader/")
            and ("pgleader lock" in (a.get("query") or "")
                 or "pgleader fence" in (a.get("query") or ""))]


def test_probe(pg, pgbouncer, fleet, ledger, lock_key):
    leader = fleet.start("n00", "--queue-depth", str(DEPTH), "--poll-dsn", pgbouncer.dsn())
    ledger.wait_for("start", "n00", timeout=bound(10))
    nodes = {n: fleet.start(n, "--queue-depth", str(DEPTH), "--poll-dsn", pgbouncer.dsn())
             for n in ["n%02d" % i for i in range(1, 6)]}
    time.sleep(5)
    print(pg.activity())
    print(waiter_names(pg, lock_key))
    for n, p in nodes.items():
        print(n, p.text())
    assert False
