-- dbcheck's least-privilege PostgreSQL role. Run once, as a superuser, on the primary
-- (the role, the schema and the functions replicate to every standby):
--
--   dbcheck setup-sql postgres | sudo -u postgres psql -X -v ON_ERROR_STOP=1 \
--       -v role=healthcheck -v dbname=appdb -f -
--   sudo -u postgres psql -X -c '\password healthcheck'
--
-- \password prompts for the password and sends the server only its SCRAM hash: the password
-- is on no command line, in no server log and in no pg_stat_activity. This file takes no
-- password for that reason.
--
-- What dbcheck runs with it (nothing else):
--   writer:  SELECT pg_is_in_recovery(), current_setting('transaction_read_only'),
--            the number of client backends (pg_stat_activity.backend_type),
--            current_setting('max_connections'), current_setting('superuser_reserved_connections')
--   reader:  pg_is_in_recovery(), pg_stat_wal_receiver (pid, status, received_tli),
--            pg_is_wal_replay_paused(), pg_last_wal_replay_lsn(), pg_last_xact_replay_timestamp()
--   sample:  SELECT pg_current_wal_flush_lsn(), pg_walfile_name(...)   (on the leader, for the lag bound)
--   each of the three also reads the node's system identifier, which cluster's data it is:
--            (SELECT system_identifier FROM pg_catalog.pg_control_system())
--   write probe (write_probe = true only): BEGIN; SET LOCAL lock_timeout; TRUNCATE
--            dbcheck.write_probe; INSERT one row; ROLLBACK   (on the primary; nothing is committed)
-- All of these are granted to PUBLIC, but two answers are hidden from an ordinary role:
-- pg_stat_wal_receiver.status and received_tli (NULL: the reader could not be checked), and
-- the backend_type of other users' sessions (the writer would count only its own connection
-- and never see the server full). The predefined role that shows them, pg_read_all_stats
-- (inside pg_monitor), also shows every session's query text, which may hold data and
-- secrets. So the role gets no predefined role: a schema "dbcheck" in the application
-- database holds two views named like the catalog's, each over a SECURITY DEFINER function
-- that returns only those columns, and the role's search_path puts that schema before
-- pg_catalog. The role still sees "<insufficient privilege>" for other sessions' queries in
-- pg_catalog.pg_stat_activity (tests/integration/test_setup_sql.py proves both).
--
-- Upgrading from the earlier version of this file (GRANT pg_monitor): run everything after
-- CREATE ROLE below, then REVOKE pg_monitor FROM healthcheck.

CREATE ROLE :"role" WITH LOGIN
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;

-- The check connects to the application database, so a broken or missing database
-- shows up in the check; CONNECT is granted to PUBLIC by default, this makes it explicit
-- for databases where PUBLIC's CONNECT was revoked.
GRANT CONNECT ON DATABASE :"dbname" TO :"role";

-- dbcheck bounds every statement with its own deadline (statement_timeout in the startup
-- packet); this is a backstop for anyone using the role by hand.
ALTER ROLE :"role" SET statement_timeout = '2s';

-- The views below before the catalog's (a schema missing from the current database is
-- skipped: elsewhere the role sees the catalog's views, and the reader check fails closed).
ALTER ROLE :"role" SET search_path = dbcheck, pg_catalog;

-- Not set on purpose: CONNECTION LIMIT. A role limit makes the check fail with SQLSTATE
-- 53300 ("too many connections for role"), which dbcheck cannot tell from a saturated
-- server and would treat per on_saturation.

\connect :"dbname"

-- Owned by the superuser running this file; nobody else may create in it.
CREATE SCHEMA dbcheck;
REVOKE ALL ON SCHEMA dbcheck FROM PUBLIC;
GRANT USAGE ON SCHEMA dbcheck TO :"role";

-- Run with the owner's (superuser's) view of the statistics, and a fixed search_path so that
-- no object of the caller's can stand in for the catalog's.
CREATE FUNCTION dbcheck.wal_receiver_state(OUT pid integer, OUT status text,
                                           OUT received_tli integer)
  RETURNS SETOF record LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS 'SELECT pid, status, received_tli FROM pg_catalog.pg_stat_wal_receiver';
CREATE FUNCTION dbcheck.backend_types(OUT backend_type text)
  RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS 'SELECT backend_type FROM pg_catalog.pg_stat_activity';
REVOKE ALL ON FUNCTION dbcheck.wal_receiver_state(), dbcheck.backend_types() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dbcheck.wal_receiver_state(), dbcheck.backend_types() TO :"role";

-- Only the columns dbcheck reads: no query text, no user, no client address.
CREATE VIEW dbcheck.pg_stat_wal_receiver AS SELECT * FROM dbcheck.wal_receiver_state();
CREATE VIEW dbcheck.pg_stat_activity AS SELECT * FROM dbcheck.backend_types();
REVOKE ALL ON dbcheck.pg_stat_wal_receiver, dbcheck.pg_stat_activity FROM PUBLIC;
GRANT SELECT ON dbcheck.pg_stat_wal_receiver, dbcheck.pg_stat_activity TO :"role";

-- The write probe's table (used only with write_probe = true in dbcheck.toml): one row, owned
-- by the superuser. The probe truncates it (a new, empty file), inserts a row (which must
-- extend that file by a page: 53100 when the disk is full) and rolls back, so the row stays
-- and nothing is ever committed. The role may insert into it and truncate it, nothing else.
CREATE TABLE dbcheck.write_probe (checked_at timestamptz NOT NULL);
INSERT INTO dbcheck.write_probe VALUES (now());
REVOKE ALL ON dbcheck.write_probe FROM PUBLIC;
GRANT INSERT, TRUNCATE ON dbcheck.write_probe TO :"role";
