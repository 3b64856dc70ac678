"""A run's output (DESIGN 13, issue 24) against a real PostgreSQL: each
line in pgleader's log with the job's name, the last output_tail bytes in
the run's row (`pgleader runs --output`), a run that floods held back by
the pipe (bounded memory, the lease kept), nothing, binary bytes, a last
line without a newline, stdout and stderr both; a failed run a warning
line with its last output line; `pgleader runs --failed`."""

import json
import os
import re
import subprocess
import time

import pgharness as h
from pgharness import bound
from test_status import run_status

TIMING = h.timing()
# a run going on, or a tick recorded without a run
NOT_ENDED = ("running", "skipped", "missed", "paused")


def script(workdir, name, body):
    """An executable /bin/sh script in workdir that runs body once: the
    later ticks' runs print nothing and exit 0."""
    path = os.path.join(str(workdir), name + ".sh")
    done = os.path.join(str(workdir), name + ".done")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nif [ -e %s ]; then exit 0; fi\ntouch %s\n%s\n" % (done, done, body))
    os.chmod(path, 0o755)
    return path


def write_conf(workdir, pg, lock_key, jobs, top=""):
    """A jobs file: jobs is [(name, command, extra lines)], each @every 1s."""
    conf = os.path.join(str(workdir), "output.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\n%s" % (pg.dsn(), lock_key, top))
        for name, command, extra in jobs:
            f.write("[job.%s]\ncommand = %s\nschedule = @every 1s\n%s" % (name, command, extra))
    return conf


def rows(pg, key, job):
    """[(run_id, outcome, exit_status, output as bytes or None)], oldest first."""
    got = pg.psql("SELECT run_id, outcome, coalesce(exit_status::text, ''),"
                  " coalesce(encode(output, 'hex'), 'NULL') FROM pgleader.runs"
                  " WHERE lock_key = %d AND job = '%s' ORDER BY tick" % (key, job))
    return [(int(r[0]), r[1], r[2], None if r[3] == "NULL" else bytes.fromhex(r[3]))
            for r in got]


def first_run(pg, key, job, timeout=10):
    """The job's first run once it has ended: (run_id, outcome, exit, output);
    the ticks recorded without a run meanwhile (skipped) are passed over."""
    def ended():
        try:
            done = [r for r in rows(pg, key, job) if r[1] not in NOT_ENDED]
        except RuntimeError:
            return None  # no ledger yet
        return done[0] if done else None
    return h.wait_until(ended, bound(timeout), interval=0.1, what="job %s's first run" % job)


def ended(pg, key, job):
    """Whether the job has a run that ended (False while there is no ledger)."""
    try:
        return any(r[1] not in NOT_ENDED for r in rows(pg, key, job))
    except RuntimeError:
        return False


