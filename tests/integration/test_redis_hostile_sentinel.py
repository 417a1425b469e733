"""A hostile Sentinel: its reply announces a gigabyte (an array of 2^30 elements, or a
2^30-byte string) and then streams bytes to back it. hiredis 0.14 would allocate what the
header announces, and buffer what follows; dbcheck's reader refuses the header
(core/reply_bounds.hpp). The check answers DOWN within its deadline by its own clock, names the
oversized reply, and its peak memory stays small; the agent, whose Sentinel watcher and checks
read the same Sentinels over and over, stays small too and stops promptly."""

import functools
import os
import re
import signal
import subprocess
import time

import pytest

from lab.agent import AgentProcess
from lab.dbcheck import DbcheckRun, assert_in_time, write_redis_config
from lab.fake_resp import FakeResp

TIMEOUT = 0.8
# Peak resident memory a check may add, while three Sentinels announce a gigabyte each, to what
# the same check peaks at against real Sentinels (about 40 MiB, most of it the binary and its
# libraries). Each reply may cost up to about 16 MiB (core/reply_bounds.hpp) but these are
# refused at their headers; a reader that believed the headers, or buffered what follows them,
# reaches hundreds of MiB within the deadline (the fakes stream at loopback speed).
MAX_CHECK_EXTRA_RSS_MIB = 16
# The agent's peak after 4 s of rounds and watcher reconnects against such Sentinels.
MAX_AGENT_RSS_MIB = 96
ANNOUNCED = {"huge_array": "reply announces 1073741824 elements, more than the 65536 allowed",
             "huge_bulk": "reply announces a 1073741824-byte string, more than the 4194304 bytes allowed"}


def explain_with_peak_rss(dbcheck_bin, config, backend, addr, timeout=15):
    """`dbcheck explain BACKEND ADDR --json` as a DbcheckRun, plus the process's peak resident
    set in MiB (its rusage, read when it is reaped: ru_maxrss is the process's own high-water
    mark, VmHWM, which /proc no longer shows once it has exited)."""
    argv = [str(dbcheck_bin), "--config", str(config), "explain", backend, addr, "--json"]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={"PATH": "/usr/bin:/bin"})
    # A report is a few KiB: it fits the pipe while the process is waited for here.
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > timeout:
            p.kill()
            pid, status, usage = os.wait4(p.pid, 0)
            break
        time.sleep(0.005)
    seconds = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    run = DbcheckRun(p.returncode, p.stdout.read(), p.stderr.read(), seconds)
    p.stdout.close()
    p.stderr.close()
    return run, usage.ru_maxrss / 1024


def vm_hwm_mib(pid):
    """A running process's peak resident set (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        kib = int(re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M).group(1))
    return kib / 1024


@pytest.mark.parametrize("mode", ["huge_array", "huge_bulk"])
def test_sentinel_announcing_a_gigabyte(workdir, redis_cluster, dbcheck_bin, mode, figures):
    master = redis_cluster.wait_stable()
    with FakeResp(mode) as s1, FakeResp(mode) as s2, FakeResp(mode) as s3:
        config = write_redis_config(workdir / "hostile", redis_cluster, owner=None,
                                    sentinels=[s1.addr, s2.addr, s3.addr])
        run, rss = explain_with_peak_rss(dbcheck_bin, config, "redis_write", master.addr)
        flooded = s1.flooded + s2.flooded + s3.flooded
    # For comparison: the same check against the real Sentinels.
    base_config = write_redis_config(workdir / "real", redis_cluster, owner=None)
    base, base_rss = explain_with_peak_rss(dbcheck_bin, base_config, "redis_write", master.addr)
    assert base.rc == 0, base

    assert run.rc == 1 and run.state == "down", run
    assert run.failure == "protocol", run
    assert ANNOUNCED[mode] in run.reason, run
    sentinel_steps = [s for s in run.report["steps"] if s["opinion"] == "manager"]
    assert len(sentinel_steps) == 3, run.report["steps"]
    assert all(ANNOUNCED[mode] in s["answer"] for s in sentinel_steps), sentinel_steps
    assert_in_time(run, TIMEOUT)
    assert rss <= base_rss + MAX_CHECK_EXTRA_RSS_MIB, \
        f"peak RSS {rss:.1f} MiB (healthy check: {base_rss:.1f} MiB)"
    figures(f"hostile Sentinel ({mode})",
            f"writer DOWN (protocol) in {run.report['elapsed_ms']:.0f} ms of 800; peak RSS "
            f"{rss:.1f} MiB (against real Sentinels {base_rss:.1f} MiB); the fakes got "
            f"{flooded} bytes of their 1 GiB in before the link closed")


def test_agent_reading_hostile_sentinels(workdir, redis_cluster, agent_bin, figures):
    """Two Sentinels announcing a gigabyte array, one a gigabyte string: the agent's rounds and
    its Sentinel watcher (PSUBSCRIBE answered the same way, reconnecting every second) keep its
    memory bounded; the writer is down with the reason; SIGTERM twice stops it at once."""
    master = redis_cluster.wait_stable()
    with FakeResp("huge_array") as s1, FakeResp("huge_array") as s2, FakeResp("huge_bulk") as s3:
        writer = functools.partial(write_redis_config, cluster=redis_cluster, owner=None,
                                   sentinels=[s1.addr, s2.addr, s3.addr])
        agent = AgentProcess(workdir, "agent-hostile", agent_bin, writer, "cache", master.addr,
                             interval="250ms").start()
        try:
            time.sleep(4)  # rounds every 250 ms, watcher reconnects every second
            rss = vm_hwm_mib(agent.pid)
            reply = agent.ask("redis_write")
            health = agent.health()
            agent.daemon.signal_stop(signal.SIGTERM)  # drain for shutdown_grace...
            time.sleep(0.3)  # (two signals sent at once would merge into one)
            t0 = time.monotonic()
            agent.daemon.signal_stop(signal.SIGTERM)  # ...and the second one stops it now
            rc = agent.daemon.popen.wait(10)
            stop_s = time.monotonic() - t0
        finally:
            agent.stop()
        requests = s1.requests + s2.requests + s3.requests
    log = agent.log_text()
    assert reply.startswith("down"), reply
    writer_reason = health["backends"]["redis_write"]["last_round"]["reason"]
    assert ANNOUNCED["huge_array"] in writer_reason, health["backends"]["redis_write"]
    # The watcher met the same refusal on its subscriptions (logged as a Sentinel error).
    assert ANNOUNCED["huge_array"] in log and ANNOUNCED["huge_bulk"] in log, log[-3000:]
    assert rss <= MAX_AGENT_RSS_MIB, f"agent peak RSS {rss:.1f} MiB"
    assert rc == 0 and stop_s < 2.0, (rc, stop_s)
    figures("hostile Sentinels vs the agent",
            f"{requests} requests answered with a 1 GiB announcement in 4 s; agent peak RSS "
            f"{rss:.1f} MiB; writer {reply.strip()[:60]}...; stopped in {stop_s * 1000:.0f} ms")
