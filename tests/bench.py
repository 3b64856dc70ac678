#!/usr/bin/python3
"""pgleader failover benchmark (`make bench`; not part of `make check`).

Measures, against one private PostgreSQL started for the whole run, with
fresh pgleader processes and a fresh lock key for every trial:

  kill9_wait_c              kill9_wait with tests/stampjob, a C command
                            that stamps its start with one write: the
                            failover without the toy job's interpreter
                            start-up (~20 ms), closest to pgleader's own cost
  kill9_wait / kill9_poll   kill -9 of the leader -> the standby's command
                            starts (default options; --acquire poll, whose
                            retry_interval is the default 5s: the kill falls
                            at a random point of the standby's poll period)
  kill9_wait_scraped        kill9_wait with --http-addr on both nodes and a
                            scraper (a separate process) fetching /metrics
                            200 times a second from each: must not differ
                            from kill9_wait beyond noise
  kill9_wait_failsafe       kill9_wait with failsafe on (two members): the
                            new leader asks the old one, whose refused
                            connection means "not running"
  metrics_serve             the scraper's GET /metrics, request -> whole
                            answer, on a kept-alive connection (every
                            request of every kill9_wait_scraped trial)
  handover_from_exit        SIGTERM to the leader: old command's exit (its
                            ledger "stop" record) -> the new command starts
  handover_from_sigterm     the same handover, from the SIGTERM
  terminate_to_sigterm      pg_terminate_backend() of the leader's lock
                            session -> its command receives SIGTERM
  promote_to_command        a database failover: a primary and its streaming
                            replica in one multi-host DSN
                            (target_session_attrs=read-write), a leader and a
                            standby; the primary crashes (pg_ctl stop -m
                            immediate), and 1 to 10 s later (uniformly at
                            random: a failover manager's detection time) the
                            replica is promoted: pg_ctl promote issued -> the
                            new command starts; a primary and replica per
                            trial, fewer trials (--promote-trials)
  writable_to_command       the same trials, from the moment the promoted
                            replica accepts writes (pg_is_in_recovery()
                            false, polled every 2 ms): the reconnect figure.
                            After losing a working session pgleader retries
                            every 0.1 s (jittered) for 15 s, then backs off
  restart_to_command        a database restart: pg_ctl stop -m fast, 1 to 5 s
                            down (uniformly at random), started again: the
                            server accepts connections ("ready" in
                            postmaster.pid, polled every 2 ms) -> the command
                            starts again (a leader and a standby; a cluster
                            per trial, --promote-trials of them)
  oneshot_pgleader          wall time of `pgleader --nonblock -- true`, lock
                            free, TCP to 127.0.0.1
  oneshot_flock             wall time of `flock -n FILE true`, for comparison
  oneshot_libpq_floor       wall time of tests/pqfloor: one libpq connection
                            with the same DSN, one pg_try_advisory_lock, exit:
                            what any lock-based one-shot pays at least
  oneshot_fenced_floor      wall time of tests/pqfloor --fenced -- true: two
                            libpq connections opened at once, the lock tried
                            on one, a fence taken on the other, `true` run,
                            exit: what a one-shot that keeps pgleader's
                            promise (the fence) pays at least
  job_start_baseline        Popen of the toy job -> its "start" record: the
                            interpreter start-up that every "command starts"
                            figure above includes
  job_start_baseline_c      the same for tests/stampjob
  peak RSS                  VmHWM of a leader, a standby and the leader's
                            guard process after --rss-seconds of running

Times come from the toy job's ledger (tests/integration/job.py, which stamps
CLOCK_MONOTONIC) and from time.monotonic() taken just before the fault is
injected, so both ends are on the same clock. pgleader runs with its default
settings except --grace-period 2s, which only bounds the clean-up of a
command that ignored SIGTERM (the toy job exits at once on SIGTERM, so no
measured figure depends on it).

Output: the machine, per-trial lines, a summary (n, median, p90, max, min in
milliseconds; p90 by linear interpolation) and a Markdown table for the
README. Every raw sample goes to the CSV (metric, trial, value_ms); the peak
RSS rows are in KiB and their metric names end in _kib.

    /usr/bin/python3 tests/bench.py [--trials 20] [--quick] [--csv PATH]
    make bench BENCH_ARGS='--trials 5 --quick'

Every process it starts is ended by PID on any exit (SIGINT, SIGTERM, SIGHUP,
an error); the PostgreSQL cluster is stopped and its directory removed.
Standard library only.
"""

import argparse
import contextlib
import csv
import http.client
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "integration"))

import pgharness as h  # noqa: E402

POLL_RETRY = 5.0  # pgleader's default retry_interval
STAMPJOB = os.environ.get("PGLEADER_STAMPJOB") or os.path.join(HERE, "stampjob")
PQFLOOR = os.environ.get("PGLEADER_PQFLOOR") or os.path.join(HERE, "pqfloor")
GRACE = "2s"
BENCH_OPTS = ["--grace-period", GRACE]

