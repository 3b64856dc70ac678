"""Leading: one node leads, its child's environment and process set-up, the
lock in pg_locks, lock names, several nodes, forwarded signals, restart
policies, takeover delay."""

import json
import os
import signal
import time

import pytest

import pgharness as h
from pgharness import bound


def read_env(path, timeout=5.0):
    h.wait_until(lambda: os.path.exists(path), bound(timeout), what="job env file %s" % path)
    with open(path) as f:
        return json.load(f)


@pytest.mark.valgrind
def test_one_node_leads(pg, fleet, ledger, lock_key, workdir):
    envf = str(workdir / "env.json")
    a = fleet.start("a", job=dict(env_file=envf))
    st = ledger.wait_for("start", "a", timeout=bound(10))
    a.wait_for_log(r"acquired leader lease")
    a.wait_for_log(r"started command \(pid %d\)" % st.pid)
    time.sleep(0.2)
    assert a.count(r"started command \(pid %d\)" % st.pid) == 1, "duplicate log line:\n" + a.text()
    assert a.count(r"acquired leader lease") == 1

    data = read_env(envf)
    env = data["env"]
    assert env["PGLEADER_NODE_ID"] == "a"
    assert int(env["PGLEADER_LOCK_KEY"]) == lock_key
    assert env["PGLEADER_LOCK_KEY"] == str(lock_key), "PGLEADER_LOCK_KEY is not decimal"
    token = env["PGLEADER_FENCING_TOKEN"]
    assert token.isdigit() and int(token) > 0, token
    assert st.token == token
    # the fencing token is the server's transaction id counter
    assert int(pg.scalar("SELECT pg_current_xact_id()")) > int(token)
    a.wait_for_log(r"acquired leader lease.*%s" % token)
    # no connection details leak into the command's environment
    assert "PGLEADER_DSN" not in env
    assert not [k for k, v in env.items() if "127.0.0.1" in v and "port=" in v], env

    # pg_locks: exactly this node's backend holds the key
    holders = pg.lock_holders(lock_key)
    assert len(holders) == 1, holders
    assert holders[0]["application_name"] == "pgleader/a"
    assert holders[0]["pid"] == pg.backend_pid("pgleader/a")
    # one dedicated, autocommit connection: idle between pings, never
    # "idle in transaction"
    # two dedicated sessions, the lock's and the fence's, and no other
    sessions = [s for s in pg.activity() if s["application_name"] == "pgleader/a"]
    assert len(sessions) == 2, sessions
    fences = pg.fence_holders(lock_key)
    assert [f["pid"] for f in fences] == [s["pid"] for s in sessions
                                          if s["pid"] != holders[0]["pid"]], fences
    h.wait_until(lambda: len([s for s in pg.activity() if s["application_name"] == "pgleader/a"
                              and s["state"] == "idle"]) == 2, bound(3),
                 what="idle lock and fence sessions")
    assert all(s["client_addr"] == "127.0.0.1" for s in sessions)
    assert a.running()
    assert len(ledger.starts()) == 1

    assert a.stop() == 0
    a.wait_for_log(r"received SIGTERM, shutting down")
    a.wait_for_log(r"released leader lease")
    assert ledger.wait_for("stop", "a", timeout=1).get("why") == "term"
    assert a.count(r"command exited with status 0") == 1, "duplicate log line:\n" + a.text()
    assert not h.pid_alive(st.pid)
    h.wait_until(lambda: not pg.lock_holders(lock_key), 5, what="the lock to be released")
    h.wait_until(lambda: pg.backend_pid("pgleader/a") is None, 5, what="the session to close")


