"""Retries and on_failure (DESIGN 13, issue 24): a run that fails is tried
again as attempts 2 .. retries+1 of its tick, each claimed in the ledger,
so each runs once across the fleet, on the new leader when the lead moves
between attempts; a run that failed for good has its on_failure command
run once across the fleet, also when the leader is killed right after the
failure. The jobs take time to stop (they trap SIGTERM)."""

import os
import re
import time
import urllib.request

import pgharness as h
from pgharness import bound

EVERY = 12  # seconds: a tick's retries (2 s, then 4 s) end before the next


def attempts(pg, key, job="default"):
    """[(tick_ms, attempt, node, outcome, exit_status, run_id, on_failure)],
    by tick then attempt."""
    sql = ("SELECT (extract(epoch FROM tick) * 1000)::bigint, attempt, node_id, outcome,"
           " COALESCE(exit_status::text, ''), run_id, COALESCE(on_failure, '')"
           " FROM pgleader.runs WHERE lock_key = %d AND job = '%s' ORDER BY tick, attempt"
           % (key, job))
    try:
        rows = pg.psql(sql)
    except RuntimeError:
        return []  # the ledger is not there yet
    return [(int(r[0]), int(r[1]), r[2], r[3], r[4], int(r[5]), r[6]) for r in rows]


def wait_for(pg, key, what, pred, timeout):
    def ok():
        rows = attempts(pg, key)
        return rows if pred(rows) else None
    return h.wait_until(ok, timeout, interval=0.1, what=what)


def retry_args(retries=2, delay="2s", extra=()):
    return ("--schedule", "@every %ds" % EVERY, "--retries", str(retries),
            "--retry-delay", delay) + tuple(extra)


def leader_with(fleet, regex):
    for p in fleet.nodes:
        if p.running() and p.count(regex) > 0:
            return p
    return None


def test_retries_across_a_kill9_between_attempts(pg, fleet, ledger, lock_key):
    """Attempt 1 fails; its leader is killed -9 while attempt 2 waits; the
    new leader reads the ledger and runs attempts 2 and 3 of the same tick,
    each once, after their delays; no attempt 4 (retries = 2)."""
    job = {"after": 0.3, "exit_code": 3, "term_delay": 1.5}
    for n in ("a", "b", "c"):
        fleet.start(n, *retry_args(), job=job)
    first = h.wait_until(lambda: leader_with(fleet, r"attempt 2 in"), bound(EVERY + 10),
                         interval=0.02, what="attempt 1 failed, attempt 2 due")
    first.kill9()
    rows = wait_for(pg, lock_key, "attempts 1 to 3 of the first tick",
                    lambda r: len([x for x in r if x[0] == r[0][0]]) >= 3 and
                    all(x[3] != "running" for x in r if x[0] == r[0][0]), bound(20))
    tick = rows[0][0]
    mine = [r for r in rows if r[0] == tick]
    assert [r[1] for r in mine] == [1, 2, 3], rows
    assert [r[3] for r in mine] == ["failed"] * 3, rows
    assert mine[0][2] == first.name
    assert mine[1][2] != first.name and mine[2][2] != first.name, rows
    time.sleep(1)
    assert len([r for r in attempts(pg, lock_key) if r[0] == tick]) == 3
    # each attempt started once, across the fleet
    runs_started = [e.get("run") for e in ledger.starts()]
    for r in mine:
        assert runs_started.count(str(r[5])) == 1, (r, runs_started)
    ledger.assert_no_overlap()
    # the delays: attempt 3 waited about twice as long as attempt 2
    sql = ("SELECT w FROM (SELECT attempt, extract(epoch FROM started_at -"
           " lag(finished_at) OVER (ORDER BY attempt))::float AS w FROM pgleader.runs"
           " WHERE lock_key = %d AND tick = to_timestamp(%d / 1000.0)) x"
           " WHERE attempt > 1 ORDER BY attempt" % (lock_key, tick))
    waits = [float(v[0]) for v in pg.psql(sql)]
    assert 1.9 <= waits[0] <= bound(2.2 + 2), waits  # 2 s + jitter under 0.2 s
    assert 3.9 <= waits[1] <= bound(4.4 + 2), waits
    new = leader_with(fleet, r"started run %d " % mine[2][5])
    assert new is not None and new.count(r"attempt 3 in") == 1


def onfail_cmd(path, extra=""):
    """An on_failure that appends its environment's facts to path, taking
    a moment (so that a kill -9 of pgleader lands while it runs)."""
    return ("printf '%%s %%s %%s %%s %%s\\n' \"$PGLEADER_RUN_ID\" \"$PGLEADER_OUTCOME\""
            " \"$PGLEADER_EXIT_STATUS\" \"$PGLEADER_JOB\" \"$PGLEADER_ATTEMPT\" >> %s;"
            " sleep 0.5%s" % (path, extra))


def sent_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.split() for l in f if l.strip()]


