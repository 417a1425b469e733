"""pytest fixtures for dbcheck's integration tests (real servers on 127.0.0.1).

Run as root with Debian's interpreter: /usr/bin/python3 -m pytest tests/integration
Work directories live in /tmp (mode 0755 so postgres/etcd/haproxy can traverse
them); they are removed after a passing test and kept (path printed) after a failure.
"""

import os
import shutil
import signal
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.binaries import agent_bin as default_agent_bin, dbcheck_bin as default_dbcheck_bin
from lab.heartbeat import Heartbeat
from lab.procs import processes_matching, stop_pid, wait_until
from lab.dbcheck import write_check_wrapper, write_dbcheck_config, write_redis_config
from lab.haproxy import HAPROXY, HAProxy
from lab.patroni import ETCD, PATRONI, PATRONICTL, PG_BIN, PSQL, PatroniCluster
from lab.redis import REDIS_BINARIES, RedisSentinelCluster

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CFG = REPO_ROOT / "haproxy-examples" / "postgres-patroni.cfg"
SERVER_BINARIES = [PG_BIN / "postgres", PG_BIN / "initdb", PATRONI, PATRONICTL, ETCD, HAPROXY, PSQL,
                   "/usr/bin/setpriv", *REDIS_BINARIES]


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


# A SIGTERM (scripts/test stopping the other lane when one fails, a CI timeout) unwinds as
# Ctrl-C does, so pytest tears every fixture down and the servers this session started are
# stopped by their PIDs; by default the interpreter would die at once and leave them running.
signal.signal(signal.SIGTERM, _terminated)


