"""Pause and resume in the job layer (DESIGN 11, issue 15 item 2): rows of
kind 'pause' in pgleader.controls, written here with psql as `pgleader
pause` writes them. A paused job's run is stopped gracefully within one
ping interval plus the grace period and recorded interrupted; each tick
that falls in the pause is recorded paused and never run later; on resume a
scheduled job runs from its next tick and a job without a schedule starts
at once; a pause by name leaves the other jobs running; a paused --once-per
one-shot exits with the conflict code. The jobs trap SIGTERM and take
STOP_TAKES to stop, so a run that went on would show in the stamps."""

import datetime
import json
import os
import signal
import time
import urllib.request

import pgharness as h
from pgharness import bound

from test_ledger_cli import init_db
from test_schedule import runs, sched, ticks_started, wait_rows

PING = 0.2              # FAST's ping interval: the controls are read with each ping
GRACE = 3.0
STOP_TAKES = 1.5        # the job's own shutdown, inside the grace period
# 0.2 * 3 + 0.4 + 3 = 4 < 6: the timing rule holds
TIMING = h.timing(grace_period="%gs" % GRACE, server_lease="6s")
MARGIN = 1.0            # psql's start-up, the read's round trip, a loaded machine


def pause(pg, key, job=""):
    """Pauses the lock (job '') or one job; returns the monotonic time from
    before the row was written (every bound below counts from it)."""
    t0 = time.monotonic()
    pg.psql("INSERT INTO pgleader.controls (lock_key, job, kind, asked_by) "
            "VALUES (%d, '%s', 'pause', 'test') ON CONFLICT (lock_key, job, kind) "
            "DO UPDATE SET asked_by = EXCLUDED.asked_by, asked_at = now(), until = NULL"
            % (key, job))
    return t0


def resume(pg, key, job=""):
    """Ends the pause as `pgleader resume` does (until now, test-resume
    recorded as who resumed it); returns (monotonic time before, the
    server's time in ms as it ended it: no node can see the resume before)."""
    t0 = time.monotonic()
    got = pg.psql("WITH d AS (UPDATE pgleader.controls SET until = now(), asked_at = now(), "
                  "asked_by = 'test-resume' WHERE lock_key = %d AND job = '%s' "
                  "AND kind = 'pause' AND until IS NULL RETURNING 1) SELECT count(*), "
                  "(extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM d" % (key, job))
    assert got[0][0] == "1", "no pause row to end: %s" % got
    return t0, int(got[0][1])


def tick_ms(text):
    return int(round(datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
                     .timestamp() * 1000))


def wait_ledger(pg):
    h.wait_until(lambda: pg.scalar("SELECT to_regclass('pgleader.controls') IS NOT NULL") == "t",
                 bound(10), interval=0.05, what="the ledger")


def assert_stopped_by_pause(ledger, node, pid, t0):
    """SIGTERM within the ping interval (plus the read), the end within the
    grace period after it: the bound the man page gives."""
    term = ledger.wait_for("term", node, pid=pid, timeout=bound(PING + MARGIN + 2))
    assert term.time - t0 < bound(PING + MARGIN), "SIGTERM %.2fs after the pause" % (
        term.time - t0)
    stop = ledger.wait_for("stop", node, pid=pid, timeout=bound(PING + GRACE + MARGIN + 2))
    assert stop.time - t0 < bound(PING + GRACE + MARGIN), "stopped %.2fs after the pause" % (
        stop.time - t0)
    assert stop.get("why") == "term", stop
    return stop


