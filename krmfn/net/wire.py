"""One HTTP/1.1 request and its answer, over a pool of persistent connections to one origin.

Written on the standard library's sockets rather than http.client, httpx or httpx2 (bench/http_stacks.py):

- every wait on a socket (connecting, the TLS handshake, sending, each read) lasts at most a ``TICK`` and
  asks the request's ``Timer`` first, so the whole request is bounded by its total, the run's deadline
  and a signal, however slowly the server sends (http.client's and httpx's timeouts are per read: one
  byte every 2 s kept a request alive for ever);
- every answer is read under a ceiling: the headers (64 KiB, 100 lines), the body (``read_all``), a
  prefix (``read_prefix``), each line and the whole of a stream (``lines``);
- it spends a third of http.client's CPU per request and a tenth of httpx's (BENCHMARKS.md), and the
  runner's big steps are thousands of requests on cores the API server needs too.

Threads share a pool: a connection is taken for one request and given back when its answer has been
read to the end. Nothing here retries (the runner does, kube.py) or follows redirects (set-image decides).
"""

from __future__ import annotations

import errno
import os
import select
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from krmfn.net.addresses import Floor, Resolved, Resolver, resolve
from krmfn.net.budget import Timer
from krmfn.net.ceilings import MAX_CHUNK_LINE, MAX_HEAD, MAX_HEADER_LINES, size
from krmfn.net.errors import Malformed, Refused, TooLarge, Unreachable

if TYPE_CHECKING:
    from krmfn.net.proxies import Proxy  # urllib.request, imported only where a proxy is read

