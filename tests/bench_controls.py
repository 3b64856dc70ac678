#!/usr/bin/python3
"""pgleader's operator controls benchmark (`make bench`; not part of `make
check`), with the default timings (ping interval 1 s), two nodes and
tests/stampjob, which stops at once on SIGTERM (so that the figures are
pgleader's, not the command's):

  switchover_stop   `pgleader switchover` run -> the old command's stop
                    stamp: how long the leader takes to hear of it (within
                    one ping interval and a round trip).
  switchover_start  `pgleader switchover` run -> the new command's start
                    stamp; checked: never before the old one stopped.
  switchover_cli    the command's own wall time until it exits 0.
  pause_stop        `pgleader pause` -> the command's stop stamp.
  resume_start      `pgleader resume` -> the command's start stamp.

Output: per part n, median, p90, p99, max and min in milliseconds. Every
process it starts is ended by PID, the cluster removed, on any exit.

    /usr/bin/python3 tests/bench_controls.py [--rounds 10]
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration"))

import pgharness as h  # noqa: E402
from bench_ticks import line  # noqa: E402

STAMPJOB = os.environ.get("PGLEADER_STAMPJOB") or os.path.join(h.REPO, "tests", "stampjob")


def events(path, kind):
    """[(node, pid, mono)] of the stampjob lines of this kind."""
    out = []
    for ln in h.read_text(path).splitlines():
        p = ln.split()
        if len(p) >= 5 and p[0] == kind and p[-1] == ".":
            out.append((p[1], int(p[2]), float(p[3][2:])))
    return out


class Bench:
    def __init__(self, opts):
        self.opts = opts
        self.work = h.make_tempdir("pgleader-bench-controls")
        self.cluster = h.PgCluster("bench")
        self.ledger = os.path.join(self.work, "stamps")
        self.conf = os.path.join(self.work, "pgleader.conf")
        self.nodes = []
        self.failures = []
        self.ms = {k: [] for k in ("switchover_stop", "switchover_start", "switchover_cli",
                                   "pause_stop", "resume_start")}

    def cli(self, *args):
        t0 = time.monotonic()
        r = subprocess.run([h.pgleader_bin()] + list(args) + ["-c", self.conf],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        if r.returncode != 0:
            self.failures.append("%s: exit %d: %s" % (args[0], r.returncode, r.stderr))
        return t0, time.monotonic()

    def wait_stamp(self, kind, count, what):
        h.wait_until(lambda: len(events(self.ledger, kind)) >= count, 30, interval=0.005,
                     what=what)
        return events(self.ledger, kind)[count - 1]

    def switchovers(self):
        for _ in range(self.opts.rounds):
            starts, stops = len(events(self.ledger, "start")), len(events(self.ledger, "stop"))
            t0, t1 = self.cli("switchover", "--wait", "60s")
            stop = self.wait_stamp("stop", stops + 1, "the old command's stop")
            start = self.wait_stamp("start", starts + 1, "the new command's start")
            if start[2] < stop[2]:
                self.failures.append("switchover: the new command started %.3fs before the "
                                     "old one stopped" % (stop[2] - start[2]))
            self.ms["switchover_stop"].append((stop[2] - t0) * 1000)
            self.ms["switchover_start"].append((start[2] - t0) * 1000)
            self.ms["switchover_cli"].append((t1 - t0) * 1000)
            time.sleep(1.5)  # the old leader back in the queue

    def pauses(self):
        for _ in range(self.opts.rounds):
            starts, stops = len(events(self.ledger, "start")), len(events(self.ledger, "stop"))
            t0, _ = self.cli("pause")
            stop = self.wait_stamp("stop", stops + 1, "the paused command's stop")
            self.ms["pause_stop"].append((stop[2] - t0) * 1000)
            time.sleep(0.5)
            t1, _ = self.cli("resume")
            start = self.wait_stamp("start", starts + 1, "the resumed command's start")
            self.ms["resume_start"].append((start[2] - t1) * 1000)
            time.sleep(0.5)

    def run(self):
        self.cluster.start()
        with open(self.conf, "w") as f:
            f.write("[pgleader]\ndsn = %s\nlock_name = bench-controls\n" % self.cluster.dsn())
        print("pgleader controls benchmark: %s; load average %s" % (
            h.pgleader_bin(), open("/proc/loadavg").read().split()[:3]))
        for n in ("a", "b"):
            self.nodes.append(h.Pgleader(["-c", self.conf, "--node-id", n, "--", STAMPJOB,
                                          self.ledger], self.work, name=n, use_wrapper=False))
        self.wait_stamp("start", 1, "the first command")
        time.sleep(1.5)  # the other node queued
        self.switchovers()
        self.pauses()
        for k, v in self.ms.items():
            print(line(k, v))
        for f in self.failures:
            print("FAILED: " + f)
        return 1 if self.failures else 0

    def cleanup(self):
        for p in self.nodes:
            p.cleanup()
        self.cluster.destroy()
        shutil.rmtree(self.work, ignore_errors=True)


def main(argv):
    ap = argparse.ArgumentParser(description="pgleader operator controls benchmark")
    ap.add_argument("--rounds", type=int, default=10, help="switchovers and pauses (10)")
    opts = ap.parse_args(argv)
    b = Bench(opts)
    try:
        return b.run()
    finally:
        b.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
