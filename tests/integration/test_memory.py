"""What a node keeps in memory: libmicrohttpd and libcurl are opened only
when --http-addr or --failsafe-peers asks for them (src/dynlib.c), so a plain
node maps neither, nor the libraries they pull in (nghttp2, libssh2,
librtmp, brotli, libpsl). The VmHWM figure itself is in the bench."""

import pytest

import pgharness as h
from pgharness import bound


def mapped(pid):
    """The base names of the shared objects mapped into pid."""
    out = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and ".so" in parts[5]:
                out.add(parts[5].rsplit("/", 1)[-1])
    return out


def has(libs, prefix):
    return any(l.startswith(prefix) for l in libs)


@pytest.mark.parametrize("http", [False, True], ids=["plain", "http"])
def test_libraries_only_when_configured(pg, fleet, ledger, lock_key, http):
    extra = ("--http-addr", "127.0.0.1:%d" % h.free_port()) if http else ()
    a = fleet.start("a", *extra)
    ledger.wait_for("start", "a", timeout=bound(10))
    h.wait_holder(pg, lock_key, "a")
    libs = mapped(a.pid)
    assert has(libs, "libpq.so"), libs
    assert has(libs, "libmicrohttpd.so") == http, libs
    assert not has(libs, "libcurl.so"), libs
    assert not has(libs, "libnghttp2.so"), libs
    assert a.stop() == 0
