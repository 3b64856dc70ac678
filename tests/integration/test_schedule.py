"""Each tick exactly once across the fleet (DESIGN 10, issue 14): the
leader claims a tick in the ledger before it runs it; no fault runs one
twice, and a tick that falls while no node leads is recorded, not lost.
The jobs take time to stop (they trap SIGTERM), so an overlap would show."""

import os
import re
import signal
import time

import pytest

import pgharness as h
from pgharness import bound

from test_clock import SHIM


def runs(pg, key, job=None):
    """The ledger's rows for this lock: [(job, tick_ms, node, outcome,
    exit_status or None, run_id)], oldest tick first."""
    sql = ("SELECT job, (extract(epoch FROM tick) * 1000)::bigint, node_id, outcome, "
           "exit_status, run_id FROM pgleader.runs WHERE lock_key = %d%s ORDER BY tick, job"
           % (key, " AND job = '%s'" % job if job else ""))
    return [(r[0], int(r[1]), r[2], r[3], int(r[4]) if r[4] != "" else None, int(r[5]))
            for r in pg.psql(sql)]


def ticks_started(ledger, job=None):
    """The ticks the toy jobs were started for, one entry per start."""
    return [e.get("tick") for e in ledger.starts()
            if e.get("tick") not in (None, "-") and (job is None or e.get("job") == job)]


def assert_each_tick_once(pg, key, ledger, every_ms, job="default"):
    """Every tick from the first to the last has one row; every row that
    ran was started once, and no tick was started twice."""
    rows = runs(pg, key, job)
    assert rows, "no run recorded"
    ticks = [r[1] for r in rows]
    assert len(ticks) == len(set(ticks)), "a tick has two rows: %s" % rows
    gaps = [(a, b) for a, b in zip(ticks, ticks[1:]) if b - a != every_ms]
    assert not gaps, "ticks missing between %s\nrows: %s" % (gaps, rows)
    started = ticks_started(ledger, job)
    assert len(started) == len(set(started)), "a tick ran twice: %s" % sorted(started)
    ended = [r for r in rows if r[3] in ("succeeded", "failed", "timed_out", "interrupted")]
    going = [r for r in rows if r[3] == "running"]  # its start line may be on its way
    assert len(ended) <= len(started) <= len(ended) + len(going), \
        "rows that ran %s, starts %s" % (ended + going, started)


def sched(*extra, every="2s"):
    return ("--schedule", "@every " + every) + extra


def wait_rows(pg, key, n, timeout, outcome=None, job=None):
    def enough():
        try:
            got = [r for r in runs(pg, key, job) if outcome is None or r[3] == outcome]
        except RuntimeError:
            return None  # the ledger is not there yet
        return got if len(got) >= n else None
    return h.wait_until(enough, timeout, interval=0.1, what="%d ledger rows" % n)


def test_three_nodes_run_each_tick_once(pg, fleet, ledger, lock_key):
    job = {"after": 0.4, "exit_code": 0, "term_delay": 1.5}
    for n in ("a", "b", "c"):
        fleet.start(n, *sched(), job=job)
    wait_rows(pg, lock_key, 5, bound(20), outcome="succeeded")
    assert_each_tick_once(pg, lock_key, ledger, 2000)
    ledger.assert_no_overlap()
    leaders = {r[2] for r in runs(pg, lock_key)}
    assert len(leaders) == 1, "ticks ran on several nodes without a fault: %s" % leaders


def leader_of(fleet):
    for p in fleet.nodes:
        if p.running() and p.count(r"started run") > 0:
            return p
    raise AssertionError("no node has started a run")


