"""`pgleader status` against a real PostgreSQL: who leads, since when, who
waits for this lock (and not another), fence sessions, --watch, the exit codes
(0 leader, 3 none, 69 unreachable) and no password in any output."""

import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import time

import pytest

import pgharness as h

SECRET = "S3cret-Pw-do-not-print"
_runs = itertools.count()


class Result:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def __repr__(self):
        return "exit %s\n--- stdout\n%s--- stderr\n%s" % (self.rc, self.out, self.err)


def run_status(workdir, *args, env=None, timeout=30, subcommand="status"):
    """Runs `pgleader status ARGS` (or another subcommand) with stdout and
    stderr apart (the harness's Pgleader mixes them in one log), under
    PGLEADER_WRAPPER like every other pgleader; fails on a sanitizer or
    valgrind report."""
    argv = [h.pgleader_bin(), subcommand] + list(args)
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


def test_failed_query_exits_69_not_3(workdir, pg, lock_key):
    """A sessions query the server answers with an error (here: a role that
    may not read pg_stat_activity, a DBA's REVOKE) is no answer, not "no
    leader": 69, one line, nothing on stdout."""
    pg.psql("CREATE ROLE status_noread LOGIN;"
            " REVOKE SELECT ON pg_catalog.pg_stat_activity FROM PUBLIC")
    for json_out in (False, True):
        r = run_status(workdir, "--dsn", pg.dsn(user="status_noread"), "--lock-key",
                       str(lock_key), *(["--json"] if json_out else []))
        assert r.rc == 69, r
        assert r.out == "", r
        assert "permission denied" in r.err and len(r.err.splitlines()) == 1, r


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
    assert re.search(r"\b127\.0\.0\.1\s+server pid %d\s+connected since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
                     % pid, lead), r
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
    assert re.search(r"^leader:\s+st-env-a\s+local\s+server pid \d+", r.out, re.M), r


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


@pytest.mark.parametrize("dsn, says", [
    # "bogus" may be the second word of an unquoted password (issue 17, 6.5)
    ("host=127.0.0.1 password=%s bogus" % SECRET, 'missing "=" after "****"'),
    ("host=127.0.0.1 password=%s bogus=1" % SECRET, 'invalid connection option "bogus"'),
    ("postgresql://postgres:%s%%zz@127.0.0.1/postgres" % SECRET, "invalid percent-encoded"),
])
def test_unparseable_dsn_exits_78_without_password(workdir, dsn, says):
    """A DSN libpq cannot parse is a configuration error, as for the daemon:
    one line, 78, before any connection, no password."""
    r = run_status(workdir, "--dsn", dsn)
    assert r.rc == 78 and r.out == "", r
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pgleader: invalid dsn: "), r
    assert says in lines[0] and SECRET not in r.err, r


def test_wrong_password_exits_69_without_password(workdir, pg):
    pg.add_password_role("status_pw", SECRET)
    r = run_status(workdir, "--dsn", pg.dsn(user="status_pw", password="wrong-" + SECRET))
    assert r.rc == 69, r
    assert len(r.err.splitlines()) == 1 and "password authentication failed" in r.err, r
    assert SECRET not in r.out + r.err, r
    r = run_status(workdir, "--dsn", pg.dsn(user="status_pw", password=SECRET))
    assert r.rc == 3, r
    assert SECRET not in r.out + r.err, r


# --------------------------------------------------------------------------
# Sessions as pgleader's lease and fence leave them (wire.h WIRE_TAG_*), held
# open by psql so that the test decides what each one holds, awaits and last
# said.

def int4_pair(key):
    """The fence of key: its two 32-bit halves as pg_advisory_lock(int4, int4)
    takes them (pg_locks classid, objid; objsubid 2)."""
    u = key & ((1 << 64) - 1)

    def s32(x):
        return x - (1 << 32) if x >= (1 << 31) else x
    return s32(u >> 32), s32(u & 0xffffffff)


def tag(part, key, since=None):
    return "/* pgleader %s %d%s */" % (part, key, " leader since " + since if since else "")


