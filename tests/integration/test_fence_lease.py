"""The lease in fence mode (DESIGN 3, "the fence"), and lease_unlock, driven
through tests/fence_driver against a real PostgreSQL: the fence is the
two-int4 form of the key (pg_locks objsubid 2), waited for in the lock queue
under lock_timeout, given back without closing the session, lost with the
server's reason when its session is ended, and every statement of a lock or
fence session carries its tag (wire.h)."""

import json
import os
import queue
import re
import shlex
import subprocess
import threading
import time

import pytest

import pgharness as h

DRIVER = os.environ.get("PGLEADER_FENCE_DRIVER") or os.path.join(h.REPO, "tests", "fence_driver")
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def halves(key):
    """key >> 32 and its low 32 bits, each a signed int4, as
    pg_advisory_lock(int4, int4) takes them."""
    u = key & ((1 << 64) - 1)

    def s32(x):
        return x - (1 << 32) if x >= (1 << 31) else x
    return s32(u >> 32), s32(u & 0xffffffff)


class Driver:
    """One fence_driver: commands to its stdin, its events (one a line,
    "<event> <fault> <reason>") read from its stdout by a thread."""

    def __init__(self, workdir, pg, node, *args, key=None):
        self.node, self.pg = node, pg
        self.app = h.app_name(node)
        argv = [DRIVER, "--dsn", pg.dsn(), "--node", node, "-v"]
        if key is not None:
            argv += ["--key", str(key)]
        argv += list(args)
        if not os.access(DRIVER, os.X_OK):
            raise AssertionError("no %s: run `make tests/fence_driver`" % DRIVER)
        self.vlog = None
        if h.VALGRIND:
            self.vlog = os.path.join(str(workdir), "driver-%s.valgrind.log" % node)
            argv = shlex.split(h.WRAPPER) + [
                "--error-exitcode=99", "--leak-check=full",
                "--errors-for-leak-kinds=definite", "--log-file=" + self.vlog] + argv
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PG", "PGLEADER_"))}
        if h.SANITIZED:
            env.update(h.sanitizer_env())
        self.errfile = os.path.join(str(workdir), "driver-%s.stderr" % node)
        self._err = open(self.errfile, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, env=env, start_new_session=True)
        self.events = queue.Queue()
        self.seen = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            self.events.put(raw.decode(errors="replace").rstrip("\n"))
        self.events.put(None)

    def send(self, cmd):
        self.proc.stdin.write((cmd + "\n").encode())
        self.proc.stdin.flush()

    def next(self, timeout=10.0):
        """The next event as (name, fault, reason); fails after timeout."""
        try:
            line = self.events.get(timeout=h.bound(timeout))
        except queue.Empty:
            raise AssertionError("%s: no event within %.1fs (seen %r)\n%s" % (
                self.node, h.bound(timeout), self.seen, self.stderr()))
        if line is None:
            raise AssertionError("%s: exited (%s) after %r\n%s" % (
                self.node, self.proc.wait(), self.seen, self.stderr()))
        self.seen.append(line)
        f = line.split(" ", 2)
        return f[0], f[1], f[2] if len(f) > 2 else ""

    def expect(self, name, fault="none", timeout=10.0):
        """The next event is name with fault; returns its reason. A lock's
        "granted", which comes before its "acquired", is passed over
        unless it is what is expected."""
        ev = self.next(timeout)
        if ev[0] == "granted" and name != "granted":
            ev = self.next(timeout)
        assert ev[:2] == (name, fault), "%s: expected %s %s, got %r\n%s" % (
            self.node, name, fault, ev, self.stderr())
        return ev[2]

    def quiet(self, seconds):
        """No event for that long."""
        try:
            line = self.events.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError("%s: unexpected event %r" % (self.node, line))

    def connect(self):
        self.send("connect")
        return int(re.fullmatch(r"key (-?\d+)", self.expect("connected")).group(1))

    def backend_pid(self):
        return self.pg.session_pid(self.app)

    def stderr(self):
        return h.read_text(self.errfile)

    def close(self):
        """Ends the driver by its stdin, or else by its pid; returns the
        problems a sanitizer or valgrind reported."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(h.bound(10))
        except subprocess.TimeoutExpired:
            h.kill_quietly(self.proc.pid)
            self.proc.wait(10)
        self._reader.join(10)
        self._err.close()
        err = self.stderr()
        problems = ["%s: %s" % (self.node, p) for p in h.SANITIZER_PATTERNS if p in err]
        if self.vlog and os.path.exists(self.vlog):
            vt = h.read_text(self.vlog)
            if not re.search(r"ERROR SUMMARY: 0 errors", vt):
                problems.append("%s: valgrind:\n%s" % (self.node, h.tail(vt, 80)))
        if self.proc.returncode != 0:
            problems.append("%s: exit %s\n%s" % (self.node, self.proc.returncode, err))
        return problems


@pytest.fixture
def drivers(workdir, pg_shared):
    """Starts fence drivers against pg_shared; ends every one afterwards and
    fails the test on a sanitizer or valgrind report."""
    started = []

    def start(node, *args, key=None):
        d = Driver(workdir, pg_shared, node, *args, key=key)
        started.append(d)
        return d
    yield start
    problems = []
    for d in started:
        problems += d.close()
    if problems:
        pytest.fail("fence drivers:\n" + "\n".join(problems), pytrace=False)


def fence_locks(pg, pid):
    """The fence-space advisory locks of a backend: (classid, objid, granted)."""
    return [(int(c), int(o), g == "t") for c, o, g in pg.psql(
        "SELECT classid, objid, granted FROM pg_locks WHERE locktype = 'advisory' "
        "AND objsubid = 2 AND pid = %d" % pid)]


def last_query(pg, app):
    rows = pg.psql("SELECT query FROM pg_stat_activity WHERE application_name = '%s'" % app)
    return rows[0][0] if rows else None


# --------------------------------------------------------------------------
# the key as two int4

HALVES_KEYS = [0, 1, -1, INT64_MIN, INT64_MAX, 0x50474c4541444552,
               0x123456789abcdef0,  # the low half's sign bit set
               -0x0000000100000000]  # the high half -1, the low 0


@pytest.mark.valgrind
def test_fence_halves_match_the_server(drivers, pg_shared):
    """What pgleader computes (its ACQUIRED reason) is what the server holds:
    pg_locks objsubid 2 with classid and objid the two halves, unsigned;
    and a bigint lock on the same key does not stand in the fence's way."""
    for i, key in enumerate(HALVES_KEYS):
        d = drivers("fh-%d" % i, key=key)
        assert d.connect() == key
        d.send("try")
        reason = d.expect("acquired")
        m = re.fullmatch(r"fence of key (-?\d+) \((-?\d+), (-?\d+)\)", reason)
        assert m, reason
        hi, lo = int(m.group(2)), int(m.group(3))
        assert int(m.group(1)) == key and (hi, lo) == halves(key), reason
        rows = fence_locks(pg_shared, d.backend_pid())
        assert rows == [(hi & 0xffffffff, lo & 0xffffffff, True)], (key, rows)
        # nothing in the bigint space
        assert not pg_shared.lock_holders(key), pg_shared.advisory_locks()
        d.send("release")
        d.expect("released")


