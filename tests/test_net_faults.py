"""Every way a connection can die, at every point of a request, leaves krmfn.net as one of its own errors.

The class: a socket or TLS call whose ``OSError`` escapes the stack unnamed reaches the runner as an
internal error (exit 70) instead of a retried ``Unreachable`` (CI saw ``ConnectionResetError`` from
``ssl.wrap_socket``, which reads from the socket, when a proxy reset a connection just after accepting it).
Generated here: plain and TLS x the point the server gives up at (just after accepting, after the first
bytes of the request or the TLS hello, after the handshake, inside the headers, inside a sized body, inside a
chunked body, inside a stream of lines) x how (a reset, an orderly close).
"""

from __future__ import annotations

import select
import socket
import ssl
import struct
import subprocess
import threading
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from krmfn.net import wire
from krmfn.net.budget import Timer
from krmfn.net.ceilings import OBJECT, WATCH
from krmfn.net.errors import NetError, Unreachable
from krmfn.net.wire import Pool, Request

POINTS = ("accepted", "first-bytes", "handshaken", "in-head", "in-body", "in-chunks", "in-stream")
HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n"
BODY = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 40
CHUNKS = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n" + b"y" * 8
STREAM = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\none\ntw\r\n"


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    workdir = tmp_path_factory.mktemp("tls")
    key, cert = workdir / "key.pem", workdir / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=krmfn-faults", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(Path(cert)))


def give_up(conn: socket.socket, how: str) -> None:
    if how == "reset":  # SO_LINGER 0: close() sends RST instead of FIN
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    else:
        with suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
    conn.close()


def read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk


def serve(point: str, how: str, tls: ssl.SSLContext | None) -> tuple[socket.socket, threading.Event]:
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def run() -> None:
        raw, _ = listener.accept()
        with suppress(OSError):
            if point == "accepted":
                give_up(raw, how)
                return
            if point == "first-bytes":
                raw.recv(1)
                give_up(raw, how)
                return
            conn = tls.wrap_socket(raw, server_side=True) if tls is not None else raw
            if point == "handshaken":
                give_up(raw if tls is None else conn, how)
                return
            read_request(conn)
            conn.sendall({"in-head": HEAD, "in-body": BODY, "in-chunks": CHUNKS, "in-stream": STREAM}[point])
            give_up(conn, how)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return listener, done


def peer_gone_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes the race deterministic: the client goes on from connecting only once the server's reset or
    close has arrived (the socket polls readable), so the next call meets a dead peer."""
    dial = wire.dial  # type: ignore[attr-defined]

    def dial_then_wait(found: object, timer: Timer) -> socket.socket:
        sock = dial(found, timer)  # type: ignore[arg-type]
        select.select([sock], [], [], 30)
        return sock

    monkeypatch.setattr(wire, "dial", dial_then_wait)


def outcomes(pool: Pool, point: str) -> Iterator[BaseException | None]:
    try:
        answer = pool.open(Request("GET", "/x"), Timer(WATCH if point == "in-stream" else OBJECT))
        if point == "in-stream":
            for _ in answer.lines(WATCH.max_line, WATCH.max_bytes):
                pass
        else:
            answer.read_all(OBJECT.max_bytes)
    except BaseException as err:  # what escapes is what is judged
        yield err
    else:
        yield None


@pytest.mark.parametrize("how", ["reset", "close"])
@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_dying_connection_is_always_a_named_net_error(
    scheme: str, point: str, how: str, contexts: tuple[ssl.SSLContext, ssl.SSLContext],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    server_tls, client_tls = contexts
    listener, _ = serve(point, how, server_tls if scheme == "https" else None)
    if point == "accepted":
        peer_gone_first(monkeypatch)
    pool = Pool("127.0.0.1", listener.getsockname()[1], tls=client_tls if scheme == "https" else None)
    try:
        (err,) = list(outcomes(pool, point))
    finally:
        pool.close()
        listener.close()
    assert err is not None, "a request whose server gave up mid-way cannot succeed"
    assert isinstance(err, NetError), f"{type(err).__name__}: {err} escaped krmfn.net unnamed"
    assert "\n" not in str(err)
    if point in ("accepted", "first-bytes"):
        assert isinstance(err, Unreachable), err


def test_the_wrap_socket_race_is_the_case_ci_met(
    contexts: tuple[ssl.SSLContext, ssl.SSLContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact failure of the fault test (a reset, then the handshake): ``Unreachable``, which kube.py
    retries, with the same one line as a reset anywhere else."""
    listener, _ = serve("accepted", "reset", None)
    peer_gone_first(monkeypatch)
    pool = Pool("127.0.0.1", listener.getsockname()[1], tls=contexts[1])
    try:
        with pytest.raises(Unreachable, match=r"^the connection was reset$"):
            pool.open(Request("GET", "/x"), Timer(OBJECT))
    finally:
        pool.close()
        listener.close()


def test_every_socket_call_of_the_stack_is_inside_the_boundary() -> None:
    """Static: krmfn.net calls sockets only in sockets.py, and every such call there sits in a ``try``
    that maps ``OSError``; wire.open maps whatever else reaches it."""
    import ast

    source = Path(wire.__file__).with_name("sockets.py").read_text()
    tree = ast.parse(source)
    calls = {"recv", "send", "connect_ex", "getsockopt", "setsockopt", "wrap_socket", "do_handshake"}
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id == "OSError" for h in node.handlers
        ):
            for inner in node.body:
                guarded.update(id(n) for n in ast.walk(inner))
    loose = [
        f"line {n.lineno}: .{n.func.attr}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in calls
        and id(n) not in guarded
    ]  # fmt: skip
    assert not loose, f"socket calls outside an OSError boundary: {loose}"
    for other in Path(wire.__file__).parent.glob("*.py"):
        if other.name in ("sockets.py", "addresses.py"):
            continue
        names = {n.func.attr for n in ast.walk(ast.parse(other.read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}  # fmt: skip
        assert not names & (calls - {"send"}), f"{other.name} calls the socket API directly"
