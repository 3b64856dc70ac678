"""The operator controls from the command line (DESIGN 11) against a real
PostgreSQL: `pgleader pause` and `resume` (rows, output, last one wins, who
asked), `pgleader switchover` (refusals that write nothing, a standing one,
--wait lapsing, a real handover once the daemon acts on it), the controls and
priorities `pgleader status` shows, and the bad inputs."""

import json
import os
import re
import signal
import subprocess
import time

import pytest

import pgharness as h
from test_status import run_status, start_leader_and_standby, node_line

AT = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z"


def schema_for(key):
    """A schema of the test's own: the ledger is created by the test."""
    return "ctl_%d" % (abs(key) % 10 ** 9)


def ctl(workdir, sub, pg, key, *args, appname=None, schema=None, **kw):
    env = {"PGAPPNAME": appname} if appname else None
    return run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(key),
                      "--schema", schema or schema_for(key), *args,
                      subcommand=sub, env=env, **kw)


def rows(pg, key, schema=None, resumed=False):
    """The controls in force (with resumed: the pauses a resume ended,
    which record who resumed them)."""
    schema = schema or schema_for(key)
    if not pg.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = '%s'" % schema) == "1":
        return []
    return pg.psql("SELECT job, kind, coalesce(target, ''), coalesce(leader, ''), asked_by,"
                   " asked_at::text FROM %s.controls WHERE lock_key = %d AND (%s)"
                   " ORDER BY kind, job"
                   % (schema, key, "kind = 'pause' AND until <= now()" if resumed
                      else "until IS NULL OR until > now()"))


def one_line_err(r):
    assert r.err.count("\n") == 1 and r.err.startswith("pgleader: "), r


# ---- pause and resume --------------------------------------------------------

@pytest.mark.valgrind
def test_pause_resume_rows_and_output(workdir, pg_shared, lock_key):
    schema = schema_for(lock_key)
    r = ctl(workdir, "pause", pg_shared, lock_key)
    assert r.rc == 0, r
    assert r.err == "", r
    # The ledger was missing: the pause created it.
    assert re.fullmatch(r"paused lock %d \(every job\) as asked by pgleader-pause \(role postgres\)"
                        r" from 127\.0\.0\.1 at %s; the leader stops the command within \S+\n"
                        % (lock_key, AT), r.out), r
    got = rows(pg_shared, lock_key)
    assert [g[:4] for g in got] == [["", "pause", "", ""]], got

    # no node announced nightly (DESIGN 11): --force writes it anyway
    r = ctl(workdir, "pause", pg_shared, lock_key, "--job", "nightly", "--force")
    assert r.rc == 0, r
    assert r.out.startswith("paused job nightly of lock %d as asked by " % lock_key), r
    # ping_interval + grace_period, as this command's configuration says
    assert r.out.rstrip().endswith("the leader stops it within 9s"), r
    assert [g[:2] for g in rows(pg_shared, lock_key)] == [["", "pause"], ["nightly", "pause"]]

    st = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key),
                    "--schema", schema)
    assert st.rc == 3, st
    assert re.search(r"^paused:  every job since %s by pgleader-pause \(role postgres\) from"
                     r" 127\.0\.0\.1$" % AT, st.out, re.M), st
    assert re.search(r"^paused:  job nightly since %s by pgleader-pause" % AT, st.out, re.M), st
    doc = json.loads(run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key),
                                "--schema", schema, "--json").out)
    c = doc["controls"]
    assert c["paused"]["asked_by"].startswith("pgleader-pause (role postgres)"), c
    assert re.fullmatch(AT, c["paused"]["since"]), c
    assert [j["job"] for j in c["paused_jobs"]] == ["nightly"], c
    assert c["switchover"] is None, c

    r = ctl(workdir, "resume", pg_shared, lock_key, "--job", "nightly", "--force")
    assert (r.rc, r.err) == (0, ""), r
    assert r.out == ("resumed job nightly of lock %d; the whole lock stays paused"
                     " (pgleader resume without --job)\n" % lock_key), r
    r = ctl(workdir, "resume", pg_shared, lock_key, "--job", "nightly", "--force")
    assert r.out == ("job nightly of lock %d was not paused; the whole lock stays paused"
                     " (pgleader resume without --job)\n" % lock_key), r
    r = ctl(workdir, "resume", pg_shared, lock_key)
    assert (r.rc, r.out, r.err) == (0, "resumed lock %d (every job)\n" % lock_key, ""), r
    assert rows(pg_shared, lock_key) == []
    r = ctl(workdir, "resume", pg_shared, lock_key)
    assert (r.rc, r.out) == (0, "lock %d was not paused\n" % lock_key), r
    st = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key),
                    "--schema", schema, "--json")
    assert json.loads(st.out)["controls"] == {"paused": None, "paused_jobs": [],
                                              "switchover": None}, st