METRICS = [
    # name, label (console), label (README table)
    ("kill9_wait", "kill -9 leader -> standby command starts, --acquire wait",
     "`kill -9` of the leader -> standby's command starts (wait mode, default)"),
    ("kill9_wait_c", "kill -9 leader -> standby command starts, C command",
     "`kill -9` of the leader -> standby's command starts, with a C command "
     "(`tests/stampjob`)"),
    ("kill9_poll", "kill -9 leader -> standby command starts, --acquire poll",
     "`kill -9` of the leader -> standby's command starts (poll mode, retry 5 s)"),
    ("kill9_wait_scraped", "the same with /metrics scraped 200/s on both nodes",
     "the same, with `/metrics` scraped 200 times a second on both nodes"),
    ("kill9_wait_failsafe", "the same with failsafe on (two members)",
     "the same, with failsafe on (the new leader asks the other member first)"),
    ("metrics_serve", "GET /metrics: request -> whole answer (keep-alive)",
     "time to serve `/metrics` (request -> whole answer, kept-alive connection)"),
    ("handover_from_exit", "SIGTERM handover: old command exits -> new one starts",
     "graceful handover (SIGTERM): old command exits -> new command starts"),
    ("handover_from_sigterm", "SIGTERM handover: SIGTERM -> new command starts",
     "graceful handover: SIGTERM to the leader -> new command starts"),
    ("terminate_to_sigterm", "pg_terminate_backend -> command gets SIGTERM",
     "`pg_terminate_backend` of the lock session -> command gets SIGTERM"),
    ("promote_to_command", "pg_ctl promote -> new command starts (crash 1-10 s before)",
     "database failover: `pg_ctl promote` of the replica -> new command starts "
     "(primary crashed 1 to 10 s before; reconnect backoff up to retry interval 5 s)"),
    ("writable_to_command", "promoted replica writable -> new command starts",
     "database failover: the promoted replica accepts writes -> new command starts"),
    ("restart_to_command", "restarted server ready -> command starts again",
     "database restart (down 1 to 5 s): the server accepts connections -> the "
     "command starts again"),
    ("oneshot_pgleader", "pgleader --nonblock -- true (wall time, lock free)",
     "one-shot `pgleader --nonblock -- true` (lock free), wall time"),
    ("oneshot_flock", "flock -n FILE true (wall time)",
     "one-shot `flock -n FILE true`, wall time"),
    ("oneshot_libpq_floor", "libpq floor: connect, try-lock, exit (wall time)",
     "libpq floor (`tests/pqfloor`: one connection, one `pg_try_advisory_lock`), wall time"),
    ("oneshot_fenced_floor", "fenced floor: 2 sessions, lock, fence, true, exit (wall time)",
     "fenced floor (`tests/pqfloor --fenced -- true`: two sessions at once, the lock, a fence, "
     "the command), wall time"),
    ("job_start_baseline", "toy job start-up (Popen -> start record)",
     "toy job's own start-up (included in the \"command starts\" rows)"),
    ("job_start_baseline_c", "C command start-up (Popen -> start record)",
     "`tests/stampjob`'s own start-up (included in the C command's row)"),
]
LABEL = {m[0]: m[1] for m in METRICS}
README_LABEL = {m[0]: m[2] for m in METRICS}


# --------------------------------------------------------------------------
# Signals: any of these ends the run through the normal clean-up. Inside a
# critical() block (a process being started and registered, the cluster
# being created) the signal is held until the block ends.

class Interrupted(BaseException):
    def __init__(self, signum):
        super().__init__("interrupted by %s" % signal.Signals(signum).name)
        self.signum = signum


_critical = 0
_pending = None
_cleaning = False


def _on_signal(signum, frame):
    global _pending
    if _cleaning:
        return  # the clean-up is under way and bounded: let it finish
    if _critical:
        _pending = signum
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def critical():
    global _critical, _pending
    _critical += 1
    try:
        yield
    finally:
        _critical -= 1
        if _critical == 0 and _pending is not None and not _cleaning:
            sig, _pending = _pending, None
            raise Interrupted(sig)


# --------------------------------------------------------------------------
# A minimal PostgreSQL client (protocol 3, trust authentication, Unix
# socket): cheap to poll with, and it lets the benchmark take its timestamp
# right before the pg_terminate_backend() query leaves, not before a psql
# process starts and connects.

class MiniPg:
    def __init__(self, sockpath, user="postgres", dbname="postgres", appname="pgleader-bench"):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(sockpath)
        self.rfile = self.sock.makefile("rb")
        params = b""
        for k, v in (("user", user), ("database", dbname), ("application_name", appname)):
            params += k.encode() + b"\0" + v.encode() + b"\0"
        body = struct.pack("!i", 196608) + params + b"\0"
        self.sock.sendall(struct.pack("!i", len(body) + 4) + body)
        self.params = {}
        self._results()

    def _read(self, n):
        data = self.rfile.read(n)
        if data is None or len(data) != n:
            raise RuntimeError("PostgreSQL closed the connection")
        return data

    def _results(self):
        rows, err = [], None
        while True:
            kind = self._read(1)
            (length,) = struct.unpack("!i", self._read(4))
            body = self._read(length - 4)
            if kind == b"R":
                (code,) = struct.unpack("!i", body[:4])
                if code != 0:
                    raise RuntimeError("MiniPg: authentication method %d not supported" % code)
            elif kind == b"E":
                fields = {}
                for part in body.split(b"\0"):
                    if part:
                        fields[part[:1]] = part[1:].decode(errors="replace")
                err = "%s (%s)" % (fields.get(b"M", "?"), fields.get(b"C", "?"))
            elif kind == b"S":
                k, v = body.split(b"\0")[:2]
                self.params[k.decode()] = v.decode()
            elif kind == b"D":
                (ncols,) = struct.unpack("!h", body[:2])
                pos, row = 2, []
                for _ in range(ncols):
                    (ln,) = struct.unpack("!i", body[pos:pos + 4])
                    pos += 4
                    if ln < 0:
                        row.append(None)
                    else:
                        row.append(body[pos:pos + ln].decode())
                        pos += ln
                rows.append(row)
            elif kind == b"Z":
                if err:
                    raise RuntimeError("query failed: %s" % err)
                return rows
            # T (row description), C, N, I, K: nothing to keep

    def send(self, sql):
        """Sends a simple query; read its result with results()."""
        data = sql.encode() + b"\0"
        self.sock.sendall(b"Q" + struct.pack("!i", len(data) + 4) + data)

    def results(self):
        return self._results()

    def query(self, sql):
        self.send(sql)
        return self._results()

    def close(self):
        try:
            self.sock.sendall(b"X" + struct.pack("!i", 4))
        except OSError:
            pass
        self.rfile.close()
        self.sock.close()


# --------------------------------------------------------------------------
# Statistics and output