def test_pause_stops_the_run_and_resume_runs_the_next_tick(pg, fleet, ledger, lock_key):
    every = 2000
    job = {"after": 1.5, "exit_code": 0, "term_delay": STOP_TAKES}
    a = fleet.start("a", *sched(every="2s"), timing=TIMING, job=job)
    first = ledger.wait_for("start", "a", timeout=bound(10))
    t0 = pause(pg, lock_key)
    stop = assert_stopped_by_pause(ledger, "a", first.pid, t0)
    a.wait_for_log(r"job default paused by test at \S+: stopping it", timeout=bound(2))
    run_id = int(first.get("run"))
    h.wait_until(lambda: [r[3] for r in runs(pg, lock_key) if r[5] == run_id] == ["interrupted"],
                 bound(3), interval=0.1, what="the stopped run recorded interrupted")
    # the ticks of the pause are recorded, none runs
    paused = wait_rows(pg, lock_key, 3, bound(3 * every / 1000 + 2), outcome="paused")
    assert len(ledger.starts()) == 1, ledger.text()
    assert all(r[4] is None for r in paused)
    t_resume, db_resume = resume(pg, lock_key)
    nxt = ledger.wait_for("start", "a", count=2, timeout=bound(every / 1000 + PING + MARGIN + 2))
    a.wait_for_log(r"job default resumed by test-resume at \S+", timeout=bound(1))
    # the first tick after the resume was seen runs: at most one tick falls
    # between the row's delete and the next read of the controls
    t = tick_ms(nxt.get("tick"))
    # (50 ms: the node's reading of the server's clock)
    assert db_resume - 50 < t <= db_resume + every + (PING + MARGIN) * 1000, (t, db_resume)
    assert nxt.time - t_resume < bound(2 * every / 1000 + PING + MARGIN)
    wait_rows(pg, lock_key, 1, bound(5), outcome="succeeded")
    # every tick has one row; those of the pause stay paused, even with
    # --missed once (the default), and none of them ever ran
    rows = runs(pg, lock_key)
    ticks = [r[1] for r in rows]
    assert len(ticks) == len(set(ticks)), rows
    assert all(b - a == every for a, b in zip(ticks, ticks[1:])), rows
    paused_ticks = {r[1] for r in rows if r[3] == "paused"}
    started = {tick_ms(s) for s in ticks_started(ledger)}
    assert not paused_ticks & started, "a paused tick ran: %s" % (paused_ticks & started)
    assert all(r[1] < t for r in rows if r[3] == "paused"), rows
    ledger.assert_no_overlap()
    assert a.count(r"job default paused") == 1 and a.count(r"job default resumed") == 1
    assert stop.time < nxt.time


def write_jobs_conf(workdir, pg, lock_key, ledger, port):
    often = " ".join(h.job_cmd(ledger.path, after=0.3, exit_code=0, term_delay=STOP_TAKES))
    steady = " ".join(h.job_cmd(ledger.path, term_delay=STOP_TAKES))
    conf = os.path.join(str(workdir), "jobs.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\nhttp_addr = 127.0.0.1:%d\n"
                % (pg.dsn(), lock_key, port))
        f.write("[job.often]\ncommand = %s\nschedule = @every 1s\n" % often)
        f.write("[job.steady]\ncommand = %s\n" % steady)
    return conf


def starts_of(ledger, job, after=None):
    return [e for e in ledger.starts() if e.get("job") == job
            and (after is None or e.time > after)]


def http_json(port, path):
    return urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5).read().decode()


