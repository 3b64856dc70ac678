"""Processes that leave the command's process group (setsid) are stopped
with it: pgleader counts the command as gone, and so starts another one or
exits, only once they are gone too (DESIGN 4, issue 7 item 3)."""

import os
import resource
import signal
import subprocess
import time

import pytest

import pgharness as h
from pgharness import bound

# Room for the grandchild's slow stop inside the grace period; the timing
# rule holds: 200ms * 3 + 400ms + 3s = 4s < 6s.
SLOW_STOP = h.timing(grace_period="3s", server_lease="6s")
GRANDCHILD_STOP = 1.0  # what the grandchild takes to stop after SIGTERM


def start_leader(pg, fleet, ledger, key):
    """a leads; its job has a grandchild in a session of its own that takes
    GRANDCHILD_STOP to stop. Returns (node, start event, grandchild's)."""
    command = h.job_cmd(ledger.path, grandchildren=1) + [
        "--grandchildren-setsid", "--grandchildren-term-delay", str(GRANDCHILD_STOP)]
    a = fleet.start("a", timing=SLOW_STOP, command=command)
    st = ledger.wait_for("start", "a", timeout=bound(10))
    g = ledger.wait_for("gstart", "a", timeout=bound(5))
    assert g.get("sid") == str(g.pid) and g.get("pgid") == str(g.pid), (
        "the grandchild did not leave the job's group and session: %r" % g)
    h.wait_holder(pg, key, "a")
    return a, st, g


def assert_stopped_gracefully(ledger, g, before):
    """The grandchild had SIGTERM, took its time and stopped by itself,
    before the moment `before`."""
    terms, stops = ledger.events("gterm", pid=g.pid), ledger.events("gstop", pid=g.pid)
    assert terms, "the setsid grandchild never got SIGTERM:\n%s" % ledger.text()
    assert stops and stops[0].time < before, (
        "the setsid grandchild was still running at %.3f:\n%s" % (before, ledger.text()))
    assert stops[0].time - terms[0].time >= GRANDCHILD_STOP - 0.05


def test_sigterm_exits_after_setsid_grandchild(pg, fleet, ledger, lock_key):
    a, st, g = start_leader(pg, fleet, ledger, lock_key)
    t0 = time.monotonic()
    a.signal(signal.SIGTERM)
    assert a.wait(bound(10)) == 0
    exited = time.monotonic()
    alive = h.pid_alive(g.pid)
    assert not alive, "the setsid grandchild %d outlived pgleader" % g.pid
    assert_stopped_gracefully(ledger, g, exited)
    assert exited - t0 >= GRANDCHILD_STOP - 0.05
    a.wait_for_log(r"sending SIGTERM to 1 process outside the command's process group: %d"
                   % g.pid)


def test_terminated_session_restarts_after_setsid_grandchild(pg, fleet, ledger, lock_key):
    """pg_terminate_backend of the lock session: the leader demotes, and its
    next command (it is the only node, so it leads again) starts only once
    the old grandchild is gone."""
    a, st, g = start_leader(pg, fleet, ledger, lock_key)
    backend = h.wait_holder(pg, lock_key, "a")["pid"]
    assert pg.terminate_backend(backend)
    a.wait_for_log(r"lost leader lease")
    s2 = ledger.wait_for("start", "a", count=2, timeout=bound(10))
    assert_stopped_gracefully(ledger, g, s2.time)
    assert not h.pid_alive(g.pid)
    assert a.stop() == 0


def test_kill9_kills_setsid_grandchild(pg, fleet, ledger, lock_key):
    """pgleader killed with SIGKILL: the guard finds the grandchild by the
    environment pgleader gave the command and kills it too."""
    a, st, g = start_leader(pg, fleet, ledger, lock_key)
    t0 = time.monotonic()
    assert a.kill9() == -signal.SIGKILL
    h.assert_died_with_pgleader(t0, ((st.pid, "command"), (g.pid, "setsid grandchild")))
    assert not ledger.events("gterm"), "SIGKILL, not a graceful stop, was expected"