@pytest.mark.parametrize("opts,expected", [
    (["--lock-name", "nightly-report"], "hashtextextended:nightly-report"),
    (["--lock-name", "a name with spaces / and ünïcode"], "hashtextextended:a name with spaces / and ünïcode"),
    (["--lock-key", "0x50474c4541444552"], 0x50474c4541444552),
    (["--lock-key", "0xFFFFFFFFFFFFFFFE"], -2),
    (["--lock-key", "-9223372036854775808"], -(1 << 63)),
    (["--lock-key", "42"], 42),
    ([], 0x50474c4541444552),  # the default
], ids=["name", "name-utf8", "hex", "hex-negative", "min", "decimal", "default"])
def test_lock_key_and_name(pg, fleet, ledger, workdir, opts, expected):
    if isinstance(expected, str):
        expected = pg.hashtextextended(expected.split(":", 1)[1])
    envf = str(workdir / "env.json")
    a = fleet.start("a", *opts, key=False, job=dict(env_file=envf))
    ledger.wait_for("start", "a", timeout=bound(10))
    holders = pg.lock_holders(expected)
    assert [l["application_name"] for l in holders] == ["pgleader/a"], pg.advisory_locks()
    # the lock, and its fence on a second session of the same node; nothing else
    fences = pg.fence_holders(expected)
    assert [l["application_name"] for l in fences] == ["pgleader/a"], pg.advisory_locks()
    assert fences[0]["pid"] != holders[0]["pid"]
    assert len(pg.advisory_locks()) == 2
    assert int(read_env(envf)["env"]["PGLEADER_LOCK_KEY"]) == expected
    assert a.stop() == 0


def test_nodes_exactly_one_child(pg, fleet, ledger, lock_key):
    nodes = [fleet.start(n) for n in ("a", "b", "c")]
    first = ledger.wait_for("start", timeout=bound(10))
    leader = [p for p in nodes if p.name == first.node][0]
    standbys = [p for p in nodes if p is not leader]
    for p in standbys:
        p.wait_for_log(r"waiting for leader lease")
        h.wait_queued(pg, lock_key, p.name)
    # several retry intervals pass: still one child, and the standbys log
    # their wait once per standby period, not per attempt
    time.sleep(2.5 * h.FAST_RETRY)
    assert len(ledger.starts()) == 1, ledger.text()
    assert h.pid_alive(first.pid)
    holders = pg.lock_holders(lock_key)
    assert [l["application_name"] for l in holders] == [h.app_name(first.node)]
    for p in standbys:
        assert p.running()
        assert p.count(r"waiting for leader lease") == 1, p.text()
        assert p.count(r"acquired leader lease") == 0
    assert leader.count(r"waiting for leader lease") == 0
    for p in nodes:
        assert p.stop() == 0


def test_child_process_setup(pg, fleet, ledger, workdir):
    """Own process group, only descriptors 0-2, clean signal mask and
    dispositions; PGLEADER_DSN given in the environment is not passed on."""
    envf = str(workdir / "env.json")
    a = fleet.start("a", dsn="", job=dict(env_file=envf), env={"PGLEADER_DSN": pg.dsn()})
    st = ledger.wait_for("start", "a", timeout=bound(10))
    data = read_env(envf)
    assert data["ppid"] == a.pid, "the command is not pgleader's child"
    assert data["pgid"] == data["pid"] == st.pid, "the command is not in its own process group"
    fds = {int(k): v for k, v in data["fds"].items()}
    extra = {fd: t for fd, t in fds.items() if fd > 2 and "/proc/" not in t}
    assert not extra, "descriptors leaked to the command: %r" % extra
    assert {0, 1, 2} <= set(fds)
    assert int(data["status"]["SigBlk"], 16) == 0, "blocked signals: %s" % data["status"]["SigBlk"]
    # Python itself ignores SIGPIPE and SIGXFSZ. Signals 32 and 33 are
    # glibc's own: sigaction cannot reset them, whatever state the caller of
    # the tests left them in, and glibc installs its handlers before use.
    # Nothing else may be ignored.
    ignored = int(data["status"]["SigIgn"], 16)
    python_own = (1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))
    glibc_own = (1 << 31) | (1 << 32)
    assert ignored & ~(python_own | glibc_own) == 0, "ignored signals inherited: %x" % ignored
    assert "PGLEADER_DSN" not in data["env"]
    assert data["env"]["PGLEADER_NODE_ID"] == "a"
    assert a.stop() == 0


