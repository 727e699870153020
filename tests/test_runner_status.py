"""Health computation, one table: the object as the API server returns it -> state and message."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.runner.health.status import health


def cond(type_: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, str]:
    c = {"type": type_, "status": status}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def job(*conditions: dict[str, str], **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "generation": 1},
        "spec": {},
        "status": {"conditions": list(conditions), **status},
    }


def deploy(want: int = 2, generation: int = 2, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "generation": generation},
        "spec": {"replicas": want},
        "status": status,
    }


def sts(replicas: int = 2, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "s", "generation": 1},
        "spec": {"replicas": replicas},
        "status": status,
    }


def ds(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "d", "generation": 1},
        "spec": {},
        "status": status,
    }


def cr(generation: int = 1, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "k", "generation": generation},
        "status": status,
    }


CASES = [
    # Jobs: healthy only when Complete
    pytest.param(
        job(cond("Complete"), succeeded=1), "current", "complete (1 succeeded)", id="job-complete-is-current"
    ),
    pytest.param(
        job(active=1),
        "in-progress",
        "running: 1 active",
        id="job-running-is-in-progress",
    ),
    # SuccessCriteriaMet and FailureTarget are the Job controller's decisions, never reverted (the API
    # server refuses to clear them); Complete and Failed follow once the pods have stopped. Both end the
    # wait, so success and failure are judged alike.
    pytest.param(
        job(active=1, failed=2), "in-progress", "running: 1 active, 2 failed", id="job-counts-not-zero"
    ),
    pytest.param(job(), "in-progress", "waiting for its first pod", id="job-without-counts-yet"),
    pytest.param(
        job(cond("SuccessCriteriaMet"), succeeded=1),
        "current",
        "success criteria met (1 succeeded)",
        id="job-success-criteria-met-is-decided",
    ),
    pytest.param(
        job(active=2, succeeded=1, failed=2, failedIndexes="1,3"),
        "in-progress",
        "running: 2 active, 1 succeeded, 2 failed (failed indexes: 1,3; other indexes go on)",
        id="indexed-job-with-failed-indexes-goes-on",
    ),
    pytest.param(
        job(cond("Failed", reason="FailedIndexes", message="Job has failed indexes"), failedIndexes="1,3"),
        "failed",
        "FailedIndexes: Job has failed indexes (failed indexes: 1,3)",
        id="indexed-job-failed-by-its-indexes-names-them",
    ),
    pytest.param(
        job(cond("Failed", reason="BackoffLimitExceeded", message="Job has reached the backoff limit")),
        "failed",
        "BackoffLimitExceeded: Job has reached the backoff limit",
        id="job-failed-carries-reason-and-message",
    ),
    pytest.param(
        job(cond("FailureTarget", reason="DeadlineExceeded")),
        "failed",
        "DeadlineExceeded",
        id="job-failure-target-fails-before-pods-terminate",
    ),
    pytest.param(job(cond("Suspended")), "in-progress", "suspended", id="suspended-job-waits"),
    pytest.param(
        {**job(cond("Complete")), "metadata": {"name": "j", "deletionTimestamp": "2024-01-01T00:00:00Z"}},
        "in-progress",
        "being deleted",
        id="object-being-deleted-is-in-progress",
    ),
    # Deployments: like kubectl rollout status
    pytest.param(
        deploy(observedGeneration=1),
        "in-progress",
        "spec update to be observed",
        id="deployment-generation-not-observed",
    ),
    pytest.param(
        deploy(observedGeneration=2, replicas=2, updatedReplicas=1, availableReplicas=2),
        "in-progress",
        "1 of 2 new replicas updated",
        id="deployment-not-all-replicas-updated",
    ),
    pytest.param(
        deploy(observedGeneration=2, replicas=3, updatedReplicas=2, availableReplicas=2),
        "in-progress",
        "1 old replicas pending termination",
        id="deployment-old-replicas-remain",
    ),
    pytest.param(
        deploy(observedGeneration=2, replicas=2, updatedReplicas=2, availableReplicas=1),
        "in-progress",
        "1 of 2 updated replicas available",
        id="deployment-updated-not-available",
    ),
    pytest.param(
        deploy(observedGeneration=2, replicas=2, updatedReplicas=2, availableReplicas=2),
        "current",
        "rolled out (2 available)",
        id="deployment-rolled-out",
    ),
    pytest.param(
        deploy(want=0, observedGeneration=2),
        "current",
        "rolled out (0 available)",
        id="deployment-scaled-to-zero-is-current",
    ),
    pytest.param(
        deploy(
            observedGeneration=2,
            conditions=[
                cond(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    "ReplicaSet web-1 has timed out progressing",
                )
            ],
        ),
        "failed",
        "ProgressDeadlineExceeded: ReplicaSet web-1 has timed out progressing",
        id="deployment-progress-deadline-exceeded-fails",
    ),
    # StatefulSets and DaemonSets
    pytest.param(
        sts(observedGeneration=1, readyReplicas=1, currentRevision="a", updateRevision="a"),
        "in-progress",
        "1 of 2 pods ready",
        id="statefulset-pods-not-ready",
    ),
    pytest.param(
        sts(
            observedGeneration=1, readyReplicas=2, updatedReplicas=1, currentRevision="a", updateRevision="b"
        ),
        "in-progress",
        "1 of 2 pods updated",
        id="statefulset-revision-rolling",
    ),
    pytest.param(
        sts(observedGeneration=1, readyReplicas=2, currentRevision="b", updateRevision="b"),
        "current",
        "rolled out (2 ready)",
        id="statefulset-rolled-out",
    ),
    pytest.param(
        ds(observedGeneration=1, desiredNumberScheduled=3, updatedNumberScheduled=3, numberAvailable=2),
        "in-progress",
        "2 of 3 updated pods available",
        id="daemonset-pods-not-available",
    ),
    pytest.param(
        ds(observedGeneration=1, desiredNumberScheduled=3, updatedNumberScheduled=3, numberAvailable=3),
        "current",
        "rolled out (3 available)",
        id="daemonset-rolled-out",
    ),
    # CRDs
    pytest.param(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {},
            "status": {"conditions": [cond("NamesAccepted"), cond("Established")]},
        },
        "current",
        "established",
        id="crd-established",
    ),
    pytest.param(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {},
            "status": {"conditions": [cond("NamesAccepted", "False", "ListKindConflict", "taken")]},
        },
        "failed",
        "ListKindConflict: taken",
        id="crd-names-rejected-fails",
    ),
    pytest.param(
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {}},
        "in-progress",
        "waiting to be established",
        id="crd-not-yet-established",
    ),
    # Custom resources: observedGeneration, Ready, Stalled
    pytest.param(cr(), "current", "exists", id="custom-resource-without-status-is-current"),
    pytest.param(
        cr(2, observedGeneration=1, conditions=[cond("Ready")]),
        "in-progress",
        "observe the new generation",
        id="custom-resource-stale-generation",
    ),
    pytest.param(
        cr(1, observedGeneration=1, conditions=[cond("Ready", "False", "Progressing", "building")]),
        "in-progress",
        "not ready: Progressing: building",
        id="custom-resource-not-ready",
    ),
    pytest.param(
        cr(1, observedGeneration=1, conditions=[cond("Ready", message="Applied revision: main@1")]),
        "current",
        "Applied revision: main@1",
        id="custom-resource-ready",
    ),
    pytest.param(
        cr(
            1,
            observedGeneration=1,
            conditions=[
                cond("Ready", "False"),
                cond("Stalled", reason="BuildFailed", message="kustomization path not found"),
            ],
        ),
        "failed",
        "BuildFailed: kustomization path not found",
        id="custom-resource-stalled-fails",
    ),
    pytest.param(
        cr(1, conditions=[cond("Reconciling", reason="Progressing")]),
        "in-progress",
        "Progressing",
        id="custom-resource-reconciling-without-ready",
    ),
    # Everything else exists = healthy; a few built-ins have a phase
    pytest.param(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        "current",
        "exists",
        id="configmap-exists-is-current",
    ),
    pytest.param(
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {}, "status": {"phase": "Pending"}},
        "in-progress",
        "phase Pending",
        id="pvc-pending",
    ),
    pytest.param(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {},
            "status": {"phase": "Failed", "reason": "Evicted"},
        },
        "failed",
        "Evicted",
        id="pod-failed",
    ),
    pytest.param(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {}, "status": {"phase": "Terminating"}},
        "in-progress",
        "phase Terminating",
        id="namespace-terminating",
    ),
    pytest.param(None, "not-found", "not found", id="missing-object-is-not-found"),
]


@pytest.mark.parametrize(("obj", "state", "message"), CASES)
def test_health(obj: dict[str, Any] | None, state: str, message: str) -> None:
    result = health(obj)
    assert result.state == state
    assert message in result.message
    assert result.done is (state in ("current", "failed"))


# --- hostile field types --------------------------------------------------------------------------------
# A custom resource's status is whatever its controller (or anyone with write access) stored: the API
# server checks types only where a schema says so. The waiter and `krmfn status` judge every member, so a
# wrong type anywhere must read as absent (or as what the value says), never raise.

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
FIELDS = {
    "metadata": ("generation", "deletionTimestamp"),
    "spec": ("replicas", "paused", "suspend", "updateStrategy"),
    "status": (
        "observedGeneration", "conditions", "replicas", "updatedReplicas", "availableReplicas",
        "readyReplicas", "succeeded", "active", "failed", "failedIndexes", "phase", "reason",
        "desiredNumberScheduled", "updatedNumberScheduled", "numberAvailable", "updateRevision",
    ),
}  # fmt: skip
KINDS = [
    ("batch/v1", "Job"), ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"),
    ("apps/v1", "ReplicaSet"), ("v1", "Pod"), ("v1", "PersistentVolumeClaim"), ("v1", "Namespace"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"), ("example.com/v1", "Widget"),
]  # fmt: skip


def _hostile_object(draw: st.DrawFn) -> dict[str, Any]:
    api_version, kind = draw(st.sampled_from(KINDS))
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    for name, keys in FIELDS.items():
        if draw(st.booleans()):
            obj[name] = draw(junk)  # the whole field of a wrong type
        else:
            obj[name] = {key: draw(junk) for key in keys if draw(st.booleans())}
            if name == "spec" and draw(st.booleans()):
                obj[name]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": draw(junk)}
            if name == "status" and draw(st.booleans()):
                obj[name]["conditions"] = [
                    {"type": draw(st.sampled_from(["Ready", "Stalled", "Failed", "Complete", "Established",
                                                   "Progressing", "NamesAccepted"])),
                     "status": draw(junk), "reason": draw(junk), "message": draw(junk)}
                    for _ in range(draw(st.integers(0, 2)))
                ]  # fmt: skip
    return obj


@settings(max_examples=400, deadline=None)
@given(obj=st.composite(_hostile_object)())
def test_any_field_type_gives_a_health_never_an_exception(obj: dict[str, Any]) -> None:
    found = health(obj)
    assert found.state in ("current", "in-progress", "failed", "not-found")
    assert isinstance(found.message, str)


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        pytest.param("Widget", {"observedGeneration": "x"}, id="generation-text"),
        pytest.param("Widget", {"observedGeneration": {}}, id="generation-mapping"),
        pytest.param("Deployment", {"observedGeneration": 2, "replicas": "3"}, id="replicas-text"),
    ],
)
def test_a_wrong_type_reads_as_absent(kind: str, status: dict[str, Any]) -> None:
    group = "example.com/v1" if kind == "Widget" else "apps/v1"
    obj = {"apiVersion": group, "kind": kind, "metadata": {"generation": 2}, "spec": {"replicas": "3"},
           "status": status}  # fmt: skip
    assert health(obj).state in ("current", "in-progress")


@settings(max_examples=300, deadline=None)
@given(
    counted=st.dictionaries(st.sampled_from(["active", "succeeded", "failed"]), st.integers(0, 3)),
    uncounted=st.dictionaries(st.sampled_from(["succeeded", "failed"]), st.integers(0, 3)),
    condition=st.sampled_from([None, "Complete", "SuccessCriteriaMet"]),
)
def test_job_counts_include_the_pods_the_controller_has_not_counted_yet(
    counted: dict[str, int], uncounted: dict[str, int], condition: str | None
) -> None:
    """Issue 34: the Job controller writes SuccessCriteriaMet in the update that lists the finished pod in
    status.uncountedTerminatedPods, before status.succeeded counts it: the message said "0 succeeded"."""
    status: dict[str, Any] = dict(counted)
    status["uncountedTerminatedPods"] = {k: [f"uid-{k}-{i}" for i in range(n)] for k, n in uncounted.items()}
    found = health(job(*([cond(condition)] if condition else []), **status))
    pods = {k: counted.get(k, 0) + uncounted.get(k, 0) for k in ("active", "succeeded", "failed")}
    if condition is not None:
        assert f"({pods['succeeded']} succeeded)" in found.message, found
        return
    shown = {
        word: int(number) for number, word in re.findall(r"(\d+) (active|succeeded|failed)", found.message)
    }
    assert shown == {k: n for k, n in pods.items() if n}, found


def test_a_job_that_met_its_criteria_counts_its_uncounted_pod() -> None:
    found = health(job(cond("SuccessCriteriaMet"), uncountedTerminatedPods={"succeeded": ["uid-1"]}))
    assert found.message == "success criteria met (1 succeeded); remaining pods stopping"
