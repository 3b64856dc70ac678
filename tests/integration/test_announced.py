"""The jobs a leader announces (DESIGN 11 and 13, issue 24): `pgleader
status` shows every job the leader runs, a nightly one before its first
run; `pause --job` and `resume --job` refuse a name no leader announced
(exit 3, nothing written) unless --force; an announcement of an older term
is refused and a new leader's replaces the old one's list."""

import json
import os
import re

import pgharness as h
from pgharness import bound

from test_status import run_status

TIMING = h.timing()


def write_conf(workdir, pg, key, ledger, jobs, name="jobs.conf"):
    conf = os.path.join(str(workdir), name)
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\n" % (pg.dsn(), key))
        for job, sched in jobs:
            f.write("[job.%s]\ncommand = %s\n" % (job, " ".join(h.job_cmd(ledger.path))))
            if sched:
                f.write("schedule = %s\ntimezone = Europe/Paris\n" % sched)
    return conf


def announced(pg, key):
    if pg.scalar("SELECT to_regclass('pgleader.jobs') IS NOT NULL") != "t":
        return []
    return pg.psql("SELECT job, coalesce(schedule, ''), coalesce(timezone, ''), node_id"
                   " FROM pgleader.jobs WHERE lock_key = %d ORDER BY job" % key)


def cli(workdir, sub, pg, key, *args):
    return run_status(workdir, "--dsn", pg.dsn(), "--lock-key", str(key), *args,
                      subcommand=sub)


def controls(pg, key):
    if pg.scalar("SELECT to_regclass('pgleader.controls') IS NOT NULL") != "t":
        return []
    return pg.psql("SELECT job, kind FROM pgleader.controls WHERE lock_key = %d ORDER BY job"
                   % key)


def test_status_shows_a_nightly_job_before_its_first_run(pg, fleet, ledger, lock_key, workdir):
    conf = write_conf(workdir, pg, lock_key, ledger, [("nightly", "0 3 * * *"), ("steady", None)])
    fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(TIMING))
    h.wait_until(lambda: len(announced(pg, lock_key)) == 2, bound(10), interval=0.1,
                 what="two jobs announced")
    assert announced(pg, lock_key) == [["nightly", "0 3 * * *", "Europe/Paris", "a"],
                                       ["steady", "", "", "a"]]
    st = cli(workdir, "status", pg, lock_key)
    assert st.rc == 0, st
    assert re.search(r"^job:     nightly  schedule 0 3 \* \* \* \(Europe/Paris\)  never run"
                     r"  next tick \d{4}-\d\d-\d\dT0[12]:00:00Z$", st.out, re.M), st
    assert re.search(r"^job:     steady  runs all the time  never run$", st.out, re.M), st
    doc = json.loads(cli(workdir, "status", pg, lock_key, "--json").out)
    jobs = {j["job"]: j for j in doc["jobs"]}
    assert jobs["nightly"]["last_run"] is None, jobs
    assert jobs["nightly"]["schedule"] == "0 3 * * *", jobs
    assert jobs["nightly"]["announced_by"] == "a", jobs
    assert jobs["nightly"]["next_tick"].endswith(":00:00Z"), jobs
    assert jobs["steady"]["schedule"] is None and jobs["steady"]["next_tick"] is None, jobs


def test_pause_names_checked(pg, fleet, ledger, lock_key, workdir):
    conf = write_conf(workdir, pg, lock_key, ledger, [("nightly", "0 3 * * *")])
    # no ledger yet, nothing announced: refused, nothing created
    r = cli(workdir, "pause", pg, lock_key, "--job", "nightly")
    assert r.rc == 3, r
    assert r.err == ('pgleader: pause refused: no node announced job "nightly" of lock %d'
                     ' (jobs announced: none); --force writes it anyway\n' % lock_key), r
    assert controls(pg, lock_key) == []
    fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(TIMING))
    h.wait_until(lambda: announced(pg, lock_key), bound(10), interval=0.1, what="announced")
    r = cli(workdir, "pause", pg, lock_key, "--job", "nosuchjob")
    assert r.rc == 3 and r.out == "", r
    assert "no node announced job \"nosuchjob\"" in r.err and "(jobs announced: nightly)" in r.err, r
    assert controls(pg, lock_key) == []
    r = cli(workdir, "resume", pg, lock_key, "--job", "nosuchjob")
    assert r.rc == 3 and r.err.startswith("pgleader: resume refused: "), r
    r = cli(workdir, "pause", pg, lock_key, "--job", "nightly")
    assert r.rc == 0, r
    assert controls(pg, lock_key) == [["nightly", "pause"]]
    r = cli(workdir, "pause", pg, lock_key, "--job", "nosuchjob", "--force")
    assert r.rc == 0, r
    assert controls(pg, lock_key) == [["nightly", "pause"], ["nosuchjob", "pause"]]
    r = cli(workdir, "resume", pg, lock_key, "--job", "nightly")
    assert r.rc == 0, r
    # --force belongs to the controls only
    r = cli(workdir, "status", pg, lock_key, "--force")
    assert r.rc == 64 and "--force is only valid with" in r.err, r


def test_a_new_leader_replaces_the_list(pg, fleet, ledger, lock_key, workdir):
    """b, configured with other jobs, takes over: its list replaces a's."""
    conf_a = write_conf(workdir, pg, lock_key, ledger, [("one", "@every 1h"), ("two", None)],
                        name="a.conf")
    conf_b = write_conf(workdir, pg, lock_key, ledger, [("one", "@every 2h")], name="b.conf")
    a = fleet.start("a", raw=["-c", conf_a, "--node-id", "a"] + list(TIMING))
    h.wait_until(lambda: len(announced(pg, lock_key)) == 2, bound(10), interval=0.1,
                 what="a's jobs")
    fleet.start("b", raw=["-c", conf_b, "--node-id", "b"] + list(TIMING))
    h.wait_queued(pg, lock_key, "b", timeout=bound(5))
    assert a.stop() == 0
    h.wait_until(lambda: announced(pg, lock_key) == [["one", "@every 2h", "Europe/Paris", "b"]],
                 bound(10), interval=0.1, what="b's list")
