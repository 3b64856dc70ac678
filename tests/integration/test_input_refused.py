"""Small input holes (issue 17, 6.12): an empty lock variable, an empty -c,
`status --nonblock`, a long -c path that cut the reason off its line, and
raw TABs and bytes that are not UTF-8 in text log lines."""

import os

import pytest

import pgharness as h
from pgharness import bound


def lines(p):
    return [l for l in p.text().splitlines() if not l.startswith("# ")]


def refused(p, code, want):
    assert p.wait(bound(5)) == code, p.text()
    assert lines(p) == [want], p.text()


@pytest.mark.parametrize("var", ["PGLEADER_LOCK_KEY", "PGLEADER_LOCK_NAME"])
@pytest.mark.parametrize("mode", ["daemon", "status"])
def test_empty_lock_variable_refused(pg_shared, fleet_shared, ledger, var, mode):
    """Set but empty ("${KEY}" that expanded to nothing) used to mean the
    default key: every other fleet's lock."""
    raw = (["status", "--dsn", pg_shared.dsn()] if mode == "status" else
           ["--dsn", pg_shared.dsn(), "--node-id", "n", "--"] + h.job_cmd(ledger.path))
    p = fleet_shared.start(None, raw=raw, env={var: ""}, name="empty-" + var)
    refused(p, 78, "pgleader: %s is set but empty: set it or unset it" % var)
    assert not ledger.starts()


@pytest.mark.parametrize("raw, want", [
    (["-c", "", "--", "true"], "pgleader: -c: empty file name"),
    (["--config=", "--", "true"], "pgleader: -c: empty file name"),
    (["status", "--nonblock"], "pgleader: --nonblock is not valid with 'pgleader status'"),
])
def test_usage_refused(pg_shared, fleet_shared, raw, want):
    p = fleet_shared.start(None, raw=["--dsn", pg_shared.dsn()] + raw
                           if raw[0] != "status" else raw + ["--dsn", pg_shared.dsn()],
                           name="usage")
    refused(p, 64, want)


def test_long_config_path_keeps_reason(fleet_shared, workdir):
    """A path of 3000 bytes filled the line: the reason was cut off. The
    path is shortened in the middle instead."""
    path = "/" + "d" * 3000 + "/pgleader.conf"
    p = fleet_shared.start(None, raw=["-c", path, "--", "true"], name="longpath")
    assert p.wait(bound(5)) == 78, p.text()
    out = lines(p)
    assert len(out) == 1 and out[0].endswith(": cannot open: File name too long"), out
    assert out[0].startswith("pgleader: /ddd") and "..." in out[0], out
    assert out[0].endswith("d/pgleader.conf: cannot open: File name too long"), out
    assert len(out[0]) < 300, out


def test_text_log_escapes_tab_and_bad_bytes(pg_shared, fleet_shared, ledger, lock_key):
    """A lock name with a TAB (logged with its key) and a host name with a
    byte that is not UTF-8 (quoted by libpq): \\t and \\xNN in text lines."""
    name = "tab\there-%d" % lock_key
    p = fleet_shared.start("n", "--lock-name", name, key=False)
    p.wait_for_log(r"acquired leader lease")
    p.wait_for_log(r'lock name "tab\\there-%d" is lock key' % lock_key)
    assert p.stop() == 0
    q = fleet_shared.start(None, raw=["--nonblock", "--node-id", "m", "--dsn",
                                      "host='no\tsuch\udcffhost' connect_timeout=2", "--",
                                      "true"], name="badhost")
    assert q.wait(bound(10)) == 69, q.text()
    assert 'could not translate host name "no such\\xffhost"' in q.text(), q.text()
    raw = open(os.path.join(fleet_shared.workdir, "n.log"), "rb").read() + \
        open(os.path.join(fleet_shared.workdir, "badhost.log"), "rb").read()
    body = b"\n".join(l for l in raw.splitlines() if not l.startswith(b"# "))
    assert b"\t" not in body and b"\xff" not in body, body