def test_fence_of_a_lock_name_and_the_bigint_lock(drivers, pg_shared):
    """A lock name's key is computed on the server, the same way as the
    lock's; a session holding the bigint lock of that key does not block the
    fence, and the fence does not block it."""
    name = "fence-name-%d" % os.getpid()
    key = pg_shared.hashtextextended(name)
    lock = drivers("fn-lock", "--lock", "--name", name)
    fence = drivers("fn-fence", "--name", name)
    assert lock.connect() == key
    assert fence.connect() == key
    lock.send("try")
    # a lock is told granted before its claim comes back; a fence is not
    lock.expect("granted")
    lock.expect("acquired")
    fence.send("try")
    ev = fence.next(10)
    assert ev[0] == "acquired", "a fence's first news after its grant: %r" % (ev,)
    assert re.fullmatch(r"fence of key %d \(.*\)" % key, ev[2])
    assert [l["pid"] for l in pg_shared.lock_holders(key)] == [lock.backend_pid()]
    assert fence_locks(pg_shared, fence.backend_pid()) == [
        (x & 0xffffffff, y & 0xffffffff, True) for x, y in [halves(key)]]


# --------------------------------------------------------------------------
# waiting, unlocking, taking again

def test_second_waits_until_first_unlocks(drivers, pg_shared, lock_key):
    """B queues for the fence A holds and gets it the moment A unlocks; A's
    session stays (same backend pid) and can queue again."""
    hi, lo = halves(lock_key)
    a = drivers("fw-a", "--retry-interval", "30", key=lock_key)
    b = drivers("fw-b", "--retry-interval", "30", key=lock_key)
    a.connect()
    b.connect()
    pid_a, pid_b = a.backend_pid(), b.backend_pid()
    a.send("wait")
    a.expect("acquired")
    b.send("wait")
    h.wait_until(lambda: fence_locks(pg_shared, pid_b) == [
        (hi & 0xffffffff, lo & 0xffffffff, False)], 5, what="b queued for the fence")
    b.quiet(0.5)  # held elsewhere: b waits
    a.send("unlock")
    t0 = time.monotonic()
    a.expect("released")
    b.expect("acquired", timeout=2)
    assert time.monotonic() - t0 < h.bound(1.0)
    assert a.backend_pid() == pid_a  # the session kept
    assert fence_locks(pg_shared, pid_a) == []
    assert fence_locks(pg_shared, pid_b) == [(hi & 0xffffffff, lo & 0xffffffff, True)]

    # and the other way round, on the same sessions
    a.send("wait")
    h.wait_until(lambda: fence_locks(pg_shared, pid_a), 5, what="a queued again")
    b.send("unlock")
    b.expect("released")
    a.expect("acquired", timeout=2)
    assert (a.backend_pid(), b.backend_pid()) == (pid_a, pid_b)


