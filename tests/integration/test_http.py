"""The HTTP endpoints and metrics of real nodes (--http-addr): who answers
/leader and /replica, what the metrics say across a kill -9 failover and a
terminated session, promtool on the served text, and a server that hostile
clients cannot slow down."""

import http.client
import json
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

import pgharness as h
from pgharness import bound


def _has_http_addr():
    try:
        r = subprocess.run([h.pgleader_bin(), "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=10)
    except OSError:
        return False
    return b"--http-addr" in r.stdout


pytestmark = pytest.mark.skipif(not _has_http_addr(),
                                reason="this pgleader has no --http-addr")


def get(port, path, host="127.0.0.1", method="GET", timeout=5):
    """(status, body) of one request on a new connection."""
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


def _try(fn):
    try:
        return fn()
    except OSError:
        return False


def start_node(fleet, name, *extra, **kw):
    """A node with its HTTP server on a free loopback port, once it answers."""
    port = h.free_port()
    p = fleet.start(name, "--http-addr", "127.0.0.1:%d" % port, *extra, **kw)
    p.http_port = port

    def up():
        if not p.running():
            raise AssertionError("%s exited %s:\n%s" % (name, p.proc.returncode, h.tail(p.text(), 20)))
        try:
            return get(port, "/liveness")[0] == 200
        except OSError:
            return False
    h.wait_until(up, bound(10), interval=0.02, what="%s's http server" % name)
    return p


SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$")


def metrics(p):
    """{'name{labels}': value} of one scrape."""
    status, text = get(p.http_port, "/metrics")
    assert status == 200
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def metric(p, name):
    return metrics(p).get(name)


def is_leader(m, key):
    return m['pgleader_is_leader{lock_key="%d"}' % key]


def wait_metric(p, name, pred, timeout=5, what=None):
    return h.wait_until(lambda: pred(metric(p, name)), bound(timeout), interval=0.02,
                        what=what or "%s on %s" % (name, p.name))


def status_doc(p):
    status, body = get(p.http_port, "/status")
    assert status == 200
    return json.loads(body)


def two_nodes(pg, fleet, ledger, key):
    a = start_node(fleet, "a")
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, key, "a")
    b = start_node(fleet, "b")
    h.wait_queued(pg, key, "b")
    wait_metric(b, "pgleader_database_connected", lambda v: v == 1)
    return a, sa, b


@pytest.mark.valgrind
def test_one_leader_one_replica(pg, fleet, ledger, lock_key):
    a, sa, b = two_nodes(pg, fleet, ledger, lock_key)
    want = {"/leader": (200, 503), "/primary": (200, 503), "/replica": (503, 200),
            "/standby": (503, 200), "/readiness": (200, 200), "/liveness": (200, 200)}
    for path, (ca, cb) in want.items():
        assert (get(a.http_port, path)[0], get(b.http_port, path)[0]) == (ca, cb), path
    assert get(a.http_port, "/leader", method="HEAD")[0] == 200
    assert get(a.http_port, "/leader", method="POST")[0] == 405
    assert get(a.http_port, "/nope")[0] == 404
    # a known path with junk after it is unknown, an encoded NUL too
    for path in ("/leader%00", "/leader%00x", "/leader/", "/primary%00"):
        assert get(a.http_port, path)[0] == 404, path

    da, db = status_doc(a), status_doc(b)
    assert (da["state"], db["state"]) == ("leader", "standby")
    assert da["node_id"] == "a" and da["lock_key"] == str(lock_key)
    assert da["command_pid"] == sa.pid and db["command_pid"] is None
    assert da["fencing_token"] == sa.token
    assert da["database_connected"] and db["database_connected"]

    ma, mb = metrics(a), metrics(b)
    assert (is_leader(ma, lock_key), is_leader(mb, lock_key)) == (1, 0)
    assert ma['pgleader_state{state="leader"}'] == 1 and mb['pgleader_state{state="standby"}'] == 1
    assert ma["pgleader_command_running"] == 1 and mb["pgleader_command_running"] == 0
    assert ma["pgleader_acquisitions_total"] == 1 and mb["pgleader_acquisitions_total"] == 0
    assert ma["pgleader_fencing_token"] == int(sa.token)
    assert ma['pgleader_info{node_id="a",lock_key="%d",lock_name="",priority="1"}' % lock_key] == 1
    assert ma["process_open_fds"] > 0 and ma["process_resident_memory_bytes"] > 0
    # the split-brain alert's expression: exactly one leader
    assert is_leader(ma, lock_key) + is_leader(mb, lock_key) == 1
    assert a.stop() == 0
    assert b.stop() == 0


def test_metrics_pass_promtool(pg, fleet, ledger, lock_key):
    a, sa, b = two_nodes(pg, fleet, ledger, lock_key)
    for p in (a, b):
        status, text = get(p.http_port, "/metrics")
        assert status == 200
        r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        assert r.returncode == 0, "promtool on %s:\n%s\n%s" % (p.name, r.stdout.decode(), text)
        assert "password" not in text and "dbname=" not in text


def test_kill9_moves_the_metrics(pg, fleet, ledger, lock_key):
    a, sa, b = two_nodes(pg, fleet, ledger, lock_key)
    before = metrics(b)
    assert is_leader(before, lock_key) == 0 and before["pgleader_acquisitions_total"] == 0
    a.kill9()
    ledger.wait_for("start", "b", timeout=bound(3))
    wait_metric(b, 'pgleader_is_leader{lock_key="%d"}' % lock_key, lambda v: v == 1)
    after = metrics(b)
    assert after["pgleader_acquisitions_total"] == 1
    assert after["pgleader_command_starts_total"] == 1
    assert after["pgleader_lock_wait_seconds_count"] == 1
    assert after["pgleader_leader_since_timestamp_seconds"] > time.time() - 60
    assert get(b.http_port, "/leader")[0] == 200
    assert get(b.http_port, "/replica")[0] == 503
    assert b.stop() == 0


def test_terminated_session_counts_a_loss(pg, fleet, ledger, lock_key):
    a = start_node(fleet, "a")
    s1 = ledger.wait_for("start", "a", timeout=bound(10))
    backend = h.wait_holder(pg, lock_key, "a")["pid"]
    lost = 'pgleader_leadership_lost_total{reason="terminated"}'
    assert metric(a, lost) == 0
    assert pg.terminate_backend(backend)
    ledger.wait_for("start", "a", count=2, timeout=bound(5))
    m = wait_metric(a, lost, lambda v: v == 1, what="the loss counted as terminated: %r" % (
        {k: v for k, v in metrics(a).items() if "lost" in k}))
    assert m == 1
    m = metrics(a)
    assert m["pgleader_acquisitions_total"] == 2
    assert m['pgleader_command_exits_total{outcome="signal"}'] + \
        m['pgleader_command_exits_total{outcome="success"}'] + \
        m['pgleader_command_exits_total{outcome="failure"}'] == 1
    assert m["pgleader_fencing_token"] > int(s1.token)
    assert a.stop() == 0


class Hostile:
    """Twenty connections that never send, and a thread sending a megabyte
    over and over, to one node's HTTP server."""

    def __init__(self, port):
        self.port = port
        self.silent = []
        self.running = True
        self.tries = 0  # megabytes started (the server may cut one short)
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            self.silent.append(s)
        self.thread = threading.Thread(target=self._flood, daemon=True)
        self.thread.start()

    def _flood(self):
        body = b"x" * (1 << 20)
        while self.running:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                    s.sendall(b"POST /leader HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                              % len(body))
                    self.tries += 1
                    s.sendall(body)
                    s.recv(4096)
            except OSError:
                time.sleep(0.01)

    def stop(self):
        self.running = False
        self.thread.join(10)
        for s in self.silent:
            s.close()


def test_hostile_clients_do_not_delay_a_handover(pg, fleet, ledger, lock_key):
    a, sa, b = two_nodes(pg, fleet, ledger, lock_key)
    hostile = [Hostile(a.http_port), Hostile(b.http_port)]
    try:
        h.wait_until(lambda: all(x.tries > 1 for x in hostile), bound(5), interval=0.02,
                     what="the floods to start")
        t0 = time.monotonic()
        a.signal(signal.SIGTERM)
        stop = ledger.wait_for("stop", "a", timeout=bound(3))
        sb = ledger.wait_for("start", "b", timeout=bound(3))
        took = sb.time - t0
        assert took < bound(2.0), "handover took %.3f s under hostile HTTP clients" % took
        assert sb.time > stop.time
        assert a.wait(bound(5)) == 0
    finally:
        for x in hostile:
            x.stop()
    # the new leader answers once the server has seen the silent clients go
    # (until then this address is at its limit of 16 and may be refused)
    h.wait_until(lambda: _try(lambda: get(b.http_port, "/leader")[0] == 200), bound(2),
                 interval=0.05, what="/leader on the new leader")
    assert b.stop() == 0


def answered_or_closed_within(port, limit):
    """A new client's GET /leader: the seconds until it is answered or
    closed, or None when neither happened within limit (it waits in the
    listen backlog)."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
            s.sendall(b"GET /leader HTTP/1.0\r\n\r\n")
            s.recv(4096)
    except socket.timeout:
        return None
    except OSError:
        pass  # reset: closed at once
    return time.monotonic() - t0


def test_trickling_clients_do_not_hold_the_server(pg, fleet, ledger, lock_key):
    """Issue 17 item 6.7: 32 connections from two addresses trickling a
    byte every half second (and reconnecting when cut) take every slot. A
    new client is answered or closed at once, not left in the backlog; the
    leader keeps its lease (its pings go on) and a handover is on time."""
    a, sa, b = two_nodes(pg, fleet, ledger, lock_key)
    mark = a.mark()
    clients = h.SlowHttpClients(a.http_port, 32)
    try:
        time.sleep(1)
        for _ in range(6):
            took = answered_or_closed_within(a.http_port, bound(2))
            assert took is not None, "a new client waited more than %.1fs" % bound(2)
            assert took < bound(1), "a new client waited %.2fs" % took
            time.sleep(0.5)
        assert "lost leader lease" not in a.text()[mark:], a.text()[mark:]
        h.wait_holder(pg, lock_key, "a")
        t0 = time.monotonic()
        a.signal(signal.SIGTERM)
        sb = ledger.wait_for("start", "b", timeout=bound(3))
        took = sb.time - t0
        assert took < bound(2.0), "handover took %.3f s under trickling clients" % took
        assert a.wait(bound(5)) == 0
    finally:
        clients.close()
    assert get(b.http_port, "/leader", timeout=bound(1))[0] == 200
    assert b.stop() == 0


def test_fifty_connections_at_once(pg, fleet, ledger, lock_key):
    a = start_node(fleet, "a")
    ledger.wait_for("start", "a", timeout=bound(10))
    socks = [socket.create_connection(("127.0.0.1", a.http_port), timeout=10) for _ in range(50)]
    answered = refused = 0
    try:
        for s in socks:
            try:
                s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            except OSError:
                pass
        for s in socks:
            data = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except ConnectionResetError:
                pass
            except socket.timeout:
                pytest.fail("a connection got neither an answer nor a close in 10 s")
            if not data:
                refused += 1
                continue
            head, _, body = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK\r\n"), data[:80]
            length = re.search(rb"(?im)^content-length: *(\d+)", head)
            assert length and int(length.group(1)) == len(body), "a truncated answer"
            answered += 1
    finally:
        for s in socks:
            s.close()
    assert answered >= 1 and answered + refused == 50
    assert get(a.http_port, "/leader")[0] == 200
    assert a.running()
    assert a.stop() == 0


def test_port_in_use_exits_78(pg, fleet, ledger):
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        a = fleet.start("a", "--http-addr", "127.0.0.1:%d" % port)
        assert a.wait(bound(10)) == 78
        lines = [l for l in a.text().splitlines() if "cannot listen" in l]
        assert len(lines) == 1, a.text()
        assert "cannot listen on 127.0.0.1:%d: Address already in use" % port in lines[0]
        assert not ledger.starts()
    finally:
        taken.close()


def test_ipv6_loopback(pg, fleet, ledger):
    port = h.free_port()
    a = fleet.start("a", "--http-addr", "[::1]:%d" % port)
    ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_until(lambda: _try(lambda: get(port, "/leader", host="::1")[0] == 200),
                 bound(5), interval=0.05, what="/leader on [::1]")
    assert a.stop() == 0