def runs_output(workdir, pg, key, run_id):
    """`pgleader runs --output RUN_ID`: (exit code, stdout bytes, stderr)."""
    p = subprocess.run([h.pgleader_bin(), "runs", "--dsn", pg.dsn(), "--lock-key", str(key),
                        "--output", str(run_id)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       cwd=str(workdir), timeout=bound(30))
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def memory_kib(pid):
    """(VmRSS, VmHWM) of pid in KiB."""
    with open("/proc/%d/status" % pid) as f:
        vals = dict(line.split(":", 1) for line in f if ":" in line)
    return int(vals["VmRSS"].split()[0]), int(vals["VmHWM"].split()[0])


def test_a_flood_is_held_back_by_the_pipe(pg_shared, fleet_shared, lock_key, workdir):
    """10 MB of output: pgleader's memory stays where it was, the lease is
    kept (pings every 200 ms, lost after 1 s without), every line reaches
    the log with the job's name, and the row keeps the last 4 KiB."""
    lines, width = 100000, 100
    # 10 MB over about 3 s, longer than the lease's detection (1 s): a
    # reader that kept the loop until the run's end would lose the lease.
    flood = script(workdir, "flood", "exec python3 -c '%s'" % (
        "import sys, time\n"
        "chunk = (b\"x\" * %d + b\"\\n\") * 1000\n"
        "for _ in range(%d):\n"
        "    sys.stdout.buffer.write(chunk); sys.stdout.buffer.flush(); time.sleep(0.03)\n"
        "sys.stdout.buffer.write(b\"the end\\n\")\n" % (width - 1, lines // 1000)))
    conf = write_conf(workdir, pg_shared, lock_key, [("flood", flood, "")])
    a = fleet_shared.start("a", raw=["-c", conf, "--node-id", "a"] + TIMING)
    a.wait_for_log(r"acquired leader lease", timeout=bound(10))
    rss_before, _ = memory_kib(a.pid)
    # While it floods, the loop still pings every 200 ms: the newest
    # statement of pgleader/a's sessions is never old.
    longest, deadline = 0.0, time.monotonic() + bound(60)
    while not ended(pg_shared, lock_key, "flood"):
        assert time.monotonic() < deadline, "the flood did not end"
        age = pg_shared.scalar("SELECT extract(epoch FROM clock_timestamp() - max(query_start))"
                               " FROM pg_stat_activity WHERE application_name = 'pgleader/a'")
        longest = max(longest, float(age or 0))
        time.sleep(0.05)
    assert longest < bound(0.9), "no statement from pgleader for %.2fs" % longest
    run_id, outcome, status, out = first_run(pg_shared, lock_key, "flood")
    assert (outcome, status) == ("succeeded", "0")
    expected = (("x" * (width - 1) + "\n") * lines + "the end\n").encode()
    assert out == expected[-4096:], out[-200:]
    _, hwm = memory_kib(a.pid)
    assert hwm - rss_before < 8 * 1024, "pgleader grew from %d KiB to %d KiB" % (rss_before, hwm)
    text = a.text()
    assert text.count("flood: " + "x" * (width - 1) + "\n") == lines
    assert "flood: the end\n" in text
    assert "lost leader lease" not in text and text.count("acquired leader lease") == 1, \
        h.tail(text, 20)
    rc, got, err = runs_output(workdir, pg_shared, lock_key, run_id)
    assert rc == 0 and got == expected[-4096:], (rc, err)
    # The later runs print nothing: kept as the empty output, not as none.
    h.wait_until(lambda: any(r[3] == b"" for r in rows(pg_shared, lock_key, "flood")),
                 bound(10), what="a run that printed nothing")


def test_binary_no_newline_both_streams_and_nothing(pg_shared, fleet_shared, lock_key, workdir):
    binary = script(workdir, "binary",
                    r"printf 'a\000b\001c\033[31mred\377\n'; printf 'second\r\n'")
    nonl = script(workdir, "nonl", "printf 'first\\nno newline at the end'")
    both = script(workdir, "both", "echo 'to stdout'; echo 'to stderr' >&2")
    silent = script(workdir, "silent", "true")
    kept = script(workdir, "kept", "printf 'first\\nno newline at the end'")
    passed = script(workdir, "passed", "echo 'to stdout'; echo 'to stderr' >&2")
    conf = write_conf(workdir, pg_shared, lock_key,
                      [("binary", binary, ""), ("nonl", nonl, ""), ("both", both, ""),
                       ("silent", silent, ""), ("kept", kept, "output_tail = 5\n"),
                       ("passed", passed, "output = inherit\n")])
    a = fleet_shared.start("a", raw=["-c", conf, "--node-id", "a"] + TIMING)
    got = {j: first_run(pg_shared, lock_key, j)
           for j in ("binary", "nonl", "both", "silent", "kept", "passed")}
    assert all(r[1] == "succeeded" for r in got.values()), got
    assert got["binary"][3] == b"a\x00b\x01c\x1b[31mred\xff\nsecond\r\n"
    assert got["nonl"][3] == b"first\nno newline at the end"
    assert got["both"][3] == b"to stdout\nto stderr\n"
    assert got["silent"][3] == b""
    assert got["kept"][3] == b"e end"          # output_tail = 5
    assert got["passed"][3] is None            # output = inherit: not read
    a.wait_for_log(r"job passed: run \d+ for tick", timeout=bound(5))
    raw = open(a.logfile, "rb").read()
    # Control bytes never reach the log raw: one line, escaped.
    assert b"binary: a\\x00b\\x01c\\x1b[31mred\\xff\n" in raw, raw[-3000:]
    assert b"binary: second\n" in raw
    assert b"\x1b" not in raw and b"\x00" not in raw and b"\xff" not in raw
    assert b"nonl: first\n" in raw and b"nonl: no newline at the end\n" in raw
    assert b"both: to stdout\n" in raw and b"both: to stderr\n" in raw
    # inherit: the command's own lines, as it wrote them, without a name.
    assert re.search(rb"(?m)^to stdout\n", raw) and b"passed: to stdout" not in raw
    for job, want in (("binary", got["binary"][3]), ("silent", b""), ("kept", b"e end")):
        rc, out, err = runs_output(workdir, pg_shared, lock_key, got[job][0])
        assert (rc, out) == (0, want), (job, rc, out, err)
    rc, out, err = runs_output(workdir, pg_shared, lock_key, got["passed"][0])
    assert (rc, out) == (0, b"") and "has no stored output" in err, (rc, err)
    rc, out, err = runs_output(workdir, pg_shared, lock_key, 999999999)
    assert (rc, out) == (3, b"") and "has no run 999999999" in err, (rc, err)
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key),
                   "--job", "silent", "--json", subcommand="runs")
    doc = json.loads(r.out)
    assert doc and all(d["output_bytes"] == 0 for d in doc if d["outcome"] == "succeeded"), doc
    assert {d["run_id"] for d in doc} >= {got["silent"][0]}


def test_failed_run_is_a_warning_with_its_last_line(pg_shared, fleet_shared, lock_key, workdir):
    """At --log-level warning (cron's MAILTO habit) a failed run is one
    line with the job, the tick, the run id, the exit status and the last
    line it printed; its output lines (info) and the successes are not
    shown. runs --failed lists it and not the successes."""
    fail = script(workdir, "fail", "echo 'starting'; echo 'ERROR: disk full' >&2; echo; exit 3")
    ok = script(workdir, "ok", "echo fine")
    conf = write_conf(workdir, pg_shared, lock_key, [("fail", fail, ""), ("ok", ok, "")])
    a = fleet_shared.start("a", raw=["-c", conf, "--node-id", "a", "--log-level", "warning"]
                           + TIMING)
    run_id, outcome, status, _ = first_run(pg_shared, lock_key, "fail")
    assert (outcome, status) == ("failed", "3")
    first_run(pg_shared, lock_key, "ok")
    line = a.wait_for_log(r"warning: job fail: run (\d+) for tick (\S+) failed \(exit status 3, "
                          r"[0-9.]+s\); last output line: ERROR: disk full\n", timeout=bound(5))
    assert int(line.group(1)) == run_id
    time.sleep(0.3)
    text = a.text()
    assert "fail: starting" not in text and "ok: fine" not in text
    assert "job ok: run" not in text, "a success is info"
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key), "--failed",
                   "--json", subcommand="runs")
    doc = json.loads(r.out)
    assert [d["job"] for d in doc] == ["fail"] and doc[0]["run_id"] == run_id, doc
    assert doc[0]["output_bytes"] == len(b"starting\nERROR: disk full\n\n")
    r = run_status(workdir, "--dsn", pg_shared.dsn(), "--lock-key", str(lock_key), "--failed",
                   subcommand="runs")
    assert r.rc == 0 and " fail " in r.out and " ok " not in r.out, r