def test_lock_timeout_busy_then_retry(drivers, pg_shared, lock_key):
    """A queued wait ends with BUSY at lock_timeout (retry_interval) and the
    session is ready again: the retry after the holder unlocked gets it.
    A try while held is BUSY at once."""
    a = drivers("fb-a", key=lock_key)
    b = drivers("fb-b", "--retry-interval", "0.5", key=lock_key)
    a.connect()
    b.connect()
    pid_b = b.backend_pid()
    a.send("wait")
    a.expect("acquired")
    t0 = time.monotonic()
    b.send("wait")
    b.expect("busy", timeout=3)
    waited = time.monotonic() - t0
    assert 0.4 <= waited < h.bound(2.0), waited
    b.send("try")
    b.expect("busy")
    a.send("unlock")
    a.expect("released")
    b.send("wait")
    b.expect("acquired")
    assert b.backend_pid() == pid_b


def test_unlock_keeps_the_session_past_server_lease(drivers, pg_shared, lock_key):
    """Held, the fence has the server-side lease: unpinged, the server ends
    it after server_lease (the fence of a partitioned leader dies with its
    lock session). Given back with lease_unlock, the same session waits idle
    past server_lease and takes the fence again."""
    hi, lo = halves(lock_key)
    a = drivers("fs-a", "--server-lease", "1", key=lock_key)
    a.connect()
    pid = a.backend_pid()
    a.send("wait")
    a.expect("acquired")
    a.send("ping")
    a.expect("ping_ok")
    a.send("unlock")
    a.expect("released")
    a.quiet(2.5)  # idle_session_timeout (1 s) no more
    assert a.backend_pid() == pid
    # t0 before the take: the server's idle_session_timeout starts when the
    # claim's statement ends, after t0 (taken after "acquired" and two psql
    # reads, a loaded CI's t0 came 0.25 s after it: 0.75 s measured)
    t0 = time.monotonic()
    a.send("wait")
    a.expect("acquired")
    assert a.backend_pid() == pid
    assert fence_locks(pg_shared, pid) == [(hi & 0xffffffff, lo & 0xffffffff, True)]
    # held and silent: the server ends the session after server_lease
    reason = a.expect("lost", "terminated", timeout=5)
    assert "57P05" in reason, reason
    assert 0.95 <= time.monotonic() - t0 < h.bound(3.0)
    h.wait_until(lambda: not fence_locks(pg_shared, pid), 5, what="the fence freed")


def test_fence_held_before_its_claim_answers(drivers, pg_shared, lock_key):
    """The fence is told held as soon as it is granted, its server-side
    lease set after: a ping asked for at once (while that claim may be in
    flight) is answered all the same, every time."""
    a = drivers("fc-a", "--server-lease", "5", "--ping-when-acquired", key=lock_key)
    a.connect()
    for _ in range(20):
        a.send("wait")
        a.expect("acquired")
        a.expect("ping_ok", timeout=2)
        a.send("unlock")
        a.expect("released")


def test_unlock_when_nothing_is_held(drivers, pg_shared, lock_key):
    """On a ready connection lease_unlock has nothing to give back: released
    at once, the connection kept; lease_release closes it."""
    a = drivers("fn-a", key=lock_key)
    a.connect()
    pid = a.backend_pid()
    a.send("unlock")
    a.expect("released")
    assert a.backend_pid() == pid
    a.send("release")
    a.expect("released", "connection")
    h.wait_until(lambda: a.backend_pid() is None, 5, what="the session closed")


