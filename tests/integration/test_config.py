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
