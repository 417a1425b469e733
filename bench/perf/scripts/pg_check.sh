#!/bin/sh
# A hand-rolled HAProxy external check for a PostgreSQL writer, as an operator would write it
# (bench/perf/run times it beside dbcheck): the node is a writer when it is not in recovery and its
# Patroni answers GET /primary with 200.
#   PGPASSFILE=FILE PATRONI_URL=http://host:8008 pg_check.sh PROXY_ADDR PROXY_PORT HOST PORT
# The password comes from PGPASSFILE, never from argv. Exit 0 writer, 1 not.
set -u
in_recovery=$(PGCONNECT_TIMEOUT=2 psql -X -w -h "$3" -p "$4" -U healthcheck -d appdb \
  -tAc 'select pg_is_in_recovery()') || exit 1
[ "$in_recovery" = f ] || exit 1
curl -sf -o /dev/null --max-time 2 --noproxy '*' "$PATRONI_URL/primary" || exit 1
exit 0
