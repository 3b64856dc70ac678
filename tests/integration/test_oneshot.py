"""One-shots for cron (--nonblock, --wait-timeout) against a database that is
down or silent: one attempt bounded by connect_timeout, 69 when the database
was never reached, the conflict code (75) only when it answered that another
node holds the lock; --wait-timeout 0 is exactly --nonblock."""

import os
import re
import shlex
import signal
import subprocess
import time

import pytest

import pgharness as h
from pgharness import bound
from test_lease import silent_hosts  # noqa: F401 (a fixture: pytest finds it here)

CONNECT_TIMEOUT = 2   # libpq's smallest

# Until the supervisor gives the election no wait deadline for
# --wait-timeout 0 (src/supervisor.c, params_of: wait_timeout <= 0 is -1),
# the deadline passes before the first attempt and the exit is decided
# before the loop runs. Strict: the mark must go with the fix.
MARGIN = 1.5          # process start, the log, a loaded machine


def down_dsn(kind, make_silent, connect_timeout=CONNECT_TIMEOUT):
    """A DSN for a database that cannot be reached: refused (nothing
    listens), or silent (accepts and says nothing, or never completes the
    handshake)."""
    if kind == "refused":
        port = h.free_port()
    else:
        port = make_silent(kind).port
    return "host=127.0.0.1 port=%d dbname=postgres user=postgres connect_timeout=%d" % (
        port, connect_timeout)


def run_oneshot(fleet, dsn, *extra):
    t0 = time.monotonic()
    p = fleet.start("x", "--log-level", "debug", *extra, dsn=dsn)
    rc = p.wait(bound(30))
    return p, rc, time.monotonic() - t0


def attempts(p):
    """Connection attempts of the lock session that pgleader reported."""
    return p.count(r"(?<!fence session: )database connection failed")


def fence_attempts(p):
    """The fence session's: it opens beside the lock session, one attempt
    before the database answered."""
    return p.count(r"fence session: database connection failed")


@pytest.mark.parametrize("kind", ["refused", "accept", "backlog"])
def test_nonblock_database_down_exits_69(fleet_shared, ledger, silent_hosts, kind):
    """One attempt, bounded by connect_timeout, then 69: cron runs no longer
    pile up while the database is away."""
    p, rc, took = run_oneshot(fleet_shared, down_dsn(kind, silent_hosts), "--nonblock")
    assert rc == 69, p.text()
    assert attempts(p) == 1, p.text()
    assert fence_attempts(p) <= 1, p.text()
    p.wait_for_log(r"giving up \(one attempt with --nonblock\)", timeout=0)
    assert took < bound(CONNECT_TIMEOUT + MARGIN), "took %.2fs" % took
    if kind != "refused":
        assert took > CONNECT_TIMEOUT - 0.2, "gave up after %.2fs" % took
    assert not ledger.starts()


@pytest.mark.parametrize("kind", ["refused", "backlog"])
def test_wait_timeout_database_down_exits_69(fleet_shared, ledger, silent_hosts, kind):
    """Never having reached the database is 69, not 75, so a cron line's
    `|| [ $? -eq 75 ]` does not turn an outage into success. The wait counts
    the time spent connecting: a silent host with connect_timeout 10 s still
    gives up after the 2 s asked for."""
    dsn = down_dsn(kind, silent_hosts, connect_timeout=10)
    p, rc, took = run_oneshot(fleet_shared, dsn, "--wait-timeout", "2s")
    assert rc == 69, p.text()
    p.wait_for_log(r"database not reached within 2\.0s; giving up", timeout=0)
    assert 1.9 < took < bound(2 + MARGIN), "took %.2fs" % took
    assert not ledger.starts()


def test_wait_timeout_database_answered_exits_75(pg_shared, fleet_shared, ledger, lock_key):
    """75 only when the database answered and another node held the lock."""
    holder = fleet_shared.start("holder")
    ledger.wait_for("start", "holder", timeout=bound(10))
    h.wait_holder(pg_shared, lock_key, "holder")
    p, rc, took = run_oneshot(fleet_shared, None, "--wait-timeout", "2s")
    assert rc == 75, p.text()
    p.wait_for_log(r"no leader lease after 2\.0s of waiting; giving up", timeout=0)
    assert 1.9 < took < bound(2 + MARGIN), "took %.2fs" % took
    assert [e.node for e in ledger.starts()] == ["holder"]
    assert holder.stop() == 0


def test_wait_timeout_database_comes_back_exits_75(pg, fleet, ledger, lock_key):
    """Down at first, then up with the lock held: the database answered, so
    75 (a flap during the wait is not an outage)."""
    holder = fleet.start("holder")
    ledger.wait_for("start", "holder", timeout=bound(10))
    h.wait_holder(pg, lock_key, "holder")
    holder_pid = holder.pid
    # the holder keeps its lock; the one-shot connects through a proxy that
    # starts frozen (silent) and thaws after a second
    proxy = h.FrozenProxy(pg.port)
    try:
        proxy.freeze()
        p = fleet.start("x", "--wait-timeout", "4s", dsn=proxy.dsn(connect_timeout=10))
        time.sleep(1.0)
        proxy.thaw()
        rc = p.wait(bound(10))
    finally:
        proxy.stop()
    assert rc == 75, p.text()
    assert h.pid_alive(holder_pid)
    assert holder.stop() == 0


def normalized(p):
    """The log lines without time, pid and the harness's header."""
    out = []
    for line in p.text().splitlines():
        if line.startswith("# "):
            continue
        line = re.sub(r"^\S+ pgleader\[\d+\] ", "", line)
        line = re.sub(r"port \d+", "port P", line)
        out.append(line)
    return out


