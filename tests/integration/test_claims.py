"""A tick's claim against locks held by others (DESIGN 10, issue 25 item
3): a claim valid only if its node still holds the lock when the row is
written, not only when the statement began; a tick that could not be
claimed is a warning and is planned as missed, never silently lost. The
jobs trap SIGTERM and take a second and a half to stop."""

import datetime
import re
import time

import pgharness as h
from pgharness import bound

from test_schedule import runs, sched, ticks_started, wait_rows
from test_status import Session

EVERY = 1000
JOB = {"after": 0.3, "exit_code": 0, "term_delay": 1.5}
# the fence session's lock_timeout is the retry interval: a claim waits on
# a row lock up to that long before it fails
TIMING = h.timing(retry_interval="6s")


def claim_waiting(pg, node):
    """The backend of node's claim when it waits for a lock, or None."""
    return pg.scalar("SELECT pid FROM pg_stat_activity WHERE application_name = '%s'"
                     " AND wait_event_type = 'Lock' AND query LIKE '%%.terms AS t%%'"
                     % h.app_name(node)) or None


def test_claim_that_waited_on_the_terms_row_rechecks_the_lock(pg, fleet, ledger,
                                                               lock_key, workdir):
    """Another session holds the lock's row of terms (SELECT ... FOR
    UPDATE) while the leader's claim waits on it, and the leader's lock
    session is ended meanwhile: once the row is free the claim writes no
    run (0.4.0 wrote one, recorded it interrupted, and ran it nowhere,
    without a word); the leader says which tick it did not claim; the
    ticks that fired while the claim waited are not logged as skipped for
    a run that had ended; the next leader records the unclaimed tick (run
    or missed): no hole in the ledger."""
    a = fleet.start("a", *sched(every="1s"), job=JOB, timing=TIMING)
    wait_rows(pg, lock_key, 2, bound(15), outcome="succeeded")
    fleet.start("b", *sched(every="1s"), job=JOB, timing=TIMING)
    h.wait_queued(pg, lock_key, "b")
    holder = Session(pg, workdir, "terms-holder")
    try:
        holder.send("BEGIN; SELECT * FROM pgleader.terms WHERE lock_key = %d FOR UPDATE;"
                    % lock_key)
        h.wait_until(lambda: pg.psql("SELECT 1 FROM pg_stat_activity WHERE application_name"
                                     " = 'terms-holder' AND state = 'idle in transaction'"),
                     bound(5), what="the terms row locked")
        h.wait_until(lambda: claim_waiting(pg, "a"), bound(3), interval=0.05,
                     what="a's claim waiting on the terms row")
        time.sleep(2.2)  # two ticks fire while the claim waits
        lock_pid = h.wait_until(lambda: [l["pid"] for l in pg.lock_holders(lock_key)
                                         if l["application_name"] == h.app_name("a")],
                                bound(2), what="a's lock session")[0]
        assert pg.terminate_backend(lock_pid)
        h.wait_holder(pg, lock_key, "b")
        holder.send("COMMIT;")
        a.wait_for_log(r"tick \S+ not run: this node's lock session no longer holds "
                       r"the lock", timeout=bound(5))
        n = len(runs(pg, lock_key))
        wait_rows(pg, lock_key, n + 3, bound(15))
        b_ran = h.wait_until(lambda: [r for r in runs(pg, lock_key)
                                      if r[2] == "b" and r[3] == "succeeded"],
                             bound(10), what="a run by b")
        assert b_ran
    finally:
        holder.close()
    rows = runs(pg, lock_key)
    started = set(ticks_started(ledger))
    ghosts = [r for r in rows if r[3] in ("interrupted", "running", "succeeded")
              and h_tick(r[1]) not in started]
    assert not ghosts, "rows of runs that never started: %s\nrows: %s" % (ghosts, rows)
    text = a.text()
    assert "is still going" not in text, "a tick skipped for a run that had ended:\n%s" % text
    assert re.search(r"skipped: the claim of tick \S+ is still waiting", text), text
    unclaimed = re.findall(r"tick (\S+) not run: this node's lock session", text)
    assert unclaimed, text
    ticks = [r[1] for r in rows]
    assert len(ticks) == len(set(ticks)), rows
    gaps = [(x, y) for x, y in zip(ticks, ticks[1:]) if y - x != EVERY]
    assert not gaps, "ticks without a row between %s\nrows: %s" % (gaps, rows)
    for t in unclaimed:
        assert any(h_tick(r[1]) == t for r in rows), \
            "the unclaimed tick %s has no row: %s" % (t, rows)
    ledger.assert_no_overlap()


def h_tick(ms):
    """A tick in ms as PGLEADER_TICK and the log write it (RFC 3339)."""
    d = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return d.strftime("%Y-%m-%dT%H:%M:%S") + ("Z" if ms % 1000 == 0 else ".%03dZ" % (ms % 1000))
