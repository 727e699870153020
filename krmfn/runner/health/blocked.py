"""Why a step is blocked: for each object still waiting when a step (or the run) times out, one line with
what it waits for, where it is now, and which of its pods are not ready and why.

    Deployment.apps apps/web: waits for 2 updated replicas available; now 1 of 2 updated replicas
    available; pod web-7d9c-x2 not ready: container app running, readiness probe not passing

Pure: the engine passes the live object, its health and the pods it last listed (workloads.py).
"""

from __future__ import annotations

from typing import Any

from krmfn.runner.health import podtrouble
from krmfn.runner.health.status import Health

MAX_PODS = 3
"""Unready pods named per object (a step of 50 replicas would otherwise fill the error)."""


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(mapping: dict[str, Any], key: str, default: int) -> int:
    value = mapping.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def goal(obj: dict[str, Any] | None) -> str:
    """What the object waits for, in the words of its kind's health rule (status.py)."""
    if obj is None:
        return "the object to exist"
    kind, spec, status = obj.get("kind"), _mapping(obj.get("spec")), _mapping(obj.get("status"))
    if kind == "Deployment":
        return f"{_number(spec, 'replicas', 1)} updated replicas available"
    if kind == "StatefulSet":
        return f"{_number(spec, 'replicas', 1)} pods ready on the update revision"
    if kind == "DaemonSet":
        return f"{_number(status, 'desiredNumberScheduled', 0)} updated pods available"
    if kind == "ReplicaSet":
        return f"{_number(spec, 'replicas', 1)} replicas available"
    if kind == "Job":
        return "Complete"
    if kind == "Pod":
        return "Running and Ready"
    if kind == "PersistentVolumeClaim":
        return "Bound"
    if kind == "CustomResourceDefinition":
        return "Established"
    return "Ready=True, at its current generation"


def probe_failures(events: list[dict[str, Any]]) -> dict[str, str]:
    """The latest probe failure the kubelet reported of each pod (its ``Unhealthy`` Events: ``Readiness
    probe failed: <the probe's output>``), by pod name; the pod's status says only that it is unready."""
    latest: dict[str, tuple[str, str]] = {}
    for event in events:
        involved = _mapping(event.get("involvedObject"))
        if event.get("reason") != "Unhealthy" or involved.get("kind") != "Pod":
            continue
        when = str(event.get("lastTimestamp") or event.get("eventTime") or "")
        name = str(involved.get("name", ""))
        if name not in latest or when >= latest[name][0]:
            latest[name] = (when, podtrouble.cut(event.get("message") or "", 300))
    return {name: message for name, (_, message) in latest.items() if message}


def line(
    obj: dict[str, Any] | None,
    health: Health,
    pods: list[dict[str, Any]] | None,
    probes: dict[str, str] | None = None,
) -> str:
    """One line: the goal, the current health, the first ``MAX_PODS`` unready pods (with their latest
    probe failure from ``probes``, by pod name, where there is one)."""
    text = f"waits for {goal(obj)}; now {health.message}"
    unready = podtrouble.not_ready(pods or [], MAX_PODS)
    for i, shown in enumerate(unready):
        name = shown.removeprefix("pod ").partition(" not ready: ")[0]
        if probes and name in probes and shown.endswith("readiness probe not passing"):
            unready[i] = f"pod {name} not ready: {probes[name][:1].lower()}{probes[name][1:]}"
    if unready:
        text += "; " + "; ".join(unready)
        more = sum(not podtrouble.ready(p) for p in pods or []) - len(unready)
        text += f" (and {more} more not ready)" if more > 0 else ""
    return text