def test_resume_every_pause_of_the_lock_by_name(workdir, pg_shared):
    """--lock-name: the key from the server; resume without --job ends the
    jobs' pauses too, and no other lock's."""
    name = "ctl-named-%d" % os.getpid()
    key = int(pg_shared.hashtextextended(name))
    other = key + 1
    run = lambda sub, *a, k=None: run_status(  # noqa: E731
        workdir, "--dsn", pg_shared.dsn(), "--schema", "ctl_named",
        *(("--lock-name", name) if k is None else ("--lock-key", str(k))), *a, subcommand=sub)
    assert run("pause", "--job", "a", "--force").rc == 0
    assert run("pause", "--job", "b", "--force").rc == 0
    assert run("pause", k=other).rc == 0
    r = run("resume")
    assert (r.rc, r.out) == (0, 'resumed job a, b of lock "%s"\n' % name), r
    assert len(rows(pg_shared, other, "ctl_named")) == 1
    assert rows(pg_shared, key, "ctl_named") == []


def test_last_pause_wins_both_recorded(workdir, pg_shared, lock_key):
    """Two operators: the second pause records its asker and time; a resume
    from a third ends it; each says who it was."""
    a = ctl(workdir, "pause", pg_shared, lock_key, appname="alice")
    assert a.rc == 0 and "as asked by alice (role postgres) from 127.0.0.1 at" in a.out, a
    first = rows(pg_shared, lock_key)
    time.sleep(0.05)
    b = ctl(workdir, "pause", pg_shared, lock_key, appname="bob")
    assert b.rc == 0 and "as asked by bob (role postgres)" in b.out, b
    second = rows(pg_shared, lock_key)
    assert len(first) == len(second) == 1
    assert first[0][4].startswith("alice (role postgres)"), first
    assert second[0][4].startswith("bob (role postgres)"), second
    assert second[0][5] > first[0][5], (first, second)
    # A node id as the name would make the session look like a node.
    c = ctl(workdir, "pause", pg_shared, lock_key, appname="pgleader/x")
    assert "as asked by pgleader-pause (role postgres)" in c.out, c
    r = ctl(workdir, "resume", pg_shared, lock_key, appname="carol")
    assert (r.rc, r.out) == (0, "resumed lock %d (every job)\n" % lock_key), r
    assert rows(pg_shared, lock_key) == []
    # the resume is recorded in the pause's place, for the nodes to name
    done = rows(pg_shared, lock_key, resumed=True)
    assert len(done) == 1 and done[0][4].startswith("carol (role postgres)"), done
    # and a pause after it is in force again
    d = ctl(workdir, "pause", pg_shared, lock_key, appname="dave")
    assert d.rc == 0 and [r[4][:4] for r in rows(pg_shared, lock_key)] == ["dave"], d


def test_status_without_ledger_unchanged(workdir, fleet_shared, pg_shared):
    """No ledger: status shows no controls and creates nothing; resume
    says nothing was paused and creates nothing either."""
    start_leader_and_standby(fleet_shared, pg_shared, "ctl-nl-a", "ctl-nl-b")
    key = fleet_shared.key
    schema = schema_for(key)
    st = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key),
                    "--schema", schema, "--json")
    assert st.rc == 0, st
    doc = json.loads(st.out)
    assert "controls" not in doc and "jobs" not in doc, doc
    assert "priority" not in doc["leader"], doc
    st = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key), "--schema", schema)
    assert "paused" not in st.out and "priority" not in st.out, st
    r = ctl(workdir, "resume", pg_shared, key)
    assert (r.rc, r.out) == (0, "lock %d was not paused (no ledger)\n" % key), r
    assert pg_shared.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = '%s'"
                            % schema) == "0"


