"""Reader choices: `readers = "synchronous"` takes only the standbys Patroni lists
as sync_standby (synchronous_mode) or quorum_standby (Patroni 4's synchronous_mode: quorum),
like Patroni's /read-only-sync; and the primary as a reader of last resort, the example's
commented `backup track` lines, through a real HAProxy."""

import psycopg2
import pytest

from lab import peers
from lab.dbcheck import assert_in_time, explain, write_check_wrapper, write_dbcheck_config
from lab.haproxy import render_example_for
from lab.patroni import APP_DB, APP_PASSWORD, APP_USER
from lab.procs import wait_until

TIMEOUT = 0.8
SYNC_READER = """
[backend.pg_read_sync]
cluster = "pg"
role = "replica"
max_lag = "1s"
readers = "synchronous"
"""


def _roles(pg_cluster):
    view = pg_cluster.cluster_view() or {}
    return {m["name"]: m["role"] for m in view.get("members", [])}


def _synchronous(pg_cluster, mode):
    """Sets synchronous_mode (DCS config) and waits (bounded) until the members' roles show it."""
    res = pg_cluster.patronictl("edit-config", "--force", "-s", f"synchronous_mode={mode}")
    assert res.returncode == 0, res
    want = {"true": "sync_standby", "quorum": "quorum_standby"}.get(mode)
    if want:
        return wait_until(lambda: [n for n, r in _roles(pg_cluster).items() if r == want], 60,
                          f"a {want} in /cluster")
    return wait_until(lambda: not any(r in ("sync_standby", "quorum_standby")
                                      for r in _roles(pg_cluster).values()), 60,
                      "no synchronous standby in /cluster")


@pytest.mark.parametrize("mode", ["true", "quorum"])
def test_synchronous_readers(workdir, pg_cluster, dbcheck_bin, figures, mode):
    if mode == "quorum" and peers.patroni_major() != "4":
        pytest.skip("synchronous_mode: quorum is Patroni 4's (this pass runs Patroni 3)")
    leader = pg_cluster.wait_healthy()
    cfg = write_dbcheck_config(workdir, pg_cluster, owner=None, timeout="800ms", extra=SYNC_READER)
    try:
        sync_names = _synchronous(pg_cluster, mode)
        members = {m.name: m for m in pg_cluster.members()}
        replicas = [n for n in members if n != leader.name]
        results = {}
        for name in replicas:
            # A member changes role only at Patroni's loop: ask until the view settles on it.
            run = explain(dbcheck_bin, cfg, "pg_read_sync", members[name].pg_addr)
            results[name] = run
            assert_in_time(run, TIMEOUT)
            anyone = explain(dbcheck_bin, cfg, "pg_read", members[name].pg_addr)
            assert anyone.rc == 0, anyone  # the default still takes every replica
        for name, run in results.items():
            if name in sync_names:
                assert run.rc == 0, run
                assert "streaming sync_standby" in run.reason or "streaming quorum_standby" in run.reason, run
            else:
                assert run.rc == 1, run
                assert run.failure == "policy", run
                assert "is not a synchronous standby (role replica)" in run.reason, run
        assert explain(dbcheck_bin, cfg, "pg_read_sync", leader.pg_addr).rc == 1
    finally:
        _synchronous(pg_cluster, "false")
    figures(f"readers = synchronous (synchronous_mode {mode})",
            "; ".join(f"{n}: {r.state} ({r.failure or 'ok'})" for n, r in sorted(results.items())))


def _reads_from(port):
    """(port, in_recovery) of the server a new connection through the pg_read frontend reaches."""
    with psycopg2.connect(host="127.0.0.1", port=port, dbname=APP_DB, user=APP_USER,
                          password=APP_PASSWORD, connect_timeout=3) as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT inet_server_port(), pg_is_in_recovery()")
            return cur.fetchone()


def test_the_primary_reads_when_no_replica_is_in(workdir, pg_cluster, dbcheck_bin,
                                                 haproxy_factory, figures):
    """The example's `backup track pg_write/…` lines uncommented: with replicas in, reads go to
    replicas; with none in (here: readers = "synchronous" and no synchronous standby), to the
    confirmed writer, and never to a replica that failed its check."""
    leader = pg_cluster.wait_healthy()
    cfg_dir = workdir / "dbcheck"
    config = write_dbcheck_config(cfg_dir, pg_cluster)
    wrapper = write_check_wrapper(cfg_dir / "dbcheck-wrapper", dbcheck_bin, config)
    text, ports = render_example_for(pg_cluster, wrapper, workdir / "haproxy" / "admin.sock")
    assert "    #server pg1-primary" in text, "the example lost its backup lines"
    text = text.replace("    #server pg", "    server pg")
    hap = haproxy_factory(text)
    hap.wait_until_checked("pg_write")  # pg_read's backup lines have no check of their own
    replicas = sorted(m.name for m in pg_cluster.replicas())
    # HAProxy 2.6 starts every server UP: wait until the leader's own pg_read line has failed.
    wait_until(lambda: sorted(n for n in hap.servers_up("pg_read") if not n.endswith("-primary"))
               == replicas, 30, f"pg_read has exactly {replicas} UP")
    seen = {_reads_from(ports["pg_read"]) for _ in range(6)}
    assert all(in_recovery for _, in_recovery in seen), seen  # replicas only while they are in
    # Every replica out: the same backend name, now asking for synchronous standbys only.
    write_dbcheck_config(cfg_dir, pg_cluster, extra='readers = "synchronous"')
    wait_until(lambda: not [n for n in hap.servers_up("pg_read") if not n.endswith("-primary")],
               30, "every replica DOWN in pg_read")
    seen_after = {_reads_from(ports["pg_read"]) for _ in range(6)}
    assert seen_after == {(leader.pg_port, False)}, seen_after
    figures("primary as reader of last resort",
            f"replicas in: reads on ports {sorted(p for p, _ in seen)}; none in: every read on "
            f"the primary ({leader.pg_port})")
