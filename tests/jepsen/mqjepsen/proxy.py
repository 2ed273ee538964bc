"""A fault TCP proxy on loopback: forwards every connection to an upstream port and, on
command, cuts every connection (both ends closed at once) or pauses them (nothing is read
or forwarded in either direction, new connections wait) until resumed."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from typing import Dict, List, Optional, Tuple


class FaultProxy:
    def __init__(self, upstream_port: int, host: str = "127.0.0.1") -> None:
        self._upstream = (host, upstream_port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, 0))
        self._listener.listen(64)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._peers: Dict[socket.socket, socket.socket] = {}
        self._paused = False
        self._cut_requested = False
        self._stop = False
        self.cuts = 0
        self.pauses = 0
        # (start, end) of every pause, time.monotonic(); end None while it lasts.
        self._pause_times: List[Tuple[float, Optional[float]]] = []
        self._cut_times: List[float] = []  # when each cut had closed every connection
        self._sel = selectors.DefaultSelector()
        self._registered: Dict[socket.socket, bool] = {}
        self._thread = threading.Thread(target=self._loop, name="fault-proxy", daemon=True)
        self._thread.start()

    # ---- control ------------------------------------------------------------------------

    def cut(self) -> None:
        """Closes every open connection (clients see their connection lost)."""
        with self._lock:
            self._cut_requested = True
            self.cuts += 1

    def pause(self) -> None:
        """Stops forwarding: bytes wait in the kernel's buffers, new connections wait."""
        with self._lock:
            self._paused = True
            self.pauses += 1
            self._pause_times.append((time.monotonic(), None))

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            if self._pause_times and self._pause_times[-1][1] is None:
                self._pause_times[-1] = (self._pause_times[-1][0], time.monotonic())

    def pause_intervals(self) -> List[Tuple[float, float]]:
        """(start, end) of every pause so far (``time.monotonic()``); one still on ends now."""
        with self._lock:
            now = time.monotonic()
            return [(start, now if end is None else end) for start, end in self._pause_times]

    def cut_times(self) -> List[float]:
        """When each cut so far had closed every connection (``time.monotonic()``)."""
        with self._lock:
            return list(self._cut_times)

    def close(self) -> None:
        self._stop = True
        self._thread.join(5)
        self._listener.close()

    # ---- the loop -----------------------------------------------------------------------

    def _close_pair(self, s: socket.socket) -> None:
        peer = self._peers.pop(s, None)
        if peer is not None:
            self._peers.pop(peer, None)
        for x in (s, peer):
            if x is not None:
                if x in self._registered:
                    del self._registered[x]
                    try:
                        self._sel.unregister(x)
                    except (KeyError, ValueError):
                        pass
                try:
                    x.close()
                except OSError:
                    pass

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except OSError:
            return
        try:
            upstream = socket.create_connection(self._upstream, timeout=2)
        except OSError:
            client.close()  # upstream down (a store restarting): the client retries
            return
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(5)
        self._peers[client] = upstream
        self._peers[upstream] = client

    def _loop(self) -> None:
        sel = self._sel
        registered = self._registered
        while not self._stop:
            with self._lock:
                paused, cut = self._paused, self._cut_requested
                self._cut_requested = False
            if cut:
                for s in list(self._peers):
                    self._close_pair(s)
                with self._lock:
                    self._cut_times.append(time.monotonic())
            wanted: Dict[socket.socket, bool] = {}
            if not paused:
                wanted[self._listener] = True
                for s in self._peers:
                    wanted[s] = True
            for s in list(registered):
                if s not in wanted:
                    try:
                        sel.unregister(s)
                    except (KeyError, ValueError):
                        pass
                    del registered[s]
            for s in wanted:
                if s not in registered:
                    sel.register(s, selectors.EVENT_READ)
                    registered[s] = True
            events = sel.select(timeout=0.02) if registered else []
            if not registered:
                threading.Event().wait(0.02)
            for key, _ in events:
                obj = key.fileobj
                assert isinstance(obj, socket.socket)
                s = obj
                if s is self._listener:
                    self._accept()
                    continue
                peer: Optional[socket.socket] = self._peers.get(s)
                if peer is None:
                    continue
                try:
                    data = s.recv(65536)
                    if not data:
                        raise OSError("closed")
                    peer.sendall(data)
                except OSError:
                    self._close_pair(s)
        for s in list(self._peers):
            self._close_pair(s)
        sel.close()

