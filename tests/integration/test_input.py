"""Bad input that used to reach the database or the lock: each is one line
and an exit code before any connection (64 on the command line, 78 from the
file or the environment), and the command never runs."""

import os
import shutil
import subprocess

import pytest

import pgharness as h
from pgharness import bound

PG_INT_MAX_MS = 2147483647  # lock_timeout, idle_session_timeout: int milliseconds


def output_lines(p):
    return [line for line in p.text().splitlines() if not line.startswith("# ")]


def refused(p, code, needle):
    """p exits code at once with one line that holds needle."""
    assert p.wait(bound(5)) == code, p.text()
    out = output_lines(p)
    assert len(out) == 1 and out[0].startswith("pgleader: ") and needle in out[0], out
    return out[0]


@pytest.mark.parametrize("case", [
    dict(id="argv", raw=["--lock-name", "\udcff"], code=64),
    dict(id="argv-latin1", raw=["--lock-name", "nightly-r\udce9port"], code=64),
    dict(id="env", env={"PGLEADER_LOCK_NAME": "\udce9t\udce9"}, code=78),
    dict(id="file", file=b"lock_name = \xff\xfe\n", code=78),
], ids=lambda c: c["id"])
def test_lock_name_not_utf8(pg_shared, fleet_shared, ledger, workdir, case):
    """The server hashes the name as text and refuses bytes that are not
    UTF-8 on every attempt: refused before the first one."""
    raw = ["--dsn", pg_shared.dsn(), "--node-id", "n", "--nonblock"] + case.get("raw", [])
    if "file" in case:
        conf = workdir / "pgleader.conf"
        conf.write_bytes(b"[pgleader]\n" + case["file"])
        raw = ["-c", str(conf)] + raw
    p = fleet_shared.start(None, raw=raw + ["--"] + h.job_cmd(ledger.path), env=case.get("env"),
                           name="badname")
    refused(p, case["code"], "is not valid UTF-8")
    assert not ledger.starts()


@pytest.mark.parametrize("case", [
    dict(id="argv", raw=["--lock-name", "\udcff"], code=64),
    dict(id="env", env={"PGLEADER_LOCK_NAME": "\udcff"}, code=78),
], ids=lambda c: c["id"])
def test_status_lock_name_not_utf8(pg_shared, fleet_shared, case):
    """A bad input to status is a usage or configuration error, not 69 (the
    database cannot be reached)."""
    p = fleet_shared.start(None, raw=["status", "--dsn", pg_shared.dsn()] + case.get("raw", []),
                           env=case.get("env"), name="status")
    refused(p, case["code"], "is not valid UTF-8")


@pytest.mark.parametrize("case", [
    dict(id="retry-interval", raw=["--retry-interval", "597h"], code=64,
         where="--retry-interval"),
    dict(id="retry-interval-1ms-over", raw=["--retry-interval", "%dms" % (PG_INT_MAX_MS + 1)],
         code=64, where="--retry-interval"),
    dict(id="server-lease", raw=["--server-lease", "600h"], code=64, where="--server-lease"),
    dict(id="server-lease-env", env={"PGLEADER_SERVER_LEASE": "700h"}, code=78,
         where="PGLEADER_SERVER_LEASE"),
    dict(id="retry-interval-file", file="retry_interval = 2147483648ms\n", code=78,
         where="pgleader.conf:2: retry_interval"),
], ids=lambda c: c["id"])
def test_duration_over_postgres_limit(pg_shared, fleet_shared, ledger, workdir, case):
    """lock_timeout and idle_session_timeout take an int of milliseconds:
    past that every SET fails and the node would retry for ever."""
    timing = [a for a in h.FAST]
    for opt in ("--retry-interval", "--server-lease"):
        i = timing.index(opt)
        del timing[i:i + 2]
    raw = ["--dsn", pg_shared.dsn(), "--node-id", "n"] + timing + case.get("raw", [])
    if "file" in case:
        conf = workdir / "pgleader.conf"
        conf.write_text("[pgleader]\n" + case["file"])
        raw = ["-c", str(conf)] + raw
    p = fleet_shared.start(None, raw=raw + ["--"] + h.job_cmd(ledger.path), env=case.get("env"),
                           name="badlimit")
    line = refused(p, case["code"], "is out of range (at most 2147483.647s, about 596h)")
    assert case["where"] + ": " in line, line
    assert not ledger.starts()


