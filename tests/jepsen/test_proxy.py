"""The fault proxy: forwards, cuts, pauses."""

from __future__ import annotations

import socket
import threading
import time

from mqjepsen.proxy import FaultProxy


def echo_server() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return

            def pump(c: socket.socket) -> None:
                with c:
                    while True:
                        try:
                            data = c.recv(4096)
                        except OSError:
                            return
                        if not data:
                            return
                        c.sendall(data)

            threading.Thread(target=pump, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_forward_cut_pause() -> None:
    srv, port = echo_server()
    proxy = FaultProxy(port)
    try:
        c = socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
        c.sendall(b"hello")
        assert c.recv(100) == b"hello"

        proxy.pause()
        c.sendall(b"held")
        c.settimeout(0.3)
        try:
            got = c.recv(100)
        except socket.timeout:
            got = b""
        assert got == b""  # nothing forwarded while paused
        proxy.resume()
        c.settimeout(2)
        assert c.recv(100) == b"held"

        proxy.cut()
        c.settimeout(2)
        try:
            assert c.recv(100) == b""  # closed by the proxy
        except ConnectionResetError:
            pass
        assert proxy.cuts == 1 and proxy.pauses == 1

        d = socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
        time.sleep(0.05)
        d.sendall(b"again")
        assert d.recv(100) == b"again"
        d.close()
    finally:
        proxy.close()
        srv.close()
