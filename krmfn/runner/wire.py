"""How one request reaches the API server and its answer comes back: ``Wire``, with two implementations.

``SocketWire`` sends the runner's unary requests (apply, get, list, delete, discovery) over persistent
HTTP/1.1 connections of the standard library, a pool that threads share (as many as requests in flight).
httpx builds each request through several layers (URL objects, header models, a connection pool, h11
events): on the test control plane that costs 1.3-1.5 ms of CPU per request against 0.45-0.55 ms here
(BENCHMARKS.md), and a big step is thousands of requests on a machine whose cores the API server needs
too.

``HttpxWire`` sends them through an httpx client, for a test's mock transport (the two wires reach the
same servers: lightkube configures neither a proxy nor a TLS server name for either).

Authentication stays lightkube's (a token, a token file, an exec credential plugin, basic auth): the
headers its auth flow puts on a request are taken once and reused; a 401 runs the flow's refresh (a token
file read again, the plugin run again) and the request is sent once more, as httpx would.

Neither wire retries: ``HttpApi._send`` does, with one policy for both.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx2

from krmfn.runner.api import parse_json
from krmfn.runner.errors import KubeconfigError


@dataclass(frozen=True)
class Reply:
    """An answer: its status, reason phrase, headers (names in lower case) and body."""

    status: int
    reason: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body as JSON; ``ValueError`` when it is not."""
        return parse_json(self.body)


class WireError(Exception):
    """The request did not get an answer: the connection failed, was refused, reset or timed out."""


class Wire(Protocol):
    def send(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]) -> Reply:
        """``target``: the path (segments already percent-encoded) and query. Raises ``WireError``."""
        ...

    def close(self) -> None: ...


class HttpxWire:
    """Requests through an httpx client (its base URL, auth and transport)."""

    def __init__(self, client: httpx2.Client) -> None:
        self._client = client

    def send(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]) -> Reply:
        try:
            response = self._client.request(method, target, content=body, headers=dict(headers))
        except httpx2.TransportError as err:
            raise WireError(first_line(err)) from None
        return Reply(response.status_code, response.reason_phrase, response.content, response.headers)

    def close(self) -> None:
        self._client.close()


class SocketWire:
    """Persistent standard-library connections to ``server``, shared by threads, with ``auth``'s headers."""

    def __init__(self, server: str, tls: ssl.SSLContext, auth: httpx2.Auth | None, *, timeout: float) -> None:
        url = urlsplit(server)
        if url.scheme not in ("https", "http") or not url.hostname:
            raise ValueError(f"the server {server!r} is not an http(s) URL")
        self._secure = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._secure else 80)
        self._prefix = url.path.rstrip("/")  # a server behind a path (a proxy's /k8s/clusters/NAME)
        self._server = server
        self._tls = tls
        self._auth = auth
        self._timeout = timeout
        self._idle: list[http.client.HTTPConnection] = []  # a stack: the most recently used first
        self._closed = False
        self._lock = threading.Lock()
        self._auth_headers: dict[str, str] | None = None

    def send(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]) -> Reply:
        sent_with = self._credentials()
        reply = self._exchange(method, target, body, {**headers, **sent_with})
        if reply.status == 401 and self._auth is not None:
            renewed = self._refresh(sent_with)
            if renewed is not None:
                reply = self._exchange(method, target, body, {**headers, **renewed})
        return reply

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # --- connections -------------------------------------------------------------------------------------

    def _exchange(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        conn = self._take()
        try:
            if conn.sock is None:
                self._open(conn)
            conn.request(method, self._prefix + target, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            self._give(conn)  # closed: the next request that takes it opens it again
            raise WireError(_describe(err)) from None
        self._give(conn)
        found = {name.lower(): value for name, value in response.getheaders()}
        return Reply(response.status, response.reason, data, found)

    def _take(self) -> http.client.HTTPConnection:
        """An idle connection, else a new one (opened by the caller). Connections are shared by threads,
        not kept per thread: the runner's worker threads come and go with each group of a step."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            if self._secure:
                return http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=self._tls
                )
            return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        if conn.sock is not None and _closed_by_peer(conn.sock):
            # The server closed the idle connection (its idle timeout, a restart): reconnect now rather
            # than fail the request and wait for a retry.
            conn.close()
        return conn

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()

    def _open(self, conn: http.client.HTTPConnection) -> None:
        conn.connect()
        # http.client writes a request's head and body separately: without TCP_NODELAY, Nagle's
        # algorithm may hold the body until the head is acknowledged (httpcore and Go set it too).
        sock: socket.socket = conn.sock  # set by connect()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # --- credentials -------------------------------------------------------------------------------------

    def _credentials(self) -> dict[str, str]:
        with self._lock:
            if self._auth_headers is None:
                self._auth_headers = self._run_auth(refresh=False) or {}
            return self._auth_headers

    def _refresh(self, sent_with: dict[str, str]) -> dict[str, str] | None:
        """New credentials after a 401, or None when the auth has none to offer (a fixed token)."""
        with self._lock:
            if self._auth_headers is not sent_with:  # another thread refreshed them meanwhile
                return self._auth_headers
            renewed = self._run_auth(refresh=True)
            if renewed is not None:
                self._auth_headers = renewed
            return renewed

    def _run_auth(self, *, refresh: bool) -> dict[str, str] | None:
        """The headers lightkube's auth flow puts on a request; with ``refresh``, the ones it sends after
        the server answered the first with 401."""
        if self._auth is None:
            return {}
        request = httpx2.Request("GET", self._server)
        before = dict(request.headers)
        flow = self._auth.sync_auth_flow(request)
        try:
            sent = next(flow)
            if refresh:
                sent = flow.send(httpx2.Response(401, request=sent))
        except StopIteration:
            return None
        finally:
            flow.close()
        found = {k: v for k, v in sent.headers.items() if before.get(k) != v}
        if any(char in value for value in found.values() for char in "\r\n\0"):
            # http.client refuses such a header with a ValueError that quotes it: the credentials.
            raise KubeconfigError("the kubeconfig's credentials hold a line break or NUL; they were not sent")
        return found


def _closed_by_peer(sock: Any) -> bool:
    """Whether an idle keep-alive socket has something to read: the server's close (or stray bytes,
    which make the connection unusable too)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _describe(err: BaseException) -> str:
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed: {err.verify_message or 'unknown reason'}"
    if isinstance(err, TimeoutError):
        return "timed out"
    if isinstance(err, http.client.RemoteDisconnected):
        return "the server closed the connection without an answer"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return first_line(err)


def first_line(err: BaseException) -> str:
    """The first line of ``err``'s text (its type's name when it has none): one line for an error."""
    text = str(err) or type(err).__name__
    return text.splitlines()[0]
