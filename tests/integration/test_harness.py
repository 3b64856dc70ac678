"""Self-test of the harness (no pgleader needed): the cluster as root via
runuser, psql, pg_locks key reassembly, password auth, the freezable proxy,
PgBouncer, the toy job and its ledger, process clean-up."""

import os
import signal
import subprocess
import time

import pytest

import pgharness as h

PSQL = os.path.join(h.PG_BINDIR, "psql")


def psql_tcp(port, sql, user="postgres", password=None, timeout=10, appname="harness",
             connect_timeout=5):
    env = dict(os.environ, PGAPPNAME=appname, PGCONNECT_TIMEOUT=str(connect_timeout))
    env.pop("PGPASSWORD", None)
    if password is not None:
        env["PGPASSWORD"] = password
    return subprocess.run([PSQL, "-X", "-A", "-t", "-q", "-w", "-v", "ON_ERROR_STOP=1",
                           "-h", "127.0.0.1", "-p", str(port), "-U", user, "-d", "postgres",
                           "-c", sql], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, env=env)


def hold_lock(port, key, appname, seconds=60):
    """A background psql session that takes an advisory lock and sleeps."""
    env = dict(os.environ, PGAPPNAME=appname)
    return subprocess.Popen([PSQL, "-X", "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                             "-d", "postgres", "-c",
                             "SELECT pg_advisory_lock(%d); SELECT pg_sleep(%d)" % (key, seconds)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def test_cluster_runs_as_postgres_on_loopback(pg):
    pid = pg.postmaster_pid()
    assert h.pid_alive(pid)
    with open("/proc/%d/status" % pid) as f:
        uid = [l for l in f if l.startswith("Uid:")][0].split()[1]
    if h.is_root():
        assert int(uid) == h._pg_user().pw_uid
    assert pg.scalar("SHOW listen_addresses") == "127.0.0.1"
    assert pg.scalar("SHOW port") == str(pg.port)
    assert pg.scalar("SHOW fsync") == "off"
    r = psql_tcp(pg.port, "SELECT 1")
    assert r.returncode == 0 and r.stdout.strip() == b"1", r.stderr
    assert "pgl-pg-" in pg.dsn() or "127.0.0.1" in pg.dsn()
    assert os.path.exists(os.path.join(pg.sockdir, ".s.PGSQL.%d" % pg.port))
    assert "database system is ready to accept connections" in pg.log()


def test_cluster_stop_start_restart_crash(pg):
    pg.stop()
    assert not pg.running()
    assert psql_tcp(pg.port, "SELECT 1").returncode != 0
    t = time.monotonic()
    pg.start()
    assert time.monotonic() - t < 5
    pg.restart()
    assert pg.scalar("SELECT 1") == "1"
    pg.crash()
    assert not pg.running()
    pg.start()
    pg.kill9_postmaster()
    assert not pg.running()
    pg.start()
    assert pg.scalar("SELECT 1") == "1"


def test_advisory_lock_key_reassembly_and_terminate(pg):
    for key in (1, -1, 0x50474c4541444552, -(1 << 63), (1 << 63) - 1, 0x7FFFFFFF00000001):
        holder = hold_lock(pg.port, key, "holder")
        try:
            got = h.wait_until(lambda: pg.lock_holders(key), 10, what="lock %d" % key)
            assert len(got) == 1
            assert got[0]["application_name"] == "holder"
            pid = pg.backend_pid("holder")
            assert got[0]["pid"] == pid
            assert pg.terminate_backend(pid)
            h.wait_until(lambda: not pg.lock_holders(key), 10, what="lock released")
            holder.wait(10)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
    assert pg.hashtextextended("nightly-report") == int(
        pg.scalar("SELECT hashtextextended('nightly-report', 0)"))


def test_password_role(pg):
    pg.add_password_role("pwuser", "right-Pw-123")
    assert psql_tcp(pg.port, "SELECT current_user", user="pwuser",
                    password="right-Pw-123").stdout.strip() == b"pwuser"
    r = psql_tcp(pg.port, "SELECT 1", user="pwuser", password="wrong")
    assert r.returncode != 0
    assert b"password authentication failed" in r.stderr
    r = psql_tcp(pg.port, "SELECT 1", user="pwuser")
    assert r.returncode != 0
    # other roles are still trusted
    assert psql_tcp(pg.port, "SELECT 1").returncode == 0


def test_proxy_freeze_thaw(pg):
    proxy = h.FrozenProxy(pg.port)
    try:
        r = psql_tcp(proxy.port, "SELECT 42")
        assert r.stdout.strip() == b"42", r.stderr
        # A long-lived session through the proxy, frozen in the middle.
        p = subprocess.Popen([PSQL, "-X", "-A", "-t", "-q", "-h", "127.0.0.1", "-p", str(proxy.port),
                              "-U", "postgres", "-d", "postgres"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(os.environ, PGAPPNAME="through-proxy"))
        try:
            p.stdin.write(b"SELECT 1;\n")
            p.stdin.flush()
            assert p.stdout.readline().strip() == b"1"
            proxy.freeze()
            t = time.monotonic()
            p.stdin.write(b"SELECT 2;\n")
            p.stdin.flush()
            import select
            r, _, _ = select.select([p.stdout], [], [], 1.0)
            assert r == [], "data flowed through a frozen proxy"
            # the server side session is still there, idle
            assert pg.backend_pid("through-proxy") is not None
            # new connections do not get through either
            assert psql_tcp(proxy.port, "SELECT 1", timeout=10, connect_timeout=2).returncode != 0
            proxy.thaw()
            assert p.stdout.readline().strip() == b"2"
            assert time.monotonic() - t >= 1.0
            p.stdin.write(b"SELECT 3;\n")
            p.stdin.flush()
            assert p.stdout.readline().strip() == b"3"
            proxy.reset_all()
            p.stdin.write(b"SELECT 4;\n")
            p.stdin.flush()
            p.stdin.close()
            assert p.wait(10) != 0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    finally:
        proxy.stop()


@pytest.mark.pooler
def test_pgbouncer_transaction_mode(pgbouncer, pg):
    rows = pgbouncer.psql("SELECT 7")
    assert rows == [["7"]]
    with open("/proc/%d/status" % pgbouncer.pid) as f:
        uid = [l for l in f if l.startswith("Uid:")][0].split()[1]
    if h.is_root():
        assert int(uid) == h._pg_user().pw_uid
    # transaction pooling: the server backend behind it is not ours
    assert "pool_mode = transaction" in open(pgbouncer.ini).read()


def test_job_ledger(workdir, ledger):
    env = dict(os.environ, PGLEADER_NODE_ID="x", PGLEADER_FENCING_TOKEN="123", PGLEADER_LOCK_KEY="5")
    envfile = workdir / "env.json"
    p = subprocess.Popen(h.job_cmd(ledger.path, grandchildren=2, env_file=envfile), env=env,
                         start_new_session=True)
    try:
        st = ledger.wait_for("start", "x", timeout=5)
        assert st.pid == p.pid and st.token == "123" and st.get("key") == "5"
        assert abs(st.time - time.monotonic()) < 5
        gs = [ledger.wait_for("gstart", "x", count=i + 1, timeout=5) for i in range(2)]
        os.kill(p.pid, signal.SIGUSR1)
        ledger.wait_for("signal", "x", timeout=5)
        assert ledger.events("signal")[0].get("sig") == "SIGUSR1"
        t = time.monotonic()
        os.killpg(p.pid, signal.SIGTERM)
        assert p.wait(5) == 0
        stop = ledger.wait_for("stop", "x", timeout=5)
        assert stop.time >= t and stop.get("why") == "term"
        for g in gs:
            assert h.wait_pid_gone(g.pid, 5)
        import json
        data = json.load(open(envfile))
        assert data["env"]["PGLEADER_NODE_ID"] == "x"
        assert data["pgid"] == p.pid
        assert ledger.intervals()[0][3] == stop.time
        ledger.assert_no_overlap()
    finally:
        h.killpg_quietly(p.pid)


def test_job_variants(workdir, ledger):
    p = subprocess.run(h.job_cmd(ledger.path, node="e", exit_code=7, after=0.1), timeout=10)
    assert p.returncode == 7
    p = subprocess.run(h.job_cmd(ledger.path, node="k", kill_self=signal.SIGKILL), timeout=10)
    assert p.returncode == -signal.SIGKILL
    p = subprocess.Popen(h.job_cmd(ledger.path, node="i", ignore_term=True), start_new_session=True)
    try:
        ledger.wait_for("start", "i", timeout=5)
        os.kill(p.pid, signal.SIGTERM)
        ledger.wait_for("term", "i", timeout=5)
        time.sleep(0.2)
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()
    # overlap detection works
    with open(ledger.path, "a") as f:
        f.write("start a 1 token=1 t=100.0 .\nstart b 2 token=2 t=101.0 .\nstop a 1 t=102.0 why=term .\n")
    with pytest.raises(AssertionError):
        ledger.assert_no_overlap()


def test_pgleader_wrapper_and_cleanup(workdir):
    """The Pgleader class with a stand-in binary: logs, signals, wait, and a
    clean-up that ends the process group of what it started."""
    fake = workdir / "fake.sh"
    fake.write_text("#!/bin/sh\necho \"fake started $*\" >&2\n"
                    "trap 'echo got-hup >&2' HUP\n"
                    "setsid sleep 300 &\necho \"grandchild $!\" >&2\n"
                    "while :; do sleep 0.05; done\n")
    fake.chmod(0o755)
    p = h.Pgleader(["--x", "y"], workdir, name="fake", binary=str(fake), use_wrapper=False)
    p.wait_for_log(r"fake started --x y", 5)
    gc = int(p.wait_for_log(r"grandchild (\d+)", 5).group(1))
    m = p.mark()
    p.signal(signal.SIGHUP)
    p.wait_for_log("got-hup", 5, after=m)
    with pytest.raises(AssertionError):
        p.wait_for_log("never", 0.2)
    assert h.pid_alive(gc)
    p.cleanup()
    assert not p.running()
    assert h.wait_pid_gone(gc, 5), "cleanup left a descendant running"
    assert p.problems() == []


def test_proc_helpers():
    p = subprocess.Popen(["sleep", "0"])
    time.sleep(0.3)
    assert p.pid in h.zombies_of(os.getpid())
    assert not h.pid_alive(p.pid)
    p.wait()
    assert h.fd_count(os.getpid()) >= 3
    assert h.rss_kb(os.getpid()) > 0
    assert h.to_signed64(0xFFFFFFFFFFFFFFFF) == -1


def test_checker_reports_are_caught(workdir):
    """problems() sees sanitizer lines in the log and valgrind error
    summaries, so that a checker report fails the test."""
    fake = workdir / "fake.sh"
    fake.write_text("#!/bin/sh\necho '==1==ERROR: AddressSanitizer: heap-use-after-free' >&2\n"
                    "echo 'x.c:1:2: runtime error: signed integer overflow' >&2\nexit 99\n")
    fake.chmod(0o755)
    p = h.Pgleader([], workdir, name="asan", binary=str(fake), use_wrapper=False)
    assert p.wait(5) == 99
    probs = p.problems()
    assert any("AddressSanitizer" in x for x in probs) and any("runtime error" in x for x in probs)
    p.cleanup()
    # valgrind: a real, clean run, then a summary with errors added to its log
    if not os.path.exists("/usr/bin/valgrind"):
        pytest.skip("valgrind not installed")
    q = h.Pgleader([], workdir, name="vg", binary="/bin/true", wrapper="valgrind")
    assert q.wait(60) == 0
    q.cleanup()
    assert q.valgrind_logs and q.problems() == []
    vlog = q.valgrind_logs.replace("%p", str(q.pid))
    assert "ERROR SUMMARY: 0 errors" in h.read_text(vlog)
    with open(vlog, "a") as f:
        f.write("==%d== ERROR SUMMARY: 3 errors from 1 contexts\n" % q.pid)
    assert any("valgrind reported errors" in x for x in q.problems())


def test_cluster_port_taken_on_first_start():
    import socket
    c = h.PgCluster("porttest")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", c.port))
    s.listen(1)
    taken = c.port
    try:
        c.start()
        assert c.port != taken
        assert c.scalar("SHOW port") == str(c.port)
    finally:
        s.close()
        c.destroy()
    assert not os.path.exists(c.base)
