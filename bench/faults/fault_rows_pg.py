"""The fault matrix's PostgreSQL/Patroni rows, in table order: against the shared Patroni lab,
and (lab=None) against a PostgreSQL of their own; each declared once in ROWS
(bench/faults/fault_registry.py)."""

import functools
import time
from contextlib import contextmanager

# The repository root (the lab package) is on PYTHONPATH: bench/faults/run sources scripts/pythonpath.
from lab import faults
from lab import patroni as patroni_fx
from lab.agent import AgentProcess
from lab.dbcheck import run_dbcheck, write_dbcheck_config
from lab.full_disk import FullDiskPostgres
from lab.patroni import HBA_REJECTED_USER
from lab.standalone_pg import StandalonePostgres
from lab.ports import free_ports
from lab.procs import wait_until

from fault_observe import (AGENT_SETTINGS, CHECK_CAP_S, HEAL_WAIT_S, UNRESOLVABLE, WRONG_PG_PASSWORD, Target,
                           reported, short)
from fault_registry import Rows
from fault_runner import AGENT, DBCHECK, Matrix

ROWS = Rows()


@ROWS.row("pg-wedged-postmaster", lab="pg")
def wedged_postmaster(m, name):
    pg = m.pg

    def leader_postmaster():
        return faults.frozen([pg.postmaster_pid(pg.leader())])
    m.row(name, "SIGSTOP on the leader's postmaster (sessions already open keep working)",
          m.targets("pg", expect=("down", "timeout")), leader_postmaster)


@ROWS.row("pg-wedged-instance", lab="pg")
def wedged_instance(m, name):
    pg = m.pg

    def replica_instance():
        return faults.frozen(faults.postgres_pids(pg, pg.replicas()[0]))
    m.row(name, "SIGSTOP on every process of a replica's PostgreSQL",
          m.targets("pg", writer=False, reader=True, expect=("down", "timeout")), replica_instance)


@ROWS.row("patroni-rest-hung", lab="pg")
def patroni_rest_hung(m, name):
    pg = m.pg

    def patroni_frozen():
        return faults.frozen([d.pid for d in pg.patroni.values()])
    m.row(name, "SIGSTOP on all three Patroni daemons (PostgreSQL keeps running)",
          m.targets("pg", reader=True, expect=("down", "timeout")), patroni_frozen)


@ROWS.row("patroni-rest-refused", lab="pg")
def patroni_rest_refused(m, name):
    closed = [f"http://127.0.0.1:{p}" for p in free_ports(3)]
    m.config_row(name, "every Patroni REST URL refuses connections (closed ports)",
                 m.targets("pg", reader=True, expect=("down", "network")), "pg", patroni_urls=closed)


# Three fake Patroni REST APIs replace the members in the config: (mode, expected failure, how).
for _mode, _kind, _how in (("garbage", "protocol", "200 OK with an HTML body"),
                           ("truncated", "protocol", "Content-Length 100, 14 bytes, close"),
                           ("huge", "protocol", "Content-Length 64 MB, 8 MB sent"),
                           ("slow", "timeout", "the answer after 5 s"),
                           ("trickle", "timeout", "one byte every 200 ms")):
    ROWS.add(f"patroni-fake-{_mode}", lab="pg",
             run=functools.partial(Matrix.fake_peer_row, engine="pg", what="three fake Patroni REST APIs",
                                   mode=_mode, kind=_kind, how=_how, key="patroni_urls"))


@ROWS.row("pg-max-connections", lab="pg")
def max_connections(m, name):
    pg = m.pg

    def full():
        return faults.connections_exhausted(pg, pg.leader())
    m.row(name, "application connections fill the leader's max_connections (53300)",
          m.targets("pg", expect=("up", "saturated")), full)


@ROWS.row("pg-wrong-password", lab="pg")
def wrong_password(m, name):
    m.config_row(name, "the check user's password file holds a wrong password",
                 m.targets("pg", expect=("down", "auth")), "pg", password=WRONG_PG_PASSWORD)


@ROWS.row("pg-hba-reject", lab="pg")
def hba_reject(m, name):
    m.config_row(name, f"pg_hba.conf rejects the check user ({HBA_REJECTED_USER})",
                 m.targets("pg", expect=("down", "auth")), "pg", user=HBA_REJECTED_USER)


