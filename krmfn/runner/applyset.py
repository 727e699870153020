"""The inventory: an ApplySet parent Secret (KEP-3659) that records what krmfn applied.

The ID, labels and annotations follow the KEP exactly (the format kubectl's applyset.go implements), so
``kubectl apply --prune --applyset`` and other ApplySet tools recognise the set. krmfn adds one
annotation of its own, ``krmfn.dev/completed-jobs``: Jobs that completed, with the hash of the spec
they ran, so a Job deleted by ``ttlSecondsAfterFinished`` is not run a second time.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from krmfn.names import dns_subdomain_problem, kind_problem, namespace_problem
from krmfn.runner.errors import InventoryError
from krmfn.runner.lock import LOCK

ID_LABEL = "applyset.kubernetes.io/id"
PART_OF = "applyset.kubernetes.io/part-of"
TOOLING = "applyset.kubernetes.io/tooling"
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
COMPLETED_JOBS = "krmfn.dev/completed-jobs"
TOOL = "krmfn"
APPLYSET_PREFIX = "applyset.kubernetes.io/"
"""Every ApplySet label and annotation (KEP-3659) starts so; only the runner writes them."""
INVENTORY = frozenset({COMPLETED_JOBS, LOCK})
"""krmfn's own annotations of the parent."""


def applyset_id(name: str, namespace: str, kind: str = "Secret", group: str = "") -> str:
    """``applyset-<base64url(sha256(<name>.<namespace>.<kind>.<group>))>-v1``, unpadded."""
    digest = hashlib.sha256(".".join((name, namespace, kind, group)).encode()).digest()
    return f"applyset-{base64.urlsafe_b64encode(digest).decode().rstrip('=')}-v1"


def _split(value: str) -> set[str]:
    return {part.strip() for part in value.split(",") if part.strip()}


@dataclass
class Parent:
    """What the parent Secret records; ``render`` gives the object to server-side apply."""

    name: str
    namespace: str
    version: str
    group_kinds: set[str] = field(default_factory=set)
    namespaces: set[str] = field(default_factory=set)
    completed_jobs: dict[str, str] = field(default_factory=dict)
    """``namespace/name`` -> spec hash of Jobs that completed."""
    exists: bool = False

    @property
    def id(self) -> str:
        return applyset_id(self.name, self.namespace)

    @classmethod
    def from_live(cls, name: str, namespace: str, version: str, live: dict[str, Any] | None) -> Parent:
        parent = cls(name, namespace, version)
        if live is None:
            return parent
        meta = live.get("metadata") or {}
        labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
        tooling = str(annotations.get(TOOLING, ""))
        if labels.get(ID_LABEL) != parent.id:
            raise InventoryError(
                f"Secret {namespace}/{name} exists but is not the ApplySet parent {parent.id}; "
                "choose another name with --applyset"
            )
        if tooling and tooling.partition("/")[0] != TOOL:
            raise InventoryError(
                f"ApplySet {namespace}/{name} is managed by {tooling}, not krmfn; refusing to change it"
            )
        parent.exists = True
        parent.group_kinds = _split(str(annotations.get(GROUP_KINDS, "")))
        parent.namespaces = _split(str(annotations.get(NAMESPACES, "")))
        parent._check_lists()
        for entry in _split(str(annotations.get(COMPLETED_JOBS, ""))):
            job, _, spec_hash = entry.partition("=")
            parent.completed_jobs[job] = spec_hash
        return parent

    def _check_lists(self) -> None:
        """The kinds and namespaces a prune lists and deletes in: from the cluster, so checked like the
        plan's before they become request paths."""
        for group_kind in sorted(self.group_kinds):
            kind, _, group = group_kind.partition(".")
            if kind_problem(kind) or (group and dns_subdomain_problem(group)):
                raise InventoryError(self._tampered(GROUP_KINDS, group_kind))
        for namespace in sorted(self.namespaces):
            if namespace_problem(namespace):
                raise InventoryError(self._tampered(NAMESPACES, namespace))

    def _tampered(self, annotation: str, entry: str) -> str:
        return (
            f"ApplySet {self.namespace}/{self.name}: {annotation} lists {entry!r}, which is not a valid "
            "entry; krmfn never writes that, so the parent was edited: fix or remove the annotation"
        )

    def render(self) -> dict[str, Any]:
        annotations = {
            TOOLING: f"{TOOL}/v{self.version}",
            GROUP_KINDS: ",".join(sorted(self.group_kinds)),
        }
        extra = sorted(ns for ns in self.namespaces if ns and ns != self.namespace)
        if extra:
            annotations[NAMESPACES] = ",".join(extra)
        if self.completed_jobs:
            annotations[COMPLETED_JOBS] = ",".join(f"{k}={v}" for k, v in sorted(self.completed_jobs.items()))
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {ID_LABEL: self.id},
                "annotations": annotations,
            },
            "type": "Opaque",
        }
