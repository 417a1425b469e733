"""The partition lab itself (lab/netns.py): hosts that reach one another, cuts that drop
exactly what they say in the direction they say, heals that restore it, and nothing left behind."""

import os
import socket
import subprocess
import threading
import time

import pytest

from lab.netns import IP, NetLab, pids_inside, sweep_stale
from lab.procs import wait_until


def _netns_refused():
    """Why this machine cannot create a network namespace ('' when it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"dbcn{os.getpid()}-probe"
    res = subprocess.run([IP, "netns", "add", probe], capture_output=True, text=True)
    if res.returncode != 0:
        return f"the kernel refuses network namespaces here: {res.stderr.strip()}"
    subprocess.run([IP, "netns", "del", probe], capture_output=True)
    return ""


REFUSED = _netns_refused()
pytestmark = pytest.mark.skipif(bool(REFUSED), reason=REFUSED or "-")

PORT = 7000  # inside the lab's own namespaces: no clash with anything on the machine


def in_host(lab, host, fn):
    """fn() run on a thread that entered `host`; its result (or its exception, re-raised)."""
    out = {}

    def body():
        try:
            lab.enter(host)
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            out["error"] = exc

    t = threading.Thread(target=body)
    t.start()
    t.join(10)
    assert not t.is_alive(), f"a thread in {host} did not finish"
    if "error" in out:
        raise out["error"]
    return out["value"]


class Listener:
    """A TCP server on `host`:PORT that answers every connection with its host name."""

    def __init__(self, lab, host):
        self.sock = in_host(lab, host, lambda: socket.create_server((lab.addr(host), PORT)))
        self.sock.settimeout(0.2)
        self.host = host
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.halt.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(self.host.encode())

    def close(self):
        self.halt.set()
        self.thread.join(5)
        self.sock.close()


def answers(lab, src, dst, timeout=0.5):
    """True when a client on `src` gets an answer from the Listener on `dst` within `timeout`."""
    def attempt():
        try:
            with socket.create_connection((lab.addr(dst), PORT), timeout=timeout) as s:
                return s.recv(64).decode() == dst
        except OSError:
            return False
    return in_host(lab, src, attempt)


def reaches(lab, src, dst, within=5.0):
    """True when `src` gets an answer from `dst`, tried until `within` s have passed (a busy
    machine, or a first ARP lost right after the link came up, must not make a cut look real)."""
    deadline = time.monotonic() + within
    while not answers(lab, src, dst):
        if time.monotonic() >= deadline:
            return False
    return True


def blocked(lab, src, dst):
    """True when `src` gets no answer from `dst` within 0.5 s (a dropped SYN or SYN-ACK)."""
    return not answers(lab, src, dst)


@pytest.fixture
def lab():
    net = NetLab(["a", "b", "c"]).start()
    listeners = []
    try:
        listeners += [Listener(net, h) for h in net.hosts]
        yield net
    finally:
        for x in listeners:
            x.close()
        net.stop()


def names():
    return set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()


def test_hosts_reach_each_other_and_nothing_else(lab):
    assert all(reaches(lab, s, d) for s in lab.hosts for d in lab.hosts if s != d)
    for h in lab.hosts:
        routes = subprocess.run([IP, "-n", lab.ns(h), "route", "show", "default"], capture_output=True,
                                text=True, check=True).stdout
        assert routes.strip() == "", f"{h} has a default route: {routes}"
    # The lab's range is on no interface of the namespace the test runs in.
    assert "10.213." not in subprocess.run([IP, "-4", "addr"], capture_output=True, text=True,
                                           check=True).stdout
    switch_addrs = subprocess.run([IP, "-n", lab.ns("sw"), "-4", "addr"], capture_output=True, text=True,
                                  check=True).stdout
    assert "inet " not in switch_addrs.replace("inet 127.0.0.1", "")


def test_cut_both_ways_drops_only_the_named_peers(lab):
    cut = lab.cut("a", ["b"])
    assert blocked(lab, "a", "b") and blocked(lab, "b", "a")
    assert reaches(lab, "a", "c") and reaches(lab, "c", "a") and reaches(lab, "b", "c")
    lab.heal(cut)
    assert reaches(lab, "a", "b") and reaches(lab, "b", "a")
    assert "drop" not in lab.rules("a")


def test_one_way_cut_drops_one_direction(lab):
    # `a` receives nothing from `b`, but what `a` sends still arrives: b's SYN-ACK is what is
    # dropped, so a TCP connection fails both ways while a's packets reach b.
    lab.cut("a", ["b"], direction="in")
    assert blocked(lab, "a", "b") and blocked(lab, "b", "a")
    rules = lab.rules("a")
    assert "ip saddr 10.213.0." in rules and "ip daddr" not in rules
    lab.heal()
    assert reaches(lab, "a", "b")


def test_cut_of_ports_leaves_other_ports(lab):
    lab.cut("a", ["b"], direction="out", ports=[PORT + 1])
    assert reaches(lab, "a", "b")
    lab.cut("a", ["b"], direction="out", ports=[PORT])
    assert blocked(lab, "a", "b") and reaches(lab, "a", "c")


def test_a_thread_goes_back_and_a_lab_address_is_never_asked_from_outside(lab):
    def round_trip():
        lab.enter("a")
        lab.check_inside()  # inside: fine
        lab.leave()
        with pytest.raises(RuntimeError, match="outside the lab"):
            lab.check_inside()
        return True
    assert in_host(lab, "b", round_trip)


def test_stop_removes_everything_and_sweep_removes_a_dead_runs_lab():
    net = NetLab(["x"]).start()
    made = {net.ns("x"), net.ns("sw")}
    assert made <= names()
    # A process left inside (a run that failed before stopping it) is stopped with the lab.
    left = subprocess.Popen(net.argv("x", ["sleep", "600"]), start_new_session=True)
    # Only once it is inside: `ip netns exec` still starting is not yet a process of the lab.
    wait_until(lambda: left.pid in pids_inside(net.ns("x")), 20, "the sleep inside the lab")
    net.stop()
    assert left.wait(20) is not None
    assert not made & names()
    # A lab left behind by a process that died: its PID is gone, the next lab removes it.
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"dbcn{dead.pid}-x"
    subprocess.run([IP, "netns", "add", stale], check=True)
    try:
        assert stale in sweep_stale()
        assert stale not in names()
    finally:
        subprocess.run([IP, "netns", "del", stale], capture_output=True)


def test_bad_host_names_are_refused():
    with pytest.raises(ValueError, match="repeat"):
        NetLab(["a", "a"])
    with pytest.raises(ValueError, match="lowercase"):
        NetLab(["Bad-Name"])
