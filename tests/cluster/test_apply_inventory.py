"""`krmfn apply`: CRDs with their custom resources, the ApplySet inventory, prune opt-out, dry runs and
errors that name the object."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx2
from lightkube import ApiError, Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Secret
from lightkube.types import PatchType

from krmfn.runner.inventory.applyset import applyset_id
from krmfn.yaml.io import load_all_fast

from .objects import annotations_of, exists, meta
from .patience import STEP_TIMEOUT
from .runner_fixtures import Apply, configmap, deployment, inventory_problems, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

TESTDATA = Path(__file__).parent / "testdata"
Kustomization = create_namespaced_resource(
    "kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations"
)


def fake_flux(client: Client, namespace: str, stop: threading.Event) -> None:
    """Stands in for kustomize-controller: marks each Kustomization reconciled and Ready."""
    while not stop.wait(0.05):
        try:
            found = list(client.list(Kustomization, namespace=namespace))
        except (ApiError, httpx2.HTTPStatusError):
            continue  # the CRD is not served yet (a plain-text 404)
        for ks in found:
            status = ks.get("status") or {}
            generation = ks["metadata"]["generation"]
            if status.get("observedGeneration") == generation:
                continue
            ready = {"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                     "message": "Applied revision: main@sha1:0123",
                     "lastTransitionTime": "2024-01-01T00:00:00Z"}  # fmt: skip
            client.patch(Kustomization.Status, ks["metadata"]["name"], {"status": {
                "observedGeneration": generation, "conditions": [ready]}},
                namespace=namespace, patch_type=PatchType.MERGE)  # fmt: skip


def test_crd_and_its_custom_resource_apply_in_one_step(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    crd = next(load_all_fast((TESTDATA / "flux-kustomization-crd.yaml").read_text()))
    crd["metadata"]["annotations"] = {"krmfn.dev/step-index": "0"}
    ks = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": "podinfo",
            "annotations": {"krmfn.dev/step-index": "0", "krmfn.dev/step-timeout": STEP_TIMEOUT},
        },
        "spec": {
            "interval": "60m",
            "prune": True,
            "path": "./deploy",
            "sourceRef": {"kind": "GitRepository", "name": "apps"},
        },
    }
    stop = threading.Event()
    controller = threading.Thread(target=fake_flux, args=(kube_client, namespace, stop), daemon=True)
    controller.start()
    try:
        out = apply([ks, crd, configmap("after", 1)])
    finally:
        stop.set()
        controller.join()
    assert out.code == 0, out.error
    applied = [e["object"] for e in out.of("apply")]
    assert applied == [
        "CustomResourceDefinition.apiextensions.k8s.io kustomizations.kustomize.toolkit.fluxcd.io",
        f"Kustomization.kustomize.toolkit.fluxcd.io {namespace}/podinfo",
        f"ConfigMap {namespace}/after",
    ]
    # The custom resource was waited for until its controller reported Ready for this generation.
    states = [(e["state"], e["message"]) for e in out.of("status") if "Kustomization" in e["object"]]
    assert states[-1] == ("current", "ReconciliationSucceeded: Applied revision: main@sha1:0123")
    assert ("in-progress", "waiting for the controller to observe the new generation") in states
    assert kube_client.get(Kustomization, "podinfo", namespace=namespace)["spec"]["path"] == "./deploy"


def test_inventory_is_an_applyset_parent_and_members_are_labelled(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply([configmap("a", 0, x="1"), deployment("web", 1)]).code == 0
    parent = kube_client.get(Secret, "krmfn", namespace=namespace)
    set_id = applyset_id("krmfn", namespace)
    assert meta(parent).labels == {"applyset.kubernetes.io/id": set_id}
    assert annotations_of(parent)["applyset.kubernetes.io/tooling"] == "krmfn/v0.1.0"
    assert (
        annotations_of(parent)["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap,Deployment.apps"
    )
    cm = kube_client.get(ConfigMap, "a", namespace=namespace)
    assert meta(cm).labels == {"applyset.kubernetes.io/part-of": set_id}


def test_prune_deletes_removed_objects_but_keeps_opted_out_ones(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    keep = configmap("keep", 0, {"krmfn.dev/prune": "disabled"})
    assert apply([keep, configmap("drop", 0), configmap("stay", 0)]).code == 0
    out = apply([configmap("stay", 0)])
    assert out.code == 0, out.error
    assert sorted((e["object"], e["action"]) for e in out.of("prune")) == [
        (f"ConfigMap {namespace}/drop", "deleted"),
        (f"ConfigMap {namespace}/keep", "kept"),
    ]
    assert exists(kube_client, ConfigMap, "keep", namespace)
    assert not exists(kube_client, ConfigMap, "drop", namespace)


def test_prune_runs_in_reverse_step_order(apply: Apply, namespace: str) -> None:
    assert (
        apply(
            [configmap("first", 0), configmap("second", 1), configmap("third", 2), configmap("kept", 0)]
        ).code
        == 0
    )
    out = apply([configmap("kept", 0)])
    assert [e["object"] for e in out.of("prune")] == [
        f"ConfigMap {namespace}/third",
        f"ConfigMap {namespace}/second",
        f"ConfigMap {namespace}/first",
    ]


def test_no_prune_flag_keeps_everything(apply: Apply, kube_client: Client, namespace: str) -> None:
    assert apply([configmap("a", 0), configmap("b", 0)]).code == 0
    out = apply([configmap("a", 0)], "--no-prune")
    assert out.code == 0
    assert out.of("prune") == []
    assert exists(kube_client, ConfigMap, "b", namespace)


def test_server_dry_run_validates_without_changing_anything(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    out = apply([configmap("a", 0), deployment("web", 1), job("migrate", 2)], "--dry-run=server")
    assert out.code == 0, out.error
    assert {(e["action"], e["dryRun"]) for e in out.of("apply")} == {("created", True)}
    assert not exists(kube_client, ConfigMap, "a", namespace)
    assert not exists(kube_client, Deployment, "web", namespace)
    assert not exists(kube_client, Secret, "krmfn", namespace)


def test_invalid_object_fails_its_step_with_the_servers_reason(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    bad = deployment("web", 1)
    bad["spec"]["replicas"] = -1
    out = apply([configmap("a", 0), bad, configmap("later", 2)])
    assert out.code == 1
    assert out.error.startswith(f"Deployment.apps {namespace}/web: invalid: ")
    assert "spec.replicas" in out.error
    assert exists(kube_client, ConfigMap, "a", namespace)
    assert not exists(kube_client, ConfigMap, "later", namespace)


def test_unknown_kind_fails_before_anything_is_applied(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    out = apply([configmap("a", 0), widget])
    assert out.code == 1
    assert out.error == (
        f"Widget.example.com {namespace}/w: the cluster does not serve example.com/v1 (is its CRD installed?)"
    )
    assert not exists(kube_client, ConfigMap, "a", namespace)


def test_conflicting_field_manager_is_an_error_unless_forced(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    other = ConfigMap(metadata=ObjectMeta(name="shared", namespace=namespace), data={"k": "theirs"})
    kube_client.apply(other, field_manager="someone-else")
    out = apply([configmap("shared", 0, k="ours")])
    assert out.code == 1
    assert out.error.startswith(f"ConfigMap {namespace}/shared: ")
    assert "someone-else" in out.error
    assert "--force-conflicts" in out.error
    assert apply([configmap("shared", 0, k="ours")], "--force-conflicts").code == 0
    assert kube_client.get(ConfigMap, "shared", namespace=namespace).data == {"k": "ours"}


def test_unreachable_api_server_is_one_clear_line(namespace: str, tmp_path: Path) -> None:
    import contextlib
    import io
    import json

    from krmfn.runner.commands.cli import main

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
    }))  # fmt: skip
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["apply", "-f", str(manifest), "--kubeconfig", str(kubeconfig), "-n", namespace,
                     "--retry-timeout", "1s", "--applyset", "krmfn"])  # fmt: skip
    assert code == 1
    assert "cannot reach the API server at https://127.0.0.1:1" in out.getvalue()
    assert "Traceback" not in out.getvalue() + err.getvalue()


# --- whose inventory it is: two apps in one namespace ---------------------------------------------------


def app(name: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``docs`` as set-steps with ``app: name`` leaves them."""
    for doc in docs:
        doc["metadata"].setdefault("annotations", {})["krmfn.dev/app"] = name
    return docs


