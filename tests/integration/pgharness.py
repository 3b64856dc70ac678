"""pgharness: a throwaway PostgreSQL, pgleader processes, a toy job and faults.

Used by the integration tests (tests/integration), the benchmark and the demo.
Standard library only; PostgreSQL is driven with psql, initdb and pg_ctl from
/usr/lib/postgresql/15/bin. As root, PostgreSQL and PgBouncer run as the
'postgres' system user (both refuse root).

Environment:
  PGLEADER_BIN        the binary (default: <repo>/pgleader)
  PGLEADER_WRAPPER    e.g. "valgrind": run every pgleader under it
  PGLEADER_SANITIZED  1: the binary is an ASan/UBSan build
  PG_BINDIR           PostgreSQL binaries (default /usr/lib/postgresql/15/bin)
  PGHARNESS_KEEP      1: keep the temporary directories (for debugging)
"""

import glob
import os
import pwd
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
JOB = os.path.join(HERE, "job.py")
PYTHON = "/usr/bin/python3"
PG_BINDIR = os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin")
KEEP = os.environ.get("PGHARNESS_KEEP") == "1"

WRAPPER = os.environ.get("PGLEADER_WRAPPER", "").strip()
SANITIZED = os.environ.get("PGLEADER_SANITIZED", "") not in ("", "0")
VALGRIND = WRAPPER.split()[:1] == ["valgrind"]

# Time bounds and waits stretch under valgrind and sanitizers, which slow
# pgleader itself (not the database or the job) down.
SCALE = 4.0 if VALGRIND else (1.5 if SANITIZED else 1.0)

# Short timings for tests that are not about the defaults. The timing rule
# holds: 200ms * 3 + 400ms + 1s = 2s < 4s.
def timing(**overrides):
    """The FAST timing options with some replaced (None drops an option):
    timing(server_lease="2s") -> [..., "--server-lease", "2s"]."""
    vals = {"retry_interval": "1s", "ping_interval": "200ms", "ping_timeout": "400ms",
            "ping_failures": "3", "grace_period": "1s", "server_lease": "4s"}
    vals.update(overrides)
    out = []
    for k, v in vals.items():
        if v is not None:
            out += ["--" + k.replace("_", "-"), str(v)]
    return out


FAST = timing()
FAST_RETRY = 1.0
FAST_GRACE = 1.0
FAST_LEASE = 4.0
FAST_DETECT = 0.2 * 3 + 0.4  # ping_interval * ping_failures + ping_timeout


def bound(seconds):
    """A time bound scaled for slow builds (valgrind, sanitizers)."""
    return seconds * SCALE


def pgleader_bin():
    return os.environ.get("PGLEADER_BIN") or os.path.join(REPO, "pgleader")


def is_root():
    return os.geteuid() == 0


def to_signed64(n):
    n &= (1 << 64) - 1
    return n - (1 << 64) if n >= (1 << 63) else n


# --------------------------------------------------------------------------
# /proc helpers

def proc_stat(pid):
    """(state, ppid, pgid) of pid, or None when it does not exist."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(")") + 2:].split()
    return rest[0], int(rest[1]), int(rest[2])


def is_guard(pid):
    """True for pgleader's one guard process (`pgl-guard`, src/act/guard.c),
    which lives beside the commands and is none of theirs."""
    try:
        with open("/proc/%d/comm" % pid, "rb") as f:
            return f.read().strip() == b"pgl-guard"
    except OSError:
        return False


def command_descendants(pid):
    """The live descendants of pid but pgleader's guard: what is left of its
    commands."""
    return [p for p in descendants(pid) if not is_guard(p)]


def pid_alive(pid):
    """True when pid exists and is not a zombie."""
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def wait_pid_gone(pid, timeout):
    """Waits until pid is gone or a zombie; returns the monotonic time it was
    seen gone, or None on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if not pid_alive(pid):
            return time.monotonic()
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)


def assert_died_with_pgleader(t0, named_pids, limit=0.5):
    """Each (pid, what) of named_pids is gone within limit seconds of t0,
    when its pgleader was killed with SIGKILL."""
    for pid, what in named_pids:
        gone = wait_pid_gone(pid, 2)
        assert gone is not None, "the %s outlived pgleader killed with SIGKILL" % what
        assert gone - t0 < limit, "the %s died %.2fs after pgleader" % (what, gone - t0)


def all_pids():
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            out.append(int(name))
    return out


def children_of(pid):
    out = []
    for p in all_pids():
        st = proc_stat(p)
        if st is not None and st[1] == pid:
            out.append(p)
    return out


def descendants(pid):
    """Every live descendant of pid (one /proc scan)."""
    table = {}
    for p in all_pids():
        st = proc_stat(p)
        if st is not None:
            table[p] = st
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for p, st in table.items():
            if st[1] == parent and p not in out:
                out.append(p)
                todo.append(p)
    return out


