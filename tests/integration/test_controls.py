"""The operator controls as the daemons act on them (DESIGN 11, issue 15):
pause and resume, switchover to any standby and to a named one, priority.
The controls are written here the way `pgleader pause`, `resume` and
`switchover` write them (test_controls_cli.py tests those commands), so
that each test is about what the nodes do. The commands take 1.5 s to
stop (they trap SIGTERM), so that an overlap at a handover would show."""

import time

import pgharness as h
from pgharness import bound, FAST_GRACE

from test_ledger_cli import cli
from test_status import run_status

SLOW = {"term_delay": 0.8}   # within the 1 s grace period: its stop line shows
PING = 0.2                   # FAST's ping_interval


def init(workdir, pg):
    r = cli(workdir, "init-db", pg.dsn())
    assert r.rc == 0, r


def pause(pg, key, by="test", job=""):
    pg.psql("INSERT INTO pgleader.controls (lock_key, job, kind, asked_by) "
            "VALUES (%d, '%s', 'pause', '%s') ON CONFLICT (lock_key, job, kind) "
            "DO UPDATE SET asked_by = EXCLUDED.asked_by, asked_at = now(), until = NULL"
            % (key, job, by))
    return time.monotonic()


def resume(pg, key, by="test-resume"):
    """As `pgleader resume` does: the pause ends now, who resumed in its place."""
    pg.psql("UPDATE pgleader.controls SET until = now(), asked_at = now(), asked_by = '%s' "
            "WHERE lock_key = %d AND kind = 'pause' AND until IS NULL" % (by, key))
    return time.monotonic()


def switchover(pg, key, leader, target=None, wait="30 s", by="test"):
    pg.psql("INSERT INTO pgleader.controls (lock_key, job, kind, target, leader, until, "
            "asked_by) VALUES (%d, '', 'switchover', %s, '%s', now() + interval '%s', '%s')"
            % (key, "'%s'" % target if target else "NULL", leader, wait, by))
    return time.monotonic()


def switchover_rows(pg, key):
    return int(pg.scalar("SELECT count(*) FROM pgleader.controls WHERE lock_key = %d "
                         "AND kind = 'switchover'" % key))


def running(ledger):
    """The nodes whose command runs now (a SIGKILLed job writes no stop line)."""
    return sorted(e.node for e in ledger.starts() if h.pid_alive(e.pid))


def wait_stopped(ledger, node, timeout):
    """Waits for the node's newest command to be gone; returns when, as the
    test's clock saw it."""
    pid = [e for e in ledger.starts() if e.node == node][-1].pid
    h.wait_until(lambda: not h.pid_alive(pid), timeout, interval=0.01,
                 what="command of %s gone" % node)
    return time.monotonic()


def leader_running(ledger, nodes, timeout):
    return h.wait_until(lambda: running(ledger)[0] if len(running(ledger)) == 1
                        and running(ledger)[0] in nodes else None, timeout,
                        interval=0.05, what="a command running on one of %s" % (nodes,))


def assert_nothing_starts(ledger, seconds):
    before = len(ledger.starts())
    time.sleep(seconds)
    assert len(ledger.starts()) == before, "a command started while paused: %s" % \
        ledger.starts()[before:]


def test_pause_stops_the_command_and_resume_starts_it(pg, fleet, ledger, lock_key, workdir):
    init(workdir, pg)
    a = fleet.start("a", job=SLOW)
    b = fleet.start("b", job=SLOW)
    first = leader_running(ledger, ("a", "b"), bound(10))
    leader = a if first == "a" else b
    t0 = pause(pg, lock_key, by="maintenance by alice")
    leader.wait_for_log(r"paused by maintenance by alice at \S+: stopping the command",
                        timeout=bound(3))
    stopped = wait_stopped(ledger, first, bound(5))
    # the bound the man page gives: ping_interval + the read + grace_period
    assert stopped - t0 <= PING + FAST_GRACE + 0.5 * h.SCALE + 0.3, stopped - t0
    assert_nothing_starts(ledger, 2.0)
    assert leader.running(), "the paused leader exited:\n" + leader.text()
    t1 = resume(pg, lock_key)
    leader.wait_for_log(r"resumed by test-resume at \S+: starting the command",
                        timeout=bound(3))
    ledger.wait_for("start", node=first, count=2, timeout=bound(3))
    restarted = [e for e in ledger.starts() if e.node == first][-1].time
    assert restarted - t1 <= PING + 0.5 * h.SCALE, restarted - t1
    ledger.assert_no_overlap()


def test_pause_survives_kill9_and_a_restart_of_every_node(pg, fleet, ledger, lock_key,
                                                           workdir):
    init(workdir, pg)
    nodes = {n: fleet.start(n, job=SLOW) for n in ("a", "b")}
    first = leader_running(ledger, ("a", "b"), bound(10))
    pause(pg, lock_key)
    wait_stopped(ledger, first, bound(5))
    nodes[first].kill9()
    other = "b" if first == "a" else "a"
    nodes[other].wait_for_log(r"acquired leader lease", timeout=bound(10))
    assert_nothing_starts(ledger, 2.0)
    # every node down, then up again: the pause is in the database
    nodes[other].stop()
    nodes = {n: fleet.start(n, job=SLOW) for n in ("a", "b")}
    h.wait_until(lambda: any(p.count(r"acquired leader lease") for p in nodes.values()),
                 bound(10), what="a leader after the restart")
    assert_nothing_starts(ledger, 2.0)
    resume(pg, lock_key)
    leader_running(ledger, ("a", "b"), bound(3))
    ledger.assert_no_overlap()