class Session:
    """A psql session named app, kept open; statements go to its stdin."""

    def __init__(self, pg, workdir, app):
        self.pg, self.app = pg, app
        self.log = open(os.path.join(str(workdir), "psql-%s.log" % app.replace("/", "_")), "ab")
        self.proc = subprocess.Popen(
            [os.path.join(h.PG_BINDIR, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
             "-h", pg.sockdir, "-p", str(pg.port), "-U", "postgres", "-d", "postgres"],
            stdin=subprocess.PIPE, stdout=self.log, stderr=self.log,
            env=dict(os.environ, PGAPPNAME=app))

    def send(self, sql):
        self.proc.stdin.write((sql + "\n").encode())
        self.proc.stdin.flush()

    def run(self, sql, marker):
        """Sends sql and waits until the session is idle after it (its last
        statement contains marker)."""
        self.send(sql)
        h.wait_until(lambda: self.pg.psql(
            "SELECT 1 FROM pg_stat_activity WHERE application_name = '%s' AND state = 'idle'"
            " AND strpos(query, '%s') > 0" % (self.app, marker.replace("'", "''"))),
            10, what="%s idle after %s" % (self.app, marker))

    def close(self):
        h.kill_quietly(self.proc.pid)
        self.proc.wait(10)
        self.log.close()


@pytest.fixture
def sessions(pg_shared, workdir):
    opened = []

    def open_session(app):
        s = Session(pg_shared, workdir, app)
        opened.append(s)
        return s
    yield open_session
    for s in opened:
        s.close()


def lease_tags(pg, node):
    """Whether node's lock session tags its statements (wire.h)."""
    return bool(pg.psql("SELECT 1 FROM pg_stat_activity WHERE application_name = '%s'"
                        " AND query LIKE '%%/* pgleader lock %%'" % h.app_name(node)))


def lines_of(out, kind):
    return [l for l in out.splitlines() if l.startswith(kind + ":")]


def test_leader_since_and_fences(workdir, pg_shared, lock_key, sessions):
    """A leader that tags its ping with since when it leads shows it; the
    fence sessions of the nodes (held, awaited, kept ready) are fences,
    never standbys."""
    key = lock_key
    hi, lo = int4_pair(key)
    since = "2026-01-02T03:04:05.678Z"
    lead = sessions("pgleader/st-since-a")
    lead.run("SELECT pg_advisory_lock(%d) %s;" % (key, tag("lock", key)), tag("lock", key))
    lead.run("SELECT pg_backend_pid() %s;" % tag("lock", key, since), since)
    fence_a = sessions("pgleader/st-since-a")
    fence_a.run("SELECT pg_advisory_lock(%d, %d) %s;" % (hi, lo, tag("fence", key)),
                tag("fence", key))
    # node b: queued for the lock; its fence connection kept ready
    wait_b = sessions("pgleader/st-since-b")
    wait_b.send("SELECT pg_advisory_lock(%d) %s;" % (key, tag("lock", key)))
    fence_b = sessions("pgleader/st-since-b")
    fence_b.run("SELECT 1 %s;" % tag("fence", key), tag("fence", key))
    # node c: has the lock after a failover, say, and waits for the fence
    fence_c = sessions("pgleader/st-since-c")
    fence_c.send("SELECT pg_advisory_lock(%d, %d) %s;" % (hi, lo, tag("fence", key)))
    h.wait_until(lambda: len(pg_shared.lock_waiters(key)) == 1
                 and len(pg_shared.lock_waiters((hi & 0xffffffff, lo & 0xffffffff))) == 1,
                 10, what="b queued for the lock, c for the fence")

    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key))
    assert r.rc == 0, r
    leader = node_line(r.out, "leader", "st-since-a")
    assert leader and leader.endswith("leader since " + since), r
    pid_a = pg_shared.lock_holders(key)[0]["pid"]
    assert re.search(r"server pid %d\s" % pid_a, leader), r
    assert [l.split()[1] for l in lines_of(r.out, "standby")] == ["st-since-b"], r
    assert re.search(r"waiting since \d{4}-", node_line(r.out, "standby", "st-since-b")), r
    fences = lines_of(r.out, "fence")
    assert len(fences) == 3, r
    assert re.search(r"^fence:\s+st-since-a\s.*holds the fence$", fences[0]), r
    assert any(re.search(r"^fence:\s+st-since-c\s.*waiting for the fence since \d{4}-", l)
               for l in fences), r
    assert any(re.search(r"^fence:\s+st-since-b\s.*idle, ready to take the fence$", l)
               for l in fences), r
    # the fences come after the leader and the standbys
    assert r.out.splitlines().index(fences[0]) > r.out.splitlines().index(leader), r

    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key), "--json")
    doc = json.loads(r.out)
    assert doc["leader"]["node_id"] == "st-since-a", doc
    assert doc["leader"]["leader_since"] == since, doc
    assert doc["leader"]["pid"] == pid_a, doc
    assert [(s["node_id"], s["state"]) for s in doc["standbys"]] == [("st-since-b", "waiting")], doc
    assert sorted((f["node_id"], f["state"]) for f in doc["fences"]) == [
        ("st-since-a", "holding"), ("st-since-b", "idle"), ("st-since-c", "waiting")], doc
    assert all("leader_since" not in f for f in doc["fences"] + doc["standbys"]), doc


