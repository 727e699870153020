"""The runner's pure Job rules (krmfn/runner/engine/jobs.py): run hashes, outcomes, immutability errors, and
what a Job's pods say about why it fails. tests/cluster/test_apply_jobs.py runs the same on the real control
plane; these cases pin the pod statuses a kubelet writes that kwok does not (init containers, evictions)."""

from __future__ import annotations

from typing import Any

import pytest

from krmfn.k8s.jobspec import IMMUTABLE_SPEC_FIELDS, MUTABLE_SPEC_FIELDS
from krmfn.runner.engine import jobs

SPEC: dict[str, Any] = {
    "backoffLimit": 1,
    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "app:1"}]}},
}


def job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {**SPEC, **spec}}


def test_the_run_hash_ignores_exactly_the_fields_a_live_job_may_change() -> None:
    base = jobs.run_hash(job())
    for field in MUTABLE_SPEC_FIELDS:
        assert jobs.run_hash(job(**{field: 5})) == base, field
    for field in IMMUTABLE_SPEC_FIELDS:
        assert jobs.run_hash(job(**{field: 5})) != base, field
    assert jobs.legacy_spec_hash(job(ttlSecondsAfterFinished=5)) != jobs.legacy_spec_hash(job())


@pytest.mark.parametrize(
    ("conditions", "outcome"),
    [
        ([], None),
        ([("Complete", "True")], "completed"),
        ([("SuccessCriteriaMet", "True")], "completed"),
        ([("FailureTarget", "True")], "failed"),
        ([("Failed", "True")], "failed"),
        ([("Failed", "False"), ("Suspended", "True")], None),
    ],
)
def test_outcome(conditions: list[tuple[str, str]], outcome: str | None) -> None:
    live = {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}
    assert jobs.outcome_of(live) == outcome


@pytest.mark.parametrize(
    ("message", "immutable"),
    [
        ('Job.batch "m" is invalid: spec.template: Invalid value: {}: field is immutable', True),
        ('Deployment.apps "w" is invalid: spec.selector: Invalid value: {}: field is immutable', True),
        ("spec: Forbidden: updates to statefulset spec for fields other than 'replicas' are forbidden", True),
        ('RoleBinding "r" is invalid: roleRef: Invalid value: {}: cannot change roleRef', True),
        ("spec.size: Invalid value: 3: immutable field, set once", True),
        (
            'Job.batch "m" is invalid: spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0',  # noqa: E501
            False,
        ),
    ],
)
def test_immutable_errors(message: str, immutable: bool) -> None:
    assert jobs.is_immutable_error(message) is immutable


def pod(
    name: str, phase: str, *containers: dict[str, Any], created: str = "1", **extra: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created, **extra.pop("meta", {})}
    return {"metadata": meta, "status": {"phase": phase, "containerStatuses": list(containers), **extra}}


def exited(code: int, reason: str = "Error") -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": reason}}


def test_a_container_restarted_in_place_reports_its_own_exit_code_not_the_kill() -> None:
    # restartPolicy OnFailure: the container exits 3 and restarts; when the Job fails, its pods are
    # killed (exit 137). The true reason is in lastState.
    killed = pod("m-x", "Failed", {"name": "main", "restartCount": 2, "state": exited(137),
                                   "lastState": exited(3)})  # fmt: skip
    [problem] = jobs.pod_problems([killed])
    assert problem.why == (
        "Error (exit code 3), restarted 2 times; its last run ended with Error (exit code 137)"
    )
    assert problem.previous  # its logs are the previous container's
    crash_looping = pod("m-y", "Running", {"name": "main", "restartCount": 1, "lastState": exited(3),
                                          "state": {"waiting": {"reason": "CrashLoopBackOff"}}})  # fmt: skip
    [problem] = jobs.pod_problems([crash_looping])
    assert problem.describe() == "pod m-y container main: Error (exit code 3), restarted 1 time"


def test_failed_pods_oldest_first_with_init_containers_indexes_and_evictions() -> None:
    first = pod("m-a", "Failed", {"name": "main", "state": exited(1)}, created="1",
                meta={"annotations": {jobs.COMPLETION_INDEX: "2"}},
                initContainerStatuses=[{"name": "init", "state": exited(0, "Completed")}])  # fmt: skip
    evicted = pod("m-b", "Failed", created="2", reason="Evicted", message="low on memory")
    running = pod("m-c", "Running", {"name": "main", "state": {"running": {}}}, created="0")
    pulling = pod("m-d", "Pending", {"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff",
                                                                             "message": "no such image"}}},
                  created="3")  # fmt: skip
    found = [p.describe() for p in jobs.pod_problems([evicted, pulling, first, running])]
    assert found == [
        "pod m-a (index 2) container main: Error (exit code 1)",
        "pod m-b: Evicted: low on memory",
        "pod m-d container main: waiting: ImagePullBackOff: no such image",
    ]


def test_pod_failure_policy_matches_as_the_job_controller_does() -> None:
    spec = {
        "podFailurePolicy": {
            "rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                {
                    "action": "FailJob",
                    "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]},
                },
                {"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
            ]
        }
    }
    ignored = pod("a", "Failed", {"name": "main", "state": exited(3)})
    fatal = pod("b", "Failed", {"name": "main", "state": exited(42)})
    counted = pod("c", "Failed", {"name": "main", "state": exited(1)})
    disrupted = pod("d", "Failed", {"name": "main", "state": exited(1)},
                    conditions=[{"type": "DisruptionTarget", "status": "True"}])  # fmt: skip
    actions = [jobs.policy_action(spec, p) for p in (ignored, fatal, counted, disrupted)]
    assert actions == ["Ignore", "FailJob", None, "Ignore"]
    problems = jobs.pod_problems([ignored], spec)
    assert problems[0].describe().endswith("(ignored by the podFailurePolicy: not counted as a failure)")
    assert jobs.summary(problems * 3).startswith(
        "3 pod failures (3 ignored by the podFailurePolicy), latest: "
    )