def zombies_of(pid):
    out = []
    for p in children_of(pid):
        st = proc_stat(p)
        if st is not None and st[0] == "Z":
            out.append(p)
    return out


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def fd_targets(pid):
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def kill_quietly(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def pump(src, dst):
    """Bytes from socket src to socket dst until src ends or either fails:
    one direction of a test's TCP proxy, run in a thread of its own."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                return
            dst.sendall(data)
    except OSError:
        return


def killpg_quietly(pgid, sig=signal.SIGKILL):
    if pgid <= 1 or pgid == os.getpgid(0):
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_used_ports = set()
# pytest-xdist's workers (make check runs one per core): each takes the
# ports of its own residue, so that two never pick the same free port (of
# port / 2: Linux gives bind() ports of one parity)
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
_WORKER = int((os.environ.get("PYTEST_XDIST_WORKER") or "gw0")[2:] or 0)


def free_port():
    """A currently free TCP port on 127.0.0.1, never the same twice per run."""
    for _ in range(200 * _WORKERS):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        if port not in _used_ports and (port >> 1) % _WORKERS == _WORKER:
            _used_ports.add(port)
            return port
    raise RuntimeError("no free port")


def wait_until(pred, timeout, interval=0.01, what="condition"):
    """Polls pred() until it returns a true value, which is returned."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def tail(text, lines=200):
    parts = text.splitlines()
    if len(parts) > lines:
        return "[... %d lines cut ...]\n" % (len(parts) - lines) + "\n".join(parts[-lines:])
    return "\n".join(parts)


def cpu_seconds(pid):
    """The process's time on a CPU, every live thread's, as the scheduler
    counts it (/proc/PID/task/*/schedstat, nanoseconds); None when gone.
    Not utime + stime: those are sampled at the clock's tick, and for a
    process that runs a tenth of a millisecond every few seconds, as a
    fleet's backends do, they were wrong by a factor of 1.5 to 15 on this
    project's machines (pgbench, 1,000 sessions, 200 statements a second:
    0.15 % of a core by the ticks, 2.2 % by schedstat). The ticks only
    where the kernel keeps no schedstat."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    sts = [read_text("/proc/%d/task/%s/schedstat" % (pid, t)) for t in tasks]
    sts = [st for st in sts if st]
    if sts:
        return sum(int(st.split()[0]) for st in sts) / 1e9
    st = read_text("/proc/%d/stat" % pid)
    if not st:
        return None
    f = st.rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def make_tempdir(prefix):
    """A directory in /tmp that the postgres user can traverse."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(d, 0o755)
    return d


def _pg_user():
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root needs the 'postgres' system user "
                           "(tests/install-deps.sh creates it)")


def chown_to_pg(path, recursive=False):
    if not is_root():
        return
    pw = _pg_user()
    os.chown(path, pw.pw_uid, pw.pw_gid)
    if recursive:
        for root, dirs, files in os.walk(path):
            for n in dirs + files:
                os.lchown(os.path.join(root, n), pw.pw_uid, pw.pw_gid)


def as_pg(argv):
    """argv run as the postgres user when we are root (runuser, no fork
    surprises for short-lived tools)."""
    if is_root():
        return ["runuser", "-u", "postgres", "--"] + list(argv)
    return list(argv)


def pg_popen_kwargs():
    """Popen keyword arguments that run a long-lived server as postgres with
    its real PID (no runuser process in between)."""
    if not is_root():
        return {}
    pw = _pg_user()
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


# --------------------------------------------------------------------------
# PostgreSQL

_template_lock = threading.Lock()
_template_dir = None


def _cleanup_template():
    global _template_dir
    if _template_dir and not KEEP:
        shutil.rmtree(_template_dir, ignore_errors=True)
    _template_dir = None


_INITDB = [os.path.join(PG_BINDIR, "initdb"), "-U", "postgres", "-A", "trust", "-E", "UTF8",
           "--locale=C", "--no-sync", "--no-instructions"]


