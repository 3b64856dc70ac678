"""pgleader as PID 1, as the Docker image runs it (packaging/docker): in a new
PID namespace (unshare --pid --fork --mount-proc) it leads, reaps the orphan
its command leaves behind, and exits 0 on SIGTERM.

`make package-check` runs this file against the installed /usr/bin/pgleader
too (PGLEADER_BIN)."""

import os
import shlex
import signal
import subprocess

import pytest

import pgharness as h
from pgharness import bound

UNSHARE = "/usr/bin/unshare"
ORPHAN_SECONDS = "1.3"  # distinctive: the orphan is found by its argv


def unshare_argv():
    """unshare's own options: a new PID namespace whose init is pgleader,
    /proc of that namespace, and SIGKILL to pgleader should unshare die
    (the test's clean-up ends unshare). Not root: a user namespace too."""
    argv = ["--pid", "--fork", "--mount-proc", "--kill-child"]
    if not h.is_root():
        argv.insert(0, "--map-root-user")
    return argv


def ns_pid(pid):
    """pid as seen in its own, innermost PID namespace (NSpid's last field)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return None


def is_orphan(pid):
    return h.cmdline(pid).split(b"\0")[:2] == [b"/bin/sleep", ORPHAN_SECONDS.encode()]


@pytest.fixture
def unshare_works():
    probe = subprocess.run([UNSHARE] + unshare_argv() + ["/bin/true"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10)
    if probe.returncode != 0:
        pytest.skip("no new PID namespace here: %s" % probe.stdout.decode().strip())


def test_pid1_reaps_orphans_and_exits_0_on_sigterm(pg, fleet, ledger, lock_key, workdir,
                                                    unshare_works):
    # The command leaves an orphan that exits after ORPHAN_SECONDS, then
    # becomes the toy job.
    job = h.job_cmd(ledger.path, node="pid1")
    script = "(/bin/sleep %s &); exec %s" % (ORPHAN_SECONDS, " ".join(shlex.quote(a) for a in job))
    args = unshare_argv() + [
        h.pgleader_bin(), "--dsn", pg.dsn(), "--lock-key", str(lock_key), "--node-id", "pid1",
    ] + h.FAST + ["--", "/bin/sh", "-c", script]
    outer = h.Pgleader(args, workdir, name="pid1", binary=UNSHARE, use_wrapper=False)
    fleet.nodes.append(outer)  # ended by the fixture, pass or fail

    ledger.wait_for("start", "pid1", timeout=bound(10))
    inner = h.wait_until(lambda: h.children_of(outer.pid), bound(2), what="unshare's child")[0]
    assert ns_pid(inner) == 1, "pgleader is not PID 1 in its namespace"
    assert h.cmdline(inner).split(b"\0")[0] == h.pgleader_bin().encode()
    h.wait_holder(pg, lock_key, "pid1")

    # The orphan is re-parented to pgleader, PID 1, and reaped once it exits.
    orphan = h.wait_until(lambda: [p for p in h.children_of(inner) if is_orphan(p)],
                          bound(2), what="the orphan re-parented to PID 1")[0]
    assert h.wait_pid_gone(orphan, bound(float(ORPHAN_SECONDS) + 2)), "the orphan did not exit"
    h.wait_until(lambda: not h.zombies_of(inner), bound(1), what="PID 1 to reap the orphan")
    assert h.proc_stat(orphan) is None, "the orphan is still in the process table"
    assert outer.running()

    # docker stop: SIGTERM to PID 1.
    os.kill(inner, signal.SIGTERM)
    assert outer.wait(bound(10)) == 0
    outer.wait_for_log(r"received SIGTERM, shutting down")
    outer.wait_for_log(r"released leader lease")
    assert ledger.wait_for("stop", "pid1", timeout=1).get("why") == "term"
    h.wait_until(lambda: not pg.lock_holders(lock_key), bound(5), what="the lock to be released")
