"""Fixtures of the pgleader integration tests: a private PostgreSQL, pgleader
nodes, the toy job's ledger, a freezable proxy and PgBouncer. Every process a
test starts is ended by PID when the test ends, pass or fail; a failing test
prints the pgleader, PostgreSQL (and PgBouncer) logs."""

import hashlib
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pgharness as h  # noqa: E402

LOGS = pytest.StashKey()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long tests (partition, frozen leader, server lease, many cycles)")
    config.addinivalue_line("markers", "valgrind: the subset run under PGLEADER_WRAPPER=valgrind")
    config.addinivalue_line("markers", "pooler: needs PgBouncer")


def pytest_report_header(config):
    return "pgleader: %s%s%s (time scale %.1f)" % (
        h.pgleader_bin(), " wrapper=" + h.WRAPPER if h.WRAPPER else "",
        " sanitized" if h.SANITIZED else "", h.SCALE)


def add_logs(item, title, source):
    """Registers a log for the failure report: source is a callable returning
    text, or a list of (title, text)."""
    item.stash.setdefault(LOGS, []).append((title, source))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
    if not rep.failed:
        return
    if rep.when == "teardown" and getattr(item, "_pgl_logs_shown", False):
        return
    item._pgl_logs_shown = True
    for title, source in item.stash.get(LOGS, []):
        try:
            got = source()
        except Exception as e:  # the report must not fail
            got = "(could not read: %s)" % e
        if isinstance(got, list):
            for t, text in got:
                rep.sections.append((t, h.tail(text, 300)))
        else:
            rep.sections.append((title, h.tail(got, 300)))


def _key_for(nodeid):
    """A per-test lock key, deterministic, spread over the signed range."""
    return h.to_signed64(int.from_bytes(hashlib.sha256(nodeid.encode()).digest()[:8], "big"))


@pytest.fixture
def workdir(tmp_path):
    os.chmod(tmp_path, 0o755)
    return tmp_path


@pytest.fixture
def ledger(workdir, request):
    led = h.Ledger(workdir / "ledger")
    add_logs(request.node, "ledger", led.text)
    return led


@pytest.fixture
def pg(request):
    """A started PostgreSQL for this test only."""
    c = h.PgCluster("pg")
    add_logs(request.node, "postgresql log", c.log)
    try:
        c.start()
        yield c
    finally:
        c.destroy()


@pytest.fixture(scope="module")
def _pg_module():
    c = h.PgCluster("pgmod")
    try:
        c.start()
        yield c
    finally:
        c.destroy()


@pytest.fixture
def pg_shared(_pg_module, request):
    """A PostgreSQL shared by the tests of one module (each uses its own lock
    key); restarted if a test left it down."""
    if not _pg_module.running():
        _pg_module.start()
    add_logs(request.node, "postgresql log (shared)", _pg_module.log)
    return _pg_module


@pytest.fixture
def lock_key(request):
    return _key_for(request.node.nodeid)


def _fleet(request, workdir, ledger, key, dsn):
    fleet = h.Fleet(workdir, ledger, key, dsn)
    add_logs(request.node, "pgleader logs", fleet.all_logs)
    return fleet


def _finish(fleet):
    fleet.cleanup()
    problems = fleet.problems()
    if problems:
        pytest.fail("memory/UB checker reports:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture
def fleet(request, workdir, ledger, lock_key, pg):
    """Starts pgleader nodes against `pg`; ends them all afterwards and fails
    the test on a sanitizer or valgrind report."""
    f = _fleet(request, workdir, ledger, lock_key, pg.dsn())
    yield f
    _finish(f)


@pytest.fixture
def fleet_shared(request, workdir, ledger, lock_key, pg_shared):
    f = _fleet(request, workdir, ledger, lock_key, pg_shared.dsn())
    yield f
    _finish(f)


@pytest.fixture
def proxy(pg):
    p = h.FrozenProxy(pg.port)
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture
def pgbouncer(pg, request):
    if not os.path.exists("/usr/sbin/pgbouncer"):
        pytest.fail("pgbouncer is not installed (apt-get install -y pgbouncer)")
    b = h.PgBouncer(pg, pool_mode="transaction")
    add_logs(request.node, "pgbouncer log", b.log)
    try:
        yield b
    finally:
        b.stop()
