"""systemd integration: sd_notify messages on a real NOTIFY_SOCKET, the
watchdog, and journald priority prefixes when JOURNAL_STREAM names stderr."""
import os
import re
import signal
import socket
import time

from pgharness import bound


class NotifySocket:
    """The datagram socket systemd listens on, bound in the test's directory."""

    def __init__(self, path):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.05)
        self.messages = []  # (monotonic time, "KEY=value")

    def collect(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            now = time.monotonic()
            for line in data.decode().splitlines():
                self.messages.append((now, line))

    def wait_for(self, line, timeout):
        deadline = time.monotonic() + bound(timeout)
        while time.monotonic() < deadline:
            if any(m == line for _, m in self.messages):
                return
            self.collect(0.05)
        raise AssertionError("no %r on NOTIFY_SOCKET within %.1fs; got %r" % (
            line, bound(timeout), [m for _, m in self.messages]))

    def lines(self):
        return [m for _, m in self.messages]

    def close(self):
        self.sock.close()


def test_notify_ready_status_watchdog_stopping(pg, fleet, ledger, workdir):
    leader_sock = NotifySocket(workdir / "leader.notify")
    standby_sock = NotifySocket(workdir / "standby.notify")
    try:
        a = fleet.start("a", env={"NOTIFY_SOCKET": leader_sock.path,
                                  "WATCHDOG_USEC": "400000"})
        start = ledger.wait_for("start", "a", timeout=bound(10))
        leader_sock.wait_for("READY=1", 5)
        leader_sock.wait_for("STATUS=leader, command pid %d" % start.pid, 5)
        ready_lines = list(leader_sock.lines())

        b = fleet.start("b", env={"NOTIFY_SOCKET": standby_sock.path})
        standby_sock.wait_for("READY=1", 5)
        standby_sock.wait_for("STATUS=standby: waiting for leader lease", 5)
        assert "STOPPING=1" not in standby_sock.lines()
        # WATCHDOG_USEC is not set for b: it must not ping
        assert "WATCHDOG=1" not in standby_sock.lines()

        # The watchdog pings at half the period from the event loop.
        leader_sock.messages.clear()
        leader_sock.collect(1.0)
        assert "READY=1" in ready_lines and "STOPPING=1" not in ready_lines
        pings = leader_sock.lines().count("WATCHDOG=1")
        assert pings >= 3, "only %d WATCHDOG=1 in 1 s with WatchdogSec=0.4s" % pings

        a.signal(signal.SIGTERM)
        assert a.wait(bound(10)) == 0
        leader_sock.collect(0.2)
        lines = leader_sock.lines()
        assert "STOPPING=1" in lines
        assert "STATUS=shutting down" in lines
        assert "READY=1" not in lines[lines.index("STOPPING=1"):], lines

        # the standby takes over and says so
        standby_sock.wait_for("STATUS=leader, command pid %d"
                              % ledger.wait_for("start", "b", timeout=bound(10)).pid, 5)
        assert b.stop() == 0
    finally:
        leader_sock.close()
        standby_sock.close()


def test_journald_priority_prefixes(pg, fleet, ledger, workdir):
    """With JOURNAL_STREAM naming its stderr, pgleader writes "<N>" priority
    prefixes and no timestamps; without it, timestamps."""
    log = workdir / "journal.log"
    log.touch()  # the harness appends to it: the same inode pgleader's stderr gets
    st = os.stat(log)
    a = fleet.start("a", name="journal",
                    env={"JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)})
    a.wait_for_log(r"(?m)^<6>acquired leader lease \(key ", timeout=bound(10))
    assert a.stop() == 0
    text = a.text()
    own = [l for l in text.splitlines() if l.startswith("<")]
    assert own and all(l[:3] in ("<3>", "<4>", "<5>", "<6>", "<7>") for l in own), text
    # journald adds its own timestamps: pgleader must not
    assert not re.search(r"(?m)^\d{4}-\d\d-\d\dT", text), text
    assert "<6>released leader lease" in text

    b = fleet.start("b", name="plain", env={"JOURNAL_STREAM": "1:1"})
    b.wait_for_log(r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} pgleader\[%d\] info: "
                   r"acquired leader lease" % b.pid, timeout=bound(10))
    assert b.stop() == 0
    assert "<6>" not in b.text()


def mapped_libsystemd(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libsystemd.so" in f.read()


def test_libsystemd_loaded_only_under_systemd(pg, fleet, ledger, workdir):
    """A node started by hand or from a container maps no libsystemd (nor
    libgcrypt, liblzma, ... that it pulls in); one with NOTIFY_SOCKET does."""
    sock = NotifySocket(workdir / "n.notify")
    try:
        a = fleet.start("a")
        ledger.wait_for("start", "a", timeout=bound(10))
        assert not mapped_libsystemd(a.pid)
        b = fleet.start("b", env={"NOTIFY_SOCKET": sock.path})
        sock.wait_for("READY=1", 5)
        assert mapped_libsystemd(b.pid)
        assert a.stop() == 0
        assert b.stop() == 0
    finally:
        sock.close()