def test_on_failure_reads_the_tail_on_stdin(pg_shared, fleet_shared, lock_key, workdir):
    """DESIGN 13: on_failure gets the failed run's output tail on its
    stdin (the last output_tail bytes, as its row keeps them)."""
    fail = script(workdir, "fail", "echo 'first line'; echo 'ERROR: disk full' >&2; exit 3")
    got = os.path.join(str(workdir), "stdin.txt")
    hook = os.path.join(str(workdir), "hook.sh")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\ncat > %s.tmp && mv %s.tmp %s\n" % (got, got, got))
    os.chmod(hook, 0o755)
    conf = write_conf(workdir, pg_shared, lock_key,
                      [("fail", fail, "on_failure = %s\noutput_tail = 12\n" % hook)])
    fleet_shared.start("a", raw=["-c", conf, "--node-id", "a"] + TIMING)
    _, outcome, _, tail = first_run(pg_shared, lock_key, "fail")
    assert outcome == "failed" and tail == b": disk full\n", tail
    h.wait_until(lambda: os.path.exists(got), bound(10), what="on_failure's stdin written")
    assert open(got, "rb").read() == tail


def test_json_lines_carry_the_job(pg_shared, fleet_shared, lock_key, workdir):
    """--log-format json: each output line one JSON object (jansson), the
    job in its own field, the bytes that are not UTF-8 replaced."""
    binary = script(workdir, "jbin", r"""printf 'tab\there \001 \377 "q"\n'""")
    conf = write_conf(workdir, pg_shared, lock_key, [("jbin", binary, "")])
    a = fleet_shared.start("a", raw=["-c", conf, "--node-id", "a", "--log-format", "json"]
                           + TIMING)
    first_run(pg_shared, lock_key, "jbin")
    a.wait_for_log(r'"job":"jbin"', timeout=bound(5))
    objs = [json.loads(l) for l in a.text().splitlines() if l.startswith("{")]
    mine = [o for o in objs if o.get("job") == "jbin"]
    assert [o["message"] for o in mine] == ["tab\there \x01 \ufffd \"q\""], mine
    assert mine[0]["level"] == "info"


def test_single_command_inherits_unless_told(pg_shared, fleet_shared, lock_key, workdir):
    """The single command without a schedule keeps pgleader's own output
    (a Docker entrypoint's log), and touches no ledger; --output log names
    its lines "default: " (and still touches no ledger). A line longer than
    1000 bytes is logged in pieces of 1000."""
    schema = "output_%d" % (abs(lock_key) % 100000)
    cmd = ["/bin/sh", "-c", "echo plain; head -c 2500 /dev/zero | tr '\\0' y; echo; sleep 30"]
    a = fleet_shared.start("a", "--schema", schema, command=cmd, timing=TIMING)
    a.wait_for_log(r"(?m)^plain\n", timeout=bound(10))
    a.stop()
    b = fleet_shared.start("b", "--schema", schema, "--output", "log", command=cmd,
                           timing=TIMING)
    b.wait_for_log(r"default: plain\n", timeout=bound(10))
    b.wait_for_log(r"default: y{500}\n", timeout=bound(5))
    assert len(re.findall(r"default: y{1000}\n", b.text())) == 2, h.tail(b.text(), 10)
    b.stop()
    assert pg_shared.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = '%s'"
                            % schema) == "0"
