"""Log lines for machines: --log-format json (one JSON object a line, with the
fields that matter, no password), and under a real journald the text format's
lines sent natively, once each, with their PGLEADER_* fields."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import pgharness as h

SECRET = "S3cret-Pw-json-log"
JOURNALD = "/lib/systemd/systemd-journald"


def json_lines(text):
    """pgleader's lines of a harness log: everything but the harness's header
    and the command's output, each parsed."""
    out = []
    for line in text.splitlines():
        if line.startswith("# ") or not line.strip():
            continue
        doc = json.loads(line)  # every line is one JSON object
        assert isinstance(doc, dict), line
        out.append(doc)
    return out


def test_json_lines(fleet, pg, lock_key):
    dsn = pg.dsn(password=SECRET)
    a = fleet.start("json-a", "--log-format", "json", dsn=dsn, command=["sleep", "600"])
    a.wait_for_log(r'"message":"started command')
    b = fleet.start("json-b", "--log-format", "json", dsn=dsn, command=["sleep", "600"])
    b.wait_for_log(r'"message":"waiting for leader lease"')
    pg.terminate_backend(pg.backend_pid("pgleader/json-a"))
    a.wait_for_log(r'"message":"lost leader lease')
    b.wait_for_log(r'"message":"started command')  # a moment after "acquired"
    assert a.stop() == 0 and b.stop() == 0

    for node, p in (("json-a", a), ("json-b", b)):
        text = p.text()
        assert SECRET not in text, text
        docs = json_lines(text)
        assert docs, text
        for d in docs:
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", d["time"]), d
            assert d["level"] in ("error", "warning", "notice", "info", "debug"), d
            assert isinstance(d["message"], str) and d["pid"] == p.pid, d
            assert d["node_id"] == node and d["lock_key"] == str(lock_key), d
        acquired = [d for d in docs if d["message"].startswith("acquired leader lease")]
        assert acquired and acquired[0]["state"] == "leader", docs
        started = [d for d in docs if d["message"].startswith("started command")]
        assert started and isinstance(started[0]["command_pid"], int), docs
    lost = [d for d in json_lines(a.text()) if d["message"].startswith("lost leader lease")]
    assert lost and lost[0]["reason"] and lost[0]["level"] == "warning", lost


# --------------------------------------------------------------------------
# A journald of the test's own: in a private mount namespace, tmpfs over
# /run/systemd, /run/log and /var/log/journal, so that neither the machine's
# journal nor another test sees it. pgleader's stderr is a real journal
# stream (the stdout socket, with systemd's header) and JOURNAL_STREAM names
# it, as systemd sets them up for a service.

IN_NAMESPACE = r'''
import json, os, signal, socket, subprocess, sys, time
args = json.loads(sys.argv[1])
for d in ("/run/systemd", "/run/log", "/var/log/journal"):
    if os.path.isdir(d):
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", d], check=True)
os.makedirs("/run/systemd/journal", exist_ok=True)
jd = subprocess.Popen([args["journald"]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
node = None
try:
    deadline = time.monotonic() + 10
    while not os.path.exists("/run/systemd/journal/stdout"):
        assert time.monotonic() < deadline, "journald did not start"
        time.sleep(0.02)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/systemd/journal/stdout")
    # identifier, unit, priority, level prefix, syslog, kmsg, console
    s.sendall(b"pgleader\n\n6\n1\n0\n0\n0\n")
    st = os.fstat(s.fileno())
    env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
    node = subprocess.Popen(args["argv"], stdin=subprocess.DEVNULL, stdout=s.fileno(),
                            stderr=s.fileno(), env=env)
    s.close()

    def journal(*match):
        r = subprocess.run(["journalctl", "-o", "json", "--no-pager"] + list(match),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return [json.loads(l) for l in r.stdout.decode().splitlines() if l.strip()]

    deadline = time.monotonic() + 15
    # The command starts after the fence is taken, a moment after the lease:
    # wait for both lines, or a SIGTERM between them leaves no "started".
    def said(entries, prefix):
        return any(str(e.get("MESSAGE")).startswith(prefix) for e in entries)
    while True:
        entries = journal()
        if said(entries, "acquired leader lease") and said(entries, "started command"):
            break
        assert node.poll() is None, "pgleader exited with %s" % node.returncode
        assert time.monotonic() < deadline, "no 'started command' in the journal"
        time.sleep(0.05)
    node.send_signal(signal.SIGTERM)
    node.wait(15)
    time.sleep(0.3)  # journald reads the stream's end
    print(json.dumps({"rc": node.returncode, "all": journal(),
                      "leader": journal("PGLEADER_STATE=leader")}))
finally:
    if node and node.poll() is None:
        node.kill()
        node.wait()
    jd.terminate()
    jd.wait(10)
'''