def test_kill9_leader_during_and_between_runs(pg, fleet, ledger, lock_key):
    """A run cut off by kill -9 is recorded interrupted and not run again;
    the next ticks run on another node; no tick twice, none lost."""
    job = {"after": 1.0, "exit_code": 0, "term_delay": 1.5}
    for n in ("a", "b", "c"):
        fleet.start(n, *sched(), job=job)
    first = ledger.wait_for("start", timeout=bound(10))
    victim = next(p for p in fleet.nodes if p.name == first.node)
    victim.kill9()                      # during a run
    wait_rows(pg, lock_key, 2, bound(15), outcome="succeeded")
    h.wait_until(lambda: any(r[3] == "interrupted" for r in runs(pg, lock_key)),
                 bound(10), what="the cut-off run recorded interrupted")
    # between runs: right after a run ended
    second = leader_of(fleet)
    second.wait_for_log(r"run \d+ for tick \S+ succeeded", timeout=bound(10))
    second.kill9()
    n_before = len(runs(pg, lock_key))
    wait_rows(pg, lock_key, n_before + 2, bound(15))
    time.sleep(0.5)
    assert_each_tick_once(pg, lock_key, ledger, 2000)
    cut = [r for r in runs(pg, lock_key) if r[3] == "interrupted"]
    assert len(cut) == 1 and cut[0][2] == first.node, runs(pg, lock_key)
    assert ticks_started(ledger).count(first.get("tick")) == 1


@pytest.fixture
def two_clocks(workdir):
    """Env for two pgleaders whose wall clocks run 90 s ahead and behind."""
    if not os.path.exists(SHIM):
        pytest.fail("no %s: run `make tests/clockshift.so`" % SHIM)
    envs = []
    for name, secs in (("ahead", 90), ("behind", -90)):
        path = os.path.join(str(workdir), "clock-" + name)
        with open(path, "w") as f:
            f.write("%d\n" % secs)
        env = {"LD_PRELOAD": SHIM, "CLOCKSHIFT_FILE": path}
        if h.SANITIZED:
            env["ASAN_OPTIONS"] = h.sanitizer_env()["ASAN_OPTIONS"] + ":verify_asan_link_order=0"
        envs.append(env)
    return envs


def test_wall_clocks_90s_apart_agree_on_ticks(pg, fleet, ledger, lock_key, two_clocks):
    """The database's clock, not the node's, says what a tick is."""
    job = {"after": 0.3, "exit_code": 0, "term_delay": 1}
    a = fleet.start("a", *sched(), job=job, env=two_clocks[0])
    wait_rows(pg, lock_key, 2, bound(10), outcome="succeeded")
    b = fleet.start("b", *sched(), job=job, env=two_clocks[1])
    a.kill9()
    n = len(runs(pg, lock_key))
    wait_rows(pg, lock_key, n + 2, bound(15), outcome="succeeded")
    assert b.count(r"started run") >= 2
    assert_each_tick_once(pg, lock_key, ledger, 2000)
    for r in runs(pg, lock_key):
        assert r[1] % 2000 == 0
    # each run started within a second of its tick, by the real clock
    db_now = int(pg.scalar("SELECT (extract(epoch FROM now()) * 1000)::bigint"))
    last = runs(pg, lock_key)[-1][1]
    assert abs(db_now - last) < 3000, "the newest tick is %d ms from now" % (db_now - last)


@pytest.mark.slow
def test_frozen_leader_wakes_with_ticks_overdue(pg, fleet, ledger, lock_key):
    """A leader frozen past the server lease runs none of the ticks it
    slept through when it wakes: another node claimed them."""
    job = {"after": 0.2, "exit_code": 0, "term_delay": 1}
    a = fleet.start("a", *sched(every="1s"), job=job)
    wait_rows(pg, lock_key, 2, bound(10), outcome="succeeded")
    b = fleet.start("b", *sched(every="1s"), job=job)
    h.wait_queued(pg, lock_key, "b")
    a.signal(signal.SIGSTOP)
    try:
        b.wait_for_log(r"acquired leader lease", timeout=bound(h.FAST_LEASE + 5))
        n = len(runs(pg, lock_key))
        wait_rows(pg, lock_key, n + 2, bound(10), outcome="succeeded")
    finally:
        a.signal(signal.SIGCONT)
    time.sleep(3)
    assert_each_tick_once(pg, lock_key, ledger, 1000)
    ledger.assert_no_overlap()


