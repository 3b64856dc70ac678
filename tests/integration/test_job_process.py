"""The job's process (DESIGN 13, issue 24): environment (systemd's quoting),
environment_file, working_directory, user and group, as the command sees
them from a file it writes; user and group refused as non-root (exit 78,
one line); a command with shell syntax refused without shell = on, and run
through /bin/sh -c with it."""

import json
import os
import pwd
import grp
import shutil
import signal
import stat
import tempfile

import pytest

import pgharness as h
from pgharness import bound

# The command: writes what its process is to the file named by argv[1].
PROBE = r"""
import json, os, sys
keys = ("APP_ENV", "GREETING", "FROM_FILE", "BOTH", "QUOTED", "HOME", "USER",
        "LOGNAME", "PGLEADER_JOB", "PGLEADER_DSN")
out = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
       "egid": os.getegid(), "groups": sorted(os.getgroups()), "cwd": os.getcwd(),
       "env": {k: os.environ.get(k) for k in keys}}
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as f:
    json.dump(out, f)
os.rename(tmp, sys.argv[1])
"""

NOBODY = "nobody"


@pytest.fixture
def shared_dir():
    """A directory every user may write to (the command may run as nobody),
    removed afterwards."""
    d = tempfile.mkdtemp(prefix="pgleader-jobproc-")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def probe_script(d):
    path = os.path.join(d, "probe.py")
    with open(path, "w") as f:
        f.write(PROBE)
    os.chmod(path, 0o644)
    return path


def read_probe(path):
    h.wait_until(lambda: os.path.exists(path), bound(15), interval=0.05,
                 what="the command's report %s" % path)
    with open(path) as f:
        return json.load(f)


def env_file(d, text):
    path = os.path.join(d, "app.env")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)  # read by pgleader as root, not by the command
    return path


def nobody_ids():
    pw = pwd.getpwnam(NOBODY)
    return pw.pw_uid, pw.pw_gid, pw.pw_dir


def test_environment_file_and_directory(fleet_shared, shared_dir):
    """The single command with the options: the quoting of environment, the
    file's lines winning over it, the directory, pgleader's DSN kept out."""
    probe, out = probe_script(shared_dir), os.path.join(shared_dir, "out.json")
    env = env_file(shared_dir, "# the application's secrets\n; and a note\n\n"
                   "FROM_FILE = 'from the file'  \nBOTH=file\n")
    work = os.path.join(shared_dir, "work")
    os.mkdir(work)
    p = fleet_shared.start("a", "--environment",
                           'APP_ENV=prod "GREETING=hello world" BOTH=key QUOTED="a\\"b"',
                           "--environment-file", env, "--working-directory", work,
                           command=["python3", probe, out],
                           env={"PGLEADER_DSN": fleet_shared.dsn, "BOTH": "pgleader's"})
    got = read_probe(out)
    assert p.wait(bound(10)) == 0
    assert got["env"]["APP_ENV"] == "prod"
    assert got["env"]["GREETING"] == "hello world"
    assert got["env"]["FROM_FILE"] == "from the file"
    assert got["env"]["BOTH"] == "file"  # the file wins, as in systemd
    assert got["env"]["QUOTED"] == 'a"b'
    assert got["env"]["PGLEADER_DSN"] is None
    assert got["cwd"] == work
    assert got["uid"] == os.geteuid()


