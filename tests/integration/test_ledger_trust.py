"""Who may own the ledger, and a ledger that goes away (DESIGN 10, issue
25 items 1, 5, 8 and 9), against a real PostgreSQL with the attack as it
was run: a role with CREATE on the database makes the ledger's schema
first, pauses another role's command through it, and puts a row-level
security policy on its controls that calls a function of its own (which
counts its calls in a sequence: a sequence's nextval survives the
statement's cancellation) and sleeps 30 s."""

import os
import subprocess
import threading
import time

import pgharness as h
from pgharness import bound

from test_ledger_cli import cli
from test_schedule import runs, sched, wait_rows


def spied(pg):
    """How often the hostile policy's function ran, as any role."""
    return int(pg.scalar("SELECT CASE WHEN is_called THEN last_value ELSE 0 END"
                         " FROM public.spied"))


def hostile_ledger(workdir, pg, key):
    """mallory (CREATE on the database, nothing else) makes the ledger
    first with pgleader's own init-db, pauses the lock, and puts the spying,
    sleeping policy on its controls; app is the nodes' role."""
    pg.psql("CREATE ROLE mallory LOGIN; GRANT CREATE ON DATABASE postgres TO mallory;"
            " CREATE ROLE app LOGIN;"
            " CREATE SEQUENCE public.spied; GRANT USAGE, SELECT ON SEQUENCE public.spied"
            " TO PUBLIC")
    r = cli(workdir, "init-db", pg.dsn(user="mallory"))
    assert r.rc == 0, r
    pg.psql("INSERT INTO pgleader.controls (lock_key, job, kind, asked_by)"
            " VALUES (%d, '', 'pause', 'mallory');"
            " CREATE FUNCTION pgleader.spy() RETURNS boolean LANGUAGE plpgsql AS $$"
            " BEGIN PERFORM nextval('public.spied'); RAISE NOTICE 'spied on %%', current_user;"
            " PERFORM pg_sleep(30); RETURN true; END $$;"
            " ALTER TABLE pgleader.controls ENABLE ROW LEVEL SECURITY;"
            " CREATE POLICY spy ON pgleader.controls USING (pgleader.spy())" % key,
            user="mallory")
    # the attack works as written: a role it applies to runs the function
    assert spied(pg) == 0


def error_lines(p):
    return [l for l in p.text().splitlines() if "error" in l]


def test_hostile_ledger_is_refused_never_read(workdir, pg, fleet, ledger, lock_key):
    hostile_ledger(workdir, pg, lock_key)
    t0 = time.monotonic()
    p = fleet.start("a", dsn=pg.dsn(user="app"))
    assert p.wait(bound(10)) == 69, p.text()
    took = time.monotonic() - t0
    lines = error_lines(p)
    assert len(lines) == 1, p.text()
    assert "schema pgleader is owned by role mallory" in lines[0], lines
    assert "--ledger-owner" in lines[0] and "pgleader init-db" in lines[0], lines
    assert ledger.starts() == []
    assert spied(pg) == 0, "the hostile policy ran as the node's role"
    assert took < bound(5), "refused after %.1fs" % took

    # The command line's tools refuse it too, with the same line; nothing
    # written, nothing of mallory's run.
    rows = pg.psql("SELECT count(*) FROM pgleader.controls", user="mallory")
    for sub in ("pause", "resume", "runs", "init-db"):
        r = cli(workdir, sub, pg.dsn(user="app"), "--lock-key", str(lock_key))
        assert r.rc == 69, (sub, r)
        assert "owned by role mallory" in r.err, (sub, r)
        assert len(r.err.splitlines()) == 1, (sub, r)
    r = cli(workdir, "status", pg.dsn(user="app"), "--lock-key", str(lock_key))
    assert r.err.count("owned by role mallory") == 1, r
    assert pg.psql("SELECT count(*) FROM pgleader.controls", user="mallory") == rows
    assert spied(pg) == 0, "the hostile policy ran as the role of a command line tool"


def test_ledger_owner_trusts_without_running_policies(workdir, pg, fleet, ledger, lock_key):
    """A DBA's role named by --ledger-owner is trusted; a policy on its
    tables still never runs as the node's role (row_security = off: the
    read fails instead)."""
    hostile_ledger(workdir, pg, lock_key)
    p = fleet.start("a", "--ledger-owner", "mallory", dsn=pg.dsn(user="app"))
    p.wait_for_log(r"row-level security", timeout=bound(10))
    time.sleep(1.0)  # a few more reads, one every ping interval
    assert p.running()
    assert spied(pg) == 0, "the policy ran as the node's role"
    assert p.stop() == 0


def test_controls_read_ends_within_its_bound(workdir, pg, fleet, ledger, lock_key):
    """A trusted ledger whose controls wait behind another session's lock:
    the read ends within the fence session's bound (a few seconds), not
    after retry_interval (30 s here), nor when the lock is let go (20 s)."""
    assert cli(workdir, "init-db", pg.dsn()).rc == 0
    def hold():
        pg.psql("BEGIN; LOCK TABLE pgleader.controls IN ACCESS EXCLUSIVE MODE;"
                " SELECT pg_sleep(20); COMMIT", timeout=60, check=False)
    t = threading.Thread(target=hold, daemon=True)
    t.start()
    h.wait_until(lambda: pg.scalar("SELECT count(*) FROM pg_locks WHERE relation ="
                                   " 'pgleader.controls'::regclass AND granted") != "0",
                 bound(5), what="the lock on controls")
    t0 = time.monotonic()
    p = fleet.start("a", timing=h.timing(retry_interval="30s"))
    p.wait_for_log(r"lock timeout", timeout=bound(12))
    took = time.monotonic() - t0
    assert took < bound(6), "the read waited %.1fs" % took
    p.stop()
    t.join(bound(30))


