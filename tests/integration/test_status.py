"""`pgleader status` against a real PostgreSQL: who leads, who waits, the
exit codes (0 leader, 3 none, 69 unreachable) and no password in any output."""

import itertools
import json
import os
import re
import shlex
import subprocess

import pytest

import pgharness as h

SECRET = "S3cret-Pw-do-not-print"
_runs = itertools.count()


class Result:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def __repr__(self):
        return "exit %s\n--- stdout\n%s--- stderr\n%s" % (self.rc, self.out, self.err)


def run_status(workdir, *args, env=None, timeout=30):
    """Runs `pgleader status ARGS` with stdout and stderr apart (the harness's
    Pgleader mixes them in one log), under PGLEADER_WRAPPER like every other
    pgleader; fails on a sanitizer or valgrind report."""
    argv = [h.pgleader_bin(), "status"] + list(args)
    vlog = None
    if h.WRAPPER:
        wrap = shlex.split(h.WRAPPER)
        if h.VALGRIND:
            vlog = os.path.join(str(workdir), "status.valgrind.%d.log" % next(_runs))
            wrap += ["--error-exitcode=99", "--leak-check=full",
                     "--errors-for-leak-kinds=definite", "--log-file=" + vlog]
        argv = wrap + argv
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("PGLEADER_")
         and k not in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGPASSWORD", "PGAPPNAME",
                       "PGCONNECT_TIMEOUT")}
    if h.SANITIZED:
        e.update(h.sanitizer_env())
    e.update(env or {})
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=e, cwd=str(workdir),
                       timeout=h.bound(timeout))
    res = Result(r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"))
    problems = [p for p in h.SANITIZER_PATTERNS if p in res.err]
    if vlog and os.path.exists(vlog):
        vt = h.read_text(vlog)
        if not re.search(r"ERROR SUMMARY: 0 errors", vt):
            problems.append("valgrind:\n" + h.tail(vt, 80))
    if res.rc == 99 and (h.SANITIZED or vlog):
        problems.append("exit 99 (the sanitizer/valgrind error exit code)")
    assert not problems, "pgleader status: %s\n%r" % ("\n".join(problems), res)
    return res


def start_leader_and_standby(fleet, pg, a, b, extra=(), standby_extra=(), key=None):
    """Node a leads running `sleep`, node b waits; returns both."""
    leader = fleet.start(a, *extra, key=key, command=["sleep", "600"])
    leader.wait_for_log(r"acquired leader lease")
    standby = fleet.start(b, *extra, *standby_extra, key=key, command=["sleep", "600"])
    standby.wait_for_log(r"waiting for leader lease")
    h.wait_until(lambda: pg.backend_pid("pgleader/" + b), 10, what="the standby's session")
    return leader, standby


def node_line(out, kind, node):
    """The `leader:` / `standby:` line naming node, or None."""
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0] == kind + ":" and f[1] == node:
            return line
    return None


def test_no_leader_exits_3(workdir, pg_shared, lock_key):
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key))
    assert r.rc == 3, r
    assert r.out.splitlines()[0] == "lock key %d" % lock_key, r
    assert "no leader" in r.out.splitlines(), r
    assert r.err == "", r

    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key), "--json")
    assert r.rc == 3, r
    doc = json.loads(r.out)
    assert doc["lock_key"] == str(lock_key) and doc["lock_name"] is None, doc
    assert doc["leader"] is None, doc


@pytest.mark.valgrind
def test_leader_and_standby_text(workdir, fleet_shared, pg_shared):
    start_leader_and_standby(fleet_shared, pg_shared, "st-text-a", "st-text-b")
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(fleet_shared.key))
    assert r.rc == 0, r
    lead = node_line(r.out, "leader", "st-text-a")
    stby = node_line(r.out, "standby", "st-text-b")
    assert lead and stby, r
    assert "no leader" not in r.out, r
    pid = pg_shared.backend_pid("pgleader/st-text-a")
    assert re.search(r"\b127\.0\.0\.1\s+pid %d\s+connected since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ" % pid,
                     lead), r
    # Wait mode: queued in pg_advisory_lock, or idle for an instant between
    # two lock_timeout rounds.
    assert re.search(r"waiting|idle \(poll mode or between attempts\)", stby), r
    # The columns are aligned: "pid" starts at the same place on both lines.
    assert lead.index(" pid ") == stby.index(" pid "), r


