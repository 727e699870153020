"""The pods of a Deployment's, StatefulSet's or DaemonSet's current template: those the settle rule and
the fail-fast reasons judge (settle.py). Pods of an older template are on their way out and say nothing
about the rollout: a crash-looping pod of the old ReplicaSet must not fail the new one.

- Deployment: the pods of its ReplicaSet of the highest ``deployment.kubernetes.io/revision``
  (the new ReplicaSet, as ``kubectl rollout status`` finds it);
- StatefulSet: its pods labelled ``controller-revision-hash`` = ``status.updateRevision``;
- DaemonSet: its pods (a DaemonSet's status names no revision).

Ownership is by UID, so a pod of another object with a matching label is never counted.
"""

from __future__ import annotations

from typing import Any

from krmfn.errors import RunnerError
from krmfn.numbers import whole
from krmfn.runner.cluster.api import Api
from krmfn.runner.plan import Key
from krmfn.runner.settle_annotations import KINDS

REVISION = "deployment.kubernetes.io/revision"


def is_workload(key: Key) -> bool:
    return (key.group, key.kind) in KINDS


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _uid(obj: dict[str, Any]) -> str:
    return str(_mapping(obj.get("metadata")).get("uid") or "")


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    return _mapping(_mapping(obj.get("metadata")).get("annotations"))


def _owned(objs: list[dict[str, Any]], owner_uid: str) -> list[dict[str, Any]]:
    def owners(obj: dict[str, Any]) -> list[Any]:
        found = _mapping(obj.get("metadata")).get("ownerReferences")
        return found if isinstance(found, list) else []

    return [o for o in objs if owner_uid and any(_mapping(r).get("uid") == owner_uid for r in owners(o))]


def current(
    workload: dict[str, Any], pods: list[dict[str, Any]], replicasets: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The pods of ``pods`` that run ``workload``'s current template (``replicasets``: a Deployment's)."""
    kind, uid = workload.get("kind"), _uid(workload)
    if kind == "Deployment":
        # The new ReplicaSet is the one of the highest revision: the Deployment's own revision annotation
        # is written by its controller after the apply answered, so the object the runner holds may lack it.
        mine = [
            (whole(str(_annotations(rs).get(REVISION)), 2**63 - 1), rs)
            for rs in _owned(replicasets or [], uid)
        ]
        numbered = [(n, rs) for n, rs in mine if n is not None]
        if not numbered:
            return []
        newest = max(n for n, _ in numbered)
        return [p for n, rs in numbered if n == newest for p in _owned(pods, _uid(rs))]
    owned = _owned(pods, uid)
    if kind == "StatefulSet":
        revision = _mapping(workload.get("status")).get("updateRevision")
        if revision:
            return [p for p in owned if _mapping(_mapping(p.get("metadata")).get("labels")).get(
                "controller-revision-hash") == revision]  # fmt: skip
    return owned


PER_LIST = 50
"""Workloads whose pods one list request asks for (a label selector ``key in (...)``)."""


def shared_selector(group: list[dict[str, Any]]) -> str:
    """One label selector that selects the pods of every workload of ``group``: ``key in (a,b)`` on a
    ``matchLabels`` key they all have, else "" (every pod of the namespace; ownership sorts them)."""
    labels = [_mapping(_mapping(_mapping(w.get("spec")).get("selector")).get("matchLabels")) for w in group]
    if not labels or not all(labels):
        return ""
    for key in sorted(set.intersection(*(set(m) for m in labels))):
        if all(isinstance(m[key], str) for m in labels):
            values = sorted({m[key] for m in labels})
            return f"{key}={values[0]}" if len(values) == 1 else f"{key} in ({','.join(values)})"
    return ""


def current_pods(api: Api, namespace: str, group: list[dict[str, Any]]) -> list[list[dict[str, Any]] | None]:
    """The pods of each workload's current template, for workloads of one namespace: one list of pods
    (and one of ReplicaSets, if there is a Deployment) per ``PER_LIST`` workloads, not one per workload.
    None for each when they cannot be listed (RBAC without ``list`` on pods or ReplicaSets, an API
    error): the workloads' own status then decides alone."""
    found: list[list[dict[str, Any]] | None] = []
    for first in range(0, len(group), PER_LIST):
        chunk = group[first : first + PER_LIST]
        labels = shared_selector(chunk)
        try:
            pods = api.list(api.resource("v1", "Pod"), namespace, labels)
            replicasets = None
            if any(w.get("kind") == "Deployment" for w in chunk):
                replicasets = api.list(api.resource("apps/v1", "ReplicaSet"), namespace, labels)
        except RunnerError:
            found += [None] * len(chunk)
            continue
        found += [current(w, pods, replicasets) for w in chunk]
    return found
