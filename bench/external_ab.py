#!/usr/bin/env python3
"""A/B of the external check's cost: two or more installs of dbcheck (each `cmake --install
BUILD --prefix DIR --strip`), interleaved in one run by bench/external_cost.py's own method
(whole-process CPU from wait4, a warm-up round, each round in a rotated order), beside the
floor that links libpq and makes its own GET and an empty C program. Starts its own Patroni
lab (fixtures of tests/integration) and stops it (by PID) at the end.

  . scripts/pythonpath
  python3 bench/external_ab.py ROUNDS DIR [DIR ...]

Prints, per variant, the CPU and wall medians of the PostgreSQL writer check and of
`dbcheck --help`.
"""

import statistics
import sys
import tempfile
from pathlib import Path

import external_cost as ext
from fixtures.dbcheck import write_dbcheck_config
from fixtures.patroni import HC_PASSWORD, HC_USER, PatroniCluster
from main import BUILD_BENCH, build_tools


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    rounds, installs = int(sys.argv[1]), sys.argv[2:]
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
        for i, inst in enumerate(installs):
            for v in ext.pg_variants(Path(inst) / "bin" / "dbcheck", config, tools, pgpass, leader):
                if v.name in ("dbcheck", "dbcheck --help"):
                    v.name = f"{v.name} [{inst}]"
                    variants.append(v)
                elif i == 0 and v.name in ("floor, libpq + own GET", "empty C program"):
                    variants.append(v)
        ext.measure(variants, rounds)
        for v in variants:
            print(f"{v.name}: CPU median {statistics.median(v.cpus) * 1000:.2f} ms, "
                  f"wall median {statistics.median(v.walls) * 1000:.2f} ms")
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