RECV = 256 * 1024
_WAITING = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY, errno.EINTR})
_TARGET_SAFE = "!#$%&'()*+,/:;=?@[]~-._"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_LENGTH, _CHUNKED, _CLOSE, _EMPTY = range(4)


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    target: str
    """The path and query as sent (segments already percent-encoded)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None


class Transport(Protocol):
    """Where requests go: a ``Pool`` (one origin's connections), or a test's stand-in."""

    def open(self, request: Request, timer: Timer) -> Response:
        """Sends ``request`` and reads the answer's headers; the caller reads the body and closes it."""
        ...

    def close(self) -> None: ...


class _Conn:
    """A socket with its read buffer. ``sock`` None: an answer held in memory (``Response.of``)."""

    __slots__ = ("buf", "sock")

    def __init__(self, sock: socket.socket | None = None, buf: bytes = b"") -> None:
        self.sock = sock
        self.buf = bytearray(buf)

    def fill(self, timer: Timer) -> int:
        """Reads once from the socket into ``buf``; the count read, 0 at the end of the stream."""
        sock = self.sock
        if sock is None:
            return 0
        while True:
            sock.settimeout(timer.wait())
            try:
                data = sock.recv(RECV)
            except TimeoutError:
                continue
            except OSError as err:
                raise Unreachable(describe(err)) from None
            timer.progress()
            self.buf += data
            return len(data)

    def send(self, data: bytes | memoryview, timer: Timer) -> None:
        sock = self.sock
        assert sock is not None
        view = memoryview(data)
        while view:
            sock.settimeout(timer.wait())
            try:
                sent = sock.send(view)
            except TimeoutError:
                continue
            except OSError as err:
                raise Unreachable(describe(err)) from None
            timer.progress()
            view = view[sent:]

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.buf = bytearray()


class Response:
    """An answer: status, reason, headers (names in lower case, repeated ones joined by ``, ``), and a
    body to read once, under a ceiling. Close it (or use ``with``) when not reading it to the end."""

    def __init__(
        self,
        status: int,
        reason: str,
        headers: dict[str, str],
        conn: _Conn,
        *,
        framing: int,
        length: int,
        timer: Timer | None,
        pool: Pool | None,
        reusable: bool,
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self._conn: _Conn | None = conn
        self._framing = framing
        self._left = length  # bytes left: of the body (_LENGTH) or of the current chunk (_CHUNKED)
        self._timer = timer
        self._pool = pool
        self._reusable = reusable
        if framing == _EMPTY:
            self._finish()

    @classmethod
    def of(
        cls, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None, reason: str = ""
    ) -> Response:
        """An answer held in memory, read as an answer from the network is: for tests' transports."""
        found = {name.lower(): value for name, value in (headers or {}).items()}
        return cls(status, reason, found, _Conn(None, body), framing=_CLOSE, length=0, timer=None, pool=None,
                   reusable=False)  # fmt: skip

    # --- reading -----------------------------------------------------------------------------------------

    def read(self, count: int = RECV) -> bytes:
        """At most ``count`` bytes of the body; ``b""`` at its end."""
        conn = self._conn
        if conn is None:
            return b""
        if self._framing == _CHUNKED and self._left == 0 and not self._next_chunk(conn):
            return b""
        buf = conn.buf
        if not buf and self._fill(conn) == 0:
            if self._framing == _CLOSE:
                self._reusable = False
                self._finish()
                return b""
            raise Unreachable("the connection closed before the end of the answer")
        take = min(count, len(buf)) if self._framing == _CLOSE else min(count, len(buf), self._left)
        data = bytes(buf[:take])
        del buf[:take]
        if self._framing != _CLOSE:
            self._left -= take
            if self._left == 0:
                if self._framing == _LENGTH:
                    self._finish()
                else:
                    self._chunk_end(conn)
        return data

    def read_all(self, limit: int, what: str = "answer") -> bytes | bytearray:
        """The whole body; ``TooLarge`` past ``limit`` bytes (before reading, when the length is given)."""
        conn = self._conn
        if conn is None:
            return b""
        if self._framing == _LENGTH:
            need = self._left
            if need > limit:
                self.close()
                raise TooLarge(f"the {what} is {need} bytes, over its ceiling of {size(limit)}")
            buf = conn.buf
            while len(buf) < need:
                if self._fill(conn) == 0:
                    self.close()
                    raise Unreachable("the connection closed before the end of the answer")
            if len(buf) == need:
                data: bytes | bytearray = buf  # no copy (json.loads takes a bytearray)
                conn.buf = bytearray()
            else:
                data = bytes(buf[:need])
                del buf[:need]
            self._left = 0
            self._finish()
            return data
        out = bytearray()
        while chunk := self.read():
            out += chunk
            if len(out) > limit:
                self.close()
                raise TooLarge(f"the {what} is over its ceiling of {size(limit)}")
        return out

    def read_prefix(self, limit: int) -> bytes:
        """The first ``limit`` bytes of the body (all of it when shorter); the rest is never read."""
        out = bytearray()
        while len(out) < limit and (chunk := self.read(limit - len(out))):
            out += chunk
        self.close()
        return bytes(out)

    def lines(self, max_line: int, max_total: int, what: str = "stream") -> Iterator[bytes]:
        """The body's lines (without ``\\n`` and a ``\\r`` before it), each at most ``max_line`` bytes,
        all together at most ``max_total``; ``TooLarge`` past either."""
        pending = bytearray()
        total = 0
        while True:
            chunk = self.read()
            if not chunk:
                if pending:
                    yield bytes(pending)
                return
            total += len(chunk)
            if total > max_total:
                self.close()
                raise TooLarge(f"the {what} is over its ceiling of {size(max_total)} in all")
            searched = len(pending)
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", searched)) >= 0:
                if end - start > max_line:
                    break  # a line over the ceiling: refused below, as the one still arriving is
                line = pending[start:end]
                yield bytes(line[:-1] if line.endswith(b"\r") else line)
                start = searched = end + 1
            del pending[:start]
            if len(pending) > max_line:
                self.close()
                raise TooLarge(f"a line of the {what} is over its ceiling of {size(max_line)}")

    # --- the end -----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Done with the answer: a connection whose answer was not read to the end is closed."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._reusable and self._pool is not None and not conn.buf:
            self._pool.give(conn)
        else:
            conn.close()

    def _fill(self, conn: _Conn) -> int:
        if self._timer is None:
            return 0
        return conn.fill(self._timer)

    # --- chunked bodies ----------------------------------------------------------------------------------

    def _line(self, conn: _Conn) -> bytes:
        buf = conn.buf
        searched = 0
        while (end := buf.find(b"\r\n", searched)) < 0:
            if len(buf) > MAX_CHUNK_LINE:
                self.close()
                raise Malformed("a chunk header is too long")
            searched = max(len(buf) - 1, 0)
            if self._fill(conn) == 0:
                self.close()
                raise Unreachable("the connection closed before the end of the answer")
        line = bytes(buf[:end])
        del buf[: end + 2]
        return line

    def _next_chunk(self, conn: _Conn) -> bool:
        """Reads the next chunk's size; False (and the trailers read) at the last chunk."""
        text = self._line(conn).partition(b";")[0].strip()
        if not text or len(text) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in text):
            self.close()
            raise Malformed("a chunk size is not a hexadecimal number")
        self._left = int(text, 16)
        if self._left:
            return True
        lines = 0
        while self._line(conn):  # trailers, up to the empty line
            lines += 1
            if lines > MAX_HEADER_LINES:
                self.close()
                raise TooLarge("the answer's trailers are too many")
        self._finish()
        return False

    def _chunk_end(self, conn: _Conn) -> None:
        if self._line(conn):
            self.close()
            raise Malformed("a chunk does not end with CRLF")


def read_head(conn: _Conn, timer: Timer) -> tuple[int, str, dict[str, str], bool]:
    """The status, reason, headers and whether it is HTTP/1.1, of the next answer on ``conn`` (1xx
    answers skipped)."""
    while True:
        buf = conn.buf
        searched = 0
        while (end := buf.find(b"\r\n\r\n", searched)) < 0:
            if len(buf) > MAX_HEAD:
                raise TooLarge(f"the answer's headers are larger than {size(MAX_HEAD)}")
            searched = max(len(buf) - 3, 0)
            if conn.fill(timer) == 0:
                if buf:
                    raise Unreachable("the connection closed within the answer's headers")
                raise Unreachable("the server closed the connection without an answer")
        if end > MAX_HEAD:
            raise TooLarge(f"the answer's headers are larger than {size(MAX_HEAD)}")
        lines = bytes(buf[:end]).split(b"\r\n")
        del buf[: end + 4]
        version, _, rest = lines[0].partition(b" ")
        code, _, reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise Malformed("the answer is not HTTP/1.1")
        status = int(code)
        if len(lines) > MAX_HEADER_LINES + 1:
            raise TooLarge(f"the answer has more than {MAX_HEADER_LINES} headers")
        if 100 <= status < 200 and status != 101:
            continue
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep or not name or name[-1:] in (b" ", b"\t") or name[:1] in (b" ", b"\t"):
                raise Malformed("a header line of the answer is not 'name: value'")
            key = name.decode("latin-1").lower()
            text = value.strip(b" \t").decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return status, reason.decode("latin-1")[:200], headers, version == b"HTTP/1.1"


def _framing(method: str, status: int, headers: dict[str, str]) -> tuple[int, int]:
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return _EMPTY, 0
    coding = headers.get("transfer-encoding")
    if coding is not None:
        return (_CHUNKED, 0) if coding.rpartition(",")[2].strip().lower() == "chunked" else (_CLOSE, 0)
    declared = headers.get("content-length")
    if declared is None:
        return _CLOSE, 0
    values = {part.strip() for part in declared.split(",")}
    value = values.pop() if len(values) == 1 else ""
    if not value.isascii() or not value.isdigit() or len(value) > 18:
        raise Malformed("the answer's Content-Length is not one number")
    length = int(value)
    return (_LENGTH, length) if length else (_EMPTY, 0)


def encode(request: Request, host: str, prefix: str = "") -> bytes:
    """The request's bytes: ``Host``, ``Content-Length``, the headers given (never ``Accept-Encoding``:
    answers come uncompressed, so a ceiling is a ceiling of what is held)."""
    target = request.target
    if not (target.isascii() and target.isprintable()) or " " in target:
        target = quote(target, safe=_TARGET_SAFE)  # a registry's link with a space or a line break
    parts = [f"{request.method} {prefix}{target} HTTP/1.1\r\nHost: {host}\r\n"]
    for name, value in request.headers.items():
        if any(c in value or c in name for c in "\r\n\0"):
            raise Refused(f"the {name.split()[0][:40]!r} header holds a line break or NUL; nothing was sent")
        parts.append(f"{name}: {value}\r\n")
    body = request.body
    if body is not None or request.method in _BODY_METHODS:
        parts.append(f"Content-Length: {len(body or b'')}\r\n")
    parts.append("\r\n")
    try:
        head = "".join(parts).encode("latin-1")
    except UnicodeEncodeError:
        raise Refused("a header is not Latin-1 text; nothing was sent") from None
    return head + body if body else head


class Pool:
    """Persistent connections to one origin (``scheme://host:port`` + a path ``prefix``), shared by
    threads; a stack, so the most recently used connection is taken first.

    ``floor`` checks the addresses of every connection made (addresses.py); ``proxy`` tunnels each one
    through a proxy with ``CONNECT``; ``tls`` None means plain HTTP."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: ssl.SSLContext | None = None,
        prefix: str = "",
        floor: Floor | None = None,
        proxy: Proxy | None = None,
        resolver: Resolver = resolve,
    ) -> None:
        self.host = host
        self.port = port
        self._tls = tls
        self._prefix = prefix
        self._floor = floor
        self._proxy = proxy
        self._resolver = resolver
        default = 443 if tls is not None else 80
        shown = f"[{host}]" if ":" in host else host
        self._host_header = shown if port == default else f"{shown}:{port}"
        self._authority = f"{shown}:{port}"
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self._closed = False

    def open(self, request: Request, timer: Timer) -> Response:
        data = encode(request, self._host_header, self._prefix)  # refused before any connection
        conn = self._take()
        try:
            if conn.sock is None:
                self._connect(conn, timer)
            conn.send(data, timer)
            status, reason, headers, http11 = read_head(conn, timer)
            framing, length = _framing(request.method, status, headers)
        except BaseException:
            conn.close()
            raise
        reusable = http11 and framing != _CLOSE and "close" not in headers.get("connection", "").lower()
        return Response(status, reason, headers, conn, framing=framing, length=length, timer=timer, pool=self,
                        reusable=reusable)  # fmt: skip

    def give(self, conn: _Conn) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _take(self) -> _Conn:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            return _Conn()
        if conn.sock is not None and _readable(conn.sock):
            # The server closed the idle connection (its idle timeout, a restart), or sent bytes no
            # request asked for: a new connection rather than a failed request and a retry.
            conn.close()
        return conn

    def _connect(self, conn: _Conn, timer: Timer) -> None:
        proxy = self._proxy
        if self._floor is not None:
            try:
                destination = self._resolver(self.host, self.port)
            except Unreachable:
                if proxy is None:
                    raise
                destination = []  # only the proxy can resolve it: counted as private (addresses.py)
            self._floor.check(self.host, destination)
            found = destination if proxy is None else self._resolver(proxy.host, proxy.port)
        else:
            found = self._resolver(*((proxy.host, proxy.port) if proxy else (self.host, self.port)))
        try:
            conn.sock = _dial(found, timer)
        except Unreachable as err:
            if proxy is None:
                raise
            raise Unreachable(f"the proxy {proxy.url}: {err}") from None
        if proxy is not None:
            _tunnel(conn, proxy, self._authority, timer)
        if self._tls is not None:
            conn.sock = _handshake(self._tls, conn.sock, self.host, timer)


def _dial(found: list[Resolved], timer: Timer) -> socket.socket:
    """A TCP connection to the first of ``found`` that accepts one; each attempt bounded by the
    connect timeout and the request's timer."""
    last: BaseException | None = None
    for address in found:
        sock = socket.socket(address.family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            code = sock.connect_ex(address.sockaddr)
            if code in _WAITING:
                opened = timer.started
                while not _writable(sock, timer.connect_wait(opened)):
                    pass
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as err:
            sock.close()
            last = err
        except BaseException:
            sock.close()
            raise
    raise Unreachable(describe(last) if last is not None else "the name resolves to no address")


def _handshake(tls: ssl.SSLContext, sock: socket.socket, host: str, timer: Timer) -> socket.socket:
    secure = tls.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    try:
        while True:
            secure.settimeout(timer.wait())
            try:
                secure.do_handshake()
                return secure
            except TimeoutError:
                continue
    except OSError as err:
        secure.close()
        raise Unreachable(describe(err)) from None
    except BaseException:
        secure.close()
        raise


def _tunnel(conn: _Conn, proxy: Proxy, authority: str, timer: Timer) -> None:
    auth = f"Proxy-Authorization: {proxy.authorization}\r\n" if proxy.authorization else ""
    conn.send(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{auth}\r\n".encode("latin-1"), timer)
    try:
        status, _, _, _ = read_head(conn, timer)
    except Unreachable as err:
        raise Unreachable(f"the proxy {proxy.url}: {err}") from None
    if status != 200:
        raise Unreachable(f"the proxy {proxy.url} refused a tunnel to {authority}: HTTP {status}")
    if conn.buf:
        raise Malformed(f"the proxy {proxy.url} sent bytes before the tunnel was up")


def _writable(sock: socket.socket, seconds: float) -> bool:
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        return bool(poller.poll(seconds * 1000))
    return bool(select.select([], [sock], [], seconds)[1])


def _readable(sock: socket.socket) -> bool:
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def describe(err: BaseException) -> str:
    """One line for a socket or TLS failure."""
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed: {err.verify_message or 'unknown reason'}"
    if isinstance(err, ssl.SSLError):
        return f"TLS failed: {err.reason or type(err).__name__}"
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, ConnectionResetError):
        return "the connection was reset"
    if isinstance(err, BrokenPipeError):
        return "the connection was closed while sending"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    text = str(err) or type(err).__name__
    return text.splitlines()[0]
