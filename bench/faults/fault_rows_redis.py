"""The fault matrix's Redis/Sentinel rows against the shared Sentinel lab, in table order; each
declared once in ROWS (bench/faults/fault_registry.py)."""

import functools
import time
from contextlib import contextmanager
from pathlib import Path

# The repository root (the lab package) is on PYTHONPATH: bench/faults/run sources scripts/pythonpath.
from lab import faults, redis as redis_fx
from lab.agent import AgentProcess
from lab.dbcheck import write_redis_config
from lab.delay_proxy import DelayProxy
from lab.fake_resp import FakeResp
from lab.procs import wait_until

from fault_observe import AGENT_SETTINGS, UNRESOLVABLE, WRONG_REDIS_PASSWORD, Target
from fault_registry import Rows
from fault_runner import AGENT, Matrix

ROWS = Rows()


@ROWS.row("redis-wedged-replica", lab="redis")
def wedged_replica(m, name):
    r = m.redis

    def replica_frozen():
        master = r.wait_primary()
        return faults.frozen([r.pid(r.replicas(master)[0])])
    m.row(name, "SIGSTOP on the replica's redis-server (no failover: it is not the master)",
          m.targets("redis", writer=False, reader=True, expect=("down", "timeout")), replica_frozen,
          settle=lambda: r.wait_primary(30))


# One fake Sentinel of three names the replica: outvoted at an older epoch (it has not caught
# up), the writer's end at a newer one (a failover the others have not heard of).
def one_fake_sentinel(m, name, epoch, what, expect):
    r = m.redis
    master = r.wait_primary()
    replica = r.replicas(master)[0]
    with FakeResp("sentinel", master=replica.addr, epoch=epoch) as liar:
        sentinels = [s.addr for s in r.sentinels()[:2]] + [liar.addr]
        m.config_row(name, f"one of three Sentinels is a fake naming the replica master {what}",
                     m.targets("redis", expect=expect), "redis", sentinels=sentinels)


ROWS.add("sentinel-one-stale", lab="redis",
         run=functools.partial(one_fake_sentinel, epoch=0, what="at an older epoch (0)",
                               expect=("up", "none")))
ROWS.add("sentinel-one-newer", lab="redis",
         run=functools.partial(one_fake_sentinel, epoch=99,
                               what="at a newer epoch (99): a failover the others have not heard of",
                               expect=("down", "role")))


@ROWS.row("sentinels-two-down", lab="redis")
def two_sentinels_down(m, name):
    r = m.redis

    @contextmanager
    def stopped_two():
        stopped = []
        try:
            for s in r.sentinels()[1:]:
                r.stop_sentinel(s)
                stopped.append(s)
            yield None
        finally:
            for s in stopped:
                r.start_sentinel(s)
    # Only refusals stand against the master (the third Sentinel names it): uncertainty,
    # damped like any network failure, not a "not this node".
    m.row(name, "two of three Sentinels stopped",
          m.targets("redis", expect=("down", "network")), stopped_two, settle=lambda: r.wait_primary(30))


@ROWS.row("redis-wrong-password", lab="redis")
def wrong_password(m, name):
    m.config_row(name, "the check user's password file holds a wrong password",
                 m.targets("redis", reader=True, expect=("down", "auth")), "redis",
                 password=WRONG_REDIS_PASSWORD, sentinel_password=redis_fx.HC_PASSWORD)


# Three fake Sentinels replace the real ones in the config: (mode, expected failure, how).
for _mode, _kind, _how in (("garbage", "protocol", "an HTML line"),
                           ("truncated", "network", "half an answer, then close"),
                           ("huge", "protocol", "a 500 MB bulk string announced: refused at its header"),
                           ("slow", "timeout", "the answer after 5 s"),
                           ("trickle", "timeout", "one byte per second")):
    ROWS.add(f"sentinel-fake-{_mode}", lab="redis",
             run=functools.partial(Matrix.fake_peer_row, engine="redis", what="three fake Sentinels",
                                   mode=_mode, kind=_kind, how=_how, key="sentinels"))


@ROWS.row("redis-dns-sentinels", lab="redis")
def dns_sentinels(m, name):
    m.config_row(name, f"the Sentinel addresses name {UNRESOLVABLE}",
                 m.targets("redis", expect=("down", "network")), "redis",
                 sentinels=[f"{i}.{UNRESOLVABLE}:26379" for i in (1, 2, 3)])


@ROWS.row("redis-loading", lab="redis")
def loading(m, name):
    """A private Redis restarted on a large RDB answers -LOADING; its own agent watches it."""
    node = faults.LoadingRedis(m.workdir / "loading")
    m.stack.callback(node.stop)
    t0 = time.monotonic()
    node.start()
    populated = time.monotonic() - t0
    agent = AgentProcess(m.workdir / "loading-agent", "agent-loading", AGENT,
                         functools.partial(write_redis_config, cluster=m.redis, owner=None), "cache",
                         node.addr, **AGENT_SETTINGS)
    m.stack.callback(agent.stop)
    agent.start()
    target = Target("redis_read", node.addr, "redis_read @ private node loading its RDB", agent,
                    expect=("down", "not_ready"), healthy=None)
    state = {}

    @contextmanager
    def restarted():
        t = time.monotonic()
        node.restart()
        state["t"] = t
        try:
            yield t
        finally:
            node.wait_loaded(120)
            state["loaded"] = time.monotonic() - t
    m.row(name, f"restart of a Redis holding {node.keys:,} keys (key-load-delay "
          f"{node.delay} us): -LOADING; time from the restart", [target], restarted, settle=agent.stop)
    if "loaded" in state:
        m.notes.append(f"{name}: {node.keys:,} keys populated and saved in {populated:.1f}s; "
                       f"the restarted node answered -LOADING until {state['loaded']:.1f}s after the "
                       f"restart")


