"""What the engine needs from a cluster: the ``Api`` protocol over plain dicts, and its small types.

Kept apart from kube.py (the HTTP implementation) so that planning, client-side dry runs and tests import
neither lightkube nor the HTTP client.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

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
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


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

    def delete(
        self, res: Resource, name: str, namespace: str, *, uid: str = "", propagation: str
    ) -> bool: ...

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]: ...

    def logs(
        self, name: str, namespace: str, container: str, tail: int, previous: bool = False
    ) -> str | None:
        """The last ``tail`` lines of a container's log (``previous``: of its run before the last restart),
        or None when the node does not serve them."""
        ...