def test_fence_of_real_nodes(workdir, fleet_shared, pg_shared, sessions):
    """Two real nodes: each has a fence session beside its lock session; the
    leader's holds the fence. Fences are shown as what they are, never as
    standbys, and a foreign session queued for the fence is one too."""
    key = fleet_shared.key
    hi, lo = int4_pair(key)
    start_leader_and_standby(fleet_shared, pg_shared, "st-fence-a", "st-fence-b")
    h.wait_until(lambda: pg_shared.fence_holders(key), 10, what="the leader's fence")
    held = pg_shared.fence_holders(key)
    assert [f["application_name"] for f in held] == ["pgleader/st-fence-a"], held
    waiter = sessions("pgleader/x")
    waiter.send("SELECT pg_advisory_lock(%d, %d);" % (hi, lo))
    h.wait_until(lambda: [l for l in pg_shared.advisory_locks()
                          if l["key"] == h.fence_key(key) and not l["granted"]],
                 10, what="x queued for the fence")

    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key))
    assert r.rc == 0, r
    assert node_line(r.out, "leader", "st-fence-a") and node_line(r.out, "standby", "st-fence-b"), r
    assert r.out.count("standby:") == 1, r
    assert re.search(r"^fence:\s+st-fence-a\s+\S+\s+server pid %d\s.*holds the fence$"
                     % held[0]["pid"], node_line(r.out, "fence", "st-fence-a") or "", re.M), r
    assert node_line(r.out, "standby", "x") is None, r

    doc = json.loads(run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key),
                                "--json").out)
    by_node = {}
    for f in doc["fences"]:
        by_node.setdefault(f["node_id"], []).append(f)
    assert [f["state"] for f in by_node["st-fence-a"]] == ["holding"], doc
    assert by_node["st-fence-a"][0]["pid"] == held[0]["pid"], doc
    assert "x" in by_node, doc
    assert [s["node_id"] for s in doc["standbys"]] == ["st-fence-b"], doc
    assert doc["leader"]["node_id"] == "st-fence-a", doc


