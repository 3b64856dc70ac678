"""The lock connection against real faults: multi-host DSNs whose first hosts
are down or silent, the application's own objects, and failures classified
once (a DSN libpq cannot use, a role without CONNECT)."""

import socket
import threading
import time

import pytest

import pgharness as h
from pgharness import bound

CONNECT_TIMEOUT = 2


class SilentHost:
    """A loopback TCP port that never answers a PostgreSQL client.
    accept: connections are accepted, then nothing is ever sent.
    backlog: nothing is accepted and the accept queue is full, so the
    kernel drops new SYNs and the client waits in SYN_SENT."""

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.accepted = 0
        self._stop = False
        self._thread = None
        if mode == "accept":
            self.sock.listen(16)
            self.sock.settimeout(0.1)
            self._thread = threading.Thread(target=self._accept, daemon=True)
            self._thread.start()
        else:
            self.sock.listen(0)
            self._fill_backlog()

    def _accept(self):
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.held.append(c)
            self.accepted += 1

    def _fill_backlog(self):
        """Connects until a handshake no longer completes: the queue is full."""
        for _ in range(16):
            c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            c.settimeout(0.5)
            self.held.append(c)
            try:
                c.connect(("127.0.0.1", self.port))
            except socket.timeout:
                return
        raise RuntimeError("the accept queue of port %d never filled" % self.port)

    def close(self):
        self._stop = True
        if self._thread:
            self._thread.join(2)
        for c in self.held:
            c.close()
        self.sock.close()


@pytest.fixture
def silent_hosts():
    made = []

    def make(mode):
        s = SilentHost(mode)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def multi_dsn(pg, ports, **extra):
    parts = ["host=%s" % ",".join(["127.0.0.1"] * len(ports)),
             "port=%s" % ",".join(str(p) for p in ports),
             "dbname=postgres", "user=postgres", "connect_timeout=%d" % CONNECT_TIMEOUT]
    parts += ["%s=%s" % kv for kv in extra.items()]
    return " ".join(parts)


def test_first_host_refuses(pg, fleet, ledger):
    """Issue 7: libpq moves to the second host on the same descriptor
    number; the watcher must follow it."""
    dsn = multi_dsn(pg, [h.free_port(), pg.port])
    t0 = time.monotonic()
    a = fleet.start("a", dsn=dsn)
    a.wait_for_log(r"acquired leader lease", timeout=bound(CONNECT_TIMEOUT))
    assert time.monotonic() - t0 < bound(1.0)
    ledger.wait_for("start", "a", timeout=bound(5))
    assert "database connection failed" not in a.text()
    assert "no answer from host" not in a.text()  # not by the timeout
    assert a.stop() == 0


@pytest.mark.parametrize("mode", ["accept", "backlog"])
def test_first_host_silent(pg, fleet, ledger, silent_hosts, mode):
    """A first host that never answers costs its own connect_timeout, then
    the second host is reached."""
    silent = silent_hosts(mode)
    t0 = time.monotonic()
    a = fleet.start("a", dsn=multi_dsn(pg, [silent.port, pg.port]))
    a.wait_for_log(r"acquired leader lease", timeout=bound(CONNECT_TIMEOUT + 5))
    elapsed = time.monotonic() - t0
    assert CONNECT_TIMEOUT - 0.2 < elapsed < bound(CONNECT_TIMEOUT + 3), elapsed
    a.wait_for_log(r'no answer from host "127\.0\.0\.1" port %d within connect_timeout '
                   r"\(2s\): trying the other hosts" % silent.port, timeout=0)
    if mode == "accept":
        assert silent.accepted >= 1
    assert "database connection failed" not in a.text()
    assert a.stop() == 0


def test_two_silent_hosts_then_primary(pg, fleet, ledger, silent_hosts):
    """Each host gets its own connect_timeout: the attempt as a whole is not
    cut short after the first one."""
    s1, s2 = silent_hosts("accept"), silent_hosts("backlog")
    t0 = time.monotonic()
    a = fleet.start("a", dsn=multi_dsn(pg, [s1.port, s2.port, pg.port]))
    a.wait_for_log(r"acquired leader lease", timeout=bound(2 * CONNECT_TIMEOUT + 5))
    elapsed = time.monotonic() - t0
    assert 2 * CONNECT_TIMEOUT - 0.2 < elapsed < bound(2 * CONNECT_TIMEOUT + 3), elapsed
    ledger.wait_for("start", "a", timeout=bound(5))  # the fence is held by then
    # two hosts skipped by each session, the lock's and the fence's
    assert a.count(r"(?<!fence session: )no answer from host") == 2
    assert a.count(r"fence session: no answer from host") == 2
    assert a.stop() == 0


