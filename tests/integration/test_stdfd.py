"""Started with descriptors 0, 1 and 2 closed, pgleader opens them on
/dev/null before anything else: no log line lands in its database session
(DESIGN 6, issue 7 item 11)."""

import re
import time

import pgharness as h
from pgharness import bound


class LogLinesInSession(AssertionError):
    """Log lines went into the lock connection: what the expected failure
    below must fail with, and nothing else."""


def test_closed_std_fds_do_not_reach_the_session(pg, fleet, ledger, lock_key):
    # bash closes the three and execs pgleader: same pid, nothing in between.
    args = ["-c", 'exec 0<&- 1>&- 2>&-; exec "$0" "$@"', h.pgleader_bin(),
            "--dsn", pg.dsn(), "--lock-key", str(lock_key), "--node-id", "a"] + h.FAST + [
            "--"] + h.job_cmd(ledger.path)
    a = h.Pgleader(args, fleet.workdir, name="a", binary="/bin/bash", use_wrapper=False)
    fleet.nodes.append(a)  # ended with the others
    try:
        st = ledger.wait_for("start", "a", timeout=bound(10))
    except AssertionError:
        st = None  # the evidence is below
    fds = h.fd_targets(a.pid)

    # 3 s of leading, or of trying to: a pgleader/a session seen every 100 ms.
    seen, deadline = set(), time.monotonic() + 3.0
    while time.monotonic() < deadline:
        seen.update(r["pid"] for r in pg.activity() if r["application_name"] == "pgleader/a")
        time.sleep(0.1)
    ended = [l for l in pg.log().splitlines()
             if "pgleader/a" in l and re.search(r"unexpected|invalid frontend message|FATAL", l)]
    # two sessions, the lock's and the fence's, the same ones all along
    if st is None or len(seen) != 2 or ended or len(ledger.starts()) != 1:
        raise LogLinesInSession(
            "sessions seen %s, %d command starts, pgleader's descriptors 0-2 %s, server log:\n%s" % (
                sorted(seen), len(ledger.starts()), {n: fds.get(n) for n in (0, 1, 2)},
                "\n".join(ended[:20])))
    assert h.wait_holder(pg, lock_key, "a")["pid"] in seen
    assert [fds.get(n) for n in (0, 1, 2)] == ["/dev/null"] * 3, fds
    assert h.pid_alive(st.pid)
    assert a.stop() == 0
