"""SIGHUP reads the file again (DESIGN 13, issue 24): jobs added run from
their next tick, removed ones drain, changed ones take the new settings from
their next run, all without losing the lead (same lock session, same
fencing token) and without touching an always-running job that stayed;
keys that take a restart are kept, with one warning naming them; a file
with an error is one error line and the old configuration stays."""

import os
import signal
import time

import pgharness as h
from pgharness import bound

from test_announced import announced
from test_schedule import runs

TIMING = h.timing(grace_period="2s", server_lease="6s")
STOP_TAKES = 1.0
MARGIN = 1.0


def job_line(ledger, **kw):
    return " ".join(h.job_cmd(ledger.path, term_delay=STOP_TAKES, **kw))


def write(conf, pg, key, ledger, jobs, top=""):
    """jobs: {name: (schedule or None, job_cmd keywords)}."""
    tmp = conf + ".tmp"
    with open(tmp, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\ndrain_timeout = 10s\n%s"
                % (pg.dsn(), key, top))
        for name, (sched, kw) in jobs.items():
            f.write("[job.%s]\ncommand = %s\n" % (name, job_line(ledger, **kw)))
            if sched:
                f.write("schedule = %s\n" % sched)
    os.rename(tmp, conf)


def starts(ledger, job, after=None):
    return [e for e in ledger.starts() if e.get("job") == job
            and (after is None or e.time > after)]


def reload(node, conf_mark=None):
    """SIGHUP; waits for the reload's line; returns the monotonic time sent."""
    t0 = time.monotonic()
    mark = node.mark()
    node.signal(signal.SIGHUP)
    node.wait_for_log(r"reloaded .*: \d+ jobs?|reload failed", timeout=bound(3), after=mark)
    return t0, mark


def assert_one_run_at_a_time(ledger, job):
    iv = sorted(((s.time, ledger.events("stop", pid=s.pid)) for s in starts(ledger, job)))
    for (t_a, stop_a), (t_b, _) in zip(iv, iv[1:]):
        assert stop_a and stop_a[0].time <= t_b, "two runs of %s at once:\n%s" % (job, ledger.text())


V1 = {
    "steady": (None, {}),
    "often": ("@every 1s", {"after": 0.2, "exit_code": 0}),
    "gone": ("@every 1s", {"after": 0.2, "exit_code": 0}),
    "changed": ("@every 1s", {"after": 0.2, "exit_code": 0}),
}


def test_reload_adds_removes_and_changes_jobs(pg, fleet, ledger, lock_key, workdir):
    conf = os.path.join(str(workdir), "jobs.conf")
    write(conf, pg, lock_key, ledger, V1)
    a = fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(TIMING))
    for job in ("steady", "often", "gone", "changed"):
        h.wait_until(lambda: starts(ledger, job), bound(10), what="%s ran" % job)
    steady = starts(ledger, "steady")[0]
    holder = h.wait_holder(pg, lock_key, "a")
    v2 = dict(V1)
    del v2["gone"]
    v2["changed"] = ("@every 1s", {"after": 0.2, "exit_code": 3})
    v2["added"] = ("@every 1s", {"after": 0.2, "exit_code": 0})
    write(conf, pg, lock_key, ledger, v2)
    t0, mark = reload(a)
    a.wait_for_log(r"reloaded .*jobs\.conf: 4 jobs", timeout=1, after=mark)
    a.wait_for_log(r"job gone: removed by a reload", timeout=1, after=mark)
    a.wait_for_log(r"job added: added by a reload", timeout=1, after=mark)
    # added: runs from its next tick; changed: its next run is the new command
    h.wait_until(lambda: starts(ledger, "added", t0), bound(3), what="added ran")
    h.wait_until(lambda: [r for r in runs(pg, lock_key, "changed") if r[3] == "failed"],
                 bound(4), interval=0.1, what="changed's new command (exit 3)")
    time.sleep(2.0)
    # gone: nothing after the reload (a run under way then may end)
    assert not starts(ledger, "gone", t0 + 0.1), ledger.text()
    # the lead kept: the same lock session, the same term
    assert h.wait_holder(pg, lock_key, "a")["pid"] == holder["pid"]
    assert {e.token for e in ledger.starts()} == {steady.token}
    # steady untouched
    assert not ledger.events("term", pid=steady.pid), ledger.text()
    assert len(starts(ledger, "steady")) == 1
    assert announced(pg, lock_key) == [[j, "@every 1s" if j != "steady" else "", "UTC" if j != "steady" else "", "a"]
                                       for j in ("added", "changed", "often", "steady")]
    for job in ("often", "changed", "added", "gone"):
        assert_one_run_at_a_time(ledger, job)
    assert a.count("acquired leader lease") == 1
    assert a.running()


