"""``krmfn export resourceset`` output executed by the real Flux Operator (v0.58.1, built from the Go module
proxy by build-flux-operator.sh) on the test control plane.

The staged deploy (migration Job -> app -> warm-up Job) runs in order and ends Ready; a failing migration
stops the later steps; a changed ConfigMap gives a new hashed Job and the old one is garbage-collected.
Then every switch the export translates, one at a time: force, recreate-on-failure, per-step timeouts,
wait, ``<<`` escaping and several namespaces. What the operator does differently from ``krmfn apply`` is
in docs/engines.md. The tests need the ``flux_operator`` fixture: if the operator cannot be built or
started they error, never skip.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, Client
from lightkube.core.resource import NamespacedResource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Namespace
from lightkube.resources.rbac_authorization_v1 import ClusterRole

from krmfn.export import main as export
from krmfn.export import resourceset
from krmfn.yaml.io import dump_all_fast

from .cluster import Cluster, ClusterError, build_flux_operator, wait_until
from .engines import (
    FIELD_MANAGER,
    TESTDATA,
    ResourceSet,
    condition,
    export_resourceset,
    get_rset,
    render,
    request_reconcile,
    wait_inventory,
    wait_ready,
    wait_settled,
)
from .objects import meta, status_of
from .runner_fixtures import configmap, final_wait, job

pytestmark = pytest.mark.cluster

Doc = dict[str, Any]


def _apply_rset(client: Client, rset: Doc) -> None:
    client.apply(ResourceSet.from_dict(rset), field_manager=FIELD_MANAGER)


def _exists(client: Client, kind: type[NamespacedResource], name: str, namespace: str) -> bool:
    try:
        client.get(kind, name, namespace=namespace)
    except ApiError as err:
        if err.status.code == 404:
            return False
        raise
    return True


def _job(client: Client, name: str, namespace: str) -> Doc:
    return dict(client.get(Job, name, namespace=namespace).to_dict())


def _stream(tmp_path: Path, namespace: str, *docs: Doc, name: str = "stream.yaml") -> Path:
    """``docs`` with ``namespace`` set where they have none, written as one rendered stream."""
    for doc in docs:
        doc["metadata"].setdefault("namespace", namespace)
    path = tmp_path / name
    path.write_text(dump_all_fast(list(docs)))
    return path


def _deploy(client: Client, tmp_path: Path, namespace: str, *docs: Doc, name: str = "app") -> Doc:
    """Exports ``docs`` as the ResourceSet ``name``, applies it and returns it once it settled."""
    rset = export_resourceset(
        _stream(tmp_path, namespace, *docs, name=f"{name}.yaml"), namespace, tmp_path, name
    )
    _apply_rset(client, rset)
    return wait_settled(client, name, namespace)


# --- the staged deploy ---------------------------------------------------------------------------------


def test_the_staged_deploy_runs_in_order_and_ends_ready(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    rset = export_resourceset(render(tmp_path, namespace, migration_runs_for="3s"), namespace, tmp_path)
    _apply_rset(kube_client, rset)

    # While the migration runs, nothing of the later steps exists.
    wait_until("the migration Job", lambda: _exists(kube_client, Job, "db-migration", namespace), 60)
    polls = 0
    while not status_of(kube_client.get(Job, "db-migration", namespace=namespace)).succeeded:
        assert not _exists(kube_client, Deployment, "app", namespace), (
            "the app exists before the migration ended"
        )
        assert not _exists(kube_client, ConfigMap, "warmup-script", namespace)
        polls += 1
        time.sleep(0.1)
    assert polls > 5  # the 3 s migration was watched, not missed

    wait_ready(kube_client, "app", namespace)
    migration = _job(kube_client, "db-migration", namespace)
    app = dict(kube_client.get(Deployment, "app", namespace=namespace).to_dict())
    warmup = _job(kube_client, "cache-warmup", namespace)
    assert migration["status"]["succeeded"] == 1
    assert migration["status"]["completionTime"] <= app["metadata"]["creationTimestamp"]
    available = next(c for c in app["status"]["conditions"] if c["type"] == "Available")
    assert available["status"] == "True"
    assert app["status"]["availableReplicas"] == 2
    assert available["lastTransitionTime"] <= warmup["metadata"]["creationTimestamp"]
    assert warmup["status"]["succeeded"] == 1  # spec.wait: Ready only once the final Job completed
    wait_inventory(
        kube_client,
        "app",
        namespace,
        [
            f"{namespace}_db-migration_batch_Job",
            f"{namespace}_warmup-script__ConfigMap",
            f"{namespace}_app__Service",
            f"{namespace}_app_apps_Deployment",
            f"{namespace}_cache-warmup_batch_Job",
        ],
    )
    # The heredoc's << reached the cluster as written, through the operator's templates.
    script = kube_client.get(ConfigMap, "warmup-script", namespace=namespace).data or {}
    assert script["warm.sh"].startswith("cat <<EOF > /tmp/paths\n")


def test_a_failing_migration_stops_the_later_steps_and_is_run_again(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    rset = export_resourceset(render(tmp_path, namespace, migration_fails=True), namespace, tmp_path)
    _apply_rset(kube_client, rset)
    failed = wait_settled(kube_client, "app", namespace)
    ready = condition(failed)
    assert ready["status"] == "False"
    assert ready["reason"] == "ReconciliationFailed"
    assert 'step "pre-deploy" health check failed' in ready["message"]
    assert f"Job/{namespace}/db-migration status: 'Failed'" in ready["message"]
    for kind, name in ((Deployment, "app"), (ConfigMap, "warmup-script"), (Job, "cache-warmup")):
        assert not _exists(kube_client, kind, name, namespace), f"{name} was applied after the failure"
    wait_inventory(kube_client, "app", namespace, [f"{namespace}_db-migration_batch_Job"])

    # recreateOnFailure (from krmfn.dev/recreate-on-failure): the operator retries on its own and deletes
    # the failed Job first, so the migration runs again from scratch (krmfn apply stops at the failure).
    first = meta(kube_client.get(Job, "db-migration", namespace=namespace)).uid

    def recreated() -> bool:
        try:
            return meta(kube_client.get(Job, "db-migration", namespace=namespace)).uid != first
        except ApiError:
            return False

    wait_until("the failed migration Job to be recreated", recreated, 60)
    assert not _exists(kube_client, Deployment, "app", namespace)


def test_a_changed_configmap_gives_a_new_hashed_job_and_the_old_one_is_collected(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    package = TESTDATA / "export-hashed-jobs"
    first = render(tmp_path, namespace, package=package, name="v1")
    _apply_rset(kube_client, export_resourceset(first, namespace, tmp_path))
    wait_ready(kube_client, "app", namespace)
    [old] = _job_names(kube_client, namespace)
    assert old.startswith("db-migration-")

    second = tmp_path / "v2-source"
    second.mkdir()
    for file in package.iterdir():
        (second / file.name).write_bytes(file.read_bytes())
    config = second / "config.yaml"
    config.write_text(config.read_text().replace("DATABASE_SCHEMA: v1", "DATABASE_SCHEMA: v2"))
    rendered = render(tmp_path, namespace, package=second, name="v2")
    _apply_rset(kube_client, export_resourceset(rendered, namespace, tmp_path))
    got = wait_settled(kube_client, "app", namespace)
    assert condition(got)["status"] == "True", condition(got)

    [new] = [name for name in _job_names(kube_client, namespace) if name != old] or [""]
    assert new.startswith("db-migration-")
    assert new != old
    job_ = _job(kube_client, new, namespace)
    assert job_["status"]["succeeded"] == 1
    entries = [
        f"{namespace}_{new}_batch_Job",
        f"{namespace}_db-config__ConfigMap",
        f"{namespace}_app_apps_Deployment",
    ]
    wait_inventory(kube_client, "app", namespace, entries)
    wait_until(f"the old Job {old} to be deleted", lambda: old not in _job_names(kube_client, namespace), 30)

    # Runs once: another reconciliation of the same spec leaves the completed Job alone.
    token = request_reconcile(kube_client, "app", namespace)
    wait_until(
        "the requested reconciliation",
        lambda: (
            (get_rset(kube_client, "app", namespace).get("status") or {}).get("lastHandledReconcileAt")
            == token
        ),
        60,
        interval=0.1,
    )
    again = _job(kube_client, new, namespace)
    assert again["metadata"]["uid"] == job_["metadata"]["uid"]
    assert again["status"]["succeeded"] == 1
    assert not again["status"].get("failed")


def _job_names(client: Client, namespace: str) -> list[str]:
    return sorted(meta(j).name or "" for j in client.list(Job, namespace=namespace))


# --- what the export translates -------------------------------------------------------------------------


def test_force_recreates_a_changed_job_and_without_it_the_step_fails(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    def jobs(image: str) -> list[Doc]:
        forced = job("forced", 0, image=image, annotations={"krmfn.dev/force": "enabled"})
        plain = job("plain", 1, image=image)
        return [forced, final_wait(plain)]

    assert condition(_deploy(kube_client, tmp_path, namespace, *jobs("app:1")))["status"] == "True"
    uids = {name: meta(kube_client.get(Job, name, namespace=namespace)).uid for name in ("forced", "plain")}

    got = _deploy(kube_client, tmp_path, namespace, *jobs("app:2"))
    ready = condition(got)
    assert ready["status"] == "False"
    assert 'step "step1" apply failed' in ready["message"]
    assert "field is immutable" in ready["message"]
    forced = kube_client.get(Job, "forced", namespace=namespace)
    assert meta(forced).uid != uids["forced"]  # deleted and created again with the new spec
    assert present_image(forced) == "app:2"
    assert meta(kube_client.get(Job, "plain", namespace=namespace)).uid == uids["plain"]


def present_image(obj: Job) -> str:
    spec = obj.spec
    assert spec is not None and spec.template.spec is not None
    return spec.template.spec.containers[0].image or ""


def test_a_step_timeout_fails_the_step_after_that_time(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    slow = job("slow", 0, slow="1h", timeout="3s")  # timeout under test
    after = final_wait(configmap("after", 1))
    start = time.monotonic()
    got = _deploy(kube_client, tmp_path, namespace, slow, after)
    elapsed = time.monotonic() - start
    ready = condition(got)
    assert ready["status"] == "False"
    assert 'step "step0" health check failed: timeout waiting for' in ready["message"]
    assert f"Job/{namespace}/slow status: 'InProgress'" in ready["message"]
    assert elapsed >= 3, elapsed  # and the message above says the timeout, not the 1h Job, ended it
    assert not _exists(kube_client, ConfigMap, "after", namespace)


@pytest.mark.parametrize("wait", [True, False])
def test_wait_decides_whether_ready_waits_for_the_final_step(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path, wait: bool
) -> None:
    first = configmap("first", 0)
    last = job("last", 1, slow="4s")
    got = _deploy(kube_client, tmp_path, namespace, first, final_wait(last) if wait else last)
    assert condition(got)["status"] == "True"
    assert got["spec"]["wait"] is wait
    status = _job(kube_client, "last", namespace)["status"]
    if wait:
        assert status["succeeded"] == 1
    else:
        assert not status.get("succeeded")  # Ready right after the apply; the Job may not even run yet


def test_template_delimiters_in_the_stream_reach_the_cluster_unchanged(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    data = {
        "heredoc.sh": "cat <<EOF\nhello\nEOF\n",
        "action": "<< inputs.tag >>",
        "raw": "<<`<<`>> stays as written",
        "many": "a<<<b <<<<c >> d<<",
        "trim": "<<- x -<< >>",
        "long": "word " * 30 + "<<end",
    }
    cm = final_wait(configmap("templated", 0, annotations={"example.com/note": "x << y"}, **data))
    got = _deploy(kube_client, tmp_path, namespace, cm)
    assert condition(got)["status"] == "True", condition(got)
    stored = kube_client.get(ConfigMap, "templated", namespace=namespace)
    assert stored.data == data
    assert (meta(stored).annotations or {})["example.com/note"] == "x << y"


@pytest.fixture
def other_namespace(kube_client: Client, namespace: str) -> Iterator[str]:
    name = f"{namespace}-b"
    kube_client.create(Namespace(metadata=ObjectMeta(name=name, labels={"test.krmfn.dev/namespace": "true"})))
    yield name
    kube_client.delete(Namespace, name)


def test_one_resourceset_deploys_to_several_namespaces(
    flux_operator: Cluster, kube_client: Client, namespace: str, other_namespace: str, tmp_path: Path
) -> None:
    here = configmap("here", 0)
    there = configmap("there", 0)
    there["metadata"]["namespace"] = other_namespace
    last = final_wait(configmap("last", 1))
    last["metadata"]["namespace"] = other_namespace
    got = _deploy(kube_client, tmp_path, namespace, here, there, last)
    assert condition(got)["status"] == "True", condition(got)
    assert _exists(kube_client, ConfigMap, "here", namespace)
    assert _exists(kube_client, ConfigMap, "there", other_namespace)
    wait_inventory(
        kube_client,
        "app",
        namespace,
        [
            f"{namespace}_here__ConfigMap",
            f"{other_namespace}_there__ConfigMap",
            f"{other_namespace}_last__ConfigMap",
        ],
    )


def test_the_exported_timeouts_and_wait_are_what_the_operator_stores(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    docs = [configmap("a", 0), configmap("b", 1), final_wait(configmap("c", 2))]
    docs[0]["metadata"]["annotations"]["krmfn.dev/step-timeout"] = "1500ms"  # timeout under test: exported
    docs[1]["metadata"]["annotations"]["krmfn.dev/step-timeout"] = "90s"  # timeout under test: exported
    got = _deploy(kube_client, tmp_path, namespace, *docs)
    assert condition(got)["status"] == "True"
    assert [(s["name"], s.get("timeout")) for s in got["spec"]["steps"]] == [
        ("step0", "1500ms"),
        ("step1", "90s"),
        ("step2", None),
    ]
    assert yaml.safe_dump(got["spec"]).count("krmfn.dev/") == 0


# --- what export refuses, and why ----------------------------------------------------------------------


def _raw_rset(name: str, namespace: str, *objects: Doc) -> Doc:
    """A ResourceSet of ``objects`` in one step, embedded as the export would but without its checks."""
    return {
        "apiVersion": "fluxcd.controlplane.io/v1",
        "kind": "ResourceSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"steps": [{"name": "only", "resources": [resourceset.embed(o) for o in objects]}]},
    }


def _refused(tmp_path: Path, namespace: str, capsys: pytest.CaptureFixture[str], *docs: Doc) -> str:
    stream = tmp_path / "refused.yaml"
    stream.write_text(dump_all_fast(list(docs)))
    capsys.readouterr()
    assert export(["export", "resourceset", "-f", str(stream), "--name", "x", "-n", namespace]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    return err


def test_a_merge_key_is_refused_because_the_operator_would_merge_it(
    flux_operator: Cluster,
    kube_client: Client,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "merged", "namespace": namespace},
        "<<": {"data": {"injected": "by the merge key"}},
    }
    _apply_rset(kube_client, _raw_rset("raw", namespace, doc))
    assert condition(wait_settled(kube_client, "raw", namespace))["status"] == "True"
    # Merged into the object by the operator's YAML reader: krmfn apply would have sent the key as written
    # (and the API server's strict field validation would reject it).
    assert kube_client.get(ConfigMap, "merged", namespace=namespace).data == {"injected": "by the merge key"}
    err = _refused(tmp_path, namespace, capsys, doc)
    assert f"ConfigMap {namespace}/merged: the key '<<' at . cannot be handed to the Flux Operator" in err


def test_a_namespaced_object_without_namespace_is_refused_because_the_operator_fails_on_it(
    flux_operator: Cluster,
    kube_client: Client,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nowhere"}, "data": {"a": "b"}}
    _apply_rset(kube_client, _raw_rset("raw", namespace, doc))
    ready = condition(wait_settled(kube_client, "raw", namespace))
    assert ready["status"] == "False"
    assert "ConfigMap/nowhere namespace not specified" in ready["message"]
    err = _refused(tmp_path, namespace, capsys, doc)
    assert "ConfigMap nowhere has no metadata.namespace" in err


def test_a_cluster_scoped_object_with_a_namespace_is_applied_without_it_as_krmfn_apply_does(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{namespace}-reader", "namespace": namespace},
        "rules": [],
    }
    got = _deploy(kube_client, tmp_path, namespace, final_wait(role))
    assert condition(got)["status"] == "True", condition(got)
    stored = kube_client.get(ClusterRole, f"{namespace}-reader")
    assert meta(stored).namespace is None
    wait_inventory(
        kube_client, "app", namespace, [f"_{namespace}-reader_rbac.authorization.k8s.io_ClusterRole"]
    )
    kube_client.delete(ResourceSet, "app", namespace=namespace)  # its finalizer deletes the ClusterRole
    wait_until(
        "the ClusterRole to be deleted",
        lambda: not _cluster_role_exists(kube_client, f"{namespace}-reader"),
        30,
    )


def _cluster_role_exists(client: Client, name: str) -> bool:
    try:
        client.get(ClusterRole, name)
    except ApiError as err:
        if err.status.code == 404:
            return False
        raise
    return True


def test_a_missing_operator_build_is_an_error_not_a_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An empty cache and no Go: the build script fails and the fixture's call raises, so the tests that
    # need the operator error out (plugin.flux_operator turns this into pytest.fail).
    monkeypatch.setenv("KRMFN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(ClusterError, match=r"Go >= 1.26 is required to build the Flux Operator"):
        build_flux_operator()