def test_duration_at_postgres_limit(pg_shared, fleet_shared, ledger, lock_key):
    """The largest value PostgreSQL takes works: the standby waits in the
    queue with lock_timeout = INT_MAX ms, the leader's server lease is set."""
    timing = h.timing(retry_interval="%dms" % PG_INT_MAX_MS, server_lease="%dms" % PG_INT_MAX_MS)
    a = fleet_shared.start("a", timing=timing)
    ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg_shared, lock_key, "a")
    b = fleet_shared.start("b", timing=timing)
    h.wait_queued(pg_shared, lock_key, "b")
    assert a.stop() == 0
    ledger.wait_for("start", "b", timeout=bound(5))
    assert b.stop() == 0
    for p in (a, b):
        assert "lock_timeout" not in p.text() and "idle_session_timeout" not in p.text()


@pytest.mark.parametrize("case", [
    dict(id="argv", command=[""], code=64),
    dict(id="argv-with-args", command=["", "--daily"], code=64),
    dict(id="shell", command=[""], extra=["--shell"], code=64),
    dict(id="file", file="command = ''\n", code=78),
    dict(id="env", env={"PGLEADER_COMMAND": '"" --daily'}, code=78),
], ids=lambda c: c["id"])
def test_empty_command_name(pg_shared, fleet_shared, workdir, lock_key, case):
    """'' names no program: it used to take the lock, then fail with 127."""
    raw = ["--dsn", pg_shared.dsn(), "--lock-key", str(lock_key), "--node-id", "n"]
    raw += h.FAST + case.get("extra", [])
    if "file" in case:
        conf = workdir / "pgleader.conf"
        conf.write_text("[pgleader]\n" + case["file"])
        raw = ["-c", str(conf)] + raw
    if "command" in case:
        raw += ["--"] + case["command"]
    p = fleet_shared.start(None, raw=raw, env=case.get("env"), name="empty")
    refused(p, case["code"], "empty command name")
    assert "acquired leader lease" not in p.text()
    assert not pg_shared.lock_holders(lock_key)


HOSTNAME_EXEC = ("import os, socket, sys; socket.sethostname(sys.argv[1]); "
                 "os.execv(sys.argv[2], sys.argv[2:])")


@pytest.mark.skipif(not h.is_root() or not shutil.which("unshare"),
                    reason="a host name of our own needs root and unshare(1)")
@pytest.mark.parametrize("host,ok", [
    ("db-1.example", True),
    ("has space", False),
    ("tab\there", False),
    ("a-host-name-of-sixty-characters.very-long.example.internal1", False),
], ids=["fine", "space", "control", "too-long"])
def test_host_name_as_node_id(pg_shared, workdir, lock_key, host, ok):
    """Without --node-id the host name is the node id, and passes the same
    checks: a bad one is one line, 78, that says to set --node-id (it used
    to be cut or to go into application_name as it was)."""
    argv = ["unshare", "--uts", "--", h.PYTHON, "-I", "-S", "-c", HOSTNAME_EXEC, host,
            h.pgleader_bin(), "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key),
            "--nonblock", "--", "true"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGLEADER_")}
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=bound(20),
                       env=env, cwd=str(workdir))
    err = r.stderr.decode(errors="replace")
    if ok:
        assert r.returncode == 0, err
        return
    assert r.returncode == 78, err
    lines = err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("pgleader: the host name cannot be the node id: ")
    assert lines[0].endswith("; set --node-id")
    assert "\t" not in lines[0]
