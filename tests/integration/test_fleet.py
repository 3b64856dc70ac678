"""A fleet on one lock (DESIGN 15): at most queue_depth standbys wait in the
lock's queue, the others poll; a kill -9 of the leader still fails over in
milliseconds while a queued standby lives, within retry_interval when the
queued ones die with it; priorities choose who queues."""

import re
import time

import pgharness as h
from pgharness import bound

FLEET = 30
DEPTH = 2
QUEUE_RECHECK = 6  # ELECTION_QUEUE_RECHECK (src/decide/election.h)


def waiter_names(pg, key):
    return sorted(w["application_name"] for w in pg.lock_waiters(key))


def start_fleet(fleet, names, *extra):
    """Starts every node at once (Popen does not wait): the fleet's start is
    as parallel as the machine allows."""
    return {n: fleet.start(n, "--queue-depth", str(DEPTH), *extra) for n in names}


def watch_queue(pg, key, seconds, until=None):
    """Samples the lock's queue in pg_locks for that long (or until until()
    holds); returns the largest queue seen and the last one."""
    most, last = 0, []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        last = waiter_names(pg, key)
        most = max(most, len(last))
        if until and until(last):
            break
    return most, last


def sessions_per_node(pg):
    out = {}
    for a in pg.activity():
        if a["application_name"].startswith("pgleader/"):
            out[a["application_name"]] = out.get(a["application_name"], 0) + 1
    return out




def started_after(ledger, nodes, t0, timeout):
    """The first command start on one of nodes after t0."""
    def first():
        later = [e for e in ledger.events("start") if e.time > t0 and e.node in nodes]
        return min(later, key=lambda e: e.time) if later else None
    return h.wait_until(first, bound(timeout), what="a new leader's command")


def test_queue_depth_and_kill9(pg, fleet, ledger, lock_key):
    leader = fleet.start("n00", "--queue-depth", str(DEPTH))
    ledger.wait_for("start", "n00", timeout=bound(10))
    names = ["n%02d" % i for i in range(1, FLEET)]
    nodes = start_fleet(fleet, names)
    nodes["n00"] = leader
    # every standby has tried (and polls or waits) within a retry_interval
    # or two of its start; the queue fills to queue_depth and no further
    most, last = watch_queue(pg, lock_key, bound(3 * h.FAST_RETRY + 2))
    assert most <= DEPTH, "%d standbys in the queue (queue_depth %d)" % (most, DEPTH)
    assert len(last) == DEPTH, last
    # a polling standby holds one session, the lock's; the leader and the
    # queued standbys two (the fence's beside it); every node shows in
    # pg_stat_activity
    want = {h.app_name(n): 1 for n in nodes}
    for n in ["n00"] + [a.split("/", 1)[1] for a in last]:
        want[h.app_name(n)] = 2
    h.wait_until(lambda: sessions_per_node(pg) == want, bound(2 * h.FAST_RETRY + 2),
                 what="one session per polling standby, two per leader or queued")

    # kill -9 of the leader: a queued standby takes over in milliseconds
    queued = [a.split("/", 1)[1] for a in last]
    t0 = h.kill9_all([leader])
    s = started_after(ledger, set(names), t0, h.FAST_RETRY + 3)
    assert s.node in queued
    assert s.time - t0 < bound(1.0), "started %.3fs after kill -9" % (s.time - t0)
    new_leader = s.node

    # the queue refills to queue_depth, never beyond
    most, last = watch_queue(pg, lock_key, bound(3 * h.FAST_RETRY + 2),
                             until=lambda w: len(w) == DEPTH)
    assert most <= DEPTH and len(last) == DEPTH, last

    # kill -9 of the leader and every queued standby at once: a polling
    # standby takes over within retry_interval
    queued = [a.split("/", 1)[1] for a in last]
    dead = {new_leader, *queued}
    t0 = h.kill9_all([nodes[n] for n in dead])
    s = started_after(ledger, set(names) - dead, t0, h.FAST_RETRY + 5)
    took = s.time - t0
    assert took < bound(h.FAST_RETRY + 1.0), "started %.3fs after kill -9 (retry_interval %.1fs)" % (
        took, h.FAST_RETRY)
    most, last = watch_queue(pg, lock_key, bound(2 * h.FAST_RETRY + 1))
    assert most <= DEPTH, "%d standbys in the queue (queue_depth %d)" % (most, DEPTH)
    assert len(ledger.starts()) == 3


