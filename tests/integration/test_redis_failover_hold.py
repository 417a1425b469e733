"""A Sentinel failover in progress takes the writer out, from its first event, and holds it
out until the failover ends — also when the Sentinel abandons it. The availability cost
documented in docs/failover.md ("The writer rule"), measured on a real cluster."""

import time

import pytest

from lab.agent import start_redis_agents
from lab.dbcheck import explain, write_redis_config
from lab.procs import wait_until
from lab.redis import MASTER_NAME, pairs

FAILOVER_TIMEOUT_MS = 6000  # on the Sentinel that runs the failover, for this test only


@pytest.fixture
def agents(workdir, redis_cluster, agent_bin):
    redis_cluster.wait_stable()
    started = start_redis_agents(workdir, redis_cluster, agent_bin, interval="1s")
    yield started
    for a in started:
        a.stop()


def failing_over(redis_cluster, sentinel):
    flags = pairs(redis_cluster.sentinel_admin(sentinel, "SENTINEL", "MASTER", MASTER_NAME))["flags"]
    return "failover_in_progress" in flags.split(",")


def test_an_abandoned_failover_holds_the_writer_until_it_ends(workdir, redis_cluster, agents, dbcheck_bin,
                                                              figures):
    """The replica is frozen just before SENTINEL FAILOVER, so the Sentinel selects it, sends
    it REPLICAOF NO ONE, waits failover-timeout for the promotion and aborts. All the while the
    old master stays master; the agent and the external check keep it out until the
    Sentinel clears failover_in_progress, and it comes back after."""
    master = redis_cluster.wait_stable()
    replica = next(n for n in redis_cluster.nodes() if n != master)
    leader = redis_cluster.sentinels()[0]
    cfg = write_redis_config(workdir / "hold", redis_cluster, owner=None)
    agent = next(a for a in agents if a.name == f"agent-{master.name}")
    wait_until(lambda: agent.ask("redis_write").startswith("up"), 15, "the master's agent says up")
    assert explain(dbcheck_bin, cfg, "redis_write", master.addr).rc == 0
    redis_cluster.sentinel_admin(leader, "SENTINEL", "SET", MASTER_NAME, "failover-timeout",
                                 str(FAILOVER_TIMEOUT_MS))
    redis_cluster.sigstop(replica)
    frozen = True
    try:
        t0 = time.monotonic()
        assert redis_cluster.sentinel_admin(leader, "SENTINEL", "FAILOVER", MASTER_NAME) == "OK"
        wait_until(lambda: agent.ask("redis_write").startswith("down"), 5, "the agent takes the master out")
        t_down = time.monotonic() - t0
        run = wait_until(lambda: (r := explain(dbcheck_bin, cfg, "redis_write", master.addr)).rc == 1 and r,
                         5, "the external check fails the master")
        assert run.failure == "role", run
        assert "is failing the master over" in run.reason, run
        assert redis_cluster.role(master) == ("master",)  # still the master all along
        wait_until(lambda: not failing_over(redis_cluster, leader), FAILOVER_TIMEOUT_MS / 1000 + 20,
                   "the Sentinel abandoning the failover")
        t_abort = time.monotonic() - t0
        redis_cluster.sigcont(replica)
        frozen = False
        # The thawed replica executes the REPLICAOF NO ONE it was sent; Sentinel converts it
        # back and keeps the old master, which comes back once rise rounds pass.
        wait_until(lambda: agent.ask("redis_write").startswith("up"), 40, "the master's agent says up again")
        t_up = time.monotonic() - t0
        wait_until(lambda: explain(dbcheck_bin, cfg, "redis_write", master.addr).rc == 0, 30,
                   "the external check passes the master again")
        # Held until the failover ended, by the agent's own log: its writer came back only
        # after the Sentinel's abort event reached it (not judged by this test's clock).
        log = agent.log_text().splitlines()
        abort = next(i for i, line in enumerate(log) if "-failover-abort" in line)
        back = [i for i, line in enumerate(log) if "msg=transition" in line and "backend=redis_write" in line
                and "to=up" in line]
        assert back and back[-1] > abort, "\n".join(log[-30:])
    finally:
        if frozen:
            redis_cluster.sigcont(replica)
        redis_cluster.sentinel_admin(leader, "SENTINEL", "SET", MASTER_NAME, "failover-timeout", "10000")
    assert redis_cluster.wait_stable(timeout=60) == master
    figures("abandoned Sentinel failover",
            f"agent down {t_down * 1000:.0f} ms after SENTINEL FAILOVER; the Sentinel aborted at "
            f"+{t_abort:.1f}s (failover-timeout {FAILOVER_TIMEOUT_MS / 1000:.0f}s); writer back at "
            f"+{t_up:.1f}s: held {t_up - t_down:.1f}s without a writer")