def test_rerun_interrupted_runs_the_cut_off_tick_once_more(pg, fleet, ledger, lock_key):
    """A run cut off with its leader (its row says running under an older
    token): with --rerun-interrupted the next leader runs that tick again,
    once, after the old term's bound; without it, never."""
    job = {"after": 1.5, "exit_code": 0, "term_delay": 1}
    a = fleet.start("a", *sched(every="1h"), job=job)
    a.wait_for_log(r"acquired leader lease", timeout=bound(10))
    h.wait_until(lambda: pg.scalar("SELECT to_regclass('pgleader.runs') IS NOT NULL") == "t",
                 bound(5), what="the ledger")
    a.kill9()
    # an hourly job has no tick now: this hour's, as a's claim would have
    # left it had a been killed during the run
    tick = int(pg.scalar("SELECT (extract(epoch FROM date_trunc('hour', now())) * 1000)::bigint"))
    pg.psql("INSERT INTO pgleader.runs (lock_key, job, tick, node_id, fencing_token, outcome, "
            "started_at) VALUES (%d, 'default', to_timestamp(%d / 1000.0), 'a', 1, 'running', "
            "now())" % (lock_key, tick))
    b = fleet.start("b", *sched("--rerun-interrupted", every="1h"), job=job)
    first = ledger.wait_for("start", "b", timeout=bound(15))
    assert first.get("tick") == time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(tick / 1000))
    assert b.count(r"recorded interrupted; running it again") == 1
    rows = wait_rows(pg, lock_key, 1, bound(10), outcome="succeeded")
    assert len(rows) == 1 and rows[0][2] == "b"
    b.signal(signal.SIGTERM)
    assert b.wait(bound(10)) == 0
    # without the option, the same cut-off tick stays interrupted
    pg.psql("UPDATE pgleader.runs SET outcome = 'running', fencing_token = 1, "
            "finished_at = NULL WHERE lock_key = %d" % lock_key)
    c = fleet.start("c", *sched(every="1h"), job=job)
    c.wait_for_log(r"recorded interrupted$", timeout=bound(15))
    time.sleep(0.5)
    assert len(ledger.starts()) == 1


def test_run_longer_than_its_interval_skips_ticks(pg, fleet, ledger, lock_key):
    job = {"after": 2.5, "exit_code": 0, "term_delay": 1}
    fleet.start("a", *sched(every="1s"), job=job)
    wait_rows(pg, lock_key, 2, bound(15), outcome="skipped")
    wait_rows(pg, lock_key, 1, bound(10), outcome="succeeded")
    ledger.assert_no_overlap()
    assert_each_tick_once(pg, lock_key, ledger, 1000)


@pytest.mark.parametrize("policy", ["once", "skip"])
def test_fleet_down_across_ticks(pg, fleet, ledger, lock_key, policy):
    """The whole fleet is down for several ticks: they are recorded missed,
    and with missed=once the newest one runs at once when a node leads."""
    job = {"after": 0.2, "exit_code": 0, "term_delay": 1}
    a = fleet.start("a", *sched("--missed", policy), job=job)
    wait_rows(pg, lock_key, 1, bound(10), outcome="succeeded")
    a.signal(signal.SIGTERM)
    assert a.wait(bound(10)) == 0
    down = time.monotonic()
    time.sleep(5.2)
    b = fleet.start("b", *sched("--missed", policy), job=job)
    b.wait_for_log(r"acquired leader lease", timeout=bound(10))
    missed = wait_rows(pg, lock_key, 1, bound(5), outcome="missed")
    assert b.count(r"missed while no node led") == 1
    if policy == "once":
        st = ledger.wait_for("start", "b", timeout=bound(5))
        late = [r for r in runs(pg, lock_key) if r[2] == "b" and r[3] != "missed"][0]
        assert late[1] < max(r[1] for r in missed) + 2001
        assert st.time - down < 5.2 + bound(1.5), "the missed tick did not run at once"
    else:
        time.sleep(0.5)
        assert [r for r in runs(pg, lock_key) if r[2] == "b" and r[3] != "missed"] == [] or \
            all(r[1] > max(m[1] for m in missed) for r in runs(pg, lock_key)
                if r[2] == "b" and r[3] != "missed")
    assert_each_tick_once(pg, lock_key, ledger, 2000)


def test_once_per_from_two_nodes(pg, fleet, ledger, lock_key):
    """Two timers fire in the same window: the second node exits with the
    conflict code and runs nothing."""
    job = {"after": 0.2, "exit_code": 0}
    a = fleet.start("a", "--nonblock", "--once-per", "1h", job=job)
    assert a.wait(bound(10)) == 0
    b = fleet.start("b", "--nonblock", "--once-per", "1h", job=job)
    assert b.wait(bound(10)) == 75
    assert len(ledger.starts()) == 1
    assert "ran already" in b.text()
    rows = runs(pg, lock_key)
    assert len(rows) == 1 and rows[0][3] == "succeeded" and rows[0][1] % 3600000 == 0