def require_servers():
    """Fail (never skip) with a clear message unless we are root and every server
    binary is installed."""
    if os.geteuid() != 0:
        pytest.fail("integration tests must run as root (they start servers as postgres/etcd)", pytrace=False)
    missing = [str(p) for p in SERVER_BINARIES if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(f"missing server binaries: {', '.join(missing)} (run scripts/install-deps)",
                    pytrace=False)


# Every directory make_workdir made in this session (no_process_outlives_the_tests reads it).
_WORKDIRS = []


def make_workdir(prefix):
    """A new directory /tmp/<prefix>XXXXXX with mode 0755."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    _WORKDIRS.append(path)
    return path


def _report(config, text):
    """Print a line on the terminal, bypassing output capture."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if reporter and capman:
        with capman.global_and_fixture_disabled():
            reporter.write_line(text)
    else:
        print(text)


def finish_workdir(config, path, failed):
    """Remove `path` unless `failed`; then keep it and print where it is."""
    if failed:
        _report(config, f"\n[dbcheck-it] test failed: keeping {path}")
    else:
        shutil.rmtree(path, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Remember each phase's report on the item (item.rep_setup / rep_call / ...)."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


def _test_failed(item):
    """True if the setup or call phase of test `item` failed."""
    return any(getattr(getattr(item, f"rep_{w}", None), "failed", False) for w in ("setup", "call"))


def _our_processes(marks):
    """{pid: cmdline} of the live processes whose command line names one of `marks` (this
    session's directories: a process naming one is this session's)."""
    return {pid: cl for mark in marks for pid, cl in processes_matching(str(mark))}


def pytest_sessionfinish(session, exitstatus):
    """After every test and every fixture's teardown, no process this session started in its
    directories (make_workdir's, pytest's tmp_path) may still run: a leftover like an orphaned
    `status --watch` would go on asking servers long after its terminal is gone. Each leftover
    is stopped by its PID and the session fails, naming it."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    basetemp = getattr(factory, "_basetemp", None)
    marks = [*_WORKDIRS, *([basetemp] if basetemp else [])]
    if not marks:
        return
    try:
        wait_until(lambda: not _our_processes(marks), 15, "every process the tests started ended")
        return
    except AssertionError:
        leftover = _our_processes(marks)
    for pid in leftover:
        stop_pid(pid, timeout=5)
    _report(session.config, f"\n[dbcheck-it] FAILED: processes outlived the tests (stopped now): {leftover}")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def servers_installed():
    """Fails the requesting test unless running as root with every server installed."""
    require_servers()


@pytest.fixture
def workdir(request):
    """Per-test work directory (0755) in /tmp; kept and printed if the test fails."""
    path = make_workdir(f"dbcheck-it.{request.node.name[:20]}.")
    yield path
    finish_workdir(request.config, path, _test_failed(request.node))


def started_cluster(request, make, prefix, label):
    """Body of a cluster fixture (session or module): require_servers(), then make(workdir)
    (a cluster class, or a function that prepares the directory and returns the cluster) in a
    new /tmp/<prefix>XXXXXX, started and reported as "<label> up in ..." before it is
    yielded; stopped afterwards. The workdir is kept if preparing or starting fails or any
    test of the session failed, removed otherwise."""
    require_servers()
    path = make_workdir(prefix)
    try:
        cluster = make(path)
        cluster.start()
    except BaseException:
        finish_workdir(request.config, path, failed=True)
        raise
    _report(request.config, f"\n[dbcheck-it] {label} up in {cluster.up_seconds:.1f}s ({path})")
    yield cluster
    cluster.stop()
    finish_workdir(request.config, path, failed=request.session.testsfailed > 0)


@pytest.fixture(scope="session")
def pg_cluster(request):
    """Session-wide PatroniCluster (etcd + 3 members), healthy when handed out.
    Stopped at the end of the session; its workdir is kept if any test failed."""
    yield from started_cluster(request, PatroniCluster, "dbcheck-it-pg.", "Patroni cluster")


@pytest.fixture(scope="session")
def redis_cluster(request):
    """Session-wide RedisSentinelCluster (2 data nodes + 3 Sentinels), started and
    settled when handed out (the master may move: tests that fail over should end
    with redis_cluster.wait_stable()). Stopped at the end of the session; its
    workdir is kept if any test failed."""
    yield from started_cluster(request, RedisSentinelCluster, "dbcheck-it-redis.", "Redis Sentinel cluster")


@pytest.fixture(scope="session")
def dbcheck_bin():
    """Path of the dbcheck binary: $DBCHECK_BIN or <repo>/build/external-check/dbcheck.
    Fails (does not skip) if it is not an executable file."""
    path = default_dbcheck_bin()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"dbcheck binary not found at {path}: build it first or set DBCHECK_BIN", pytrace=False)
    return path.resolve()


@pytest.fixture(scope="session")
def agent_bin():
    """Path of the dbcheck-agent binary: $DBCHECK_AGENT_BIN or <repo>/build/agent/dbcheck-agent."""
    path = default_agent_bin()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"dbcheck-agent binary not found at {path}: build it first", pytrace=False)
    return path.resolve()


@pytest.fixture
def dbcheck_setup(workdir, pg_cluster, dbcheck_bin):
    """dbcheck.toml + 0600 password file (owner haproxy) for pg_cluster, and a wrapper
    script to use as `external-check command`. Namespace(config, password_file, wrapper)."""
    config = write_dbcheck_config(workdir / "dbcheck", pg_cluster)
    wrapper = write_check_wrapper(workdir / "dbcheck" / "dbcheck-wrapper", dbcheck_bin, config)
    return SimpleNamespace(config=config, password_file=config.parent / "pg.password", wrapper=wrapper)


@pytest.fixture
def redis_dbcheck_setup(workdir, redis_cluster, dbcheck_bin):
    """dbcheck.toml + 0600 password files (owner haproxy) for redis_cluster, and a
    wrapper script to use as `external-check command`.
    Namespace(config, password_file, sentinel_password_file, wrapper)."""
    config = write_redis_config(workdir / "dbcheck", redis_cluster)
    wrapper = write_check_wrapper(workdir / "dbcheck" / "dbcheck-wrapper", dbcheck_bin, config)
    return SimpleNamespace(config=config, password_file=config.parent / "redis.password",
                           sentinel_password_file=config.parent / "sentinel.password", wrapper=wrapper)


@pytest.fixture
def haproxy_factory(workdir):
    """make(cfg_text, name='haproxy') -> started HAProxy in workdir/<name>; every
    HAProxy made is stopped (by PID) at teardown."""
    started = []

    def make(cfg_text, name="haproxy"):
        hap = HAProxy(workdir / name, cfg_text)
        started.append(hap)
        return hap.start()

    yield make
    for hap in started:
        hap.stop()


# ------------------------------------------------------------------ measured figures
# Tests record what they measured (switchover time, lag vs ground truth, ...); the
# figures are printed at the end of the run and written to build/integration-figures.txt,
# so a closing note can quote the command that produced them.
_FIGURES = []


@pytest.fixture(scope="session")
def figures():
    """record(name, text): keep one measured figure for the end-of-run summary."""
    def record(name, text):
        _FIGURES.append((name, text))
    return record


def pytest_terminal_summary(terminalreporter):
    """Print and save the figures the tests measured."""
    if not _FIGURES:
        return
    terminalreporter.section("dbcheck measured figures")
    lines = [f"{name}: {text}" for name, text in _FIGURES]
    for line in lines:
        terminalreporter.write_line(line)
    # Two runs side by side (./scripts/test) name their own files.
    out = Path(os.environ.get("DBCHECK_FIGURES_FILE") or REPO_ROOT / "build" / "integration-figures.txt")
    try:
        out.parent.mkdir(exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
    except OSError:
        pass


@pytest.fixture
def heartbeat(pg_cluster):
    """A running heartbeat writer; the replicas have seen at least one beat."""
    pg_cluster.wait_healthy()
    with Heartbeat(pg_cluster, interval=0.1) as hb:
        for r in pg_cluster.replicas():
            wait_until(lambda: hb.true_staleness(r) is not None and hb.true_staleness(r) < 1, 20,
                       f"heartbeat visible on {r.name}")
        yield hb
