"""A standby whose session is ended says which session and what happened,
as the leader does (issue 17, 5): it used to log libpq's raw "FATAL:
terminating connection ... server closed the connection unexpectedly ...".
"""

import re

import pytest

import pgharness as h


@pytest.mark.parametrize("acquire", ["wait", "poll"])
def test_standby_session_terminated_wording(pg, fleet, acquire):
    a = fleet.start("sl-a", command=["sleep", "600"])
    a.wait_for_log(r"acquired leader lease")
    b = fleet.start("sl-b", "--acquire", acquire, command=["sleep", "600"])
    b.wait_for_log(r"waiting for leader lease")
    if acquire == "wait":
        h.wait_queued(pg, fleet.key, "sl-b")
    pid = h.wait_until(lambda: pg.backend_pid("pgleader/sl-b"), 5, what="b's session")
    mark = b.mark()
    pg.terminate_backend(pid)
    # the cadence after a lost session is the fast one (issue 17 item 2)
    m = b.wait_for_log(r"warning: .*retrying (in [\d.]+s|every 0\.1s for up to 15s.*)$",
                       after=mark)
    line = m.group(0)
    # the SQLSTATE is there also when the FATAL ends a query in flight (the
    # lock wait in wait mode; a leader's ping), where libpq keeps only the
    # message: the session's errors are verbose
    assert re.search(r"warning: lock session: connection terminated by the server: FATAL: "
                     r"terminating connection due to administrator command \(57P01\); "
                     r"retrying (in [\d.]+s|every 0\.1s for up to 15s \(the database "
                     r"may be restarting\))$", line), line
    assert "server closed the connection" not in b.text()[mark:], b.text()[mark:]
    b.wait_for_log(r"waiting for leader lease", after=mark)

    # the leader's own loss keeps its wording
    mark = a.mark()
    pg.terminate_backend(pg.backend_pid("pgleader/sl-a"))
    m = a.wait_for_log(r"lost leader lease: .*", after=mark)
    assert re.match(r"lost leader lease: connection terminated by the server: FATAL: "
                    r"terminating connection due to administrator command \(57P01\)",
                    m.group(0)), m.group(0)
