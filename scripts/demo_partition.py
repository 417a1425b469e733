"""dbcheck demo, --partition: watch a real network partition (N1: a Patroni leader's host cut
from etcd and the other members; N2: a Redis master's host, node and Sentinel, cut from the
other Sentinels and the replica), while HAProxy and the clients can still reach the old
primary. Each host is a network namespace of its own (bench/failover/partitions.py); six
HAProxy configurations watch the same cluster side by side, each with a writer sending
numbered writes through it:

  (a)/(a1)  PostgreSQL: Patroni's own GET /primary; Redis: the node asked (tcp-check ROLE master)
  (b)/(b1)  PostgreSQL: the node asked (pg_is_in_recovery()); Redis: one Sentinel, then ROLE
  (c)       dbcheck as HAProxy's external check
  (d)       dbcheck-agent, one per database host
(a), (b), (c) at inter 1s fall 2 rise 3; (a1), (b1), (d) at inter 1s fall 1 rise 1.

Every second: what the manager names, each node's own role, which server each configuration
has UP, where its writes were acknowledged in that second, and dbcheck's reasons for the old
primary. At the end: the writes each configuration had acknowledged that the final primary
does not have.
"""

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The repository root (the lab package) is on PYTHONPATH: scripts/demo sources scripts/pythonpath;
# scripts/demo.py puts bench/failover on sys.path before it imports this module.
import failover as F
import labs
import partitions as P
import report
import watches as W

TICK = 1.0
# Seconds between two writes. The proof's writers go back to back, as fast as the servers take
# them, on a machine set aside for the proof. The demo runs where a person (or the test suite)
# is also working: its writers keep a steady pace, leaving CPU to spare for the checks it shows.
WRITE_PACE = 0.005


def _reason(line):
    """The reason part of a `dbcheck check` line, shortened for a terminal."""
    return line if len(line) <= 150 else line[:147] + "..."


def _routed_only(lab, v, name):
    """F.routed_only, with a stats socket that did not answer counted as "not yet"."""
    try:
        return F.routed_only(lab, v, name)
    except OSError:
        return False


class Screen:
    """Prints one block per TICK: the manager, the roles, each configuration's routing."""

    def __init__(self, lab, old, writers, watch, roles):
        self.lab, self.old, self.writers, self.watch, self.roles = lab, old, writers, watch, roles
        self.t_fault = None
        self.seen = {k: 0 for k in writers}
        self.agent = next((a for a in lab.agents if a.name == f"agent-{old}"), None)
        self.addr = lab.node_addrs()[old]

    def block(self, note=""):
        t = time.monotonic()
        stamp = f"t{t - self.t_fault:+5.1f}s" if self.t_fault else "before"
        manager = self.watch.samples[-1][2] if self.watch.samples else "?"
        roles = ", ".join(f"{n} {r.samples[-1][2] or 'silent'}" if r.samples else f"{n} ?"
                          for n, r in self.roles.items())
        print(f"\n{stamp}  manager names: {manager or 'nobody'}   nodes say: {roles}{note}", flush=True)
        names = {self.lab.node_port(n): n for n in self.lab.node_names()}
        for v in self.lab.variants:
            w = self.writers[v.key]
            acks = w.acks[self.seen[v.key]:]
            self.seen[v.key] += len(acks)
            by = {}
            for _, _, port in acks:
                by[names.get(port, port)] = by.get(names.get(port, port), 0) + 1
            try:
                up = self.lab.haproxies[v.key].servers_up(v.backend)
            except OSError:  # a loaded machine: say so on this line, the next block asks again
                up = "stats socket silent"
            where = ", ".join(f"{n} {c}" for n, c in sorted(by.items())) or "none"
            print(f"  ({v.key:2}) {v.label[:34]:34} UP {str(up):22} writes acknowledged: {where}", flush=True)
        try:
            res = subprocess.run([*self.lab.place, str(labs.DBCHECK), "--config", str(self.lab.check_config),
                                  "check", self.lab.write_backend, self.addr],
                                 capture_output=True, text=True, timeout=5)
            said = (res.stdout or res.stderr).strip().splitlines()
            line = said[-1] if said else ""
        except subprocess.TimeoutExpired:
            line = "no verdict within 5 s"
        print(f"  (c) dbcheck check {self.lab.write_backend} {self.old}: {_reason(line)}")
        if self.agent:
            try:
                answer = self.agent.ask(self.lab.write_backend).strip()
            except OSError as e:
                answer = f"no answer ({e})"
            print(f"  (d) agent on {self.old}'s host answers: {answer}", flush=True)


