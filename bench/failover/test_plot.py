"""Drawing a failover run (plot.py) and the timeline it draws from (failover.write_buckets), on
hand-made runs: /usr/bin/python3 -m pytest bench/failover/test_plot.py -p no:cacheprovider"""

from types import SimpleNamespace

import plot
from failover import write_buckets


def test_up_segments_follow_the_state_lines_from_the_state_at_start():
    lines = [[2.0, "pg1", "DOWN"], [3.5, "pg2", "UP"], [9.0, "pg2", "DOWN"], [9.5, "pg2", "UP"]]
    assert plot._up_segments(lines, "pg1", -3.0, 20.0, up_at_start=True) == [(-3.0, 2.0)]
    assert plot._up_segments(lines, "pg2", -3.0, 20.0, up_at_start=False) == [(3.5, 9.0), (9.5, 20.0)]
    assert plot._up_segments(lines, "pg3", -3.0, 20.0, up_at_start=False) == []


def test_write_buckets_count_each_node_lost_writes_and_errors_from_the_fault():
    writer = SimpleNamespace(
        acks=[(100.0, 1, 5432), (100.1, 2, 5432), (103.3, 3, 5433), (90.0, 4, 5432)],
        errors=[(101.0, "closed"), (101.1, "closed")])
    b = write_buckets(writer, [(100.1, 2, 5432)], {5432: "pg1", 5433: "pg2"}, t_fault=100.0, t_end=104.0)
    assert (b["step_s"], b["from_s"]) == (0.25, -3.0)
    n = len(b["errors"])
    assert n == int((104.0 - 100.0 + 3.0) / 0.25) + 1
    # The write at 90 s is before the timeline.
    assert b["acked"]["pg1"][12] == 2 and sum(b["acked"]["pg1"]) == 2
    assert b["acked"]["pg2"][int((3.3 + 3.0) / 0.25)] == 1
    assert b["lost"] == {"pg1": [1 if i == 12 else 0 for i in range(n)]}
    assert b["errors"][16] == 2 and sum(b["errors"]) == 2


def test_a_run_is_drawn_with_a_panel_per_configuration(tmp_path):
    writes = {"step_s": 0.25, "from_s": -3.0,
              "acked": {"pg1": [5] * 12 + [0] * 28, "pg2": [0] * 20 + [5] * 20},
              "lost": {"pg1": [0] * 11 + [2] + [0] * 28}, "errors": [0] * 12 + [1] * 8 + [0] * 20}
    rows = [dict(engine="pg", scenario="freeze", rep=1, old="pg1", new="pg2", variant=k, label=f"config {k}",
                 settings="inter 1s", acked=200, lost=2, lost_routing=0, kept_window_s=2.0, two_up_s=0.5,
                 two_up_intervals=[[4.0, 4.5]], state_lines=[[1.0, "pg1", "DOWN"], [4.0, "pg2", "UP"]],
                 manager_timeline=[[-3.0, "pg1"], [0.5, None], [2.0, "pg2"]],
                 role_timeline={"pg1": [[-3.0, "primary"], [1.0, None]],
                                "pg2": [[-3.0, "replica"], [2.5, "primary"]]},
                 writes=writes, server_nodes={"pg1": "pg1", "pg2": "pg2"}, t_end_s=7.0, log_agrees=True)
            for k in ("a", "c", "d")]
    out = plot.draw_run(rows, tmp_path / "run.png", command="test")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000
    svg = plot.draw_run(rows, tmp_path / "run.svg").read_text()
    assert svg.count("config ") == 3 and "old primary pg1, new pg2" in svg
