"""Exit codes as a table, every row; passwords never shown; the timing rule;
a transaction pooler in the way."""

import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

import pgharness as h
from pgharness import bound

PWUSER = "pgl_pwuser"
PASSWORD = "S3cret-Horse-Battery-71"


def ensure_pwuser(cluster):
    if cluster.scalar("SELECT count(*) FROM pg_roles WHERE rolname = '%s'" % PWUSER) == "0":
        cluster.add_password_role(PWUSER, PASSWORD)


class Row:
    def __init__(self, id, code, job=None, command=None, extra=(), raw=None, holder=False,
                 log=None, min_time=None, max_time=None, config=None, env=None,
                 dsn=None, timing=None, secret=None, stdout=None, marks=()):
        self.__dict__.update(locals())
        del self.__dict__["self"]

    def param(self):
        return pytest.param(self, id=self.id, marks=list(self.marks))


# A line of the file holds 128 KiB (pgleader.conf(5)); one character more
# is refused. A line past inih's own 199 is read whole.
LONG_DSN = "host=127.0.0.1 dbname=postgres application_name=" + "x" * (128 * 1024)
PADDED = " connect_timeout=10" * 15

ROWS = [
    Row("child-exit-0", 0, job=dict(exit_code=0, after=0.2), log=r"command exited with status 0",
        marks=[pytest.mark.valgrind]),
    Row("child-exit-7", 7, job=dict(exit_code=7, after=0.2), log=r"command exited with status 7",
        marks=[pytest.mark.valgrind]),
    Row("child-signal-9", 128 + 9, job=dict(kill_self=signal.SIGKILL, after=0.2),
        log=r"command killed by signal 9", marks=[pytest.mark.valgrind]),
    Row("child-signal-15", 128 + 15, job=dict(kill_self=signal.SIGTERM, after=0.2),
        log=r"command killed by signal 15"),
    Row("not-executable-126", 126, command=["{workdir}/not-executable.sh"], marks=[pytest.mark.valgrind]),
    Row("not-found-127", 127, command=["/nonexistent/pgleader-test-command"], marks=[pytest.mark.valgrind]),
    Row("not-in-path-127", 127, command=["pgleader-no-such-command-xyz"]),
    Row("shell-exit-5", 5, extra=["--shell"], command=["sleep 0.1; exit 5"]),
    Row("nonblock-conflict-75", 75, extra=["--nonblock"], holder=True, max_time=3,
        marks=[pytest.mark.valgrind]),
    Row("wait-timeout-75", 75, extra=["--wait-timeout", "1500ms"], holder=True, min_time=1.4,
        max_time=1.5 + 2.0, marks=[pytest.mark.valgrind]),
    Row("conflict-exit-code-3", 3, extra=["--nonblock", "--conflict-exit-code", "3"], holder=True,
        max_time=3),
    Row("nonblock-free-lock-0", 0, extra=["--nonblock"], job=dict(exit_code=0, after=0.1)),
    Row("bad-option-64", 64, raw=["--no-such-option", "--", "true"], log=r"no-such-option",
        marks=[pytest.mark.valgrind]),
    Row("bad-duration-64", 64, extra=["--ping-interval", "5parsecs"], log=r"ping-interval"),
    Row("bad-restart-64", 64, extra=["--restart", "sometimes"], log=r"restart"),
    Row("no-command-64", 64, raw=["--dsn", "{dsn}"], log=r"no command"),
    Row("help-0", 0, raw=["--help"], stdout=r"--lock-name"),
    Row("config-unknown-key-78", 78, raw=["-c", "{config}", "--", "true"],
        config="[pgleader]\ndsn = {dsn}\nbogus_key = 1\n", log=r"pgleader\.conf:3",
        marks=[pytest.mark.valgrind]),
    Row("config-bad-value-78", 78, raw=["-c", "{config}", "--", "true"],
        config="[pgleader]\n\n\nping_failures = many\n", log=r"pgleader\.conf:4"),
    Row("config-long-line-78", 78, raw=["-c", "{config}", "--", "true"],
        config="[pgleader]\ndsn = %s\n" % LONG_DSN,
        log=r"pgleader\.conf:2: line is longer than 131072 characters"),
    Row("config-line-past-199-0", 0, raw=["-c", "{config}", "--", "true"],
        config="[pgleader]\ndsn = {dsn}%s\n" % PADDED, log=r"command exited with status 0"),
    Row("config-no-command-78", 78, raw=["-c", "{config}"],
        config="[pgleader]\ndsn = {dsn}\n", log=r"pgleader\.conf"),
    Row("env-bad-value-78", 78, env={"PGLEADER_PING_FAILURES": "many"}, log=r"PGLEADER_PING_FAILURES",
        timing=h.timing(ping_failures=None)),
    Row("timing-rule-78", 78, timing=h.timing(server_lease="2s"),
        log=r"server_lease.*ping_interval.*ping_failures.*ping_timeout.*grace_period.*=",
        marks=[pytest.mark.valgrind]),
    Row("wrong-password-69", 69, dsn="wrongpw", secret="Wr0ng-Pa55word-Table-9",
        log=r"cannot connect", marks=[pytest.mark.valgrind]),
    Row("no-such-database-69", 69, dsn="nodb", log=r"no_such_db"),
]