def test_idle_session_of_another_lock_not_listed(workdir, fleet_shared, pg_shared, sessions):
    """Poll-mode standbys between tries hold nothing: the tag of their last
    statement tells which lock they poll for. One of key B is not a standby
    of key A; one of key A is; one without a tag cannot tell and is shown."""
    key_a = fleet_shared.key
    key_b = h.to_signed64(key_a + 1)
    start_leader_and_standby(fleet_shared, pg_shared, "st-other-a", "st-other-b")
    lead_b = sessions("pgleader/st-other-lead-b")
    lead_b.run("SELECT pg_advisory_lock(%d) %s;" % (key_b, tag("lock", key_b)), tag("lock", key_b))
    # its try fails: it holds nothing
    poll_b = sessions("pgleader/st-other-poll-b")
    poll_b.run("SELECT pg_try_advisory_lock(%d) %s;" % (key_b, tag("lock", key_b)),
               tag("lock", key_b))
    assert [l["application_name"] for l in pg_shared.lock_holders(key_b)] == [
        "pgleader/st-other-lead-b"]
    poll_a = sessions("pgleader/st-other-poll-a")
    poll_a.run("SELECT pg_try_advisory_lock(%d) %s;" % (key_a, tag("lock", key_a)),
               tag("lock", key_a))
    fence_b = sessions("pgleader/st-other-fence-b")
    fence_b.run("SELECT 1 %s;" % tag("fence", key_b), tag("fence", key_b))

    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key_a))
    assert r.rc == 0, r
    assert "st-other-poll-b" not in r.out and "st-other-fence-b" not in r.out, r
    assert "st-other-lead-b" not in r.out, r
    assert re.search(r"idle \(poll mode or between attempts\)$",
                     node_line(r.out, "standby", "st-other-poll-a") or ""), r
    assert node_line(r.out, "standby", "st-other-b"), r

    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key_b), "--json")
    assert r.rc == 0, r
    doc = json.loads(r.out)
    assert doc["leader"]["node_id"] == "st-other-lead-b", doc
    assert [s["node_id"] for s in doc["standbys"]] == ["st-other-poll-b"], doc
    assert [f["node_id"] for f in doc["fences"]] == ["st-other-fence-b"], doc


def test_poll_standby_of_another_lock_real_nodes(workdir, fleet_shared, pg_shared):
    """Two nodes on key A, one poll-mode node on key B: status for A lists
    only A's."""
    key_a = fleet_shared.key
    key_b = h.to_signed64(key_a + 7)
    start_leader_and_standby(fleet_shared, pg_shared, "st-real-a", "st-real-b")
    other_leader = fleet_shared.start("st-real-b-lead", key=key_b, command=["sleep", "600"])
    other_leader.wait_for_log(r"acquired leader lease")
    poller = fleet_shared.start("st-real-b-poll", "--acquire", "poll", key=key_b,
                                command=["sleep", "600"])
    poller.wait_for_log(r"waiting for leader lease")
    h.wait_until(lambda: lease_tags(pg_shared, "st-real-b-poll"), 5,
                 what="the poll standby's statements tagged (wire.h WIRE_TAG_*)")
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(key_a))
    assert r.rc == 0, r
    assert node_line(r.out, "leader", "st-real-a") and node_line(r.out, "standby", "st-real-b"), r
    assert "st-real-b-poll" not in r.out and "st-real-b-lead" not in r.out, r