@pytest.mark.valgrind
def test_json_matches_pg_stat_activity(workdir, fleet_shared, pg_shared):
    name = "status-json-" + str(abs(fleet_shared.key))
    key = pg_shared.hashtextextended(name)
    # key=False: --lock-name instead of the fleet's --lock-key.
    start_leader_and_standby(fleet_shared, pg_shared, "st-json-a", "st-json-b",
                             extra=("--lock-name", name), key=False)
    h.wait_until(lambda: pg_shared.lock_holders(key), 5, what="the lock under the name's key")
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-name", name, "--json")
    assert r.rc == 0, r
    doc = json.loads(r.out)
    assert doc["lock_key"] == str(key) and doc["lock_name"] == name, doc
    leader = doc["leader"]
    assert leader["node_id"] == "st-json-a", doc
    assert leader["application_name"] == "pgleader/st-json-a", doc
    assert leader["pid"] == pg_shared.backend_pid("pgleader/st-json-a"), doc
    assert leader["pid"] == pg_shared.lock_holders(key)[0]["pid"], doc
    assert leader["client_addr"] == "127.0.0.1" and leader["state"] == "leader", doc
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", leader["connected_since"]), doc
    standbys = {s["node_id"]: s for s in doc["standbys"]}
    assert "st-json-b" in standbys, doc
    assert standbys["st-json-b"]["pid"] == pg_shared.backend_pid("pgleader/st-json-b"), doc
    assert standbys["st-json-b"]["state"] in ("waiting", "idle"), doc


def test_poll_standby_and_foreign_waiter(workdir, fleet_shared, pg_shared):
    """A poll-mode standby holds no lock between tries; a psql session queued
    on the key is shown, but not as a node; a pgleader of another key is not
    shown at all."""
    key = fleet_shared.key
    start_leader_and_standby(fleet_shared, pg_shared, "st-poll-a", "st-poll-b",
                             standby_extra=("--acquire", "poll"))
    other = fleet_shared.start("st-poll-other", key=h.to_signed64(key + 1), command=["sleep", "600"])
    other.wait_for_log(r"acquired leader lease")
    psql = subprocess.Popen(
        [os.path.join(h.PG_BINDIR, "psql"), "-X", "-q", "-h", pg_shared.sockdir,
         "-p", str(pg_shared.port), "-U", "postgres", "-d", "postgres",
         "-c", "SELECT pg_advisory_lock(%d)" % key],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=dict(os.environ, PGAPPNAME='odd"app\\'))
    try:
        h.wait_until(lambda: any(l["application_name"] == 'odd"app\\'
                                 for l in pg_shared.lock_waiters(key)), 10, what="psql queued")
        r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key))
        assert r.rc == 0, r
        assert node_line(r.out, "leader", "st-poll-a"), r
        assert re.search(r"idle \(poll mode or between attempts\)$",
                         node_line(r.out, "standby", "st-poll-b") or ""), r
        assert 'standby: <odd"app\\>' in r.out and "local" in r.out, r
        assert "st-poll-other" not in r.out, r

        r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key), "--json")
        doc = json.loads(r.out)
        apps = {s["application_name"]: s for s in doc["standbys"]}
        assert apps['odd"app\\']["node_id"] is None, doc
        assert apps['odd"app\\']["client_addr"] == "local", doc
        assert apps["pgleader/st-poll-b"]["state"] == "idle", doc
    finally:
        h.kill_quietly(psql.pid)
        psql.wait(10)


def test_libpq_environment_and_unix_socket(workdir, fleet_shared, pg_shared):
    """No --dsn: PGHOST and friends; a leader on the unix socket is "local"."""
    fleet_shared.start("st-env-a", dsn=pg_shared.socket_dsn(), command=["sleep", "600"]) \
        .wait_for_log(r"acquired leader lease")
    env = {"PGHOST": pg_shared.sockdir, "PGPORT": str(pg_shared.port),
           "PGUSER": "postgres", "PGDATABASE": "postgres"}
    r = run_status(workdir, "--lock-key", str(fleet_shared.key), env=env)
    assert r.rc == 0, r
    assert re.search(r"^leader:\s+st-env-a\s+local\s+pid \d+", r.out, re.M), r


@pytest.mark.parametrize("dsn_form", ["keywords", "uri"])
def test_unreachable_exits_69_without_password(workdir, dsn_form):
    port = h.free_port()  # nothing listens there
    dsn = ("host=127.0.0.1 port=%d user=postgres password=%s connect_timeout=5" % (port, SECRET)
           if dsn_form == "keywords" else
           "postgresql://postgres:%s@127.0.0.1:%d/postgres?connect_timeout=5" % (SECRET, port))
    for args in (["--dsn", dsn], ["--dsn", dsn, "--json"]):
        r = run_status(workdir, *args)
        assert r.rc == 69, r
        assert r.out == "", r
        lines = r.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("pgleader: cannot connect: "), r
        assert "Connection refused" in lines[0], r
        assert SECRET not in r.err, r


def test_wrong_password_exits_69_without_password(workdir, pg):
    pg.add_password_role("status_pw", SECRET)
    r = run_status(workdir, "--dsn", pg.dsn(user="status_pw", password="wrong-" + SECRET))
    assert r.rc == 69, r
    assert len(r.err.splitlines()) == 1 and "password authentication failed" in r.err, r
    assert SECRET not in r.out + r.err, r
    r = run_status(workdir, "--dsn", pg.dsn(user="status_pw", password=SECRET))
    assert r.rc == 3, r
    assert SECRET not in r.out + r.err, r