@ROWS.row("pg-dns-patroni", lab="pg")
def dns_patroni(m, name):
    m.config_row(name, f"the Patroni URLs name {UNRESOLVABLE} (does not resolve)",
                 m.targets("pg", expect=("down", "network")), "pg",
                 patroni_urls=[f"http://{i}.{UNRESOLVABLE}:8008" for i in (1, 2, 3)])


@ROWS.row("pg-dns-node", lab="pg")
def dns_node(m, name):
    pg = m.pg
    agent = m.agents["pg"][pg.leader().name]
    # Patroni names another leader: that "not this node" wins over the lookup failure.
    target = Target("pg_write", f"{UNRESOLVABLE}:5432", f"pg_write @ {UNRESOLVABLE}:5432", agent,
                    expect=("down", "role"), healthy=None)

    @contextmanager
    def agent_on_unresolvable():
        t0 = time.monotonic()
        agent.reconfigure(target.addr)
        try:
            yield t0
        finally:
            agent.reconfigure(pg.leader().pg_addr)
    m.row(name, f"the node to check is {UNRESOLVABLE}:5432 (agent: [agent.local])",
          [target], agent_on_unresolvable,
          settle=lambda: wait_until(lambda: reported(agent.health()["backends"]["pg_write"]) ==
                                    ("up", "none"), HEAL_WAIT_S, "the leader's agent up again"))


@ROWS.row("pg-read-only", lab="pg")
def read_only_database(m, name):
    pg = m.pg

    @contextmanager
    def read_only():
        # Through the `postgres` database: a new session in appdb is read-only too.
        def alter(action):
            with pg.superuser_conn(pg.leader(), db="postgres") as conn, conn.cursor() as cur:
                cur.execute(f"ALTER DATABASE {patroni_fx.APP_DB} {action}")
        alter("SET default_transaction_read_only = on")
        try:
            yield None
        finally:
            alter("RESET default_transaction_read_only")
    m.row(name, f"ALTER DATABASE {patroni_fx.APP_DB} SET default_transaction_read_only = on on the leader",
          m.targets("pg", expect=("down", "role")), read_only)


@ROWS.row("pg-starting-57P03", lab="pg")
def starting(m, name):
    """A PostgreSQL held before consistency answers 57P03; its own agent watches it."""
    node = faults.StartingPostgres(m.workdir / "starting", m.pg).prepare()
    agent = AgentProcess(m.workdir / "starting-agent", "agent-starting", AGENT,
                         functools.partial(write_dbcheck_config, cluster=m.pg, owner=None), "pg",
                         node.addr, **AGENT_SETTINGS)
    m.stack.callback(node.stop)
    m.stack.callback(agent.stop)
    agent.start()  # the node is not there yet: the agent reports it down (network)
    target = Target("pg_read", node.addr, "pg_read @ standby held in startup", agent,
                    expect=("down", "not_ready"), healthy=None)

    @contextmanager
    def started():
        t0 = time.monotonic()
        node.start()
        print(f"   the held standby answers: {short(node.sqlstate_probe(), 120)}", flush=True)
        try:
            yield t0
        finally:
            node.stop()
    m.row(name, "a standby that cannot reach consistency (base backup without WAL) "
          "answers 57P03; time from its start", [target], started, settle=agent.stop)


@ROWS.row("pg-identity", lab="pg")
def identity(m, name):
    """A server line (and a replica's agent) pointing at another cluster's node: a PostgreSQL
    initdb'd on its own, with a system identifier of its own, answering as a primary."""
    pg = m.pg
    other = StandalonePostgres(m.workdir / "other-cluster")
    m.stack.callback(other.stop)
    other.start()
    replica = pg.replicas(pg.leader())[0]
    agent = m.agents["pg"][replica.name]
    target = Target("pg_read", other.pg_addr, "pg_read @ another cluster's node", agent,
                    expect=("down", "identity"), healthy=None)

    @contextmanager
    def agent_on_other():
        t0 = time.monotonic()
        agent.reconfigure(other.pg_addr)
        try:
            yield t0
        finally:
            agent.reconfigure(replica.pg_addr)
    m.row(name, "the node to check is another cluster's PostgreSQL (its own initdb, its own "
          "system identifier; agent: [agent.local])", [target], agent_on_other,
          settle=lambda: wait_until(lambda: reported(agent.health()["backends"]["pg_read"]) ==
                                    ("up", "none"), HEAL_WAIT_S, "the replica's agent up again"))