def test_real_leader_since(workdir, fleet_shared, pg_shared):
    before = time.time()
    start_leader_and_standby(fleet_shared, pg_shared, "st-lsince-a", "st-lsince-b")
    h.wait_until(lambda: lease_tags(pg_shared, "st-lsince-a"), 5,
                 what="the leader's statements tagged (wire.h WIRE_TAG_*)")

    def since():
        r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(fleet_shared.key),
                       "--json")
        return json.loads(r.out)["leader"]["leader_since"]
    # tagged from the statement after the grant on
    since = h.wait_until(since, 2, what="leader since")
    t = time.mktime(time.strptime(since[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert before - 1 <= t <= time.time() + 1, since


# --------------------------------------------------------------------------
# --watch

def start_watch(fleet, pg, *args):
    """`pgleader status --watch` as a harness process (its output in its log),
    ended with the fleet."""
    argv = ["status", "--watch", "--dsn", pg.dsn(), "--lock-key", str(fleet.key)] + list(args)
    p = h.Pgleader(argv, fleet.workdir, name="watch-%d" % len(fleet.nodes))
    fleet.nodes.append(p)
    return p


STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def test_watch_prints_each_change(workdir, fleet_shared, pg_shared):
    a, b = start_leader_and_standby(fleet_shared, pg_shared, "st-watch-a", "st-watch-b")
    pid_a = pg_shared.backend_pid("pgleader/st-watch-a")
    w = start_watch(fleet_shared, pg_shared)
    w.wait_for_log(r"(?m)^%s leader st-watch-a \(server pid %d\)$" % (STAMP, pid_a))
    time.sleep(1.0)  # nothing changes: nothing more is printed
    assert len(re.findall(r"(?m)^%s " % STAMP, w.text())) == 1, w.text()

    mark = w.mark()
    a.kill9()
    b.wait_for_log(r"acquired leader lease")
    pid_b = pg_shared.backend_pid("pgleader/st-watch-b")
    w.wait_for_log(r"(?m)^%s leader st-watch-b \(server pid %d\)$" % (STAMP, pid_b),
                   after=mark, timeout=5)
    mark = w.mark()
    assert b.stop() == 0
    w.wait_for_log(r"(?m)^%s no leader$" % STAMP, after=mark, timeout=5)

    w.signal(signal.SIGINT)
    assert w.wait(5) == 0, w.text()
    lines = [l for l in w.text().splitlines() if not l.startswith("#")]
    assert len(lines) == 3, w.text()


def test_watch_json_and_sigterm(workdir, fleet_shared, pg_shared):
    w = start_watch(fleet_shared, pg_shared, "--json")
    w.wait_for_log(r'"leader":null')
    a = fleet_shared.start("st-wjson-a", command=["sleep", "600"])
    a.wait_for_log(r"acquired leader lease")
    w.wait_for_log(r'"node_id":"st-wjson-a"')
    w.signal(signal.SIGTERM)
    assert w.wait(5) == 0, w.text()
    docs = [json.loads(l) for l in w.text().splitlines() if not l.startswith("#")]
    assert [d["leader"] and d["leader"]["node_id"] for d in docs] == [None, "st-wjson-a"], docs
    assert docs[1]["leader"]["pid"] == pg_shared.backend_pid("pgleader/st-wjson-a"), docs
    assert all(re.fullmatch(STAMP, d["time"]) for d in docs), docs


def test_watch_through_a_database_restart(workdir, fleet, pg):
    """The database goes away: one message, not one per look; once it is
    back, the next leader is printed."""
    w = start_watch(fleet, pg)
    w.wait_for_log(r"(?m)^%s no leader$" % STAMP)
    pg.stop()
    w.wait_for_log(r"pgleader: cannot query: ", timeout=5)
    time.sleep(1.5)  # six looks or so, connection attempts refused
    pg.start()
    a = fleet.start("st-wrestart-a", command=["sleep", "600"])
    a.wait_for_log(r"acquired leader lease")
    w.wait_for_log(r"(?m)^%s leader st-wrestart-a \(server pid \d+\)$" % STAMP, timeout=5)
    assert w.count(r"pgleader: cannot") == 1, w.text()
    w.signal(signal.SIGINT)
    assert w.wait(5) == 0, w.text()


def test_watch_unreachable_exits_69(workdir):
    port = h.free_port()
    r = run_status(workdir, "--watch", "--dsn",
                   "host=127.0.0.1 port=%d connect_timeout=5" % port)
    assert r.rc == 69 and r.out == "", r


def test_waiting_since_is_when_the_node_began_waiting(workdir, fleet_shared, pg_shared):
    """issue 25 (10): "waiting since" was pg_locks.waitstart, which starts
    again with each try that lock_timeout ends (every retry_interval, 1s
    here): it must be when the node began waiting, the same across tries."""
    before = time.time()
    start_leader_and_standby(fleet_shared, pg_shared, "st-wsince-a", "st-wsince-b")

    def waiting_since():
        r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(fleet_shared.key),
                       "--json")
        assert r.rc == 0, r
        for s in json.loads(r.out)["standbys"]:
            if s["node_id"] == "st-wsince-b" and s["state"] == "waiting":
                return s["waiting_since"]
        return None  # between two tries
    first = h.wait_until(waiting_since, 5, interval=0.05, what="the standby waiting")
    time.sleep(2.5)  # two tries or more ended by lock_timeout
    later = h.wait_until(waiting_since, 5, interval=0.05, what="the standby waiting again")
    def epoch(stamp):
        return time.mktime(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    # the first try's waitstart (server) and the node's clock: the same
    # second, or the next one across a boundary
    assert abs(epoch(later) - epoch(first)) <= 1, (first, later)
    assert before - 1 <= epoch(later) <= time.time() - 2.5, (first, later)
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(fleet_shared.key))
    line = node_line(r.out, "standby", "st-wsince-b")
    assert line is None or "idle" in line or later in line or first in line, r
