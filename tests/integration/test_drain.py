"""drain_timeout (DESIGN 13, issue 24): a leader that gives up the lead of
its own will (SIGTERM, a switchover, a higher priority's takeover) starts
no new tick and lets its scheduled run finish, for up to drain_timeout,
before it stops it; a job without a schedule is stopped at once; the lock
is kept until then, so no other node starts anything in between. The runs
take RUN seconds and trap SIGTERM (STOP_TAKES to stop), so a run stopped
early shows a "term" line, and a lock given up early shows another node
holding it while the run still goes."""

import os
import signal
import time

import pgharness as h
from pgharness import bound

from test_schedule import runs, wait_rows
from test_status import run_status

RUN = 3.0               # a scheduled run's length
STOP_TAKES = 1.0        # its own shutdown after SIGTERM, inside the grace period
DRAIN = 10.0            # drain_timeout: longer than a run
# 0.2 * 3 + 0.4 + 2 = 3 < 6: the timing rule holds
TIMING = h.timing(grace_period="2s", server_lease="6s")
MARGIN = 1.0            # a loaded machine, psql's start-up


def write_conf(workdir, pg, key, ledger, name="drain.conf", every="5s", run=RUN,
               drain=DRAIN, steady=True, extra=""):
    """A schedule (a new job runs from its next tick) whose run of `run`
    seconds ends before the next tick, and an always-running job."""
    slow = " ".join(h.job_cmd(ledger.path, after=run, exit_code=0, term_delay=STOP_TAKES))
    conf = os.path.join(str(workdir), name)
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\ndrain_timeout = %gs\n%s"
                % (pg.dsn(), key, drain, extra))
        f.write("[job.slow]\ncommand = %s\nschedule = @every %s\n" % (slow, every))
        if steady:
            f.write("[job.steady]\ncommand = %s\n"
                    % " ".join(h.job_cmd(ledger.path, term_delay=STOP_TAKES)))
    return conf


def start(fleet, node, conf, *extra):
    return fleet.start(node, raw=["-c", conf, "--node-id", node] + list(TIMING) + list(extra))


def starts(ledger, job, node=None):
    return [e for e in ledger.starts(node) if e.get("job") == job]


def first_run(ledger, node):
    """The node's first scheduled run, as it starts."""
    h.wait_until(lambda: starts(ledger, "slow", node), bound(10),
                 what="%s's scheduled run" % node)
    return starts(ledger, "slow", node)[0]


def holders_while(pg, key, pid, ledger):
    """The lock's holders sampled until the run pid stopped: the nodes. A
    sample counts only when the run was still going after it was taken:
    one psql takes tens of milliseconds on a slow machine, and a sample
    that began before the run's end may read the lock after the
    handover."""
    seen = set()
    while True:
        holders = {l["application_name"] for l in pg.lock_holders(key)}
        if ledger.events("stop", pid=pid):
            return seen
        seen.update(holders)
        time.sleep(0.05)


def assert_no_overlap(ledger, first, second):
    """Nothing of node second started before every child of node first
    ended (the harness's assert_no_overlap counts the jobs of one node
    against each other)."""
    ends = [e.time for e in ledger.events("stop", first)]
    assert len(ends) == len(ledger.starts(first)), ledger.text()
    for s in ledger.starts(second):
        assert s.time >= max(ends), "%s started while %s ran:\n%s" % (second, first, ledger.text())


def assert_drained(ledger, run, t0):
    """The run went on to its end (no SIGTERM) after t0, and ended well
    inside the drain."""
    stop = ledger.wait_for("stop", pid=run.pid, timeout=bound(RUN + MARGIN + 2))
    assert not ledger.events("term", pid=run.pid), "the draining run was stopped:\n" + ledger.text()
    assert stop.get("why") == "exit", stop
    assert stop.time - t0 < bound(RUN + MARGIN), stop.time - t0
    return stop


def test_drain_on_sigterm(pg, fleet, ledger, lock_key, workdir):
    """SIGTERM during a 3 s run: the always-running job is stopped at once,
    the run finishes (succeeded), the lock stays with a until then; b
    takes over after, and nothing of b started before the run ended."""
    conf = write_conf(workdir, pg, lock_key, ledger)
    a = start(fleet, "a", conf)
    run = first_run(ledger, "a")
    steady = starts(ledger, "steady", "a")[0]
    b = start(fleet, "b", conf)
    h.wait_queued(pg, lock_key, "b", timeout=bound(5))
    t0 = time.monotonic()
    a.signal(signal.SIGTERM)
    # the always-running job: SIGTERM at once
    term = ledger.wait_for("term", pid=steady.pid, timeout=bound(MARGIN + 1))
    assert term.time - t0 < bound(MARGIN), term.time - t0
    held = holders_while(pg, lock_key, run.pid, ledger)
    assert held <= {h.app_name("a")}, held
    stop = assert_drained(ledger, run, t0)
    assert a.wait(bound(MARGIN + 5)) == 0
    a.wait_for_log(r"draining: 1 run may finish for up to 10\.0s", timeout=1)
    first_b = ledger.wait_for("start", "b", timeout=bound(5))
    assert first_b.time >= stop.time
    wait_rows(pg, lock_key, 1, bound(3), outcome="succeeded", job="slow")
    assert [r[3] for r in runs(pg, lock_key, "slow") if r[5] == int(run.get("run"))] == ["succeeded"]
    assert_no_overlap(ledger, "a", "b")


