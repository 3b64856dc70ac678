#!/usr/bin/python3 -I -S
"""The toy command that pgleader runs in the integration tests.

Appends events to a shared ledger file, one line each, written with a single
O_APPEND write so that concurrent writers never interleave; every line ends
with " ." so a reader can tell a complete line. Times are CLOCK_MONOTONIC
(time.monotonic()), comparable with the test's own clock.

    start <node> <pid> token=<T> t=<mono> pgid=<G> ppid=<P> key=<K> sid=<S>
          job=<PGLEADER_JOB> tick=<PGLEADER_TICK> run=<PGLEADER_RUN_ID> ("-": unset)
    term <node> <pid> t=<mono>                 SIGTERM received
    signal <node> <pid> sig=<NAME> t=<mono>    SIGHUP / SIGUSR1 / SIGUSR2
    stop <node> <pid> t=<mono> why=<term|exit|signal>
    gstart / gterm / gstop                     the same, for grandchildren

Variants: --ignore-term, --grandchildren N [--grandchildren-ignore-term]
[--grandchildren-setsid: they leave the job's process group and session]
[--grandchildren-term-delay SECONDS: they take that long to stop],
--exit CODE [--after SECONDS], --kill-self SIGNUM [--after SECONDS],
--env-file FILE (environment, open descriptors and signal state as JSON),
--term-delay SECONDS (slow shutdown), --term-exit CODE.
"""

import os
import signal
import sys
import time

# Before anything opens a file: what did we inherit?
_FDS = {}
for _fd in os.listdir("/proc/self/fd"):
    try:
        _FDS[int(_fd)] = os.readlink("/proc/self/fd/" + _fd)
    except OSError:
        pass
with open("/proc/self/status") as _f:
    _STATUS = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in _f if ":" in l}


def parse(argv):
    opts = {"ledger": None, "node": os.environ.get("PGLEADER_NODE_ID", "?"),
            "ignore_term": False, "grandchildren": 0, "gc_ignore_term": False,
            "exit": None, "after": None, "kill_self": None, "env_file": None,
            "term_delay": 0.0, "term_exit": 0, "grandchild": False,
            "gc_setsid": False, "gc_term_delay": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        val = argv[i + 1] if i + 1 < len(argv) else None
        if a == "--ledger":
            opts["ledger"] = val; i += 1
        elif a == "--node":
            opts["node"] = val; i += 1
        elif a == "--ignore-term":
            opts["ignore_term"] = True
        elif a == "--grandchildren":
            opts["grandchildren"] = int(val); i += 1
        elif a == "--grandchildren-ignore-term":
            opts["gc_ignore_term"] = True
        elif a == "--grandchildren-setsid":
            opts["gc_setsid"] = True
        elif a == "--grandchildren-term-delay":
            opts["gc_term_delay"] = val; i += 1
        elif a == "--exit":
            opts["exit"] = int(val); i += 1
        elif a == "--after":
            opts["after"] = float(val); i += 1
        elif a == "--kill-self":
            opts["kill_self"] = int(val); i += 1
        elif a == "--env-file":
            opts["env_file"] = val; i += 1
        elif a == "--term-delay":
            opts["term_delay"] = float(val); i += 1
        elif a == "--term-exit":
            opts["term_exit"] = int(val); i += 1
        elif a == "--grandchild":
            opts["grandchild"] = True
        else:
            sys.stderr.write("job.py: unknown argument %s\n" % a)
            sys.exit(2)
        i += 1
    if not opts["ledger"]:
        sys.stderr.write("job.py: --ledger is required\n")
        sys.exit(2)
    return opts


O = parse(sys.argv[1:])
PREFIX = "g" if O["grandchild"] else ""
LEDGER = os.open(O["ledger"], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
PID = os.getpid()


def record(kind, *fields):
    line = "%s%s %s %d %s t=%.6f ." % (PREFIX, kind, O["node"], PID,
                                       " ".join(fields), time.monotonic())
    line = " ".join(line.split()) + "\n"
    os.write(LEDGER, line.encode())


def on_term(signum, frame):
    record("term")
    if O["ignore_term"]:
        return
    if O["term_delay"]:
        time.sleep(O["term_delay"])
    record("stop", "why=term")
    os._exit(O["term_exit"])


def on_other(signum, frame):
    record("signal", "sig=%s" % signal.Signals(signum).name)


def spawn_grandchildren():
    import subprocess
    for _ in range(O["grandchildren"]):
        argv = [sys.executable, "-I", "-S", os.path.abspath(__file__), "--grandchild",
                "--ledger", O["ledger"], "--node", O["node"]]
        if O["gc_ignore_term"]:
            argv.append("--ignore-term")
        if O["gc_term_delay"] is not None:
            argv += ["--term-delay", O["gc_term_delay"]]
        # Not waited for: when the job dies first they are orphans, which a
        # subreaper (pgleader) must reap.
        subprocess.Popen(argv, close_fds=True, start_new_session=O["gc_setsid"])


def main():
    signal.signal(signal.SIGTERM, on_term)
    for s in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, on_other)
    if O["env_file"] and not O["grandchild"]:
        import json
        data = {"env": dict(os.environ), "fds": _FDS, "status": _STATUS,
                "pid": PID, "pgid": os.getpgid(0), "sid": os.getsid(0), "ppid": os.getppid()}
        tmp = O["env_file"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.rename(tmp, O["env_file"])
    record("start", "token=%s" % os.environ.get("PGLEADER_FENCING_TOKEN", "-"),
           "pgid=%d" % os.getpgid(0), "ppid=%d" % os.getppid(),
           "key=%s" % os.environ.get("PGLEADER_LOCK_KEY", "-"), "sid=%d" % os.getsid(0),
           "job=%s" % os.environ.get("PGLEADER_JOB", "-"),
           "tick=%s" % os.environ.get("PGLEADER_TICK", "-"),
           "run=%s" % os.environ.get("PGLEADER_RUN_ID", "-"))
    if O["grandchildren"] and not O["grandchild"]:
        spawn_grandchildren()
    if O["after"] is not None or O["exit"] is not None or O["kill_self"] is not None:
        if O["after"]:
            end = time.monotonic() + O["after"]
            while time.monotonic() < end:
                time.sleep(max(0.0, min(0.05, end - time.monotonic())))
        if O["kill_self"] is not None:
            record("stop", "why=signal")
            if O["kill_self"] not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(O["kill_self"], signal.SIG_DFL)
            os.kill(PID, O["kill_self"])
            time.sleep(5)
        code = O["exit"] if O["exit"] is not None else 0
        record("stop", "why=exit", "code=%d" % code)
        os._exit(code)
    while True:
        time.sleep(3600)


main()
