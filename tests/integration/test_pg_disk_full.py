"""A PostgreSQL writer whose disk is full: its data directory on a small tmpfs (WAL on another
filesystem, through pg_wal's symbolic link), filled with fallocate. dbcheck-agent, on the node,
sees the free space and takes the writer down as unwritable, and back once space is freed; the
external check's write probe meets 53100 where the writer query and a one-row UPDATE still
pass. One standalone PostgreSQL for the module (no replica: the write rule needs none), named
leader by a fake Patroni; the tmpfs is unmounted and the filler removed whatever happens."""

import functools
import json
import subprocess

import pytest

from conftest import finish_workdir, make_workdir, require_servers
from lab.agent import AgentProcess
from lab.dbcheck import assert_in_time, explain, write_dbcheck_config
from lab.full_disk import FullDiskPostgres
from lab.patroni import APP_DB, HC_USER, PSQL
from lab.procs import wait_until

MIN_FREE = "16MiB"  # the agent's min_free_space in these tests


@pytest.fixture(scope="module")
def full_disk_lab(request):
    """A started lab.full_disk.FullDiskPostgres (its stop() unmounts the tmpfs whatever happens)."""
    require_servers()
    path = make_workdir("dbcheck-it-disk.")
    lab = FullDiskPostgres(path)
    failed = True
    try:
        yield lab.start()
        failed = request.session.testsfailed > 0
    finally:
        try:
            lab.stop()
        finally:
            finish_workdir(request.config, path, failed=failed)


def _config(directory, lab, cluster_extra="", extra=""):
    return write_dbcheck_config(directory, None, owner=None, patroni_urls=[lab.fake.url],
                                cluster_extra=cluster_extra, extra=extra, timeout="2s")


def test_agent_takes_a_writer_with_a_full_disk_down_and_back(full_disk_lab, agent_bin, workdir, figures):
    lab = full_disk_lab
    extra = f'data_directory = "{lab.data_dir}"\nmin_free_space = "{MIN_FREE}"\nmin_free_inodes = 100'
    writer = functools.partial(_config, lab=lab, cluster_extra=extra)
    agent = AgentProcess(workdir, "agent-pg1", agent_bin, writer, "pg", lab.addr, interval="1s").start()
    try:
        wait_until(lambda: agent.ask("pg_write").startswith("up"), 30, "the writer is up: room on its disk")
        lab.fill(leave_bytes=4 << 20)
        wait_until(lambda: agent.ask("pg_write").startswith("down"), 30, "the full writer goes down")
        reply = agent.ask("pg_write")
        assert f"disk nearly full: {lab.disk}/main has" in reply, reply
        assert f"(min_free_space {MIN_FREE.replace('MiB', ' MiB')})" in reply, reply
        backend = agent.health()["backends"]["pg_write"]
        assert backend["reported"]["failure"] == "unwritable", json.dumps(backend)
        steps = [s for s in backend["last_round"]["steps"] if s["opinion"] == "disk"]
        # Both filesystems measured; pg_wal followed to where the WAL lives.
        assert [s["peer"] for s in steps] == [str(lab.data_dir), f"{lab.data_dir}/pg_wal"], steps
        assert steps[1]["answer"].endswith(f"({lab.wal_dir}/pg_wal)"), steps
        statvfs_ms = [s["latency_ms"] for s in steps]
        # The writer query still says read-write: only the disk rule takes it out.
        assert "PostgreSQL is read-write, not in recovery" in backend["reported"]["reason"], backend
        lab.unfill()
        wait_until(lambda: agent.ask("pg_write").startswith("up"), 30, "the writer is back: space freed")
    finally:
        lab.unfill()
        agent.stop()
    figures("agent, data directory nearly full",
            f"down/unwritable; statvfs+stat+realpath of each path took {max(statvfs_ms):.3f} ms at most")