def local_window_start(db_ms, zone, hours):
    """The --once-per window holding db_ms as the man page defines it, by
    python's zoneinfo: the zone's local day (or hours), from its first
    instant. For the zones below, away from a DST change."""
    from datetime import datetime, timedelta, timezone
    from zoneinfo import ZoneInfo
    local = datetime.fromtimestamp(db_ms / 1000, tz=ZoneInfo(zone)).replace(tzinfo=None)
    epoch, d = datetime(1970, 1, 1), timedelta(hours=hours)
    start = epoch + ((local - epoch) // d) * d
    return int(start.replace(tzinfo=ZoneInfo(zone)).astimezone(timezone.utc).timestamp() * 1000)


@pytest.mark.parametrize("zone", ["Asia/Kolkata", "America/New_York"])
def test_once_per_window_follows_the_timezone(pg, fleet, ledger, lock_key, zone):
    """issue 25 (10): --once-per 24h windows began at midnight UTC whatever
    --timezone said; they are the zone's local days."""
    job = {"after": 0.2, "exit_code": 0}
    now = lambda: int(pg.scalar("SELECT (extract(epoch FROM now()) * 1000)::bigint"))
    before = now()
    a = fleet.start("a", "--nonblock", "--once-per", "24h", "--timezone", zone, job=job)
    assert a.wait(bound(10)) == 0
    after = now()
    rows = runs(pg, lock_key)
    assert len(rows) == 1 and rows[0][3] == "succeeded", rows
    expected = {local_window_start(before, zone, 24), local_window_start(after, zone, 24)}
    assert rows[0][1] in expected, (rows[0][1], expected)
    assert rows[0][1] % 86400000 != 0  # not a UTC midnight
    b = fleet.start("b", "--nonblock", "--once-per", "24h", "--timezone", zone, job=job)
    assert b.wait(bound(10)) == 75 or local_window_start(now(), zone, 24) != rows[0][1]


def test_role_without_create_exits_69(pg, fleet, ledger, lock_key):
    pg.psql("CREATE ROLE nocreate LOGIN")
    p = fleet.start("a", *sched(), dsn=pg.dsn(user="nocreate"))
    assert p.wait(bound(10)) == 69
    lines = [l for l in p.text().splitlines() if "error" in l]
    assert any("pgleader init-db" in l for l in lines), p.text()
    assert ledger.starts() == []
    assert pg.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = 'pgleader'") == "0"


def jobs_conf(workdir, pg, lock_key, jobs):
    """A daemon's file with jobs, (NAME, {key: value}) each: its path."""
    conf = os.path.join(str(workdir), "jobs.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\n" % (pg.dsn(), lock_key))
        for name, keys in jobs:
            f.write("[job.%s]\n" % name)
            f.write("".join("%s = %s\n" % kv for kv in keys.items()))
    return conf


def test_three_jobs_on_two_nodes_use_two_sessions_each(pg, fleet, ledger, lock_key, workdir):
    cmd = " ".join(h.job_cmd(ledger.path, after=0.2, exit_code=0))
    conf = jobs_conf(workdir, pg, lock_key,
                     [(name, {"command": cmd, "schedule": "@every " + every})
                      for name, every in (("one", "1s"), ("two", "2s"), ("three", "3s"))])
    for n in ("a", "b"):
        fleet.start(n, raw=["-c", conf, "--node-id", n] + list(h.FAST))
    wait_rows(pg, lock_key, 2, bound(15), outcome="succeeded", job="three")
    for name, every in (("one", 1000), ("two", 2000), ("three", 3000)):
        assert_each_tick_once(pg, lock_key, ledger, every, job=name)
    for n in ("a", "b"):
        count = int(pg.scalar("SELECT count(*) FROM pg_stat_activity WHERE "
                              "application_name = 'pgleader/%s'" % n))
        assert count == 2, "node %s has %d sessions" % (n, count)


def test_max_runtime_stops_and_records_timed_out(pg, fleet, ledger, lock_key):
    job = {"after": 30, "exit_code": 0, "term_delay": 0.5}
    fleet.start("a", *sched("--max-runtime", "700ms", every="3s"), job=job)
    rows = wait_rows(pg, lock_key, 1, bound(12), outcome="timed_out")
    assert rows[0][4] is not None
    ledger.assert_no_overlap()


def test_environment_names_job_tick_and_run(pg, fleet, ledger, lock_key, workdir):
    env_file = os.path.join(str(workdir), "env.json")
    fleet.start("a", *sched(), job={"after": 0.2, "exit_code": 0, "env_file": env_file})
    row = wait_rows(pg, lock_key, 1, bound(10), outcome="succeeded")[0]
    import json
    env = json.load(open(env_file))["env"]
    assert env["PGLEADER_JOB"] == "default"
    assert env["PGLEADER_RUN_ID"] == str(row[5]) or int(env["PGLEADER_RUN_ID"]) > row[5]
    assert env["PGLEADER_TICK"].endswith("Z") and "T" in env["PGLEADER_TICK"]
    assert "dsn" not in " ".join(env).lower()


def test_database_restart_during_a_slow_run_gives_no_overlap(pg, fleet, ledger, lock_key):
    """A restart ends both of the leader's sessions while its run takes
    seconds to stop: no fence keeps the other node out, the ledger does
    (issue 17 item 1): the run's row says running under an older term until
    its leader records its end, or the bound passes."""
    slow = h.timing(grace_period="4s", server_lease="8s")
    job = {"after": 60, "exit_code": 0, "term_delay": 2.5}
    a = fleet.start("a", *sched(every="1s"), timing=slow, job=job)
    first = ledger.wait_for("start", "a", timeout=bound(10))
    b = fleet.start("b", *sched(every="1s"), timing=slow, job=job)
    h.wait_queued(pg, lock_key, "b")
    pg.restart(mode="fast")
    ledger.wait_for("stop", "a", pid=first.pid, timeout=bound(10))
    h.wait_until(lambda: len(ledger.starts()) >= 2, bound(15), what="a run after the restart")
    ledger.assert_no_overlap()
    assert a.running() and b.running()


def test_metrics_carry_the_fleets_last_success(pg, fleet, ledger, lock_key):
    """A new leader's pgleader_job_last_success_timestamp_seconds is the
    fleet's, read from the ledger: the alert on it does not fire because
    the node that ran the job went away."""
    job = {"after": 0.2, "exit_code": 0}
    a = fleet.start("a", *sched(), job=job)
    wait_rows(pg, lock_key, 1, bound(10), outcome="succeeded")
    port = h.free_port()
    # hourly on b: it runs nothing itself, the value can only be a's
    b = fleet.start("b", *sched("--http-addr", "127.0.0.1:%d" % port, every="1h"), job=job)
    h.wait_queued(pg, lock_key, "b")
    a.signal(signal.SIGTERM)
    b.wait_for_log(r"acquired leader lease", timeout=bound(10))
    ran = max(float(r[0]) for r in pg.psql(
        "SELECT extract(epoch FROM finished_at) FROM pgleader.runs WHERE node_id = 'a' "
        "AND outcome = 'succeeded'"))

    def metric():
        import urllib.request
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
        for ln in text.splitlines():
            if ln.startswith('pgleader_job_last_success_timestamp_seconds{job="default"}'):
                v = float(ln.split()[-1])
                return v if v > 0 else None
        return None
    seen = h.wait_until(metric, bound(5), interval=0.1, what="the last success in /metrics")
    assert seen >= ran - 0.01
    assert b.count(r"started run") == 0


def test_status_shows_each_jobs_last_run_and_next_tick(pg, fleet, ledger, lock_key, workdir):
    """pgleader status, given the daemon's file, shows each job's last run
    from the ledger and its next tick from the file's schedule."""
    import json
    from test_status import run_status
    cmd = " ".join(h.job_cmd(ledger.path, after=0.1, exit_code=0))
    conf = jobs_conf(workdir, pg, lock_key, [
        ("often", {"command": cmd, "schedule": "@every 1s"}),
        ("hourly", {"command": cmd, "schedule": "0 * * * *"})])
    fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(h.FAST))
    wait_rows(pg, lock_key, 1, bound(10), outcome="succeeded", job="often")
    r = run_status(workdir, "-c", conf, "--json")
    assert r.rc == 0, r.err
    jobs = {j["job"]: j for j in json.loads(r.out)["jobs"]}
    assert jobs["often"]["last_run"]["outcome"] in ("succeeded", "running")
    assert jobs["often"]["last_run"]["node_id"] == "a"
    assert jobs["often"]["next_tick"].endswith("Z")
    # no run recorded yet, but announced by its leader (DESIGN 13)
    assert jobs["hourly"]["last_run"] is None, jobs
    assert jobs["hourly"]["next_tick"].endswith(":00:00Z"), jobs
    text = run_status(workdir, "-c", conf)
    assert text.rc == 0
    line = [l for l in text.out.splitlines() if l.startswith("job:") and "often" in l][0]
    assert " on a " in line and "next tick " in line, text.out