def test_unlock_in_lock_mode(drivers, pg_shared, lock_key):
    """lease_unlock on the lock (bigint form): the lock given back, the
    session kept and no longer tagged as the leader's; the next take gets the
    lock again, with a new "leader since"."""
    a = drivers("fl-a", "--lock", "--server-lease", "1", key=lock_key)
    a.connect()
    pid = a.backend_pid()
    a.send("wait")
    assert re.fullmatch(r"key %d, fencing token \d+" % lock_key, a.expect("acquired"))
    assert [l["pid"] for l in pg_shared.lock_holders(lock_key)] == [pid]
    first = re.search(r"/\* pgleader lock %d leader since (%s) \*/$" % (lock_key, STAMP),
                      last_query(pg_shared, a.app))
    assert first, last_query(pg_shared, a.app)
    a.send("unlock")
    a.expect("released")
    assert not pg_shared.lock_holders(lock_key)
    assert a.backend_pid() == pid
    assert last_query(pg_shared, a.app).endswith("/* pgleader lock %d */" % lock_key)
    a.quiet(1.5)  # past server_lease, idle: kept
    a.send("try")
    a.expect("acquired")
    second = re.search(r"leader since (%s) \*/$" % STAMP, last_query(pg_shared, a.app))
    assert second and second.group(1) > first.group(1), last_query(pg_shared, a.app)
    assert a.backend_pid() == pid


# --------------------------------------------------------------------------
# the session: its name, its tag, its end

def test_fence_session_name_and_tag(drivers, pg_shared, lock_key, workdir):
    """The fence's session is named like the node's lock session, and every
    statement says "fence" and the key, never "leader since"; `pgleader
    status` lists it as a fence."""
    hi, lo = halves(lock_key)
    tag = "/* pgleader fence %d */" % lock_key
    a = drivers("ft-a", key=lock_key)
    b = drivers("ft-b", "--retry-interval", "30", key=lock_key)
    a.connect()
    b.connect()
    for d in (a, b):
        assert last_query(pg_shared, d.app).endswith(tag), last_query(pg_shared, d.app)
    a.send("wait")
    a.expect("acquired")
    a.send("ping")
    a.expect("ping_ok")
    assert last_query(pg_shared, a.app) == "SELECT pg_backend_pid() " + tag
    b.send("wait")
    h.wait_until(lambda: fence_locks(pg_shared, b.backend_pid()), 5, what="b queued")
    assert last_query(pg_shared, b.app) == \
        "SELECT pg_advisory_lock($1::int4, $2::int4) " + tag
    acts = {r[0]: r[1:] for r in pg_shared.psql(
        "SELECT application_name, state, wait_event_type FROM pg_stat_activity "
        "WHERE application_name LIKE 'pgleader/ft-%'")}
    assert acts["pgleader/ft-a"][0] == "idle" and acts["pgleader/ft-b"] == ["active", "Lock"]

    r = subprocess.run([h.pgleader_bin(), "status", "--dsn", pg_shared.dsn(),
                        "--lock-key", str(lock_key), "--json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30, cwd=str(workdir))
    assert r.returncode == 3, r  # fences, no leader
    doc = json.loads(r.stdout)
    assert sorted((f["node_id"], f["state"]) for f in doc["fences"]) == [
        ("ft-a", "holding"), ("ft-b", "waiting")], doc
    assert doc["standbys"] == [], doc


def test_terminated_fence_session_is_lost(drivers, pg_shared, lock_key):
    """pg_terminate_backend of the fence's session, held or kept ready: seen
    at once through the socket, LEASE_LOST with FAULT_TERMINATED and the
    server's reason; the fence is free for the next one."""
    a = drivers("fk-a", key=lock_key)
    b = drivers("fk-b", "--retry-interval", "30", key=lock_key)
    a.connect()
    b.connect()
    a.send("wait")
    a.expect("acquired")
    b.send("wait")
    h.wait_until(lambda: fence_locks(pg_shared, b.backend_pid()), 5, what="b queued")
    t0 = time.monotonic()
    assert pg_shared.terminate_backend(a.backend_pid())
    reason = a.expect("lost", "terminated", timeout=2)
    assert time.monotonic() - t0 < h.bound(1.0)
    assert re.fullmatch(r"connection terminated by the server: FATAL: terminating "
                        r"connection due to administrator command \(57P01\)", reason), reason
    b.expect("acquired", timeout=2)

    # a connection kept ready, holding nothing
    a.connect()
    assert pg_shared.terminate_backend(a.backend_pid())
    assert "(57P01)" in a.expect("lost", "terminated", timeout=2)
    # and it connects again
    a.connect()