def test_write_probe_is_unwritable_where_writes_still_commit(full_disk_lab, dbcheck_bin, workdir, figures):
    lab = full_disk_lab
    config = _config(workdir / "probe", lab, cluster_extra="write_probe = true")
    run = explain(dbcheck_bin, config, "pg_write", lab.addr)
    assert run.rc == 0 and run.failure == "none", run
    assert any(s["opinion"] == "write_probe" for s in run.report["steps"]), run.report["steps"]
    # WAL per probe: the whole writer check, many times, on an otherwise idle server.
    runs = 20
    before = lab.sql("-c", "SELECT pg_current_wal_insert_lsn()")
    for _ in range(runs):
        assert explain(dbcheck_bin, config, "pg_write", lab.addr).rc == 0
    wal = int(float(lab.sql("-c", f"SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '{before}')")))
    assert wal / runs < 4096, f"{wal} bytes of WAL for {runs} probes"
    assert lab.sql("-c", "SELECT count(*) FROM dbcheck.write_probe") == "1"  # nothing committed
    try:
        lab.fill(leave_bytes=0)
        # What the probe must see past: a one-row UPDATE still commits (HOT, in its page).
        lab.sql("-c", "UPDATE dbcheck.write_probe SET checked_at = now()")
        run = explain(dbcheck_bin, config, "pg_write", lab.addr)
        assert run.rc == 1 and run.failure == "unwritable", run
        assert "PostgreSQL refuses writes: disk full: could not extend file" in run.reason, run
        assert "No space left on device (write probe)" in run.reason, run
        assert_in_time(run, 2.0)
        # Without the probe the same node passes: the external check cannot see a full disk.
        plain = explain(dbcheck_bin, _config(workdir / "plain", lab), "pg_write", lab.addr)
        assert plain.rc == 0, plain
    finally:
        lab.unfill()
    assert explain(dbcheck_bin, config, "pg_write", lab.addr).rc == 0
    figures("write probe, data directory full",
            f"down/unwritable (53100); {wal / runs:.0f} bytes of WAL per writer check with the probe "
            f"({runs} checks)")


def test_write_probe_without_its_table_names_the_setup_sql(full_disk_lab, dbcheck_bin, workdir):
    lab = full_disk_lab
    config = _config(workdir / "probe", lab, cluster_extra="write_probe = true")
    lab.sql("-c", f"REVOKE TRUNCATE ON dbcheck.write_probe FROM {HC_USER}")
    try:
        run = explain(dbcheck_bin, config, "pg_write", lab.addr)
    finally:
        lab.sql("-c", f"GRANT TRUNCATE ON dbcheck.write_probe TO {HC_USER}")
    assert run.rc == 1 and run.failure == "config", run
    assert "the write probe cannot run as configured: 42501" in run.reason, run
    assert "dbcheck setup-sql postgres" in run.reason, run


def test_write_probe_behind_a_held_lock_ends_within_the_deadline(full_disk_lab, dbcheck_bin, workdir):
    """A session holding a lock on the probe's table (as a pg_dump of the database does, for its
    whole run) makes the probe's TRUNCATE wait: lock_timeout is the time left, so the check ends
    within its deadline, as a timeout, not as a hang or a disk reason."""
    lab = full_disk_lab
    config = _config(workdir / "probe", lab, cluster_extra="write_probe = true")
    holder = subprocess.Popen(
        ["runuser", "-u", "postgres", "--", PSQL, "-X", "-q", "-h", str(lab.socket_dir),
         "-p", str(lab.port), "-d", APP_DB, "-c", "BEGIN",
         "-c", "LOCK TABLE dbcheck.write_probe IN ACCESS SHARE MODE", "-c", "SELECT pg_sleep(20)"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    held = ("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "WHERE c.relname = 'write_probe' AND l.granted")
    try:
        wait_until(lambda: lab.sql("-c", held) != "0", 10, "the holder has its lock")
        run = explain(dbcheck_bin, config, "pg_write", lab.addr)
    finally:
        holder.terminate()
        holder.wait(timeout=10)
    assert run.rc == 1 and run.failure == "timeout", run
    assert "55P03" in run.reason and "lock timeout" in run.reason, run
    assert_in_time(run, 2.0)
