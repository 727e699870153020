"""A loopback HTTP/1.1 server that plays a hostile API server or registry for the tests of krmfn.net's
limits: it answers the requests a test scripts and, for the ones it marks, trickles (one byte at a time,
forever), floods (100 MB and more, ignoring any ``limitBytes``) or stays silent.

``Script`` entries are ``(method, path prefix) -> Behaviour``; every request is recorded, and ``hit``
(an event per behaviour) says that a marked request arrived, so a test waits on events, never on time.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Answer = tuple[int, dict[str, str], bytes]


def next_head(conn: socket.socket, buf: bytes) -> tuple[bytes, bytes] | None:
    """The next request's head on ``conn`` (``buf``: what was read past the last one) and what follows
    it; None when the client closed the connection."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


@dataclass
class Behaviour:
    kind: str
    """answer | trickle-head | trickle-body | silent | flood | flood-lines | flood-line"""
    answer: Answer | Callable[[str, str, bytes], Answer] | None = None
    total: int = 150 * 1024 * 1024
    """Bytes a flood sends (more than every ceiling)."""
    line: bytes = b""
    """For flood-lines: the line repeated."""
    hit: threading.Event = field(default_factory=threading.Event)


def answer(code: int, body: Any, **headers: str) -> Behaviour:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Behaviour("answer", (code, {"Content-Type": "application/json", **headers}, data))


def status(code: int, reason: str) -> Behaviour:
    return answer(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                         "reason": reason, "message": reason})  # fmt: skip


class HostileServer:
    def __init__(self, script: dict[tuple[str, str], Behaviour], default: Behaviour | None = None) -> None:
        self.script = script
        self.default = default or status(404, "NotFound")
        self.requests: list[tuple[str, str]] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()

    def behaviour(self, method: str, path: str) -> Behaviour:
        for (verb, prefix), found in self.script.items():
            if verb == method and path.startswith(prefix):
                return found
        return self.default

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            try:
                while not self._stop.is_set():
                    request = next_head(conn, buf)
                    if request is None:
                        return
                    head, buf = request
                    lines = head.decode("latin-1").split("\r\n")
                    method, target, _ = lines[0].split(" ", 2)
                    fields = (line.partition(":") for line in lines[1:])
                    headers = {k.lower(): v.strip() for k, _, v in fields}
                    length = int(headers.get("content-length") or 0)
                    while len(buf) < length:
                        buf += conn.recv(65536)
                    body, buf = buf[:length], buf[length:]
                    path = target.partition("?")[0]
                    self.requests.append((method, target))
                    found = self.behaviour(method, path)
                    if not self._respond(conn, found, method, target, body):
                        return
            except OSError:
                return

    def _respond(self, conn: socket.socket, found: Behaviour, method: str, target: str, body: bytes) -> bool:
        """Sends the answer; False when the connection is done."""
        found.hit.set()
        if found.kind == "answer":
            got = found.answer(method, target, body) if callable(found.answer) else found.answer
            assert got is not None
            code, headers, data = got
            head = f"HTTP/1.1 {code} X\r\nContent-Length: {len(data)}\r\n"
            head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            conn.sendall(head.encode("latin-1") + b"\r\n" + data)
            return True
        if found.kind == "silent":
            self._stop.wait()
            return False
        if found.kind in ("trickle-head", "trickle-body"):
            text = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"
            if found.kind == "trickle-body":
                conn.sendall(text)
            for byte in text if found.kind == "trickle-head" else b" " * 1_000_000:
                if self._stop.wait(0.5):
                    return False
                conn.sendall(bytes([byte]) if isinstance(byte, int) else byte)
            return False
        # floods: ignore every limit the request asked for, announce no length
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        if found.kind == "flood-lines":
            chunk = found.line * max(1, (1 << 20) // len(found.line))
        elif found.kind == "flood-line":
            conn.sendall(b'{"type": "ADDED", "object": {"data": "')
            chunk = b"x" * (1 << 20)
        else:
            chunk = b'{"items": [' + b'{"a": 1}, ' * ((1 << 20) // 10)
        sent = 0
        while sent < found.total and not self._stop.is_set():
            conn.sendall(chunk)
            sent += len(chunk)
        return False


@contextmanager
def hostile_server(
    script: dict[tuple[str, str], Behaviour], default: Behaviour | None = None
) -> Iterator[HostileServer]:
    server = HostileServer(script, default)
    try:
        yield server
    finally:
        server.close()


def kubeconfig(path: Path, port: int, server: str = "") -> Path:
    """A kubeconfig for ``http://127.0.0.1:port`` (or ``server``) with a token, namespace ``apps``."""
    url = server or f"http://127.0.0.1:{port}"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
        f"clusters: [{{name: c, cluster: {{server: '{url}'}}}}]\n"
        "contexts: [{name: ctx, context: {cluster: c, user: u, namespace: apps}}]\n"
        "users: [{name: u, user: {token: t0k3n}}]\n"
    )
    return path


CORE_DISCOVERY = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {"name": "configmaps", "namespaced": True, "kind": "ConfigMap"},
        {"name": "secrets", "namespaced": True, "kind": "Secret"},
        {"name": "pods", "namespaced": True, "kind": "Pod"},
    ],
}


def created(method: str, target: str, body: bytes) -> Answer:
    """A create answered as the API server does: the object with a uid and a resourceVersion."""
    obj = json.loads(body)
    obj["metadata"].update({"uid": "u-1", "resourceVersion": "1"})
    return 201, {"Content-Type": "application/json"}, json.dumps(obj).encode()


def wait_for(event: threading.Event, what: str, timeout: float = 60.0) -> None:
    """Waits for ``event`` (an event, with a guard against a test that would hang for ever)."""
    assert event.wait(timeout), f"{what} did not happen within {timeout}s"


def elapsed_since(start: float) -> float:
    return time.monotonic() - start
