"""The configuration of schedules and jobs (DESIGN 10) seen from the outside:
a bad expression or zone, a bad [job.NAME] section or a misplaced key of a
schedule is one line from the real binary, 64 on the command line and 78
with file:line from a file or the variable's name from the environment, and
it comes before any connection: the DSN points at a listening socket that
must never see one."""

import os
import socket
import time

import pytest

import pgharness as h
from pgharness import bound


@pytest.fixture
def listener():
    """A TCP socket that listens and never answers: a connection attempt
    would show as a pending connection."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)
    yield s
    s.close()


@pytest.fixture
def nodes(workdir):
    """The pgleader processes of one test, each ended by its PID afterwards."""
    started = []

    def start(args, env=None, name="cfg"):
        p = h.Pgleader(args, workdir, name="%s-%d" % (name, len(started)), env=env)
        started.append(p)
        return p
    yield start
    for p in started:
        p.cleanup()


def connections(listener):
    n = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return n
        conn.close()
        n += 1


def dsn(listener):
    return "host=127.0.0.1 port=%d connect_timeout=30 dbname=x user=x" % listener.getsockname()[1]


FILE = object()  # stands for the configuration file's path in an expected prefix

CASES = [
    # (id, file content, environment, options, exit code, message prefix)
    ("argv-expression", None, {}, ["--schedule", "* * *"], 64, ["--schedule: "]),
    ("argv-shorthand", None, {}, ["--schedule", "@fortnightly"], 64, ["--schedule: "]),
    ("argv-every", None, {}, ["--schedule=@every soon"], 64, ["--schedule: "]),
    ("argv-zone", None, {}, ["--schedule", "@daily", "--timezone", "Mars/Olympus_Mons"], 64,
     ["--timezone: "]),
    ("file-expression", "[pgleader]\nschedule = 0 3 * *\n", {}, [], 78,
     [FILE, ":2: schedule: "]),
    ("file-zone", "[pgleader]\nschedule = @daily\ntimezone = Europe/Nowhere\n", {}, [], 78,
     [FILE, ":3: timezone: "]),
    ("env-expression", None, {"PGLEADER_SCHEDULE": "every day"}, [], 78,
     ["PGLEADER_SCHEDULE: "]),
    ("env-zone", None, {"PGLEADER_TIMEZONE": "Nowhere"}, [], 78, ["PGLEADER_TIMEZONE: "]),
    ("section-expression", "[job.refresh]\ncommand = true\n\nschedule = */15 * *\n", {}, [], 78,
     [FILE, ":4: [job.refresh] schedule: "]),
    ("section-zone", "[job.a]\ncommand = true\nschedule = @daily\ntimezone = Berlin/Europe\n",
     {}, [], 78, [FILE, ":4: [job.a] timezone: "]),
    ("section-twice", "[job.a]\ncommand = true\n[job.a]\ncommand = false\n", {}, [], 78,
     [FILE, ":3: [job.a] is already defined on line 1"]),
    ("section-unknown-key", "[job.a]\ncommand = true\nlock_key = 1\n", {}, [], 78,
     [FILE, ":3: unknown key \"lock_key\" in [job.a] "]),
    ("section-no-command", "[job.a]\nschedule = @daily\n", {}, [], 78,
     [FILE, ":1: [job.a] has no command"]),
    ("section-bad-name", "[job.a b]\ncommand = true\n", {}, [], 78,
     [FILE, ":1: invalid job name \"a b\""]),
    # issue 25: far too often, no unit, never, nothing, six fields, a typo
    ("argv-every-1ms", None, {}, ["--schedule=@every 1ms"], 64,
     ["--schedule: invalid schedule \"@every 1ms\": @every needs at least 1s"]),
    ("argv-every-bare", None, {}, ["--schedule", "@every 5"], 64,
     ["--schedule: invalid schedule \"@every 5\": @every needs a unit: 5s or 5m"]),
    ("argv-never", None, {}, ["--schedule", "0 0 30 2 *"], 64,
     ["--schedule: invalid schedule \"0 0 30 2 *\": no date matches it"]),
    ("argv-empty", None, {}, ["--schedule", ""], 64, ["--schedule: must not be empty"]),
    ("file-never", "[pgleader]\nschedule = 0 0 31 11 *\n", {}, [], 78,
     [FILE, ":2: schedule: invalid schedule \"0 0 31 11 *\": no date matches it"]),
    ("file-every-bare", "[job.a]\ncommand = true\nschedule = @every 10\n", {}, [], 78,
     [FILE, ":3: [job.a] schedule: invalid schedule \"@every 10\": @every needs a unit"]),
    ("file-six-fields", "[pgleader]\nschedule = 0 */5 * * * *\n", {}, [], 78,
     [FILE, ":2: schedule: invalid schedule \"0 */5 * * * *\": 6 fields, takes 5 "
      "(minute hour day-of-month month day-of-week): no seconds or year field"]),
    ("file-typo", "[pgleader]\nschedul = @daily\n", {}, [], 78,
     [FILE, ":2: unknown key \"schedul\" (did you mean schedule?)"]),
    ("argv-typo", None, {}, ["--scheduel", "@daily"], 64,
     ["unknown option --scheduel (did you mean --schedule?)"]),
    ("jitter-without-schedule", None, {}, ["--jitter", "5s"], 64,
     ["--jitter needs a schedule: "]),
    ("once-per-alone", None, {}, ["--once-per", "1h"], 64,
     ["--once-per needs --nonblock or --wait-timeout"]),
    ("status-nonblock", None, {}, ["status", "--nonblock"], 64,
     ["--nonblock is not valid with 'pgleader status'"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_refused_before_connecting(nodes, listener, workdir, case):
    _, content, env, options, code, prefix = case
    args = ["--dsn", dsn(listener), "--node-id", "n"]
    path = None
    if content is not None:
        path = str(workdir / "pgleader.conf")
        with open(path, "w") as f:
            f.write(content)
        args = ["-c", path] + args
    subcommand = options[:1] == ["status"]
    args = (options[:1] + args + options[1:]) if subcommand else (args + options)
    marker = workdir / "ran"
    if not subcommand and (content is None or "command" not in content):
        args += ["--", "touch", str(marker)]
    t0 = time.monotonic()
    p = nodes(args, env=env)
    assert p.wait(5) == code, p.text()
    assert time.monotonic() - t0 < bound(3), "not refused at once"
    out = [line for line in p.text().splitlines() if not line.startswith("# ")]
    expected = "pgleader: " + "".join(path if part is FILE else part for part in prefix)
    assert len(out) == 1 and out[0].startswith(expected), (expected, out)
    assert connections(listener) == 0, "connected before refusing its configuration"
    assert not marker.exists()


def test_good_schedule_goes_on_to_connect(nodes, listener, workdir):
    """The control for the cases above: the same options with a valid
    expression and zone pass the configuration and try the database."""
    conf = workdir / "pgleader.conf"
    conf.write_text("[job.refresh]\ncommand = true\nschedule = */15 * * * *\n"
                    "[job.cleanup]\ncommand = true\nschedule = 0 3 * * *\n"
                    "timezone = Europe/Berlin\n")
    p = nodes(["-c", str(conf), "--dsn", dsn(listener), "--node-id", "n"])
    h.wait_until(lambda: connections(listener) > 0 or not p.running(), bound(10),
                 what="a connection attempt")
    assert p.running(), p.text()
    assert p.stop() == 0, p.text()
    assert os.path.exists(p.logfile)
