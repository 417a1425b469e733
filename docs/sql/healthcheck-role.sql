-- dbcheck's least-privilege PostgreSQL role. Run once, as a superuser, on the primary
-- (the role replicates to every standby):
--
--   psql -v ON_ERROR_STOP=1 -v role=healthcheck -v password="$(cat /etc/dbcheck/pg.password)" \
--        -v dbname=appdb -f healthcheck-role.sql
--
-- What dbcheck runs with it (nothing else):
--   writer:  SELECT pg_is_in_recovery(), current_setting('transaction_read_only')
--   reader:  pg_is_in_recovery(), pg_stat_wal_receiver, pg_is_wal_replay_paused(),
--            pg_last_wal_replay_lsn(), pg_last_xact_replay_timestamp()
--   sample:  SELECT pg_current_wal_lsn()   (on the leader, for the replica lag bound)
-- All are granted to PUBLIC except the columns of pg_stat_wal_receiver (status, ...),
-- which only superusers and members of pg_read_all_stats see: pg_monitor includes it.

CREATE ROLE :"role" WITH LOGIN PASSWORD :'password'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;

-- pg_read_all_stats (inside pg_monitor): read pg_stat_wal_receiver.status.
GRANT pg_monitor TO :"role";

-- The check connects to the application database, so a broken or missing database
-- shows up in the check; CONNECT is granted to PUBLIC by default, this makes it explicit
-- for databases where PUBLIC's CONNECT was revoked.
GRANT CONNECT ON DATABASE :"dbname" TO :"role";

-- dbcheck bounds every statement with its own deadline (statement_timeout in the startup
-- packet); this is a backstop for anyone using the role by hand.
ALTER ROLE :"role" SET statement_timeout = '2s';

-- Not set on purpose: CONNECTION LIMIT. A role limit makes the check fail with SQLSTATE
-- 53300 ("too many connections for role"), which dbcheck cannot tell from a saturated
-- server and would treat per on_saturation.