def test_single_command_never_touches_the_ledger(pg, fleet, ledger, lock_key):
    """Without a schedule, job sections or --once-per there is no ledger:
    the single command needs no privilege beyond connecting."""
    a = fleet.start("a", job={"after": 0.5, "exit_code": 0})
    assert a.wait(bound(10)) == 0
    assert pg.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = 'pgleader'") == "0"


def test_each_start_is_one_line_naming_its_job(pg, fleet, ledger, lock_key, workdir):
    """issue 25 (10): a start was two lines ("started command (pid P)" and
    "job often: started run ... (pid P)") and "command exited with status
    S" named no job. One line per start, naming the job; the exit line
    names it too, for a scheduled job and one that runs all the time."""
    cmd = " ".join(h.job_cmd(ledger.path, after=0.2, exit_code=3))
    conf = jobs_conf(workdir, pg, lock_key, [
        ("often", {"command": cmd, "schedule": "@every 1s"}),
        ("always", {"command": cmd, "restart": "always"})])
    a = fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(h.FAST))
    wait_rows(pg, lock_key, 2, bound(10), outcome="failed", job="often")
    a.wait_for_log(r"job always: command exited with status 3", timeout=bound(10))
    a.wait_for_log(r"job often: command exited with status 3", timeout=bound(10))
    a.stop()
    text = a.text()
    assert a.count(r"(?<!job often: )(?<!job always: )started command") == 0, text
    assert a.count(r"(?<!job often: )(?<!job always: )(?<!its )command exited") == 0, text
    for job in ("often", "always"):
        pids = re.findall(r"job %s: started .*\(pid (\d+)\)" % job, text)
        assert pids, "no start of job %s named:\n%s" % (job, text)
        for pid in pids:  # one line per start
            assert a.count(r"started .*\(pid %s\)" % pid) == 1, text