def test_pause_by_name_leaves_other_jobs_running(pg, fleet, ledger, lock_key, workdir):
    """Pausing often leaves steady running; pausing steady stops it and
    keeps it down; resuming steady starts it at once while often stays
    paused; /status and /metrics say which job is paused and by whom."""
    port = h.free_port()
    conf = write_jobs_conf(workdir, pg, lock_key, ledger, port)
    a = fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(TIMING))
    h.wait_until(lambda: starts_of(ledger, "steady"), bound(10), what="steady started")
    steady = starts_of(ledger, "steady")[0]
    wait_rows(pg, lock_key, 2, bound(10), outcome="succeeded", job="often")

    t0 = pause(pg, lock_key, "often")
    a.wait_for_log(r"job often paused by test at ", timeout=bound(PING + MARGIN + 2))
    n_paused = len([r for r in runs(pg, lock_key, "often") if r[3] == "paused"])
    wait_rows(pg, lock_key, n_paused + 2, bound(4), outcome="paused", job="often")
    assert not starts_of(ledger, "often", after=t0 + bound(PING + MARGIN)), ledger.text()
    assert not ledger.events("term", pid=steady.pid), "steady was stopped"
    assert a.count(r"job steady paused") == 0

    doc = json.loads(http_json(port, "/status"))
    jobs = {j["job"]: j for j in doc["jobs"]}
    assert jobs["often"]["paused"] is True and jobs["often"]["paused_by"] == "test", jobs
    assert jobs["often"]["paused_at"].endswith("Z") or "+" in jobs["often"]["paused_at"]
    assert jobs["steady"]["paused"] is False and jobs["steady"]["paused_by"] is None, jobs
    metrics = http_json(port, "/metrics")
    assert 'pgleader_job_paused{job="often"} 1' in metrics
    assert 'pgleader_job_paused{job="steady"} 0' in metrics

    # steady paused too: stopped gracefully, and not started again
    t1 = pause(pg, lock_key, "steady")
    stop = assert_stopped_by_pause(ledger, "a", steady.pid, t1)
    a.wait_for_log(r"job steady paused by test at \S+: stopping it", timeout=bound(1))
    time.sleep(2.0)
    assert len(starts_of(ledger, "steady")) == 1, "steady ran while paused"

    # steady resumed: at once, whatever its restart backoff; often stays paused
    t2, _ = resume(pg, lock_key, "steady")
    h.wait_until(lambda: len(starts_of(ledger, "steady")) == 2,
                 bound(PING + MARGIN + 2), what="steady started again")
    again = starts_of(ledger, "steady")[1]
    assert again.time - t2 < bound(PING + MARGIN), "steady started %.2fs after the resume" % (
        again.time - t2)
    assert again.time >= stop.time
    a.wait_for_log(r"job steady resumed by test-resume at \S+", timeout=bound(1))
    assert not starts_of(ledger, "often", after=t0 + bound(PING + MARGIN)), ledger.text()

    # often resumed: runs with its next ticks
    t3, _ = resume(pg, lock_key, "often")
    h.wait_until(lambda: starts_of(ledger, "often", after=t3), bound(1 + PING + MARGIN + 1),
                 what="often ran again")
    rows = runs(pg, lock_key, "often")
    ticks = [r[1] for r in rows]
    assert len(ticks) == len(set(ticks)) and all(b - a == 1000 for a, b in zip(ticks, ticks[1:])), rows
    started = {tick_ms(s) for s in ticks_started(ledger, "often")}
    assert not {r[1] for r in rows if r[3] == "paused"} & started
    assert a.running()


def test_lock_paused_before_the_leader_starts(pg, fleet, ledger, lock_key, workdir):
    """A pause of the whole lock in force when the node begins to lead: no
    run at all, every tick recorded paused; a --once-per one-shot exits with
    the conflict code after one line naming who paused it, runs nothing and
    claims nothing; after the resume the one-shot runs."""
    assert init_db(workdir, pg, "pgleader").rc == 0
    pause(pg, lock_key)
    oneshot = {"after": 0.2, "exit_code": 0}
    b = fleet.start("b", "--nonblock", "--once-per", "1h", timing=TIMING, job=oneshot)
    assert b.wait(bound(10)) == 75, b.text()
    lines = [ln for ln in b.text().splitlines() if "paused" in ln and not ln.startswith("#")]
    assert len(lines) == 1 and "paused by test at " in lines[0] and " notice: " in lines[0], lines
    assert ledger.starts() == [] and runs(pg, lock_key) == []
    resume(pg, lock_key)
    c = fleet.start("c", "--nonblock", "--once-per", "1h", timing=TIMING, job=oneshot)
    assert c.wait(bound(10)) == 0, c.text()
    assert len(ledger.starts()) == 1

    # a daemon on another lock, paused before it leads (its own window
    # row above would be its last tick)
    other = lock_key - 1 if lock_key > 0 else lock_key + 1
    pause(pg, other)
    a = fleet.start("a", *sched(every="1s"), key=other, timing=TIMING,
                    job={"after": 0.2, "exit_code": 0, "term_delay": STOP_TAKES})
    a.wait_for_log(r"job default paused by test at ", timeout=bound(10))
    wait_rows(pg, other, 3, bound(6), outcome="paused")
    assert len(ledger.starts()) == 1
    assert [r[3] for r in runs(pg, other)] == ["paused"] * len(runs(pg, other))
    a.signal(signal.SIGTERM)
    assert a.wait(bound(10)) == 0