def test_pause_without_privilege(workdir, pg_shared, lock_key):
    """A role that may neither create the ledger nor write the controls:
    69, one line naming what to do."""
    role = "ctl_plain_%d" % (abs(lock_key) % 10 ** 6)
    pg_shared.psql("DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN" % (role, role))
    schema = schema_for(lock_key)
    try:
        r = run_status(workdir, "--dsn", pg_shared.dsn(user=role), "--lock-key", str(lock_key),
                       "--schema", schema, subcommand="pause")
        assert r.rc == 69, r
        one_line_err(r)
        assert "pgleader init-db" in r.err, r
        ok = ctl(workdir, "init-db", pg_shared, lock_key)
        assert ok.rc == 0, ok
        r = run_status(workdir, "--dsn", pg_shared.dsn(user=role), "--lock-key", str(lock_key),
                       "--schema", schema, subcommand="pause")
        assert r.rc == 69, r
        one_line_err(r)
        assert "INSERT, UPDATE and DELETE on %s.controls" % schema in r.err, r
        assert rows(pg_shared, lock_key) == []
        # Every role reads the controls: status shows an empty set.
        st = run_status(workdir, "--dsn", pg_shared.dsn(user=role), "--lock-key",
                        str(lock_key), "--schema", schema, "--json")
        assert json.loads(st.out)["controls"]["paused"] is None, st
    finally:
        pg_shared.psql("DROP SCHEMA IF EXISTS %s CASCADE; DROP ROLE IF EXISTS %s"
                       % (schema, role))


# ---- switchover: refusals ----------------------------------------------------

def wait_priority(workdir, pg, key, node, text):
    """Until status shows node's standby line ending with text."""
    def seen():
        st = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(key))
        return (node_line(st.out, "standby", node) or "").endswith(text)
    h.wait_until(seen, 10, interval=0.2, what="%s's priority in status" % node)


def test_switchover_no_leader(workdir, pg_shared, lock_key):
    r = ctl(workdir, "switchover", pg_shared, lock_key)
    assert r.rc == 3, r
    assert r.err == "pgleader: switchover refused: no node leads lock %d\n" % lock_key, r
    assert r.out == "", r
    assert rows(pg_shared, lock_key) == []


def test_switchover_no_standby(workdir, fleet_shared, pg_shared):
    key = fleet_shared.key
    a = fleet_shared.start("ctl-ns-a", command=["sleep", "600"])
    a.wait_for_log(r"acquired leader lease")
    r = ctl(workdir, "switchover", pg_shared, key)
    assert r.rc == 3, r
    assert r.err == ("pgleader: switchover refused: no standby of lock %d could take over from"
                     " ctl-ns-a (none connected with priority 1 or more)\n" % key), r
    # A standby of priority 0 never leads: still none.
    fleet_shared.start("ctl-ns-b", "--priority", "0", command=["sleep", "600"])
    wait_priority(workdir, pg_shared, key, "ctl-ns-b", "priority 0: never leads")
    r = ctl(workdir, "switchover", pg_shared, key)
    assert r.rc == 3 and "none connected with priority 1 or more" in r.err, r
    assert rows(pg_shared, key) == []


@pytest.mark.valgrind
def test_switchover_refused_target(workdir, fleet_shared, pg_shared):
    """--to an unknown node or one of priority 0: 3, nothing written; --to
    the leader: 0, nothing to do. The priorities in status. ctl-rt-d's
    priority waits an hour: under valgrind the steps below outlast the
    default 10 s, and it would take over (and write the ledger) midway."""
    key = fleet_shared.key
    start_leader_and_standby(fleet_shared, pg_shared, "ctl-rt-a", "ctl-rt-b")
    fleet_shared.start("ctl-rt-c", "--priority", "0", command=["sleep", "600"])
    fleet_shared.start("ctl-rt-d", "--priority", "3", "--priority-delay", "1h",
                       command=["sleep", "600"])
    wait_priority(workdir, pg_shared, key, "ctl-rt-c", "priority 0: never leads")
    wait_priority(workdir, pg_shared, key, "ctl-rt-d", "priority 3")
    st = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key))
    assert "priority 3" in node_line(st.out, "standby", "ctl-rt-d"), st
    assert "priority" not in node_line(st.out, "standby", "ctl-rt-b"), st
    assert "priority" not in node_line(st.out, "leader", "ctl-rt-a"), st
    doc = json.loads(run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key),
                                "--json").out)
    prio = {s["node_id"]: s.get("priority") for s in doc["standbys"]}
    assert prio == {"ctl-rt-b": None, "ctl-rt-c": 0, "ctl-rt-d": 3}, doc

    r = ctl(workdir, "switchover", pg_shared, key, "--to", "nowhere")
    assert r.rc == 3, r
    assert r.err == ("pgleader: switchover refused: nowhere is not a connected standby of lock"
                     " %d; standbys that could take over: ctl-rt-b, ctl-rt-d\n" % key) or \
        r.err == ("pgleader: switchover refused: nowhere is not a connected standby of lock"
                  " %d; standbys that could take over: ctl-rt-d, ctl-rt-b\n" % key), r
    r = ctl(workdir, "switchover", pg_shared, key, "--to", "ctl-rt-c")
    assert r.rc == 3, r
    assert "ctl-rt-c has priority 0: it never leads lock %d;" % key in r.err, r
    one_line_err(r)
    r = ctl(workdir, "switchover", pg_shared, key, "--to", "ctl-rt-a")
    assert (r.rc, r.out, r.err) == (0, "ctl-rt-a leads lock %d already\n" % key, ""), r
    # Nothing written, not even the ledger.
    assert rows(pg_shared, key) == []
    assert pg_shared.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = '%s'"
                            % schema_for(key)) == "0"