def test_removed_job_drains(pg, fleet, ledger, lock_key, workdir):
    """A job removed while its 3 s run goes on: the run ends by itself, no
    tick of it starts again, the other job goes on."""
    conf = os.path.join(str(workdir), "jobs.conf")
    jobs = {"steady": (None, {}), "slow": ("@every 5s", {"after": 3.0, "exit_code": 0})}
    write(conf, pg, lock_key, ledger, jobs)
    a = fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(TIMING))
    h.wait_until(lambda: starts(ledger, "slow"), bound(10), what="slow ran")
    run = starts(ledger, "slow")[0]
    del jobs["slow"]
    write(conf, pg, lock_key, ledger, jobs)
    t0, mark = reload(a)
    a.wait_for_log(r"job slow: removed by a reload; its run \d+ may finish for up to 10\.0s",
                   timeout=1, after=mark)
    stop = ledger.wait_for("stop", pid=run.pid, timeout=bound(3 + MARGIN + 1))
    assert stop.get("why") == "exit", ledger.text()
    assert not ledger.events("term", pid=run.pid)
    h.wait_until(lambda: [r[3] for r in runs(pg, lock_key, "slow")] == ["succeeded"],
                 bound(3), interval=0.1, what="slow's run recorded succeeded")
    time.sleep(5.0)
    assert len(starts(ledger, "slow")) == 1, ledger.text()
    assert len(starts(ledger, "steady")) == 1 and not ledger.events("term")
    assert [r[0] for r in announced(pg, lock_key)] == ["steady"]


def test_broken_file_and_restart_keys(pg, fleet, ledger, lock_key, workdir):
    """A file with an error: one error line, the jobs go on as they were; a
    change of keys that take a restart: one warning naming them, kept."""
    conf = os.path.join(str(workdir), "jobs.conf")
    jobs = {"steady": (None, {}), "often": ("@every 1s", {"after": 0.1, "exit_code": 0})}
    write(conf, pg, lock_key, ledger, jobs)
    a = fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(TIMING))
    h.wait_until(lambda: starts(ledger, "often"), bound(10), what="often ran")
    steady = starts(ledger, "steady")[0]
    with open(conf, "a") as f:
        f.write("[job.bad]\ncommand = true\nschedule = every now and then\n")
    t0, mark = reload(a)
    line = a.wait_for_log(r".*reload failed: .*jobs\.conf:\d+: .*; the running "
                          r"configuration stays", timeout=1, after=mark)
    assert a.text()[mark:].count("reload failed") == 1
    assert "error" in line.group(0)
    h.wait_until(lambda: starts(ledger, "often", t0 + 0.2), bound(3), what="often goes on")
    # schema and http_addr take a restart: kept, one warning
    port = h.free_port()
    write(conf, pg, lock_key, ledger, jobs,
          top="schema = elsewhere\nhttp_addr = 127.0.0.1:%d\n" % port)
    t1, mark = reload(a)
    a.wait_for_log(r"reload: schema, http_addr changed, which takes a restart of pgleader: "
                   r"kept as they were", timeout=1, after=mark)
    h.wait_until(lambda: starts(ledger, "often", t1 + 0.5), bound(3), what="often goes on")
    assert pg.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = 'elsewhere'") == "0"
    assert not ledger.events("term", pid=steady.pid)
    assert a.count("acquired leader lease") == 1


def test_sighup_goes_to_a_single_command(pg, fleet, ledger, lock_key, workdir):
    """Without jobs, SIGHUP is the command's, as before."""
    a = fleet.start("a", timing=TIMING)
    first = ledger.wait_for("start", "a", timeout=bound(10))
    a.signal(signal.SIGHUP)
    ledger.wait_for("signal", "a", pid=first.pid, timeout=bound(2))
    assert a.count("reload") == 0
