"""Configuration seen from the outside: the command from the INI file, and
the precedence of command line, PGLEADER_* environment and file, checked on
the lock pgleader actually takes."""

import json
import os

import pytest

import pgharness as h
from pgharness import bound


def test_command_from_config_file(pg_shared, fleet_shared, ledger, workdir, lock_key):
    pg = pg_shared
    spaced = workdir / "a dir with spaces"
    spaced.mkdir()
    envf = spaced / "env.json"
    conf = workdir / "pgleader.conf"
    conf.write_text(
        "[pgleader]\n"
        "; every setting from the file\n"
        "dsn = %s\n"
        "lock_key = %d\n"
        "node_id = filenode\n"
        "retry_interval = 1s\n"
        "ping_interval = 200ms\n"
        "ping_timeout = 400ms\n"
        "ping_failures = 3\n"
        "grace_period = 1s\n"
        "server_lease = 4s\n"
        # relative to pgleader's working directory: inih's lines are short
        "command = %s -I -S %s --ledger 'ledger' --env-file \"a dir with spaces/env.json\"\n"
        % (pg.dsn(), lock_key, h.PYTHON, h.JOB))
    assert os.path.dirname(ledger.path) == str(workdir)
    p = fleet_shared.start(None, raw=["-c", str(conf)], name="filenode")
    st = ledger.wait_for("start", "filenode", timeout=bound(10))
    h.wait_holder(pg, lock_key, "filenode")
    h.wait_until(lambda: os.path.exists(envf), 5, what="the env file (quoted path)")
    assert json.load(open(envf))["env"]["PGLEADER_NODE_ID"] == "filenode"
    assert st.node == "filenode"
    assert p.stop() == 0

    # a command after the options replaces the file's
    p2 = fleet_shared.start(None, raw=["-c", str(conf), "--"] + h.job_cmd(ledger.path, node="argv",
                                                                        exit_code=0, after=0.1),
                            name="filenode2")
    assert p2.wait(10) == 0
    assert len(ledger.starts("argv")) == 1
    assert len(ledger.starts("filenode")) == 1


@pytest.mark.parametrize("case", [
    # (file lines, environment, command-line options, expected key or exit code)
    dict(id="env-over-file", file="lock_name = from-file\n", env={"PGLEADER_LOCK_KEY": "7"}, argv=[], key=7),
    dict(id="argv-over-env", file="", env={"PGLEADER_LOCK_KEY": "7"}, argv=["--lock-key", "9"], key=9),
    dict(id="argv-name-over-file-key", file="lock_key = 5\n", env={}, argv=["--lock-name", "argv-name"],
         key="argv-name"),
    dict(id="env-name-over-file-key", file="lock_key = 5\n", env={"PGLEADER_LOCK_NAME": "env-name"}, argv=[],
         key="env-name"),
    dict(id="file-only", file="lock_key = 0x10\n", env={}, argv=[], key=16),
    dict(id="both-on-argv", file="", env={}, argv=["--lock-key", "1", "--lock-name", "x"], code=64),
    dict(id="both-in-file", file="lock_key = 1\nlock_name = x\n", env={}, argv=[], code=78),
    dict(id="env-over-file-timing", file="server_lease = 1s\n", env={"PGLEADER_SERVER_LEASE": "4s"}, argv=[],
         key=3),
], ids=lambda c: c["id"])
def test_precedence(pg_shared, fleet_shared, ledger, workdir, case):
    pg = pg_shared
    conf = workdir / "pgleader.conf"
    conf.write_text("[pgleader]\ndsn = %s\n%s" % (pg.dsn(), case["file"]))
    timing = list(h.FAST)
    if "server_lease" in case["file"]:
        timing = h.timing(server_lease=None)  # let file and environment decide
        case_argv = case["argv"] + ["--lock-key", "3"]
    else:
        case_argv = case["argv"]
    argv = ["-c", str(conf), "--node-id", "p"] + timing + case_argv + ["--"] + \
        h.job_cmd(ledger.path, exit_code=0, after=1.0)
    p = fleet_shared.start(None, raw=argv, env=case["env"], name="p")
    if "code" in case:
        assert p.wait(10) == case["code"], p.text()
        assert not ledger.starts()
        return
    key = case["key"]
    if isinstance(key, str):
        key = pg.hashtextextended(key)
    ledger.wait_for("start", "p", timeout=bound(10))
    holder = h.wait_holder(pg, key, "p")
    assert holder["application_name"] == "pgleader/p"
    assert p.wait(10) == 0


@pytest.mark.parametrize("what,why", [
    ("/dev/zero", "not a regular file (a character device)"),
    ("/dev/full", "not a regular file (a character device)"),
    ("fifo", "not a regular file (a FIFO)"),
    ("directory", "cannot read: Is a directory"),
    ("big", "larger than 1024 KiB"),
], ids=["dev-zero", "dev-full", "fifo", "directory", "big"])
def test_file_that_cannot_be_read(fleet_shared, workdir, what, why):
    """Only a regular file of at most 1 MiB is read: -c /dev/zero used to grow
    to gigabytes, and a FIFO without a writer would block for ever. Each is
    one line and exit 78, at once."""
    if what == "fifo":
        path = workdir / "fifo"
        os.mkfifo(str(path))
    elif what == "directory":
        path = workdir
    elif what == "big":
        path = workdir / "big.conf"
        path.write_bytes(b"[pgleader]\n" + b"; padding\n" * (110 * 1024))
    else:
        path = what
    p = fleet_shared.start(None, raw=["-c", str(path), "--", "true"], name="badfile")
    assert p.wait(bound(5)) == 78, p.text()
    out = [line for line in p.text().splitlines() if not line.startswith("# ")]
    assert out == ["pgleader: %s: %s" % (path, why)]


@pytest.mark.parametrize("case", [
    dict(id="argv", raw=["--http-addr", "127.0.0.1:0"], env={}, code=64),
    dict(id="env", raw=[], env={"PGLEADER_HTTP_ADDR": "::1:8008"}, code=78),
    dict(id="file", raw=[], env={}, file="http_addr = localhost\n", code=78),
    dict(id="ttl", raw=["--http-addr", ":8008", "--failsafe-peers", "n=127.0.0.1:8008",
                        "--failsafe-secret-file", "/nonexistent", "--failsafe-ttl", "5s"],
         env={}, code=78),
], ids=lambda c: c["id"])
def test_new_keys_refused(fleet_shared, workdir, case):
    """A bad http_addr is one line: 64 on the command line, 78 from the
    environment or the file; the failsafe timing rule is 78 with its sum."""
    raw = ["--node-id", "n"] + case["raw"]
    if "file" in case:
        conf = workdir / "pgleader.conf"
        conf.write_text("[pgleader]\n" + case["file"])
        raw = ["-c", str(conf)] + raw
    p = fleet_shared.start(None, raw=raw + ["--", "true"], env=case["env"], name="badkey")
    assert p.wait(bound(5)) == case["code"], p.text()
    out = [line for line in p.text().splitlines() if not line.startswith("# ")]
    assert len(out) == 1 and out[0].startswith("pgleader: "), out
    if case["id"] == "ttl":
        assert out[0] == ("pgleader: failsafe_ttl 5s must be greater than ping_interval 1s"
                          " + ping_timeout 2s + grace_period 8s = 11s")