@pytest.mark.skipif(not h.is_root(), reason="user and group need root")
def test_user_group_and_sections(pg_shared, fleet_shared, shared_dir, lock_key, workdir):
    """[pgleader]'s user reaches a section that leaves it out; a section's
    own group, environment and directory are its own; the ids are set
    before the command runs (uid, gid, groups, HOME)."""
    probe = probe_script(shared_dir)
    outs = {n: os.path.join(shared_dir, "%s.json" % n) for n in ("inherits", "own")}
    uid, gid, home = nobody_ids()
    conf = os.path.join(str(workdir), "jobs.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\nuser = %s\n"
                "environment = APP_ENV=top\n" % (pg_shared.dsn(), lock_key, NOBODY))
        f.write("[job.inherits]\ncommand = python3 %s %s\nschedule = @every 1s\n"
                % (probe, outs["inherits"]))
        f.write("[job.own]\ncommand = python3 %s %s\nschedule = @every 1s\n"
                "group = %s\nenvironment = APP_ENV=own\nworking_directory = %s\n"
                % (probe, outs["own"], grp.getgrgid(0).gr_name, shared_dir))
    fleet_shared.start("a", raw=["-c", conf, "--node-id", "a"] + list(h.FAST))
    inherits, own = read_probe(outs["inherits"]), read_probe(outs["own"])
    assert (inherits["uid"], inherits["euid"]) == (uid, uid)
    assert (inherits["gid"], inherits["egid"]) == (gid, gid)
    assert inherits["groups"] == sorted(set(os.getgrouplist(NOBODY, gid)))
    assert inherits["env"]["HOME"] == home and inherits["env"]["USER"] == NOBODY
    assert inherits["env"]["APP_ENV"] == "top"
    assert inherits["env"]["PGLEADER_JOB"] == "inherits"
    assert (own["uid"], own["gid"], own["egid"]) == (uid, 0, 0)
    assert own["env"]["APP_ENV"] == "own"
    assert own["cwd"] == shared_dir


@pytest.mark.skipif(not h.is_root(), reason="the command runs as nobody")
def test_directory_the_user_may_not_enter_is_126(fleet_shared, shared_dir):
    closed = os.path.join(shared_dir, "closed")
    os.mkdir(closed, 0o700)
    p = fleet_shared.start("a", "--user", NOBODY, "--working-directory", closed,
                           command=["true"])
    assert p.wait(bound(10)) == 126
    assert "pgleader: cannot change to directory %s: Permission denied" % closed in p.text()


NOT_ROOT = "setpriv --reuid=%d --regid=%d --clear-groups"


@pytest.mark.skipif(not h.is_root(), reason="setpriv needs root to drop to nobody")
@pytest.mark.parametrize("args,line", [
    (["--user", NOBODY], "--user: needs pgleader to run as root to switch to it"),
    (["--group", "root"], "--group: needs pgleader to run as root to switch to it"),
])
def test_user_and_group_refused_as_non_root(workdir, args, line):
    uid, gid, _ = nobody_ids()
    os.chmod(str(workdir), 0o777)
    p = h.Pgleader(["--dsn", "host=127.0.0.1 port=1 dbname=x"] + args + ["--", "true"],
                   workdir, name="nonroot", wrapper=NOT_ROOT % (uid, gid))
    try:
        assert p.wait(bound(10)) == 78
        lines = [l for l in p.text().splitlines() if not l.startswith("# ")]
        assert len(lines) == 1, lines
        assert line in lines[0] and "(it runs as uid %d)" % uid in lines[0], lines
    finally:
        p.cleanup()


@pytest.mark.skipif(not h.is_root(), reason="setpriv needs root to drop to nobody")
def test_section_user_refused_as_non_root_names_file_and_line(workdir, shared_dir):
    uid, gid, _ = nobody_ids()
    os.chmod(str(workdir), 0o777)
    conf = os.path.join(shared_dir, "jobs.conf")  # nobody must read it
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = host=127.0.0.1 port=1 dbname=x\n"
                "[job.report]\ncommand = true\nuser = %s\n" % NOBODY)
    os.chmod(conf, 0o644)
    p = h.Pgleader(["-c", conf], workdir, name="nonroot", wrapper=NOT_ROOT % (uid, gid))
    try:
        assert p.wait(bound(10)) == 78
        assert "%s:5: [job.report] user: needs pgleader to run as root" % conf in p.text()
    finally:
        p.cleanup()


