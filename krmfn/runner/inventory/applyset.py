"""The inventory: an ApplySet parent Secret (KEP-3659) that records what krmfn applied.

The ID, labels and annotations follow the KEP exactly (the format kubectl's applyset.go implements), so
``kubectl apply --prune --applyset`` and other ApplySet tools recognise the set. krmfn adds one
annotation of its own, ``krmfn.dev/jobs``: every Job it applied, with the hash of the run it started
(jobspec.py: the spec without the fields that may change in place) and the last outcome seen, so a Job
deleted by ``ttlSecondsAfterFinished`` is not run a second time, whether it completed, failed or was never
seen finishing. The record is bounded: the Jobs of the last plan, at most ``MAX_JOB_RECORDS`` of them, a
few hundred bytes each, well inside the 256 KiB the API server allows for all annotations.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from krmfn.k8s.names import dns_subdomain_problem, kind_problem, namespace_problem
from krmfn.runner.errors import InventoryError
from krmfn.runner.inventory.runs import RunRecord, parse_runs, render_runs
from krmfn.runner.reserved import (
    JOB_RECORDS,
    LAST_PLAN,
    LEGACY_COMPLETED_JOBS,
    MAX_ON_DELETE_STEPS,
    ON_DELETE_STEPS,
    RUNS,
)
from krmfn.terminal import cut

ID_LABEL = "applyset.kubernetes.io/id"
PART_OF = "applyset.kubernetes.io/part-of"
TOOLING = "applyset.kubernetes.io/tooling"
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
TOOL = "krmfn"

Outcome = Literal["completed", "failed", "started"]
OUTCOMES: tuple[Outcome, ...] = ("completed", "failed", "started")


@dataclass(frozen=True)
class JobRecord:
    """A Job the runner applied: the hash of the run (``legacy``: of the whole spec, as krmfn 0.1 hashed
    it) and the last outcome seen (``started``: never seen finishing)."""

    spec_hash: str
    outcome: Outcome
    legacy: bool = False

    def render(self) -> str:
        return f"{self.spec_hash}:{self.outcome}"


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
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    """``namespace/name`` -> what the runner knows of the Job it applied under that name."""
    exists: bool = False
    runs: list[RunRecord] = field(default_factory=list)
    """The last runs, oldest first (runs.py), for ``krmfn status``."""
    last_plan: str = ""
    """The last run's objects, as runs.encode_plan writes them."""
    on_delete: list[str] = field(default_factory=list)
    """The on-delete steps of the app's render (``krmfn.dev/on-delete-steps``): apply records them, so
    that ``krmfn delete`` without the render refuses rather than skip them."""

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
        parent.runs = parse_runs(str(annotations.get(RUNS, "")))
        parent.last_plan = str(annotations.get(LAST_PLAN, ""))
        names = [part.strip() for part in str(annotations.get(ON_DELETE_STEPS, "")).split(",")]
        parent.on_delete = [cut(name, 63) for name in names if name][:MAX_ON_DELETE_STEPS]
        for entry in _split(str(annotations.get(LEGACY_COMPLETED_JOBS, ""))):
            job, _, spec_hash = entry.partition("=")
            if job and spec_hash:
                parent.jobs[job] = JobRecord(spec_hash, "completed", legacy=True)
        for entry in _split(str(annotations.get(JOB_RECORDS, ""))):
            job, _, value = entry.partition("=")
            spec_hash, _, outcome = value.partition(":")
            for known in OUTCOMES:
                if job and spec_hash and outcome == known:
                    parent.jobs[job] = JobRecord(spec_hash, known)
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
        if self.jobs:
            annotations[JOB_RECORDS] = ",".join(f"{k}={v.render()}" for k, v in sorted(self.jobs.items()))
        if self.runs:
            annotations[RUNS] = render_runs(self.runs)
        if self.last_plan:
            annotations[LAST_PLAN] = self.last_plan
        if self.on_delete:
            annotations[ON_DELETE_STEPS] = ",".join(self.on_delete)
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


def as_member(obj: dict[str, Any], applyset_id: str) -> dict[str, Any]:
    """``obj`` labelled as a member of the ApplySet ``applyset_id`` (a copy: the plan is not changed)."""
    copy = dict(obj)
    meta = dict(obj["metadata"])
    meta["labels"] = {**(meta.get("labels") or {}), PART_OF: applyset_id}
    if meta.get("annotations"):
        meta["annotations"] = dict(meta["annotations"])
    copy["metadata"] = meta
    return copy