@pytest.mark.parametrize("state", ["busy", "down"])
def test_wait_timeout_0_is_nonblock(pg_shared, fleet_shared, ledger, lock_key, silent_hosts,
                                    state):
    """--wait-timeout 0 does what --nonblock does, line for line: busy is
    75, down is 69, both at once."""
    holder = None
    if state == "busy":
        holder = fleet_shared.start("holder")
        ledger.wait_for("start", "holder", timeout=bound(10))
        h.wait_holder(pg_shared, lock_key, "holder")
        dsn = None
    else:
        dsn = down_dsn("refused", silent_hosts)
    expected = 75 if state == "busy" else 69
    runs = {}
    for form, extra in (("nonblock", ["--nonblock"]), ("wait0", ["--wait-timeout", "0"])):
        t0 = time.monotonic()
        p = fleet_shared.start("x", *extra, dsn=dsn, name="x-" + form)
        rc = p.wait(bound(10))
        took = time.monotonic() - t0
        assert rc == expected, "%s: %s\n%s" % (form, rc, p.text())
        assert took < bound(CONNECT_TIMEOUT + MARGIN), "%s took %.2fs" % (form, took)
        runs[form] = normalized(p)
    assert runs["nonblock"] == runs["wait0"]
    assert [e.node for e in ledger.starts()] == (["holder"] if holder else [])
    if holder:
        assert holder.stop() == 0


@pytest.mark.parametrize("extra", [["--wait-timeout", "0"],
                                   ["--nonblock"], ["--wait-timeout", "30s"]],
                         ids=["wait-timeout-0", "nonblock", "wait-timeout-30s"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_oneshot_answers_signals(fleet_shared, ledger, silent_hosts, extra, sig):
    """A one-shot still connecting (a silent host, connect_timeout 10 s)
    stops at once on SIGTERM or SIGINT and exits 0: --wait-timeout 0 used to
    decide its exit before the loop ran, and then ignore both."""
    dsn = down_dsn("backlog", silent_hosts, connect_timeout=10)
    p = fleet_shared.start("x", *extra, dsn=dsn)
    time.sleep(0.5)
    assert p.running(), p.text()
    t0 = time.monotonic()
    p.signal(sig)
    rc = p.wait(bound(5))
    took = time.monotonic() - t0
    assert rc == 0, p.text()
    assert took < bound(1.0), "took %.2fs to stop" % took
    assert not ledger.starts()


# ---- the cron line of the README and of pgleader(1), run as cron would ----

def documented_cron_line(source):
    """The command of the `0 3 * * *` crontab line in README.md or
    man/pgleader.1 (roff's \\- unescaped)."""
    path = {"readme": "README.md", "man": "man/pgleader.1"}[source]
    with open(os.path.join(h.REPO, path)) as f:
        text = f.read().replace("\\-", "-")
    m = re.search(r"^\s*0 3 \* \* \*\s+(pgleader .*)$", text, re.M)
    assert m, "no cron line in %s" % path
    return m.group(1)


def run_shell(line, env, workdir, timeout=30):
    """sh -c LINE in a session of its own, ended by its process group."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    full_env.update(env)
    p = subprocess.Popen(["/bin/sh", "-c", line], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=full_env, cwd=str(workdir), start_new_session=True)
    try:
        out, _ = p.communicate(timeout=bound(timeout))
    except subprocess.TimeoutExpired:
        h.killpg_quietly(p.pid)
        p.communicate()
        raise AssertionError("%r still running after %ss" % (line, timeout))
    return p.returncode, out.decode(errors="replace")


@pytest.mark.parametrize("source", ["readme", "man"])
@pytest.mark.parametrize("state", ["free", "busy", "down"])
def test_documented_cron_line(pg_shared, fleet_shared, ledger, workdir, silent_hosts, source,
                              state):
    """The crontab line as documented: silent and successful when this
    machine ran the job or another one has the lock; a failure that cron
    mails when the database cannot be reached."""
    name = "nightly-%s" % os.path.basename(str(workdir))
    job = " ".join(shlex.quote(a) for a in h.job_cmd(ledger.path, node="cron", exit_code=0,
                                                        after=0.1))
    line = documented_cron_line(source)
    assert "--log-level warning" in line and "--nonblock" in line and "[ $? -eq 75 ]" in line
    line = line.replace("pgleader", shlex.quote(h.pgleader_bin()), 1)
    line = line.replace("nightly", name, 1).replace("./report", job, 1)
    dsn = pg_shared.dsn() if state != "down" else down_dsn("refused", silent_hosts)
    if state == "busy":
        holder = fleet_shared.start("holder", "--lock-name", name, key=False)
        ledger.wait_for("start", "holder", timeout=bound(10))
    rc, out = run_shell(line, {"PGLEADER_DSN": dsn}, workdir)
    if state == "free":
        assert (rc, out) == (0, ""), out
        assert len(ledger.starts("cron")) == 1
    elif state == "busy":
        assert (rc, out) == (0, ""), out
        assert not ledger.starts("cron")
        # what the documents warn about: -q alone still prints the notice
        quiet = line.replace("--log-level warning", "-q", 1)
        rc, out = run_shell(quiet, {"PGLEADER_DSN": dsn}, workdir)
        assert rc == 0 and "leader lease is held by another node; giving up" in out, out
        assert holder.stop() == 0
    else:
        assert rc != 0, out
        lines = out.splitlines()
        assert len(lines) == 1 and "giving up" in lines[0], out
        assert not ledger.starts("cron")