def _template():
    """One initdb per process; every cluster is a copy (cp -a, ~0.1 s)."""
    global _template_dir
    with _template_lock:
        if _template_dir is None:
            import atexit
            d = make_tempdir("pgl-template-")
            chown_to_pg(d)
            data = os.path.join(d, "data")
            subprocess.run(as_pg(_INITDB + ["-D", data]), cwd=d, check=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            _template_dir = d
            atexit.register(_cleanup_template)
        return os.path.join(_template_dir, "data")


def fence_key(key):
    """A bigint key's fence as pg_locks shows it: (classid, objid), the high
    and the low 32 bits, unsigned."""
    u = key & 0xFFFFFFFFFFFFFFFF
    return (u >> 32, u & 0xFFFFFFFF)


class PgCluster:
    """A private PostgreSQL on 127.0.0.1:<free port> and a private socket dir."""

    def __init__(self, name="pg", settings=None, standby_of=None, fresh=False):
        """standby_of: a running PgCluster to copy with pg_basebackup; the
        new cluster then starts as its hot standby (streaming). fresh: an
        initdb of its own (a system identifier of its own), not a copy of
        the template (which every copy shares)."""
        self.name = name
        self.base = make_tempdir("pgl-%s-" % name)
        self.data = os.path.join(self.base, "data")
        self.sockdir = os.path.join(self.base, "sock")
        self.logfile = os.path.join(self.base, "postgres.log")
        self.port = free_port()
        self.password_roles = {}  # name -> method
        self.destroyed = False
        os.makedirs(self.sockdir)
        chown_to_pg(self.base)
        chown_to_pg(self.sockdir)
        if fresh:
            subprocess.run(as_pg(_INITDB + ["-D", self.data]), cwd=self.base, check=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        elif standby_of is None:
            subprocess.run(["cp", "-a", _template(), self.data], check=True)
        else:
            subprocess.run(as_pg([os.path.join(PG_BINDIR, "pg_basebackup"), "-D", self.data,
                                  "-h", standby_of.sockdir, "-p", str(standby_of.port),
                                  "-U", "postgres", "-R", "-X", "stream", "-c", "fast",
                                  "--no-sync"]),
                           cwd=self.base, check=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": "'%s'" % self.sockdir,
            "fsync": "off",
            "full_page_writes": "off",
            "max_connections": "100",
            "shared_buffers": "16MB",
            "logging_collector": "off",
            "log_destination": "'stderr'",
            "log_line_prefix": "'%m [%p] %q%a@%r '",
            "log_connections": "on",
            "log_disconnections": "on",
            "log_min_messages": "info",
            "password_encryption": "'scram-sha-256'",
            # An asynchronous commit (a transaction that wrote no WAL of its
            # own) reaches the WAL file only when the WAL writer wakes up. A
            # long delay makes a crash shortly after such a commit lose it
            # every time, not by chance: the fencing-token tests rely on it.
            "wal_writer_delay": "10s",
        }
        if settings:
            conf.update(settings)
        path = os.path.join(self.data, "postgresql.conf")
        with open(path, "a") as f:
            f.write("\n# pgharness\n")
            for k, v in conf.items():
                f.write("%s = %s\n" % (k, v))
        self._write_hba()

    # -- configuration

    def _write_hba(self):
        lines = ["local all all trust", "local replication all trust",
                 "host replication all 127.0.0.1/32 trust"]
        for role, method in sorted(self.password_roles.items()):
            lines.append("host all %s 127.0.0.1/32 %s" % (role, method))
        lines.append("host all all 127.0.0.1/32 trust")
        path = os.path.join(self.data, "pg_hba.conf")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        chown_to_pg(path)

    def add_password_role(self, role, password, method="scram-sha-256"):
        """A LOGIN role that must give its password over TCP."""
        self.psql("CREATE ROLE %s LOGIN PASSWORD '%s'" % (role, password.replace("'", "''")))
        self.password_roles[role] = method
        self._write_hba()
        self.psql("SELECT pg_reload_conf()")
        # The reload is asynchronous: wait until the new rule is in effect.
        wait_until(lambda: self.psql(
            "SELECT count(*) FROM pg_hba_file_rules WHERE '%s' = ANY(user_name)" % role)[0][0] == "1",
            10, what="pg_hba reload")
        time.sleep(0.1)

    # -- life cycle

    def _pg_ctl(self, *args, check=True, timeout=60):
        argv = as_pg([os.path.join(PG_BINDIR, "pg_ctl"), "-D", self.data] + list(args))
        return subprocess.run(argv, cwd=self.base, check=check, timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def _set_port(self, port):
        self.port = port
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("port = %d\n" % port)

    def start(self):
        r = self._pg_ctl("-l", self.logfile, "-w", "-t", "30", "start", check=False)
        tries = 0
        while (r.returncode != 0 and not getattr(self, "_started_once", False) and tries < 3
               and "could not bind" in self.log()):
            # another program took the free port in the meantime: on the very
            # first start only (nobody knows the port yet), take another one
            tries += 1
            self._set_port(free_port())
            r = self._pg_ctl("-l", self.logfile, "-w", "-t", "30", "start", check=False)
        if r.returncode == 0:
            self._started_once = True
        if r.returncode != 0:
            raise RuntimeError("pg_ctl start failed:\n%s\n%s" % (
                r.stdout.decode(errors="replace"), tail(self.log(), 40)))
        return self

    def stop(self, mode="fast"):
        if self.running():
            self._last_pids = self.server_pids()
            self._pg_ctl("-m", mode, "-w", "-t", "60", "stop", check=False)
            self._wait_children_gone()

    def promote(self):
        self._pg_ctl("-w", "promote")

    def in_recovery(self):
        return self.scalar("SELECT pg_is_in_recovery()") == "t"

    def restart(self, mode="fast"):
        self.stop(mode)
        self.start()

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline().strip())
        except (FileNotFoundError, ValueError):
            return None

    def running(self):
        pid = self.postmaster_pid()
        return pid is not None and pid_alive(pid)

    def server_pids(self):
        """The postmaster and every process under it."""
        pid = self.postmaster_pid()
        if pid is None or not pid_alive(pid):
            return []
        return [pid] + descendants(pid)

    def _wait_children_gone(self, timeout=30):
        # Shared memory can only be reused once every old backend is gone.
        self._last_pids = getattr(self, "_last_pids", [])
        wait_until(lambda: not any(pid_alive(p) for p in self._last_pids), timeout,
                   what="old PostgreSQL processes to exit")

    def kill9_postmaster(self):
        """SIGKILL the postmaster; waits until its backends have exited."""
        pids = self.server_pids()
        self._last_pids = pids
        for p in pids:
            kill_quietly(p, signal.SIGCONT)
        if pids:
            kill_quietly(pids[0], signal.SIGKILL)
        self._wait_children_gone()
        if pids:
            # postgres refuses to start while the old postmaster's pid exists,
            # even as a zombie that the init process has not reaped yet.
            try:
                wait_until(lambda: not os.path.exists("/proc/%d" % pids[0]), 5,
                           what="the killed postmaster to be reaped")
            except AssertionError:
                os.unlink(os.path.join(self.data, "postmaster.pid"))

    def crash(self):
        """An immediate shutdown: no clean goodbye to the clients."""
        self._last_pids = self.server_pids()
        self.stop("immediate")

    def destroy(self):
        if self.destroyed:
            return
        self.destroyed = True
        pids = self.server_pids()
        self._last_pids = pids
        for p in pids:  # a test may have left a backend stopped
            kill_quietly(p, signal.SIGCONT)
        if pids:
            r = self._pg_ctl("-m", "immediate", "-w", "-t", "20", "stop", check=False)
            if r.returncode != 0:
                for p in pids:
                    kill_quietly(p, signal.SIGKILL)
            try:
                self._wait_children_gone(20)
            except AssertionError:
                for p in pids:
                    kill_quietly(p, signal.SIGKILL)
        if not KEEP:
            shutil.rmtree(self.base, ignore_errors=True)

    # -- access

    def dsn(self, user="postgres", password=None, dbname="postgres", **extra):
        parts = ["host=127.0.0.1", "port=%d" % self.port, "dbname=%s" % dbname, "user=%s" % user]
        if password is not None:
            parts.append("password=%s" % password)
        parts += ["%s=%s" % kv for kv in extra.items()]
        return " ".join(parts)

    def socket_dsn(self, user="postgres", dbname="postgres"):
        return "host=%s port=%d dbname=%s user=%s" % (self.sockdir, self.port, dbname, user)

    def psql(self, sql, dbname="postgres", user="postgres", check=True, timeout=30):
        """Runs sql over the private socket; returns rows as lists of strings."""
        argv = [os.path.join(PG_BINDIR, "psql"), "-X", "-A", "-t", "-q",
                "-v", "ON_ERROR_STOP=1", "-F", "\x1f",
                "-h", self.sockdir, "-p", str(self.port), "-U", user, "-d", dbname,
                "-c", sql]
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, env=dict(os.environ, PGAPPNAME="pgharness"))
        if check and r.returncode != 0:
            raise RuntimeError("psql failed (%d): %s\n%s" % (
                r.returncode, sql, r.stderr.decode(errors="replace")))
        out = r.stdout.decode()
        return [line.split("\x1f") for line in out.splitlines() if line != ""]

    def scalar(self, sql):
        rows = self.psql(sql)
        return rows[0][0] if rows else None

    def session_pid(self, application_name):
        """The pid of the single session with that application_name, or None."""
        rows = self.psql("SELECT pid FROM pg_stat_activity WHERE application_name = '%s'"
                         % application_name.replace("'", "''"))
        if len(rows) > 1:
            raise AssertionError("%d sessions named %s" % (len(rows), application_name))
        return int(rows[0][0]) if rows else None

    def backend_pid(self, application_name):
        """The pid of the (single) backend with that application_name, or None.
        A pgleader node has a second session, its fence: tagged "pgleader
        fence" and holding a two-int4 lock when it holds one; it is left out.
        So is a session that has sent no statement yet: which of the two it
        is cannot be told (a polling standby opens its fence at start and
        closes it after its first try)."""
        rows = self.psql("SELECT pid FROM pg_stat_activity WHERE application_name = '%s' "
                         "AND query <> '' "
                         "AND query NOT LIKE '%%/* pgleader fence %%' "
                         "AND pid NOT IN (SELECT pid FROM pg_locks "
                         "WHERE locktype = 'advisory' AND objsubid = 2) "
                         "ORDER BY backend_start" % application_name.replace("'", "''"))
        if len(rows) > 1:
            raise AssertionError("%d backends named %s" % (len(rows), application_name))
        return int(rows[0][0]) if rows else None

    def activity(self):
        rows = self.psql("SELECT pid, application_name, coalesce(state, ''), "
                         "coalesce(host(client_addr), ''), backend_type "
                         "FROM pg_stat_activity")
        return [dict(pid=int(r[0]), application_name=r[1], state=r[2], client_addr=r[3],
                     backend_type=r[4]) for r in rows]

    def advisory_locks(self):
        """Every advisory lock; bigint keys reassembled as signed 64-bit."""
        rows = self.psql(
            "SELECT l.pid, l.classid, l.objid, l.objsubid, l.granted, "
            "coalesce(a.application_name, ''), coalesce(a.state, '') "
            "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' ORDER BY l.granted DESC, l.pid")
        out = []
        for pid, classid, objid, objsubid, granted, app, state in rows:
            if objsubid == "1":
                key = to_signed64((int(classid) << 32) | int(objid))
            else:
                key = (int(classid), int(objid))
            out.append(dict(pid=int(pid), key=key, granted=(granted == "t"),
                            application_name=app, state=state))
        return out

    def fence_holders(self, key):
        """Holders of key's fence: the same 64 bits as two int4 (objsubid 2)."""
        return [l for l in self.advisory_locks() if l["key"] == fence_key(key) and l["granted"]]

    def lock_holders(self, key):
        return [l for l in self.advisory_locks() if l["key"] == key and l["granted"]]

    def lock_waiters(self, key):
        return [l for l in self.advisory_locks() if l["key"] == key and not l["granted"]]

    def terminate_backend(self, pid):
        return self.scalar("SELECT pg_terminate_backend(%d)" % pid) == "t"

    def hashtextextended(self, name):
        return int(self.scalar("SELECT hashtextextended('%s', 0)" % name.replace("'", "''")))

    def log(self):
        return read_text(self.logfile)

    def __repr__(self):
        return "<PgCluster %s port %d>" % (self.base, self.port)


def start_replica(primary, name="replica"):
    """A streaming replica of primary (pg_basebackup -R), started; returns
    once it is in recovery and the primary streams WAL to it. The caller
    destroys it."""
    r = PgCluster(name, standby_of=primary)
    try:
        r.start()
        wait_until(r.in_recovery, 15, interval=0.05, what="%s to be in recovery" % name)
        wait_until(lambda: primary.scalar(
            "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'") != "0",
            15, interval=0.05, what="the primary to stream to %s" % name)
    except BaseException:
        r.destroy()
        raise
    return r


def multi_host_dsn(clusters, user="postgres", dbname="postgres", **extra):
    """One DSN for every cluster, in order, on loopback: libpq tries each
    host in turn and, with target_session_attrs=read-write (the default
    here), takes only a primary."""
    extra.setdefault("target_session_attrs", "read-write")
    parts = ["host=%s" % ",".join("127.0.0.1" for _ in clusters),
             "port=%s" % ",".join(str(c.port) for c in clusters),
             "dbname=%s" % dbname, "user=%s" % user]
    parts += ["%s=%s" % kv for kv in extra.items()]
    return " ".join(parts)


# --------------------------------------------------------------------------
# The toy job and its ledger

def job_cmd(ledger, node=None, ignore_term=False, grandchildren=0,
            grandchildren_ignore_term=False, exit_code=None, after=None,
            kill_self=None, env_file=None, term_delay=None, term_exit=None):
    """argv of the toy job (tests/integration/job.py). node defaults to the
    child's PGLEADER_NODE_ID."""
    argv = [PYTHON, "-I", "-S", JOB, "--ledger", str(ledger)]
    if node is not None:
        argv += ["--node", node]
    if ignore_term:
        argv.append("--ignore-term")
    if grandchildren:
        argv += ["--grandchildren", str(grandchildren)]
    if grandchildren_ignore_term:
        argv.append("--grandchildren-ignore-term")
    if exit_code is not None:
        argv += ["--exit", str(exit_code)]
    if after is not None:
        argv += ["--after", str(after)]
    if kill_self is not None:
        argv += ["--kill-self", str(int(kill_self))]
    if env_file is not None:
        argv += ["--env-file", str(env_file)]
    if term_delay is not None:
        argv += ["--term-delay", str(term_delay)]
    if term_exit is not None:
        argv += ["--term-exit", str(term_exit)]
    return argv


class Event:
    __slots__ = ("kind", "node", "pid", "time", "fields", "line")

    def __init__(self, line):
        parts = line.split()
        self.line = line
        self.kind = parts[0]
        self.node = parts[1]
        self.pid = int(parts[2])
        self.fields = parts[3:]
        # the monotonic time is the field named t=...
        self.time = None
        for p in parts:
            if p.startswith("t="):
                self.time = float(p[2:])

    def get(self, name, default=None):
        for p in self.fields:
            if p.startswith(name + "="):
                return p[len(name) + 1:]
        return default

    @property
    def token(self):
        return self.get("token")

    def __repr__(self):
        return "<%s>" % self.line


class Ledger:
    """The shared event file of the toy jobs. Lines:
        start <node> <pid> token=<T> t=<mono> pgid=<G> ppid=<P>
        term <node> <pid> t=<mono>            (SIGTERM received)
        signal <node> <pid> sig=<NAME> t=<mono>
        stop <node> <pid> t=<mono> why=<term|exit|signal>
        gstart/gterm/gstop <node> <pid> t=<mono> ...   (grandchildren)
    Times are CLOCK_MONOTONIC seconds, comparable with time.monotonic()."""

    def __init__(self, path):
        self.path = str(path)
        open(self.path, "a").close()

    def events(self, kind=None, node=None, pid=None):
        out = []
        for line in read_text(self.path).splitlines():
            if not line.strip() or not line.endswith(" ."):
                continue  # a line is complete once its trailing " ." is written
            e = Event(line[:-2])
            if kind is not None and e.kind != kind:
                continue
            if node is not None and e.node != node:
                continue
            if pid is not None and e.pid != pid:
                continue
            out.append(e)
        return out

    def starts(self, node=None):
        return self.events("start", node)

    def wait_for(self, kind, node=None, pid=None, count=1, timeout=10.0, after=None):
        """Waits until at least count events match (with time > after, when
        given); returns the count-th one."""
        def check():
            ev = [e for e in self.events(kind, node, pid)
                  if after is None or e.time > after]
            return ev[count - 1] if len(ev) >= count else None
        try:
            return wait_until(check, timeout, what="ledger event %s node=%s pid=%s #%d" % (
                kind, node, pid, count))
        except AssertionError as e:
            raise AssertionError("%s\nledger:\n%s" % (e, tail(self.text(), 60)))

    def text(self):
        return read_text(self.path)

    def pids(self):
        return sorted({e.pid for e in self.events()})

    def intervals(self, ended=None):
        """[(node, pid, start, end)] of every child; end is None while no stop
        record exists. ended: {pid: time} for children that cannot write
        one (killed with their pgleader): when each was seen gone."""
        out = []
        stops = dict(ended or {})
        stops.update((e.pid, e.time) for e in self.events("stop"))
        for s in self.starts():
            out.append((s.node, s.pid, s.time, stops.get(s.pid)))
        return out

    def assert_no_overlap(self, until=None, ended=None):
        """No two children ran at the same time. A child without a stop record
        (or an end in `ended`, as intervals) counts as running until `until`
        (default: now)."""
        now = time.monotonic() if until is None else until
        iv = sorted(self.intervals(ended), key=lambda x: x[2])
        for a, b in zip(iv, iv[1:]):
            end_a = a[3] if a[3] is not None else now
            assert end_a <= b[2], "children overlap: %s (pid %d) ran %.3f..%s, %s (pid %d) started %.3f\n%s" % (
                a[0], a[1], a[2], "%.3f" % a[3] if a[3] is not None else "(no stop)",
                b[0], b[1], b[2], self.text())


# --------------------------------------------------------------------------
# pgleader processes

def sanitizer_env():
    opts = "halt_on_error=1:abort_on_error=0:exitcode=99"
    return {
        "ASAN_OPTIONS": opts + ":detect_leaks=1",
        "UBSAN_OPTIONS": opts + ":print_stacktrace=1",
        "LSAN_OPTIONS": "exitcode=99",
    }


SANITIZER_PATTERNS = ["ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                      "SUMMARY: UndefinedBehaviorSanitizer"]


def redact(s):
    s = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']+)", r"\1***", s)
    return re.sub(r"(://[^:/@\s]*:)[^@\s]*@", r"\1***@", s)


class Pgleader:
    """One pgleader process; its stdout and stderr (and its command's) go to
    <workdir>/<name>.log."""

    def __init__(self, args, workdir, name="pgleader", env=None, binary=None,
                 wrapper=None, stdin=subprocess.DEVNULL, use_wrapper=True):
        self.args = list(args)
        self.name = name
        self.workdir = str(workdir)
        self.logfile = os.path.join(self.workdir, "%s.log" % name)
        self.binary = binary or pgleader_bin()
        if not os.access(self.binary, os.X_OK):
            raise AssertionError("no pgleader binary at %s: run `make pgleader` in %s or set "
                                 "PGLEADER_BIN" % (self.binary, REPO))
        wrapper = WRAPPER if wrapper is None else wrapper
        self.wrapper = shlex.split(wrapper) if (wrapper and use_wrapper) else []
        self.valgrind_logs = None
        if self.wrapper[:1] == ["valgrind"]:
            self.valgrind_logs = os.path.join(self.workdir, "%s.valgrind.%%p.log" % name)
            self.wrapper = self.wrapper + [
                "--error-exitcode=99", "--leak-check=full",
                "--errors-for-leak-kinds=definite", "--track-fds=yes",
                "--child-silent-after-fork=yes", "--log-file=%s" % self.valgrind_logs]
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith("PGLEADER_"):
                del self.env[k]  # the harness's own switches must not configure pgleader
        for k in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGPASSWORD", "PGAPPNAME"):
            self.env.pop(k, None)
        if SANITIZED:
            self.env.update(sanitizer_env())
        if env:
            for k, v in env.items():
                if v is None:
                    self.env.pop(k, None)
                else:
                    self.env[k] = v
        self.argv = self.wrapper + [self.binary] + self.args
        self._log = open(self.logfile, "ab", buffering=0)
        # The harness's own header line; passwords masked so that the tests
        # can look for them in pgleader's output.
        # Arguments that are not UTF-8 (str with surrogate escapes) are shown
        # escaped.
        self._log.write(("# %s\n" % " ".join(shlex.quote(redact(a)) for a in self.argv))
                        .encode("utf-8", "backslashreplace"))
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdin=stdin, stdout=self._log, stderr=self._log,
                                     env=self.env, cwd=self.workdir, start_new_session=True)
        self.pid = self.proc.pid
        self.known_pids = set()  # descendants ever seen, for the cleanup

    # -- observation

    def text(self):
        return read_text(self.logfile)

    def mark(self):
        return len(self.text())

    def running(self):
        return self.proc.poll() is None

    def wait_for_log(self, regex, timeout=10.0, after=0, count=1):
        """Waits for the count-th match of regex in the log past offset `after`;
        returns the match. Fails early when the process has exited."""
        rx = re.compile(regex)
        deadline = time.monotonic() + timeout * SCALE
        while True:
            exited = self.proc.poll() is not None
            text = self.text()
            matches = list(rx.finditer(text, after))
            if len(matches) >= count:
                return matches[count - 1]
            if exited:
                raise AssertionError("%s exited with %s before logging /%s/:\n%s" % (
                    self.name, self.proc.returncode, regex, tail(text, 60)))
            if time.monotonic() > deadline:
                raise AssertionError("%s: no /%s/ (x%d) within %.1fs:\n%s" % (
                    self.name, regex, count, timeout * SCALE, tail(text, 60)))
            time.sleep(0.01)

    def count(self, regex):
        return len(re.findall(regex, self.text()))

    def remember_descendants(self):
        if self.running():
            self.known_pids.update(descendants(self.pid))

    # -- control

    def signal(self, sig):
        os.kill(self.pid, sig)

    def kill9(self):
        self.remember_descendants()
        os.kill(self.pid, signal.SIGKILL)
        return self.wait(10)

    def wait(self, timeout=10.0):
        """Waits for the exit; returns Popen's returncode (-N for signal N)."""
        try:
            return self.proc.wait(timeout * SCALE)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s still running after %.1fs:\n%s" % (
                self.name, timeout * SCALE, tail(self.text(), 60)))

    def stop(self, timeout=15.0):
        """SIGTERM and wait; returns the exit status."""
        if self.running():
            self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def cleanup(self):
        """Ends the process and everything it started, by PID."""
        if self.running():
            self.remember_descendants()
            kill_quietly(self.pid, signal.SIGKILL)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for p in self.known_pids:
            if pid_alive(p):
                st = proc_stat(p)
                kill_quietly(p, signal.SIGKILL)
                if st:
                    killpg_quietly(st[2])
        self._log.close()

    def problems(self):
        """Sanitizer and valgrind reports found in the logs."""
        out = []
        text = self.text()
        for pat in SANITIZER_PATTERNS:
            if pat in text:
                out.append("%s: log contains %r" % (self.name, pat))
        if self.valgrind_logs:
            files = glob.glob(self.valgrind_logs.replace("%p", "*"))
            main_log = self.valgrind_logs.replace("%p", str(self.pid))
            for path in files:
                vt = read_text(path)
                if any(int(n) > 0 for n in re.findall(r"ERROR SUMMARY: (\d+) errors", vt)):
                    out.append("%s: valgrind reported errors in %s:\n%s" % (self.name, path, tail(vt, 80)))
                if "definitely lost:" in vt and not re.search(r"definitely lost: 0 bytes", vt):
                    out.append("%s: valgrind reported a definite leak in %s:\n%s" % (self.name, path, tail(vt, 80)))
            exited_normally = self.proc.returncode is not None and self.proc.returncode >= 0
            # --track-fds: descriptors other than 0-2 and valgrind's own log
            # still open when pgleader exits by itself.
            if exited_normally and main_log in files:
                vt = read_text(main_log)
                leaked = [m.group(0) for m in re.finditer(
                    r"^==\d+== Open (?:file descriptor (\d+): (.*)|AF_\w+ socket (\d+): (.*))$", vt, re.M)
                    if ".valgrind." not in (m.group(2) or "") and int(m.group(1) or m.group(3)) > 2]
                if leaked:
                    out.append("%s: descriptors open at exit:\n%s" % (self.name, "\n".join(leaked)))
            if exited_normally and main_log in files and "ERROR SUMMARY" not in read_text(main_log):
                out.append("%s: valgrind wrote no summary in %s" % (self.name, main_log))
        if self.proc.returncode == 99 and (SANITIZED or self.valgrind_logs):
            out.append("%s: exited 99 (the sanitizer/valgrind error exit code)" % self.name)
        return out

    def all_logs(self):
        self.proc.poll()
        logs = [("pgleader %s (pid %d, exit %s)" % (self.name, self.pid, self.proc.returncode),
                 self.text())]
        if self.valgrind_logs:
            for path in sorted(glob.glob(self.valgrind_logs.replace("%p", "*"))):
                logs.append(("valgrind %s" % os.path.basename(path), read_text(path)))
        return logs


