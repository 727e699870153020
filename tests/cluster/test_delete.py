"""`krmfn delete` on the control plane: reverse step order seen by watches, another app untouched, a
finalizer that holds, a second delete of a gone app, and a dry run that deletes nothing (issue 33).

The order is read from the API server itself: every DELETED watch event carries the etcd revision of the
deletion as its resourceVersion, one counter for every kind, so sorting the events of several watches by
it gives the order the deletions happened in, whatever thread saw them first.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Pod, Secret
from lightkube.types import PatchType

from krmfn.runner.commands import delete_cmd
from krmfn.runner.inventory.applyset import PART_OF, applyset_id

from .objects import annotations_of, exists, meta
from .runner_fixtures import Apply, Background, Outcome, configmap, deployment, inventory_problems
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

HOLD = "test.krmfn.dev/hold"
Kind = type[ConfigMap] | type[Deployment] | type[Pod] | type[Secret]


def delete(kubeconfig: Path, namespace: str, *flags: str, applyset: str = "krmfn") -> Outcome:
    argv = ["delete", "-n", namespace, "--kubeconfig", str(kubeconfig), "-o", "json", "--applyset", applyset,
            *flags]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = delete_cmd.main(argv)
    return Outcome(code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue())


def spawn_delete(kubeconfig: Path, namespace: str, *flags: str) -> Background:
    argv = [str(Path(sys.executable).parent / "krmfn"), "delete", "-n", namespace, "--kubeconfig",
            str(kubeconfig), "-o", "json", "--applyset", "krmfn", *flags]  # fmt: skip
    return Background(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))


class Deletions:
    """DELETED events of some kinds in a namespace, from watches opened before the delete: ``ready``
    once each watch has listed what it starts from (its ADDED events for the objects there)."""

    def __init__(self, client: Client, namespace: str, expected: dict[Kind, int]) -> None:
        self.seen: list[tuple[int, str, str]] = []
        self._lock = threading.Lock()
        self._ready = {res: threading.Event() for res in expected}
        for res, count in expected.items():
            threading.Thread(target=self._watch, args=(client, res, namespace, count), daemon=True).start()

    def _watch(self, client: Client, res: Kind, namespace: str, count: int) -> None:
        with contextlib.suppress(Exception):  # the watch outlives its test: the cluster stops under it
            self._follow(client, res, namespace, count)

    def _follow(self, client: Client, res: Kind, namespace: str, count: int) -> None:
        added = 0
        obj: Any
        for op, obj in client.watch(res, namespace=namespace):
            if op == "ADDED":
                added += 1
                if added >= count:
                    self._ready[res].set()
            if op == "DELETED":
                with self._lock:
                    self.seen.append(
                        (int(meta(obj).resourceVersion or 0), res.__name__, meta(obj).name or "")
                    )

    def wait_ready(self) -> None:
        for res, ready in self._ready.items():
            assert ready.wait(60), f"the watch of {res.__name__} never listed its objects"

    def order(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(kind, name) for _, kind, name in sorted(self.seen)]


def _deleted(out: Outcome) -> list[str]:
    return [e["object"] for e in out.of("delete") if e["action"] == "deleted"]


def test_delete_goes_in_reverse_step_order_and_a_workloads_pods_go_first(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str
) -> None:
    docs = [configmap("base", 0, a="1"), configmap("middle", 1, a="1"), configmap("top", 2, a="1"),
            deployment("web", 2, replicas=2), configmap("unstepped", None, a="1")]  # fmt: skip
    assert (out := apply(docs)).code == 0, out.error
    deletions = Deletions(kube_client, namespace, {ConfigMap: 4, Deployment: 1, Pod: 2})
    deletions.wait_ready()

    out = delete(kubeconfig, namespace)

    assert out.code == 0, (out.error, out.stderr)
    order = deletions.order()
    configmaps = [name for kind, name in order if kind == "ConfigMap" and name != "kube-root-ca.crt"]
    assert configmaps == ["top", "middle", "base", "unstepped"], order
    pods = [i for i, (kind, _) in enumerate(order) if kind == "Pod"]
    web = order.index(("Deployment", "web"))
    assert len(pods) == 2 and max(pods) < web, order  # foreground: the pods were gone before the Deployment
    assert web < order.index(("ConfigMap", "middle")), order  # step 2 wholly gone before step 1 started
    # The events say the same order, each step done before the next starts.
    assert [(e["stepName"], e["result"]) for e in out.of("step-done")] == [
        ("step2", "deleted"), ("step1", "deleted"), ("step0", "deleted"), ("default", "deleted")
    ]  # fmt: skip
    assert _deleted(out)[-1] == f"Secret {namespace}/krmfn"  # the inventory last
    assert out.result["ok"] and out.result["inventory"] == "deleted" and len(out.result["deleted"]) == 5
    assert not exists(kube_client, Secret, "krmfn", namespace)
    assert not list(
        kube_client.list(ConfigMap, namespace=namespace, labels={PART_OF: applyset_id("krmfn", namespace)})
    )

    # status: the app is gone; a second delete has nothing to do, and says so with exit 0.
    from krmfn.runner.commands import status_cmd

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = status_cmd.main(
            ["status", "-n", namespace, "--kubeconfig", str(kubeconfig), "--applyset", "krmfn"]
        )
    assert code == 1 and "no inventory" in err.getvalue() and "deleted" in err.getvalue(), err.getvalue()
    again = delete(kubeconfig, namespace)
    assert again.code == 0, again.stderr
    assert again.result["inventory"] == "absent" and again.result["deleted"] == [] and again.result["ok"]
    assert not again.of("delete")


def test_another_apps_objects_in_the_same_namespace_are_untouched(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str
) -> None:
    assert (out := apply([configmap("mine", 0, a="1"), configmap("shared-name", 1, a="1")])).code == 0, (
        out.error
    )
    other = [configmap("theirs", 0, a="1"), deployment("their-web", 1, replicas=1)]
    assert (out := apply(other, "--applyset", "other")).code == 0, out.error
    before = {(res.__name__, name): written(kube_client, res, name, namespace) for res, name in THEIRS}

    out = delete(kubeconfig, namespace)

    assert out.code == 0, out.error
    assert sorted(_deleted(out)) == sorted(
        [f"ConfigMap {namespace}/mine", f"ConfigMap {namespace}/shared-name", f"Secret {namespace}/krmfn"]
    )
    after = {(res.__name__, name): written(kube_client, res, name, namespace) for res, name in THEIRS}
    assert after == before  # not even written to
    assert inventory_problems(kube_client, namespace, "other") == []


def written(client: Client, res: Kind, name: str, namespace: str) -> tuple[str, str, list[str]]:
    """What a client's write changes: the uid, the generation (its spec) and who manages which fields.
    Not the resourceVersion: the Deployment controller writes the status of a Deployment all along."""
    m = meta(client.get(res, name, namespace=namespace))
    managers = sorted(f"{f.manager}/{f.operation}/{f.subresource}" for f in m.managedFields or [])
    return str(m.uid), str(m.generation), managers


THEIRS: list[tuple[Kind, str]] = [(ConfigMap, "theirs"), (Deployment, "their-web"), (Secret, "other")]


def _hold(client: Client, name: str, namespace: str, finalizers: list[str]) -> None:
    client.patch(ConfigMap, name, {"metadata": {"finalizers": finalizers}}, namespace=namespace,
                 patch_type=PatchType.MERGE)  # fmt: skip


def test_a_finalizer_that_holds_makes_delete_wait_then_it_completes_once_removed(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str
) -> None:
    assert (out := apply([configmap("first", 0, a="1"), configmap("held", 1, a="1")])).code == 0, out.error
    _hold(kube_client, "held", namespace, [HOLD])

    run = spawn_delete(kubeconfig, namespace)
    try:
        waiting = run.until(lambda e: e["type"] == "status" and HOLD in e["message"])
        assert waiting["object"] == f"ConfigMap {namespace}/held"
        # While the finalizer holds, the next step has not started and the inventory still stands.
        assert exists(kube_client, ConfigMap, "first", namespace)
        assert exists(kube_client, Secret, "krmfn", namespace)
        assert not any(e["type"] == "step-start" and e["stepName"] == "step0" for e in run.events)
        _hold(kube_client, "held", namespace, [])
        done = run.finish()
    finally:
        if run.proc.poll() is None:
            run.kill()
    assert done.code == 0, (done.events, done.stderr)
    assert _deleted(done) == [f"ConfigMap {namespace}/held", f"ConfigMap {namespace}/first",
                              f"Secret {namespace}/krmfn"]  # fmt: skip
    assert not exists(kube_client, ConfigMap, "first", namespace)


def test_a_step_that_times_out_on_a_finalizer_leaves_the_inventory_and_a_record(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str
) -> None:
    assert (out := apply([configmap("first", 0, a="1"), configmap("held", 1, a="1")])).code == 0, out.error
    _hold(kube_client, "held", namespace, [HOLD])

    out = delete(kubeconfig, namespace, "--step-timeout", "1s")  # timeout under test

    assert out.code == 1, out.events
    assert "not gone after 1s" in out.error and HOLD in out.error and "run krmfn delete again" in out.error
    assert out.result["failedStepName"] == "step1"
    assert exists(kube_client, ConfigMap, "first", namespace)  # the next step never started
    notes = annotations_of(kube_client.get(Secret, "krmfn", namespace=namespace))
    runs = json.loads(notes["krmfn.dev/runs"])
    assert runs[-1]["command"] == "delete" and runs[-1]["result"] == "timeout", runs[-1]
    assert runs[-1]["failedStep"] == "step1"
    assert inventory_problems(kube_client, namespace) == []  # the lock released, the members still listed

    _hold(kube_client, "held", namespace, [])
    again = delete(kubeconfig, namespace)
    assert again.code == 0, again.error
    assert f"ConfigMap {namespace}/first" in _deleted(again)
    assert not exists(kube_client, Secret, "krmfn", namespace)


def test_dry_run_lists_the_order_and_deletes_nothing(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str
) -> None:
    docs = [configmap("base", 0, a="1"), deployment("web", 1, replicas=1), configmap("conf", 1, a="1"),
            configmap("top", 2, a="1")]  # fmt: skip
    assert (out := apply(docs)).code == 0, out.error
    parent = kube_client.get(Secret, "krmfn", namespace=namespace)

    out = delete(kubeconfig, namespace, "--dry-run")

    assert out.code == 0, out.error
    listed = [(e["stepName"], e["object"]) for e in out.of("delete") if e["step"] is not None]
    assert listed == [
        ("step2", f"ConfigMap {namespace}/top"),
        ("step1", f"Deployment.apps {namespace}/web"),  # a workload before the config it reads
        ("step1", f"ConfigMap {namespace}/conf"),
        ("step0", f"ConfigMap {namespace}/base"),
    ]
    assert all(e["dryRun"] for e in out.of("delete"))
    assert out.of("delete")[-1]["object"] == f"Secret {namespace}/krmfn"
    assert out.result["inventory"] == "would delete" and out.result["dryRun"]
    kept: list[tuple[Kind, str]] = [
        (ConfigMap, "base"),
        (ConfigMap, "conf"),
        (ConfigMap, "top"),
        (Deployment, "web"),
    ]
    for res, name in kept:
        assert exists(kube_client, res, name, namespace)
    # Not even the lock was taken: the parent is as it was.
    assert (
        meta(kube_client.get(Secret, "krmfn", namespace=namespace)).resourceVersion
        == meta(parent).resourceVersion
    )


def test_delete_refuses_without_an_app_name(
    kubeconfig: Path, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = delete_cmd.main(["delete", "-n", namespace, "--kubeconfig", str(kubeconfig)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--applyset" in err, err
