"""The pods of a Deployment's, StatefulSet's or DaemonSet's current template: those the settle rule and
the fail-fast reasons judge (settle.py). Pods of an older template are on their way out and say nothing
about the rollout: a crash-looping pod of the old ReplicaSet must not fail the new one.

- Deployment: the pods of its ReplicaSet whose ``deployment.kubernetes.io/revision`` is the Deployment's
  (the new ReplicaSet, as ``kubectl rollout status`` finds it);
- StatefulSet: its pods labelled ``controller-revision-hash`` = ``status.updateRevision``;
- DaemonSet: its pods (a DaemonSet's status names no revision).

Ownership is by UID, so a pod of another object with a matching label is never counted.
"""

from __future__ import annotations

from typing import Any

from krmfn.errors import RunnerError
from krmfn.runner.api import Api
from krmfn.runner.plan import Key
from krmfn.runner.settle import KINDS

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


def selector(workload: dict[str, Any]) -> str:
    """The workload's ``matchLabels`` as a label selector: it narrows the list, ownership decides."""
    labels = _mapping(_mapping(_mapping(workload.get("spec")).get("selector")).get("matchLabels"))
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if isinstance(v, str))


def current(
    workload: dict[str, Any], pods: list[dict[str, Any]], replicasets: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The pods of ``pods`` that run ``workload``'s current template (``replicasets``: a Deployment's)."""
    kind, uid = workload.get("kind"), _uid(workload)
    if kind == "Deployment":
        revision = _annotations(workload).get(REVISION)
        mine = _owned(replicasets or [], uid)
        new = [
            rs
            for rs in mine
            if _mapping(_mapping(rs.get("metadata")).get("annotations")).get(REVISION) == revision
        ]
        return [p for rs in new for p in _owned(pods, _uid(rs))] if revision is not None else []
    owned = _owned(pods, uid)
    if kind == "StatefulSet":
        revision = _mapping(workload.get("status")).get("updateRevision")
        if revision:
            return [p for p in owned if _mapping(_mapping(p.get("metadata")).get("labels")).get(
                "controller-revision-hash") == revision]  # fmt: skip
    return owned


def current_pods(api: Api, key: Key, workload: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The pods of ``workload``'s current template, listed; None when they cannot be listed (RBAC without
    ``list`` on pods or ReplicaSets, an API error): the workload's own status then decides alone."""
    labels = selector(workload)
    try:
        pods = api.list(api.resource("v1", "Pod"), key.namespace, labels)
        replicasets = None
        if key.kind == "Deployment":
            replicasets = api.list(api.resource("apps/v1", "ReplicaSet"), key.namespace, labels)
    except RunnerError:
        return None
    return current(workload, pods, replicasets)