def app_name(node):
    return "pgleader/%s" % node


def wait_queued(cluster, key, node, timeout=5.0):
    """Waits until node's session waits in the lock queue for key (wait mode)."""
    return wait_until(lambda: [w for w in cluster.lock_waiters(key)
                               if w["application_name"] == app_name(node)],
                      bound(timeout), interval=0.02,
                      what="%s queued for lock %d" % (app_name(node), key))[0]


def wait_holder(cluster, key, node, timeout=5.0):
    """Waits until node's session holds key; returns the pg_locks row."""
    return wait_until(lambda: [l for l in cluster.lock_holders(key)
                               if l["application_name"] == app_name(node)],
                      bound(timeout), interval=0.02,
                      what="%s to hold lock %d" % (app_name(node), key))[0]


class Fleet:
    """Starts pgleader nodes for one test and ends them all afterwards."""

    def __init__(self, workdir, ledger, key, dsn=None):
        self.workdir = str(workdir)
        self.ledger = ledger
        self.key = key
        self.dsn = dsn
        self.nodes = []
        self.job_pids_seen = set()

    def start(self, node, *extra, dsn=None, key=None, command=None, timing=FAST,
              env=None, name=None, job=None, raw=None, use_wrapper=True):
        """pgleader --dsn DSN --lock-key KEY --node-id NODE [timing] [extra] -- command.
        job: keyword arguments for job_cmd (the default command is the toy
        job). raw: the exact argv (nothing added)."""
        if raw is not None:
            args = list(raw)
        else:
            args = []
            dsn = self.dsn if dsn is None else dsn
            if dsn:
                args += ["--dsn", dsn]
            key = self.key if key is None else key
            if key is not False:
                args += ["--lock-key", str(key)]
            if node is not None:
                args += ["--node-id", node]
            args += list(timing) + list(extra)
            if command is None:
                command = job_cmd(self.ledger.path, **(job or {}))
            args += ["--"] + list(command)
        p = Pgleader(args, self.workdir, name=name or node or "pgleader-%d" % len(self.nodes),
                     env=env, use_wrapper=use_wrapper)
        self.nodes.append(p)
        return p

    def cleanup(self):
        for p in self.nodes:
            p.cleanup()
        # Jobs and grandchildren recorded in the ledger, should any have escaped
        # (a pgleader without working PDEATHSIG killed with SIGKILL).
        me = os.getpid()
        for pid in self.ledger.pids() if self.ledger else []:
            if pid != me and pid_alive(pid) and JOB.encode() in cmdline(pid):
                st = proc_stat(pid)
                kill_quietly(pid, signal.SIGCONT)
                kill_quietly(pid, signal.SIGKILL)
                if st:
                    killpg_quietly(st[2])

    def problems(self):
        out = []
        for p in self.nodes:
            out += p.problems()
        return out

    def all_logs(self):
        out = []
        for p in self.nodes:
            out += p.all_logs()
        return out


