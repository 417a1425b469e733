#!/bin/sh
# A hand-rolled HAProxy external check for a Redis writer, as an operator would write it
# (bench/perf/run times it beside dbcheck): the node is a writer when it says ROLE master and a
# majority of the Sentinels name it master.
#   REDISCLI_AUTH=PASSWORD MASTER_NAME=name SENTINELS="host:port ..." redis_check.sh \
#     PROXY_ADDR PROXY_PORT HOST PORT
# The password comes from REDISCLI_AUTH (redis-cli reads it), never from argv. Exit 0 writer, 1 not.
set -u
cli() { timeout 2 redis-cli --user healthcheck "$@"; } # redis-cli 7.0 has no timeout of its own
role=$(cli -h "$3" -p "$4" ROLE | head -n 1) || exit 1
[ "$role" = master ] || exit 1
votes=0 total=0
for s in $SENTINELS; do
  total=$((total + 1))
  addr=$(cli -h "${s%:*}" -p "${s##*:}" SENTINEL get-master-addr-by-name "$MASTER_NAME" | paste -sd:)
  [ "$addr" = "$3:$4" ] && votes=$((votes + 1))
done
[ $((votes * 2)) -gt "$total" ] || exit 1
exit 0
