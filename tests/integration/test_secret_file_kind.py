"""--failsafe-secret-file that is not a regular file (issue 17, 6.6): a FIFO
blocked open() for ever with nothing printed. Anything but a regular file is
one line and 78, at once."""

import os
import time

import pytest

import pgharness as h
from pgharness import bound


def kinds(workdir):
    fifo = str(workdir / "secret.fifo")
    os.mkfifo(fifo, 0o600)
    d = workdir / "secret.dir"
    d.mkdir(mode=0o700)
    return {"fifo": fifo, "directory": str(d), "device": "/dev/null"}


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_secret_file_not_regular(pg_shared, fleet_shared, ledger, workdir, lock_key, kind):
    path = kinds(workdir)[kind]
    port = h.free_port()
    t0 = time.monotonic()
    p = fleet_shared.start("a", "--http-addr", "127.0.0.1:%d" % port,
                           "--failsafe-peers", "a=127.0.0.1:%d" % port,
                           "--failsafe-secret-file", path, key=lock_key)
    assert p.wait(bound(5)) == 78, p.text()
    assert time.monotonic() - t0 < bound(3), p.text()
    out = [l for l in p.text().splitlines() if not l.startswith("# ")]
    assert out == ["pgleader: failsafe secret file %s is not a regular file" % path], out
    assert not ledger.starts()