@pytest.mark.parametrize("row", [r.param() for r in ROWS])
def test_exit_code(row, pg_shared, fleet_shared, ledger, workdir, lock_key):
    pg = pg_shared
    fleet = fleet_shared
    subst = dict(workdir=str(workdir), dsn=pg.dsn(), config=str(workdir / "pgleader.conf"))

    def fill(seq):
        return [s.format(**subst) for s in seq]

    noexec = workdir / "not-executable.sh"
    noexec.write_text("#!/bin/sh\nexit 0\n")
    noexec.chmod(0o644)
    if row.config is not None:
        (workdir / "pgleader.conf").write_text(row.config.format(**subst))

    holder = None
    if row.holder:
        holder = fleet.start("holder")
        ledger.wait_for("start", "holder", timeout=bound(10))
        h.wait_holder(pg, lock_key, "holder")

    dsn = None
    if row.dsn == "wrongpw":
        ensure_pwuser(pg)
        dsn = pg.dsn(user=PWUSER, password=row.secret)
    elif row.dsn == "nodb":
        dsn = pg.dsn(dbname="no_such_db")

    t0 = time.monotonic()
    if row.raw is not None:
        p = fleet.start("x", raw=fill(row.raw), env=row.env)
    else:
        command = fill(row.command) if row.command else None
        p = fleet.start("x", *row.extra, dsn=dsn, command=command, job=row.job, env=row.env,
                        timing=row.timing if row.timing is not None else h.FAST)
    rc = p.wait(10)
    elapsed = time.monotonic() - t0
    text = p.text()
    assert rc == row.code, "exit status %s, expected %s:\n%s" % (rc, row.code, h.tail(text, 40))
    if row.log:
        p.wait_for_log(row.log, timeout=0)
    if row.stdout:
        p.wait_for_log(row.stdout, timeout=0)
    if row.min_time is not None:
        assert elapsed >= row.min_time, "gave up after %.2fs" % elapsed
    if row.max_time is not None:
        assert elapsed < bound(row.max_time), "took %.2fs" % elapsed
    if row.secret:
        assert row.secret not in text, "the password is in pgleader's output"
    if row.job is not None and row.raw is None:
        assert len(ledger.starts("x")) == 1, "the command did not run exactly once"
    if row.code in (64, 69, 78, 75, 3) and row.id != "shell-exit-5":
        assert not ledger.starts("x"), "the command ran although pgleader refused"
    # nothing left behind on the server
    h.wait_until(lambda: pg.backend_pid("pgleader/x") is None, 3, what="x's session to close")
    if holder is not None:
        assert [l["application_name"] for l in pg.lock_holders(lock_key)] == ["pgleader/holder"]
        assert holder.stop() == 0
    else:
        assert not pg.lock_holders(lock_key), "lock still held after exit"


