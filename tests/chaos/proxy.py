"""A loopback TCP proxy in front of the API server that injects network faults on demand.

    with FaultProxy(upstream_port, lifetime=600) as proxy:   # listens on 127.0.0.1:proxy.port
        proxy.latency = 0.2          # seconds added to every chunk forwarded, both ways
        proxy.reset_all()            # RST every open connection (a crashed load balancer)
        proxy.drop_all()             # FIN every open connection (an idle timeout)
        proxy.cut_older_than(1.0)    # close long-lived connections: in practice the watches
        proxy.refuse_for(2.0)        # new connections are reset at once for 2 s
        proxy.stall_for(2.0)         # nothing is forwarded for 2 s (a black hole), then traffic resumes

It forwards bytes only (TLS passes through untouched, so the client still verifies the API server's
certificate, whose SAN has 127.0.0.1). It binds 127.0.0.1 only, forwards to 127.0.0.1 only, and stops by
itself after ``lifetime`` seconds: a crashed campaign cannot leave it serving.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

LOOPBACK = "127.0.0.1"
CHUNK = 65536
TICK = 0.1  # how often blocked loops look at the stop flag and the deadlines


@dataclass(eq=False)  # identity: a set of open connections
class _Pair:
    client: socket.socket
    upstream: socket.socket
    opened: float = field(default_factory=time.monotonic)

    def close(self, reset: bool) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                if reset:  # SO_LINGER 0: close() sends RST instead of FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:
                    sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


class FaultProxy:
    """See the module docstring. Counters: ``connections`` accepted, ``closed_by_fault``."""

    def __init__(self, upstream_port: int, lifetime: float) -> None:
        self.upstream = (LOOPBACK, upstream_port)
        self.deadline = time.monotonic() + lifetime
        self.latency = 0.0
        self._refuse_until = 0.0
        self._stall_until = 0.0
        self._pairs: set[_Pair] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.connections = 0
        self.closed_by_fault = 0
        self._listener = socket.create_server((LOOPBACK, 0))
        self._listener.settimeout(TICK)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, name="chaos-proxy", daemon=True)

    # --- lifecycle ----------------------------------------------------------------------------------------

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self._close(lambda pair: True, reset=False, count=False)
        with contextlib.suppress(OSError):
            self._listener.close()

    def _stopped(self) -> bool:
        return self._stop.is_set() or time.monotonic() > self.deadline

    # --- faults -------------------------------------------------------------------------------------------

    def reset_all(self) -> int:
        return self._close(lambda pair: True, reset=True)

    def drop_all(self) -> int:
        return self._close(lambda pair: True, reset=False)

    def cut_older_than(self, age: float) -> int:
        cutoff = time.monotonic() - age
        return self._close(lambda pair: pair.opened < cutoff, reset=True)

    def refuse_for(self, seconds: float) -> None:
        self._refuse_until = time.monotonic() + seconds

    def stall_for(self, seconds: float) -> None:
        self._stall_until = time.monotonic() + seconds

    def clear(self) -> None:
        self.latency = 0.0
        self._refuse_until = self._stall_until = 0.0

    def _close(self, which: object, reset: bool, count: bool = True) -> int:
        with self._lock:
            doomed = [pair for pair in self._pairs if which(pair)]  # type: ignore[operator]
            self._pairs.difference_update(doomed)
        for pair in doomed:
            pair.close(reset)
        if count:
            self.closed_by_fault += len(doomed)
        return len(doomed)

    # --- forwarding ---------------------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopped():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            self.connections += 1
            client.settimeout(None)
            if time.monotonic() < self._refuse_until:
                _Pair(client, socket.socket()).close(reset=True)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _Pair(client, socket.socket()).close(reset=True)  # as the server itself would
                continue
            pair = _Pair(client, upstream)
            with self._lock:
                self._pairs.add(pair)
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(pair, src, dst), daemon=True).start()
        # Stopped, or the lifetime ended: nothing is served any more.
        with contextlib.suppress(OSError):
            self._listener.close()
        self._close(lambda pair: True, reset=True, count=False)

    def _pump(self, pair: _Pair, src: socket.socket, dst: socket.socket) -> None:
        # Blocking sockets polled with select: a socket timeout would also apply to the other pump's
        # sendall on the same socket and cut a slow reader.
        try:
            while not self._stopped():
                if src.fileno() < 0:  # closed by a fault
                    break
                if not select.select([src], [], [], TICK)[0]:
                    continue
                data = src.recv(CHUNK)
                if not data:
                    break
                while time.monotonic() < self._stall_until and not self._stopped():
                    time.sleep(TICK)
                if self.latency:
                    time.sleep(self.latency)
                dst.sendall(data)
        except (OSError, ValueError):  # ValueError: select on a socket a fault closed meanwhile
            pass
        with self._lock:
            owned = pair in self._pairs
            self._pairs.discard(pair)
        if owned:
            pair.close(reset=False)
