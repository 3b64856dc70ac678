"""No password in any output, in ps, or in a core dump: libpq's percent-decoding
error, short options bundled with their value, and libev failing for want of
descriptors."""

import os
import resource
import signal
import subprocess
import urllib.error
import urllib.request

import pytest

import pgharness as h
from pgharness import bound

PWUSER = "pgl_secrets"
PASSWORD = "Sh0w-Me-N0t-4711"


def ensure_pwuser(cluster):
    if cluster.scalar("SELECT count(*) FROM pg_roles WHERE rolname = '%s'" % PWUSER) == "0":
        cluster.add_password_role(PWUSER, PASSWORD)


# A raw '%' in a URI password: libpq's percent-decoding error quotes the
# token as written, where nothing says it is a password.
BAD_URIS = {
    "authority": "postgresql://app:50%%off@127.0.0.1:%d/postgres",
    "authority-zz": "postgresql://app:S3cr%%zz3t@127.0.0.1:%d/postgres",
    "query": "postgresql://127.0.0.1:%d/postgres?user=app&password=50%%off",
    "nul": "postgresql://app:%%00S3cr3t@127.0.0.1:%d/postgres",
}
SECRET_OF = {"authority": "50%off", "authority-zz": "S3cr%zz3t", "query": "50%off",
             "nul": "%00S3cr3t"}


@pytest.mark.parametrize("form", sorted(BAD_URIS))
def test_percent_error_hides_password_node(pg_shared, fleet_shared, ledger, form):
    p = fleet_shared.start("a", dsn=BAD_URIS[form] % pg_shared.port)
    assert p.wait(bound(5)) == 78, p.text()
    out = [l for l in p.text().splitlines() if not l.startswith("# ")]
    assert len(out) == 1 and out[0].startswith("pgleader: invalid dsn: "), out
    assert "percent" in out[0], out
    assert SECRET_OF[form] not in p.text()
    assert not ledger.starts()


@pytest.mark.parametrize("form", sorted(BAD_URIS))
def test_percent_error_hides_password_status(pg_shared, fleet_shared, form):
    p = fleet_shared.start(None, raw=["status", "--dsn", BAD_URIS[form] % pg_shared.port],
                           name="status")
    p.wait(bound(5))
    out = [l for l in p.text().splitlines() if not l.startswith("# ")]
    assert len(out) == 1 and "percent" in out[0], out
    assert SECRET_OF[form] not in p.text()


def _ps_output():
    return subprocess.run(["ps", "-eww", "-o", "pid,args"], stdout=subprocess.PIPE,
                          check=True).stdout


# How the DSN is given, from its key=value form and its URI.
DSN_ARGS = {
    "-dKV": lambda kv, uri: ["-d" + kv],
    "-vdKV": lambda kv, uri: ["-vd" + kv],
    "-qvdKV": lambda kv, uri: ["-qvd" + kv],
    "--dsn=KV": lambda kv, uri: ["--dsn=" + kv],
    "--ds=KV": lambda kv, uri: ["--ds=" + kv],  # getopt_long's unique prefix
    "-d_KV": lambda kv, uri: ["-d", kv],
    "-vd_KV": lambda kv, uri: ["-vd", kv],
    "-dURI": lambda kv, uri: ["-d" + uri],
    "-dsslpasswordKV": lambda kv, uri: ["-dsslpassword=%s %s" % (PASSWORD, kv)],
}


@pytest.mark.parametrize("form", list(DSN_ARGS))
def test_password_not_in_cmdline(pg_shared, fleet_shared, ledger, lock_key, form):
    """Every way to give the DSN on the command line, short options bundled
    with their value included, is scrubbed from /proc/PID/cmdline."""
    if h.WRAPPER:
        pytest.skip("the wrapper's own command line shows the arguments")
    pg = pg_shared
    ensure_pwuser(pg)
    kv = "password=%s host=127.0.0.1 port=%d user=%s dbname=postgres" % (PASSWORD, pg.port, PWUSER)
    uri = "postgresql://%s:%s@127.0.0.1:%d/postgres" % (PWUSER, PASSWORD, pg.port)
    raw = DSN_ARGS[form](kv, uri) + ["--lock-key", str(lock_key), "--node-id", "a"] + h.FAST + \
        ["--"] + h.job_cmd(ledger.path)
    p = fleet_shared.start(None, raw=raw, name="a")
    ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    cmdline = h.cmdline(p.pid)
    assert PASSWORD.encode() not in cmdline, cmdline
    assert PASSWORD.encode() not in _ps_output()
    # starred, not removed, and not as long as the password (issue 17, 6.5)
    assert b"****" in cmdline and b"*****" not in cmdline, cmdline
    assert p.stop() == 0
    assert PASSWORD not in p.text()