def cleanup_conf(workdir, pg, key, shell, d):
    script = os.path.join(d, "cleanup.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho cleaned\necho warned >&2\n")
    os.chmod(script, 0o755)
    conf = os.path.join(str(workdir), "cron.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\n\n[job.cleanup]\n"
                "command = ./cleanup.sh >> out 2>&1\nschedule = @every 1s\n"
                "working_directory = %s\n%s" % (pg.dsn(), key, d,
                                                 "shell = on\n" if shell else ""))
    return conf


def test_crontab_line_refused_without_shell(pg_shared, fleet_shared, shared_dir, lock_key,
                                            workdir):
    conf = cleanup_conf(workdir, pg_shared, lock_key, False, shared_dir)
    p = fleet_shared.start("a", raw=["-c", conf, "--node-id", "a"])
    assert p.wait(bound(10)) == 78
    lines = [l for l in p.text().splitlines() if not l.startswith("# ")]
    assert len(lines) == 1, lines
    assert ("%s:6: [job.cleanup] command: job cleanup: the command holds shell syntax '>>'"
            % conf) in lines[0]
    assert "set shell = on" in lines[0]
    assert not os.path.exists(os.path.join(shared_dir, "out"))


def test_crontab_line_runs_with_shell_on(pg_shared, fleet_shared, shared_dir, lock_key,
                                         workdir):
    conf = cleanup_conf(workdir, pg_shared, lock_key, True, shared_dir)
    fleet_shared.start("a", raw=["-c", conf, "--node-id", "a"] + list(h.FAST))
    out = os.path.join(shared_dir, "out")
    h.wait_until(lambda: os.path.exists(out) and h.read_text(out).count("warned") >= 2,
                 bound(15), interval=0.05, what="two runs appended to %s" % out)
    text = h.read_text(out)
    assert text.startswith("cleaned\nwarned\ncleaned\nwarned\n"), text


def guards_of(pid):
    """pid's live guard processes: a killed guard stays a child, a zombie,
    until pgleader's loop reaps it."""
    out = []
    for k in h.children_of(pid):
        if not h.pid_alive(k):
            continue
        try:
            with open("/proc/%d/comm" % k) as f:
                if f.read().strip() == "pgl-guard":
                    out.append(k)
        except OSError:
            pass
    return out


def test_one_guard_and_a_stopped_one_is_replaced(pg_shared, fleet_shared, lock_key, workdir):
    """make bench's 50 jobs (issue 24): one guard for all of the leader's
    runs, not one fork each; a guard that stops reading (SIGSTOP) is found
    when its socket fills, killed and replaced, and the loop never blocks
    on it: the runs go on."""
    conf = os.path.join(str(workdir), "fifty.conf")
    with open(conf, "w") as f:
        f.write("[pgleader]\ndsn = %s\nlock_key = %d\n" % (pg_shared.dsn(), lock_key))
        for i in range(50):
            f.write("[job.j%02d]\ncommand = true\nschedule = @every 1s\n" % i)
    p = fleet_shared.start("a", raw=["-c", conf, "--node-id", "a"] + list(h.FAST))
    p.wait_for_log(r"job j49: command exited", timeout=15)
    guards = guards_of(p.pid)
    assert len(guards) == 1, guards
    p.remember_descendants()
    os.kill(guards[0], signal.SIGSTOP)
    p.wait_for_log(r"warning: cannot tell the guard process \(pid %d\) .*: "
                   r"Resource temporarily unavailable; starting a new one" % guards[0],
                   timeout=bound(20))
    h.wait_until(lambda: not h.pid_alive(guards[0]), bound(5), what="the stopped guard killed")
    new = h.wait_until(lambda: guards_of(p.pid), bound(5), what="a new guard")
    assert len(new) == 1 and new[0] != guards[0], new
    h.wait_until(lambda: h.proc_stat(guards[0]) is None, bound(5),
                 what="the killed guard reaped, not left a zombie")
    mark = p.mark()
    p.wait_for_log(r"job j00: command exited", timeout=bound(5), after=mark)
