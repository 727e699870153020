"""One HTTP/1.1 request and its answer (answers.py), over a pool of persistent connections (sockets.py)
to one origin.

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

import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from krmfn.net.addresses import Floor, Resolver, resolve
from krmfn.net.answers import CLOSE, Response, framing_of, read_head
from krmfn.net.budget import Timer
from krmfn.net.errors import Malformed, Refused, Unreachable
from krmfn.net.sockets import Conn, describe, dial, handshake, readable

__all__ = ["Pool", "Request", "Response", "Transport", "encode"]

if TYPE_CHECKING:
    from krmfn.net.proxies import Proxy  # urllib.request, imported only where a proxy is read

_TARGET_SAFE = "!#$%&'()*+,/:;=?@[]~-._"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


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
        self._idle: list[Conn] = []
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
            framing, length = framing_of(request.method, status, headers)
        except OSError as err:  # the one boundary: no socket or TLS error leaves the stack unnamed
            conn.close()
            raise Unreachable(describe(err)) from None
        except BaseException:
            conn.close()
            raise
        reusable = http11 and framing != CLOSE and "close" not in headers.get("connection", "").lower()
        return Response(status, reason, headers, conn, framing=framing, length=length, timer=timer, pool=self,
                        reusable=reusable)  # fmt: skip

    def give(self, conn: Conn) -> None:
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

    def _take(self) -> Conn:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            return Conn()
        if conn.sock is not None and readable(conn.sock):
            # The server closed the idle connection (its idle timeout, a restart), or sent bytes no
            # request asked for: a new connection rather than a failed request and a retry.
            conn.close()
        return conn

    def _connect(self, conn: Conn, timer: Timer) -> None:
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
            conn.sock = dial(found, timer)
        except Unreachable as err:
            if proxy is None:
                raise
            raise Unreachable(f"the proxy {proxy.url}: {err}") from None
        if proxy is not None:
            _tunnel(conn, proxy, self._authority, timer)
        if self._tls is not None:
            conn.sock = handshake(self._tls, conn.sock, self.host, timer)


def _tunnel(conn: Conn, proxy: Proxy, authority: str, timer: Timer) -> None:
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