def test_every_host_silent(pg, fleet, ledger, silent_hosts):
    """No host answers: one failed attempt naming both, then a retry."""
    s1, s2 = silent_hosts("accept"), silent_hosts("backlog")
    a = fleet.start("a", dsn=multi_dsn(pg, [s1.port, s2.port]))
    line = a.wait_for_log(r"database connection failed: .*", timeout=bound(2 * CONNECT_TIMEOUT + 3))
    for port in (s1.port, s2.port):
        assert 'host "127.0.0.1" port %d: no answer within connect_timeout (2s)' % port \
            in line.group(0), line.group(0)
    assert "; retrying in" in line.group(0)
    assert a.running()
    assert not ledger.starts()
    assert a.stop() == 0


APP_ROLE = "pgl_app"


def test_claim_leaves_application_table_alone(pg, fleet, ledger):
    """Issue 7: the fencing-token claim names its table in pg_temp. A role
    whose search_path puts public before pg_temp keeps its own
    public.pgleader_term, rows included."""
    pg.psql("CREATE ROLE %s LOGIN; GRANT CREATE ON SCHEMA public TO %s; "
            "ALTER ROLE %s SET search_path = public, pg_temp" % (APP_ROLE, APP_ROLE, APP_ROLE))
    # the claim's table is its fallback: a role that may write a logical
    # message makes the token durable with that instead
    pg.psql("REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) FROM PUBLIC")
    pg.psql("CREATE TABLE public.pgleader_term (id int); "
            "INSERT INTO public.pgleader_term VALUES (1), (2), (3)", user=APP_ROLE)
    a = fleet.start("a", dsn=pg.dsn(user=APP_ROLE))
    st = ledger.wait_for("start", "a", timeout=bound(10))
    assert int(st.token) > 0
    assert "fencing token can repeat" not in a.text()  # the claim made its table
    rows = pg.psql("SELECT id FROM public.pgleader_term ORDER BY id", user=APP_ROLE)
    assert rows == [["1"], ["2"], ["3"]]
    assert a.stop() == 0
    assert pg.psql("SELECT count(*) FROM public.pgleader_term")[0][0] == "3"


@pytest.mark.parametrize("path", ["message", "temp_table"])
def test_durable_token_paths(pg, fleet, ledger, path):
    """The claim makes the fencing token durable with a transactional
    logical message when the role may write one (no file, no catalog rows),
    else with a temporary table; either way the token grows across a server
    crash (an asynchronous commit would be lost: wal_writer_delay is 10 s)
    and nothing warns that it could repeat."""
    pg.psql("CREATE ROLE pgl_tok LOGIN")
    if path == "message":
        pg.psql("REVOKE TEMP ON DATABASE postgres FROM PUBLIC")
    else:
        pg.psql("REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) "
                "FROM PUBLIC")
    a = fleet.start("a", dsn=pg.dsn(user="pgl_tok"))
    s1 = ledger.wait_for("start", "a", timeout=bound(10))
    pg.crash()
    ledger.wait_for("term", "a", pid=s1.pid, timeout=bound(3))
    pg.start()
    s2 = ledger.wait_for("start", "a", count=2, timeout=bound(h.FAST_RETRY + 4))
    assert int(s2.token) > int(s1.token), "token %s after a crash, was %s" % (s2.token, s1.token)
    assert "fencing token can repeat" not in a.text()
    assert a.stop() == 0


def test_no_connect_privilege_exits_69(pg, fleet, ledger):
    """A role without CONNECT on the database (SQLSTATE 42501) is a permanent
    error, like a wrong password: exit 69 at once."""
    pg.psql("CREATE ROLE pgl_noconnect LOGIN")
    pg.psql("CREATE DATABASE pgl_private")
    pg.psql("REVOKE CONNECT ON DATABASE pgl_private FROM PUBLIC")
    a = fleet.start("a", dsn=pg.dsn(user="pgl_noconnect", dbname="pgl_private"))
    assert a.wait(bound(5)) == 69
    line = a.wait_for_log(r"cannot connect: .*", timeout=0).group(0)
    assert "permission denied for database" in line, line
    assert "database connection failed" not in a.text()
    assert not ledger.starts()


@pytest.mark.parametrize("option", [
    "sslmode=bogus", "target_session_attrs=bogus", "port=99999999",
    "service=pgl_no_such_service"])
def test_unusable_dsn_exits_78(pg, fleet, ledger, workdir, option):
    """libpq parses these but cannot use them: exit 78 with libpq's reason,
    not a retry for ever."""
    services = workdir / "pg_service.conf"
    services.write_text("[other]\nhost=127.0.0.1\n")
    a = fleet.start("a", dsn="host=127.0.0.1 port=%d dbname=postgres user=postgres %s"
                    % (pg.port, option) if not option.startswith("port=")
                    else "host=127.0.0.1 dbname=postgres user=postgres " + option,
                    env={"PGSERVICEFILE": str(services), "PGSYSCONFDIR": str(workdir)})
    assert a.wait(bound(5)) == 78
    a.wait_for_log(r"cannot use the connection string: ", timeout=0)
    assert "retrying" not in a.text()
    assert not ledger.starts()