def test_priorities_choose_the_queue(pg, fleet, ledger, lock_key):
    # the leader outranks everyone: no standby asks it for a switchover
    leader = fleet.start("n00", "--queue-depth", str(DEPTH), "--priority", "9")
    ledger.wait_for("start", "n00", timeout=bound(10))
    low = ["n%02d" % i for i in range(1, FLEET - DEPTH)]
    start_fleet(fleet, low)
    most, last = watch_queue(pg, lock_key, bound(3 * h.FAST_RETRY + 2),
                             until=lambda w: len(w) == DEPTH)
    assert len(last) == DEPTH and set(last) <= {h.app_name(n) for n in low}
    # two standbys of higher priority arrive last: they take the queue
    # once the queued standbys try again (every ELECTION_QUEUE_RECHECK-th
    # end of a wait, each lock_timeout = retry_interval)
    high = ["hi1", "hi2"]
    # no priority switchover asked (the leader outranks them anyway): a long
    # statement's tag is cut from pg_stat_activity's query (1 kB)
    start_fleet(fleet, high, "--priority", "5", "--priority-delay", "1h")
    want = sorted(h.app_name(n) for n in high)
    m, last = watch_queue(pg, lock_key, bound(QUEUE_RECHECK * h.FAST_RETRY +
                                              3 * h.FAST_RETRY + 2),
                          until=lambda w: w == want)
    assert last == want, "queue %s, want %s" % (last, want)
    assert max(most, m) <= DEPTH
    # and stay there
    m, last = watch_queue(pg, lock_key, bound(2 * h.FAST_RETRY + 0.5))
    assert m <= DEPTH and last == want, last
    t0 = h.kill9_all([leader])
    s = started_after(ledger, set(high), t0, h.FAST_RETRY + 3)
    assert s.time - t0 < bound(1.0), "started %.3fs after kill -9" % (s.time - t0)


def statement_calls(pg):
    """pg_stat_statements' calls of pgleader's lock tries: (plain, counting
    the queue)."""
    rows = pg.psql("SELECT query LIKE '%pg_locks%', sum(calls) FROM pg_stat_statements "
                   "WHERE query LIKE 'SELECT pg_%try_advisory_lock($1::bigint)%' GROUP BY 1")
    calls = {r[0]: int(r[1]) for r in rows}
    return calls.get("f", 0), calls.get("t", 0)