def test_pause_through_a_database_restart(pg, fleet, ledger, lock_key, workdir):
    init(workdir, pg)
    a = fleet.start("a", job=SLOW)
    leader_running(ledger, ("a",), bound(10))
    pause(pg, lock_key)
    wait_stopped(ledger, "a", bound(5))
    mark = a.mark()
    pg.stop()
    time.sleep(1.0)
    pg.start()
    a.wait_for_log(r"acquired leader lease", after=mark, timeout=bound(20))
    assert_nothing_starts(ledger, 2.0)
    resume(pg, lock_key)
    leader_running(ledger, ("a",), bound(3))


def test_switchover_to_any_standby(pg, fleet, ledger, lock_key, workdir):
    init(workdir, pg)
    nodes = {n: fleet.start(n, job=SLOW) for n in ("a", "b", "c")}
    first = leader_running(ledger, ("a", "b", "c"), bound(10))
    old = nodes[first]
    switchover(pg, lock_key, first)
    old.wait_for_log(r"switchover asked by test at \S+: stopping the command, then "
                     r"handing the leader lease to any standby", timeout=bound(3))
    new = leader_running(ledger, tuple(n for n in nodes if n != first), bound(10))
    nodes[new].wait_for_log(r"switchover asked by test at \S+: taking over from " + first,
                            timeout=bound(3))
    # the new leader deletes it; the old one asks for the lock again
    h.wait_until(lambda: switchover_rows(pg, lock_key) == 0, bound(3), what="row deleted")
    old.wait_for_log(r"the switchover is over", timeout=bound(3))
    time.sleep(1.0)
    assert running(ledger) == [new]
    assert old.running()
    ledger.assert_no_overlap()


def test_switchover_to_a_named_node(pg, fleet, ledger, lock_key, workdir):
    init(workdir, pg)
    nodes = {}
    nodes["a"] = fleet.start("a", job=SLOW)
    leader_running(ledger, ("a",), bound(10))
    # b waits in the queue before c: b gets the lock first and must step
    # aside. A long retry interval keeps each queued wait in its place (a
    # wait that lock_timeout ends queues again behind the others).
    queued = h.timing(retry_interval="30s")
    nodes["b"] = fleet.start("b", job=SLOW, timing=queued)
    h.wait_queued(pg, lock_key, "b")
    nodes["c"] = fleet.start("c", job=SLOW, timing=queued)
    h.wait_queued(pg, lock_key, "c")
    switchover(pg, lock_key, "a", target="c")
    leader_running(ledger, ("c",), bound(10))
    nodes["b"].wait_for_log(r"switchover to c asked by test at \S+: giving the leader "
                            r"lease back", timeout=bound(3))
    assert nodes["b"].count(r"started command") == 0
    time.sleep(1.0)
    assert running(ledger) == ["c"]
    ledger.assert_no_overlap()


def test_switchover_lapses_when_no_standby_takes_it(pg, fleet, ledger, lock_key, workdir):
    """The named standby is gone: nobody else may take the lock until the
    switchover lapses; then the old leader leads again."""
    init(workdir, pg)
    a = fleet.start("a", job=SLOW)
    leader_running(ledger, ("a",), bound(10))
    t0 = switchover(pg, lock_key, "a", target="ghost", wait="3 s")
    a.wait_for_log(r"handing the leader lease to ghost", timeout=bound(3))
    wait_stopped(ledger, "a", bound(5))
    assert running(ledger) == []
    ledger.wait_for("start", node="a", count=2, timeout=bound(8))
    again = [e for e in ledger.starts() if e.node == "a"][-1].time
    assert again - t0 >= 3.0 - 0.1, "led again before the switchover lapsed"
    ledger.assert_no_overlap()


def test_priority_takes_over_and_zero_never_leads(pg, fleet, ledger, lock_key, workdir):
    init(workdir, pg)
    a = fleet.start("a", job=SLOW)
    leader_running(ledger, ("a",), bound(10))
    z = fleet.start("z", "--priority", "0", job=SLOW)
    z.wait_for_log(r"priority 0: a standby that never asks for the leader lease",
                   timeout=bound(10))
    b = fleet.start("b", "--priority", "2", "--priority-delay", "1s", job=SLOW)
    b.wait_for_log(r"priority 2 over leader a's 1: asked for a switchover to this node",
                   timeout=bound(10))
    a.wait_for_log(r"switchover asked by .*priority 2 over 1 at \S+: stopping the "
                   r"command, then handing the leader lease to b", timeout=bound(3))
    leader_running(ledger, ("b",), bound(10))
    # a (priority 1) and z (priority 0) stay standbys
    time.sleep(2.0)
    assert running(ledger) == ["b"]
    ledger.assert_no_overlap()
    # kill -9: its command dies with it (no stop line); a, not z, follows
    b.kill9()
    gone = wait_stopped(ledger, "b", bound(5))
    leader_running(ledger, ("a",), bound(10))
    assert [e for e in ledger.starts() if e.node == "a"][-1].time >= gone - 0.05
    a.kill9()
    time.sleep(2.0)
    assert running(ledger) == [], "the priority 0 node led"
    r = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(lock_key))
    assert r.rc == 3, r
    assert z.count(r"acquired leader lease") == 0
