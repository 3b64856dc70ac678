"""Steps of the wall clock change nothing (DESIGN 3, issue 7 item 2): a
leader whose clock jumps forward keeps its lease, and one whose clock jumps
back still notices a frozen backend in time. The wall clock of the pgleader
under test, and only its CLOCK_REALTIME, is stepped by the LD_PRELOAD shim
tests/clockshift.so (make tests/clockshift.so)."""

import os
import re
import signal
import time

import pytest

import pgharness as h
from pgharness import bound

SHIM = os.environ.get("PGLEADER_CLOCKSHIFT") or os.path.join(h.REPO, "tests", "clockshift.so")


class ClockStepBroke(AssertionError):
    """The election was fooled by a step of the wall clock: what the
    expected failures below must fail with, and nothing else (a broken shim
    or harness must fail them for real)."""


@pytest.fixture
def shifted(workdir):
    """(env for Fleet.start, set_offset(seconds)): pgleader's wall clock runs
    `seconds` ahead of the real one (behind when negative)."""
    if not os.path.exists(SHIM):
        pytest.fail("no %s: run `make tests/clockshift.so` in %s" % (SHIM, h.REPO))
    path = os.path.join(str(workdir), "clock-offset")

    def set_offset(seconds):
        with open(path + ".tmp", "w") as f:
            f.write("%.3f\n" % seconds)
        os.rename(path + ".tmp", path)  # a reader never sees half a number

    set_offset(0)
    env = {"LD_PRELOAD": SHIM, "CLOCKSHIFT_FILE": path}
    if h.SANITIZED:
        # The sanitizer runtime insists on coming first; the shim is not
        # instrumented and only replaces three libc functions.
        env["ASAN_OPTIONS"] = h.sanitizer_env()["ASAN_OPTIONS"] + ":verify_asan_link_order=0"
    return env, set_offset


def logged_offset(node, mark):
    """Has node log a line now (-v: the forwarding of SIGUSR1 to its command)
    and returns how far the line's timestamp is from the real time."""
    node.signal(signal.SIGUSR1)
    m = node.wait_for_log(r"(?m)^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3}) pgleader\[\d+\] "
                          r"debug: forwarding SIGUSR1", after=mark)
    seen = time.time()
    logged = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + int(m.group(2)) / 1000
    return logged - seen


def step(node, set_offset, seconds):
    """Steps node's wall clock by `seconds` and checks, in its log, that it
    did: a test of the election is only worth something if the step
    reached pgleader."""
    mark = node.mark()
    set_offset(seconds)
    off = logged_offset(node, mark)
    assert abs(off - seconds) < 1.5, (
        "the shim did not step pgleader's wall clock: its log runs %+.1fs from the real time, "
        "%+.1fs were asked for" % (off, seconds))


def lead(fleet, ledger, pg, key, env):
    a = fleet.start("a", "-v", env=env)
    st = ledger.wait_for("start", "a", timeout=bound(10))
    backend = h.wait_holder(pg, key, "a")["pid"]
    time.sleep(0.5)  # a few pings have gone through
    return a, st, backend


def test_shim_steps_pgleaders_wall_clock(pg, fleet, ledger, lock_key, shifted):
    """The shim works: pgleader's log timestamps follow the offset both ways,
    while the job's monotonic clock does not move."""
    env, set_offset = shifted
    a, st, backend = lead(fleet, ledger, pg, lock_key, env)
    assert abs(logged_offset(a, a.mark())) < 1.5
    before = time.monotonic()
    step(a, set_offset, 3600)
    step(a, set_offset, -3600)
    step(a, set_offset, 0)
    # the job records each forwarded SIGUSR1 when it gets to it
    h.wait_until(lambda: len(ledger.events("signal", pid=st.pid)) >= 4, bound(5),
                 what="the job's record of 4 forwarded SIGUSR1")
    signals = ledger.events("signal", pid=st.pid)
    assert len(signals) == 4
    assert all(before - 1 < e.time < time.monotonic() + 1 for e in signals[1:])
    assert a.stop() == 0


def test_forward_step_keeps_the_lease(pg, fleet, ledger, lock_key, shifted):
    """A healthy leader whose wall clock jumps 30 s forward keeps its lease,
    its session and its command."""
    env, set_offset = shifted
    a, st, backend = lead(fleet, ledger, pg, lock_key, env)
    mark = a.mark()
    stepped = time.monotonic()
    step(a, set_offset, 30)
    time.sleep(max(0.0, stepped + 5.0 - time.monotonic()))
    lost = re.findall(r"lost leader lease.*", a.text()[mark:])
    if lost or len(ledger.starts()) != 1 or not h.pid_alive(st.pid):
        raise ClockStepBroke("a 30 s forward step of the wall clock cost the lease: %s\n%s" % (
            lost, ledger.text()))
    assert h.wait_holder(pg, lock_key, "a")["pid"] == backend
    assert a.running()
    assert a.stop() == 0


def test_backward_step_still_loses_a_frozen_lease(pg, fleet, ledger, lock_key, shifted):
    """The leader's backend freezes and its wall clock jumps 60 s back: the
    pings still fail after ping_interval * ping_failures + ping_timeout, not
    a minute later."""
    env, set_offset = shifted
    a, st, backend = lead(fleet, ledger, pg, lock_key, env)
    t0 = time.monotonic()
    h.kill_quietly(backend, signal.SIGSTOP)
    try:
        # At once: the ping in flight was sent before the step.
        step(a, set_offset, -60)
        limit = bound(h.FAST_DETECT + 1.0)
        try:
            term = ledger.wait_for("term", "a", pid=st.pid, timeout=limit + 1.0)
        except AssertionError:
            term = None
        if term is None or term.time - t0 > limit:
            raise ClockStepBroke("a 60 s backward step delayed the loss of a frozen lease past "
                                 "%.1fs: %s" % (limit, term))
        a.wait_for_log(r"lost leader lease: ping timed out")
    finally:
        h.kill_quietly(backend, signal.SIGCONT)
    assert a.stop() == 0
