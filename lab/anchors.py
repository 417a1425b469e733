"""The anchors: what the checks users would run instead of dbcheck answer for one node, asked
in Python with the very requests and pass rules of their HAProxy configurations, so a fault-matrix
row can show them beside dbcheck's verdict without an HAProxy per row.

(a) PostgreSQL, Patroni's own check on the member's REST port (`check port <rest_port>`):
    writer  `option httpchk GET /primary` + `http-check expect status 200`
            (bench/failover/variants.py, pg_patroni_httpchk);
    reader  `option httpchk GET /replica` + `http-check expect status 200`
            (bench/perf/cluster_bill.py, pg_patroni_cfg). No `?lag=`: Patroni bounds a
            replica's lag in bytes of WAL behind the leader's last known position, dbcheck's
            `max_lag` is seconds, and no byte count means the same under write silence.
(b) Redis, the seed tcp-check (bench/failover/variants.py, redis_seed_002 and _auth_line):
    writer  tcp-check connect addr <first Sentinel>
            send "AUTH <user> <password>\\r\\n"            expect string +OK
            send "SENTINEL get-master-addr-by-name <name>\\r\\n"
                                                          expect string-lf "\\r\\n%[srv_name]\\r\\n"
            connect (the server)
            send "AUTH <user> <password>\\r\\n"            expect string +OK
            send "ROLE\\r\\n"                               expect string master
            (the lab names each server by its port, so %[srv_name] is the node's port);
    reader  connect, AUTH as above, send "ROLE\\r\\n", expect string slave
            (bench/perf/cluster_bill.py, redis_seed_cfg).

How HAProxy runs them, and so how this does: `expect string` passes when the text occurs
anywhere in what the server sent since the rule's `send` (HAProxy empties its input buffer on
each send); without it HAProxy waits for more, and fails when the connection closes or the check
times out. The timeouts are those configs' `timeout connect 1s` (each connect) and
`timeout check 1s` (everything after the first connect). httpchk sends HTTP/1.0 and reads the
status line; only 200 passes; a reply that is not HTTP fails.

The evaluation differs from a real HAProxy in where it runs (this process, not HAProxy's
scheduler) and in that it is one check, not a fall/rise series: it says what the anchor's
check answered at that moment, not when HAProxy would have marked the server down.
"""

import re
import socket
import time
from dataclasses import dataclass

CONNECT_TIMEOUT_S = 1.0  # the anchors' `timeout connect 1s`
CHECK_TIMEOUT_S = 1.0    # the anchors' `timeout check 1s`
_STATUS_LINE = re.compile(rb"^HTTP/1\.[01] (\d{3})(?: |\r?$)")


@dataclass(frozen=True)
class Answer:
    """One anchor's check of one node: its name (the path asked; "" for a tcp-check, whose
    steps say which it is), whether it passed (HAProxy: UP), what it
    said (an HTTP status, the step that failed and how) and how long it took."""

    check: str
    up: bool
    said: str
    seconds: float

    def cell(self):
        """The table cell: what it answered and what HAProxy makes of it."""
        prefix = f"{self.check} " if self.check else ""
        return f"{prefix}{self.said} ({'UP' if self.up else 'DOWN'})"


def parse_http_status(head):
    """The status code of an HTTP/1.x status line at the start of `head` (bytes), or None when
    `head` does not start with one (HAProxy's httpchk: an invalid response, a failure)."""
    m = _STATUS_LINE.match(head.split(b"\n", 1)[0])
    return int(m.group(1)) if m else None


def split_addr(addr):
    """(host, port) of 'host:port'."""
    host, _, port = addr.rpartition(":")
    return host, int(port)


class _Failed(Exception):
    """A step of a check failed: its message is what the cell says."""