# The agent's threshold for the full-disk rows: a quarter of the lab's 64 MiB tmpfs, above what
# the fill leaves free.
DISK_MIN_FREE, DISK_LEAVE = "16MiB", 4 << 20


def _full_disk_lab(m, name):
    """A started FullDiskPostgres of row `name`, stopped (unmounted) with the matrix at the
    latest."""
    lab = FullDiskPostgres(m.workdir / name)
    m.stack.callback(lab.stop)
    return lab.start()


def _full_disk_config(m, name, lab, cluster_extra=""):
    return write_dbcheck_config(m.workdir / "configs" / name, None, owner=None, patroni_urls=[lab.fake.url],
                                cluster_extra=cluster_extra)


@contextmanager
def _filled(lab, leave_bytes):
    """The lab's tmpfs filled to `leave_bytes` free; the injection time is when the fill ended."""
    try:
        lab.fill(leave_bytes)
        yield time.monotonic()
    finally:
        lab.unfill()


# The anchor: the runner answers "n/a" for a node outside a Patroni lab. Asked, the FakePatroni
# naming this node leader answers "/primary 200 (UP)" with the disk filled, because the lab
# scripts it so: no evidence on its own. A real Patroni answers 200 too: its /primary asks whether
# the node runs as the primary holding the leader lock, not whether it can write.
@ROWS.row("pg-disk-full-agent", lab=None)
def disk_full_agent(m, name):
    """A writer whose data directory's filesystem has less free space than min_free_space: its
    own agent, measuring the disk on the node, takes it down as unwritable; the external check
    without the write probe cannot see the disk and passes."""
    lab = _full_disk_lab(m, name)
    extra = f'data_directory = "{lab.data_dir}"\nmin_free_space = "{DISK_MIN_FREE}"\nmin_free_inodes = 100'
    agent = AgentProcess(m.workdir / f"{name}-agent", "agent-disk-full", AGENT,
                         functools.partial(write_dbcheck_config, cluster=None, owner=None,
                                           patroni_urls=[lab.fake.url], cluster_extra=extra), "pg",
                         lab.addr, **AGENT_SETTINGS, shutdown_grace="1s")  # nothing routes to it: no drain
    m.stack.callback(agent.stop)
    agent.start()
    # healthy=None: the runner's "healthy again" uses the shared lab's config; settle below
    # waits for this agent's own rise instead.
    target = Target("pg_write", lab.addr, "pg_write @ leader, data directory on a 64 MiB tmpfs", agent,
                    expect=("up", "none"), agent_expect=("down", "unwritable"), healthy=None)

    def settle():
        wait_until(lambda: reported(agent.health()["backends"]["pg_write"]) == ("up", "none"), HEAL_WAIT_S,
                   "the full-disk writer's agent up again")
        agent.stop()
        lab.stop()
    m.row(name, f"the data directory's filesystem filled to {DISK_LEAVE >> 20} MiB free (fallocate; agent: "
          f"data_directory, min_free_space {DISK_MIN_FREE}; external check without write_probe)",
          [target], functools.partial(_filled, lab, DISK_LEAVE), config=_full_disk_config(m, name, lab),
          settle=settle)


@ROWS.row("pg-disk-full-probe", lab=None)
def disk_full_probe(m, name):
    """A writer whose data directory's filesystem is full (WAL elsewhere still has room): the
    external check's write probe extends a table, meets 53100 and says unwritable."""
    lab = _full_disk_lab(m, name)
    config = _full_disk_config(m, name, lab, cluster_extra="write_probe = true")
    target = Target("pg_write", lab.addr, "pg_write @ leader, data directory on a 64 MiB tmpfs",
                    expect=("down", "unwritable"), healthy=None)

    def settle():
        wait_until(lambda: run_dbcheck(DBCHECK, config, "explain", "pg_write", lab.addr, "--json",
                                       timeout=CHECK_CAP_S).rc == 0, HEAL_WAIT_S,
                   "the write probe passing again")
        lab.stop()
    m.row(name, "the data directory's filesystem full (fallocate; WAL on another filesystem); "
          "external check with write_probe = true", [target], functools.partial(_filled, lab, 0),
          config=config, settle=settle)
