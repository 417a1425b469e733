"""One PostgreSQL of its own, initdb'd apart from every Patroni cluster: another cluster's
node (its own system identifier) for a server line to point at. No Patroni, no replicas;
trust for 127.0.0.1, the check user and the application database the labs' configs name."""

import shutil
import signal
import time
from pathlib import Path

import psycopg2

from . import peers
from .patroni import APP_DB, HC_USER
from .ports import free_ports
from .procs import run_as, start_daemon, wait_until

PG_BIN = peers.pg_bin()


class StandalonePostgres:
    """A primary on 127.0.0.1:<a free port>, data and logs under `workdir`."""

    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.data_dir = self.workdir / "data"
        self.socket_dir = self.workdir / "socket"
        self.port = free_ports(1)[0]
        self.daemon = None
        self.up_seconds = 0.0

    @property
    def pg_addr(self):
        return f"127.0.0.1:{self.port}"

    def conn(self, db=APP_DB):
        """An autocommit psycopg2 connection as the superuser over the socket directory."""
        c = psycopg2.connect(host=str(self.socket_dir), port=self.port, user="postgres", dbname=db,
                             connect_timeout=2)
        c.autocommit = True
        return c

    def sql(self, query, db=APP_DB):
        """The first column of the first row of `query`, as the superuser."""
        c = self.conn(db)  # not `with c`: psycopg2 would open a transaction (CREATE DATABASE)
        try:
            with c.cursor() as cur:
                cur.execute(query)
                return cur.fetchone()[0] if cur.description else None
        finally:
            c.close()

    def start(self, timeout=30):
        t0 = time.monotonic()
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        shutil.chown(self.workdir, "postgres")
        shutil.chown(self.socket_dir, "postgres")
        run_as("postgres", [str(PG_BIN / "initdb"), "-D", str(self.data_dir), "--no-sync", "-A",
                            "trust", "-U", "postgres", "-E", "UTF8", "--locale", "C.UTF-8"], 60)
        self.daemon = start_daemon(
            "standalone-pg",
            [str(PG_BIN / "postgres"), "-D", str(self.data_dir), "-p", str(self.port), "-c",
             "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.socket_dir}",
             "-c", "fsync=off"],
            self.workdir / "postgres.log", user="postgres")
        try:
            wait_until(self._answers, timeout, "the standalone PostgreSQL answering",
                       daemons=[self.daemon])
            self.sql(f"CREATE ROLE {HC_USER} LOGIN", db="postgres")
            self.sql(f"CREATE DATABASE {APP_DB}", db="postgres")
        except BaseException:
            self.stop()
            raise
        self.up_seconds = time.monotonic() - t0
        return self

    def _answers(self):
        try:
            self.sql("SELECT 1", db="postgres")
            return True
        except psycopg2.Error:
            return False

    def stop(self):
        """SIGINT (fast shutdown) to the postmaster this object started, by its PID."""
        if self.daemon is not None:
            self.daemon.stop(sig=signal.SIGINT)
            self.daemon = None
