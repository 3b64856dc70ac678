"""Passwords in forms that libpq reads and redaction did not (issue 17, 6.5):
a URI query parameter whose name is percent-encoded (`?pass%77ord=`), an
unquoted password of two words, and the length of a starred-out password."""

import subprocess

import pytest

import pgharness as h
from pgharness import bound
from test_secrets import PASSWORD, PWUSER, ensure_pwuser


def _ps_output():
    return subprocess.run(["ps", "-eww", "-o", "pid,args"], stdout=subprocess.PIPE,
                          check=True).stdout


@pytest.mark.parametrize("name", ["pass%77ord", "%70assword", "%70ass%77ord", "sslpass%77ord"])
def test_percent_encoded_parameter_not_in_ps(pg_shared, fleet_shared, ledger, lock_key, name):
    """libpq decodes the parameter's name and connects with the password;
    ps shows the argument with the value as four stars, and nothing else
    moved."""
    if h.WRAPPER:
        pytest.skip("the wrapper's own command line shows the arguments")
    pg = pg_shared
    ensure_pwuser(pg)
    if name.startswith("ssl"):  # a key's passphrase: libpq ignores it without a key
        name = "password=%s&%s" % (PASSWORD, name)
    uri = "postgresql://%s@127.0.0.1:%d/postgres?%s=%s&application_name=x" % (
        PWUSER, pg.port, name, PASSWORD)
    rest = ["--lock-key", str(lock_key), "--node-id", "a"] + h.FAST + ["--"] + \
        h.job_cmd(ledger.path)
    p = fleet_shared.start(None, raw=["--dsn", uri] + rest, name="a")
    ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    cmdline = h.cmdline(p.pid)
    assert PASSWORD.encode() not in cmdline and PASSWORD.encode() not in _ps_output()
    args = cmdline.rstrip(b"\0").split(b"\0")
    want = [h.pgleader_bin(), "--dsn", uri.replace(PASSWORD, "****")] + rest
    assert args == [a.encode() for a in want], args
    assert p.stop() == 0
    # the harness's own "# argv" line aside: its redaction knows less
    assert PASSWORD not in "".join(l for l in p.text().splitlines() if not l.startswith("# "))


def test_starred_password_keeps_no_length(pg_shared, fleet_shared, ledger, lock_key):
    """Two passwords of different lengths look the same in ps: four stars,
    and no gap of NULs (blanks in ps) after them."""
    if h.WRAPPER:
        pytest.skip("the wrapper's own command line shows the arguments")
    pg = pg_shared
    ensure_pwuser(pg)
    kv = "host=127.0.0.1 port=%d user=%s dbname=postgres password=%s sslpassword=%s" % (
        pg.port, PWUSER, PASSWORD, "k" * 40)
    rest = ["--lock-key", str(lock_key), "--node-id", "a"] + h.FAST + ["--"] + \
        h.job_cmd(ledger.path)
    p = fleet_shared.start(None, raw=["-d" + kv] + rest, name="a")
    ledger.wait_for("start", "a", timeout=bound(10))
    cmdline = h.cmdline(p.pid)
    args = cmdline.rstrip(b"\0").split(b"\0")
    want = [h.pgleader_bin(), "-d" + kv.replace(PASSWORD, "****").replace("k" * 40, "****")] + rest
    assert args == [a.encode() for a in want], cmdline
    ps = [l for l in _ps_output().decode().splitlines() if l.split()[0] == str(p.pid)]
    assert ps and ps[0].split(None, 1)[1].rstrip() == " ".join(want), ps
    assert p.stop() == 0


FRAGMENTS = ("Zebra-Alpha", "Quokka-Beta")


@pytest.mark.parametrize("how", ["text", "json", "status"])
def test_unquoted_two_word_password(pg_shared, fleet_shared, ledger, how):
    """`password=two words` unquoted: libpq reads "words" as a keyword
    without "=" and quotes it. 78, one line, no fragment of the password."""
    dsn = "host=127.0.0.1 port=%d user=postgres password=%s %s" % (
        (pg_shared.port,) + FRAGMENTS)
    if how == "status":
        raw = ["status", "--dsn", dsn]
    else:
        raw = ["--dsn", dsn, "--node-id", "a", "--log-format", how, "--"] + \
            h.job_cmd(ledger.path)
    p = fleet_shared.start(None, raw=raw, name="two-words-" + how)
    assert p.wait(bound(5)) == 78, p.text()
    out = [l for l in p.text().splitlines() if not l.startswith("# ")]
    assert len(out) == 1 and out[0].startswith("pgleader: invalid dsn: missing \"=\""), out
    for f in FRAGMENTS:  # the harness's own "# argv" line aside
        assert f not in "\n".join(out), out
    assert not ledger.starts()
