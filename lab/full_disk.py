"""A PostgreSQL writer whose disk fills up on demand: a standalone PostgreSQL whose data
directory is on a small tmpfs of its own (pg_wal linked to another filesystem, so a full data
disk fails table writes with 53100 while WAL still has room, as the agent's two measurements and
the write probe must tell apart), named leader by a FakePatroni, filled with fallocate. The
tmpfs is a real mount: stop() unmounts it and removes the filler whatever start() or the caller
did, and start() calls it itself when it fails half-way."""

import os
import pwd
import subprocess
from pathlib import Path

from .fake_patroni import FakePatroni, cluster_doc, status_doc
from .patroni import APP_DB, HC_PASSWORD, HC_USER, PG_BIN, PSQL, ROLE_SQL
from .ports import free_ports

TMPFS_SIZE = "64m"  # room for initdb and the application database, little beyond


def _postgres_ids():
    pw = pwd.getpwnam("postgres")
    return pw.pw_uid, pw.pw_gid


def _as_postgres(*argv, **kw):
    return subprocess.run(["runuser", "-u", "postgres", "--", *map(str, argv)], check=True,
                          capture_output=True, text=True, timeout=60, **kw)


class FullDiskPostgres:
    """A primary on 127.0.0.1:<a free port> whose data directory `data_dir` is on the tmpfs
    mounted at `disk` (size `size`), its WAL under `wal_dir` (the workdir's filesystem), its
    socket in `socket_dir`; the check user and the application database as the labs' configs
    name them (the setup SQL applied, so the write probe's table exists). `fake` is a
    FakePatroni naming it leader (GET /cluster; GET /primary answers 200, as a real Patroni's
    does: it does not look at the disk). start() / fill(leave_bytes) / unfill() / stop()."""

    def __init__(self, workdir, size=TMPFS_SIZE):
        self.workdir = Path(workdir)
        self.size = size
        self.disk = self.workdir / "disk"
        self.wal_dir = self.workdir / "wal"
        self.socket_dir = self.workdir / "sock"
        self.data_dir = self.disk / "main"
        self.filler = self.disk / "filler"
        self.port = None
        self.fake = None

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        """Mount the tmpfs, initdb onto it, start PostgreSQL (pg_ctl -w), apply the setup SQL
        and start the fake Patroni. On any failure everything done so far is undone (stop())
        before the error propagates. Returns self."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        for d in (self.disk, self.wal_dir, self.socket_dir):
            d.mkdir()
        for d in (self.wal_dir, self.socket_dir):
            os.chown(d, *_postgres_ids())
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size},mode=0755", "tmpfs", str(self.disk)],
                       check=True, timeout=10)
        self.data_dir.mkdir(mode=0o700)
        os.chown(self.data_dir, *_postgres_ids())
        _as_postgres(PG_BIN / "initdb", "-D", self.data_dir, "-X", self.wal_dir / "pg_wal", "-U", "postgres",
                     "-A", "trust", "--no-sync")
        (self.port,) = free_ports(1)
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write(f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{self.socket_dir}'\nfsync = off\nautovacuum = off\n")
        log = self.workdir / "postgres.log"
        log.touch()
        os.chown(log, *_postgres_ids())
        _as_postgres(PG_BIN / "pg_ctl", "-D", self.data_dir, "-l", log, "-w", "start")
        self.sql("-c", f"CREATE DATABASE {APP_DB}", db="postgres")
        role_sql = self.workdir / "healthcheck-role.sql"  # readable by postgres, unlike the repository
        role_sql.write_text(ROLE_SQL.read_text())
        role_sql.chmod(0o644)
        self.sql("-v", f"role={HC_USER}", "-v", f"dbname={APP_DB}", "-f", role_sql, db="postgres")
        self.sql("-c", f"ALTER ROLE {HC_USER} PASSWORD '{HC_PASSWORD}'", db="postgres")
        self.fake = FakePatroni().__enter__()
        self.fake.routes = {"/cluster": (200, cluster_doc("pg1", self.addr, self.fake.url)),
                            "/primary": (200, status_doc("master"))}

    def sql(self, *args, db=APP_DB):
        """psql as the superuser over the socket with `args` (e.g. "-c", query); its stdout
        (tuples only, unaligned), stripped."""
        return _as_postgres(PSQL, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.socket_dir,
                            "-p", self.port, "-d", db, *args).stdout.strip()

    def free_bytes(self):
        """Bytes of the tmpfs an unprivileged writer may still use."""
        st = os.statvfs(self.disk)
        return st.f_bavail * st.f_frsize

    def fill(self, leave_bytes):
        """Fill the tmpfs until `leave_bytes` are free (0: full), replacing an earlier fill."""
        self.unfill()
        subprocess.run(["fallocate", "-l", str(self.free_bytes() - leave_bytes), str(self.filler)],
                       check=True, timeout=10)

    def unfill(self):
        """Remove the filler (none is fine)."""
        self.filler.unlink(missing_ok=True)

    def stop(self):
        """Remove the filler, stop PostgreSQL (immediate), stop the fake Patroni, unmount the
        tmpfs (lazily when busy): each step whatever the one before did, and safe to call twice.
        Raises when the tmpfs is still mounted after all that."""
        steps = [self.unfill, self._stop_postgres, self._stop_fake]
        errors = []
        for step in steps:
            try:
                step()
            except Exception as e:  # noqa: BLE001 - the next steps (the unmount above all) must run
                errors.append(e)
        if os.path.ismount(self.disk):
            if subprocess.run(["umount", str(self.disk)], capture_output=True, timeout=10).returncode != 0:
                subprocess.run(["umount", "-l", str(self.disk)], capture_output=True, timeout=10)
        if os.path.ismount(self.disk):
            raise RuntimeError(f"the tmpfs at {self.disk} is still mounted (errors before: {errors!r})")
        if errors:
            raise errors[0]

    def _stop_postgres(self):
        # pg_ctl finds the postmaster by its postmaster.pid: this lab's own, and only while it runs.
        if (self.data_dir / "postmaster.pid").exists():
            subprocess.run(["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D",
                            str(self.data_dir), "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=60)

    def _stop_fake(self):
        if self.fake is not None:
            self.fake.stop()
            self.fake = None
