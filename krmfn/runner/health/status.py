"""Health of a live object, computed from the object alone (kstatus rules, plus the runner's own rule for
Jobs: healthy only when Complete). Pure: the waiter feeds it objects from watch events.

Deployments, StatefulSets and DaemonSets are judged the way ``kubectl rollout status`` judges them;
custom resources by ``observedGeneration`` and their ``Ready``/``Stalled`` conditions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

State = Literal["current", "in-progress", "failed", "not-found"]


@dataclass(frozen=True)
class Health:
    state: State
    message: str

    @property
    def done(self) -> bool:
        return self.state in ("current", "failed")


def health(obj: dict[str, Any] | None) -> Health:
    """The health of ``obj`` (None: the object does not exist)."""
    if obj is None:
        return Health("not-found", "not found")
    if _field(obj, "metadata").get("deletionTimestamp"):
        return Health("in-progress", "being deleted")
    kind = obj.get("kind")
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    checker = _BUILTIN.get((group, str(kind)))
    if checker is not None:
        return checker(obj)
    return _generic(obj)


def _field(obj: dict[str, Any], name: str) -> dict[str, Any]:
    """``obj[name]`` when it is a mapping, else empty: a custom resource's fields have whatever types its
    controller (or anyone) wrote, and a wrong type must read as absent, not raise."""
    value = obj.get(name)
    return value if isinstance(value, dict) else {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return _field(obj, "status")


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = _status(obj).get("conditions")
    if not isinstance(found, list):
        return {}
    return {str(c.get("type")): c for c in found if isinstance(c, dict)}


def _is_true(cond: dict[str, Any] | None) -> bool:
    return cond is not None and cond.get("status") == "True"


def _reason(cond: dict[str, Any]) -> str:
    parts = [str(cond[k]) for k in ("reason", "message") if cond.get(k)]
    return ": ".join(parts) if parts else str(cond.get("type", ""))


def _generation_observed(obj: dict[str, Any]) -> bool:
    generation = _int_or_none(_field(obj, "metadata"), "generation")
    observed = _int_or_none(_status(obj), "observedGeneration")
    return generation is None or observed is None or observed >= generation


def _int_or_none(mapping: dict[str, Any], key: str) -> int | None:
    """``mapping[key]`` when it is an integer (not a bool), else None."""
    value = mapping.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int(mapping: dict[str, Any], key: str, default: int = 0) -> int:
    found = _int_or_none(mapping, key)
    return default if found is None else found


def _pods(status: dict[str, Any], key: str) -> int:
    """A Job's pods that are ``key`` (active, succeeded, failed). The controller counts a finished pod in
    ``status.succeeded`` or ``status.failed`` only once it has removed the pod's tracking finalizer; until
    then its UID is in ``status.uncountedTerminatedPods`` (pkg/controller/job), and SuccessCriteriaMet is
    written in that same update: ``succeeded: 0`` with one pod done. Both are counted here."""
    count = _int(status, key)
    if key in ("succeeded", "failed"):
        uncounted = _field(status, "uncountedTerminatedPods").get(key)
        count += len(uncounted) if isinstance(uncounted, list) else 0
    return count


def _job(obj: dict[str, Any]) -> Health:
    """Failed and Complete end a Job, as kstatus says; so do FailureTarget and SuccessCriteriaMet, which the
    Job controller sets first, never reverts, and follows with Failed or Complete once the Job's pods
    have stopped (kstatus, older than them, waits for the final condition: the outcome is the same)."""
    conds, status = _conditions(obj), _status(obj)
    for failed in ("Failed", "FailureTarget"):
        if _is_true(conds.get(failed)):
            text = _reason(conds[failed])
            if status.get("failedIndexes"):
                text += f" (failed indexes: {status['failedIndexes']})"
            return Health("failed", text)
    succeeded = _pods(status, "succeeded")
    if _is_true(conds.get("Complete")):
        return Health("current", f"complete ({succeeded} succeeded)")
    if _is_true(conds.get("SuccessCriteriaMet")):
        return Health("current", f"success criteria met ({succeeded} succeeded); remaining pods stopping")
    if _is_true(conds.get("Suspended")) or _field(obj, "spec").get("suspend") is True:
        return Health("in-progress", "suspended: waiting for it to be resumed (spec.suspend: false)")
    # Only the counts there are: a Job the controller has not looked at yet has none, and "0 active,
    # 0 succeeded, 0 failed" would read as if it had run and done nothing.
    counts = [f"{_pods(status, k)} {k}" for k in ("active", "succeeded", "failed") if _pods(status, k)]
    text = "running: " + ", ".join(counts) if counts else "waiting for its first pod"
    if status.get("failedIndexes"):
        text += f" (failed indexes: {status['failedIndexes']}; other indexes go on)"
    return Health("in-progress", text)


def _deployment(obj: dict[str, Any]) -> Health:
    if not _generation_observed(obj) or "observedGeneration" not in _status(obj):
        return Health("in-progress", "waiting for the deployment spec update to be observed")
    status, spec = _status(obj), _field(obj, "spec")
    progressing = _conditions(obj).get("Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return Health("failed", _reason(progressing))
    if spec.get("paused") is True:
        return Health("current", "paused")
    replicas = _int(spec, "replicas", 1)
    updated, total = _int(status, "updatedReplicas"), _int(status, "replicas")
    available = _int(status, "availableReplicas")
    if updated < replicas:
        return Health("in-progress", f"{updated} of {replicas} new replicas updated")
    if total > updated:
        return Health("in-progress", f"{total - updated} old replicas pending termination")
    if available < updated:
        return Health("in-progress", f"{available} of {updated} updated replicas available")
    return Health("current", f"rolled out ({available} available)")


def _statefulset(obj: dict[str, Any]) -> Health:
    spec, status = _field(obj, "spec"), _status(obj)
    strategy = _field(spec, "updateStrategy")
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return Health("current", f"update strategy {strategy.get('type')}: rollout not tracked")
    if "observedGeneration" not in status or not _generation_observed(obj):
        return Health("in-progress", "waiting for the statefulset spec update to be observed")
    replicas = _int(spec, "replicas", 1)
    ready = _int(status, "readyReplicas")
    if ready < replicas:
        return Health("in-progress", f"{ready} of {replicas} pods ready")
    partition = _int(_field(strategy, "rollingUpdate"), "partition")
    if partition > 0:
        updated = _int(status, "updatedReplicas")
        if updated < replicas - partition:
            return Health("in-progress", f"{updated} of {replicas - partition} partitioned pods updated")
        return Health("current", f"partitioned rollout done ({updated} updated)")
    if status.get("updateRevision") != status.get("currentRevision"):
        return Health("in-progress", f"{_int(status, 'updatedReplicas')} of {replicas} pods updated")
    return Health("current", f"rolled out ({ready} ready)")


def _daemonset(obj: dict[str, Any]) -> Health:
    spec, status = _field(obj, "spec"), _status(obj)
    strategy = _field(spec, "updateStrategy")
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return Health("current", f"update strategy {strategy.get('type')}: rollout not tracked")
    if "observedGeneration" not in status or not _generation_observed(obj):
        return Health("in-progress", "waiting for the daemonset spec update to be observed")
    desired = _int(status, "desiredNumberScheduled")
    updated, available = _int(status, "updatedNumberScheduled"), _int(status, "numberAvailable")
    if updated < desired:
        return Health("in-progress", f"{updated} of {desired} updated pods scheduled")
    if available < desired:
        return Health("in-progress", f"{available} of {desired} updated pods available")
    return Health("current", f"rolled out ({available} available)")


def _replicaset(obj: dict[str, Any]) -> Health:
    if not _generation_observed(obj):
        return Health("in-progress", "waiting for the spec update to be observed")
    replicas = _int(_field(obj, "spec"), "replicas", 1)
    available = _int(_status(obj), "availableReplicas")
    if available < replicas:
        return Health("in-progress", f"{available} of {replicas} replicas available")
    return Health("current", f"{available} available")


def _pod(obj: dict[str, Any]) -> Health:
    phase = _status(obj).get("phase")
    if phase == "Succeeded":
        return Health("current", "succeeded")
    if phase == "Failed":
        return Health("failed", str(_status(obj).get("reason") or "pod failed"))
    if phase == "Running" and _is_true(_conditions(obj).get("Ready")):
        return Health("current", "running and ready")
    return Health("in-progress", f"phase {phase or 'Pending'}")


def _pvc(obj: dict[str, Any]) -> Health:
    phase = _status(obj).get("phase")
    return Health("current", "bound") if phase == "Bound" else Health("in-progress", f"phase {phase}")


def _namespace(obj: dict[str, Any]) -> Health:
    phase = _status(obj).get("phase", "Active")
    return Health("current", "active") if phase == "Active" else Health("in-progress", f"phase {phase}")


def _crd(obj: dict[str, Any]) -> Health:
    conds = _conditions(obj)
    names = conds.get("NamesAccepted")
    if names is not None and names.get("status") == "False":
        return Health("failed", _reason(names))
    if _is_true(conds.get("Established")):
        return Health("current", "established")
    return Health("in-progress", "waiting to be established")


def _generic(obj: dict[str, Any]) -> Health:
    """kstatus for custom resources: Stalled=True fails, Ready decides, no conditions means current."""
    if not _generation_observed(obj):
        return Health("in-progress", "waiting for the controller to observe the new generation")
    conds = _conditions(obj)
    if _is_true(conds.get("Stalled")):
        return Health("failed", _reason(conds["Stalled"]))
    ready = conds.get("Ready")
    if ready is not None:
        if ready.get("status") == "True":
            return Health("current", _reason(ready) if ready.get("message") else "ready")
        return Health("in-progress", f"not ready: {_reason(ready)}")
    if _is_true(conds.get("Reconciling")):
        return Health("in-progress", _reason(conds["Reconciling"]))
    return Health("current", "exists")


_BUILTIN = {
    ("batch", "Job"): _job,
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("apps", "ReplicaSet"): _replicaset,
    ("", "Pod"): _pod,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "Namespace"): _namespace,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
}
# Every other kind (ConfigMap, Service, RBAC, ...) goes through _generic: healthy once it exists.