def watch_partition(lab):
    """One partition scenario on a started lab, printed as it happens; returns the lost counts."""
    old = F.start_state(lab, "partition")
    watch = W.ManagerWatch(lab.primary).start()
    roles, writers, heal, wrong = {}, {}, None, False
    try:
        roles = lab.role_watches()
        writers = {v.key: lab.writer(v) for v in lab.variants}
        for w in writers.values():
            w.pace = WRITE_PACE
            w.start()
        screen = Screen(lab, old, writers, watch, roles)
        time.sleep(TICK)
        screen.block()
        run = {}
        what = report.SCENARIO_TEXT[(lab.engine, "partition")]
        print(f"\n=== {what.split(';')[0]}: cutting {old}'s host now ===", flush=True)
        screen.t_fault = time.monotonic()
        heal = lab.inject("partition", old, run)
        t_switch = None
        while True:
            time.sleep(TICK)
            if t_switch is None and watch.switch(old, screen.t_fault)[1]:
                t_switch = time.monotonic()
                screen.block(f"   <- the manager moved off {old}")
                continue
            screen.block()
            if t_switch and time.monotonic() - t_switch >= labs.HOLD:
                break
            if time.monotonic() - screen.t_fault > 90:
                print("  !! WRONG: the manager did not move within 90 s", flush=True)
                wrong = True
                break
        how = ("its Patroni rejoins as a replica" if lab.engine == "pg"
               else "Sentinel converts it to a replica")
        print(f"\n=== healing the partition: {old} comes back ({how}) ===", flush=True)
        heal, undo = None, heal
        undo()
        new = lab.settle(not_master=old)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(_routed_only(lab, v, new)
                                                      for v in lab.variants if v.dbcheck):
            time.sleep(TICK)
            screen.block()
        unsettled = [v.label for v in lab.variants if v.dbcheck and not _routed_only(lab, v, new)]
        if unsettled:
            print(f"  !! WRONG: 30 s after the heal, not routed to {new} alone: {', '.join(unsettled)}",
                  flush=True)
            wrong = True
        else:
            screen.block("   (settled)")
    finally:
        lab.heal_all()  # whatever happened, no cut stays
        for w in writers.values():
            w.stop()
        for r in roles.values():
            r.stop()
        watch.stop()
    print(f"\nacknowledged writes missing from the final primary ({new}):")
    for v in lab.variants:
        stored = lab.stored(v, new)
        lost = [wid for _, wid, _ in writers[v.key].acks if wid not in stored]
        print(f"  ({v.key:2}) {v.label[:34]:34} acknowledged {len(writers[v.key].acks):7}   "
              f"lost {len(lost):7}")
    print("(which of these no router could have saved, and why: docs/failover.md, 'Partitions'; "
          "the scenario run 20 times: bench/failover/run --lab net)")
    return not wrong


def main():
    # SIGTERM (and SIGINT) unwind through the finally blocks: the cut is healed and every
    # process and namespace the demo started is removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    right = True
    for lab_cls in P.LABS:
        workdir = Path(tempfile.mkdtemp(prefix=f"dbcheck-demo-partition-{lab_cls.engine}."))
        workdir.chmod(0o755)
        lab = lab_cls(workdir)
        print(f"\n##### {lab_cls.engine}: starting the lab, every host a network namespace ...\n"
              f"lab directory: {workdir}", flush=True)
        try:
            lab.start()
            if lab.net.swept:
                print("removed network namespaces an earlier run left behind when it died: "
                      + " ".join(lab.net.swept), flush=True)
            right = watch_partition(lab) and right
        finally:
            lab.stop()
            subprocess.run(["rm", "-rf", str(workdir)], check=False)
    return 0 if right else 1


if __name__ == "__main__":
    sys.modules.setdefault("demo_partition", sys.modules["__main__"])
    sys.exit(main())
