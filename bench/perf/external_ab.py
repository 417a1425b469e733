#!/usr/bin/env python3
"""A/B of the external check's cost: two or more installs of dbcheck (each `cmake --install
BUILD --prefix DIR --strip`), interleaved in one run by bench/perf/external_cost.py's own method
(whole-process CPU from wait4, a warm-up round, each round in a rotated order), beside the
floor that links libpq and makes its own GET and an empty C program. Starts its own Patroni
lab (the lab package) and stops it (by PID) at the end.

  . scripts/pythonpath
  python3 bench/perf/external_ab.py [--write] ROUNDS [LABEL=]DIR [[LABEL=]DIR ...]

Prints, per variant, the CPU and wall medians of the PostgreSQL writer check and of
`dbcheck --help`, and each one's CPU ratio to its floor (the targets: a PostgreSQL check within
1.2x the libpq-and-own-GET floor, --help within 2x an empty C program). LABEL names an install
in the table (say, the commit it was built from); DIR by default. --write also writes the
table to docs/results.md, section external-ab.
"""

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import external_cost as ext
from lab.dbcheck import write_dbcheck_config
from lab.patroni import HC_PASSWORD, HC_USER, PatroniCluster
from main import BUILD_BENCH, build_tools

FLOOR = "floor, libpq + own GET"
EMPTY = "empty C program"


def table(variants):
    """Markdown rows of the measured variants: medians and each one's CPU ratio to its floor."""
    cpu = {v.name: statistics.median(v.cpus) * 1000 for v in variants}
    out = ["| variant | CPU median ms | wall median ms | CPU / floor |", "| --- | ---: | ---: | ---: |"]
    for v in variants:
        floor = EMPTY if "--help" in v.name else FLOOR
        ratio = "" if v.name in (FLOOR, EMPTY) else f"{cpu[v.name] / cpu[floor]:.2f}× ({floor})"
        out.append(f"| {v.name} | {cpu[v.name]:.2f} | {statistics.median(v.walls) * 1000:.2f} | {ratio} |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="also write docs/results.md, section external-ab")
    ap.add_argument("rounds", type=int)
    ap.add_argument("installs", nargs="+", metavar="[LABEL=]DIR")
    args = ap.parse_args()
    installs = [(i.split("=", 1) if "=" in i else (i, i)) for i in args.installs]
    work = Path(tempfile.mkdtemp(prefix="dbcheck-ab.", dir="/tmp"))
    work.chmod(0o755)
    tools = build_tools(BUILD_BENCH)
    cluster = PatroniCluster(work / "pg")
    try:
        cluster.start()
        leader = cluster.wait_primary()
        config = write_dbcheck_config(work / "pg-dbcheck", cluster, owner=None)
        pgpass = config.parent / "pgpass"
        pgpass.write_text(f"127.0.0.1:*:*:{HC_USER}:{HC_PASSWORD}\n")
        pgpass.chmod(0o600)
        variants = []
        for i, (label, inst) in enumerate(installs):
            for v in ext.pg_variants(Path(inst) / "bin" / "dbcheck", config, tools, pgpass, leader):
                if v.name in ("dbcheck", "dbcheck --help"):
                    v.name = f"{v.name} [{label}]"
                    variants.append(v)
                elif i == 0 and v.name in (FLOOR, EMPTY):
                    variants.append(v)
        ext.measure(variants, args.rounds)
    finally:
        cluster.stop()
    rows = table(variants)
    print("\n".join(rows))
    if args.write:
        from lab import results
        intro = (f"Installs of dbcheck (stripped, with their modules) interleaved in one run, {args.rounds} "
                 "rounds, by bench/perf/external_cost.py's method (CPU = user+sys from wait4), "
                 "beside its floors: "
                 "the PostgreSQL writer check as HAProxy runs it against a live Patroni lab, and `--help`.")
        body = ["## External check before and after (the targets: PostgreSQL check ≤ 1.2× the libpq + "
                "own GET floor, `--help` ≤ 2× an empty C program)", "", intro, "", *rows]
        results.write_section("external-ab", "\n".join(body))
        print(f"written to {results.RESULTS} (section external-ab)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