def test_run_that_ended_while_its_leader_was_frozen_is_recorded_as_it_ended(
        pg, fleet, ledger, lock_key):
    """issue 25 (6): a run whose command exited 0 while its leader was
    frozen past the server lease was recorded interrupted, with exit status
    0: the next leader had presumed it cut off. The old leader, awake, saw
    it end by itself: the row says succeeded, as it happened, and the tick
    is not run again."""
    job = {"after": 2.0, "exit_code": 0}
    a = fleet.start("a", *sched(every="5s"), job=job)
    a.wait_for_log(r"acquired leader lease", timeout=bound(10))
    b = fleet.start("b", *sched(every="5s"), job=job)
    h.wait_queued(pg, lock_key, "b")
    assert ledger.wait_for("start", timeout=bound(10)).node == "a"
    a.signal(signal.SIGSTOP)  # the command runs on, ends 2s later
    try:
        b.wait_for_log(r"acquired leader lease", timeout=bound(h.FAST_LEASE + 5))
        h.wait_until(lambda: runs(pg, lock_key)[0][3] == "interrupted",
                     bound(10), what="the next leader's presumption: interrupted")
    finally:
        a.signal(signal.SIGCONT)
    h.wait_until(lambda: runs(pg, lock_key)[0][4] is not None,
                 bound(15), what="the old leader recording the run's end")
    first = runs(pg, lock_key)[0]
    assert first[2] == "a" and (first[3], first[4]) == ("succeeded", 0), runs(pg, lock_key)
    time.sleep(1)
    assert_each_tick_once(pg, lock_key, ledger, 5000)
