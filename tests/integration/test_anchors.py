"""lab/anchors.py answers as a real HAProxy does: the same Sentinel + ROLE tcp-checks and
Patroni httpchk, run by HAProxy and by lab/anchors.py against the same scripted fake servers
(no database), must pass and fail alike. The fault matrix shows the anchors' answers on the
strength of this."""

import threading

from lab import anchors
from lab.fake_server import FakeServer
from lab.haproxy import HAProxy

OK = b"+OK\r\n"
MASTER = b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
SLAVE = b"*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n$9\r\nconnected\r\n:1\r\n"
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
HUNG = None  # read the request, then answer nothing


class Scripted(FakeServer):
    """Answers each request on a connection with the next reply of `replies` (HUNG: none),
    then holds the connection open (`close`: closes it) until stop()."""

    def __init__(self, *replies, close=False):
        super().__init__()
        self.replies, self.close = replies, close
        self.addr = f"127.0.0.1:{self.port}"

    def _serve(self, conn):
        with conn:
            for reply in self.replies:
                if not conn.recv(4096) or reply is HUNG:
                    break
                conn.sendall(reply)
            if not self.close:
                self._stop.wait(10)


def sentinel_naming(port):
    return Scripted(OK, f"*2\r\n$9\r\n127.0.0.1\r\n${len(str(port))}\r\n{port}\r\n".encode())


AUTH = '    tcp-check send "AUTH u p\\r\\n"\n    tcp-check expect string +OK\n'
DEFAULTS = """global
    log stderr format raw local0
    stats socket {sock} mode 600 level admin

defaults
    log global
    mode tcp
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    timeout check 1s
    default-server inter 1s fall 1 rise 1
"""


def writer_backend(name, sentinel, node):
    """bench/failover/variants.py's seed tcp-check, the server named by its port."""
    return (f"\nbackend {name}\n    option tcp-check\n"
            f"    tcp-check connect addr 127.0.0.1 port {sentinel.port}\n" + AUTH
            + '    tcp-check send "SENTINEL get-master-addr-by-name m\\r\\n"\n'
            '    tcp-check expect string-lf "\\r\\n%[srv_name]\\r\\n"\n    tcp-check connect\n' + AUTH
            + '    tcp-check send "ROLE\\r\\n"\n    tcp-check expect string master\n'
            f"    server {node.port} {node.addr} check\n")


def reader_backend(name, node):
    """bench/perf/cluster_bill.py's reader tcp-check."""
    return (f"\nbackend {name}\n    option tcp-check\n    tcp-check connect\n" + AUTH
            + '    tcp-check send "ROLE\\r\\n"\n    tcp-check expect string slave\n'
            f"    server s {node.addr} check\n")


def patroni_backend(name, rest):
    return (f"\nbackend {name}\n    option httpchk GET /primary\n    http-check expect status 200\n"
            f"    server s 127.0.0.1:1 check port {rest.port}\n")


def test_anchors_answer_as_haproxy(tmp_path):
    master, slave, hung = Scripted(OK, MASTER), Scripted(OK, SLAVE), Scripted(HUNG)
    http = {"h200": Scripted(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{}", close=True),
            "h503": Scripted(b"HTTP/1.0 503 Service Unavailable\r\n\r\n{}", close=True),
            "hhung": Scripted(HUNG), "hhtml": Scripted(b"<html>x</html>", close=True)}
    writers = {"w_ok": (sentinel_naming(master.port), master),
               "w_named_other": (sentinel_naming(9999), master),
               "w_sentinel_wrongpass": (Scripted(WRONGPASS), master),
               "w_sentinel_hung": (Scripted(HUNG), master),
               "w_node_is_slave": (sentinel_naming(slave.port), slave),
               "w_node_hung": (sentinel_naming(hung.port), hung)}
    readers = {"r_slave": slave, "r_master": master}
    servers = {master, slave, hung, *http.values(), *(s for s, _ in writers.values())}
    for s in servers:
        s.__enter__()
    try:
        cfg = DEFAULTS.format(sock=tmp_path / "admin.sock")
        cfg += "".join(writer_backend(n, s, node) for n, (s, node) in writers.items())
        cfg += "".join(reader_backend(n, node) for n, node in readers.items())
        cfg += "".join(patroni_backend(n, rest) for n, rest in http.items())
        asks = {**{n: lambda s=s, node=node: anchors.redis_writer(node.addr, s.addr, "m", "u", "p")
                   for n, (s, node) in writers.items()},
                **{n: lambda node=node: anchors.redis_reader(node.addr, "u", "p")
                   for n, node in readers.items()},
                **{n: lambda rest=rest: anchors.patroni(rest.addr, "/primary") for n, rest in http.items()}}
        with HAProxy(tmp_path, cfg) as h:
            answers = {}
            threads = [threading.Thread(target=lambda n=n, ask=ask: answers.update({n: ask()}))
                       for n, ask in asks.items()]
            for t in threads:
                t.start()
            haproxy_up = {n: bool(h.wait_until_checked(n, timeout=15)) for n in asks}
            for t in threads:
                t.join(5)
        anchors_up = {n: answers[n].up for n in asks}
        assert anchors_up == haproxy_up, {n: answers[n].cell() for n in asks}
        # Every case was one the check could fail: only the three healthy ones pass.
        assert {n for n, up in haproxy_up.items() if up} == {"w_ok", "r_slave", "h200"}
        assert answers["h503"].said == "503"
        assert "WRONGPASS" in answers["w_sentinel_wrongpass"].said
        # A check that waits for its expect ends at `timeout check`, as HAProxy's does.
        assert all(answers[n].seconds < anchors.CHECK_TIMEOUT_S + 0.5 for n in asks)
    finally:
        for s in servers:
            s.stop()
