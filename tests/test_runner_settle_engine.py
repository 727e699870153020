"""The engine's wait path with the settle rule and the fail-fast reasons (settle.py), against FakeApi with
Deployments: the pods a list answers change from one look to the next as a kubelet's would, and the
clock moves a fixed step at each reading, so a settle window passes in a known number of looks. The
same on a real kubelet: tests/cluster/test_real_node_pods.py."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fake_kube import FakeApi

from krmfn.runner.cluster.api import Resource, WatchEvent
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.errors import StepFailed, StepTimeout
from krmfn.runner.events import Event, Status
from krmfn.runner.plan import build_plan

Doc = dict[str, Any]
DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments", True)
REPLICASETS = Resource("apps", "v1", "ReplicaSet", "replicasets", True)
REVISION = "deployment.kubernetes.io/revision"


class Ticking:
    """A clock that moves ``step`` seconds at each reading (and by what is slept)."""

    def __init__(self, step: float = 0.05) -> None:
        self.now, self.step = 1000.0, step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Kubelet(FakeApi):
    """FakeApi serving Deployments whose controller reports them rolled out at once, and whose pods
    (one ReplicaSet's) are ``looks[i]`` at the i-th list of pods (the last one from then on)."""

    def __init__(self, looks: list[list[Doc]], rolled_out: bool = True) -> None:
        super().__init__("apps")
        for res in (DEPLOYMENTS, REPLICASETS):
            self._by_kind[(res.api_version, res.kind)] = res
        self.looks, self.pod_lists = looks, 0
        self.rolled_out = rolled_out
        self.controllers.append(self._deployment_controller)

    def resource_for_group_kind(self, group: str, kind: str) -> Resource:
        for res in (DEPLOYMENTS, REPLICASETS):
            if (res.group, res.kind) == (group, kind):
                return res
        return super().resource_for_group_kind(group, kind)

    def _deployment_controller(self, obj: Doc) -> None:
        if obj["kind"] != "Deployment":
            return
        obj["metadata"].setdefault("annotations", {})[REVISION] = "1"
        available = 1 if self.rolled_out else 0
        obj["status"] = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                         "availableReplicas": available}  # fmt: skip

    def list(self, res: Resource, namespace: str, label_selector: str) -> list[Doc]:
        if res.kind == "ReplicaSet":
            web = self.object("apps/v1", "Deployment", "apps", "web")
            assert web is not None
            owners = [{"uid": web["metadata"]["uid"]}]
            meta = {
                "name": "web-7d9",
                "uid": "rs-1",
                "ownerReferences": owners,
                "annotations": {REVISION: "1"},
            }
            return [{"metadata": meta}]
        if res.kind == "Pod" and "job-name" not in label_selector:
            self.pod_lists += 1
            return copy.deepcopy(self.looks[min(self.pod_lists, len(self.looks)) - 1])
        return super().list(res, namespace, label_selector)

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        stop.wait()
        return iter(())