# ---- item 5: a ledger dropped while nodes run ----

def test_dropped_ledger_is_made_again(workdir, pg, fleet, ledger, lock_key):
    p = fleet.start("a", *sched(every="1s"), job={"after": 0.1, "exit_code": 0})
    wait_rows(pg, lock_key, 2, bound(15), outcome="succeeded")
    pg.psql("DROP SCHEMA pgleader CASCADE")
    mark = p.mark()
    wait_rows(pg, lock_key, 2, bound(15), outcome="succeeded")
    assert p.running()
    assert "making it again" in p.text()[mark:], p.text()[mark:]
    # the drop is told by the statements it met (a run's end, the
    # controls), then never again: not a line every tick
    mark = p.mark()
    time.sleep(3.0)
    assert "does not exist" not in p.text()[mark:], p.text()
    assert len(runs(pg, lock_key)) >= 4
    assert p.stop() == 0


def test_dropped_ledger_a_role_may_not_make_gives_up_the_lead(workdir, pg, fleet, ledger,
                                                               lock_key):
    pg.psql("CREATE ROLE app LOGIN")
    assert cli(workdir, "init-db", pg.dsn()).rc == 0
    pg.psql("GRANT USAGE ON SCHEMA pgleader TO app; GRANT SELECT, INSERT, UPDATE, DELETE"
            " ON pgleader.runs, pgleader.terms, pgleader.controls, pgleader.jobs,"
            " pgleader.triggers TO app")
    p = fleet.start("a", *sched(every="1s"), dsn=pg.dsn(user="app"),
                    job={"after": 0.1, "exit_code": 0})
    wait_rows(pg, lock_key, 2, bound(15), outcome="succeeded")
    pg.psql("DROP SCHEMA pgleader CASCADE")
    t0 = time.monotonic()
    assert p.wait(bound(10)) == 69, p.text()
    assert time.monotonic() - t0 < bound(5)
    lines = error_lines(p)
    assert len(lines) == 1 and "pgleader init-db" in lines[0], p.text()
    assert not pg.lock_holders(lock_key)


# ---- item 8: --priority on a database without the ledger ----

def test_priority_makes_the_ledger_and_takes_over(workdir, pg, fleet, ledger, lock_key):
    a = fleet.start("a")
    ledger.wait_for("start", node="a", timeout=bound(10))
    b = fleet.start("b", "--priority", "2", "--priority-delay", "1s")
    ledger.wait_for("start", node="b", timeout=bound(15))
    assert "does not exist" not in b.text(), b.text()
    assert pg.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = 'pgleader'") == "1"
    assert a.running() and b.running()


def test_priority_without_ledger_and_create_says_init_db_once(workdir, pg, fleet, ledger,
                                                               lock_key):
    pg.psql("CREATE ROLE app LOGIN")
    fleet.start("a")
    ledger.wait_for("start", node="a", timeout=bound(10))
    b = fleet.start("b", "--priority", "2", "--priority-delay", "500ms",
                    dsn=pg.dsn(user="app"))
    b.wait_for_log(r"pgleader init-db", timeout=bound(10))
    time.sleep(3.0)  # several asks later
    lines = [l for l in b.text().splitlines() if "pgleader init-db" in l]
    assert len(lines) == 1, b.text()
    assert "does not exist" not in b.text(), b.text()
    assert [e.node for e in ledger.starts()] == ["a"]
    assert pg.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = 'pgleader'") == "0"


# ---- item 9: the grants a DBA applies ----

def test_print_sql_grant_to_lets_the_nodes_role_run(workdir, pg, fleet, ledger, lock_key):
    pg.psql("CREATE ROLE app LOGIN")
    r = cli(workdir, "init-db", pg.dsn(), "--print-sql")
    assert r.rc == 0 and "-- GRANT USAGE ON SCHEMA \"pgleader\" TO ROLE;" in r.out, r
    r = cli(workdir, "init-db", pg.dsn(), "--print-sql", "--grant-to", "app")
    assert r.rc == 0, r
    assert "GRANT USAGE ON SCHEMA \"pgleader\" TO \"app\";" in r.out, r
    path = os.path.join(str(workdir), "ledger.sql")
    with open(path, "w") as f:
        f.write(r.out)
    os.chmod(path, 0o644)
    p = subprocess.run([os.path.join(h.PG_BINDIR, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                        "-h", pg.sockdir, "-p", str(pg.port), "-U", "postgres",
                        "-d", "postgres", "-f", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=bound(30))
    assert p.returncode == 0, p.stderr.decode()
    r = cli(workdir, "init-db", pg.dsn(user="app"))
    assert r.rc == 0 and r.out == 'ledger ready in schema "pgleader"\n', r
    node = fleet.start("a", *sched(every="1s"), dsn=pg.dsn(user="app"),
                       job={"after": 0.1, "exit_code": 0})
    wait_rows(pg, lock_key, 2, bound(15), outcome="succeeded")
    assert node.stop() == 0
    assert {row[2] for row in runs(pg, lock_key)} == {"a"}
