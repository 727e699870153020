"""What the engine needs from a cluster: the ``Api`` protocol over plain dicts, and its small types.

Kept apart from kube.py (the HTTP implementation) so that planning, client-side dry runs and tests import
neither lightkube nor the HTTP client.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar
from urllib.parse import quote

from krmfn.errors import RunnerError
from krmfn.runner.errors import ApplyConflict, Forbidden, InvalidObject, ObjectError, UnknownKind

if TYPE_CHECKING:
    from krmfn.runner.plan import Key

T = TypeVar("T")
P = ParamSpec("P")


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
    names first (krmfn.k8s.names); this is the last guard, for values that come from the cluster."""


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


MAX_DEPTH = 256
"""Levels of nested objects and arrays (the outermost is 1) that krmfn reads from the cluster. Every
consumer of a cluster value walks it recursively (the YAML writer and JSON Patch of ``krmfn diff``, the
CEL worker's JSON, ``==``, the printers) at up to two Python frames per level, and Python stops at 1,000
frames: 256 leaves them ~400 frames. It is above what a rendered object may hold (``KRMFN_MAX_DEPTH``,
at most 200 below the object) with a list answer's or a watch event's wrapping around it."""


_DOCS = "(docs/limits.md)"


class Unreadable(ValueError):
    """JSON from the cluster that parses, and that krmfn does not read: nested deeper than ``MAX_DEPTH``,
    a number JSON cannot carry (``NaN``, ``Infinity``, ``1e999``: ``-o json`` could not write it back as
    JSON) or an integer of more than 4,300 digits (Python's own limit). The message says which."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Unreadable(f"holds the number {text[:20]}, which is not finite {_DOCS}")
    return value


def _constant(text: str) -> float:
    raise Unreadable(f"holds {text}, which is not JSON {_DOCS}")


def parse_json(text: str | bytes | bytearray) -> Any:
    """JSON from the cluster (an answer, a watch line, an annotation written by anyone), the one parse of
    it: ``ValueError`` when it is not JSON, ``Unreadable`` (a ValueError) when it is JSON that krmfn does
    not read, the depth checked here once so that no code after it walks a deeper value."""
    try:
        value = json.loads(text, parse_float=_finite, parse_constant=_constant)
    except RecursionError:  # thousands deep: json stops at Python's own limit
        raise Unreadable(
            f"nests deeper than {MAX_DEPTH} levels, more than krmfn reads from the cluster {_DOCS}"
        ) from None
    except Unreadable:
        raise
    except json.JSONDecodeError:
        raise
    except ValueError:  # int() past 4,300 digits
        raise Unreadable(f"holds an integer of more than 4300 digits {_DOCS}") from None
    # A value cannot nest deeper than it has openers: most answers are not walked at all.
    openers = (
        text.count(b"[") + text.count(b"{")
        if isinstance(text, bytes | bytearray)
        else text.count("[") + text.count("{")
    )
    if openers > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise Unreadable(
            f"nests deeper than {MAX_DEPTH} levels, more than krmfn reads from the cluster {_DOCS}"
        )
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` (plain dicts and lists, as ``json`` makes them) nests more than ``limit`` objects
    and arrays: level by level, without recursion (a third of the time of a parse)."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            child
            for found in level
            for child in (found.values() if type(found) is dict else found)
            if type(child) is dict or type(child) is list
        ]
    return False


LOG_LIMIT_BYTES = 64 * 1024
"""The most of a container's log one ``Api.logs`` request asks for (``limitBytes``) and reads."""

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
        or None when the node does not serve them; at most ``LOG_LIMIT_BYTES`` of it."""
        ...

    def server_time(self) -> datetime | None:
        """The API server's clock now (from its answers' ``Date``), or None when not known: what the
        settle rule compares the pods' times with (settle.py, rule 4)."""
        ...

    def follow_logs(
        self, name: str, namespace: str, container: str, since: str, stop: threading.Event
    ) -> Iterator[str]:
        """A container's log lines as they are written, each starting with its RFC 3339 timestamp, from
        the second ``since`` ("": from the start); ends when the container's log ends, the stream drops or
        goes over its ceiling (ceilings.py ``FOLLOW``), or within a tick of ``stop`` being set."""
        ...


def as_object_error(key: Key, err: ApiStatusError) -> ObjectError:
    cause = err.message or f"{err.code} {err.reason}"
    if err.code == 422:
        return InvalidObject(str(key), f"invalid: {cause}", err.code)
    if err.code == 403:
        return Forbidden(str(key), f"forbidden: {cause}", err.code)
    if err.code == 409 and err.reason == "Conflict" and "conflict" in cause.lower():
        return ApplyConflict(str(key), f"{cause} (pass --force-conflicts to take the fields over)", err.code)
    if err.code == 404 and key.namespace and err.message.startswith(f'namespaces "{key.namespace}"'):
        return ObjectError(
            str(key),
            f"namespace {key.namespace} does not exist; add the Namespace to this step or an earlier one",
            err.code,
        )
    if err.code == 404:
        return ObjectError(str(key), f"not found: {cause}", err.code)
    return ObjectError(str(key), f"{cause}", err.code)


def call(key: Key, request: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``request(*args, **kwargs)`` with its API errors as the ``ObjectError`` that names ``key``."""
    try:
        return request(*args, **kwargs)
    except ApiStatusError as err:
        raise as_object_error(key, err) from None
    except NoSuchKind as err:
        raise UnknownKind(str(key), str(err)) from None
