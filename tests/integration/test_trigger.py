"""pgleader trigger (DESIGN 13, issue 24): a run of a job asked for now is
written in the ledger; the leader claims it (its row takes the request's
time as its tick) and runs it once across the fleet, whatever fails;
refused, with nothing written, for an unknown, paused or always-running
job. A request that comes while the job runs waits for that run, and
several run one after another, each once. The runs take RUN seconds and
trap SIGTERM, so two runs at once would show as an overlap."""

import os
import signal
import threading
import time

import pgharness as h
from pgharness import bound

from test_schedule import runs
from test_status import run_status

RUN = 1.5               # a run's length
STOP_TAKES = 1.0        # its own shutdown after SIGTERM
# 0.2 * 3 + 0.4 + 2 = 3 < 6: the timing rule holds
TIMING = h.timing(grace_period="2s", server_lease="6s")


def write_conf(workdir, pg, key, ledger, exit_code=0, every="1h", extra=""):
    """Job "nightly" whose ticks do not fall during a test (runs only when
    asked), and "steady", which runs all the time."""
    cmd = h.job_cmd(ledger.path, after=RUN, exit_code=exit_code, term_delay=STOP_TAKES)
    conf = os.path.join(str(workdir), "trigger.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\n%s" % (pg.dsn(), key, extra))
        f.write("[job.nightly]\ncommand = %s\nschedule = @every %s\n" % (" ".join(cmd), every))
        f.write("[job.steady]\ncommand = %s\n"
                % " ".join(h.job_cmd(ledger.path, term_delay=STOP_TAKES)))
    return conf


def start(fleet, node, conf, *extra):
    return fleet.start(node, raw=["-c", conf, "--node-id", node] + list(TIMING) + list(extra))


def trigger(workdir, pg, key, *args, timeout=30):
    return run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(key), *args,
                      subcommand="trigger", timeout=timeout)


def nightly_starts(ledger, node=None):
    return [e for e in ledger.starts(node) if e.get("job") == "nightly"]


def manual_rows(pg, key):
    """The runs asked for now: [(run_id, outcome, exit_status, trigger)]."""
    return [(int(r[0]), r[1], int(r[2]) if r[2] != "" else None, r[3]) for r in pg.psql(
        "SELECT run_id, outcome, exit_status, trigger FROM pgleader.runs WHERE lock_key = %d"
        " AND trigger IS NOT NULL ORDER BY tick" % key)]


def waiting_requests(pg, key):
    return int(pg.psql("SELECT count(*) FROM pgleader.triggers WHERE lock_key = %d" % key)[0][0])


def lead(fleet, pg, key, ledger, conf, node="a"):
    p = start(fleet, node, conf)
    h.wait_holder(pg, key, node, timeout=bound(5))
    p.wait_for_log(r"announced|job steady: started", timeout=bound(5))
    ledger.wait_for("start", node, timeout=bound(5))
    return p


def test_trigger_runs_once_and_waits(pg, fleet, ledger, lock_key, workdir):
    """--wait exits with the run's exit status; the row names who asked;
    runs shows it; the log says who asked; the metric counts it."""
    conf = write_conf(workdir, pg, lock_key, ledger, exit_code=5)
    a = lead(fleet, pg, lock_key, ledger, conf)
    start(fleet, "b", conf)
    h.wait_queued(pg, lock_key, "b", timeout=bound(5))
    r = trigger(workdir, pg, lock_key, "--job", "nightly", "--wait", "20s")
    assert r.rc == 5, r
    assert "asked for a run of job nightly now" in r.out, r
    assert "started on node a" in r.out and "failed (exit status 5)" in r.out, r
    rows = manual_rows(pg, lock_key)
    assert len(rows) == 1 and rows[0][1:3] == ("failed", 5), rows
    assert "pgleader-trigger" in rows[0][3], rows
    assert len(nightly_starts(ledger)) == 1, ledger.text()
    a.wait_for_log(r"job nightly: started run %d asked for now by pgleader-trigger"
                   % rows[0][0], timeout=1)
    listed = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(lock_key), "--job",
                        "nightly", subcommand="runs")
    assert "manual by pgleader-trigger" in listed.out, listed
    assert waiting_requests(pg, lock_key) == 0