class _Conn:
    """One check connection: connect within CONNECT_TIMEOUT_S (capped by `deadline`), then
    every read and write before `deadline` (monotonic seconds)."""

    def __init__(self, addr, deadline=None):
        host, port = split_addr(addr)
        limit = CONNECT_TIMEOUT_S if deadline is None else min(CONNECT_TIMEOUT_S, deadline - time.monotonic())
        try:
            self.sock = socket.create_connection((host, port), timeout=max(limit, 0.001))
        except socket.timeout:
            raise _Failed("no answer: connect timeout") from None
        except ConnectionRefusedError:
            raise _Failed("no answer: connection refused") from None
        except OSError as e:
            raise _Failed(f"no answer: {e.strerror or e}") from None
        # `timeout check` starts once connected.
        self.deadline = deadline if deadline is not None else time.monotonic() + CHECK_TIMEOUT_S

    def send(self, data):
        self._timeout()
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise _Failed(f"send failed: {e.strerror or e}") from None

    def recv(self):
        """The next bytes (b"" once the peer closed); _Failed on timeout."""
        self._timeout()
        try:
            return self.sock.recv(4096)
        except socket.timeout:
            raise _Failed("no answer: timeout") from None
        except OSError as e:
            raise _Failed(f"read failed: {e.strerror or e}") from None

    def _timeout(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _Failed("no answer: timeout")
        self.sock.settimeout(left)

    def close(self):
        self.sock.close()


def _timed(check, run):
    """Answer of `run()` -> (up, said), timed; a _Failed step is a DOWN with its message."""
    t0 = time.monotonic()
    try:
        up, said = run()
    except _Failed as e:
        up, said = False, str(e)
    return Answer(check, up, said, time.monotonic() - t0)


# ------------------------------------------------------------------ (a) Patroni httpchk
def patroni(rest_addr, path):
    """(a) `option httpchk GET <path>` + `http-check expect status 200` against the REST API at
    `rest_addr` ('host:port'): the Answer says the status, or why there was none."""
    def run():
        conn = _Conn(rest_addr)
        try:
            conn.send(f"GET {path} HTTP/1.0\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv()
                if not data:
                    break
                head += data
        finally:
            conn.close()
        if not head:
            return False, "no answer: closed"  # a timeout raised _Failed in recv()
        status = parse_http_status(head)
        if status is None:
            return False, "not HTTP"
        return status == 200, str(status)
    return _timed(path, run)


# ------------------------------------------------------------------ (b) Sentinel + ROLE tcp-check
@dataclass(frozen=True)
class Step:
    """One tcp-check rule: `connect` (to `addr`, None: the server), `send` `data`, or `expect`
    `data` (a substring); `what` names the step in the answer."""

    op: str
    data: bytes = b""
    addr: str = None
    what: str = ""


def expect_met(received, pattern):
    """`tcp-check expect string <pattern>`: the pattern occurs in what was received since the
    last send."""
    return pattern in received


def run_tcp_check(steps, server_addr):
    """The tcp-check `steps` against the server at `server_addr`: (up, said)."""
    conn, deadline, passed = None, None, []
    received = b""
    try:
        for step in steps:
            if step.op == "connect":
                if conn:
                    conn.close()
                conn = _Conn(step.addr or server_addr, deadline)
                deadline = conn.deadline  # `timeout check` runs from the first connect
                received = b""
            elif step.op == "send":
                conn.send(step.data)
                received = b""  # HAProxy resets its input buffer on each send
            else:
                while not expect_met(received, step.data):
                    try:
                        data = conn.recv()
                    except _Failed as e:
                        raise _Failed(f"{step.what}: {str(e).removeprefix('no answer: ')}"
                                      + _got(received)) from None
                    if not data:
                        raise _Failed(f"{step.what}: connection closed" + _got(received))
                    received += data
                if "AUTH" not in step.what:
                    passed.append(step.what)
    finally:
        if conn:
            conn.close()
    return True, ", ".join(passed)


def resp_words(received):
    """The values of the RESP reply `received`, space-separated, without the framing lines
    (array and bulk headers) and type marks: what a reply that failed an expect said."""
    words = [ln[1:] if ln[:1] in (b"+", b"-", b":") else ln
             for ln in received.split(b"\r\n") if ln and ln[:1] not in (b"*", b"$")]
    return b" ".join(words).decode(errors="replace")


def _got(received):
    """', got <the reply>' of a reply that did not match (a Redis error line says why)."""
    words = resp_words(received)
    return f", got {words[:60]!r}" if words else ""


def _resp(*words):
    return (" ".join(words) + "\r\n").encode()


def _auth(user, password, where):
    return [Step("send", _resp("AUTH", user, password)), Step("expect", b"+OK", what=f"{where} AUTH")]


def redis_writer_steps(sentinel_addr, master_name, node_port, user, password):
    """(b) the writer's tcp-check (module docstring), for the server named by its port: one
    Step per line of the config, in its order."""
    return [Step("connect", addr=sentinel_addr), *_auth(user, password, "Sentinel"),
            Step("send", _resp("SENTINEL", "get-master-addr-by-name", master_name)),
            Step("expect", f"\r\n{node_port}\r\n".encode(), what="Sentinel names it"),
            Step("connect"), *_auth(user, password, "node"),
            Step("send", _resp("ROLE")), Step("expect", b"master", what="ROLE master")]


def redis_reader_steps(user, password):
    """(b) the reader's tcp-check: AUTH, ROLE, expect slave."""
    return [Step("connect"), *_auth(user, password, "node"),
            Step("send", _resp("ROLE")), Step("expect", b"slave", what="ROLE slave")]


def redis_writer(node_addr, sentinel_addr, master_name, user, password):
    """(b) for a writer at `node_addr`: the Answer of the Sentinel + ROLE tcp-check."""
    steps = redis_writer_steps(sentinel_addr, master_name, split_addr(node_addr)[1], user, password)
    return _timed("", lambda: run_tcp_check(steps, node_addr))


def redis_reader(node_addr, user, password):
    """(b) for a reader at `node_addr`: the Answer of the AUTH + ROLE slave tcp-check."""
    return _timed("", lambda: run_tcp_check(redis_reader_steps(user, password), node_addr))
