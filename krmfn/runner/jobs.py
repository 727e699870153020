"""Job rules that need no cluster: spec hashes, the force/recreate annotations, failure details."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from krmfn.yamlio import plain

SPEC_HASH = "krmfn.dev/applied-spec-hash"
FORCE = ("krmfn.dev/force", "fluxcd.controlplane.io/force")
RECREATE_ON_FAILURE = ("krmfn.dev/recreate-on-failure", "fluxcd.controlplane.io/recreateOnFailure")
PRUNE = "krmfn.dev/prune"


def spec_hash(job: dict[str, Any]) -> str:
    """sha256 of the rendered spec, canonical JSON. Stamped on the Job when applied: comparing it with the
    next rendering tells "unchanged" from "changed" without comparing against server-defaulted fields."""
    canonical = json.dumps(plain(job.get("spec") or {}), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def enabled(annotations: dict[str, Any], keys: tuple[str, ...]) -> bool:
    return any(str(annotations.get(key, "")).lower() == "enabled" for key in keys)


def is_failed(job: dict[str, Any] | None) -> bool:
    if job is None:
        return False
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Failed", "FailureTarget") and cond.get("status") == "True":
            return True
    return False


def pod_failures(pods: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(pod, container, why) for every terminated container of every failed pod, oldest pod first."""
    found = []
    pods = sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp", "")))
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") != "Failed":
            continue
        name = str((pod.get("metadata") or {}).get("name", ""))
        for container in status.get("containerStatuses") or []:
            term = (container.get("state") or {}).get("terminated")
            if not term:
                continue
            why = f"{term.get('reason') or 'terminated'} (exit code {term.get('exitCode')})"
            if term.get("message"):
                why += f": {str(term['message']).strip()}"
            found.append((name, str(container.get("name", "")), why))
        if not status.get("containerStatuses") and status.get("reason"):
            found.append((name, "", f"{status['reason']}: {status.get('message', '')}".rstrip(": ")))
    return found
