"""Waiting for many objects on the real control plane: one watch per kind and namespace, not one per object
(issue 20), with every object's health still followed to the end."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lightkube.models.rbac_v1 import PolicyRule

from krmfn.runner.cluster.api import Resource, WatchEvent
from krmfn.runner.cluster.kube import HttpApi, load_config
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.events import Event, Status
from krmfn.runner.plan import build_plan

from .cluster import Cluster
from .patience import STEP_TIMEOUT_SECONDS
from .runner_fixtures import Apply, deployer_kubeconfig, deployment, final_wait, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)


class CountingApi(HttpApi):
    """The real HTTP API, with each watch request it opens recorded."""

    watches: list[tuple[str, str]]
    lists: list[tuple[str, str]]

    def list(self, res: Resource, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        self.lists.append((res.plural, label_selector))
        return super().list(res, namespace, label_selector)

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        self.watches.append((res.plural, name))
        return super().watch(res, name, namespace, resource_version, stop)


def test_a_step_of_many_deployments_and_jobs_waits_with_one_watch_per_kind(
    kubeconfig: Path, namespace: str
) -> None:
    docs = [final_wait(deployment(f"web-{i}", 0, replicas=1)) for i in range(12)]
    docs += [job(f"task-{i}", 0) for i in range(4)]
    api = CountingApi(load_config(str(kubeconfig), None))
    api.watches, api.lists = [], []
    events: list[Event] = []
    plan = build_plan(docs, namespace=namespace, default_timeout=STEP_TIMEOUT_SECONDS)
    try:
        result = Runner(api, Options(namespace=namespace, applyset="watches"), events.append).run(plan)
    finally:
        api.close()
    assert result.ok, result.error
    current = {e.object for e in events if isinstance(e, Status) and e.state == "current"}
    assert len(current) == 16  # every object was followed until healthy
    # One watch of each collection (a dropped one may be resumed), none by object name.
    assert {name for _, name in api.watches} == {""}
    assert sorted(set(api.watches)) == [("deployments", ""), ("jobs", "")]
    assert len(api.watches) <= 4, api.watches


def test_rbac_that_grants_watch_by_name_only_still_waits_for_every_object(
    apply: Apply, cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """A deployer allowed to watch its Deployments only by name (``resourceNames``): the collection's
    watch is forbidden, so each object is watched by name, and the step still waits to the end."""
    names = [f"web-{i}" for i in range(3)]
    verbs = ["get", "list", "create", "update", "patch", "delete"]
    rules = [
        PolicyRule(apiGroups=[""], resources=["configmaps", "secrets"], verbs=verbs),
        PolicyRule(apiGroups=["apps"], resources=["deployments"], verbs=verbs),
        PolicyRule(apiGroups=["apps"], resources=["deployments"], verbs=["watch"], resourceNames=names),
    ]
    kubeconfig = deployer_kubeconfig(cluster, namespace, tmp_path / "deployer.kubeconfig", rules)
    docs = [final_wait(deployment(name, 0, replicas=1)) for name in names]
    out = apply(docs, "--kubeconfig", str(kubeconfig))
    assert out.code == 0, out.error
    healthy = {e["object"] for e in out.of("status") if e["state"] == "current"}
    assert healthy == {f"Deployment.apps {namespace}/{name}" for name in names}


def test_the_pods_of_running_jobs_are_listed_with_one_request_per_namespace(
    kubeconfig: Path, namespace: str
) -> None:
    """A Job's pods are listed every second while it runs (to show failures as they happen): for a step
    of several Jobs that is one list of all their pods, not one per Job."""
    names = [f"slow-{i}" for i in range(3)]
    docs = [final_wait(job(name, 0, slow="3s")) for name in names]
    api = CountingApi(load_config(str(kubeconfig), None))
    api.watches, api.lists = [], []
    plan = build_plan(docs, namespace=namespace, default_timeout=STEP_TIMEOUT_SECONDS)
    try:
        result = Runner(api, Options(namespace=namespace, applyset="pods"), lambda event: None).run(plan)
    finally:
        api.close()
    assert result.ok, result.error
    pod_lists = [selector for plural, selector in api.lists if plural == "pods"]
    assert pod_lists, "the running Jobs' pods were never listed"
    # The first poll asks for all three; later ones for those still running (all three, as they finish
    # together here, or fewer).
    assert pod_lists[0] == "batch.kubernetes.io/job-name in (slow-0,slow-1,slow-2)"
    per_poll = [len(s.partition("(")[2].rstrip(")").split(",")) if " in (" in s else 1 for s in pod_lists]
    assert sum(per_poll) > len(pod_lists), pod_lists  # requests shared between Jobs, not one per Job
