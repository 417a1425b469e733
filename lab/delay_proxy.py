"""A TCP proxy in front of a real server that holds each answer for `delay` seconds: a node
that is alive and correct but slow, the way an I/O-stalled or overloaded one is. The server
is real; only the time its answers take is injected."""

import socket
import threading
import time

from .fake_server import FakeServer


class DelayProxy(FakeServer):
    """Listens on a free 127.0.0.1 port (`addr`) and forwards each connection to `target`
    ("host:port"); each chunk the server sends back is held `delay` seconds before it is passed
    on (0: at once), which delays every answer of a request/answer protocol by `delay`.
    `delay` may be changed at any time; it applies to data arriving after the change."""

    def __init__(self, target, delay=0.0):
        super().__init__()
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.delay = delay
        self.addr = f"127.0.0.1:{self.port}"

    def _serve(self, conn):
        try:
            upstream = socket.create_connection(self.target, timeout=2)
        except OSError:
            conn.close()
            return
        self._conns.append(upstream)
        threading.Thread(target=self._pipe, args=(conn, upstream, False), daemon=True).start()
        self._pipe(upstream, conn, True)

    def _pipe(self, src, dst, delayed):
        """Copy src to dst until either end closes; hold each chunk for `delay` when `delayed`."""
        src.settimeout(None)
        try:
            while not self._stop.is_set():
                chunk = src.recv(65536)
                if not chunk:
                    break
                if delayed and self.delay > 0:
                    time.sleep(self.delay)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