def pod(restarts: int = 0, ready: bool = True, waiting: str | None = None) -> Doc:
    state: Doc = {"waiting": {"reason": waiting, "message": "back-off 10s"}} if waiting else {"running": {}}
    last = {"terminated": {"reason": "Error", "exitCode": 1}} if restarts else {}
    container = {"name": "app", "restartCount": restarts, "ready": ready, "state": state, "lastState": last}
    return {"metadata": {"name": "web-7d9-x2", "uid": "p1", "ownerReferences": [{"uid": "rs-1"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "containerStatuses": [container]}}  # fmt: skip


def web(**notes: str) -> Doc:
    labels = {"app": "web"}
    meta = {"name": "web", "namespace": "apps", "annotations": {"krmfn.dev/step-timeout": "1m", **notes}}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app"}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}}  # fmt: skip


def run(api: Kubelet, doc: Doc) -> tuple[Any, list[Status]]:
    events: list[Event] = []
    plan = build_plan([doc], namespace="apps", default_timeout=60, wait=True)
    result = Runner(api, Options(namespace="apps", applyset="web"), events.append, clock=Ticking()).run(plan)
    return result, [e for e in events if isinstance(e, Status)]


def test_rolled_out_with_steady_pods_is_healthy_after_the_window() -> None:
    result, statuses = run(Kubelet([[pod()]]), web(**{"krmfn.dev/settle": "2s"}))
    assert result.ok, result.error
    assert [s.state for s in statuses] == ["in-progress", "current"]
    assert "settling: no container restart for 2s" in statuses[0].message
    assert statuses[-1].message == "rolled out (1 available), held for 2s"


def test_a_pod_ready_for_a_moment_between_restarts_fails_the_step_on_its_crash_loop() -> None:
    api = Kubelet([[pod()], [pod(restarts=1)], [pod(restarts=1, ready=False, waiting="CrashLoopBackOff")]])
    result, statuses = run(api, web())
    assert isinstance(result.error, StepFailed)
    assert all(s.state != "current" for s in statuses), statuses
    assert str(result.error) == (
        "step default: Deployment.apps apps/web failed: pod web-7d9-x2 container app: CrashLoopBackOff: "
        "back-off 10s (restarted 1 time, last run: Error (exit code 1))"
    )


def test_a_restart_budget_lets_a_crash_loop_go_on_until_it_is_spent() -> None:
    looks = [[pod(restarts=n, ready=False, waiting="CrashLoopBackOff" if n else None)] for n in range(5)]
    result, _ = run(Kubelet(looks), web(**{"krmfn.dev/max-restarts": "2"}))
    assert isinstance(result.error, StepFailed)
    assert "3 container restarts during the wait, more than krmfn.dev/max-restarts: 2" in str(result.error)


def test_a_timeout_says_why_the_workload_is_blocked() -> None:
    api = Kubelet([[pod(ready=False)]], rolled_out=False)
    result, _ = run(api, web(**{"krmfn.dev/step-timeout": "3s"}))
    assert isinstance(result.error, StepTimeout)
    assert str(result.error) == (
        "step default: not healthy after 3s: Deployment.apps apps/web: waits for 1 updated replicas "
        "available; now 0 of 1 updated replicas available; pod web-7d9-x2 not ready: container app "
        "running, readiness probe not passing"
    )


def steady_since(doc: Doc, when: str) -> Doc:
    doc["status"]["conditions"][0]["lastTransitionTime"] = when
    return doc


SERVER_NOW = datetime(2026, 12, 3, 8, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("second_apply", "server_now", "ready_since", "held"),
    [
        ("unchanged", SERVER_NOW, "2026-12-03T07:00:00Z", True),
        ("unchanged", SERVER_NOW, "2026-12-03T07:59:59Z", False),  # ready for 1 s of a 2 s window
        ("unchanged", None, "2026-12-03T07:00:00Z", False),  # the server's time not known
        ("changed", SERVER_NOW, "2026-12-03T07:00:00Z", False),  # a change rolls out: the window
    ],
    ids=["held-already", "ready-too-recently", "no-server-time", "changed"],
)
def test_an_unchanged_deployment_whose_pods_held_by_the_servers_clock_skips_the_window(
    second_apply: str, server_now: datetime | None, ready_since: str, held: bool
) -> None:
    api = Kubelet([[steady_since(pod(), ready_since)]])
    api.server_now = server_now
    first, _ = run(api, web(**{"krmfn.dev/settle": "2s"}))
    assert first.ok, first.error
    again = web(**{"krmfn.dev/settle": "2s"})
    if second_apply == "changed":
        again["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2"
    result, statuses = run(api, again)
    assert result.ok, result.error
    if held:
        assert [(s.state, s.message) for s in statuses] == [
            ("current", "rolled out (1 available), unchanged and held for 2s already")]  # fmt: skip
    else:
        assert [s.state for s in statuses] == ["in-progress", "current"], statuses
        assert statuses[-1].message == "rolled out (1 available), held for 2s"


def test_a_workload_that_wants_no_pods_has_nothing_to_settle() -> None:
    """Argo CD's guestbook set has a Deployment with ``replicas: 0``: no pod is wanted, so no window (seen
    on the control plane: 5 s for an unchanged one, up to 20 s for a new one, waiting for pods that never
    come)."""
    doc = web(**{"krmfn.dev/settle": "2s"})
    doc["spec"]["replicas"] = 0
    result, statuses = run(Kubelet([[]]), doc)
    assert result.ok, result.error
    assert [s.state for s in statuses] == ["current"], statuses
    assert "settling" not in statuses[0].message and "held for" not in statuses[0].message


class RollsOutLater(Kubelet):
    """The Deployment turns rolled out by a watch event after the first look at its pods, which found the
    pod not ready yet (on a cluster: the pod turns ready, then the Deployment's status follows)."""

    def __init__(self) -> None:
        super().__init__([[pod(ready=False)], [pod()]], rolled_out=False)

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        live = self.object("apps/v1", "Deployment", "apps", "web")
        assert live is not None
        rolled = copy.deepcopy(live)
        rolled["status"]["availableReplicas"] = 1
        rolled["metadata"]["resourceVersion"] = str(int(rolled["metadata"]["resourceVersion"]) + 1)
        yield ("MODIFIED", rolled)
        stop.wait()


def test_the_window_starts_when_the_rollout_ends_not_a_pod_poll_later() -> None:
    # bench/engines.py: a 5 s window held the next step 5.05-6.07 s, as the pods were looked at again only
    # at their next poll (1 s), the look before the status change showing a pod not ready yet.
    result, statuses = run(RollsOutLater(), web(**{"krmfn.dev/settle": "2s"}))
    assert result.ok, result.error
    messages = [s.message for s in statuses]
    behind = next(s for s in statuses if "rolled out (1 available), but pod" in s.message)
    settling = next(s for s in statuses if "settling: no container restart for 2s" in s.message)
    assert settling.elapsed - behind.elapsed < 0.5, messages  # a tick: 0.2 s and the readings of the loop
    assert statuses[-1].message == "rolled out (1 available), held for 2s"
