"""How one request of the runner reaches the API server: the kubeconfig's credentials over krmfn.net.

``ServerWire`` sends requests through a transport (a ``krmfn.net.wire.Pool`` of connections to the
kubeconfig's server, or a test's stand-in) and reads each answer under its ceiling (krmfn/net/ceilings.py).

Authentication stays lightkube's (a token, a token file, an exec credential plugin, basic auth; client
certificates are in the TLS context lightkube builds): the headers its auth flow puts on a request are
taken once and reused; a 401 runs the flow's refresh (a token file read again, the plugin run again) and
the request is sent once more, as an HTTP client running the flow would. The flows only set headers on
the request and read the status of the answer, so they are given those two things, not an HTTP client's
objects.

Nothing here retries: ``HttpApi._send`` does, with one policy.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from krmfn.net.budget import Budget, Timer
from krmfn.net.ceilings import OBJECT, Ceiling
from krmfn.net.wire import Pool, Request, Response, Transport
from krmfn.runner.cluster.api import parse_json
from krmfn.runner.errors import KubeconfigError

MAX_ERROR_BODY = 1024 * 1024
"""An error answer of a stream (a watch refused) is read up to this for its Status."""


@dataclass(frozen=True)
class Reply:
    """An answer: its status, reason phrase, headers (names in lower case) and body."""

    status: int
    reason: str
    body: bytes | bytearray
    headers: Mapping[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body as JSON; ``ValueError`` when it is not."""
        return parse_json(self.body)


def server_pool(server: str, tls: ssl.SSLContext) -> Pool:
    """The connections to the kubeconfig's ``server`` (a path after the host, as a proxy such as Rancher's
    ``/k8s/clusters/NAME`` gives, prefixes every request)."""
    url = urlsplit(server)
    try:
        port = url.port
    except ValueError:
        port = -1
    if url.scheme not in ("https", "http") or not url.hostname or port == -1:
        raise KubeconfigError("the kubeconfig's server is not an http(s) URL")
    secure = url.scheme == "https"
    default = 443 if secure else 80
    return Pool(url.hostname, port or default, tls=tls if secure else None, prefix=url.path.rstrip("/"))


class _AuthRequest:
    """What an auth flow sets on a request: its headers."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}


class _AuthAnswer:
    """What an auth flow reads of an answer: its status."""

    def __init__(self, status: int) -> None:
        self.status_code = status


class ServerWire:
    """Requests to the API server with ``auth``'s headers, over ``transport``."""

    def __init__(self, transport: Transport, auth: Any, budget: Budget | None = None) -> None:
        self._transport = transport
        self._auth = auth
        self._budget = budget
        self._lock = threading.Lock()
        self._auth_headers: dict[str, str] | None = None

    def open(
        self,
        method: str,
        target: str,
        body: bytes | None,
        headers: Mapping[str, str],
        ceiling: Ceiling,
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> Response:
        """The answer, its body not read yet (a stream). Raises krmfn.net's errors."""
        sent_with = self._credentials()
        response = self._exchange(Request(method, target, {**headers, **sent_with}, body), ceiling, cancelled)
        if response.status == 401 and self._auth is not None:
            renewed = self._refresh(sent_with)
            if renewed is not None:
                response.close()
                request = Request(method, target, {**headers, **renewed}, body)
                response = self._exchange(request, ceiling, cancelled)
        return response

    def send(
        self,
        method: str,
        target: str,
        body: bytes | None,
        headers: Mapping[str, str],
        ceiling: Ceiling = OBJECT,
    ) -> Reply:
        """The whole answer, its body read under ``ceiling``."""
        with self.open(method, target, body, headers, ceiling) as response:
            limit = ceiling.max_bytes if response.status < 400 else min(ceiling.max_bytes, MAX_ERROR_BODY)
            data = response.read_all(limit, ceiling.what)
            return Reply(response.status, response.reason, data, response.headers)

    def close(self) -> None:
        self._transport.close()

    def _exchange(self, request: Request, ceiling: Ceiling, cancelled: Callable[[], bool] | None) -> Response:
        return self._transport.open(request, Timer(ceiling, self._budget, cancelled))

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
        flow = self._auth.sync_auth_flow(_AuthRequest())
        try:
            sent = next(flow)
            if refresh:
                sent = flow.send(_AuthAnswer(401))
        except StopIteration:
            return None
        finally:
            flow.close()
        found = {str(k): str(v) for k, v in sent.headers.items()}
        if any(char in value for value in found.values() for char in "\r\n\0"):
            # A header cannot hold them, and an error must not quote them: the credentials.
            raise KubeconfigError("the kubeconfig's credentials hold a line break or NUL; they were not sent")
        return found


def first_line(err: BaseException) -> str:
    """The first line of ``err``'s text (its type's name when it has none): one line for an error."""
    text = str(err) or type(err).__name__
    return text.splitlines()[0]