def percentile(values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    v = sorted(values)
    if not v:
        return float("nan")
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summary(values):
    return dict(n=len(values), median=statistics.median(values), p90=percentile(values, 0.9),
                p99=percentile(values, 0.99), max=max(values), min=min(values))


def say(*args):
    print(*args, flush=True)


def read_file(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def loadavg():
    return read_file("/proc/loadavg").split()[:3]


def machine_info(mini):
    cpu = "unknown"
    for line in read_file("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in read_file("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    ver = mini.query("SHOW server_version")[0][0]
    return dict(cpu=cpu, cores=os.cpu_count(), kernel=platform.release(),
                mem="%.1f GiB" % (mem_kb / 1048576.0), postgres=ver,
                python=platform.python_version())


# --------------------------------------------------------------------------
# /proc: memory

def status_kb(pid, field):
    for line in read_file("/proc/%d/status" % pid).splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return None


def smaps_by_object(pid):
    """{object: [rss, pss, private]} in KiB; object = a mapped file's path,
    or [heap], [stack], [anon] ..."""
    out = {}
    cur = None
    for line in read_file("/proc/%d/smaps" % pid).splitlines():
        parts = line.split()
        if not parts:
            continue
        if re.match(r"^[0-9a-f]+-[0-9a-f]+$", parts[0]):
            cur = out.setdefault(parts[5] if len(parts) > 5 else "[anon]", [0, 0, 0])
        elif cur is not None and parts[0] in ("Rss:", "Pss:", "Private_Clean:", "Private_Dirty:"):
            kb = int(parts[1])
            if parts[0] == "Rss:":
                cur[0] += kb
            elif parts[0] == "Pss:":
                cur[1] += kb
            else:
                cur[2] += kb
    return out


def ldd_closure(path):
    """Real paths of the libraries path loads (ldd), or an empty set."""
    try:
        r = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=10)
    except (OSError, subprocess.SubprocessError):
        return set()
    out = set()
    for line in r.stdout.decode(errors="replace").splitlines():
        m = re.search(r"(/\S+)\s+\(0x", line)
        if m:
            out.add(os.path.realpath(m.group(1)))
    return out


def memory_groups(smaps, binary):
    """[(group, rss, pss, private)]: pgleader itself, the C library, libpq and
    what it pulls in, libsystemd and what it pulls in, other libraries, and
    memory that maps no file (heap, stack)."""
    libs = {os.path.realpath(o): o for o in smaps if o.startswith("/")}
    core = {p for p in libs if re.search(r"/(libc|libm|ld-linux[^/]*)\.so", p)}
    by_name = {}
    for p in libs:
        base = os.path.basename(p)
        if base.startswith("libpq.so"):
            by_name["libpq"] = p
        elif base.startswith("libsystemd.so"):
            by_name["libsystemd"] = p
    pq = ({by_name["libpq"]} | ldd_closure(by_name["libpq"])) - core if "libpq" in by_name else set()
    sd = (({by_name["libsystemd"]} | ldd_closure(by_name["libsystemd"])) - core - pq
          if "libsystemd" in by_name else set())
    groups = [["pgleader (text and data)", 0, 0, 0], ["libc, libm, ld.so", 0, 0, 0],
              ["libpq and its libraries (OpenSSL, Kerberos, LDAP, GnuTLS ...)", 0, 0, 0],
              ["libsystemd and its libraries", 0, 0, 0], ["other libraries (libev, inih ...)", 0, 0, 0],
              ["anonymous: heap, stack, other", 0, 0, 0]]
    real_bin = os.path.realpath(binary)
    for obj, vals in smaps.items():
        rp = os.path.realpath(obj) if obj.startswith("/") else None
        if rp is None:
            g = 5
        elif rp == real_bin:
            g = 0
        elif rp in core:
            g = 1
        elif rp in pq:
            g = 2
        elif rp in sd:
            g = 3
        else:
            g = 4
        for i in range(3):
            groups[g][i + 1] += vals[i]
    return [tuple(g) for g in groups]


# --------------------------------------------------------------------------
# The /metrics scraper: a process of its own (`bench.py --scrape PORTS RATE
# OUT`), so that neither its work nor the GIL touches the timing of the
# kill. Every 1/RATE s it fetches /metrics from each port on a kept-alive
# connection; on SIGTERM it writes "port ms" per answer and one "# ..."
# line with the failures and the time it ran.

SCRAPE_RATE = 200


def http_ok(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        c.request("GET", path)
        return c.getresponse().status == 200
    except OSError:
        return False
    finally:
        c.close()


def scrape_main(args):
    ports = [int(p) for p in args[0].split(",")]
    period = 1.0 / float(args[1])
    stop = []
    signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
    conns, served, errors = {}, [], 0
    t_start = nxt = time.monotonic()
    while not stop:
        for port in ports:
            t0 = time.monotonic()
            try:
                c = conns.get(port) or http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conns[port] = c
                c.request("GET", "/metrics")
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    raise OSError("status %d" % r.status)
                served.append((port, (time.monotonic() - t0) * 1000.0))
            except (OSError, http.client.HTTPException):
                errors += 1
                conns.pop(port).close()
        nxt += period
        time.sleep(max(0.0, nxt - time.monotonic()))
    with open(args[2], "w") as f:
        for port, ms in served:
            f.write("%d %.4f\n" % (port, ms))
        f.write("# errors %d elapsed %.3f\n" % (errors, time.monotonic() - t_start))
    return 0


def read_scrapes(path):
    """({port: [ms of each answer]}, failures, seconds the scraper ran)."""
    served, errors, elapsed = {}, 0, 0.0
    for line in read_file(path).splitlines():
        if line.startswith("# errors"):
            parts = line.split()
            errors, elapsed = int(parts[2]), float(parts[4])
        elif line:
            port, ms = line.split()
            served.setdefault(int(port), []).append(float(ms))
    return served, errors, elapsed


# --------------------------------------------------------------------------
# The run

class Bench:
    def __init__(self, opts):
        self.opts = opts
        self.rng = random.Random(opts.seed)
        self.base = None
        self.cluster = None
        self.mini = None
        self.fleets = []
        self.extra_procs = []  # Popen objects started outside a Fleet
        self.extra_clusters = []  # a promote trial's primary and replica
        self.samples = {}  # metric -> [(trial, value)]
        self.failures = {}  # scenario -> count
        self.rss = []  # (role, pid, vmhwm_kb, vmrss_kb, smaps)
        self.key_base = h.to_signed64(int.from_bytes(os.urandom(8), "big")) & ~0xffff
        self.key_n = 0
        self.binary = None
        self.mem_groups = []

    # -- set-up and clean-up

    def setup(self):
        src = h.pgleader_bin()
        if not os.access(src, os.X_OK):
            raise SystemExit("bench: no pgleader binary at %s: run `make pgleader` first" % src)
        with critical():
            self.base = h.make_tempdir("pgl-bench-")
        # A private copy: another `make clean` in the tree must not pull the
        # binary away in the middle of the run.
        self.binary = os.path.join(self.base, "pgleader")
        shutil.copy2(src, self.binary)
        os.environ["PGLEADER_BIN"] = self.binary
        self.version = subprocess.run([self.binary, "--version"], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, timeout=10).stdout.decode().strip()
        with critical():
            self.cluster = h.PgCluster("benchpg")
        with critical():
            self.cluster.start()
        self.mini = MiniPg(os.path.join(self.cluster.sockdir, ".s.PGSQL.%d" % self.cluster.port))
        self.dsn = self.cluster.dsn()

    def cleanup(self):
        for fl in self.fleets:
            with contextlib.suppress(Exception):
                fl.cleanup()
        self.fleets = []
        for p in self.extra_procs:
            if p.poll() is None:
                h.kill_quietly(p.pid, signal.SIGKILL)
                with contextlib.suppress(Exception):
                    p.wait(5)
        self.extra_procs = []
        # Anything still below us (a process caught between its start and
        # its registration): ended by PID.
        for pid in h.descendants(os.getpid()):
            h.kill_quietly(pid, signal.SIGKILL)
        for pid in h.children_of(os.getpid()):
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)
        for c in self.extra_clusters:
            with contextlib.suppress(Exception):
                c.destroy()
        self.extra_clusters = []
        if self.mini is not None:
            with contextlib.suppress(Exception):
                self.mini.close()
            self.mini = None
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.destroy()
        h._cleanup_template()
        if self.base and not (h.KEEP or self.opts.keep):
            shutil.rmtree(self.base, ignore_errors=True)
        elif self.base:
            say("kept %s" % self.base)

    # -- helpers

    def new_key(self):
        self.key_n += 1
        return h.to_signed64(self.key_base + self.key_n)

    def wait_clean(self):
        """No pgleader session left on the server from a previous trial."""
        h.wait_until(lambda: self.mini.query(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgleader/%'"
        )[0][0] == "0", 15, interval=0.02, what="the previous trial's sessions to end")

    def lock_rows(self, key):
        """[(pid, granted, application_name)] of the advisory lock key."""
        u = key & ((1 << 64) - 1)
        rows = self.mini.query(
            "SELECT l.pid, l.granted, coalesce(a.application_name, '') FROM pg_locks l "
            "LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
            "AND l.objsubid = 1 AND l.classid = %d AND l.objid = %d" % (u >> 32, u & 0xffffffff))
        return [(int(r[0]), r[1] == "t", r[2]) for r in rows]

    def wait_lock(self, key, node, granted, timeout=15):
        """Waits until node holds (granted) or waits for key; returns the
        backend pid."""
        name = h.app_name(node)

        def check():
            for pid, g, app in self.lock_rows(key):
                if app == name and g == granted:
                    return pid
            return None
        return h.wait_until(check, timeout, interval=0.01,
                            what="%s to %s lock %d" % (name, "hold" if granted else "queue for", key))

    def new_trial(self, scenario, trial):
        self.wait_clean()
        wd = os.path.join(self.base, "%s-%02d" % (scenario, trial))
        os.mkdir(wd)
        os.chmod(wd, 0o755)
        ledger = h.Ledger(os.path.join(wd, "ledger"))
        key = self.new_key()
        fleet = h.Fleet(wd, ledger, key, dsn=self.dsn)
        self.fleets.append(fleet)
        return fleet, ledger, key

    def start(self, fleet, node, *extra, command=None):
        with critical():
            return fleet.start(node, *extra, timing=BENCH_OPTS, use_wrapper=False,
                               command=command)

    def end_trial(self, fleet):
        """SIGTERM to every pgleader still running, wait, then the harness's
        clean-up (SIGKILL by PID for anything left)."""
        for p in fleet.nodes:
            if p.running():
                p.remember_descendants()
                h.kill_quietly(p.pid, signal.SIGTERM)
        for p in fleet.nodes:
            with contextlib.suppress(AssertionError):
                p.wait(15)
        fleet.cleanup()
        self.fleets.remove(fleet)

    def record(self, metric, trial, seconds=None, value=None):
        v = seconds * 1000.0 if value is None else value
        self.samples.setdefault(metric, []).append((trial, v))
        return v

    @staticmethod
    def wait_event(ledger, kind, node, proc, timeout=15, pid=None):
        """ledger.wait_for, failing early when proc (the pgleader that must
        produce the event) has exited."""
        def check():
            ev = ledger.events(kind, node, pid)
            if ev:
                return ev[0]
            if not proc.running():
                raise AssertionError("%s exited with %s before its command's %r record:\n%s" % (
                    proc.name, proc.proc.returncode, kind, h.tail(proc.text(), 20)))
            return None
        return h.wait_until(check, timeout, interval=0.005,
                            what="ledger event %s of %s" % (kind, node))

    def lead_and_standby(self, fleet, ledger, key, extra=(), queued=True, extra_b=None,
                         command=None):
        a = self.start(fleet, "a", *extra, command=command)
        sa = self.wait_event(ledger, "start", "a", a)
        self.wait_lock(key, "a", granted=True)
        b = self.start(fleet, "b", *(extra if extra_b is None else extra_b), command=command)
        b.wait_for_log(r"waiting for leader lease", timeout=15)
        if queued:
            self.wait_lock(key, "b", granted=False)
        return a, sa, b

    def run_trials(self, scenario, n, fn):
        for i in range(1, n + 1):
            fleet = None
            try:
                fleet, ledger, key = self.new_trial(scenario, i)
                shown = fn(fleet, ledger, key, i)
                say("  %-22s %2d/%d  %s" % (scenario, i, n, shown))
            except (AssertionError, RuntimeError, OSError, subprocess.SubprocessError) as e:
                self.failures[scenario] = self.failures.get(scenario, 0) + 1
                say("  %-22s %2d/%d  FAILED: %s" % (scenario, i, n, str(e).splitlines()[0]))
                if fleet is not None:
                    for title, text in fleet.all_logs():
                        say("    --- %s\n%s" % (title, "\n".join(
                            "    " + l for l in h.tail(text, 15).splitlines())))
                    say("    --- ledger\n%s" % "\n".join(
                        "    " + l for l in h.tail(ledger.text(), 10).splitlines()))
                if self.failures[scenario] >= 3:
                    say("  %s: 3 failures, giving up on this scenario" % scenario)
                    if fleet is not None and fleet in self.fleets:
                        self.end_trial(fleet)
                    return
            finally:
                if fleet is not None and fleet in self.fleets:
                    self.end_trial(fleet)

    # -- scenarios

    def trial_kill9(self, mode, c_job=False):
        extra = ("--acquire", "poll") if mode == "poll" else ()

        def fn(fleet, ledger, key, i):
            command = [STAMPJOB, ledger.path] if c_job else None
            a, sa, b = self.lead_and_standby(fleet, ledger, key, extra, queued=(mode == "wait"),
                                             command=command)
            delay = None
            if mode == "poll":
                # the standby tried once when it logged "waiting": kill the
                # leader at a uniformly random point of its poll period
                delay = self.rng.uniform(0, POLL_RETRY)
                time.sleep(delay)
            a.remember_descendants()
            t0 = time.monotonic()
            os.kill(a.pid, signal.SIGKILL)
            sb = self.wait_event(ledger, "start", "b", b, timeout=POLL_RETRY + 10)
            if a.wait(10) != -signal.SIGKILL:
                raise AssertionError("the leader did not die of SIGKILL")
            v = self.record("kill9_" + mode + ("_c" if c_job else ""), i, sb.time - t0)
            if delay is None:
                return "%.1f ms" % v
            return "%.1f ms (killed %.2f s into the standby's poll period)" % (v, delay)
        return fn

    def has_http(self):
        out = subprocess.run([self.binary, "--help"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=10).stdout
        return b"--http-addr" in out

    def trial_kill9_failsafe(self, fleet, ledger, key, i):
        ports = (h.free_port(), h.free_port())
        secret = os.path.join(fleet.workdir, "failsafe.secret")
        with open(secret, "w") as f:
            f.write("bench-secret\n")
        os.chmod(secret, 0o600)
        peers = "a=127.0.0.1:%d,b=127.0.0.1:%d" % ports

        def opts(port):
            return ("--http-addr", "127.0.0.1:%d" % port, "--failsafe-peers", peers,
                    "--failsafe-secret-file", secret)
        a, sa, b = self.lead_and_standby(fleet, ledger, key, extra=opts(ports[0]),
                                         extra_b=opts(ports[1]))
        a.remember_descendants()
        t0 = time.monotonic()
        os.kill(a.pid, signal.SIGKILL)
        sb = self.wait_event(ledger, "start", "b", b, timeout=15)
        if a.wait(10) != -signal.SIGKILL:
            raise AssertionError("the leader did not die of SIGKILL")
        return "%.1f ms" % self.record("kill9_wait_failsafe", i, sb.time - t0)

    def trial_kill9_scraped(self, fleet, ledger, key, i):
        ports = (h.free_port(), h.free_port())
        a, sa, b = self.lead_and_standby(
            fleet, ledger, key, extra=("--http-addr", "127.0.0.1:%d" % ports[0]),
            extra_b=("--http-addr", "127.0.0.1:%d" % ports[1]))
        for port in ports:
            h.wait_until(lambda: http_ok(port, "/liveness"), 10, interval=0.02,
                         what="the http server on port %d" % port)
        out = os.path.join(fleet.workdir, "scrapes")
        with critical():
            scraper = subprocess.Popen([h.PYTHON, os.path.abspath(__file__), "--scrape",
                                        "%d,%d" % ports, str(SCRAPE_RATE), out],
                                       stdin=subprocess.DEVNULL)
            self.extra_procs.append(scraper)
        try:
            time.sleep(0.5)  # scraping at full rate before the kill
            if scraper.poll() is not None:
                raise AssertionError("the scraper exited %s" % scraper.returncode)
            a.remember_descendants()
            t0 = time.monotonic()
            os.kill(a.pid, signal.SIGKILL)
            sb = self.wait_event(ledger, "start", "b", b)
            if a.wait(10) != -signal.SIGKILL:
                raise AssertionError("the leader did not die of SIGKILL")
            time.sleep(0.2)  # the new leader scraped too
        finally:
            scraper.send_signal(signal.SIGTERM)
            # wait4: the scraper's own CPU time, a load on the same cores
            _, _, usage = os.wait4(scraper.pid, 0)
            scraper.returncode = 0
            self.extra_procs.remove(scraper)
        v = self.record("kill9_wait_scraped", i, sb.time - t0)
        served, errors, elapsed = read_scrapes(out)
        if not served.get(ports[1]):
            raise AssertionError("the scraper got no /metrics answer from the standby")
        for ms in served[ports[0]] + served[ports[1]]:
            self.record("metrics_serve", i, value=ms)
        return ("%.1f ms (%.0f scrapes/s of the survivor, median %.2f ms; scraper CPU %.0f%% "
                "of a core; %d failed, on the killed leader)" % (
                    v, len(served[ports[1]]) / elapsed, statistics.median(served[ports[1]]),
                    100.0 * (usage.ru_utime + usage.ru_stime) / elapsed, errors))

    def trial_handover(self, fleet, ledger, key, i):
        a, sa, b = self.lead_and_standby(fleet, ledger, key)
        t0 = time.monotonic()
        os.kill(a.pid, signal.SIGTERM)
        stop = ledger.wait_for("stop", "a", pid=sa.pid, timeout=15)
        sb = self.wait_event(ledger, "start", "b", b)
        if sb.time < stop.time:
            raise AssertionError("the new command started before the old one stopped:\n" + ledger.text())
        rc = a.wait(15)
        if rc != 0:
            raise AssertionError("the old leader exited %s after SIGTERM" % rc)
        v1 = self.record("handover_from_exit", i, sb.time - stop.time)
        v2 = self.record("handover_from_sigterm", i, sb.time - t0)
        return "%.1f ms from the exit, %.1f ms from SIGTERM" % (v1, v2)

    def trial_terminate(self, fleet, ledger, key, i):
        a, sa, b = self.lead_and_standby(fleet, ledger, key)
        backend = self.wait_lock(key, "a", granted=True)
        t0 = time.monotonic()
        self.mini.send("SELECT pg_terminate_backend(%d)" % backend)
        ok = self.mini.results()
        if ok != [["t"]]:
            raise AssertionError("pg_terminate_backend(%d) returned %r" % (backend, ok))
        term = ledger.wait_for("term", "a", pid=sa.pid, timeout=15)
        v = self.record("terminate_to_sigterm", i, term.time - t0)
        # the standby takes over: the trial ends in a normal state
        ledger.wait_for("start", "b", timeout=15)
        return "%.1f ms" % v

    def lead_and_queue_on(self, fleet, ledger, key, cluster):
        """a leads and b waits in the queue, on a cluster of the trial's own."""
        a = self.start(fleet, "a")
        sa = self.wait_event(ledger, "start", "a", a)
        h.wait_holder(cluster, key, "a")
        b = self.start(fleet, "b")
        h.wait_queued(cluster, key, "b")
        return a, sa, b

    def trial_promote(self, fleet, ledger, key, i):
        with critical():
            primary = h.PgCluster("benchprimary")
            self.extra_clusters.append(primary)
        try:
            primary.start()
            with critical():
                replica = h.start_replica(primary, "benchreplica")
                self.extra_clusters.append(replica)
            fleet.dsn = h.multi_host_dsn([primary, replica])
            a, sa, b = self.lead_and_queue_on(fleet, ledger, key, primary)
            gap = self.rng.uniform(1.0, 10.0)
            t_crash = time.monotonic()
            primary.crash()
            ledger.wait_for("stop", "a", pid=sa.pid, timeout=15)
            time.sleep(max(0.0, t_crash + gap - time.monotonic()))
            if len(ledger.starts()) != 1:
                raise AssertionError("a command started with no primary:\n" + ledger.text())
            probe = MiniPg(os.path.join(replica.sockdir, ".s.PGSQL.%d" % replica.port))
            try:
                t0 = time.monotonic()
                replica._pg_ctl("-W", "promote")
                h.wait_until(lambda: probe.query("SELECT pg_is_in_recovery()")[0][0] == "f",
                             30, interval=0.002, what="the replica to accept writes")
                t_writable = time.monotonic()
            finally:
                probe.close()
            st = ledger.wait_for("start", after=t0, timeout=POLL_RETRY + 15)
            h.wait_holder(replica, key, st.node)
            for p in (a, b):
                if not p.running():
                    raise AssertionError("%s exited %s during the failover" % (
                        p.name, p.proc.returncode))
            v = self.record("promote_to_command", i, st.time - t0)
            w = self.record("writable_to_command", i, st.time - t_writable)
            return "%.1f ms, %.1f ms from writable (promoted %.1f s after the crash; %s leads)" % (
                v, w, gap, st.node)
        finally:
            self.end_trial(fleet)
            for c in list(self.extra_clusters):
                c.destroy()
                self.extra_clusters.remove(c)

    def trial_restart(self, fleet, ledger, key, i):
        with critical():
            pg = h.PgCluster("benchrestart")
            self.extra_clusters.append(pg)
        try:
            pg.start()
            fleet.dsn = pg.dsn()
            a, sa, b = self.lead_and_queue_on(fleet, ledger, key, pg)
            gap = self.rng.uniform(1.0, 5.0)
            t_stop = time.monotonic()
            pg.stop("fast")
            ledger.wait_for("stop", "a", pid=sa.pid, timeout=15)
            time.sleep(max(0.0, t_stop + gap - time.monotonic()))
            pg._pg_ctl("-l", pg.logfile, "-W", "start")
            pidfile = os.path.join(pg.data, "postmaster.pid")

            def ready():
                try:
                    lines = read_file(pidfile).splitlines()
                except FileNotFoundError:
                    return False
                return len(lines) >= 8 and lines[7].strip() == "ready"
            h.wait_until(ready, 30, interval=0.002, what="the server to accept connections")
            t0 = time.monotonic()
            st = ledger.wait_for("start", after=t_stop, timeout=POLL_RETRY + 15)
            for p in (a, b):
                if not p.running():
                    raise AssertionError("%s exited %s during the restart" % (
                        p.name, p.proc.returncode))
            v = self.record("restart_to_command", i, st.time - t0)
            return "%.1f ms (down %.1f s; %s leads)" % (v, gap, st.node)
        finally:
            self.end_trial(fleet)
            for c in list(self.extra_clusters):
                c.destroy()
                self.extra_clusters.remove(c)

    def run_oneshot(self, n):
        flockfile = os.path.join(self.base, "flock.lock")
        open(flockfile, "w").close()
        key = self.new_key()
        argv = [self.binary, "--nonblock", "--dsn", self.dsn, "--lock-key", str(key), "--", "true"]
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("PGLEADER_") or k in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE",
                                                  "PGPASSWORD", "PGAPPNAME"):
                del env[k]
        flock = shutil.which("flock") or "/usr/bin/flock"
        self.wait_clean()

        # Timed from before Popen: subprocess's fork/exec is part of the
        # wall time of both, measured the same way.
        def timed_wall(cmd):
            t0 = time.monotonic()
            with critical():
                p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, cwd=self.base)
                self.extra_procs.append(p)
            out, _ = p.communicate(timeout=30)
            t1 = time.monotonic()
            self.extra_procs.remove(p)
            if p.returncode != 0:
                raise AssertionError("%s exited %d:\n%s" % (cmd[0], p.returncode, out.decode(errors="replace")))
            return t1 - t0

        floor = [PQFLOOR, self.dsn, str(key)] if os.access(PQFLOOR, os.X_OK) else None
        fenced = floor + ["--fenced", "--", "true"] if floor else None
        # one unrecorded warm-up each (page cache, dynamic loader)
        timed_wall(argv)
        timed_wall([flock, "-n", flockfile, "true"])
        if floor:
            timed_wall(floor)
            timed_wall(fenced)
        else:
            say("  oneshot: no %s (make tests/pqfloor): no libpq floor" % PQFLOOR)
        for i in range(1, n + 1):
            self.wait_clean()
            v1 = self.record("oneshot_pgleader", i, timed_wall(argv))
            v2 = self.record("oneshot_flock", i, timed_wall([flock, "-n", flockfile, "true"]))
            v3 = self.record("oneshot_libpq_floor", i, timed_wall(floor)) if floor else 0.0
            v4 = self.record("oneshot_fenced_floor", i, timed_wall(fenced)) if floor else 0.0
            say("  %-22s %2d/%d  pgleader %.1f ms, flock %.1f ms, libpq floor %.1f ms "
                "(%.2fx), fenced floor %.1f ms (%.2fx)" % (
                    "oneshot", i, n, v1, v2, v3, v1 / v3 if v3 else 0.0,
                    v4, v1 / v4 if v4 else 0.0))

    def run_job_baseline(self, n):
        wd = os.path.join(self.base, "job-baseline")
        os.mkdir(wd)
        ledger = h.Ledger(os.path.join(wd, "ledger"))
        env = dict(os.environ, PGLEADER_NODE_ID="baseline-c")
        for metric, node, argv in (
                ("job_start_baseline", "baseline",
                 h.job_cmd(ledger.path, node="baseline", exit_code=0)),
                ("job_start_baseline_c", "baseline-c", [STAMPJOB, ledger.path])):
            for i in range(1, n + 1):
                t0 = time.monotonic()
                with critical():
                    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, cwd=wd, env=env)
                    self.extra_procs.append(p)
                st = ledger.wait_for("start", node, count=i, timeout=5)
                if p.poll() is None:
                    p.terminate()  # stampjob waits for SIGTERM
                p.wait(30)
                self.extra_procs.remove(p)
                self.record(metric, i, st.time - t0)
            vals = [v for _, v in self.samples[metric]]
            say("  %-22s %d runs, median %.1f ms" % (metric, n, statistics.median(vals)))

    def run_rss(self, seconds):
        fleet, ledger, key = self.new_trial("rss", 1)
        try:
            a, sa, b = self.lead_and_standby(fleet, ledger, key)
            say("  rss: leader and standby running, sampling after %.0f s" % seconds)
            time.sleep(seconds)
            roles = [("leader", a.pid), ("standby", b.pid)]
            for pid in h.descendants(a.pid):
                if h.cmdline(pid).startswith(b"pgl-guard"):
                    roles.append(("guard", pid))
            for role, pid in roles:
                self.rss.append((role, pid, status_kb(pid, "VmHWM"), status_kb(pid, "VmRSS"),
                                 smaps_by_object(pid)))
            for role, pid, hwm, rss, _ in self.rss:
                self.record("rss_peak_%s_kib" % role, 1, value=float(hwm))
            if not a.running() or not b.running():
                raise AssertionError("a pgleader exited during the RSS run")
        finally:
            self.end_trial(fleet)

    # -- report

    def report(self, info, started, opts):
        say("")
        say("== Results (milliseconds; p90 and p99 by linear interpolation: p99 means "
            "little below 100 trials)")
        say("%-56s %4s %8s %8s %8s %8s %8s" % ("metric", "n", "median", "p90", "p99", "max",
                                               "min"))
        rows = []
        for name, _, _ in METRICS:
            vals = [v for _, v in self.samples.get(name, [])]
            if not vals:
                continue
            s = summary(vals)
            rows.append((name, s))
            say("%-56s %4d %8.1f %8.1f %8.1f %8.1f %8.1f" % (
                LABEL[name], s["n"], s["median"], s["p90"], s["p99"], s["max"], s["min"]))
        for scen, k in sorted(self.failures.items()):
            say("  (%s: %d failed trial%s, not counted)" % (scen, k, "" if k == 1 else "s"))
        if self.rss:
            say("")
            say("== Peak RSS (VmHWM) after %.0f s of running" % opts.rss_seconds)
            for role, pid, hwm, rss, smaps in self.rss:
                say("%-8s pid %-7d VmHWM %6d KiB (%.1f MiB), VmRSS %6d KiB" % (
                    role, pid, hwm, hwm / 1024.0, rss))
            role, pid, hwm, rss, smaps = self.rss[0]
            self.mem_groups = memory_groups(smaps, self.binary)
            say("The leader's resident memory by origin (KiB: Rss / Pss / private):")
            for name, r, p, priv in self.mem_groups:
                say("  %-64s %6d %6d %6d" % (name, r, p, priv))
            say("Largest single objects:")
            top = sorted(smaps.items(), key=lambda kv: -kv[1][0])[:8]
            for obj, (r, p, priv) in top:
                say("  %-64s %6d %6d %6d" % (os.path.basename(obj) if obj.startswith("/") else obj,
                                             r, p, priv))
        say("")
        say("== Markdown (for the README)")
        say("")
        say("Measured with `make bench` (%d trials, %s): %s, %d cores, Linux %s, PostgreSQL %s "
            "on the same machine over TCP (127.0.0.1); pgleader defaults except "
            "`--grace-period %s`; load average %s at the start." % (
                opts.trials, "%d in poll mode, %d failovers" % (opts.poll_trials,
                                                                 opts.promote_trials),
                info["cpu"], info["cores"],
                info["kernel"], info["postgres"].split()[0], GRACE, started))
        say("")
        say("| metric | median | p90 | max | n |")
        say("| --- | ---: | ---: | ---: | ---: |")
        for name, s in rows:
            say("| %s | %.1f ms | %.1f ms | %.1f ms | %d |" % (
                README_LABEL[name], s["median"], s["p90"], s["max"], s["n"]))
        for role, pid, hwm, rss, smaps in self.rss:
            say("| peak RSS (VmHWM) of %s | %.1f MiB | | | 1 |" % ({
                "leader": "a leader", "standby": "a standby (wait mode)",
                "guard": "the leader's guard process (forked, waits on a pipe)"}[role],
                hwm / 1024.0))
        if self.rss:
            g = {name: (r, p, priv) for name, r, p, priv in self.mem_groups}
            total = sum(v[0] for v in g.values())
            pss = sum(v[1] for v in g.values())
            private = sum(v[2] for v in g.values())
            pq = [v for k, v in g.items() if k.startswith("libpq")][0]
            say("")
            say("Peak RSS after %.0f s of running. Of the leader's %.1f MiB resident, %.1f MiB are "
                "private to it and its proportional share (Pss) is %.1f MiB: the rest are shared "
                "library pages, %.1f MiB of them libpq and the libraries it loads (OpenSSL, "
                "Kerberos, LDAP, GnuTLS)." % (
                    self.opts.rss_seconds, total / 1024.0, private / 1024.0, pss / 1024.0,
                    pq[0] / 1024.0))

    def write_csv(self, path):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["metric", "trial", "value_ms"])
            for name, vals in self.samples.items():
                for trial, v in vals:
                    w.writerow([name, trial, "%.3f" % v])
        say("raw samples: %s" % path)


