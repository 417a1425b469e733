"""One failover run, drawn (bench/failover/run --plot DIR): for each HAProxy configuration of
the run, which servers its write backend had UP, the writes each node acknowledged (and those
lost), errors, and the windows with two writers UP; above them, the cluster manager's choice
and each node's own role. Times are seconds from the fault. Input: the run's rows as
failover.py writes them to build/failover/runs.jsonl (one per configuration).

  /usr/bin/python3 bench/failover/plot.py build/failover/runs.jsonl ENGINE SCENARIO [REP] OUT.png
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen

COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:purple"]


def _segments(timeline, end):
    """[(start, end, value)] from [[t, value], ...] changes (the last lasting until `end`)."""
    out = []
    for (t, value), nxt in zip(timeline, [*timeline[1:], [end, None]]):
        out.append((t, nxt[0], value))
    return out


def _up_segments(state_lines, server, start, end, up_at_start):
    """[(from, to)] while `server` was UP, from its state lines and its state at `start`."""
    out, since = [], start if up_at_start else None
    for t, srv, state in state_lines:
        if srv != server:
            continue
        if state == "UP" and since is None:
            since = t
        elif state != "UP" and since is not None:
            out.append((since, t))
            since = None
    if since is not None:
        out.append((since, end))
    return out


def draw_run(rows, out, command=""):
    """Draws the run of `rows` (one per configuration, as in runs.jsonl) to `out` (PNG or SVG,
    by its suffix); returns `out`."""
    first = rows[0]
    nodes = sorted(first["role_timeline"])
    color = {n: COLORS[i % len(COLORS)] for i, n in enumerate(nodes)}
    end = max(r.get("t_end_s") or 0 for r in rows) or 60
    start = first.get("writes", {}).get("from_s", -3.0)
    fig, axes = plt.subplots(len(rows) + 1, 1, figsize=(11, 1.35 * (len(rows) + 1) + 0.9), sharex=True,
                             gridspec_kw={"hspace": 0.55})
    # The manager's choice and each node's own role.
    ax = axes[0]
    for i, n in enumerate(nodes):
        for a, b, role in _segments(first["role_timeline"][n], end):
            if role == "primary":
                ax.broken_barh([(a, b - a)], (i - 0.35, 0.7), color=color[n], alpha=0.35)
        for a, b, named in _segments(first["manager_timeline"], end):
            if named == n:
                ax.broken_barh([(a, b - a)], (i - 0.1, 0.2), color="black")
    ax.set_yticks(range(len(nodes)), nodes)
    ax.set_title(f"{first['engine']} {first['scenario']} #{first['rep']}: old primary {first['old']}, new "
                 f"{first['new']}. Bars: the node says primary; black: the manager names it", fontsize=9,
                 loc="left")
    # Each configuration: servers UP, writes per node, lost writes, errors, two writers UP.
    for ax, r in zip(axes[1:], rows):
        w = r.get("writes") or {}
        step = w.get("step_s", 0.25)
        node_of = r.get("server_nodes") or {n: n for n in nodes}
        server_of = {n: s for s, n in node_of.items()}
        peak = max([max(v) for v in w.get("acked", {}).values() if v] + [1])
        for i, n in enumerate(nodes):
            srv = server_of.get(n, n)
            ups = _up_segments(r.get("state_lines", []), srv, start, end,
                               up_at_start=(n == first["old"] and r.get("log_agrees", True)))
            ax.broken_barh([(a, b - a) for a, b in ups], (i - 0.4, 0.8), color="tab:green", alpha=0.18)
            acked = w.get("acked", {}).get(n)
            if acked:
                xs = [start + k * step for k in range(len(acked))]
                ax.bar(xs, [0.75 * c / peak for c in acked], width=step, bottom=i - 0.375, align="edge",
                       color=color[n], linewidth=0)
            lost = w.get("lost", {}).get(n)
            if lost and any(lost):
                xs = [start + k * step for k in range(len(lost)) if lost[k]]
                ax.scatter(xs, [i + 0.3] * len(xs), marker="x", color="red", s=12, zorder=3)
        errors = w.get("errors") or []
        for k, c in enumerate(errors):
            if c:
                ax.axvspan(start + k * step, start + (k + 1) * step, color="grey", alpha=0.25, linewidth=0)
        for a, b in r.get("two_up_intervals", []):
            ax.axvspan(a, b, color="magenta", alpha=0.4)
        ax.set_yticks(range(len(nodes)), nodes)
        ax.set_ylim(-0.6, len(nodes) - 0.4)
        ax.set_title(f"({r['variant']}) {r['label']} [{r['settings']}]: acked {r['acked']}, lost "
                     f"{r['lost']} (routing {r['lost_routing']}), no kept write {r.get('kept_window_s')} s, "
                     f"two writers UP {r['two_up_s']} s", fontsize=8, loc="left")
    axes[-1].set_xlabel("seconds from the fault. Green: HAProxy has the server UP; bars: writes the node "
                        "acknowledged; red x: lost; grey: write errors; magenta: two writers UP", fontsize=8)
    axes[-1].set_xlim(start, end)
    if command:
        fig.text(0.01, 0.003, command, fontsize=6, color="grey")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return out


def main(argv):
    if len(argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    log, engine, scenario, *rest = argv
    rep = int(rest[0]) if len(rest) == 2 else 1
    rows = [r for r in map(json.loads, Path(log).read_text().splitlines())
            if r["engine"] == engine and r["scenario"] == scenario and r["rep"] == rep]
    if not rows:
        print(f"no run {engine} {scenario} #{rep} in {log}", file=sys.stderr)
        return 1
    print(draw_run(rows, rest[-1], command=f"bench/failover/plot.py {' '.join(argv)}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
