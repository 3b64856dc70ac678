"""overlap = queue | replace (DESIGN 13, issue 24): a tick that falls while
the job's run goes is run once that run has ended (queue: one waits at
most, the newest) or replaces it (the run stopped gracefully, recorded
interrupted, the new tick run once it is gone). The runs trap SIGTERM and
take STOP_TAKES to stop, so a new run started before the old one was gone
shows as an overlap in the toy jobs' ledger."""

import os

import pgharness as h
from pgharness import bound

from test_schedule import runs

STOP_TAKES = 1.0
TIMING = h.timing(grace_period="3s", server_lease="8s")


def start(fleet, node, workdir, pg, key, ledger, overlap, run, every):
    cmd = h.job_cmd(ledger.path, after=run, exit_code=0, term_delay=STOP_TAKES)
    conf = os.path.join(str(workdir), "overlap.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\n" % (pg.dsn(), key))
        f.write("[job.slow]\ncommand = %s\nschedule = @every %s\noverlap = %s\n"
                % (" ".join(cmd), every, overlap))
    return fleet.start(node, raw=["-c", conf, "--node-id", node] + list(TIMING))


def assert_one_at_a_time(ledger):
    """Each run started after the one before it stopped."""
    starts = sorted(ledger.starts(), key=lambda e: e.time)
    for prev, nxt in zip(starts, starts[1:]):
        stop = ledger.wait_for("stop", pid=prev.pid, timeout=bound(10))
        assert nxt.time >= stop.time, "two runs at once:\n" + ledger.text()


def test_queue_runs_the_tick_after(pg, fleet, ledger, lock_key, workdir):
    """Runs of 2.5 s every 2 s: each tick that falls during a run waits
    for it and starts within a moment of its end; none is skipped (only
    one falls during each run); nothing runs twice at once."""
    a = start(fleet, "a", workdir, pg, lock_key, ledger, "queue", run=2.5, every="2s")
    h.wait_until(lambda: len(ledger.starts()) >= 4, bound(20), what="four runs")
    a.wait_for_log(r"job slow: tick \S+ queued: the run for \S+ is still going", timeout=1)
    starts = sorted(ledger.starts(), key=lambda e: e.time)[:4]
    for prev, nxt in zip(starts, starts[1:]):
        stop = ledger.wait_for("stop", pid=prev.pid, timeout=bound(5))
        assert nxt.time >= stop.time, ledger.text()
        assert nxt.time - stop.time < bound(1.0), (nxt.time - stop.time, ledger.text())
    rows = runs(pg, lock_key, "slow")
    assert not [r for r in rows if r[3] == "skipped"], rows
    ticks = [r[1] for r in rows]
    assert len(ticks) == len(set(ticks)), rows


def test_queue_keeps_the_newest(pg, fleet, ledger, lock_key, workdir):
    """Runs of 5 s every 1 s: of the ticks that fall during a run the
    newest waits and the others are recorded skipped; each tick one row."""
    a = start(fleet, "a", workdir, pg, lock_key, ledger, "queue", run=5, every="1s")
    h.wait_until(lambda: len(ledger.starts()) >= 2, bound(15), what="two runs")
    a.wait_for_log(r"job slow: queued tick \S+ skipped: tick \S+ takes its place", timeout=1)
    rows = runs(pg, lock_key, "slow")
    skipped = [r for r in rows if r[3] == "skipped"]
    assert len(skipped) >= 3, rows
    first, second = sorted(ledger.starts(), key=lambda e: e.time)[:2]
    stop = ledger.wait_for("stop", pid=first.pid, timeout=1)
    assert second.time >= stop.time
    # the second run is the newest tick that fell during the first: every
    # tick between the two has a row, recorded skipped
    t1 = [r for r in rows if r[5] == int(first.get("run"))][0][1]
    t2 = [r for r in rows if r[5] == int(second.get("run"))][0][1]
    between = [r for r in rows if t1 < r[1] < t2]
    assert len(between) == (t2 - t1) // 1000 - 1 >= 3, rows
    assert {r[3] for r in between} == {"skipped"}, rows
    assert_one_at_a_time(ledger)


def test_replace_stops_the_run(pg, fleet, ledger, lock_key, workdir):
    """Runs of 30 s every 3 s: at the next tick the run is stopped
    (SIGTERM, it takes STOP_TAKES), recorded interrupted, and the new tick
    starts once it is gone."""
    a = start(fleet, "a", workdir, pg, lock_key, ledger, "replace", run=30, every="3s")
    first = h.wait_until(lambda: ledger.starts(), bound(10), what="a run")[0]
    term = ledger.wait_for("term", pid=first.pid, timeout=bound(5))
    stop = ledger.wait_for("stop", pid=first.pid, timeout=bound(STOP_TAKES + 3))
    second = ledger.wait_for("start", count=2, timeout=bound(5))
    assert second.time >= stop.time, ledger.text()
    assert term.time - first.time < bound(3.5), term.time - first.time
    a.wait_for_log(r"job slow: tick \S+ replaces run %s \(overlap = replace\): stopping it"
                   % first.get("run"), timeout=1)
    h.wait_until(lambda: [r[3] for r in runs(pg, lock_key, "slow")
                          if r[5] == int(first.get("run"))] == ["interrupted"],
                 bound(3), interval=0.1, what="the first run recorded interrupted")
    assert_one_at_a_time(ledger)