def test_switchover_standing_refused(workdir, fleet_shared, pg_shared):
    """One switchover at a time: a standing row refuses the next (3, who
    asked and when); a lapsed one is cleared first."""
    key = fleet_shared.key
    schema = schema_for(key)
    start_leader_and_standby(fleet_shared, pg_shared, "ctl-st-a", "ctl-st-b")
    assert ctl(workdir, "init-db", pg_shared, key).rc == 0
    pg_shared.psql("INSERT INTO %s.controls (lock_key, kind, target, until, asked_by, leader)"
                   " VALUES (%d, 'switchover', 'ctl-st-b', now() + interval '1 hour',"
                   " 'mallory (role postgres) from 10.0.0.9', 'ctl-st-a')" % (schema, key))
    before = rows(pg_shared, key)
    r = ctl(workdir, "switchover", pg_shared, key)
    assert r.rc == 3, r
    one_line_err(r)
    assert re.fullmatch(r"pgleader: switchover refused: a switchover of lock %d stands already:"
                        r" asked by mallory \(role postgres\) from 10\.0\.0\.9 at %s, lapses at"
                        r" %s\n" % (key, AT, AT), r.err), r
    assert rows(pg_shared, key) == before
    st = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key), "--schema", schema)
    assert re.search(r"^switchover: from ctl-st-a to ctl-st-b asked at %s by mallory .*, lapses"
                     r" at %s$" % (AT, AT), st.out, re.M), st
    doc = json.loads(run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key),
                                "--schema", schema, "--json").out)
    sw = doc["controls"]["switchover"]
    assert (sw["from"], sw["to"], sw["asked_by"]) == (
        "ctl-st-a", "ctl-st-b", "mallory (role postgres) from 10.0.0.9"), doc
    assert re.fullmatch(AT, sw["asked_at"]) and re.fullmatch(AT, sw["until"]), doc
    # Lapsed: no longer in force, not shown, and replaced by the next.
    pg_shared.psql("UPDATE %s.controls SET until = now() - interval '1 second'"
                   " WHERE lock_key = %d" % (schema, key))
    st = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key), "--schema", schema)
    assert "switchover:" not in st.out, st


@pytest.mark.valgrind
def test_switchover_wait_lapses(workdir, fleet_shared, pg_shared):
    """No standby takes over within --wait (the leader's command ignores
    SIGTERM for longer than that, or no daemon acts on the row): 3, the row
    withdrawn, the leader named."""
    key = fleet_shared.key
    ledger = fleet_shared.ledger
    a = fleet_shared.start("ctl-wl-a", timing=h.timing(grace_period="20s", server_lease="30s"),
                           command=h.job_cmd(ledger.path, ignore_term=True))
    a.wait_for_log(r"acquired leader lease")
    b = fleet_shared.start("ctl-wl-b", command=["sleep", "600"])
    b.wait_for_log(r"waiting for leader lease")
    h.wait_until(lambda: pg_shared.backend_pid("pgleader/ctl-wl-b"), 10, what="b's session")
    t0 = time.monotonic()
    r = ctl(workdir, "switchover", pg_shared, key, "--to", "ctl-wl-b", "--wait", "1500ms")
    took = time.monotonic() - t0
    assert r.rc == 3, r
    assert r.out == ("no standby took over lock %d within 1.5s; ctl-wl-a leads again\n"
                     % key), r
    assert r.err == "", r
    assert 1.5 <= took < 1.5 + h.bound(5), took
    assert rows(pg_shared, key) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=["term", "int", "hup"])
