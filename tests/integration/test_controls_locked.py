"""Controls fail closed (DESIGN 11, issue 25 item 2): a node that finds
the controls table but cannot read it (here an ALTER TABLE holds its lock,
so each read ends in lock_timeout) starts nothing it would not start under
the last pause it read, and one that never read them starts nothing until
it does; it says so once, and once more when a read is answered again. A
leader already running keeps what runs. The commands trap SIGTERM."""

import time

import pgharness as h
from pgharness import bound

from test_controls import init, pause, resume
from test_status import Session

SLOW = {"term_delay": 0.8}   # within the 1 s grace period: its stop line shows
HOLD = 6.0      # six reads' lock_timeout (retry_interval 1 s) at least


def lock_controls(pg, workdir):
    """A session holding controls' ACCESS EXCLUSIVE lock (an ALTER TABLE
    left uncommitted): every read of the table waits for it."""
    s = Session(pg, workdir, "controls-alter")
    s.send("BEGIN; ALTER TABLE pgleader.controls ADD COLUMN note text;")
    h.wait_until(lambda: pg.psql(
        "SELECT 1 FROM pg_locks WHERE relation = 'pgleader.controls'::regclass"
        " AND mode = 'AccessExclusiveLock' AND granted"), bound(5), what="the ALTER's lock")
    return s


def test_paused_node_starting_behind_an_alter_table_runs_nothing(pg, fleet, ledger,
                                                                 lock_key, workdir):
    """Paused, and the table locked as the node starts: it takes the lead
    and runs nothing for as long as the lock lasts (0.4.0 logged "acting
    as if none were in force" and ran the paused command; its "once"
    warning came every 5 s); one warning; the read after the ALTER ends
    finds the pause, and resume starts the command."""
    init(workdir, pg)
    pause(pg, lock_key)
    alter = lock_controls(pg, workdir)
    try:
        a = fleet.start("a", job=SLOW)
        a.wait_for_log(r"acquired leader lease", timeout=bound(10))
        a.wait_for_log(r"cannot read the operator controls: .*lock timeout.*; starting "
                       r"nothing until they are read again", timeout=bound(5))
        time.sleep(HOLD)
        assert ledger.starts() == [], "a command ran while the controls were " \
            "unreadable and paused:\n" + a.text()
        assert a.count(r"cannot read the operator controls") == 1, a.text()
        mark = a.mark()
    finally:
        alter.send("ROLLBACK;")
        time.sleep(0.2)
        alter.close()
    a.wait_for_log(r"the operator controls are read again", after=mark, timeout=bound(5))
    time.sleep(1.0)
    assert ledger.starts() == [], a.text()
    t0 = resume(pg, lock_key)
    first = ledger.wait_for("start", "a", timeout=bound(5))
    assert first.time - t0 < bound(2), first.time - t0


def test_running_leader_keeps_its_command_while_controls_are_locked(pg, fleet, ledger,
                                                                    lock_key, workdir):
    """A leader already running keeps its command while reads fail, and
    says so once; a pause written meanwhile acts once the table is free."""
    init(workdir, pg)
    a = fleet.start("a", job=SLOW)
    first = ledger.wait_for("start", "a", timeout=bound(10))
    alter = lock_controls(pg, workdir)
    try:
        a.wait_for_log(r"cannot read the operator controls: .*; going by the last read, "
                       r"which found none in force until they are read again",
                       timeout=bound(5))
        time.sleep(HOLD)
        assert h.pid_alive(first.pid), a.text()
        assert ledger.events("stop") == [], a.text()
        assert a.count(r"cannot read the operator controls") == 1, a.text()
    finally:
        alter.send("ROLLBACK;")
        time.sleep(0.2)
        alter.close()
    a.wait_for_log(r"the operator controls are read again", timeout=bound(5))
    pause(pg, lock_key)
    ledger.wait_for("stop", "a", pid=first.pid, timeout=bound(5))


def test_paused_jobs_starting_behind_an_alter_table_run_no_tick(pg, fleet, ledger, lock_key,
                                                                workdir):
    """The same with a schedule: no tick runs while the pause cannot be
    read (0.4.0 ran them); once read, the ticks are recorded paused; on
    resume they run."""
    from test_schedule import runs
    init(workdir, pg)
    pause(pg, lock_key)
    alter = lock_controls(pg, workdir)
    try:
        a = fleet.start("a", "--schedule", "@every 1s", job=SLOW)
        a.wait_for_log(r"cannot read the operator controls: .*; starting nothing until "
                       r"they are read again", timeout=bound(10))
        time.sleep(HOLD)
        assert ledger.starts() == [], "a tick ran while the controls were unreadable " \
            "and paused:\n" + a.text()
    finally:
        alter.send("ROLLBACK;")
        time.sleep(0.2)
        alter.close()
    a.wait_for_log(r"the operator controls are read again", timeout=bound(5))
    h.wait_until(lambda: [r for r in runs(pg, lock_key) if r[3] == "paused"], bound(5),
                 interval=0.1, what="a tick recorded paused")
    assert ledger.starts() == [], a.text()
    resume(pg, lock_key)
    ledger.wait_for("start", "a", timeout=bound(5))


def test_paused_node_whose_read_is_revoked_runs_nothing(pg, fleet, ledger, lock_key, workdir):
    """The other way a table is there but cannot be read (DESIGN 11): its
    SELECT revoked from the node's role, with a pause in force. The node
    leads and runs nothing, says so once, and starts the command once the
    grant is back and the pause resumed (0.5.0's first probe asked for the
    privilege, took the unreadable table for no table, and ran the paused
    command)."""
    init(workdir, pg)
    pg.psql("CREATE ROLE app LOGIN; GRANT CREATE ON DATABASE postgres TO app")
    pause(pg, lock_key)
    pg.psql("REVOKE SELECT ON pgleader.controls FROM PUBLIC")
    a = fleet.start("a", job=SLOW, dsn=pg.dsn(user="app"))
    a.wait_for_log(r"acquired leader lease", timeout=bound(10))
    a.wait_for_log(r"cannot read the operator controls: .*permission denied.*; starting "
                   r"nothing until they are read again", timeout=bound(5))
    time.sleep(3.0)     # three reads at retry_interval 1 s
    assert ledger.starts() == [], "a command ran while the controls were " \
        "unreadable and paused:\n" + a.text()
    assert a.count(r"cannot read the operator controls") == 1, a.text()
    mark = a.mark()
    pg.psql("GRANT SELECT ON pgleader.controls TO PUBLIC")
    a.wait_for_log(r"the operator controls are read again", after=mark, timeout=bound(5))
    assert ledger.starts() == [], a.text()
    resume(pg, lock_key)
    ledger.wait_for("start", "a", timeout=bound(5))
