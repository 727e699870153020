"""The campaign's fault proxy, against a local echo server (no cluster)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from .proxy import FaultProxy


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # the proxy resets connections on purpose
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def roundtrip(port: int, payload: bytes = b"ping") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(payload)
        return s.recv(4096)


def test_forwards_and_adds_latency(echo_port: int) -> None:
    with FaultProxy(echo_port, lifetime=30) as proxy:
        assert roundtrip(proxy.port) == b"ping"
        proxy.latency = 0.3
        started = time.monotonic()
        assert roundtrip(proxy.port) == b"ping"
        assert time.monotonic() - started >= 0.6  # both directions


def test_reset_cuts_open_connections_and_refuse_rejects_new_ones(echo_port: int) -> None:
    with FaultProxy(echo_port, lifetime=30) as proxy:
        conn = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        conn.sendall(b"a")
        assert conn.recv(10) == b"a"
        assert proxy.reset_all() == 1
        with pytest.raises(ConnectionResetError):
            conn.sendall(b"b")
            conn.recv(10)
        conn.close()
        proxy.refuse_for(1.0)
        with pytest.raises((ConnectionResetError, ConnectionAbortedError)):
            roundtrip(proxy.port)
        time.sleep(1.1)
        assert roundtrip(proxy.port) == b"ping"


def test_cut_older_than_spares_young_connections(echo_port: int) -> None:
    with FaultProxy(echo_port, lifetime=30) as proxy:
        old = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        old.sendall(b"x")
        assert old.recv(10) == b"x"
        time.sleep(0.5)
        young = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        young.sendall(b"y")
        assert young.recv(10) == b"y"
        assert proxy.cut_older_than(0.4) == 1
        young.sendall(b"z")
        assert young.recv(10) == b"z"
        old.close()
        young.close()


def test_stops_by_itself_when_its_lifetime_ends(echo_port: int) -> None:
    proxy = FaultProxy(echo_port, lifetime=0.5)
    with proxy:
        assert roundtrip(proxy.port) == b"ping"
        time.sleep(0.8)
        with pytest.raises(OSError):
            roundtrip(proxy.port)