def test_large_lock_table_counts_less(request, workdir, ledger, lock_key):
    """On a server whose lock table is large (max_connections 1,100: 70,400
    slots), a polling standby counts the lock's queue (pg_locks, which walks
    all of it) only every 5th try (ELECTION_COUNT_SLOTS), unless it is next
    in line; its other tries are plain, one each retry_interval, so that a
    leader killed with every queued standby is still followed within
    retry_interval, and the queue refills as fast as before."""
    pg = h.PgCluster("bigtable", settings={
        "max_connections": "1100", "shared_preload_libraries": "'pg_stat_statements'"})
    fleet = h.Fleet(workdir, ledger, lock_key)
    try:
        pg.start()
        fleet.dsn = pg.dsn()
        pg.psql("CREATE EXTENSION pg_stat_statements")
        leader = fleet.start("n00", "--queue-depth", str(DEPTH))
        ledger.wait_for("start", "n00", timeout=bound(10))
        names = ["n%02d" % i for i in range(1, 20)]
        nodes = start_fleet(fleet, names)
        most, last = watch_queue(pg, lock_key, bound(3 * h.FAST_RETRY + 2),
                                 until=lambda w: len(w) == DEPTH)
        assert len(last) == DEPTH, last
        time.sleep(2 * h.FAST_RETRY)  # every standby polls or waits
        pg.psql("SELECT pg_stat_statements_reset()")
        window = 10.0
        most, last = watch_queue(pg, lock_key, window)
        plain, counted = statement_calls(pg)
        assert most <= DEPTH, last
        # full at the end too: a sample may fall in the instant a queued
        # standby's wait is renewed, so the queue is given a retry_interval
        h.wait_until(lambda: len(waiter_names(pg, lock_key)) == DEPTH,
                     bound(2 * h.FAST_RETRY), what="the queue full again")
        pollers = len(names) - DEPTH
        # every polling standby still tries once a retry_interval ...
        assert plain + counted >= pollers * (window - 1) / h.FAST_RETRY, (plain, counted)
        # ... but counts one try in 5, but for the six next in line
        # (ELECTION_RANK_LIMIT: fewer than 8 queued or ranked before them),
        # which count with every try: about 60 + 11 x 2 = 82 counts, not the
        # 170 of a count with every try
        assert counted <= 0.6 * (plain + counted), (plain, counted)
        # kill -9 of the leader, four times 2.5 retry_intervals apart: each
        # time a queued standby takes over in milliseconds, the queue
        # refilled meanwhile by the polling standby next in line, which
        # counts with every try (with one count in 5 tries, it was empty
        # by the third kill)
        nodes["n00"] = leader
        current = "n00"
        for _ in range(4):
            queued = [a.split("/", 1)[1] for a in waiter_names(pg, lock_key)]
            assert len(queued) == DEPTH, queued
            t0 = h.kill9_all([nodes.pop(current)])
            s = started_after(ledger, set(nodes), t0, h.FAST_RETRY + 3)
            assert s.node in queued, "%s took over, not one of the queue %s" % (
                s.node, queued)
            assert s.time - t0 < bound(1.0), "started %.3fs after kill -9" % (s.time - t0)
            current = s.node
            time.sleep(2.5 * h.FAST_RETRY)
        # kill -9 of the leader and both queued standbys: a polling standby
        # takes over within retry_interval, its plain try enough
        queued = [a.split("/", 1)[1] for a in waiter_names(pg, lock_key)]
        dead = {current, *queued}
        t0 = h.kill9_all([nodes[n] for n in dead])
        s = started_after(ledger, set(nodes) - dead, t0, h.FAST_RETRY + 5)
        assert s.time - t0 < bound(h.FAST_RETRY + 1.0), "started %.3fs after kill -9" % (
            s.time - t0)
    finally:
        fleet.cleanup()
        pg.destroy()
    assert not fleet.problems(), "\n".join(fleet.problems())


def try_statements(pg, node):
    """The pg_try_advisory_lock statements of node's sessions that the
    server logged (log_statement = all): 'execute NAME' for each, NAME
    '<unnamed>' for a statement parsed anew."""
    out = []
    for line in pg.log().splitlines():
        if "pgleader/%s@" % node in line and "pg_try_advisory_lock" in line:
            m = re.search(r"LOG:  (execute [^:]+|statement):", line)
            if m:
                out.append(m.group(1))
    return out


def test_polling_try_is_prepared_once(pg, fleet, ledger, lock_key):
    """A polling standby's try, every retry_interval for as long as it
    polls, is prepared once on its session and then only executed: the
    server parses and plans it once, not at every try. The session still
    shows the try's tag, and the standby still takes over when the leader
    is killed."""
    fleet.dsn = pg.dsn(options="'-c log_statement=all'")
    leader = fleet.start("n1")
    ledger.wait_for("start", "n1", timeout=bound(10))
    fleet.start("n2", "--acquire", "poll")
    h.wait_until(lambda: len(try_statements(pg, "n2")) >= 4,
                 bound(6 * h.FAST_RETRY), what="four tries of n2")
    tries = try_statements(pg, "n2")
    assert tries and set(tries) == {tries[0]}, tries
    assert tries[0] != "execute <unnamed>" and tries[0].startswith("execute "), tries
    tagged = [r[0] for r in pg.psql("SELECT query FROM pg_stat_activity "
                                    "WHERE application_name = 'pgleader/n2'")]
    assert any("pgleader lock %d" % lock_key in q for q in tagged), tagged
    t0 = h.kill9_all([leader])
    s = started_after(ledger, {"n2"}, t0, h.FAST_RETRY + 5)
    assert s.time - t0 < bound(h.FAST_RETRY + 1.0), "started %.3fs after kill -9" % (
        s.time - t0)
    assert not fleet.problems(), "\n".join(fleet.problems())