def _ps_output():
    return subprocess.run(["ps", "-eww", "-o", "pid,args"], stdout=subprocess.PIPE, check=True).stdout


def test_wrong_password(pg, fleet, ledger):
    """Exit 69, and the password is in no output, in no ps line while pgleader
    retries against a database that is down, and not in its command line."""
    secret = "N0t-The-Right-0ne-42"
    pg.add_password_role(PWUSER, PASSWORD)
    pg.stop()
    p = fleet.start("a", dsn=pg.dsn(user=PWUSER, password=secret))
    p.wait_for_log(r"database connection failed", count=1)
    if not h.WRAPPER:
        assert secret.encode() not in h.cmdline(p.pid)
        assert secret.encode() not in _ps_output()
    pg.start()
    assert p.wait(bound(h.FAST_RETRY + 5)) == 69
    p.wait_for_log(r"cannot connect", timeout=0)
    text = p.text()
    assert secret not in text
    assert "password" in text  # the reason is given (authentication failed)
    assert not ledger.starts()
    assert "password authentication failed" in pg.log()


@pytest.mark.parametrize("form", ["kv", "kv-quoted", "uri", "dsn-equals", "env", "config"])
def test_password_not_shown_while_leading(pg, fleet, ledger, workdir, form):
    pg.add_password_role(PWUSER, PASSWORD)
    kv = pg.dsn(user=PWUSER, password=PASSWORD)
    extra, env, dsn = [], None, kv
    if form == "kv-quoted":
        dsn = pg.dsn(user=PWUSER) + " password='%s'" % PASSWORD
    elif form == "uri":
        dsn = "postgresql://%s:%s@127.0.0.1:%d/postgres" % (PWUSER, PASSWORD, pg.port)
    elif form == "dsn-equals":
        extra, dsn = ["--dsn=" + kv], ""
    elif form == "env":
        env, dsn = {"PGLEADER_DSN": kv}, ""
    elif form == "config":
        conf = workdir / "pgleader.conf"
        conf.write_text("[pgleader]\ndsn = %s\n" % kv)
        extra, dsn = ["-c", str(conf)], ""
    envf = str(workdir / "env.json")
    p = fleet.start("a", *extra, dsn=dsn, env=env, job=dict(env_file=envf))
    st = ledger.wait_for("start", "a", timeout=bound(10))
    assert h.wait_holder(pg, lock_key_of(p), "a")
    secret = PASSWORD.encode()
    if not h.WRAPPER:
        assert secret not in h.cmdline(p.pid), "password in /proc/%d/cmdline" % p.pid
        assert secret not in _ps_output(), "password in ps output"
    assert secret not in h.environ(st.pid), "password in the command's environment"
    assert secret not in h.cmdline(st.pid)
    assert PASSWORD not in open(envf).read()
    assert PASSWORD not in p.text()
    assert p.stop() == 0
    assert PASSWORD not in p.text()


def lock_key_of(p):
    return int(p.args[p.args.index("--lock-key") + 1])


@pytest.mark.parametrize("opts,refused", [
    (h.timing(server_lease="2s"), True),            # 0.2*3+0.4+1 = 2: not below
    (h.timing(server_lease="1s"), True),
    (h.timing(server_lease="1999ms"), True),
    (h.timing(server_lease="2001ms"), False),
    (h.timing(server_lease="0"), False),            # off: no rule
    (["--server-lease", "13s"], True),              # defaults: 1*3+2+8 = 13
    (["--server-lease", "14s"], False),
    ([], False),                                    # the defaults satisfy the rule
], ids=["equal", "below", "1ms-short", "1ms-over", "off", "default-equal", "default-over", "defaults"])
def test_timing_rule(pg_shared, fleet_shared, ledger, opts, refused):
    p = fleet_shared.start("a", timing=opts, job=dict(exit_code=0, after=0.1))
    rc = p.wait(10)
    if refused:
        assert rc == 78, p.text()
        line = p.wait_for_log(r"server_lease.*ping_interval.*ping_failures.*ping_timeout.*grace_period.*= ?\S+",
                              timeout=0).group(0)
        assert "\n" not in line
        assert not ledger.starts()
    else:
        assert rc == 0, p.text()
        assert len(ledger.starts()) == 1


