"""Pods that will not become healthy, on the real node (node.py): the kubelet's own crash loops, image and
config errors and readiness probes. Each step has a long timeout, so a failure within it is the runner's
fail-fast rule, not the timeout (settle.py, podtrouble.py). How fast: bench/fail_fast.py."""

from __future__ import annotations

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Pod

from .node import RealNode
from .objects import present
from .runner_fixtures import Apply, Doc, deployment, job, runs
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

LONG = "5m"
"""A step timeout no fail-fast test gets near: failing before it is the rule under test."""


@pytest.fixture
def namespace(real_namespace: str) -> str:
    return real_namespace


@pytest.fixture
def app(real_node: RealNode) -> str:
    return real_node.image("app")


def _long(doc: Doc, **notes: str) -> Doc:
    doc["metadata"].setdefault("annotations", {}).update({"krmfn.dev/step-timeout": LONG, **notes})
    return doc


def _states(events: list[Doc], ref: str) -> list[tuple[str, str]]:
    return [(e["state"], e["message"]) for e in events if e["type"] == "status" and e["object"] == ref]


def _restarts(client: Client, namespace: str, app: str) -> int:
    pods = client.list(Pod, namespace=namespace, labels={"app": app})
    return sum(c.restartCount for p in pods for c in present(p.status, "pod status").containerStatuses or [])


def test_a_deployment_whose_container_exits_at_once_is_never_reported_healthy(
    apply: Apply, kube_client: Client, namespace: str, app: str
) -> None:
    # Issue 32's case: no readiness probe, so the pod is Ready for a moment between restarts, and the
    # Deployment counts it available then. The step fails on the crash loop, never healthy before it.
    web = _long(runs(deployment("web", 0, replicas=1), app, "echo starting; exit 1"))
    out = apply([web], "--wait")
    assert out.code == 1, out.events
    assert out.step_results() == [("step0", "failed")]
    ref = f"Deployment.apps {namespace}/web"
    states = _states(out.events, ref)
    assert all(state != "current" for state, _ in states), states
    assert out.error.startswith(f"step step0: {ref} failed: pod web-")
    # The kubelet shows the back-off as the waiting reason for moments, as the ended run the rest of it:
    # whichever a look falls on (podtrouble.CRASH_LOOP).
    shown = ("container main: CrashLoopBackOff: back-off", "container main: CrashLoopBackOff: ended again")
    assert any(text in out.error for text in shown), out.error
    assert "last run: Error (exit code 1)" in out.error
    assert _restarts(kube_client, namespace, "web") >= 1  # the kubelet's restarts, not a simulation


def test_a_restart_budget_tolerates_crash_loops_up_to_max_restarts(
    apply: Apply, kube_client: Client, namespace: str, app: str
) -> None:
    web = _long(runs(deployment("web", 0, replicas=1), app, "exit 2"), **{"krmfn.dev/max-restarts": "1"})
    out = apply([web], "--wait")
    assert out.code == 1
    # The first crash loop (the kubelet's back-off after the second exit) was tolerated: only the second
    # restart spent the budget.
    assert "2 container restarts during the wait, more than krmfn.dev/max-restarts: 1" in out.error, out.error
    assert "container main restarted (2 restarts, last run: Error (exit code 2))" in out.error
    assert _restarts(kube_client, namespace, "web") >= 2


def test_a_job_whose_image_is_absent_fails_naming_the_image(apply: Apply, namespace: str) -> None:
    absent = _long(runs(job("migrate", 0), "krmfn.test/absent:never", "true"))
    out = apply([absent], "--wait")
    assert out.code == 1
    assert out.step_results() == [("step0", "failed")]
    assert out.error.startswith(f"step step0: Job.batch {namespace}/migrate failed: pod migrate-")
    assert "container main: ErrImageNeverPull: " in out.error
    assert "krmfn.test/absent:never" in out.error  # the kubelet's message names the image


def test_a_job_whose_configmap_is_missing_fails_naming_the_configmap(
    apply: Apply, namespace: str, app: str
) -> None:
    doc = _long(runs(job("migrate", 0), app, "env"))
    doc["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "settings"}}]
    out = apply([doc], "--wait")
    assert out.code == 1
    assert out.step_results() == [("step0", "failed")]
    assert 'container main: CreateContainerConfigError: configmap "settings" not found' in out.error, (
        out.error
    )


def test_a_step_timeout_says_why_each_object_is_blocked(apply: Apply, namespace: str, app: str) -> None:
    web = runs(deployment("web", 0, replicas=1), app, "trap 'exit 0' TERM; sleep infinity & wait")
    web["metadata"]["annotations"]["krmfn.dev/step-timeout"] = "6s"  # timeout under test
    probe = ["sh", "-c", "echo schema 9.9.9 missing; exit 1"]
    web["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = {"exec": {"command": probe},
                                                                          "periodSeconds": 1}  # fmt: skip
    out = apply([web], "--wait")
    assert out.code == 1
    assert out.step_results() == [("step0", "timeout")]
    where = f"step step0: not healthy after 6s: Deployment.apps {namespace}/web"
    now = "waits for 1 updated replicas available; now 0 of 1 updated replicas available; pod web-"
    assert f"{where}: {now}" in out.error, out.error
    assert out.error.endswith("not ready: readiness probe failed: schema 9.9.9 missing"), out.error


def test_a_deployment_whose_command_cannot_run_fails_with_the_runtimes_reason(
    apply: Apply, kube_client: Client, namespace: str, app: str
) -> None:
    # RunContainerError (the runtime cannot start the process), which the kubelet retries with a back-off
    # like a crash loop: the step fails on whichever the pod shows first, naming the absent command.
    web = _long(runs(deployment("web", 0, replicas=1), app, "true"))
    web["spec"]["template"]["spec"]["containers"][0]["command"] = ["/krmfn-absent-command"]
    out = apply([web], "--wait")
    assert out.code == 1, out.events
    assert out.step_results() == [("step0", "failed")]
    ref = f"Deployment.apps {namespace}/web"
    assert all(state != "current" for state, _ in _states(out.events, ref))
    assert out.error.startswith(f"step step0: {ref} failed: pod web-"), out.error
    reasons = ("container main: RunContainerError: ", "container main: CrashLoopBackOff: ended again")
    assert any(text in out.error for text in reasons), out.error
    assert "/krmfn-absent-command" in out.error, out.error  # the runtime's message names the command


@pytest.mark.parametrize("missing", ["image", "secret"])
def test_a_deployment_whose_pods_cannot_start_fails_with_the_reason(
    apply: Apply, namespace: str, app: str, missing: str
) -> None:
    # The workload path (settle.py's fail-fast rule), beside the Jobs' above.
    web = _long(runs(deployment("web", 0, replicas=1), app, "sleep infinity"))
    container = web["spec"]["template"]["spec"]["containers"][0]
    if missing == "image":
        container["image"] = "krmfn.test/absent:never"
        expected = "container main: ErrImageNeverPull: "
    else:
        container["env"] = [{"name": "DB", "valueFrom": {"secretKeyRef": {"name": "db", "key": "url"}}}]
        expected = 'container main: CreateContainerConfigError: secret "db" not found'
    out = apply([web], "--wait")
    assert out.code == 1, out.events
    assert out.step_results() == [("step0", "failed")]
    assert out.error.startswith(f"step step0: Deployment.apps {namespace}/web failed: pod web-"), out.error
    assert expected in out.error, out.error
