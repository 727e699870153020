"""What the engine needs from a cluster: the ``Api`` protocol over plain dicts, and its small types.

Kept apart from kube.py (the HTTP implementation) so that planning, client-side dry runs and tests import
neither lightkube nor the HTTP client.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from krmfn.errors import RunnerError


@dataclass(frozen=True)
class Resource:
    """One REST resource found by discovery."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str = "", name: str = "") -> str:
        """The REST path; every segment percent-encoded (see ``segment``)."""
        base = group_path(self.group, self.version)
        if self.namespaced and namespace:
            base += f"/namespaces/{segment(namespace)}"
        base += f"/{segment(self.plural)}"
        return f"{base}/{segment(name)}" if name else base


class UnsafePath(RunnerError):
    """A value that cannot be one segment of a REST path (``.``, ``..``, empty). The plan refuses such
    names first (krmfn.names); this is the last guard, for values that come from the cluster."""


def segment(value: str) -> str:
    """``value`` as one path segment: percent-encoded so that ``/``, ``%``, ``?`` and ``#`` stay inside
    it. ``.`` and ``..`` are refused: encoding leaves them as they are, and HTTP clients collapse them."""
    if value in ("", ".", ".."):
        raise UnsafePath(f"{value!r} cannot be a segment of a request path")
    try:
        return quote(value, safe="")
    except UnicodeEncodeError:
        raise UnsafePath(f"{value!r} is not UTF-8 text and cannot be a segment of a request path") from None


def group_path(group: str, version: str = "") -> str:
    """``/api/<version>`` for the core group, ``/apis/<group>[/<version>]`` for the others."""
    if not group:
        return f"/api/{segment(version)}"
    return f"/apis/{segment(group)}" + (f"/{segment(version)}" if version else "")


def parse_json(text: str | bytes | bytearray) -> Any:
    """JSON from the cluster (an answer, a watch line, an annotation written by anyone): ``ValueError``
    when it is not JSON, also for arrays nested thousands deep (``json`` raises RecursionError there)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


TRANSIENT = frozenset({429, 500, 502, 503, 504})
"""Answers a request (or a watch) is retried after: too many requests, the server or a proxy failing."""


class ApiStatusError(RunnerError):
    """A non-transient error answer of the API server (its ``Status`` reason and message)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{message} ({code} {reason})" if message else f"{code} {reason}")
        self.code = code
        self.reason = reason
        self.message = message


class NoSuchKind(RunnerError):
    """Discovery does not list the apiVersion/kind."""


WatchEvent = tuple[str, dict[str, Any]]


class Api(Protocol):
    """What the engine needs from a cluster. Tests may provide their own implementation."""

    default_namespace: str

    def resource(self, api_version: str, kind: str) -> Resource: ...

    def forget(self, api_version: str) -> None: ...

    def resource_for_group_kind(self, group: str, kind: str) -> Resource: ...

    def apply(
        self, res: Resource, obj: dict[str, Any], *, field_manager: str, force: bool, dry_run: bool
    ) -> tuple[dict[str, Any], bool]: ...

    def create(self, res: Resource, obj: dict[str, Any], *, field_manager: str) -> dict[str, Any]:
        """POST: 409 (AlreadyExists) when the object exists."""
        ...

    def replace(self, res: Resource, obj: dict[str, Any], *, field_manager: str) -> dict[str, Any]:
        """PUT: 409 (Conflict) when ``obj``'s resourceVersion is not the live one."""
        ...

    def get(self, res: Resource, name: str, namespace: str) -> dict[str, Any] | None: ...

    def list(self, res: Resource, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...

    def delete(self, res: Resource, name: str, namespace: str, *, uid: str, propagation: str) -> bool:
        """DELETE with a UID precondition: False when the object is gone or has another UID."""
        ...

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        """Events after ``resource_version`` ("": the current state first, as ADDED) of the object
        ``name``, or of every object of the kind in ``namespace`` when ``name`` is empty."""
        ...

    def logs(
        self, name: str, namespace: str, container: str, tail: int, previous: bool = False
    ) -> str | None:
        """The last ``tail`` lines of a container's log (``previous``: of its run before the last restart),
        or None when the node does not serve them."""
        ...
