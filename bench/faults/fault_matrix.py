"""The fault matrix: each fault injected against real servers on 127.0.0.1, with the
verdict of the external check (`dbcheck explain --json`: its own elapsed_ms, the process's wall
time and exit status) and of the dbcheck-agent serving that node (its /health: reported state,
failure, reason, and the time from injection until it reported the expected verdict), what the
anchors (Patroni's httpchk, the Sentinel + ROLE tcp-check: lab/anchors.py) answered for that
node at the same moment, then the fault removed and health awaited (bounded).

Run through bench/faults/run (root, Debian's /usr/bin/python3, build/ already built).
Exit status 1 when any row broke the deadline (timeout + 100 ms by the check's own
elapsed_ms), exited otherwise than its verdict says (0 up, 1 down), hung (hard caps: the check
process at timeout + 5 s, the row at ROW_CAP_S), gave another verdict than the one expected,
leaked a secret, or could not be measured. Lab servers are ours, stopped by PID.

The rows are declared once each in bench/faults/fault_rows_{pg,redis,etcd}.py (ROWS below puts them
in table order); bench/faults/fault_runner.py starts the labs and measures a row,
bench/faults/fault_observe.py watches the agents and renders the table.
"""

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import fault_rows_etcd
import fault_rows_pg
import fault_rows_redis
from fault_observe import table
from fault_registry import Rows
from fault_runner import AGENT, DBCHECK, Matrix, install_alarm

# Every row, in the order they run and appear in the table.
ROWS = Rows([*fault_rows_pg.ROWS, *fault_rows_redis.ROWS, *fault_rows_etcd.ROWS])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ROW",
                        help="run only these rows (names as in the table)")
    parser.add_argument("--no-write", action="store_true",
                        help="print the table, leave docs/results.md alone")
    args = parser.parse_args()
    for binary in (DBCHECK, AGENT):
        if not binary.is_file():
            sys.exit(f"{binary} not found: run ./scripts/build first")
    install_alarm()
    workdir = Path(tempfile.mkdtemp(prefix="dbcheck-faults.", dir="/tmp"))
    workdir.chmod(0o755)
    t0 = time.monotonic()
    only = set(args.only or ())
    rows = ROWS.selected(only)
    m = Matrix(workdir)
    try:
        with m.stack:
            m.start_labs(rows.labs())
            for row in rows:
                row.run(m, *row.names)
    except Exception as e:  # noqa: BLE001 - reported below; the labs are stopped by then
        m.notes.append(f"**aborted**: {e!r}")
        print(f"aborted: {e!r}", file=sys.stderr)
    elapsed = time.monotonic() - t0
    failed = [ln for ln in m.lines if ln.problems]
    unknown = only - set(ROWS.names())
    body = "\n\n".join([
        "## Fault matrix",
        f"`bench/faults/run` ({elapsed / 60:.1f} min on this machine). Configured check deadline "
        "`timeout = \"800ms\"`; every external check must reach its verdict within 900 ms by its own clock "
        "(`elapsed_ms`) and exit within the timeout + 5 s (a hang otherwise). External: `dbcheck explain "
        "--json` as its own process (wall time; its own `elapsed_ms` in brackets). Agent: `dbcheck-agent` on "
        "that node (interval 1 s, fall 2, rise 3), its `/health` reported verdict; time to verdict from the "
        "injection until it reported the expected verdict, polled every 100 ms (its own check duration in "
        "brackets). Faults in dbcheck's configuration (fake peers, passwords, names) reach the agent by a "
        "reload (SIGHUP). Anchors, asked beside the external check for the same node (evidence, never a "
        "failing row): Patroni's `option httpchk GET /primary` (writer) or `GET /replica` (reader), "
        "`http-check expect status 200`; the Sentinel + ROLE tcp-check (the first Sentinel's "
        "`get-master-addr-by-name` names the server, then AUTH and ROLE `master`; a reader: ROLE `slave`). "
        "Both with their own right settings, sent as HAProxy sends them from Python (lab/anchors.py), "
        "connect 1 s, check 1 s: one check's answer, not a fall/rise series.",
        table(m.lines),
        *m.notes,
    ])
    print("\n" + body)
    if failed or "aborted" in " ".join(m.notes) or unknown:
        for ln in failed:
            print(f"FAILED {ln.row} [{ln.target.label}]: {'; '.join(ln.problems)}", file=sys.stderr)
        if unknown:
            print(f"unknown rows: {', '.join(sorted(unknown))}", file=sys.stderr)
        status = 1
    else:
        status = 0
    if not args.no_write and not args.only:
        from lab.results import write_section
        write_section("faults", body)
    if status == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"kept {workdir}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