def test_two_triggers_run_one_after_another(pg, fleet, ledger, lock_key, workdir):
    """Two clients at once, a third while the first run goes: three runs,
    one at a time, each once."""
    conf = write_conf(workdir, pg, lock_key, ledger)
    lead(fleet, pg, lock_key, ledger, conf)
    results = []

    def ask():
        results.append(trigger(workdir, pg, lock_key, "--job", "nightly", "--wait", "30s",
                               timeout=40))
    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    h.wait_until(lambda: nightly_starts(ledger), bound(5), what="the first run")
    ask()
    for t in threads:
        t.join()
    assert [x.rc for x in results] == [0, 0, 0], results
    h.wait_until(lambda: len(manual_rows(pg, lock_key)) == 3, bound(5), interval=0.1,
                 what="three runs")
    assert [row[1] for row in manual_rows(pg, lock_key)] == ["succeeded"] * 3
    started = nightly_starts(ledger)
    assert len(started) == 3, ledger.text()
    stops = sorted(e.time for e in ledger.events("stop") if e.pid in {s.pid for s in started})
    for s, prev_stop in zip(sorted(x.time for x in started)[1:], stops):
        assert s >= prev_stop, "two runs of nightly at once:\n" + ledger.text()


def test_trigger_through_failover(pg, fleet, ledger, lock_key, workdir):
    """The request is written while the leader is frozen (SIGSTOP: it
    cannot read it), then the leader is killed (-9): the next leader runs
    it, once."""
    conf = write_conf(workdir, pg, lock_key, ledger)
    a = lead(fleet, pg, lock_key, ledger, conf)
    b = start(fleet, "b", conf)
    h.wait_queued(pg, lock_key, "b", timeout=bound(5))
    a.signal(signal.SIGSTOP)
    r = trigger(workdir, pg, lock_key, "--job", "nightly")
    assert r.rc == 0, r
    a.signal(signal.SIGKILL)
    h.wait_until(lambda: nightly_starts(ledger, "b"), bound(15), what="b runs it")
    h.wait_until(lambda: [x[1] for x in manual_rows(pg, lock_key)] == ["succeeded"],
                 bound(5), interval=0.1, what="the run's end")
    assert not nightly_starts(ledger, "a"), ledger.text()
    time.sleep(1.5)  # b's next read finds nothing more to run
    assert len(nightly_starts(ledger)) == 1, ledger.text()
    assert b.running()


def test_refused_unknown_paused_and_always_running(pg, fleet, ledger, lock_key, workdir):
    """Exit 3, nothing written: a job no node announced, a paused job, a
    job without a schedule. --force writes an unknown name (which this
    leader leaves alone). Without --job, the lock's one scheduled job."""
    conf = write_conf(workdir, pg, lock_key, ledger)
    lead(fleet, pg, lock_key, ledger, conf)
    r = trigger(workdir, pg, lock_key, "--job", "nightlyy")
    assert r.rc == 3 and "no node announced job \"nightlyy\"" in r.err, r
    assert "announced with a schedule: nightly" in r.err, r
    r = trigger(workdir, pg, lock_key, "--job", "steady")
    assert r.rc == 3 and "has no schedule" in r.err, r
    p = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(lock_key), "--job", "nightly",
                   subcommand="pause")
    assert p.rc == 0, p
    r = trigger(workdir, pg, lock_key, "--job", "nightly")
    assert r.rc == 3 and "is paused" in r.err, r
    assert waiting_requests(pg, lock_key) == 0
    assert manual_rows(pg, lock_key) == []
    r = trigger(workdir, pg, lock_key, "--job", "gone", "--force")
    assert r.rc == 0, r
    assert waiting_requests(pg, lock_key) == 1
    assert not nightly_starts(ledger), ledger.text()
    p = run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(lock_key), "--job", "nightly",
                   subcommand="resume")
    assert p.rc == 0, p
    r = trigger(workdir, pg, lock_key, "--wait", "20s")  # the one scheduled job
    assert r.rc == 0 and "job nightly" in r.out, r
    assert len(nightly_starts(ledger)) == 1


def test_trigger_while_running_waits(pg, fleet, ledger, lock_key, workdir):
    """A tick's run goes on (overlap = skip): the request is not skipped;
    it starts once the run has ended."""
    conf = write_conf(workdir, pg, lock_key, ledger, every="3s")
    lead(fleet, pg, lock_key, ledger, conf)
    first = h.wait_until(lambda: nightly_starts(ledger), bound(6), what="a tick's run")[0]
    r = trigger(workdir, pg, lock_key, "--job", "nightly", "--wait", "20s")
    assert r.rc == 0, r
    stop = ledger.wait_for("stop", pid=first.pid, timeout=1)
    manual = [e for e in nightly_starts(ledger) if e.time > first.time][0]
    assert manual.time >= stop.time, ledger.text()
    assert len(manual_rows(pg, lock_key)) == 1
    assert len([x for x in runs(pg, lock_key, "nightly") if x[3] == "succeeded"]) >= 2
