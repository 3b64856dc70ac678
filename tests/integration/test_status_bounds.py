"""`pgleader status` is bounded (issue 17, 6.4 and 6.8): a server or proxy
that stops answering after the connection is made cannot keep it for ever;
`--watch` says when the database goes away and comes back, and ends at once
on SIGINT or SIGTERM whatever it waits for; a DSN that libpq refuses before
it tries a host exits 78, as the daemon does."""

import signal
import socket
import struct
import threading
import time

import pytest

import pgharness as h
from pgharness import bound
from test_status import STAMP, run_status


class StallingProxy:
    """127.0.0.1:<port> -> upstream: passes the startup message and every
    answer of the server, then holds whatever the client sends next (its
    first query) for ever, the sockets open: a server that stopped answering
    after the connection was made."""

    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.socks = []
        self.running = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self.running:
            try:
                c, _ = self.lsock.accept()
                s = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                return
            s.settimeout(None)
            self.socks += [c, s]
            threading.Thread(target=self._client_to_server, args=(c, s), daemon=True).start()
            threading.Thread(target=h.pump, args=(s, c), daemon=True).start()

    @staticmethod
    def _client_to_server(c, s):
        buf = b""
        try:
            while len(buf) < 4 or len(buf) < struct.unpack("!I", buf[:4])[0]:
                data = c.recv(65536)
                if not data:
                    return
                buf += data
            n = struct.unpack("!I", buf[:4])[0]
            s.sendall(buf[:n])
            while c.recv(65536):  # held, never passed on
                pass
        except OSError:
            return

    def dsn(self):
        return ("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable"
                " gssencmode=disable connect_timeout=2" % self.port)

    def stop(self):
        self.running = False
        for s in self.socks + [self.lsock]:
            try:
                s.close()
            except OSError:
                pass


@pytest.fixture
def stalling(pg_shared):
    p = StallingProxy(pg_shared.port)
    yield p
    p.stop()


@pytest.fixture
def frozen(pg):
    p = h.FrozenProxy(pg.port)
    yield p
    p.stop()


@pytest.mark.parametrize("json", [False, True])
def test_status_stalled_after_connect(workdir, stalling, json):
    """The connection is made, the first query is never answered: 69 after
    connect_timeout (2 s) and a second, with one line that says so."""
    t0 = time.monotonic()
    r = run_status(workdir, "--dsn", stalling.dsn(), *(["--json"] if json else []), timeout=20)
    took = time.monotonic() - t0
    assert r.rc == 69 and r.out == "", r
    assert r.err.splitlines() == [
        "pgleader: cannot query: no answer from the server within 3 s"], r
    assert 2.5 < took < bound(6), took


def test_watch_database_goes_away_and_comes_back(workdir, fleet, pg, frozen):
    """Through a proxy that freezes (sockets open, nothing flows): one line
    when the database goes away, one when it is back, then the leader."""
    w = h.Pgleader(["status", "--watch", "--dsn", frozen.dsn(connect_timeout=2),
                    "--lock-key", str(fleet.key)], fleet.workdir, name="watch")
    fleet.nodes.append(w)
    w.wait_for_log(r"(?m)^%s no leader$" % STAMP)
    frozen.freeze()
    t0 = time.monotonic()
    w.wait_for_log(r"(?m)^%s database unreachable$" % STAMP, timeout=6)
    assert time.monotonic() - t0 < bound(5), w.text()
    assert w.count(r"pgleader: cannot query: no answer from the server within 3 s") == 1, w.text()
    time.sleep(2.5)  # reconnection attempts time out, silently
    a = fleet.start("sb-a", command=["sleep", "600"])
    a.wait_for_log(r"acquired leader lease")
    mark = w.mark()
    frozen.thaw()
    w.wait_for_log(r"(?m)^%s database reachable$" % STAMP, after=mark, timeout=6)
    w.wait_for_log(r"(?m)^%s leader sb-a \(server pid \d+\)$" % STAMP, after=mark, timeout=2)
    assert w.count(r"pgleader: cannot") == 1, w.text()
    w.signal(signal.SIGINT)
    assert w.wait(2) == 0, w.text()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("when", ["query", "reconnect"])
def test_watch_stops_at_once_while_it_waits(workdir, fleet, pg, frozen, sig, when):
    """SIGTERM or SIGINT while a query awaits its answer, or while a
    connection is being made through the frozen proxy: exit 0 at once."""
    w = h.Pgleader(["status", "--watch", "--dsn", frozen.dsn(connect_timeout=10),
                    "--lock-key", str(fleet.key)], fleet.workdir, name="watch")
    fleet.nodes.append(w)
    w.wait_for_log(r"(?m)^%s no leader$" % STAMP)
    frozen.freeze()
    if when == "reconnect":
        w.wait_for_log(r"(?m)^%s database unreachable$" % STAMP, timeout=15)
    time.sleep(1.0)
    t0 = time.monotonic()
    w.signal(sig)
    assert w.wait(bound(2)) == 0, w.text()
    assert time.monotonic() - t0 < bound(0.5), w.text()


@pytest.mark.parametrize("option, says", [
    ("sslmode=bogus", 'invalid sslmode value: "bogus"'),
    ("port=99999999", 'invalid port number: "99999999"'),
])
def test_status_dsn_libpq_refuses_exits_78(workdir, fleet, pg, option, says):
    """The daemon says 78 for these (its lease classifies them); so does
    status, not 69 that scripts retry."""
    dsn = "host=127.0.0.1 user=postgres dbname=postgres " + option
    r = run_status(workdir, "--dsn", dsn)
    assert r.rc == 78 and r.out == "", r
    assert r.err.splitlines() == ["pgleader: invalid dsn: " + says], r
    d = fleet.start("n", "--nonblock", dsn=dsn)
    assert d.wait(bound(5)) == 78, d.text()


def test_status_connect_timeout_zero_is_bounded(workdir, frozen):
    """libpq reads connect_timeout=0 as "for ever"; status, as the daemon,
    as the default (10 s): a frozen proxy (the kernel completes the
    handshake, nothing answers) cannot hold it longer."""
    frozen.freeze()
    t0 = time.monotonic()
    r = run_status(workdir, "--dsn", frozen.dsn(connect_timeout=0), timeout=30)
    took = time.monotonic() - t0
    assert r.rc == 69 and r.out == "", r
    assert len(r.err.splitlines()) == 1 and "timeout expired" in r.err, r
    # libpq's deadline is time(NULL) + 10, whole seconds: 9 to 10 s of waiting
    assert 8.9 < took < bound(13), took
