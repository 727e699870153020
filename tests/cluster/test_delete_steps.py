"""`krmfn delete` and on-delete steps (set-steps' ``onDelete:``, ``krmfn.dev/on-delete``) on the control
plane: ``krmfn apply`` never creates them; ``krmfn delete -f`` runs them, each waited for, before the
teardown starts (seen from the API server: the Job's completion has a lower etcd revision than the first
deletion), a failing one stops the teardown (the app untouched) unless ``--force``, and a delete without
the render of an app that has some refuses (issue 33).

The order is read as tests/cluster/test_delete.py reads it: every watch event carries the etcd revision of
its write as its resourceVersion, one counter for every kind.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

from lightkube import Client
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Secret

from krmfn.yaml.io import dump_all_fast

from .objects import annotations_of, exists, meta, status_of
from .runner_fixtures import Apply, Doc, configmap, final_wait, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)
from .test_delete import delete

BACKUP = {"krmfn.dev/on-delete": "true", "krmfn.dev/step": "backup", "krmfn.dev/step-index": "0"}


def app(fail: bool = False) -> list[Doc]:
    return [configmap("config", 0, a="1"), final_wait(configmap("web", 1, a="1")),
            job("backup", annotations=dict(BACKUP), fail=fail)]  # fmt: skip


def render(tmp_path: Path, docs: list[Doc]) -> str:
    path = tmp_path / "render.yaml"
    path.write_text(dump_all_fast(docs))
    return str(path)


class Timeline:
    """Writes to Jobs and ConfigMaps in a namespace after the etcd revision ``since``: (revision, what),
    ``what`` being ``complete <job>`` when a Job is first seen Complete, ``deleted <kind> <name>``. The
    watches start at ``since``, so they miss nothing however late they connect."""

    def __init__(self, client: Client, namespace: str, since: str) -> None:
        self.seen: list[tuple[int, str]] = []
        self._changed = threading.Condition()
        for res in (Job, ConfigMap):
            threading.Thread(target=self._watch, args=(client, res, namespace, since), daemon=True).start()

    def _watch(self, client: Client, res: type[Job] | type[ConfigMap], namespace: str, since: str) -> None:
        with contextlib.suppress(Exception):  # the watch outlives its test: the cluster stops under it
            obj: Any
            for op, obj in client.watch(res, namespace=namespace, resource_version=since):
                revision, name = int(meta(obj).resourceVersion or 0), meta(obj).name or ""
                with self._changed:
                    if op == "DELETED":
                        self.seen.append((revision, f"deleted {res.__name__} {name}"))
                    elif (
                        res is Job and _complete(obj) and f"complete {name}" not in [w for _, w in self.seen]
                    ):
                        self.seen.append((revision, f"complete {name}"))
                    self._changed.notify_all()

    def order_once(self, last: str) -> list[str]:
        """What was seen, in etcd order, once ``last`` has been seen (the watches may lag the delete)."""
        with self._changed:
            assert self._changed.wait_for(lambda: last in [w for _, w in self.seen], 60), self.seen
            return [what for _, what in sorted(self.seen)]


def _complete(obj: Any) -> bool:
    return any(c.type == "Complete" and c.status == "True" for c in status_of(obj).conditions or [])


def test_apply_leaves_the_on_delete_job_out_and_delete_runs_it_before_the_teardown(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    docs = app()
    out = apply(docs)
    assert out.code == 0, out.error
    assert f"Job.batch {namespace}/backup" not in out.actions()
    assert not exists(kube_client, Job, "backup", namespace)
    parent = kube_client.get(Secret, "krmfn", namespace=namespace)
    assert annotations_of(parent)["krmfn.dev/on-delete-steps"] == "backup"
    timeline = Timeline(kube_client, namespace, since=str(meta(parent).resourceVersion))

    out = delete(kubeconfig, namespace, "-f", render(tmp_path, docs))

    assert out.code == 0, (out.error, out.stderr)
    order = timeline.order_once("deleted ConfigMap config")
    assert order[0] == "complete backup", order  # completed before anything was deleted
    assert order[1:] == ["deleted Job backup", "deleted ConfigMap web", "deleted ConfigMap config"], order
    # The events say the same: the on-delete step first, healthy, then the teardown's steps after it.
    assert [(e["step"], e["stepName"], e["result"]) for e in out.of("step-done")] == [
        (0, "backup", "healthy"), (1, "backup", "deleted"), (2, "step1", "deleted"), (3, "step0", "deleted"),
    ]  # fmt: skip
    assert out.result["onDelete"] == [{"stepName": "backup", "result": "healthy"}]
    assert out.result["inventory"] == "deleted" and not exists(kube_client, Secret, "krmfn", namespace)


def test_a_failing_on_delete_job_stops_the_teardown_and_force_goes_on(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    docs = app(fail=True)
    assert (out := apply(docs)).code == 0, out.error
    source = render(tmp_path, docs)

    out = delete(kubeconfig, namespace, "-f", source)

    assert out.code == 1, (out.result, out.stderr)
    assert (
        out.result["failedStepName"] == "backup" and "nothing of the app was deleted" in out.result["error"]
    )
    assert not out.of("delete")
    assert exists(kube_client, ConfigMap, "web", namespace) and exists(
        kube_client, Secret, "krmfn", namespace
    )
    record = annotations_of(kube_client.get(Secret, "krmfn", namespace=namespace))["krmfn.dev/runs"]
    assert '"command":"delete"' in record and '"failedStep":"backup"' in record

    out = delete(kubeconfig, namespace, "-f", source, "--force")

    assert out.code == 3, (out.result, out.stderr)
    assert out.result["ok"] and out.result["onDelete"] == [{"stepName": "backup", "result": "failed"}]
    assert "--force" in out.result["wentOn"]
    assert not exists(kube_client, ConfigMap, "web", namespace)
    assert not exists(kube_client, Job, "backup", namespace)  # deleted with the teardown, first
    assert not exists(kube_client, Secret, "krmfn", namespace)


def test_delete_without_the_render_of_an_app_with_on_delete_steps_refuses(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str
) -> None:
    assert (out := apply(app())).code == 0, out.error

    out = delete(kubeconfig, namespace)

    assert out.code == 2, (out.result, out.stderr)
    assert (
        "has on-delete steps (backup)" in out.result["error"] and "--skip-delete-steps" in out.result["error"]
    )
    assert exists(kube_client, ConfigMap, "web", namespace) and not exists(
        kube_client, Job, "backup", namespace
    )

    out = delete(kubeconfig, namespace, "--skip-delete-steps")

    assert out.code == 0, (out.result, out.stderr)
    assert not exists(kube_client, Job, "backup", namespace) and not exists(
        kube_client, Secret, "krmfn", namespace
    )