@contextmanager
def master_config(r, settings):
    """The master's CONFIG `settings` ({name: value}) for the block; the old values after."""
    master = r.wait_primary()
    old = {k: r.admin(master, "CONFIG", "GET", k)[1] for k in settings}
    try:
        for k, v in settings.items():
            r.admin(master, "CONFIG", "SET", k, v)
        yield master
    finally:
        for k, v in old.items():
            r.admin(master, "CONFIG", "SET", k, v)


def refused(r, master, code):
    """Wait (bounded) until a client's write to `master` is refused with `code`; return when."""
    def refusing():
        try:
            r.admin(master, "SET", "fault-matrix-write", "x")
        except Exception as e:  # noqa: BLE001 - the refusal is what is awaited
            return str(e).startswith(code)
        return False
    wait_until(refusing, 15, f"the master refusing writes with {code}")
    return time.monotonic()


@ROWS.row("redis-oom", lab="redis")
def oom(m, name):
    r = m.redis

    @contextmanager
    def at_maxmemory():
        with master_config(r, {"maxmemory": "1", "maxmemory-policy": "noeviction"}) as master:
            yield refused(r, master, "OOM")
    m.row(name, "maxmemory reached under noeviction (CONFIG SET maxmemory 1): every write gets OOM; "
          "time from the first refused write", m.targets("redis", expect=("down", "unwritable")),
          at_maxmemory, settle=lambda: r.wait_primary(30))


@ROWS.row("redis-noreplicas", lab="redis")
def noreplicas(m, name):
    r = m.redis

    @contextmanager
    def replicas_gone():
        with master_config(r, {"min-replicas-to-write": "1", "min-replicas-max-lag": "1"}) as master:
            with faults.frozen([r.pid(x) for x in r.replicas(master)]):
                yield refused(r, master, "NOREPLICAS")
    m.row(name, "min-replicas-to-write 1 (max lag 1 s) and every replica frozen (SIGSTOP): every "
          "write gets NOREPLICAS; time from the first refused write",
          m.targets("redis", expect=("down", "unwritable")), replicas_gone,
          settle=lambda: r.wait_primary(30))


@ROWS.row("redis-misconf", lab="redis")
def misconf(m, name):
    """A snapshot that cannot be written (its path is a non-empty directory) while `save` is set:
    Redis refuses writes and PING with MISCONF."""
    r = m.redis

    @contextmanager
    def save_failed():
        master = r.wait_primary()
        dump = (Path(r.admin(master, "CONFIG", "GET", "dir")[1])
                / r.admin(master, "CONFIG", "GET", "dbfilename")[1])
        aside = dump.with_name(dump.name + ".aside")
        had_dump = dump.exists()
        if had_dump:
            dump.rename(aside)
        (dump / "keep").mkdir(parents=True)
        try:
            with master_config(r, {"save": "3600 1"}):
                r.admin(master, "BGSAVE")
                yield refused(r, master, "MISCONF")
        finally:
            (dump / "keep").rmdir()
            dump.rmdir()
            if had_dump:
                aside.rename(dump)
            r.admin(master, "BGSAVE")  # a good snapshot clears the error for the rows after
            wait_until(lambda: "rdb_last_bgsave_status:ok" in r.admin(master, "INFO", "persistence"),
                       10, "a BGSAVE that succeeds")
    m.row(name, "a failed background save under stop-writes-on-bgsave-error (the dump path is a "
          "directory): writes and PING get MISCONF; time from the first refused write",
          m.targets("redis", expect=("down", "unwritable")), save_failed,
          settle=lambda: r.wait_primary(30))


# A backend of its own with a latency bound (the lab's backends have none).
SLOW_BACKEND = """
[backend.redis_read_bounded]
cluster = "cache"
role = "replica"
max_lag = "2s"
max_latency = "300ms"
"""


@ROWS.row("redis-slow-replica", lab="redis")
def slow_replica(m, name):
    """A real replica behind a proxy that holds each answer 400 ms: alive, correct, and slower
    than the backend's max_latency (300 ms); its own agent watches it through the proxy."""
    r = m.redis
    replica = r.replicas(r.wait_primary())[0]
    proxy = DelayProxy(replica.addr)
    m.stack.enter_context(proxy)

    def writer(directory, extra="", **kw):
        return write_redis_config(directory, cluster=r, owner=None, extra=SLOW_BACKEND + extra, **kw)
    config = writer(m.workdir / "configs" / "slow")
    agent = AgentProcess(m.workdir / "slow-agent", "agent-slow", AGENT, writer, "cache", proxy.addr,
                         **AGENT_SETTINGS)
    m.stack.callback(agent.stop)
    agent.start()
    target = Target("redis_read_bounded", proxy.addr, f"redis_read_bounded @ {replica.name} behind a "
                    "400 ms delay (max_latency 300ms)", agent, expect=("down", "slow"), healthy=None)

    @contextmanager
    def delayed():
        proxy.delay = 0.4
        try:
            yield None
        finally:
            proxy.delay = 0.0
    m.row(name, "each answer of the replica held 400 ms by a proxy in front of it; the backend's "
          "max_latency is 300ms", [target], delayed, config=config, settle=agent.stop)
