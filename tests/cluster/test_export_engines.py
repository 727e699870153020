"""One rendered staged deploy (migration Job -> app -> warm-up Job), handed to three engines.

The package tests/testdata/export-staged-deploy is rendered with real kpt (set-steps with
``emit: [depends-on]``), then: exported as a ResourceSet and applied against the real ResourceSet CRD;
applied with ``kpt live apply``; applied with ``krmfn apply``. The order of each engine is read from
its own event output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from e2e import resourceset_crd
from lightkube import ApiError, Client, codecs
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job

from krmfn.export import main as export

from .cluster import Cluster, wait_until
from .engines import BIN, ResourceSet, export_resourceset, kpt_live_apply, render, run
from .objects import status_of

pytestmark = pytest.mark.cluster


def _install_resourceset_crd(client: Client) -> None:
    # Left installed: CRDs are cluster-wide and their deletion is asynchronous.
    [crd] = codecs.load_all_yaml(resourceset_crd().read_text())
    client.apply(crd, force=True)

    def established() -> bool:
        got = client.get(CustomResourceDefinition, "resourcesets.fluxcd.controlplane.io")
        conditions = got.status.conditions if got.status else None  # no status yet: not established
        return any(c.type == "Established" and c.status == "True" for c in conditions or [])

    wait_until("ResourceSet CRD Established", established, timeout=30)


def test_resourceset_of_the_staged_deploy_is_valid_for_the_real_crd(
    kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    _install_resourceset_crd(kube_client)
    rset = export_resourceset(render(tmp_path, namespace), namespace, tmp_path)

    steps = rset["spec"]["steps"]
    assert [(s["name"], s["timeout"]) for s in steps] == [
        ("pre-deploy", "1m0s"),
        ("deploy", "2m0s"),
        ("post-deploy", "1m0s"),
    ]
    assert [[r["metadata"]["name"] for r in s["resources"]] for s in steps] == [
        ["db-migration"],
        ["warmup-script", "app", "app"],
        ["cache-warmup"],
    ]
    assert rset["spec"]["wait"] is True
    migration, app = steps[0]["resources"][0], steps[1]["resources"][1]
    assert migration["metadata"]["annotations"] == {
        "fluxcd.controlplane.io/force": "enabled",
        "fluxcd.controlplane.io/recreateOnFailure": "enabled",
    }
    # kpt's ordering hint from emit: [depends-on] stays; the operator ignores it.
    assert app["metadata"]["annotations"] == {
        "config.kubernetes.io/depends-on": f"batch/namespaces/{namespace}/Job/db-migration"
    }
    assert "cat <<`<<`>>EOF" in steps[1]["resources"][0]["data"]["warm.sh"]

    kube_client.apply(ResourceSet.from_dict(rset), field_manager="krmfn-export-test", dry_run=True)
    kube_client.apply(ResourceSet.from_dict(rset), field_manager="krmfn-export-test")
    stored = dict(kube_client.get(ResourceSet, "app", namespace=namespace))
    # The structural schema prunes unknown fields silently: equality shows every field was known.
    assert stored["spec"] == rset["spec"]


def test_an_empty_resourceset_meant_by_allow_empty_is_valid_for_the_real_crd(
    kube_client: Client, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """.spec.steps needs one step at least (minItems 1), so the empty set is .spec.resources: []."""
    _install_resourceset_crd(kube_client)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    argv = ["export", "resourceset", "-f", str(empty), "--name", "app", "-n", namespace]
    assert export(argv) == 1
    assert "is empty: it has no objects to deploy" in capsys.readouterr().err
    assert export([*argv, "--allow-empty"]) == 0
    rset = yaml.safe_load(capsys.readouterr().out)
    kube_client.apply(ResourceSet.from_dict(rset), field_manager="krmfn-export-test")
    assert dict(kube_client.get(ResourceSet, "app", namespace=namespace))["spec"] == rset["spec"]


def test_resourceset_step_limit_is_enforced_by_export_and_by_the_api_server(
    kube_client: Client, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _install_resourceset_crd(kube_client)
    docs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"cm-{i}",
                "namespace": namespace,
                "annotations": {"krmfn.dev/step": f"step-{i}", "krmfn.dev/step-index": str(i)},
            },
        }
        for i in range(21)
    ]
    stream = tmp_path / "steps.yaml"
    stream.write_text(yaml.safe_dump_all(docs))
    assert export(["export", "resourceset", "-f", str(stream), "--name", "app", "-n", namespace]) == 1
    assert "21 steps is over the ResourceSet limit of 20 steps" in capsys.readouterr().err

    over = {
        "apiVersion": "fluxcd.controlplane.io/v1",
        "kind": "ResourceSet",
        "metadata": {"name": "over", "namespace": namespace},
        "spec": {"steps": [{"name": f"step-{i}", "resources": [doc]} for i, doc in enumerate(docs)]},
    }
    with pytest.raises(ApiError) as err:
        kube_client.apply(ResourceSet.from_dict(over), field_manager="krmfn-export-test", dry_run=True)
    assert err.value.status.code == 422
    assert "spec.steps" in str(err.value.status.message)
    assert "must have at most 20 items" in str(err.value.status.message)


def test_kpt_live_apply_follows_the_depends_on_step_order(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    events = kpt_live_apply(render(tmp_path, namespace), namespace, cluster.kubeconfig)
    order = [(e["type"], e["kind"], e["name"], e["status"]) for e in events if e["type"] in ("apply", "wait")]

    def at(event: tuple[str, str, str, str]) -> int:
        assert event in order, f"{event} not in kpt's events: {order}"
        return order.index(event)

    migration_ready = at(("wait", "Job", "db-migration", "Successful"))
    app_ready = at(("wait", "Deployment", "app", "Successful"))
    for kind, name in (("ConfigMap", "warmup-script"), ("Service", "app"), ("Deployment", "app")):
        assert migration_ready < at(("apply", kind, name, "Successful")) < app_ready
    assert app_ready < at(("apply", "Job", "cache-warmup", "Successful"))
    assert at(("apply", "Job", "db-migration", "Successful")) == 0
    summary = [e for e in events if e["type"] == "summary"]
    assert [(e["action"], e["successful"], e["failed"]) for e in summary] == [("Apply", 5, 0), ("Wait", 5, 0)]


def test_kpt_live_counts_a_running_migration_job_as_reconciled(
    cluster: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    # kstatus calls a Job Current once it runs, so depends-on orders the start of the migration, not
    # its end: the app is rolled out while the migration still runs. docs/engines.md says so.
    events = kpt_live_apply(
        render(tmp_path, namespace, migration_runs_for="1h"), namespace, cluster.kubeconfig
    )
    assert [e["name"] for e in events if e["type"] == "apply"][-1] == "cache-warmup"
    migration = kube_client.get(Job, "db-migration", namespace=namespace).to_dict()
    assert migration["status"].get("active") == 1
    assert not migration["status"].get("succeeded")
    assert status_of(kube_client.get(Deployment, "app", namespace=namespace)).availableReplicas == 2


def test_krmfn_apply_waits_for_the_migration_job_to_finish(
    cluster: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    package = render(tmp_path, namespace, migration_runs_for="2s")
    out = run(
        [str(BIN / "krmfn"), "apply", "-f", str(package), "-n", namespace, "-o", "json"],
        tmp_path,
        cluster.kubeconfig,
    )
    events = [json.loads(line) for line in out.splitlines()]
    seq = [(e["type"], e.get("object", e.get("name")), e.get("state") or e.get("result")) for e in events]
    migration = f"Job.batch {namespace}/db-migration"
    done = seq.index(("status", migration, "current"))
    first_app_apply = next(i for i, (kind, obj, _) in enumerate(seq) if kind == "apply" and obj != migration)
    assert done < first_app_apply
    assert events[-1]["type"] == "result"
    assert events[-1]["ok"] is True
    job = kube_client.get(Job, "db-migration", namespace=namespace).to_dict()
    app = kube_client.get(Deployment, "app", namespace=namespace).to_dict()
    assert job["status"]["succeeded"] == 1
    assert job["status"]["completionTime"] <= app["metadata"]["creationTimestamp"]
