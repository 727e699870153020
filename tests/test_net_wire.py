"""krmfn.net's HTTP/1.1 client against a loopback server that sends scripted bytes: framing (Content-Length,
chunked with extensions and trailers, until close, 1xx), the ceilings of the headers, malformed answers,
connection reuse, what goes on the wire for hostile targets and headers, and the request's timer (its
total, its budget, its caller's cancel) on a deterministic clock or on events."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import pytest

from krmfn.net.budget import Budget, Timer
from krmfn.net.ceilings import MAX_HEAD, OBJECT, WATCH, Ceiling
from krmfn.net.errors import Malformed, Refused, Stopped, TimedOut, TooLarge, Unreachable
from krmfn.net.wire import Pool, Request, Response


class Raw:
    """A loopback server: each connection gets the next script, a function of what it received."""

    def __init__(self, *scripts: Callable[[socket.socket], None]) -> None:
        self.scripts = list(scripts)
        self.connections = 0
        self.received: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            script = self.scripts[min(self.connections, len(self.scripts) - 1)]
            self.connections += 1
            threading.Thread(target=self._run, args=(conn, script), daemon=True).start()

    def _run(self, conn: socket.socket, script: Callable[[socket.socket], None]) -> None:
        with conn, suppress(OSError):
            script(conn)


def head_of(conn: socket.socket, received: list[bytes] | None = None) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    if received is not None:
        received.append(data)
    return data


def replies(*answers: bytes, keep: bool = True) -> Callable[[socket.socket], None]:
    """Reads a request, sends the next answer, for each answer; then waits for the client to close."""

    def script(conn: socket.socket) -> None:
        for answer in answers:
            head_of(conn)
            conn.sendall(answer)
        if keep:
            conn.recv(1)

    return script


@contextmanager
def serving(*scripts: Callable[[socket.socket], None]) -> Iterator[tuple[Raw, Pool]]:
    server = Raw(*scripts)
    pool = Pool("127.0.0.1", server.port)
    try:
        yield server, pool
    finally:
        pool.close()
        server.listener.close()


def get(pool: Pool, ceiling: Ceiling = OBJECT, budget: Budget | None = None, target: str = "/x") -> Response:
    return pool.open(Request("GET", target), Timer(ceiling, budget))


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"4;name=value\r\nline\r\n5\r\n\none\n\r\nA\r\ntwo\r\nthree\r\n0\r\nX-Trailer: t\r\n\r\n"
)


def test_content_length_chunked_and_until_close_read_the_same_way() -> None:
    close = b"HTTP/1.0 200 OK\r\n\r\nline\none\ntwo\r\nthree"
    for answer in (CHUNKED, close):
        with serving(replies(answer, keep=False)) as (_, pool):
            assert bytes(get(pool).read_all(1024)) == b"line\none\ntwo\r\nthree"
        with serving(replies(answer, keep=False)) as (_, pool):
            assert list(get(pool).lines(100, 1024)) == [b"line", b"one", b"two", b"three"]
    with serving(replies(OK)) as (_, pool):
        response = get(pool)
        assert (response.status, response.reason, response.headers["content-length"]) == (200, "OK", "5")
        assert bytes(response.read_all(5)) == b"hello"


def test_a_connection_is_reused_when_the_answer_was_read_to_its_end() -> None:
    closing = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    with serving(replies(OK, CHUNKED, closing, OK)) as (server, pool):
        for _ in range(3):
            get(pool).read_all(1024)
        assert server.connections == 1
        get(pool).read_all(1024)  # after Connection: close, a new one
        assert server.connections == 2
    with serving(replies(OK, OK)) as (server, pool):
        get(pool).close()  # not read: the connection is not reused
        get(pool).read_all(1024)
        assert server.connections == 2


def test_informational_answers_are_skipped() -> None:
    with serving(replies(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n" + OK)) as (_, pool):
        assert bytes(get(pool).read_all(5)) == b"hello"


@pytest.mark.parametrize(
    ("answer", "error", "message"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", Malformed, "not HTTP/1.1"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", Malformed, "not HTTP/1.1"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", Malformed, "not 'name: value'"),
        (b"HTTP/1.1 200 OK\r\n folded: line\r\n\r\n", Malformed, "not 'name: value'"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello", Malformed, "not one number"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello", Malformed, "not one number"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", Malformed, "not one number"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", Malformed, "hexadecimal"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n", Malformed, "CRLF"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 5000, Malformed, "too long"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * MAX_HEAD + b"\r\n\r\n", TooLarge, "larger than 64 KiB"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n", TooLarge, "more than 100 headers"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", Unreachable, "before the end of the answer"),
        (b"HTTP/1.1 200 OK\r\nCont", Unreachable, "within the answer's headers"),
        (b"", Unreachable, "without an answer"),
    ],
)  # fmt: skip
def test_a_malformed_answer_is_one_clear_error(answer: bytes, error: type[Exception], message: str) -> None:
    with serving(replies(answer, keep=False)) as (_, pool), pytest.raises(error, match=message) as caught:
        get(pool).read_all(1024)
    assert "\n" not in str(caught.value)


def test_ceilings_on_the_body_a_line_and_a_stream() -> None:
    announced = pytest.raises(TooLarge, match="is 2000 bytes, over its ceiling of 1 KiB")
    with serving(replies(b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n")) as (_, pool), announced:
        get(pool).read_all(1024)  # refused from the announced length, before reading
    lines = b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 2000 + b"\n"
    with serving(replies(lines, keep=False)) as (_, pool), pytest.raises(TooLarge, match="a line of the s"):
        list(get(pool).lines(1024, 10_000, what="s"))
    many = b"HTTP/1.0 200 OK\r\n\r\n" + b"short\n" * 1000
    with (
        serving(replies(many, keep=False)) as (_, pool),
        pytest.raises(TooLarge, match="ceiling of 1 KiB in all"),
    ):
        list(get(pool).lines(100, 1024))
    with serving(replies(many, keep=False)) as (_, pool):
        assert get(pool).read_prefix(12) == b"short\nshort\n"


def test_a_hostile_target_stays_one_request_line_and_a_header_with_a_line_break_sends_nothing() -> None:
    def script(conn: socket.socket) -> None:
        server.received.append(head_of(conn))
        conn.sendall(OK)

    server = Raw(script)
    pool = Pool("127.0.0.1", server.port)
    get(pool, target="/v2/a/tags/list?last=x y\r\nInjected: 1").read_all(5)
    line = server.received[0].split(b"\r\n")[0]
    assert line == b"GET /v2/a/tags/list?last=x%20y%0D%0AInjected:%201 HTTP/1.1"
    with pytest.raises(Refused, match="'Authorization' header holds a line break") as caught:
        pool.open(Request("GET", "/x", {"Authorization": "Bearer se\r\ncret"}), Timer(OBJECT))
    assert "cret" not in str(caught.value)
    assert len(server.received) == 1
    pool.close()


class Steps:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def trickle(conn: socket.socket) -> None:
    head_of(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
    stop = threading.Event()
    while not stop.wait(0.01):
        conn.sendall(b"x")


def test_the_total_bounds_a_request_whose_server_keeps_sending() -> None:
    """Bytes keep coming (the idle timeout never fires); the total still ends the request."""
    ceiling = Ceiling("answer", 1 << 20, total=30.0, idle=5.0)
    with serving(trickle) as (_, pool), pytest.raises(TimedOut, match="no complete answer within 30s"):
        pool.open(Request("GET", "/x"), Timer(ceiling, clock=Steps())).read_all(1 << 20)


def silent(conn: socket.socket) -> None:
    head_of(conn)
    conn.recv(1)


@pytest.mark.parametrize("how", ["signal", "cancel"])
def test_a_stop_ends_a_request_blocked_on_a_silent_server(how: str) -> None:
    budget = Budget()
    cancelled = threading.Event()
    caught: list[BaseException] = []
    with serving(silent) as (_, pool):

        def request() -> None:
            try:
                pool.open(Request("GET", "/x"), Timer(WATCH, budget, cancelled.is_set))
            except BaseException as err:
                caught.append(err)

        thread = threading.Thread(target=request)
        thread.start()
        if how == "signal":
            budget.stop(signal.SIGTERM)
        else:
            cancelled.set()
        thread.join(60)
        assert not thread.is_alive()
    assert len(caught) == 1 and isinstance(caught[0], Stopped)
    assert caught[0].signum == (signal.SIGTERM if how == "signal" else None)


def test_a_request_started_after_the_stop_gets_the_grace_a_second_stop_ends_it() -> None:
    now = [1.0]
    budget = Budget(grace=5.0, clock=lambda: now[0])
    budget.stop(signal.SIGINT)
    now[0] = 3.0
    assert budget.end_for(0.5) == 1.0 and budget.end_for(2.0) == 6.0  # in flight: at once; after: the grace
    budget.stop(signal.SIGINT)
    assert budget.end_for(2.0) == 1.0
    deadline = Budget(10.0, clock=lambda: now[0])  # started at 3
    assert deadline.end_for(4.0) == 13.0 and deadline.end_for(14.0) == 18.0


def test_in_memory_answers_read_like_network_ones() -> None:
    assert list(Response.of(200, b"a\r\nb\nc").lines(10, 100)) == [b"a", b"b", b"c"]
    with pytest.raises(TooLarge):
        Response.of(200, b"x" * 20).read_all(10)
