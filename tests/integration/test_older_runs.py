"""A run an older term left recorded running (DESIGN 10, issue 25 item 7):
each run records the server it began on (system identifier, timeline,
postmaster start), and a new leader waits for such a run only when the
server changed since (a restart or a failover ended both of the old
leader's sessions, so no fence kept the new one out). On the same server
the new leader holds the fence, so the old run is over: the job's next
tick runs at once. The restart case is test_schedule's
test_database_restart_during_a_slow_run_gives_no_overlap."""

import os
import time

import pgharness as h
from pgharness import bound

GRACE = 5.0
# the wait 0.4.0 made after a kill -9: ping_interval * ping_failures +
# ping_timeout + grace_period = 0.2 * 3 + 0.4 + 5 = 6 s
TIMING = h.timing(grace_period="%gs" % GRACE, server_lease="10s")
OLD_WAIT = 0.2 * 3 + 0.4 + GRACE
JOBS = ("always", "every1", "every2")


def write_conf(workdir, pg, key, ledger):
    cmd = " ".join(h.job_cmd(ledger.path, after=30, exit_code=0, term_delay=1.5))
    conf = os.path.join(str(workdir), "three.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\n" % (pg.dsn(), key))
        f.write("[job.always]\ncommand = %s\n" % cmd)
        f.write("[job.every1]\ncommand = %s\nschedule = @every 1s\n" % cmd)
        f.write("[job.every2]\ncommand = %s\nschedule = @every 2s\n" % cmd)
    return conf


def first_start(ledger, node, job):
    got = [e for e in ledger.starts(node) if e.get("job") == job]
    return got[0] if got else None


def test_kill9_of_the_leader_next_ticks_run_at_once(pg, fleet, ledger, lock_key, workdir):
    """Three jobs (one always on, two scheduled, every run longer than a
    tick), kill -9 of the leader while they run: on the new leader each
    starts within 2.5 s of the kill (0.4.0: the two scheduled ones waited
    the 6 s bound of a database restart that never happened); the old
    runs are recorded interrupted."""
    conf = write_conf(workdir, pg, lock_key, ledger)
    a = fleet.start("a", raw=["-c", conf, "--node-id", "a"] + list(TIMING))
    for job in JOBS:
        h.wait_until(lambda: first_start(ledger, "a", job), bound(10),
                     what="job %s started on a" % job)
    fleet.start("b", raw=["-c", conf, "--node-id", "b"] + list(TIMING))
    h.wait_queued(pg, lock_key, "b")
    time.sleep(0.5)
    old = [first_start(ledger, "a", job).pid for job in JOBS]
    t0 = time.monotonic()
    a.kill9()
    for pid in old:  # the commands die with their pgleader (PR_SET_PDEATHSIG)
        h.wait_pid_gone(pid, bound(1))
    took = {}
    for job in JOBS:
        e = h.wait_until(lambda: first_start(ledger, "b", job), bound(OLD_WAIT + 5),
                         interval=0.02, what="job %s started on b" % job)
        took[job] = e.time - t0
    print("kill -9 to each job's start on the new leader: %s" %
          ", ".join("%s %.2fs" % (j, took[j]) for j in JOBS))
    for job in JOBS:
        assert took[job] < bound(2.5), "job %s started %.2fs after the kill: %s" % (
            job, took[job], took)
    interrupted = {r[0] for r in pg.psql(
        "SELECT job FROM pgleader.runs WHERE lock_key = %d AND node_id = 'a'"
        " AND outcome = 'interrupted'" % lock_key)}
    assert interrupted == {"every1", "every2"}, interrupted


def test_a_040_ledger_is_upgraded(pg, fleet, ledger, lock_key, workdir):
    """A ledger of pgleader 0.4.0 (version 2: runs without the server's
    identity) is brought to this version's layout by the first node that
    may, as a missing one is made; its runs then record the server."""
    from test_ledger_cli import init_db
    assert init_db(workdir, pg, "pgleader").rc == 0
    pg.psql("ALTER TABLE pgleader.runs DROP COLUMN system_identifier,"
            " DROP COLUMN timeline_id, DROP COLUMN postmaster_start;"
            " UPDATE pgleader.meta SET version = 2")
    fleet.start("a", "--schedule", "@every 1s", job={"after": 0.1, "exit_code": 0})
    h.wait_until(lambda: pg.psql(
        "SELECT 1 FROM pgleader.runs WHERE lock_key = %d AND outcome = 'succeeded'" % lock_key,
        check=False), bound(10), interval=0.1, what="a run recorded")
    assert pg.psql("SELECT version FROM pgleader.meta") == [["5"]]
    row = pg.psql("SELECT r.system_identifier = c.system_identifier,"
                  " r.postmaster_start = pg_postmaster_start_time(), r.timeline_id"
                  " FROM pgleader.runs r, pg_control_system() c WHERE r.lock_key = %d"
                  " ORDER BY r.tick LIMIT 1" % lock_key)
    assert row == [["t", "t", "1"]], row