@pytest.mark.pooler
def test_transaction_pooler_detected(pg, pgbouncer, fleet, ledger, lock_key):
    """PgBouncer answers the startup with a backend key of its own: the
    setup query sees it (libpq's pid is not the server's) before any lock
    is taken, so no lease is acquired and no command starts."""
    p = fleet.start("a", dsn=pgbouncer.dsn())
    rc = p.wait(15)
    assert rc == 78, "exit %s through a transaction pooler:\n%s" % (rc, p.text())
    line = p.wait_for_log(r".*the lock connection goes through a connection pooler"
                          r" \(libpq sees backend pid -?\d+, the server says \d+\).*",
                          timeout=0).group(0)
    assert "connect pgleader directly to PostgreSQL" in line, line
    assert not p.count(r"acquired leader lease"), p.text()
    assert not p.count(r"started command"), p.text()
    assert not ledger.starts(), p.text()


class SwitchingPooler:
    """A pooler that the setup cannot see: each connection goes through to
    PostgreSQL as it is (the same backend, its pid the one libpq saw) until
    switch(); from then on each connection's queries go to a second server
    session of its own, the first kept open with its locks, as a
    transaction pooler that hands the client another server connection.
    Trust authentication, no TLS (sslmode=disable in its dsn)."""

    def __init__(self, pg):
        self.upstream = ("127.0.0.1", pg.port)
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.switched = False
        self.socks = []
        threading.Thread(target=self._accept, daemon=True).start()

    def dsn(self):
        return ("host=127.0.0.1 port=%d dbname=postgres user=postgres sslmode=disable"
                " gssencmode=disable" % self.port)

    def switch(self):
        self.switched = True

    def stop(self):
        for sock in [self.lsock] + self.socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    @staticmethod
    def _read(sock, n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def _upstream(self, startup):
        up = socket.create_connection(self.upstream, timeout=5)
        up.settimeout(None)
        self.socks.append(up)
        up.sendall(startup)
        return up

    def _second(self, startup):
        """A new server session, its startup answered here."""
        up = self._upstream(startup)
        while True:
            kind = self._read(up, 1)
            body = self._read(up, struct.unpack("!i", self._read(up, 4))[0] - 4)
            assert kind != b"R" or body[:4] == b"\0\0\0\0", "not trust authentication"
            if kind == b"Z":
                return up

    def _serve(self, c):
        try:
            startup = self._read(c, 4)
            startup += self._read(c, struct.unpack("!i", startup)[0] - 4)
            up = self._upstream(startup)
            threading.Thread(target=h.pump, args=(up, c), daemon=True).start()
            moved = False
            while True:
                data = c.recv(65536)
                if not data:
                    break
                if self.switched and not moved:
                    up = self._second(startup)
                    threading.Thread(target=h.pump, args=(up, c), daemon=True).start()
                    moved = True
                up.sendall(data)
        except OSError:
            pass

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            self.socks.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()


@pytest.mark.pooler
def test_pooler_seen_while_leading(pg, fleet, ledger, lock_key):
    """A pooler that appears while a node leads (its pings answered by
    another server session than the one holding the lock) ends the lease:
    the command is stopped and pgleader exits 78, the ping's check."""
    pooler = SwitchingPooler(pg)
    try:
        p = fleet.start("a", dsn=pooler.dsn(), command=["sleep", "600"])
        p.wait_for_log(r"acquired leader lease")
        p.wait_for_log(r"started command")
        pooler.switch()
        rc = p.wait(bound(10))
        assert rc == 78, "exit %s with a pooler seen while leading:\n%s" % (rc, p.text())
        line = p.wait_for_log(r".*backend pid changed from \d+ to \d+ while leading: a"
                              r" connection pooler is between pgleader and PostgreSQL.*",
                              timeout=0).group(0)
        assert "\n" not in line
        assert p.count(r"stopping command"), p.text()
    finally:
        pooler.stop()