def test_on_failure_once_per_failed_run_with_kill9_after_a_failure(
        pg, fleet, ledger, lock_key, workdir):
    """Each run that failed for good has its on_failure run once across
    the fleet, marked sent in its row, whether the leader that saw the
    failure is killed -9 right after it or not."""
    out = os.path.join(str(workdir), "onfail.txt")
    job = {"after": 0.2, "exit_code": 5, "term_delay": 1.5}
    args = ("--schedule", "@every 2s", "--on-failure", onfail_cmd(out))
    for n in ("a", "b", "c"):
        fleet.start(n, *args, job=job)
    victim = h.wait_until(lambda: leader_with(fleet, r"run \d+ for tick \S+ failed"), bound(15),
                          interval=0.005, what="a failed run")
    victim.kill9()
    second = h.wait_until(lambda: leader_with(fleet, r"started run"), bound(15),
                          interval=0.05, what="a new leader's run")
    assert second is not victim
    wait_for(pg, lock_key, "three more failed runs",
             lambda r: len([x for x in r if x[3] == "failed"]) >= 4, bound(20))
    for p in fleet.nodes:
        if p.running():
            p.stop()
    time.sleep(1.5)  # the last on_failure commands end (0.5 s each)
    rows = [r for r in attempts(pg, lock_key) if r[3] == "failed"]
    lines = sent_lines(out)
    by_run = {}
    for l in lines:
        by_run[l[0]] = by_run.get(l[0], 0) + 1
    assert all(n == 1 for n in by_run.values()), lines
    # the failure the victim saw: claimed once, by it or by the next leader;
    # run, unless the victim was killed between its claim and the command's
    # start (at most once, not at least once: pgleader(1), Retries and
    # on_failure), which only the victim's own log can show
    first_failed = rows[0]
    assert first_failed[6] == "sent", rows
    if by_run.get(str(first_failed[5])) is None:
        assert first_failed[2] == victim.name and re.search(
            r"running on_failure for run %d " % first_failed[5], victim.text()), (
            first_failed, lines)
    # every other run's, claimed by the survivor that saw it fail: run once
    for r in rows[1:]:
        if r[6] == "sent":
            assert by_run.get(str(r[5])) == 1, (r, lines)
    assert all(l[1] == "failed" and l[2] == "5" and l[3] == "default" and l[4] == "1"
               for l in lines), lines
    # every run that failed before the stop was sent (none lost)
    assert [r for r in rows[:-1] if r[6] != "sent"] == [], rows


def test_on_failure_environment_and_timeout(pg, fleet, ledger, lock_key, workdir):
    """on_failure gets the run's facts in its environment, an empty stdin,
    no PGLEADER_DSN, and is stopped (its whole process group) at
    on_failure_timeout; the metrics count it."""
    env_out = os.path.join(str(workdir), "env.txt")
    pidfile = os.path.join(str(workdir), "sleeper.pid")
    cmd = ("env > %s; cat > %s.stdin; sleep 60 & echo $! > %s; wait"
           % (env_out, env_out, pidfile))
    port = h.free_port()
    job = {"after": 0.2, "exit_code": 7, "term_delay": 1.5}
    a = fleet.start("a", "--schedule", "@every 30s", "--retries", "1", "--retry-delay",
                    "1s", "--on-failure", cmd, "--on-failure-timeout", "1s",
                    "--http-addr", "127.0.0.1:%d" % port, job=job)
    a.wait_for_log(r"running on_failure for run \d+ \(failed, exit status 7\)",
                   timeout=bound(40))
    m = a.wait_for_log(r"on_failure for run (\d+) took longer than 1\.0s "
                       r"\(on_failure_timeout\); stopped", timeout=bound(5))
    run_id = m.group(1)
    env = dict(l.rstrip("\n").split("=", 1) for l in open(env_out) if "=" in l)
    assert env["PGLEADER_JOB"] == "default"
    assert env["PGLEADER_RUN_ID"] == run_id
    assert env["PGLEADER_OUTCOME"] == "failed"
    assert env["PGLEADER_EXIT_STATUS"] == "7"
    assert env["PGLEADER_ATTEMPT"] == "2"  # the last attempt's failure
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", env["PGLEADER_TICK"])
    assert "PGLEADER_DSN" not in env
    assert open(env_out + ".stdin").read() == ""
    sleeper = int(open(pidfile).read())
    h.wait_until(lambda: not h.pid_alive(sleeper), bound(3),
                 what="the on_failure's process group gone")
    rows = attempts(pg, lock_key)
    assert [(r[1], r[3], r[6]) for r in rows[:2]] == [(1, "failed", ""), (2, "failed", "sent")]
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                  timeout=5).read().decode()
    assert 'pgleader_job_on_failure_total{job="default",result="timed_out"} 1' in text, text
    assert 'pgleader_job_retries_total{job="default"} 1' in text, text
    a.stop()


def test_restart_with_a_schedule_is_refused(pg, fleet, ledger, lock_key):
    """issue 24: --restart on-failure with a schedule was ignored without a
    word; it is refused with one line that names --retries."""
    a = fleet.start("a", "--schedule", "@every 2s", "--restart", "on-failure",
                    job={"exit_code": 1})
    assert a.wait(bound(5)) == 64
    assert "--retries" in a.text()
    assert ledger.starts() == []
