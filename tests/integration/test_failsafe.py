"""Failsafe mode (DESIGN 9, issue 10): a leader keeps its command through a
database outage while every other member agrees over HTTP; a member that is
down, partitioned or does not know the secret makes it demote; a new leader
asks every member before it starts. Three real nodes against a real
PostgreSQL, the members' HTTP paths through the freezable proxy where a
partition is needed.

Timings: ping_interval 200ms + ping_timeout 400ms + grace_period 1s = 1.6s <
failsafe_ttl 3s (the timing rule); server_lease 4s."""

import http.client
import json
import os
import re
import signal
import socket
import time

import pytest

import pgharness as h
from pgharness import bound
from test_notify import NotifySocket


PING_INTERVAL = 0.2
PING_TIMEOUT = 0.4
GRACE = h.FAST_GRACE
TTL = 3.0
assert PING_INTERVAL + PING_TIMEOUT + GRACE < TTL  # the timing rule
ROUND = PING_INTERVAL + PING_TIMEOUT   # the longest a claim round takes to fail
SECRET = "f4ils4fe-Secret_of.the+fleet/42=="
WRONG = "not-the-fleet-secret"


# --------------------------------------------------------------------------
# HTTP

def request(port, path="/failsafe", method="GET", secret=None, body=None, timeout=5):
    """(status, headers, body) of one request on a new connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {}
    if secret is not None:
        headers["Authorization"] = "Bearer " + secret
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode()
    finally:
        c.close()


def status_doc(p):
    status, _, body = request(p.http_port, "/status")
    assert status == 200
    return json.loads(body)


def state_of(p):
    try:
        return status_doc(p)["state"]
    except OSError:
        return None


def metric_lines(p):
    status, _, text = request(p.http_port, "/metrics")
    assert status == 200
    return text.splitlines()


def running_answer(p):
    """What GET /failsafe says of p: True, False."""
    status, _, body = request(p.http_port, secret=SECRET)
    assert status == 200, body
    return json.loads(body)["running"]


# --------------------------------------------------------------------------
# The members of one test

def write_secret(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text + "\n")
    os.chmod(path, mode)
    return str(path)


class Members:
    """Every member's HTTP port, the shared secret and the failsafe options.
    A member in `proxied` is reached by the others through a FrozenProxy in
    front of its HTTP server: freezing it partitions that member. The proxy
    listens on 127.0.0.1 at the port the member listens on at 127.0.0.2, so
    that the member's entry is at its own port on this machine (a member's
    entry must match its http_addr)."""

    def __init__(self, fleet, workdir, names=("a", "b", "c"), proxied=()):
        self.fleet = fleet
        self.workdir = workdir
        self.http = {n: h.free_port() for n in names}
        self.proxies = {}
        for n in proxied:
            self.proxies[n] = h.FrozenProxy(self.http[n], "127.0.0.2", listen_port=self.http[n])
        self.secret = write_secret(workdir / "failsafe.secret", SECRET)
        self.wrong = write_secret(workdir / "wrong.secret", WRONG)

    def peers(self):
        return ",".join("%s=127.0.0.1:%d" % (n, port) for n, port in self.http.items())

    def start(self, node, *extra, secret=None, ttl=None, wait_http=True, peers=None, **kw):
        host = "127.0.0.2" if node in self.proxies else "127.0.0.1"
        p = self.fleet.start(node, "--http-addr", "%s:%d" % (host, self.http[node]),
                             "--failsafe-peers", peers or self.peers(),
                             "--failsafe-secret-file", secret or self.secret,
                             "--failsafe-ttl", ttl or "%dms" % int(TTL * 1000), *extra, **kw)
        p.http_port = self.http[node]
        if wait_http:
            h.wait_until(lambda: self._up(p), bound(10), interval=0.02,
                         what="%s's http server" % node)
        return p

    @staticmethod
    def _up(p):
        if not p.running():
            raise AssertionError("%s exited %s:\n%s" % (p.name, p.proc.returncode, h.tail(p.text(), 30)))
        try:
            return request(p.http_port, "/liveness")[0] == 200
        except OSError:
            return False

    def close(self):
        for proxy in self.proxies.values():
            proxy.stop()


@pytest.fixture
def members(fleet, workdir):
    """members(names=..., proxied=...) -> Members; proxies stopped afterwards."""
    made = []

    def make(**kw):
        m = Members(fleet, workdir, **kw)
        made.append(m)
        return m
    yield make
    for m in made:
        m.close()


def lead_with_standbys(pg, m, ledger, key, names=("a", "b", "c"), dsn=None, secrets=None):
    """The first name leads (started alone: asked, the others refuse the
    connection, which is "not running"), the others wait in the lock queue."""
    secrets = secrets or {}
    kw = {"dsn": dsn} if dsn else {}
    nodes = [m.start(names[0], secret=secrets.get(names[0]), **kw)]
    first = ledger.wait_for("start", names[0], timeout=bound(10))
    h.wait_holder(pg, key, names[0])
    for n in names[1:]:
        nodes.append(m.start(n, secret=secrets.get(n), **kw))
        h.wait_queued(pg, key, n)
    return nodes, first


def stop_all(nodes):
    for p in nodes:
        if p.running():
            assert p.stop() == 0, h.tail(p.text(), 30)


def wait_state(p, state, timeout):
    return h.wait_until(lambda: state_of(p) == state, bound(timeout), interval=0.02,
                        what="%s in state %s" % (p.name, state))


def assert_runs_on(ledger, start, until):
    """start's command stays alive, and nobody else starts one, until
    `until` (monotonic); checked every 100ms."""
    while time.monotonic() < until:
        assert h.pid_alive(start.pid), "the leader's command died:\n%s" % ledger.text()
        assert [e.pid for e in ledger.starts()] == [start.pid], ledger.text()
        assert not ledger.events("term"), ledger.text()
        time.sleep(0.1)


# --------------------------------------------------------------------------
# Outages the leader rides out

@pytest.mark.valgrind
def test_pg_restart_keeps_command(pg, members, ledger, lock_key):
    """pg_ctl restart -m fast: the leader's command is the same process
    before and after, no other node ever starts its command, and the leader
    holds the lock again afterwards."""
    m = members()
    nodes, sa = lead_with_standbys(pg, m, ledger, lock_key)
    a, b, c = nodes
    assert running_answer(a) is True
    assert running_answer(b) is False and running_answer(c) is False
    pg.restart("fast")
    h.wait_holder(pg, lock_key, "a", timeout=10)
    wait_state(a, "leader", 5)
    assert_runs_on(ledger, sa, time.monotonic() + 1.0)
    a.wait_for_log(r"failsafe")
    # the standbys queue again once a's claims have expired
    for n in ("b", "c"):
        h.wait_queued(pg, lock_key, n, timeout=TTL + 5)
    assert_runs_on(ledger, sa, time.monotonic() + 0.5)
    stop_all([c, b, a])


@pytest.mark.slow
def test_database_down_longer_than_server_lease(pg, members, ledger, lock_key, workdir):
    """Down for longer than server_lease: the command runs on; /status, the
    metrics and STATUS= say "failsafe"; back up, the same command leads."""
    notify = NotifySocket(workdir / "a.notify")
    try:
        m = members()
        a = m.start("a", env={"NOTIFY_SOCKET": notify.path})
        sa = ledger.wait_for("start", "a", timeout=bound(10))
        h.wait_holder(pg, lock_key, "a")
        b, c = m.start("b"), m.start("c")
        for n in ("b", "c"):
            h.wait_queued(pg, lock_key, n)
        t0 = time.monotonic()
        pg.stop()
        wait_state(a, "failsafe", 3)
        assert 'pgleader_state{state="failsafe"} 1' in metric_lines(a)
        h.wait_until(lambda: notify.collect(0.05) or any(
            l.startswith("STATUS=") and "failsafe" in l for l in notify.lines()),
            bound(3), what="STATUS= saying failsafe")
        assert_runs_on(ledger, sa, t0 + h.FAST_LEASE + 1.5)
        assert state_of(a) == "failsafe"
        assert state_of(b) != "leader" and state_of(c) != "leader"
        pg.start()
        h.wait_holder(pg, lock_key, "a", timeout=10)
        wait_state(a, "leader", 5)
        assert_runs_on(ledger, sa, time.monotonic() + 0.5)
        assert 'pgleader_state{state="leader"} 1' in metric_lines(a)
        stop_all([c, b, a])
    finally:
        notify.close()


def closed_at_once(port, src):
    """A request from src is closed unanswered within a second (every slot
    it may have is taken)."""
    with socket.socket() as s:
        s.settimeout(bound(2))
        s.bind((src, 0))
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /leader HTTP/1.0\r\n\r\n")
            return s.recv(4096) == b""
        except socket.timeout:
            return False
        except OSError:
            return True


def test_flood_keeps_failsafe(pg, members, ledger, lock_key):
    """Issue 25 item 4: slow clients from four addresses (8 each) take every
    general HTTP slot of every member, reconnecting the moment one is cut.
    The members' claims and checks still get through (the slots kept for
    the members' addresses): through a database outage the leader keeps its
    command and nobody else starts one; back up, it leads again."""
    m = members()
    nodes, sa = lead_with_standbys(pg, m, ledger, lock_key)
    a, b, c = nodes
    floods = [h.SlowHttpClients(p.http_port, 32) for p in nodes]
    try:
        time.sleep(1)
        # the flood holds every general slot: another address is closed
        closed = sum(closed_at_once(b.http_port, "127.0.0.6") for _ in range(10))
        assert closed >= 6, "only %d of 10 clients from another address were refused" % closed
        mark = a.mark()
        t0 = time.monotonic()
        pg.stop()
        a.wait_for_log(r"keeping the command in failsafe",
                       after=mark, timeout=bound(5))
        assert_runs_on(ledger, sa, t0 + 4.0)
        assert "lost leader lease" not in b.text() + c.text()
        assert not re.search(r"[01] of 2 members agree", a.text()[mark:]), a.text()[mark:]
        pg.start()
        h.wait_holder(pg, lock_key, "a", timeout=10)
        assert_runs_on(ledger, sa, time.monotonic() + 0.5)
    finally:
        for f in floods:
            f.close()
    stop_all([c, b, a])


@pytest.mark.parametrize("stop,early", [(0.4, True), (2.5, False)],
                         ids=["quick-stop", "slow-stop"])
def test_restart_settle_ended_by_members(pg, members, ledger, lock_key, stop, early):
    """Issue 25 item 12: the leader is stopping a command that takes `stop`
    seconds (SIGTERM) when the database restarts. The standby that gets the
    lock asks the members: every one answers that it runs nothing (the old
    leader, once its command is gone, refuses the connection) and names the
    same member list, so it takes the fence and starts at once instead of
    waiting out its settle wait; and never while the old command lives."""
    grace = "5s"  # the settle wait's cap (the outage + grace + 1 s) out of the way
    timing = h.timing(grace_period=grace, server_lease="8s")
    m = members()
    a = m.start("a", timing=timing, ttl="7s", command=h.job_cmd(ledger.path, term_delay=stop))
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    b = m.start("b", timing=timing, ttl="7s")
    c = m.start("c", timing=timing, ttl="7s")
    for n in ("b", "c"):
        h.wait_queued(pg, lock_key, n)
    marks = {p.name: p.mark() for p in (b, c)}
    a.signal(signal.SIGTERM)
    ledger.wait_for("term", "a", timeout=bound(3))
    pg.restart("fast")
    new = ledger.wait_for("start", count=2, timeout=bound(15))
    assert new.node in ("b", "c"), ledger.text()
    leader = b if new.node == "b" else c
    stopped = ledger.wait_for("stop", "a", timeout=bound(10))
    # never while the old command lived
    assert new.time > stopped.time, ledger.text()
    assert not h.pid_alive(sa.pid)
    text = leader.text()[marks[leader.name]:]
    waited = re.search(r"the database was away: taking the fence in ([0-9.]+)s", text)
    assert waited, text
    if early:
        # the old command was gone well before the settle wait would end
        # (the restart takes longer than it takes to stop): the members'
        # answers ended the wait
        ended = re.search(r"every failsafe member runs nothing: taking the fence now, "
                          r"([0-9.]+)s before the settle wait would end", text)
        assert ended, text
        assert float(ended.group(1)) >= 0.3, ended.group(0)
        print("settle wait %ss, ended %ss early; old command stopped %.3fs before the new one"
              " started" % (waited.group(1), ended.group(1), new.time - stopped.time))
    assert a.wait(bound(10)) == 0
    stop_all([c, b])


@pytest.mark.slow
def test_primary_failover(pg, members, ledger, lock_key, request):
    """A multi-host DSN; the primary crashes and its replica is promoted: the
    command survives and the lock is taken on the new primary."""
    import conftest
    replica = h.PgCluster("replica", standby_of=pg)
    conftest.add_logs(request.node, "replica postgresql log", replica.log)
    try:
        replica.start()
        h.wait_until(replica.in_recovery, 10, what="the replica to be in recovery")
        dsn = ("host=127.0.0.1,127.0.0.1 port=%d,%d dbname=postgres user=postgres "
               "target_session_attrs=read-write" % (pg.port, replica.port))
        m = members()
        nodes, sa = lead_with_standbys(pg, m, ledger, lock_key, dsn=dsn)
        pg.crash()
        time.sleep(0.5)
        replica.promote()
        h.wait_holder(replica, lock_key, "a", timeout=10)
        wait_state(nodes[0], "leader", 5)
        assert_runs_on(ledger, sa, time.monotonic() + 1.0)
        stop_all(nodes[::-1])
    finally:
        replica.destroy()


# --------------------------------------------------------------------------
# Outages the leader must not ride out

def test_member_killed_leader_demotes(pg, members, ledger, lock_key):
    """Database down and one member killed: its connection is refused, no
    agreement, and the leader demotes within ping_interval + ping_timeout +
    grace_period. No command runs while the database is down; back up, one
    node leads."""
    m = members()
    (a, b, c), sa = lead_with_standbys(pg, m, ledger, lock_key)
    pg.stop()
    wait_state(a, "failsafe", 3)
    time.sleep(0.5)  # a few rounds agreed
    assert h.pid_alive(sa.pid)
    t0 = time.monotonic()
    c.kill9()
    term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(5))
    assert term.time - t0 < bound(ROUND + 0.3), "SIGTERM %.2fs after the member died" % (term.time - t0)
    stop = ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(3))
    assert stop.time - t0 < bound(ROUND + GRACE + 0.3)
    # nothing runs while the database is down
    time.sleep(TTL)
    assert [e.pid for e in ledger.starts()] == [sa.pid]
    t_up = time.monotonic()
    pg.start()
    new = ledger.wait_for("start", count=2, timeout=bound(TTL + 10))
    assert new.time > t_up
    time.sleep(1.0)
    assert len(ledger.starts()) == 2
    assert len(pg.lock_holders(lock_key)) == 1
    assert pg.lock_holders(lock_key)[0]["application_name"] == h.app_name(new.node)
    ledger.assert_no_overlap()
    stop_all([b, a])


@pytest.mark.slow
def test_member_partitioned(pg, members, ledger, lock_key):
    """Database down and member c partitioned from the others (its HTTP path
    frozen): the leader demotes; c does not start its command before
    failsafe_ttl has passed since its last agreement."""
    m = members(proxied=("c",))
    (a, b, c), sa = lead_with_standbys(pg, m, ledger, lock_key)
    proxy = m.proxies["c"]
    pg.stop()
    wait_state(a, "failsafe", 3)
    time.sleep(0.5)
    assert h.pid_alive(sa.pid)
    t_freeze = time.monotonic()
    proxy.freeze()
    try:
        term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(5))
        dt = term.time - t_freeze
        assert dt < bound(ROUND + PING_INTERVAL + 0.3), "SIGTERM %.2fs after the partition" % dt
        ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(GRACE + 2))
        # only c is left; it asks a and b (refused: not running), but its
        # record of a's last claim holds it back until the ttl runs out
        assert a.stop() == 0
        assert b.stop() == 0
        pg.start()
        sc = ledger.wait_for("start", "c", timeout=bound(TTL + 10))
        # c's last agreement came at most one round before the freeze
        earliest = t_freeze - ROUND + TTL
        assert sc.time >= earliest, "c started %.2fs after the partition (ttl %.1fs)" % (
            sc.time - t_freeze, TTL)
        h.wait_holder(pg, lock_key, "c")
        ledger.assert_no_overlap()
    finally:
        proxy.thaw()
    assert c.stop() == 0


def test_refusal_demotes_at_once(pg, members, ledger, lock_key):
    """A claim one member refuses is lost: the leader in failsafe stops its
    command at once, not when a silent member's answer is due ping_timeout
    later (the simulator's finding 4: after a freeze, the command outlived
    the man page's grace_period by ping_timeout). b holds another member
    list, so it refuses every claim (409); c's HTTP path is frozen; the
    database goes down with ping_timeout 3 s."""
    ping_timeout = 3.0
    timing = h.timing(ping_timeout="3s", server_lease="10s")
    m = members(proxied=("c",))
    a = m.start("a", ttl="6s", timing=timing)
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    b = m.start("b", ttl="6s", timing=timing,
                peers=m.peers() + ",d=127.0.0.1:%d" % h.free_port())
    c = m.start("c", ttl="6s", timing=timing)
    for n in ("b", "c"):
        h.wait_queued(pg, lock_key, n)
    proxy = m.proxies["c"]
    proxy.freeze()
    try:
        mark = a.mark()
        t0 = time.monotonic()
        pg.stop()
        term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(ping_timeout + 5))
        took = term.time - t0
        print("SIGTERM %.3fs after the database went down" % took)
        assert took < ping_timeout / 2, "SIGTERM %.2fs after the database went down " \
            "(ping_timeout %.0fs)" % (took, ping_timeout)
        a.wait_for_log(r"lost leader lease: \d of 2 members agree \(b: 409 the member "
                       r"lists differ \(failsafe_peers\)\) \(failsafe\)", after=mark)
        ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(GRACE + 2))
    finally:
        proxy.thaw()
    pg.start()
    stop_all([c, b, a])


def one_leader(pg, ledger, key):
    """The command that runs (started, not stopped) when exactly one runs
    and its node alone holds the lock; else None."""
    holders = pg.lock_holders(key)
    running = [s for s in ledger.starts() if not ledger.events("stop", pid=s.pid)]
    if (len(holders) == 1 and len(running) == 1 and h.pid_alive(running[0].pid)
            and holders[0]["application_name"] == h.app_name(running[0].node)):
        return running[0]
    return None


def test_lock_session_terminated(pg, members, ledger, lock_key):
    """The leader's lock session is terminated while the database stays up.
    Mostly the standby that gets the lock asks the members, refuses the old
    leader's claims (it holds the lock), and starts once the old command has
    stopped. Should the old leader's first claim reach it before the grant,
    it agrees and hands the lock back, and the old leader leads on with the
    same command. Either way the two commands never overlap."""
    m = members()
    (a, b, c), sa = lead_with_standbys(pg, m, ledger, lock_key)
    backend = h.wait_holder(pg, lock_key, "a")["pid"]
    t0 = time.monotonic()
    assert pg.terminate_backend(backend)
    time.sleep(ROUND)
    leader = h.wait_until(lambda: one_leader(pg, ledger, lock_key),
                          bound(ROUND + GRACE + TTL + 3), interval=0.05,
                          what="one lock holder running the one command")
    if leader.pid != sa.pid:
        stop = ledger.events("stop", pid=sa.pid)[0]
        assert leader.time >= stop.time, "the new command started before the old one stopped"
        assert leader.time - t0 < bound(ROUND + GRACE + TTL + 2)
    time.sleep(0.5)
    again = one_leader(pg, ledger, lock_key)
    assert again is not None and again.pid == leader.pid, ledger.text()
    ledger.assert_no_overlap()
    assert len(ledger.starts()) <= 2
    stop_all([c, b, a])


@pytest.mark.valgrind
def test_kill9_leader_standby_starts_at_once(pg, members, ledger, lock_key):
    """kill -9 of the leader: its HTTP port refuses connections, which means
    "not running", so the standby that gets the lock starts its command
    within a second, as without failsafe."""
    m = members()
    (a, b, c), sa = lead_with_standbys(pg, m, ledger, lock_key)
    t0 = time.monotonic()
    assert a.kill9() == -signal.SIGKILL
    new = ledger.wait_for("start", count=2, timeout=bound(5))
    took = new.time - t0
    assert new.node in ("b", "c")
    assert took < bound(1.0), "the standby started %.3fs after kill -9" % took
    h.wait_holder(pg, lock_key, new.node)
    stop_all([c, b])


# --------------------------------------------------------------------------
# The secret, the member list, the timing rule

def test_secret_required(pg, members, ledger, lock_key):
    """Both endpoints need the secret: 401 with WWW-Authenticate: Bearer
    without it or with a wrong one; a member with the wrong secret answers
    401 to claims, so that the leader demotes during an outage."""
    m = members()
    (a, b, c), sa = lead_with_standbys(pg, m, ledger, lock_key, secrets={"c": m.wrong})
    claim = json.dumps({"node_id": "b", "fencing_token": "1", "members": "0"})
    for method, body in (("GET", None), ("POST", claim)):
        for secret in (None, WRONG, SECRET[:-1], SECRET + "x"):
            status, headers, text = request(a.http_port, method=method, secret=secret, body=body)
            assert status == 401, (method, secret, text)
            assert headers.get("WWW-Authenticate") == "Bearer"
            assert SECRET not in text
    status, _, text = request(a.http_port, secret=SECRET)
    doc = json.loads(text)
    assert (status, doc["running"]) == (200, True), text
    # the member list's hash, the same on every member
    assert re.fullmatch(r"[0-9a-f]{16}", doc["members"]), text
    assert json.loads(request(b.http_port, secret=SECRET)[2])["members"] == doc["members"]
    # a leads: a claim to it is refused with a reason
    status, _, text = request(a.http_port, method="POST", secret=SECRET, body=claim)
    assert status == 409 and json.loads(text)["ok"] is False and json.loads(text)["reason"]
    # a standby refuses a claimant whose member list is not its own
    status, _, text = request(b.http_port, method="POST", secret=SECRET, body=claim)
    assert (status, json.loads(text)["reason"]) == (
        409, "the member lists differ (failsafe_peers)"), text
    for p in (a, b, c):
        assert SECRET not in p.text() and WRONG not in p.text()
    t0 = time.monotonic()
    pg.stop()
    term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(5))
    assert term.time - t0 < bound(ROUND + 0.5), "SIGTERM %.2fs after the outage" % (term.time - t0)
    ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(GRACE + 2))
    assert len(ledger.starts()) == 1
    stop_all([c, b, a])


@pytest.mark.slow
def test_unknown_node_turns_failsafe_off(pg, members, ledger, lock_key):
    """A pgleader session for the key from a node id not in the member list:
    one error line, and failsafe is off (an outage demotes the leader) until
    that node is gone."""
    m = members(names=("a", "b"))
    (a, b), sa = lead_with_standbys(pg, m, ledger, lock_key, names=("a", "b"))
    stranger = m.fleet.start("stranger", command=["sleep", "600"])
    h.wait_queued(pg, lock_key, "stranger")
    # the leader must know, and says it once; the standby at most once
    pattern = r"[^\n]*stranger[^\n]*"
    a.wait_for_log(pattern, timeout=10)
    time.sleep(2.0)
    assert a.count(pattern) == 1, "not one line about the stranger:\n%s" % h.tail(a.text(), 30)
    assert b.count(pattern) <= 1, h.tail(b.text(), 30)
    t0 = time.monotonic()
    pg.stop()
    term = ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(5))
    assert term.time - t0 < bound(ROUND + 0.5)
    ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(GRACE + 2))
    # fixed: the stranger leaves; failsafe works again
    assert stranger.stop() == 0
    pg.start()
    new = ledger.wait_for("start", count=2, timeout=bound(TTL + 10))
    leader = a if new.node == "a" else b
    h.wait_holder(pg, lock_key, new.node)
    time.sleep(TTL)
    pg.restart("fast")
    h.wait_holder(pg, lock_key, new.node, timeout=10)
    wait_state(leader, "leader", 5)
    assert h.pid_alive(new.pid)
    assert len(ledger.starts()) == 2
    stop_all([b, a])


def one_line(p):
    """pgleader's own output, without the harness's header line."""
    return [l for l in p.text().splitlines() if l and not l.startswith("# ")]


BAD_CONFIGS = [
    # (name, failsafe_ttl, secret text (None: no file), its mode, the message)
    ("ttl equal to the sum", "1600ms", SECRET, 0o600,
     r"failsafe_ttl \S+ must be greater than ping_interval \S+ \+ ping_timeout \S+ \+ "
     r"grace_period \S+ = \S+"),
    ("secret readable by others", None, SECRET, 0o644, r"is open to others"),
    ("secret empty", None, "", 0o600, r"is empty"),
    ("secret of two lines", None, SECRET + "\n" + SECRET, 0o600, r"must hold one line"),
    ("secret missing", None, None, 0o600, r"cannot open failsafe secret file"),
]


@pytest.mark.parametrize("name,ttl,text,mode,message", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_failsafe_config_exits_78(members, workdir, name, ttl, text, mode, message):
    """One line naming the problem, never the secret, and exit 78."""
    m = members()
    path = str(workdir / "bad.secret")
    if text is not None:
        write_secret(path, text, mode)
    p = m.start("a", secret=path, ttl=ttl, wait_http=False)
    assert p.wait(10) == 78
    lines = one_line(p)
    assert len(lines) == 1 and re.search(message, lines[0]), lines
    assert SECRET not in p.text()


def test_failsafe_off_unchanged(pg, fleet, ledger, lock_key):
    """Without failsafe_peers, /failsafe is 404 and a restart of the database
    stops the command as it always did."""
    port = h.free_port()
    a = fleet.start("a", "--http-addr", "127.0.0.1:%d" % port)
    a.http_port = port
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_until(lambda: Members._up(a), bound(10), what="a's http server")
    assert request(port, secret=SECRET)[0] == 404
    assert request(port, method="POST", secret=SECRET, body="{}")[0] == 405
    pg.restart("fast")
    ledger.wait_for("term", "a", pid=sa.pid, timeout=bound(3))
    s2 = ledger.wait_for("start", "a", count=2, timeout=bound(10))
    assert s2.pid != sa.pid
    assert a.stop() == 0


@pytest.mark.parametrize("case", ["wrong own address", "another member at own address"])
def test_member_list_checked_against_self(members, fleet, case):
    """Issue 17 item 6.9: this node's entry must be where its http_addr
    listens, and no other member there: one line and 78 at start."""
    m = members()
    port = m.http["a"]
    if case == "wrong own address":
        peers = "a=127.0.0.1:%d,b=127.0.0.1:%d" % (m.http["c"], m.http["b"])
        message = (r"^pgleader: failsafe_peers: this node's member \"a\" is at 127\.0\.0\.1:%d, "
                   r"but its http_addr is 127\.0\.0\.1:%d$" % (m.http["c"], port))
    else:
        peers = "a=127.0.0.1:%d,b=127.0.0.1:%d" % (port, port)
        message = (r"^pgleader: failsafe_peers: member \"b\" is at 127\.0\.0\.1:%d, "
                   r"this node's own address$" % port)
    p = fleet.start("a", "--http-addr", "127.0.0.1:%d" % port, "--failsafe-peers", peers,
                    "--failsafe-secret-file", m.secret)
    assert p.wait(10) == 78
    lines = one_line(p)
    assert len(lines) == 1 and re.search(message, lines[0]), lines


def test_refusals_logged_with_their_reason(pg, members, ledger, lock_key):
    """Issue 17 item 6.10: the leader logs why each member did not agree
    (here c: 401, its secret is wrong), once; the member that refuses logs
    it too, once per client and reason a minute, however often it is
    asked."""
    m = members()
    (a, b, c), sa = lead_with_standbys(pg, m, ledger, lock_key, secrets={"c": m.wrong})
    claim = json.dumps({"node_id": "x\x1by", "fencing_token": "1", "members": "0"})
    for _ in range(5):
        assert request(b.http_port, secret=WRONG)[0] == 401
        assert request(b.http_port, method="POST", secret=SECRET, body=claim)[0] == 409
    b.wait_for_log(r"warning: failsafe: refused a request from 127\.0\.0\.1: "
                   r"401 wrong or missing secret\n")
    b.wait_for_log(r"warning: failsafe: refused the claim of node x\?y from 127\.0\.0\.1: "
                   r"409 the member lists differ \(failsafe_peers\)\n")
    pg.stop()
    ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(GRACE + 2))
    a.wait_for_log(r"warning: failsafe: members that did not agree to the claim: "
                   r"c: 401 wrong or missing secret\n")
    c.wait_for_log(r"warning: failsafe: refused a request from 127\.0\.0\.1: "
                   r"401 wrong or missing secret\n")
    assert b.count(r"failsafe: refused a request") == 1, b.text()
    assert b.count(r"failsafe: refused the claim") == 1, b.text()
    assert a.count(r"members that did not agree") == 1, a.text()
    assert c.count(r"failsafe: refused") == 1, c.text()
    for p in (a, b, c):
        assert SECRET not in p.text() and WRONG not in p.text()
    stop_all([c, b, a])


# --------------------------------------------------------------------------
# After a failsafe episode (issue 17, items 3 and 6.1)

def restart_and_regain(pg, a, lock_key):
    """pg_ctl restart -m fast; a leads in failsafe, then holds the lock again.
    Returns when a said so."""
    mark = a.mark()
    pg.restart("fast")
    a.wait_for_log(r"acquired leader lease again after failsafe", timeout=bound(10), after=mark)
    h.wait_holder(pg, lock_key, "a", timeout=5)
    return time.monotonic()


def test_standbys_queue_again_after_regain(pg, members, ledger, lock_key):
    """A failsafe episode, the leader holds the lock again, and is killed
    with SIGKILL 1.1 s later: the members it told "regained" are back in
    the lock queue, so one of them starts its command within a second, not
    failsafe_ttl (10 s here) after the last claim."""
    m = members()
    a = m.start("a", ttl="10s")
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    b, c = m.start("b", ttl="10s"), m.start("c", ttl="10s")
    for n in ("b", "c"):
        h.wait_queued(pg, lock_key, n)
    t_back = restart_and_regain(pg, a, lock_key)
    assert h.pid_alive(sa.pid) and len(ledger.starts()) == 1
    for p in (b, c):
        h.wait_queued(pg, lock_key, p.name, timeout=2.0)
        assert state_of(p) == "standby"
    time.sleep(max(0.0, t_back + 1.1 - time.monotonic()))
    t0 = time.monotonic()
    assert a.kill9() == -signal.SIGKILL
    new = ledger.wait_for("start", count=2, timeout=bound(5))
    took = new.time - t0
    print("failover %.3fs after kill -9, %.3fs after the recovery" % (took, t0 - t_back))
    assert new.node in ("b", "c")
    assert took < bound(1.0), "the standby started %.3fs after kill -9" % took
    stop_all([c, b])


def test_fence_held_after_regain(pg, members, ledger, lock_key):
    """After a failsafe regain the leader holds its fence again; a node
    outside the member list then takes over only once the old command,
    which takes 3 s to stop, is gone."""
    grace = "4s"
    timing = h.timing(grace_period=grace, server_lease="8s")
    m = members(names=("a", "b"))
    job = dict(term_delay=3.0)
    a = m.start("a", ttl="6s", timing=timing, job=job)
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    b = m.start("b", ttl="6s", timing=timing, job=job)
    h.wait_queued(pg, lock_key, "b")
    restart_and_regain(pg, a, lock_key)
    fence = h.wait_until(lambda: [l for l in pg.fence_holders(lock_key)
                                  if l["application_name"] == h.app_name("a")],
                         bound(2), what="a's fence after the regain")[0]
    outsider = m.fleet.start("x", timing=timing, job=job)
    h.wait_queued(pg, lock_key, "x")
    lock = h.wait_holder(pg, lock_key, "a")
    assert lock["pid"] != fence["pid"]
    assert pg.terminate_backend(lock["pid"])
    stop = ledger.wait_for("stop", "a", pid=sa.pid, timeout=bound(8))
    new = ledger.wait_for("start", count=2, timeout=bound(8))
    print("old stopped %.3fs before the new command started (%s)" % (
        new.time - stop.time, new.node))
    ledger.assert_no_overlap()
    stop_all([outsider, b, a])


def test_restart_after_regain_keeps_the_term_token(pg, members, ledger, lock_key):
    """Back from failsafe the term goes on, and so does its fencing token,
    although the new lock session read a newer one: a command restarted in
    that term (--restart always) gets the token the first one had, which
    /status and the metrics show (the simulator's finding 1: it got the
    session's token while they showed the term's)."""
    m = members(names=("a", "b"))
    a = m.start("a", "--restart", "always")
    sa = ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    b = m.start("b")
    h.wait_queued(pg, lock_key, "b")
    restart_and_regain(pg, a, lock_key)
    assert h.pid_alive(sa.pid) and len(ledger.starts()) == 1
    os.kill(sa.pid, signal.SIGTERM)  # the command ends by itself: restarted
    again = ledger.wait_for("start", "a", count=2, timeout=bound(5))
    assert again.token == sa.token, ledger.text()
    doc = status_doc(a)
    assert (doc["state"], doc["command_pid"]) == ("leader", again.pid), doc
    assert doc["fencing_token"] == sa.token, doc
    assert "pgleader_fencing_token %s" % sa.token in metric_lines(a)
    stop_all([b, a])