def private_journald_available():
    return (os.geteuid() == 0 and os.access(JOURNALD, os.X_OK) and shutil.which("unshare")
            and shutil.which("journalctl") and subprocess.run(
                ["unshare", "-m", "--propagation", "private", "true"],
                stderr=subprocess.DEVNULL).returncode == 0)


needs_journald = pytest.mark.skipif(
    not private_journald_available(),
    reason="needs root, unshare and %s for a private journald" % JOURNALD)


def run_under_journald(workdir, argv):
    """Runs pgleader ARGV under a private journald until it leads, stops it;
    returns {"rc", "all": every journal entry, "leader": PGLEADER_STATE=leader}."""
    script = os.path.join(str(workdir), "in_namespace.py")
    with open(script, "w") as f:
        f.write(IN_NAMESPACE)
    p = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", sys.executable, script,
         json.dumps({"journald": JOURNALD, "argv": [h.pgleader_bin()] + argv})],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=h.bound(60))
    finally:
        if p.poll() is None:
            h.killpg_quietly(p.pid)
            p.wait(10)
    assert p.returncode == 0, err.decode(errors="replace")
    return json.loads(out)


def node_argv(pg, node, key, *extra):
    return (["--dsn", pg.dsn(password=SECRET), "--lock-key", str(key), "--node-id", node]
            + h.FAST + list(extra) + ["--", "sleep", "600"])


@needs_journald
def test_journald_lines_sent_once_natively(workdir, pg, lock_key):
    """Each line reaches the journal once, through the native protocol (so it
    can carry fields), with its priority and identifier; none comes through
    the stream as well."""
    got = run_under_journald(workdir, node_argv(pg, "jd-a", lock_key))
    assert got["rc"] == 0, got
    mine = [e for e in got["all"] if e.get("SYSLOG_IDENTIFIER") == "pgleader"]
    messages = [e["MESSAGE"] for e in mine]
    assert any(m.startswith("acquired leader lease") for m in messages), messages
    assert "released leader lease" in messages, messages
    assert len(messages) == len(set(messages)), messages
    assert all(e["_TRANSPORT"] == "journal" for e in mine), mine
    assert not any(m.startswith("<") for m in messages), messages
    acquired = next(e for e in mine if e["MESSAGE"].startswith("acquired leader lease"))
    assert acquired["PRIORITY"] == "6", acquired
    assert SECRET not in json.dumps(got["all"])


@needs_journald
def test_journald_fields(workdir, pg, lock_key):
    """`journalctl -o json PGLEADER_STATE=leader` finds the node's lines while
    it led, with its node id and key."""
    got = run_under_journald(workdir, node_argv(pg, "jd-f", lock_key))
    leader = got["leader"]
    assert any(e["MESSAGE"].startswith("acquired leader lease") for e in leader), got
    for e in leader:
        assert e["PGLEADER_NODE_ID"] == "jd-f" and e["PGLEADER_LOCK_KEY"] == str(lock_key), e
    started = [e for e in got["all"] if e.get("MESSAGE", "").startswith("started command")]
    assert started and int(started[0]["PGLEADER_COMMAND_PID"]) > 0, started