def test_once_per_paused_while_it_runs_exits_75(pg, fleet, ledger, lock_key, workdir):
    """A one-shot whose job is paused while its command runs stops it (the
    window's run recorded interrupted) and exits with the conflict code."""
    assert init_db(workdir, pg, "pgleader").rc == 0
    a = fleet.start("a", "--nonblock", "--once-per", "1h", timing=TIMING,
                    job={"after": 30, "exit_code": 0, "term_delay": STOP_TAKES})
    first = ledger.wait_for("start", "a", timeout=bound(10))
    t0 = pause(pg, lock_key)
    assert_stopped_by_pause(ledger, "a", first.pid, t0)
    assert a.wait(bound(5)) == 75, a.text()
    assert a.count(r"notice: stopped: job default is paused by test at ") == 1, a.text()
    rows = runs(pg, lock_key)
    assert len(rows) == 1 and rows[0][3] == "interrupted", rows


def test_pause_holds_through_a_failover(pg, fleet, ledger, lock_key):
    """kill -9 of a paused leader: the standby that takes over reads the
    pause before it starts anything, runs nothing and records the ticks
    paused; resumed, it runs the next tick."""
    job = {"after": 0.3, "exit_code": 0, "term_delay": STOP_TAKES}
    a = fleet.start("a", *sched(every="1s"), timing=TIMING, job=job)
    wait_rows(pg, lock_key, 1, bound(10), outcome="succeeded")
    b = fleet.start("b", *sched(every="1s"), timing=TIMING, job=job)
    h.wait_queued(pg, lock_key, "b")
    pause(pg, lock_key)
    a.wait_for_log(r"job default paused by test at ", timeout=bound(PING + MARGIN + 2))
    n_starts = len(ledger.starts())
    a.kill9()
    # a run the pause was stopping (the pause came during a run: 0 of 8
    # here, once on a loaded CI) dies with a, by its guard, and writes no
    # stop: when it was seen gone stands for its end
    ended = {s.pid: h.wait_pid_gone(s.pid, 2) for s in ledger.starts("a")
             if not ledger.events("stop", pid=s.pid)}
    assert None not in ended.values(), "a's run outlived a:\n" + ledger.text()
    b.wait_for_log(r"acquired leader lease", timeout=bound(10))
    # (b may first wait for a run a left recorded running: the old term's bound)
    h.wait_until(lambda: [r for r in runs(pg, lock_key) if r[2] == "b" and r[3] == "paused"][1:],
                 bound(4 + GRACE + 3), interval=0.1, what="b's ticks recorded paused")
    assert len(ledger.starts()) == n_starts and not ledger.starts("b"), ledger.text()
    t_resume, _ = resume(pg, lock_key)
    st = ledger.wait_for("start", "b", timeout=bound(1 + PING + MARGIN + 1))
    assert st.time - t_resume < bound(1 + PING + MARGIN)
    ran = tick_ms(st.get("tick"))
    assert all(r[3] == "paused" for r in runs(pg, lock_key) if r[2] == "b" and r[1] < ran)
    ledger.assert_no_overlap(ended=ended)