def test_switchover_interrupted_withdraws(workdir, fleet_shared, pg_shared, sig):
    """SIGTERM, SIGINT or SIGHUP (its terminal closed) while a switchover
    waits: it withdraws its row at once (the others stop stepping aside)
    and exits 3 with one line."""
    key = fleet_shared.key
    a = fleet_shared.start("ctl-in-a", timing=h.timing(grace_period="20s", server_lease="30s"),
                           command=h.job_cmd(fleet_shared.ledger.path, ignore_term=True))
    a.wait_for_log(r"acquired leader lease")
    b = fleet_shared.start("ctl-in-b", command=["sleep", "600"])
    b.wait_for_log(r"waiting for leader lease")
    h.wait_until(lambda: pg_shared.backend_pid("pgleader/ctl-in-b"), 10, what="b's session")
    argv = [h.pgleader_bin(), "switchover", "--dsn", pg_shared.dsn(), "--lock-key", str(key),
            "--schema", schema_for(key), "--wait", "60s"]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        h.wait_until(lambda: rows(pg_shared, key) or p.poll() is not None, 10, what="the row")
        assert p.poll() is None, p.communicate()
        t0 = time.monotonic()
        p.send_signal(sig)
        out, err = p.communicate(timeout=h.bound(10))
        assert time.monotonic() - t0 < h.bound(1.0)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 3, (out, err)
    assert err.decode() == "pgleader: switchover withdrawn: interrupted\n", err
    assert rows(pg_shared, key) == []


# ---- switchover: a real handover (the daemon's side) -------------------------

def run_switchover(workdir, pg, key, *args):
    """Runs a switchover to its end; returns (rc, stdout, stderr)."""
    r = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(key),
                   "--schema", schema_for(key), *args, subcommand="switchover", timeout=60)
    return r.rc, r.out, r.err


def test_switchover_to_any(workdir, fleet_shared, pg_shared):
    key = fleet_shared.key
    # the nodes read the controls of the schema the commands write
    start_leader_and_standby(fleet_shared, pg_shared, "ctl-any-a", "ctl-any-b",
                             extra=("--schema", schema_for(key)))
    rc, out, err = run_switchover(workdir, pg_shared, key, "--wait", "20s")
    assert (rc, out, err) == (0, "ctl-any-b leads lock %d (was ctl-any-a)\n" % key, ""), \
        (rc, out, err)
    assert rows(pg_shared, key) == []
    st = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key))
    assert node_line(st.out, "leader", "ctl-any-b"), st
    assert node_line(st.out, "standby", "ctl-any-a"), st


def test_switchover_to_named(workdir, fleet_shared, pg_shared):
    key = fleet_shared.key
    start_leader_and_standby(fleet_shared, pg_shared, "ctl-to-a", "ctl-to-b",
                             extra=("--schema", schema_for(key)))
    c = fleet_shared.start("ctl-to-c", "--schema", schema_for(key), command=["sleep", "600"])
    c.wait_for_log(r"waiting for leader lease")
    h.wait_until(lambda: pg_shared.backend_pid("pgleader/ctl-to-c"), 10, what="c's session")
    rc, out, err = run_switchover(workdir, pg_shared, key, "--to", "ctl-to-c",
                                  "--wait", "20s")
    assert (rc, out, err) == (0, "ctl-to-c leads lock %d (was ctl-to-a)\n" % key, ""), \
        (rc, out, err)
    assert rows(pg_shared, key) == []


# ---- bad input ---------------------------------------------------------------

@pytest.mark.parametrize("args, says", [
    (["switchover", "--to", ""], "--to: \"\" must have 1 to 54 characters"),
    (["switchover", "--wait", "0"], "--wait: invalid duration \"0\""),
    (["switchover", "--wait", "soon"], "--wait: invalid duration \"soon\""),
    (["switchover", "--bogus"], "unknown option --bogus"),
    (["pause", "--to", "x"], "--to is only valid with 'pgleader switchover'"),
    (["resume", "--wait", "1s"], "--wait is only valid with 'pgleader switchover'"),
    (["pause", "--job", "a b"], "--job: invalid job name \"a b\""),
    (["resume", "now"], "resume takes no arguments (got \"now\")"),
])
def test_bad_input_exits_64(workdir, args, says):
    r = run_status(workdir, *args[1:], subcommand=args[0])
    assert r.rc == 64, r
    one_line_err(r)
    assert says in r.err, r
    assert r.out == "", r


@pytest.mark.parametrize("sub", ["pause", "resume", "switchover"])
def test_unreachable_exits_69_without_password(workdir, sub):
    port = h.free_port()
    dsn = "host=127.0.0.1 port=%d user=u password=Sekr1tPw dbname=d connect_timeout=2" % port
    r = run_status(workdir, "--dsn", dsn, subcommand=sub)
    assert r.rc == 69, r
    one_line_err(r)
    assert "Sekr1tPw" not in r.out + r.err, r


def test_bad_dsn_exits_78_without_password(workdir):
    r = run_status(workdir, "--dsn", "host=x password=Sekr1tPw sslmode=bogus", subcommand="pause")
    assert r.rc == 78, r
    one_line_err(r)
    assert "Sekr1tPw" not in r.out + r.err, r