@pytest.mark.skipif(h.VALGRIND, reason="valgrind keeps descriptors of its own under the limit")
def test_full_descriptor_table_still_stops_setsid_grandchild(pg, fleet, ledger, lock_key):
    """Issue 17 item 6.2: ulimit -n 40, --http-addr, 32 slow HTTP clients
    filling the descriptor table, a job with a setsid grandchild; the lock
    session is terminated. The scan for the grandchild must not read "no
    descriptor left" as "no process left": the next command starts only once
    the grandchild is gone."""
    port = h.free_port()
    command = h.job_cmd(ledger.path, grandchildren=1) + [
        "--grandchildren-setsid", "--grandchildren-term-delay", str(GRANDCHILD_STOP)]
    a = fleet.start("a", "--http-addr", "127.0.0.1:%d" % port, timing=SLOW_STOP,
                    command=command)
    resource.prlimit(a.pid, resource.RLIMIT_NOFILE, (40, 40))
    ledger.wait_for("start", "a", timeout=bound(10))
    g = ledger.wait_for("gstart", "a", timeout=bound(5))
    backend = h.wait_holder(pg, lock_key, "a")["pid"]
    clients = h.SlowHttpClients(port, 32)
    try:
        h.wait_until(lambda: h.fd_count(a.pid) >= 40, bound(10), interval=0.05,
                     what="pgleader's descriptor table full (%d)" % h.fd_count(a.pid))
        assert pg.terminate_backend(backend)
        a.wait_for_log(r"lost leader lease")
        s2 = ledger.wait_for("start", "a", count=2, timeout=bound(15))
    finally:
        clients.close()
    assert_stopped_gracefully(ledger, g, s2.time)
    assert not h.pid_alive(g.pid), "the setsid grandchild %d outlived its stop" % g.pid
    a.wait_for_log(r"sending SIGTERM to 1 process outside the command's process group: %d"
                   % g.pid)
    assert a.stop() == 0


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def guard_of(a):
    """The pid of pgleader a's guard process: its child named pgl... (the
    other one is the job)."""
    def find():
        out = [p for p in h.children_of(a.pid) if comm(p).startswith("pgl")]
        return out[0] if len(out) == 1 else None
    return h.wait_until(find, bound(5), what="the guard process of pid %d" % a.pid)


def test_guard_killed_first_is_replaced(pg, fleet, ledger, lock_key):
    """Issue 17 item 6.3: the guard killed first, then pgleader: a new guard
    took the first one's place and kills the setsid grandchild."""
    a, st, g = start_leader(pg, fleet, ledger, lock_key)
    guard = guard_of(a)
    os.kill(guard, signal.SIGKILL)
    a.wait_for_log(r"guard process \(pid %d\) killed by signal 9: starting a new one" % guard)
    new_guard = h.wait_until(lambda: guard_of(a) != guard and guard_of(a), bound(5),
                             what="a new guard")
    assert h.pid_alive(new_guard)
    t0 = time.monotonic()
    assert a.kill9() == -signal.SIGKILL
    h.assert_died_with_pgleader(t0, ((st.pid, "command"), (g.pid, "setsid grandchild")))


@pytest.mark.skipif(h.VALGRIND, reason="under valgrind pgleader's name is valgrind's")
def test_pkill_pgleader_spares_guard(pg, fleet, ledger, lock_key):
    """Issue 17 item 6.3: `pkill -9 pgleader` (here kept to this pgleader's
    session, which holds pgleader, its guard and its command, not the
    grandchild) does not match the guard, which then kills the setsid
    grandchild."""
    a, st, g = start_leader(pg, fleet, ledger, lock_key)
    guard = guard_of(a)
    a.remember_descendants()
    t0 = time.monotonic()
    r = subprocess.run(["pkill", "-9", "-s", str(a.pid), "pgleader"], timeout=bound(10))
    assert r.returncode == 0
    assert a.wait(bound(10)) == -signal.SIGKILL
    h.assert_died_with_pgleader(t0, ((st.pid, "command"), (g.pid, "setsid grandchild"),
                                     (guard, "guard, once its work was done")))