# --------------------------------------------------------------------------
# A TCP proxy that can freeze: the partition

class SlowHttpClients:
    """count connections that each send a byte every half second and never finish a
    request, from 127.0.0.2 and on (per_address an address: the server's
    per-address limit is 8); one that the server closes is opened again at
    once, so that the server's slots stay taken."""

    def __init__(self, port, count, per_address=8):
        self.port, self.count, self.per_address = port, count, per_address
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _connect(self, i):
        s = socket.socket()
        s.setblocking(False)
        s.bind(("127.0.0.%d" % (2 + i // self.per_address), 0))
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        return s

    def _closed(self, s):
        """Whether the server closed s (it never answers a request that
        does not end)."""
        try:
            return s.recv(4096) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _run(self):
        socks = [self._connect(i) for i in range(self.count)]
        next_byte = time.monotonic() + 0.5
        try:
            while not self.stop.is_set():
                ready, _, _ = select.select(socks, [], [],
                                            max(0.0, next_byte - time.monotonic()))
                for s in ready:
                    if self._closed(s):
                        i = socks.index(s)
                        s.close()
                        socks[i] = self._connect(i)
                if ready:
                    time.sleep(0.01)  # a refused one is not retried in a tight loop
                if time.monotonic() < next_byte:
                    continue
                next_byte += 0.5
                for s in socks:
                    try:
                        s.send(b"G")
                    except OSError:
                        pass  # closed: select reports it
        finally:
            for s in socks:
                s.close()

    def close(self):
        self.stop.set()
        self.thread.join(bound(5))


class FrozenProxy:
    """127.0.0.1:<port> -> upstream. freeze(): sockets stay open and nothing
    flows in either direction, no new connection is accepted; thaw() resumes."""

    def __init__(self, upstream_port, upstream_host="127.0.0.1", listen_port=0):
        self.upstream = (upstream_host, upstream_port)
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", listen_port))
        self.lsock.listen(64)
        self.lsock.setblocking(False)
        self.port = self.lsock.getsockname()[1]
        self.frozen = False
        self.connections = 0
        self._pairs = []  # [client, server, buf c->s, buf s->c, eof flags]
        self._wake_r, self._wake_w = os.pipe()
        self._ack = threading.Event()
        self._cmd = []
        self._running = True
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="FrozenProxy", daemon=True)
        self._thread.start()

    def _control(self, cmd):
        with self._lock:
            self._ack.clear()
            self._cmd.append(cmd)
            os.write(self._wake_w, b"x")
            if not self._ack.wait(5):
                raise RuntimeError("proxy thread did not answer")

    def freeze(self):
        self._control("freeze")

    def thaw(self):
        self._control("thaw")

    def reset_all(self):
        """Closes every proxied connection (both sides)."""
        self._control("reset")

    def stop(self):
        if self._running:
            self._control("stop")
            self._thread.join(5)
            os.close(self._wake_r)
            os.close(self._wake_w)

    def dsn(self, user="postgres", dbname="postgres", **extra):
        parts = ["host=127.0.0.1", "port=%d" % self.port, "dbname=%s" % dbname, "user=%s" % user]
        parts += ["%s=%s" % kv for kv in extra.items()]
        return " ".join(parts)

    def _close_pair(self, pair):
        for s in pair[:2]:
            try:
                s.close()
            except OSError:
                pass
        if pair in self._pairs:
            self._pairs.remove(pair)

    def _loop(self):
        while self._running:
            rl, wl = [self._wake_r], []
            if not self.frozen:
                rl.append(self.lsock)
                for pair in self._pairs:
                    c, s, c2s, s2c, eof = pair
                    if not eof[0] and len(c2s) < 1 << 20:
                        rl.append(c)
                    if not eof[1] and len(s2c) < 1 << 20:
                        rl.append(s)
                    if c2s:
                        wl.append(s)
                    if s2c:
                        wl.append(c)
            try:
                r, w, _ = select.select(rl, wl, [], 1.0)
            except (OSError, ValueError):
                self._pairs = [p for p in self._pairs if p[0].fileno() >= 0 and p[1].fileno() >= 0]
                continue
            if self._wake_r in r:
                os.read(self._wake_r, 64)
                with_cmds = True
                while with_cmds:
                    with_cmds = False
                    if self._cmd:
                        cmd = self._cmd.pop(0)
                        with_cmds = True
                        if cmd == "freeze":
                            self.frozen = True
                        elif cmd == "thaw":
                            self.frozen = False
                        elif cmd == "reset":
                            for pair in list(self._pairs):
                                for sock in pair[:2]:
                                    try:
                                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                        b"\x01\x00\x00\x00\x00\x00\x00\x00")
                                    except OSError:
                                        pass
                                self._close_pair(pair)
                        elif cmd == "stop":
                            self._running = False
                            for pair in list(self._pairs):
                                self._close_pair(pair)
                            self.lsock.close()
                self._ack.set()
                continue  # the state may have changed: select again
            if self.frozen:
                continue
            if self.lsock in r:
                try:
                    while True:
                        c, _ = self.lsock.accept()
                        try:
                            s = socket.create_connection(self.upstream, timeout=5)
                        except OSError:
                            c.close()
                            continue
                        for sock in (c, s):
                            sock.setblocking(False)
                            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        self._pairs.append([c, s, bytearray(), bytearray(), [False, False]])
                        self.connections += 1
                except BlockingIOError:
                    pass
            for pair in list(self._pairs):
                c, s, c2s, s2c, eof = pair
                try:
                    if c in r and not eof[0]:
                        data = c.recv(65536)
                        if data:
                            c2s += data
                        else:
                            eof[0] = True
                    if s in r and not eof[1]:
                        data = s.recv(65536)
                        if data:
                            s2c += data
                        else:
                            eof[1] = True
                    if s in w and c2s:
                        n = s.send(c2s)
                        del c2s[:n]
                    if c in w and s2c:
                        n = c.send(s2c)
                        del s2c[:n]
                    if eof[0] and not c2s:
                        s.shutdown(socket.SHUT_WR)
                    if eof[1] and not s2c:
                        c.shutdown(socket.SHUT_WR)
                    if eof[0] and eof[1] and not c2s and not s2c:
                        self._close_pair(pair)
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    self._close_pair(pair)


# --------------------------------------------------------------------------
# PgBouncer between pgleader and PostgreSQL

class PgBouncer:
    """Debian's pgbouncer in front of a cluster, on 127.0.0.1:<port>, run as
    postgres when we are root, ended by PID."""

    def __init__(self, cluster, pool_mode="transaction", settings=None, databases=None):
        """settings: more [pgbouncer] lines (name: value), e.g.
        max_client_conn for a large fleet; databases: more [databases]
        entries (name: the server's database), each on the cluster."""
        self.cluster = cluster
        self.base = make_tempdir("pgl-bouncer-")
        chown_to_pg(self.base)
        self.port = free_port()
        self.ini = os.path.join(self.base, "pgbouncer.ini")
        self.logfile = os.path.join(self.base, "pgbouncer.log")
        users = os.path.join(self.base, "userlist.txt")
        with open(users, "w") as f:
            f.write('"postgres" ""\n')
        with open(self.ini, "w") as f:
            f.write("""[databases]
postgres = host=127.0.0.1 port=%(pgport)d dbname=postgres user=postgres
%(more)s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %(port)d
unix_socket_dir = %(base)s
auth_type = trust
auth_file = %(users)s
pool_mode = %(mode)s
default_pool_size = 4
ignore_startup_parameters = extra_float_digits,options
logfile = %(log)s
pidfile = %(base)s/pgbouncer.pid
admin_users = postgres
server_check_delay = 0
""" % dict(pgport=cluster.port, port=self.port, base=self.base, users=users,
                mode=pool_mode, log=self.logfile,
                more="".join("%s = host=127.0.0.1 port=%d dbname=%s user=postgres\n"
                             % (name, cluster.port, db)
                             for name, db in (databases or {}).items())))
            for k, v in (settings or {}).items():
                f.write("%s = %s\n" % (k, v))
        chown_to_pg(self.base, recursive=True)
        self._out = open(os.path.join(self.base, "pgbouncer.out"), "wb")
        self.proc = subprocess.Popen(["/usr/sbin/pgbouncer", self.ini], stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=self._out, cwd=self.base,
                                     start_new_session=True, **pg_popen_kwargs())
        self.pid = self.proc.pid
        try:
            wait_until(self._ready, 15, interval=0.05, what="pgbouncer to accept connections")
        except AssertionError:
            self.stop()
            raise

    def _ready(self):
        if self.proc.poll() is not None:
            raise RuntimeError("pgbouncer exited %s:\n%s" % (self.proc.returncode, self.log()))
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def dsn(self, user="postgres", dbname="postgres"):
        return "host=127.0.0.1 port=%d dbname=%s user=%s" % (self.port, dbname, user)

    def show(self, what):
        """The admin console's SHOW <what>: a list of dicts by column."""
        argv = [os.path.join(PG_BINDIR, "psql"), "-X", "-A", "-q", "-F", "|",
                "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "pgbouncer",
                "-c", "SHOW " + what]
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True,
                             env=dict(os.environ, PGCONNECT_TIMEOUT="5"),
                             **pg_popen_kwargs()).stdout.decode()
        lines = [l for l in out.splitlines() if "|" in l]
        if not lines:
            return []
        cols = lines[0].split("|")
        return [dict(zip(cols, l.split("|"))) for l in lines[1:]]

    def server_pids(self):
        """The backends PgBouncer holds (SHOW SERVERS' remote_pid)."""
        return {int(r["remote_pid"]) for r in self.show("SERVERS")
                if r.get("remote_pid", "").isdigit()}

    def psql(self, sql):
        argv = [os.path.join(PG_BINDIR, "psql"), "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
                "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres",
                "-c", sql]
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        if r.returncode != 0:
            raise RuntimeError("psql via pgbouncer failed: %s" % r.stderr.decode(errors="replace"))
        return [l.split("|") for l in r.stdout.decode().splitlines() if l]

    def log(self):
        return read_text(self.logfile) + read_text(os.path.join(self.base, "pgbouncer.out"))

    def stop(self):
        if self.proc.poll() is None:
            kill_quietly(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                kill_quietly(self.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._out.close()
        if not KEEP:
            shutil.rmtree(self.base, ignore_errors=True)


def kill9_all(nodes):
    """kill -9 of nodes (Pgleader processes) at once: each is stopped
    (SIGSTOP) before any is killed, so that none acts on another's death
    (a queued standby granted the lock of a leader killed before it, and
    starting its command) before its own. Returns the time of the kills."""
    for p in nodes:
        assert p.running(), "%s exited by itself:\n%s" % (p.name, tail(p.text(), 20))
        p.remember_descendants()
    for p in nodes:
        os.kill(p.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    for p in nodes:
        os.kill(p.pid, signal.SIGKILL)
    for p in nodes:
        assert p.wait(10) == -signal.SIGKILL
    return t0


if __name__ == "__main__":
    # A smoke run: python3 tests/integration/pgharness.py
    c = PgCluster("smoke")
    try:
        t = time.monotonic()
        c.start()
        print("started %r in %.2fs" % (c, time.monotonic() - t))
        print(c.psql("SELECT version()")[0][0])
    finally:
        c.destroy()
        _cleanup_template()
