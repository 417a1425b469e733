"""The external check's shared Patroni view (shared_view_max_age) against a real cluster: the
checks of one host take the members' view another check elected moments ago where it cannot
pass what a live view would fail (a replica's writer check, a reader whose leader is sampled
live); a writable node's writer check always asks the members. A switchover is seen at once:
the new leader's checks set the older view aside."""

import os
import re
import stat
import threading
import time

from lab.dbcheck import explain, write_dbcheck_config
from lab.procs import wait_until

MAX_AGE = "2s"


def shared_config(workdir, cluster):
    views = workdir / "views"
    return write_dbcheck_config(workdir, cluster, owner=None, timeout="800ms",
                                cluster_extra=f'shared_view_max_age = "{MAX_AGE}"\n'
                                              f'shared_view_dir = "{views}"'), views


def manager_steps(run):
    return [s for s in run.report["steps"] if s["opinion"] == "manager"]


def uses_shared_view(run):
    return any(s["peer"] == "shared view" for s in manager_steps(run))


def test_checks_share_the_members_view_and_ask_the_leader_live(pg_cluster, dbcheck_bin, workdir, figures):
    leader = pg_cluster.wait_healthy()
    replica = pg_cluster.replicas()[0]
    cfg, views = shared_config(workdir, pg_cluster)

    # The first check asks the members and shares their view; one taken within MAX_AGE uses it
    # (retried: on a loaded machine two process starts may be further apart than MAX_AGE).
    def shared_check(backend, member):
        def attempt():
            explain(dbcheck_bin, cfg, backend, member.pg_addr)
            run = explain(dbcheck_bin, cfg, backend, member.pg_addr)
            return run if uses_shared_view(run) else None
        return wait_until(attempt, 30, f"a {backend} check of {member.name} that reads the shared view")

    # A replica's writer check: down on its own word, no member asked.
    run = shared_check("pg_write", replica)
    assert run.state == "down" and run.failure == "role", run.reason
    assert [s["peer"] for s in manager_steps(run)] == ["shared view"], manager_steps(run)
    # The leader's writer check never passes on a shared view: the members and its own
    # /primary are asked live.
    run = shared_check("pg_write", leader)
    assert run.state == "up", run.reason
    steps = manager_steps(run)
    assert "set aside" in steps[0]["answer"], steps
    assert sum(s["asked"] == "GET /cluster" and s["peer"] != "shared view" for s in steps) >= 1, steps
    assert sum(s["asked"] == "GET /primary" for s in steps) == 1, steps
    # A reader: the view stands for the members; the leader is sampled live.
    reader = shared_check("pg_read", replica)
    assert reader.state == "up", reader.reason
    assert [s["peer"] for s in manager_steps(reader)] == ["shared view"], manager_steps(reader)
    assert any(s["opinion"] == "primary_sample" for s in reader.report["steps"])

    # Only this user can reach the views.
    assert stat.S_IMODE(os.stat(views).st_mode) == 0o700
    files = list(views.iterdir())
    assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600, files
    figures("shared Patroni view", f"replica's writer check down and reader UP on "
                                   f"{manager_steps(reader)[0]['answer'][:48]}...; the leader's "
                                   "writer check asked the members live")


def test_a_switchover_is_seen_at_once_through_the_shared_view(pg_cluster, dbcheck_bin, workdir, figures):
    """Writer checks of every member in turn, as HAProxy's, keep the view shared throughout.
    After patronictl switchover: the old leader never passes again once the new one has, and
    the new leader passes with the view the members give now, not the older shared one."""
    old = pg_cluster.wait_healthy()
    new = next(m for m in pg_cluster.replicas() if m != old)
    cfg, _ = shared_config(workdir, pg_cluster)
    runs, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            for m in pg_cluster.members():
                r = explain(dbcheck_bin, cfg, "pg_write", m.pg_addr)
                runs.append((time.monotonic(), m.name, r))

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        wait_until(lambda: any(n == old.name and r.state == "up" and uses_shared_view(r)
                               for _, n, r in list(runs)), 30, "the old leader UP while views are shared")
        switched = time.monotonic()
        pg_cluster.switchover(new.name, leader=old.name)
        wait_until(lambda: sum(1 for ts, n, r in list(runs) if ts > switched and n == new.name
                               and r.state == "up") >= 3, 60, f"{new.name} UP three times")
    finally:
        stop.set()
        t.join(30)
        pg_cluster.wait_healthy()
    after = [(ts, n, r) for ts, n, r in runs if ts > switched]
    first_new = min(ts for ts, n, r in after if n == new.name and r.state == "up")
    late_old = [r.reason for ts, n, r in after if n == old.name and r.state == "up" and ts > first_new]
    assert not late_old, f"the old leader passed after the new one: {late_old}"
    # The new leader's checks before its first pass, and that pass: how the view was taken.
    set_aside = [r for ts, n, r in after if n == new.name and ts <= first_new
                 and any("set aside" in s["answer"] for s in manager_steps(r))]
    figures("shared view across a switchover",
            f"{old.name} -> {new.name}: new leader UP {first_new - switched:.1f}s after the request; "
            f"{len(set_aside)} check(s) of it set an older shared view aside; old leader never UP after")


def test_by_default_a_view_is_reused_for_half_a_servers_check_interval(
        pg_cluster, dbcheck_bin, workdir, figures):
    """shared_view_max_age unset ("auto"): a check reuses a view for half the time since the
    last check of the same server in the same backend, so at any inter a round of checks shares
    one view; a server's first check asks the members."""
    leader = pg_cluster.wait_healthy()
    replica = pg_cluster.replicas()[0]
    views = workdir / "views-auto"
    cfg = write_dbcheck_config(workdir / "auto", pg_cluster, owner=None, timeout="800ms", share=True,
                               cluster_extra=f'shared_view_dir = "{views}"')

    # As two servers' checks of one HAProxy at inter 1s: the reader's check shares a view, and
    # the writer check of the same node, a second after its own last one, reuses it (retried:
    # on a loaded machine the two process starts may be further apart than that half).
    def attempt():
        explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
        explain(dbcheck_bin, cfg, "pg_write", replica.pg_addr)
        time.sleep(1.0)
        explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
        run = explain(dbcheck_bin, cfg, "pg_write", replica.pg_addr)
        return run if uses_shared_view(run) else None
    run = wait_until(attempt, 40, "a writer check of the replica that reads the shared view")
    assert run.state == "down" and run.failure == "role", run.reason
    answer = manager_steps(run)[0]["answer"]
    assert "half the time since this server's last check" in answer, answer
    reused = int(re.search(r"reused up to (\d+) ms", answer).group(1))
    assert 500 <= reused <= 2000, answer  # half of 1 s and more: the sleep and a check between
    # A server never checked before asks the members, though a fresh view is there.
    explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
    first = explain(dbcheck_bin, cfg, "pg_read", leader.pg_addr)
    assert not uses_shared_view(first), manager_steps(first)
    marks = sorted(p for p in views.iterdir() if p.name.endswith(".mark"))
    assert len(marks) == 3 and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in marks), marks
    figures("shared view, auto", f"replica's writer check reused a view: {answer[:60]}...")