def test_signals_forwarded(pg, fleet, ledger):
    a = fleet.start("a")
    st = ledger.wait_for("start", "a", timeout=bound(10))
    for n, sig in enumerate((signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2), 1):
        a.signal(sig)
        ev = ledger.wait_for("signal", "a", count=n, timeout=bound(2))
        assert ev.get("sig") == sig.name and ev.pid == st.pid
    time.sleep(0.2)
    assert a.running()
    assert not ledger.events("term"), "a forwarded signal stopped the command"
    assert len(ledger.starts()) == 1
    assert a.stop() == 0


def test_restart_on_failure_keeps_lock(pg, fleet, ledger, lock_key):
    a = fleet.start("a", "--restart", "on-failure", job=dict(exit_code=3, after=0.3))
    s1 = ledger.wait_for("start", "a", timeout=bound(10))
    holder1 = h.wait_holder(pg, lock_key, "a")
    e1 = ledger.wait_for("stop", "a", pid=s1.pid, timeout=3)
    assert e1.get("code") == "3"
    # during the back-off the lock stays with the same session
    time.sleep(0.3)
    assert [l["pid"] for l in pg.lock_holders(lock_key)] == [holder1["pid"]]
    s2 = ledger.wait_for("start", "a", count=2, timeout=bound(5))
    e2 = ledger.wait_for("stop", "a", pid=s2.pid, timeout=3)
    s3 = ledger.wait_for("start", "a", count=3, timeout=bound(8))
    assert [l["pid"] for l in pg.lock_holders(lock_key)] == [holder1["pid"]]
    assert a.count(r"acquired leader lease") == 1
    gap1, gap2 = s2.time - e1.time, s3.time - e2.time
    assert gap1 >= 0.5, "restarted without back-off (%.2fs)" % gap1
    assert gap2 > gap1 * 1.5, "back-off does not grow: %.2fs then %.2fs" % (gap1, gap2)
    assert int(s1.token) <= int(s2.token) <= int(s3.token)
    assert a.stop() == 0


def test_restart_on_failure_success_exits(pg, fleet, ledger, lock_key):
    a = fleet.start("a", "--restart", "on-failure", job=dict(exit_code=0, after=0.2))
    ledger.wait_for("start", "a", timeout=bound(10))
    assert a.wait(5) == 0
    assert len(ledger.starts()) == 1
    a.wait_for_log(r"released leader lease")
    assert not pg.lock_holders(lock_key)


def test_restart_always(pg, fleet, ledger, lock_key):
    a = fleet.start("a", "--restart", "always", job=dict(exit_code=0, after=0.2))
    s1 = ledger.wait_for("start", "a", timeout=bound(10))
    holder = h.wait_holder(pg, lock_key, "a")
    ledger.wait_for("start", "a", count=2, timeout=bound(5))
    assert [l["pid"] for l in pg.lock_holders(lock_key)] == [holder["pid"]]
    assert a.running()
    assert a.stop() == 0
    assert not h.pid_alive(s1.pid)


def test_takeover_delay(pg, fleet, ledger, lock_key):
    delay = 1.5
    a = fleet.start("a")
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    b = fleet.start("b", "--takeover-delay", "1500ms")
    b.wait_for_log(r"waiting for leader lease")
    h.wait_queued(pg, lock_key, "b")
    t0 = time.monotonic()
    a.kill9()
    # b holds the lock at once, but its command waits for the delay
    h.wait_holder(pg, lock_key, "b", timeout=1)
    t_lock = time.monotonic()
    assert t_lock - t0 < bound(1.0)
    assert not ledger.starts("b"), "command started before the takeover delay"
    sb = ledger.wait_for("start", "b", timeout=bound(delay + 3))
    assert sb.time - t0 >= delay - 0.05, "started %.2fs after the failover" % (sb.time - t0)
    assert sb.time - t_lock >= delay - 0.3
    assert sb.time - t0 < delay + bound(1.0)
    assert not h.pid_alive(sa.pid)
    assert b.stop() == 0