def parse_args(argv):
    ap = argparse.ArgumentParser(description="pgleader failover benchmark")
    ap.add_argument("--trials", type=int, default=20, help="trials per metric (default 20)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer poll-mode trials (5) and a shorter RSS run (3 s)")
    ap.add_argument("--poll-trials", type=int, default=None,
                    help="poll-mode kill -9 trials (default: --trials, 5 with --quick)")
    ap.add_argument("--promote-trials", type=int, default=None,
                    help="database failover trials, each with its own primary and replica "
                         "(default 5, 3 with --quick)")
    ap.add_argument("--rss-seconds", type=float, default=None,
                    help="how long the leader and standby run before VmHWM is read (default 6)")
    ap.add_argument("--csv", default=os.path.join(REPO, "bench-results.csv"),
                    help="raw samples (default: bench-results.csv in the repository)")
    ap.add_argument("--only", default=None,
                    help="comma-separated subset: kill9-wait,kill9-c,kill9-scraped,kill9-failsafe,"
                         "kill9-poll,handover,terminate,promote,restart,oneshot,baseline,rss")
    ap.add_argument("--seed", type=int, default=None, help="seed of the poll-mode kill times")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    o = ap.parse_args(argv)
    if o.trials < 1:
        ap.error("--trials must be at least 1")
    if o.poll_trials is None:
        o.poll_trials = min(o.trials, 5) if o.quick else o.trials
    if o.promote_trials is None:
        o.promote_trials = 3 if o.quick else 5
    if o.rss_seconds is None:
        o.rss_seconds = 3.0 if o.quick else 6.0
    if o.seed is None:
        o.seed = int.from_bytes(os.urandom(4), "big")
    all_parts = ["kill9-wait", "kill9-c", "kill9-scraped", "kill9-failsafe", "kill9-poll",
                 "handover",
                 "terminate", "promote", "restart", "oneshot", "baseline", "rss"]
    o.parts = all_parts if not o.only else [p.strip() for p in o.only.split(",") if p.strip()]
    bad = [p for p in o.parts if p not in all_parts]
    if bad:
        ap.error("--only: unknown part(s) %s" % ", ".join(bad))
    return o