def test_two_apps_in_one_namespace_never_prune_each_other(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    def shop() -> list[dict[str, Any]]:
        return app("shop", [configmap("shop-config", 0, k="v1"), deployment("shop", 1)])

    def cart() -> list[dict[str, Any]]:
        return app("cart", [configmap("cart-config", 0), deployment("cart", 1)])

    first = apply(shop())
    assert first.code == 0, first.error
    assert first.of("inventory") == [{"type": "inventory", "name": "shop", "namespace": namespace,
                                      "source": "krmfn.dev/app", "prune": True}]  # fmt: skip
    second = apply(cart())
    assert second.code == 0, second.error
    assert second.of("prune") == []  # before, both shared default/krmfn: this run deleted the shop
    for name in ("shop-config", "cart-config"):
        assert exists(kube_client, ConfigMap, name, namespace)
    for name in ("shop", "cart"):
        assert exists(kube_client, Deployment, name, namespace)
        assert exists(kube_client, Secret, name, namespace)  # each app's own inventory

    # A script that names the cart after the shop's inventory is refused before anything is applied.
    for flags in ((), ("--dry-run=server",)):
        clash = apply(app("cart", [configmap("cart-config-v2", 0)]), "--applyset", "shop", *flags)
        assert clash.code == 1
        assert clash.error.startswith(
            f"the inventory {namespace}/shop (--applyset) holds 2 object(s) this render does not have ("
            f"ConfigMap {namespace}/shop-config, Deployment.apps {namespace}/shop"
        ), clash.error
        assert "pass --adopt to take the inventory over and prune them; nothing was applied" in clash.error
        assert clash.of("apply") == [] and clash.of("prune") == []
    assert not exists(kube_client, ConfigMap, "cart-config-v2", namespace)
    assert exists(kube_client, Deployment, "shop", namespace)
    assert inventory_problems(kube_client, namespace, "shop") == []  # the refusal released the lock

    # The shop again: nothing changed, so nothing is reported changed; a server dry run says what would.
    again = apply(shop())
    assert again.code == 0, again.error
    assert set(again.actions().values()) == {"unchanged"}, again.actions()
    assert again.result["applied"] == [] and len(again.result["unchanged"]) == 2
    changed = shop()
    changed[0]["data"] = {"k": "v2"}
    dry = apply(changed, "--dry-run=server")
    assert dry.code == 0, dry.error
    assert {e["object"]: (e["action"], e["dryRun"]) for e in dry.of("apply")} == {
        f"ConfigMap {namespace}/shop-config": ("configured", True),
        f"Deployment.apps {namespace}/shop": ("unchanged", True),
    }
    assert kube_client.get(ConfigMap, "shop-config", namespace=namespace).data == {"k": "v1"}


def test_namespaces_no_longer_rendered_are_kept_unless_asked_for(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    from lightkube.resources.core_v1 import Namespace

    extra = f"{namespace}-extra"
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": extra}}
    assert apply([ns, configmap("a", 0)]).code == 0
    kept = apply([configmap("a", 0)])
    assert kept.code == 0, kept.error
    assert [(e["object"], e["action"]) for e in kept.of("prune")] == [(f"Namespace {extra}", "kept")]
    assert "pass --prune-namespaces to prune it" in kept.of("prune")[0]["detail"]
    assert kube_client.get(Namespace, extra).metadata is not None  # still there
    pruned = apply([configmap("a", 0)], "--prune-namespaces")
    assert [(e["object"], e["action"]) for e in pruned.of("prune")] == [(f"Namespace {extra}", "deleted")]


def test_an_inventory_namespace_that_does_not_exist_is_named(
    kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    import contextlib
    import io

    from krmfn.runner.commands.cli import main

    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["apply", "-f", str(manifest), "--kubeconfig", str(kubeconfig), "-n", f"{namespace}-nope",
                     "--applyset", "shop"])  # fmt: skip
    assert code == 1
    last = out.getvalue().splitlines()[-1]
    assert last.startswith(
        f"failed: the inventory Secret shop lives in namespace {namespace}-nope, which does not exist: "
        "create it first, or pass -n; nothing applied"
    ), last