def test_drain_timeout_runs_out(pg, fleet, ledger, lock_key, workdir):
    """A run longer than drain_timeout: stopped once it ran out (SIGTERM,
    the grace period), recorded interrupted; only then is the lock given
    back."""
    conf = write_conf(workdir, pg, lock_key, ledger, run=8.0, drain=1.5, steady=False)
    a = start(fleet, "a", conf)
    run = first_run(ledger, "a")
    t0 = time.monotonic()
    a.signal(signal.SIGTERM)
    term = ledger.wait_for("term", pid=run.pid, timeout=bound(1.5 + MARGIN + 1))
    assert term.time - t0 > 1.5 - 0.1, term.time - t0
    assert term.time - t0 < bound(1.5 + MARGIN), term.time - t0
    assert a.wait(bound(STOP_TAKES + MARGIN + 3)) == 0
    a.wait_for_log(r"drain_timeout \(1\.5s\) ran out: stopping the runs still going", timeout=1)
    h.wait_until(lambda: [r[3] for r in runs(pg, lock_key, "slow")
                          if r[5] == int(run.get("run"))] == ["interrupted"],
                 bound(3), interval=0.1, what="the run recorded interrupted")


def test_drain_on_switchover(pg, fleet, ledger, lock_key, workdir):
    """pgleader switchover during a 3 s run: the run finishes, the lock
    stays with a until it did; b leads after, and the client exits 0."""
    conf = write_conf(workdir, pg, lock_key, ledger, steady=False)
    a = start(fleet, "a", conf)
    h.wait_holder(pg, lock_key, "a", timeout=bound(5))
    b = start(fleet, "b", conf)
    h.wait_queued(pg, lock_key, "b", timeout=bound(5))
    run = first_run(ledger, "a")
    t0 = time.monotonic()
    r = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(lock_key), "--wait", "30s",
                   subcommand="switchover", timeout=40)
    assert r.rc == 0, r
    stop = assert_drained(ledger, run, t0)
    h.wait_holder(pg, lock_key, "b", timeout=bound(5))
    first_b = ledger.wait_for("start", "b", timeout=bound(5))
    assert first_b.time >= stop.time
    assert a.running()
    ledger.assert_no_overlap()


def test_drain_on_priority_takeover(pg, fleet, ledger, lock_key, workdir):
    """A standby of higher priority asks for the lead during a 3 s run:
    the run finishes before it gets the lock."""
    conf = write_conf(workdir, pg, lock_key, ledger, steady=False)
    a = start(fleet, "a", conf)
    run = first_run(ledger, "a")
    t0 = time.monotonic()
    start(fleet, "b", conf, "--priority", "2", "--priority-delay", "300ms")
    held = holders_while(pg, lock_key, run.pid, ledger)
    assert held <= {h.app_name("a")}, held
    stop = assert_drained(ledger, run, t0)
    a.wait_for_log(r"switchover asked by .* then handing the leader lease to b",
                   timeout=bound(2))
    a.wait_for_log(r"draining: 1 run may finish", timeout=bound(2))
    h.wait_holder(pg, lock_key, "b", timeout=bound(5))
    first_b = ledger.wait_for("start", "b", timeout=bound(5))
    assert first_b.time >= stop.time
    ledger.assert_no_overlap()


def test_no_drain_by_default(pg, fleet, ledger, lock_key, workdir):
    """drain_timeout 0 (the default): SIGTERM stops the run at once, as
    before."""
    conf = write_conf(workdir, pg, lock_key, ledger, drain=0, steady=False)
    a = start(fleet, "a", conf)
    run = first_run(ledger, "a")
    t0 = time.monotonic()
    a.signal(signal.SIGTERM)
    term = ledger.wait_for("term", pid=run.pid, timeout=bound(MARGIN + 1))
    assert term.time - t0 < bound(MARGIN)
    assert a.wait(bound(STOP_TAKES + MARGIN + 3)) == 0
    assert a.count("draining") == 0