def main(argv):
    global _cleaning
    opts = parse_args(argv)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)
    if h.WRAPPER or h.SANITIZED:
        say("note: PGLEADER_WRAPPER / PGLEADER_SANITIZED are ignored; the benchmark runs the plain binary")
    bench = Bench(opts)
    t_start = time.monotonic()
    status = 0
    try:
        bench.setup()
        info = machine_info(bench.mini)
        started = "/".join(loadavg())
        say("pgleader benchmark: %s (%s)" % (bench.version, h.pgleader_bin()))
        say("machine: %s, %d cores, %s RAM, Linux %s" % (info["cpu"], info["cores"], info["mem"],
                                                         info["kernel"]))
        say("PostgreSQL %s (private cluster, TCP 127.0.0.1:%d), Python %s" % (
            info["postgres"], bench.cluster.port, info["python"]))
        say("load average at start: %s" % started)
        say("trials: %d (poll mode: %d, failover: %d), RSS after %.0f s, seed %d" % (
            opts.trials, opts.poll_trials, opts.promote_trials, opts.rss_seconds, opts.seed))
        say("pgleader options: defaults, plus --grace-period %s (the toy job exits on SIGTERM at "
            "once: no figure depends on it)" % GRACE)
        say("")
        parts = opts.parts
        plan = [("baseline", lambda: bench.run_job_baseline(opts.trials)),
                ("kill9-wait", lambda: bench.run_trials("kill9-wait", opts.trials,
                                                        bench.trial_kill9("wait"))),
                ("kill9-c", lambda: bench.run_trials("kill9-c", opts.trials,
                                                     bench.trial_kill9("wait", c_job=True))),
                ("kill9-scraped", lambda: bench.run_trials("kill9-scraped", opts.trials,
                                                           bench.trial_kill9_scraped)
                 if bench.has_http() else say("  kill9-scraped: skipped, this pgleader has "
                                              "no --http-addr")),
                ("kill9-failsafe", lambda: bench.run_trials("kill9-failsafe", opts.trials,
                                                            bench.trial_kill9_failsafe)),
                ("handover", lambda: bench.run_trials("handover", opts.trials,
                                                      bench.trial_handover)),
                ("terminate", lambda: bench.run_trials("terminate", opts.trials,
                                                       bench.trial_terminate)),
                ("promote", lambda: bench.run_trials("promote", opts.promote_trials,
                                                     bench.trial_promote)),
                ("restart", lambda: bench.run_trials("restart", opts.promote_trials,
                                                     bench.trial_restart)),
                ("oneshot", lambda: bench.run_oneshot(opts.trials)),
                ("rss", lambda: bench.run_rss(opts.rss_seconds)),
                ("kill9-poll", lambda: bench.run_trials("kill9-poll", opts.poll_trials,
                                                        bench.trial_kill9("poll")))]
        for name, fn in plan:
            if name in parts:
                t = time.monotonic()
                fn()
                say("  (%s: %.1f s)" % (name, time.monotonic() - t))
        bench.report(info, started, opts)
        bench.write_csv(opts.csv)
        if bench.failures:
            status = 1
    except Interrupted as e:
        say("\nbench: %s, cleaning up" % e)
        status = 128 + e.signum
    except KeyboardInterrupt:
        say("\nbench: interrupted, cleaning up")
        status = 130
    except SystemExit as e:
        say(str(e))
        status = 2
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        _cleaning = True
        bench.cleanup()
        say("load average at the end: %s; run time %.0f s" % (
            "/".join(loadavg()), time.monotonic() - t_start))
    return status


if __name__ == "__main__":
    if sys.argv[1:2] == ["--scrape"]:
        sys.exit(scrape_main(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))
