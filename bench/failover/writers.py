"""Writer clients for the failover proof: each sends numbered writes through one HAProxy write
frontend back to back, and records every acknowledged id and every error with its time.

A write is *acknowledged* only when the server's success reply arrived. A write that failed or
timed out is not: its id may or may not exist at the end and is never counted as lost. Every
operation has a deadline (a frozen server or a stuck proxy must not stall the writer), and
after any failure the connection is dropped and a new one opened, as a pool would.
Each connection asks once which node it reached (HAProxy proxies TCP, so that holds for the
connection's life), so every ack carries the node that gave it. A connection is also replaced
every RECONNECT_EVERY seconds, as a pool with a maximum connection lifetime does: HAProxy's
`balance first` chooses a server only when a connection opens, so a writer that kept one
connection forever would never meet the server HAProxy currently prefers.
"""

import select
import socket
import threading
import time

import psycopg2
import psycopg2.extensions as ext

from fixtures.redis import RedisError, _encode, _Reader

OP_TIMEOUT = 2.0  # seconds per connect or write; well above a healthy write (~1 ms)
RETRY_PAUSE = 0.02  # after a failed connect, so a refused port does not spin a core
RECONNECT_EVERY = 0.5  # seconds: a connection's maximum lifetime


class Writer(threading.Thread):
    """Base: the numbered-write loop. Subclasses give connect() -> node port, write(id),
    close(). acks: [(t, id, node_port)]; errors: [(t, message)]; times are time.monotonic()."""

    def __init__(self, name):
        super().__init__(name=f"writer-{name}", daemon=True)
        self.label = name
        self.acks, self.errors = [], []
        self._halt = threading.Event()
        self._next = 1
        self.node = None

    def stop(self):
        """Ask the loop to end and wait for it (bounded by one operation's deadline)."""
        self._halt.set()
        self.join(OP_TIMEOUT * 3)

    def run(self):
        opened = 0.0
        while not self._halt.is_set():
            try:
                if self.node is not None and time.monotonic() - opened > RECONNECT_EVERY:
                    self._drop()
                if self.node is None:
                    opened = time.monotonic()
                    self.node = self.connect()
                wid = self._next
                self._next += 1
                self.write(wid)
                self.acks.append((time.monotonic(), wid, self.node))
            except Exception as exc:  # noqa: BLE001 - every failure is data here
                self.errors.append((time.monotonic(), _one_line(exc)))
                self._drop()
                time.sleep(RETRY_PAUSE)
        self._drop()

    def _drop(self):
        self.node = None
        try:
            self.close()
        except Exception:  # noqa: BLE001 - closing a broken connection may fail too
            pass


def _one_line(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:160]


class PgWriter(Writer):
    """Autocommit INSERTs of sequential ids into `table` through host:port (psycopg2 in async
    mode, so every step is bounded by OP_TIMEOUT whatever the server does)."""

    def __init__(self, name, port, table, user, password, dbname):
        super().__init__(name)
        self.port, self.table = port, table
        self.dsn = dict(host="127.0.0.1", port=port, user=user, password=password, dbname=dbname,
                        connect_timeout=2, application_name=f"proof-{name}")
        self.conn = None

    def _wait(self, deadline):
        while True:
            state = self.conn.poll()
            if state == ext.POLL_OK:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer within {OP_TIMEOUT}s")
            fd = self.conn.fileno()
            if state == ext.POLL_READ:
                select.select([fd], [], [], left)
            elif state == ext.POLL_WRITE:
                select.select([], [fd], [], left)

    def _execute(self, sql, args=()):
        deadline = time.monotonic() + OP_TIMEOUT
        cur = self.conn.cursor()
        cur.execute(sql, args)
        self._wait(deadline)
        return cur

    def connect(self):
        self.conn = psycopg2.connect(async_=1, **self.dsn)
        self._wait(time.monotonic() + OP_TIMEOUT)
        return self._execute("SELECT inet_server_port()").fetchone()[0]

    def write(self, wid):
        self._execute(f"INSERT INTO {self.table} (id) VALUES (%s)", (wid,))

    def close(self):
        if self.conn is not None:
            conn, self.conn = self.conn, None
            conn.close()


class RedisWriter(Writer):
    """RPUSH of sequential ids onto list `key` through host:port, as `user`."""

    def __init__(self, name, port, key, user, password):
        super().__init__(name)
        self.port, self.key, self.user, self.password = port, key, user, password
        self.sock = None
        self.reader = None

    def _call(self, *args):
        deadline = time.monotonic() + OP_TIMEOUT
        self.sock.settimeout(OP_TIMEOUT)
        self.sock.sendall(_encode(args))
        self.reader.deadline = deadline
        reply = self.reader.reply()
        if isinstance(reply, RedisError):
            raise reply
        return reply

    def connect(self):
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=OP_TIMEOUT)
        self.reader = _Reader(self.sock, time.monotonic() + OP_TIMEOUT)
        self._call("AUTH", self.user, self.password)
        return int(self._call("CONFIG", "GET", "port")[1])

    def write(self, wid):
        reply = self._call("RPUSH", self.key, wid)
        if not isinstance(reply, int):
            raise ConnectionError(f"RPUSH answered {reply!r}")

    def close(self):
        if self.sock is not None:
            sock, self.sock = self.sock, None
            sock.close()
