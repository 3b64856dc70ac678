"""The ledger from the command line (DESIGN 10) against a real PostgreSQL:
`pgleader init-db` (idempotent, two at once, --print-sql, a role without
CREATE), `pgleader runs` (text, --json, --job, --since, no ledger) and the
jobs of `pgleader status`."""

import datetime
import json
import os
import re
import signal
import subprocess
import threading
import time

import pgharness as h
from test_status import run_status

TABLES = ["controls", "jobs", "meta", "runs", "terms", "triggers"]
RUN_FIELDS = ["job", "tick", "node_id", "fencing_token", "outcome", "exit_status",
              "started_at", "finished_at", "run_id", "output_bytes", "attempt",
              "trigger"]


def rfc3339(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def cli(workdir, sub, dsn, *args, **kw):
    return run_status(workdir, "--dsn", dsn, *args, subcommand=sub, **kw)


def init_db(workdir, pg, schema, user="postgres"):
    return cli(workdir, "init-db", pg.dsn(user=user), "--schema", schema)


def tables_of(pg, schema):
    return sorted(r[0] for r in pg.psql(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = '%s'" % schema))


def layout(pg, schema):
    """Everything a DBA would compare: columns, constraints, indexes,
    comments, with the schema's name taken out."""
    cols = pg.psql(
        "SELECT table_name, column_name, data_type, is_nullable, coalesce(column_default, ''),"
        " is_identity, coalesce(col_description(format('%%I.%%I', table_schema, table_name)"
        "::regclass, ordinal_position::int), '')"
        " FROM information_schema.columns WHERE table_schema = '%s'"
        " ORDER BY table_name, ordinal_position" % schema)
    cons = pg.psql(
        "SELECT conrelid::regclass::text, contype, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE connamespace = '%s'::regnamespace ORDER BY 1, 2, 3" % schema)
    idx = pg.psql("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = '%s'"
                  " ORDER BY 1" % schema)
    comments = pg.psql(
        "SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c"
        " WHERE c.relnamespace = '%s'::regnamespace AND c.relkind = 'r' ORDER BY 1" % schema)
    text = repr((cols, cons, idx, comments))
    return text.replace('"%s"' % schema, "S").replace(schema, "S")


def test_init_db_creates_the_ledger_and_is_idempotent(workdir, pg_shared):
    r = init_db(workdir, pg_shared, "ledger_init")
    assert r.rc == 0, r
    assert r.out == 'ledger ready in schema "ledger_init"\n', r
    assert r.err == "", r
    assert tables_of(pg_shared, "ledger_init") == TABLES
    assert pg_shared.psql("SELECT version FROM ledger_init.meta") == [["5"]]
    assert pg_shared.scalar("SELECT obj_description('ledger_init.runs'::regclass,"
                            " 'pg_class')").startswith("one row per job and tick")
    # The outcomes are checked by the server.
    r2 = pg_shared.psql("INSERT INTO ledger_init.runs (lock_key, job, tick, node_id,"
                        " fencing_token, outcome) VALUES (1, 'j', now(), 'n', 1, 'bogus')",
                        check=False)
    assert r2 == [] and pg_shared.scalar("SELECT count(*) FROM ledger_init.runs") == "0"

    again = init_db(workdir, pg_shared, "ledger_init")
    assert (again.rc, again.out, again.err) == (r.rc, r.out, r.err), again
    assert pg_shared.psql("SELECT version FROM ledger_init.meta") == [["5"]]


def test_init_db_two_at_once(workdir, pg_shared):
    """Concurrent CREATE ... IF NOT EXISTS fails on pg_type's unique index
    without the advisory lock: four at once, five times over."""
    for round_ in range(5):
        schema = "ledger_race_%d" % round_
        results = [None] * 4

        def one(i, schema=schema, results=results):
            results[i] = init_db(workdir, pg_shared, schema)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in results:
            assert r is not None and r.rc == 0 and r.err == "", results
        assert tables_of(pg_shared, schema) == TABLES
        assert pg_shared.psql("SELECT version FROM %s.meta" % schema) == [["5"]]


def test_print_sql_gives_the_same_ledger(workdir, pg_shared):
    r = run_status(workdir, "--schema", "ledger_dba", "--print-sql", subcommand="init-db")
    assert r.rc == 0 and r.err == "", r
    assert r.out.startswith("BEGIN;\n") and r.out.endswith("COMMIT;\n"), r
    path = os.path.join(str(workdir), "ledger.sql")
    with open(path, "w") as f:
        f.write(r.out)
    os.chmod(path, 0o644)
    for _ in range(2):  # applied twice: idempotent for a DBA too
        p = subprocess.run([os.path.join(h.PG_BINDIR, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                            "-h", pg_shared.sockdir, "-p", str(pg_shared.port), "-U", "postgres",
                            "-d", "postgres", "-f", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=h.bound(30))
        assert p.returncode == 0, p.stderr.decode()
    assert init_db(workdir, pg_shared, "ledger_cmp").rc == 0
    assert tables_of(pg_shared, "ledger_dba") == TABLES
    assert layout(pg_shared, "ledger_dba") == layout(pg_shared, "ledger_cmp")


def test_role_without_create(workdir, pg_shared):
    pg_shared.psql("DROP ROLE IF EXISTS ledger_app; CREATE ROLE ledger_app LOGIN")
    r = init_db(workdir, pg_shared, "ledger_noc", user="ledger_app")
    assert r.rc == 69, r
    assert r.out == "", r
    lines = r.err.splitlines()
    assert len(lines) == 1, r
    assert "CREATE on database \"postgres\"" in lines[0], r
    assert "pgleader init-db --print-sql" in lines[0], r
    assert tables_of(pg_shared, "ledger_noc") == []

    # Created by someone else, not granted: init-db and runs say what the
    # role lacks; status says nothing about the ledger.
    assert init_db(workdir, pg_shared, "ledger_noc").rc == 0
    for sub, args in (("init-db", ()), ("runs", ())):
        r = cli(workdir, sub, pg_shared.dsn(user="ledger_app"), "--schema", "ledger_noc", *args)
        assert r.rc == 69 and r.out == "", r
        assert len(r.err.splitlines()) == 1 and "USAGE on schema ledger_noc" in r.err, r

    # Granted: init-db finds it ready without CREATE; runs lists.
    pg_shared.psql("GRANT USAGE ON SCHEMA ledger_noc TO ledger_app;"
                   " GRANT SELECT, INSERT, UPDATE, DELETE ON ledger_noc.runs, ledger_noc.terms,"
                   " ledger_noc.jobs TO ledger_app;"
                   " GRANT SELECT, DELETE ON ledger_noc.triggers TO ledger_app")
    r = init_db(workdir, pg_shared, "ledger_noc", user="ledger_app")
    assert r.rc == 0 and r.out == 'ledger ready in schema "ledger_noc"\n', r
    r = cli(workdir, "runs", pg_shared.dsn(user="ledger_app"), "--schema", "ledger_noc")
    assert r.rc == 0 and r.out == "no runs\n", r


def insert_runs(pg, schema, key):
    """Six rows of key and one of another key, at ticks relative to the
    server's now(); returns nothing: the tests read them back."""
    pg.psql(
        "INSERT INTO {s}.runs (lock_key, job, tick, node_id, fencing_token, outcome,"
        " exit_status, started_at, finished_at) VALUES"
        " ({k}, 'nightly', date_trunc('second', now()) - interval '2 hours', 'node-a',"
        "  9223372036854775000, 'succeeded', 0, date_trunc('second', now()) - interval '2 hours',"
        "  date_trunc('second', now()) - interval '2 hours' + interval '1.25 seconds'),"
        " ({k}, 'nightly', date_trunc('second', now()) - interval '1 hour', 'node-b',"
        "  9223372036854775001, 'failed', 3, date_trunc('second', now()) - interval '1 hour',"
        "  date_trunc('second', now()) - interval '1 hour' + interval '2 seconds'),"
        " ({k}, 'refresh', date_trunc('second', now()) - interval '30 minutes', 'node-b',"
        "  9223372036854775001, 'missed', NULL, NULL, NULL),"
        " ({k}, 'refresh', date_trunc('second', now()) - interval '3 minutes', 'node-a',"
        "  9223372036854775002, 'interrupted', NULL, now() - interval '3 minutes', NULL),"
        " ({k}, 'refresh', date_trunc('second', now()) - interval '1 minute', 'node-a',"
        "  9223372036854775002, 'running', NULL, now() - interval '1 minute', NULL),"
        " ({k}, 'nightly', date_trunc('second', now()) - interval '90 seconds', 'node-a',"
        "  9223372036854775002, 'timed_out', 143, now() - interval '90 seconds',"
        "  now() - interval '30 seconds'),"
        " ({other}, 'nightly', now(), 'node-z', 1, 'succeeded', 0, now(), now())"
        .format(s=schema, k=key, other=key ^ 1))


def test_runs_lists_the_ledger(workdir, pg_shared, lock_key):
    assert init_db(workdir, pg_shared, "ledger_runs").rc == 0
    insert_runs(pg_shared, "ledger_runs", lock_key)
    base = ("--schema", "ledger_runs", "--lock-key", str(lock_key))

    r = cli(workdir, "runs", pg_shared.dsn(), *base)
    assert r.rc == 0 and r.err == "", r
    lines = r.out.splitlines()
    assert lines[0].split() == ["TICK", "JOB", "NODE", "OUTCOME", "EXIT", "DURATION",
                                 "RUN", "ATTEMPT", "BY"], r
    rows = [l.split() for l in lines[1:]]
    assert [(x[1], x[3]) for x in rows] == [
        ("refresh", "running"), ("nightly", "timed_out"), ("refresh", "interrupted"),
        ("refresh", "missed"), ("nightly", "failed"), ("nightly", "succeeded")], r
    assert rows[-1][4:6] == ["0", "1.25s"] and rows[-2][4:6] == ["3", "2s"], r
    assert rows[1][4:6] == ["143", "1m"] and rows[0][4:6] == ["-", "-"], r
    run_ids = [int(x[6]) for x in rows]
    assert len(set(run_ids)) == 6, r
    assert {(x[7], x[8]) for x in rows} == {("1", "schedule")}, r
    # --failed: the runs that did not succeed, not the ticks that did not run
    r = cli(workdir, "runs", pg_shared.dsn(), *base, "--failed")
    assert [(l.split()[1], l.split()[3]) for l in r.out.splitlines()[1:]] == [
        ("nightly", "timed_out"), ("refresh", "interrupted"), ("nightly", "failed")], r
    assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", x[0]) for x in rows), r
    # aligned columns
    assert len({l.index(" " + l.split()[1]) for l in lines}) == 1, r

    r = cli(workdir, "runs", pg_shared.dsn(), *base, "--json")
    assert r.rc == 0 and r.err == "", r
    doc = json.loads(r.out)
    assert [list(o) for o in doc] == [RUN_FIELDS] * 6, doc
    ticks = [o["tick"] for o in doc]
    assert ticks == sorted(ticks, reverse=True), doc
    last = doc[-1]
    assert last["job"] == "nightly" and last["node_id"] == "node-a", doc
    assert last["fencing_token"] == "9223372036854775000", doc
    assert last["outcome"] == "succeeded" and last["exit_status"] == 0, doc
    assert last["started_at"] == last["tick"], doc
    assert rfc3339(last["finished_at"]) - rfc3339(last["tick"]) == datetime.timedelta(
        seconds=1.25), doc
    assert doc[0]["exit_status"] is None and doc[0]["finished_at"] is None, doc
    assert doc[3]["started_at"] is None, doc
    db_ticks = pg_shared.psql(
        "SELECT to_char(tick AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM"
        " ledger_runs.runs WHERE lock_key = %d ORDER BY tick DESC" % lock_key)
    assert ticks == [t[0] for t in db_ticks], doc

    r = cli(workdir, "runs", pg_shared.dsn(), *base, "--json", "--job", "nightly")
    assert [(o["job"], o["outcome"]) for o in json.loads(r.out)] == [
        ("nightly", "timed_out"), ("nightly", "failed"), ("nightly", "succeeded")], r
    r = cli(workdir, "runs", pg_shared.dsn(), *base, "--json", "--since", "45m")
    assert [o["outcome"] for o in json.loads(r.out)] == [
        "running", "timed_out", "interrupted", "missed"], r
    r = cli(workdir, "runs", pg_shared.dsn(), *base, "--json", "--since", "5m",
            "--job", "refresh")
    assert [o["outcome"] for o in json.loads(r.out)] == ["running", "interrupted"], r
    r = cli(workdir, "runs", pg_shared.dsn(), *base, "--json", "--job", "nope")
    assert r.rc == 0 and r.out == "[]\n", r
    r = cli(workdir, "runs", pg_shared.dsn(), *base, "--since", "soon")
    assert r.rc == 64 and "--since" in r.err and r.out == "", r


def test_runs_by_lock_name(workdir, pg_shared):
    assert init_db(workdir, pg_shared, "ledger_runs").rc == 0
    key = pg_shared.hashtextextended("ledger-by-name")
    insert_runs(pg_shared, "ledger_runs", key)
    r = cli(workdir, "runs", pg_shared.dsn(), "--schema", "ledger_runs", "--lock-name",
            "ledger-by-name", "--json")
    assert r.rc == 0 and len(json.loads(r.out)) == 6, r


def test_runs_without_ledger(workdir, pg_shared, lock_key):
    for args in ((), ("--json",)):
        r = cli(workdir, "runs", pg_shared.dsn(), "--schema", "ledger_none",
                "--lock-key", str(lock_key), *args)
        assert r.rc == 69 and r.out == "", r
        assert len(r.err.splitlines()) == 1 and "'pgleader init-db'" in r.err, r
    assert tables_of(pg_shared, "ledger_none") == []


def test_runs_unreachable_and_bad_dsn(workdir):
    port = h.free_port()
    r = cli(workdir, "runs", "host=127.0.0.1 port=%d connect_timeout=2" % port)
    assert r.rc == 69 and r.out == "" and len(r.err.splitlines()) == 1, r
    r = cli(workdir, "init-db", "host=127.0.0.1 port=%d connect_timeout=2" % port)
    assert r.rc == 69 and r.out == "" and len(r.err.splitlines()) == 1, r
    r = cli(workdir, "init-db", "host=127.0.0.1 port")
    assert r.rc == 78 and r.out == "", r


def test_runs_bounded_in_time(workdir, pg_shared, lock_key):
    """A ledger locked by someone else, and runs' backend stopped while it
    waits for that lock, so that the server's own lock_timeout cannot
    answer either: the client gives up on its own deadline (10 s), with one
    line, instead of waiting for ever."""
    assert init_db(workdir, pg_shared, "ledger_lock").rc == 0
    psql = subprocess.Popen(
        [os.path.join(h.PG_BINDIR, "psql"), "-X", "-q", "-h", pg_shared.sockdir,
         "-p", str(pg_shared.port), "-U", "postgres", "-d", "postgres"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stopped = []
    try:
        psql.stdin.write(b"BEGIN; LOCK TABLE ledger_lock.runs IN ACCESS EXCLUSIVE MODE;\n")
        psql.stdin.flush()
        h.wait_until(lambda: pg_shared.scalar(
            "SELECT count(*) FROM pg_locks WHERE relation = 'ledger_lock.runs'::regclass"
            " AND mode = 'AccessExclusiveLock' AND granted") == "1", 10, what="the lock")
        result = []
        t0 = time.monotonic()
        t = threading.Thread(target=lambda: result.append(cli(
            workdir, "runs", pg_shared.dsn(), "--schema", "ledger_lock",
            "--lock-key", str(lock_key))))
        t.start()

        def waiting():
            return pg_shared.scalar(
                "SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                " WHERE l.relation = 'ledger_lock.runs'::regclass AND NOT l.granted"
                " AND a.application_name = 'pgleader-status'")
        h.wait_until(waiting, 5, what="runs waiting for the lock")
        backend = int(waiting())
        os.kill(backend, signal.SIGSTOP)
        stopped.append(backend)
        t.join(h.bound(30))
        took = time.monotonic() - t0
        r = result[0]
        assert r.rc == 69 and r.out == "" and len(r.err.splitlines()) == 1, r
        assert "no answer within 10000 ms" in r.err, r
        assert 9.5 <= took <= h.bound(15), took
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        h.kill_quietly(psql.pid)
        psql.wait()


def test_status_shows_jobs(workdir, pg_shared, lock_key):
    """The default schema; status never creates it (checked by the test
    below on a fresh server)."""
    assert cli(workdir, "init-db", pg_shared.dsn()).rc == 0
    insert_runs(pg_shared, "pgleader", lock_key)
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key))
    assert r.rc == 3 and r.err == "", r
    jobs = [l for l in r.out.splitlines() if l.startswith("job:")]
    assert len(jobs) == 2, r
    assert re.match(r"job: +nightly  last tick \S+Z on node-a  timed_out  exit 143  took 1m"
                    r"  last success \S+Z$", jobs[0]), r
    assert re.match(r"job: +refresh  last tick \S+Z on node-a  running  last success never$",
                    jobs[1]), r

    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key), "--json")
    assert r.rc == 3, r
    doc = json.loads(r.out)
    assert [j["job"] for j in doc["jobs"]] == ["nightly", "refresh"], doc
    nightly = doc["jobs"][0]
    assert list(nightly) == ["job", "announced_by", "schedule", "timezone", "last_run",
                             "last_success", "next_tick"], doc
    assert nightly["announced_by"] is None, doc  # rows only, no leader announced it
    assert list(nightly["last_run"]) == RUN_FIELDS + ["duration_seconds"], doc
    assert nightly["last_run"]["outcome"] == "timed_out", doc
    assert nightly["last_run"]["duration_seconds"] == 60.0, doc
    assert nightly["last_success"].endswith(".250Z"), doc
    assert doc["jobs"][1]["last_success"] is None, doc

    # Another lock's status: a ledger, but no rows of its own.
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key ^ 2), "--json")
    assert json.loads(r.out)["jobs"] == [], r


def test_status_without_ledger_unchanged(workdir, pg, lock_key):
    r = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(lock_key))
    assert r.rc == 3 and r.err == "", r
    assert r.out == "lock key %d\nno leader\n" % lock_key, r
    r = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(lock_key), "--json")
    assert r.rc == 3 and r.err == "", r
    assert list(json.loads(r.out)) == ["lock_key", "lock_name", "leader", "standbys", "fences"], r
    assert pg.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = 'pgleader'") == "0"


def test_bad_options(workdir):
    """One line and 64, before any connection (no server here)."""
    port = h.free_port()
    dsn = "host=127.0.0.1 port=%d" % port
    for sub, args, word in (("runs", ("--print-sql",), "--print-sql"),
                            ("init-db", ("--job", "x"), "--job"),
                            ("init-db", ("--json",), "--json"),
                            ("runs", ("--watch",), "--watch"),
                            ("runs", ("--schema", "Bad"), "--schema"),
                            ("init-db", ("--schema", "pg_x", "--print-sql"), "--schema"),
                            ("runs", ("--since", "-5m"), "--since")):
        r = cli(workdir, sub, dsn, *args)
        assert r.rc == 64 and r.out == "", (sub, args, r)
        assert len(r.err.splitlines()) == 1 and word in r.err, (sub, args, r)