def _core_files(directory):
    return [n for n in os.listdir(directory) if n == "core" or n.startswith("core.")]


def _cores_land_in_cwd():
    try:
        with open("/proc/sys/kernel/core_pattern") as f:
            pattern = f.read().strip()
    except OSError:
        return False
    return pattern in ("core", "core.%p") or (pattern.startswith("core") and "/" not in pattern)


def _with_cores_and_fds(nofile):
    def pre():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    return pre


@pytest.fixture
def core_dir(workdir):
    """A directory where a crashing process of ours leaves its core, proven
    with a process that may dump; skips where cores go elsewhere."""
    if not _cores_land_in_cwd():
        pytest.skip("kernel.core_pattern does not write cores to the working directory")
    control = workdir / "control"
    control.mkdir()
    p = subprocess.Popen(["sleep", "30"], cwd=str(control), preexec_fn=_with_cores_and_fds(0))
    try:
        os.kill(p.pid, signal.SIGSEGV)
    finally:
        p.wait(10)
    if not _core_files(str(control)):
        pytest.skip("no core dump from a control process: cores are off here")
    d = workdir / "cores"
    d.mkdir()
    return d


@pytest.mark.parametrize("nofile", [4, 8, 31])
def test_too_few_descriptors(pg_shared, core_dir, nofile):
    """ulimit -n below 32: one line naming the limit and exit 70, before
    anything else runs short of descriptors and says something misleading
    (at 4 libev aborted, with a core dump that held the DSN; at 8 the HTTP
    server "could not start", 78; at 5 libpq "could not look up local user
    ID" read as a bad DSN, 78)."""
    dsn = pg_shared.dsn(password=PASSWORD)
    port = h.free_port()
    argv = [h.pgleader_bin(), "--dsn", dsn, "--node-id", "a", "--nonblock",
            "--http-addr", "127.0.0.1:%d" % port, "--", "true"]
    r = subprocess.run(argv, cwd=str(core_dir), preexec_fn=_with_cores_and_fds(nofile),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=bound(20),
                       env={k: v for k, v in os.environ.items() if not k.startswith("PGLEADER_")})
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 70, (r.returncode, err)
    assert err.splitlines() == ["pgleader: too few file descriptors: ulimit -n is %d, "
                                "pgleader needs at least 32" % nofile], err
    assert PASSWORD not in err
    assert not _core_files(str(core_dir))


def test_enough_descriptors(pg_shared, lock_key):
    """ulimit -n 32 is enough for a leader with HTTP and a scrape."""
    dsn = pg_shared.dsn(password=PASSWORD)
    port = h.free_port()
    argv = [h.pgleader_bin(), "--dsn", dsn, "--node-id", "a", "--lock-key", str(lock_key),
            "--http-addr", "127.0.0.1:%d" % port, "--", "sleep", "60"]
    p = subprocess.Popen(argv, preexec_fn=_with_cores_and_fds(32), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("PGLEADER_")})
    try:
        def leader():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/leader" % port, timeout=2) as r:
                    return r.status == 200
            except (OSError, urllib.error.HTTPError):
                return False
        h.wait_until(leader, bound(10), what="/leader 200 under ulimit -n 32")
    finally:
        p.terminate()
        try:
            out = p.communicate(timeout=bound(10))[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            h.kill_quietly(p.pid)  # its guard then kills the command
            out = p.communicate()[0].decode(errors="replace")
    assert p.returncode == 0, out
    assert PASSWORD not in out


@pytest.mark.skipif(h.SANITIZED, reason="ASan handles SIGSEGV itself (and writes no core)")
def test_no_core_dump(pg_shared, fleet_shared, ledger, lock_key, core_dir):
    """A crash of a running node leaves no core: it would hold the DSN."""
    pg = pg_shared
    ensure_pwuser(pg)
    p = h.Pgleader(["--dsn", pg.dsn(user=PWUSER, password=PASSWORD), "--lock-key", str(lock_key),
                    "--node-id", "a"] + h.FAST + ["--"] + h.job_cmd(ledger.path),
                   str(core_dir), name="a")
    fleet_shared.nodes.append(p)
    ledger.wait_for("start", "a", timeout=bound(10))
    resource.prlimit(p.pid, resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    os.kill(p.pid, signal.SIGSEGV)
    assert p.wait(10) == -signal.SIGSEGV
    assert not _core_files(str(core_dir)), "pgleader dumped core"
    # the command died with it (parent-death signal), and left no core either
    st = ledger.starts("a")[0]
    assert h.wait_pid_gone(st.pid, bound(5)) is not None
