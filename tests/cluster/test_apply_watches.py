"""Waiting for many objects on the real control plane: one watch per kind and namespace, not one per object
(issue 20), with every object's health still followed to the end."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from krmfn.runner.api import Resource, WatchEvent
from krmfn.runner.engine import Options, Runner
from krmfn.runner.events import Event, Status
from krmfn.runner.kube import HttpApi, load_config
from krmfn.runner.plan import build_plan

from .runner_fixtures import deployment, final_wait, job


class CountingApi(HttpApi):
    """The real HTTP API, with each watch request it opens recorded."""

    watches: list[tuple[str, str]]

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
    api.watches = []
    events: list[Event] = []
    plan = build_plan(docs, namespace=namespace, default_timeout=60)
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