def test_second_sigterm_kills_at_once(pg, fleet, ledger):
    """A second SIGTERM during shutdown SIGKILLs the command without waiting
    for the grace period."""
    a = fleet.start("a", timing=h.timing(grace_period="5s", server_lease="8s"),
                    job=dict(ignore_term=True))
    st = ledger.wait_for("start", "a", timeout=bound(10))
    a.signal(signal.SIGTERM)
    ledger.wait_for("term", "a", timeout=bound(2))
    time.sleep(0.3)
    assert h.pid_alive(st.pid), "the command ignoring SIGTERM died before the second signal"
    t1 = time.monotonic()
    a.signal(signal.SIGTERM)
    gone = h.wait_pid_gone(st.pid, 4)
    assert gone is not None and gone - t1 < bound(0.5), "second SIGTERM did not kill at once"
    assert a.wait(5) == 0


def test_unix_socket_dsn(pg, fleet, ledger, lock_key):
    """Leading over a Unix socket (no TCP settings apply) works as over TCP."""
    a = fleet.start("a", dsn=pg.socket_dsn())
    ledger.wait_for("start", "a", timeout=bound(10))
    holder = h.wait_holder(pg, lock_key, "a")
    sessions = [s for s in pg.activity() if s["pid"] == holder["pid"]]
    assert sessions and sessions[0]["client_addr"] == "", "not a Unix-socket session: %r" % sessions
    time.sleep(3 * 0.2 + 0.4)  # several pings
    assert a.running() and len(ledger.starts()) == 1
    assert a.stop() == 0


def test_sigterm_during_takeover_delay(pg, fleet, ledger, lock_key):
    a = fleet.start("a", "--takeover-delay", "3s")
    h.wait_holder(pg, lock_key, "a", timeout=10)
    a.wait_for_log(r"acquired leader lease")
    t0 = time.monotonic()
    a.signal(signal.SIGTERM)
    assert a.wait(bound(2)) == 0
    assert time.monotonic() - t0 < bound(1.0)
    assert not ledger.starts(), "the command started although shutdown came during the delay"
    h.wait_until(lambda: not pg.lock_holders(lock_key), 3, what="the lock to be released")


def test_wait_timeout_only_while_waiting(pg, fleet, ledger, lock_key):
    """--wait-timeout ends a standby that waits too long, never a node that
    became leader in time."""
    a = fleet.start("a", "--wait-timeout", "1s")
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    b = fleet.start("b", "--wait-timeout", "2500ms")
    b.wait_for_log(r"waiting for leader lease")
    time.sleep(1.5)
    assert a.running() and h.pid_alive(sa.pid), "the leader gave up after --wait-timeout"
    a.kill9()
    sb = ledger.wait_for("start", "b", timeout=bound(2))
    time.sleep(2.5)
    assert b.running() and h.pid_alive(sb.pid), "the new leader gave up after --wait-timeout"
    assert b.stop() == 0


def test_held_fence_outlives_server_lease(pg, fleet, ledger, lock_key):
    """The fence session is pinged with the lock session while held: its own
    idle_session_timeout (server_lease, 4 s here) must not end it."""
    a = fleet.start("a")
    ledger.wait_for("start", "a", timeout=bound(10))
    fence = h.wait_until(lambda: pg.fence_holders(lock_key), bound(5), what="a's fence")
    time.sleep(6)  # longer than --server-lease
    assert [f["pid"] for f in pg.fence_holders(lock_key)] == [fence[0]["pid"]], pg.advisory_locks()
    assert "fence session" not in a.text(), a.text()
    assert a.stop() == 0
