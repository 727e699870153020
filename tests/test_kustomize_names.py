"""References resolved as kustomize's name-reference step will resolve them (krmfn/k8s/kustomize_names.py).

Functions listed under a kustomization's ``transformers:`` run before kustomize appends generator hash
suffixes and fixes name references. The unit tests feed the build annotations kustomize writes; the
e2e tests run the real kustomize and compare with the same functions in a pipe after the build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kustomize_trees import by_kind_name, deployment, fn_files, kustomize, normalized, one, pipe, write_tree

from krmfn.functions.hash_job_names.naming import unhashed
from krmfn.k8s.kustomize_name_fields import CONFIGMAP, SERVICE_ACCOUNT, name_fields
from krmfn.k8s.kustomize_names import Names, final_name, kustomize_hash, names_of

CHECKSUM = "krmfn.dev/config-checksum"


def built(name: str, namespace: str = "ns1", **notes: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "annotations": dict(notes)}


def config_map(meta: dict[str, Any], data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def job(name: str, *config: str, namespace: str = "ns1", **notes: str) -> dict[str, Any]:
    env_from = [{"configMapRef": {"name": c}} for c in config]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": built(name, namespace, **notes),
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": "runner",
                    "containers": [{"name": "m", "image": "x", "envFrom": env_from}],
                }
            }
        },
    }


PREFIXED = {
    "internal.config.kubernetes.io/prefixes": "prod-",
    "internal.config.kubernetes.io/previousKinds": "ConfigMap,ConfigMap",
    "internal.config.kubernetes.io/previousNames": "app,app",
    "internal.config.kubernetes.io/previousNamespaces": "default,ns1",
}


def test_kustomize_hash_matches_the_suffix_kustomize_wrote() -> None:
    # Observed with kustomize v5.8.2: configMapGenerator literals A=1 and C=3.
    assert kustomize_hash(config_map(built("prod-gen-s"), {"A": "1"})) == "89g4tffbfk"
    assert kustomize_hash(config_map(built("other"), {"C": "3"})) == "dh6h576fbt"


def test_a_prefixed_configmap_is_found_by_its_earlier_name() -> None:
    cm = config_map(built("prod-app", **PREFIXED), {"k": "v"})
    referrer = job("prod-migrate", "app")
    names = Names([cm, referrer])
    assert names.resolve(referrer, CONFIGMAP, "app") is cm
    assert names.resolve(referrer, CONFIGMAP, "prod-app") is cm  # the current name still points at it
    # A field kustomize does not rewrite keeps the name as written: `app` will not exist.
    assert names.resolve(referrer, CONFIGMAP, "app", rewritten=False) is None
    assert names_of(cm) == ["app", "prod-app"]


def test_a_generated_configmap_resolves_to_its_hashed_final_name() -> None:
    notes = {**PREFIXED, "internal.config.kubernetes.io/needsHashSuffix": "enabled"}
    cm = config_map(built("prod-app", **notes), {"A": "1"})
    referrer = job("prod-migrate", "app")
    assert Names([cm, referrer]).resolve(referrer, CONFIGMAP, "app") is cm
    assert final_name(cm) == "prod-app-89g4tffbfk"
    # Without a prefix the pending hash alone makes the current name an earlier one.
    plain_generated = config_map(
        built("app", **{"internal.config.kubernetes.io/needsHashSuffix": "enabled"}), {}
    )
    assert Names([plain_generated, referrer]).resolve(referrer, CONFIGMAP, "app") is plain_generated


def test_only_the_same_namespace_and_matching_prefixes_are_candidates() -> None:
    elsewhere = config_map(built("prod-app", "ns2", **PREFIXED), {})
    referrer = job("prod-migrate", "app")
    assert Names([elsewhere, referrer]).resolve(referrer, CONFIGMAP, "app") is None
    # Two renamed copies of `app` (a base included twice with different prefixes): the one whose
    # prefixes end like the referrer's wins, as in kustomize.
    staging_notes = {**PREFIXED, "internal.config.kubernetes.io/prefixes": "staging-"}
    staging = config_map(built("staging-app", **staging_notes), {})
    prod = config_map(built("prod-app", **PREFIXED), {})
    prod_job = job("prod-migrate", "app", **{"internal.config.kubernetes.io/prefixes": "prod-"})
    assert Names([staging, prod, prod_job]).resolve(prod_job, CONFIGMAP, "app") is prod


def test_name_fields_are_kustomizes_pod_spec_fields() -> None:
    fields = name_fields(job("j", "a", "b"))
    assert [(f.target.kind, f.field, f.value) for f in fields] == [
        ("ConfigMap", "spec.template.spec.containers[0].envFrom[0].configMapRef.name", "a"),
        ("ConfigMap", "spec.template.spec.containers[0].envFrom[1].configMapRef.name", "b"),
        ("ServiceAccount", "spec.template.spec.serviceAccountName", "runner"),
    ]
    assert fields[2].target == SERVICE_ACCOUNT


@pytest.mark.parametrize(
    ("name", "recorded", "base"),
    [
        ("migrate-0123abcd", "migrate", "migrate"),
        ("prod-migrate-0123abcd", "migrate", "prod-migrate"),
        ("prod-migrate-0123abcd-eu", "migrate", "prod-migrate-eu"),
        ("migrate", "migrate", "migrate"),
        ("migrate-v2", "migrate", None),
        ("prod-migrate-0123abcz", "migrate", None),
    ],
)
def test_unhashed_removes_the_hash_wherever_affixes_were_added(name: str, recorded: str, base: str) -> None:
    assert unhashed(name, recorded) == base


# --- the real kustomize ----------------------------------------------------------------------------


def _base(target_literal: str = "v1") -> dict[str, Any]:
    migrate = job("migrate", "migrate-config", "plain", namespace="")
    del migrate["metadata"]["namespace"], migrate["metadata"]["annotations"]
    web = deployment("web", "plain")
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner"}}
    return {
        "base/kustomization.yaml": {"resources": ["job.yaml", "plain.yaml"]},
        "base/job.yaml": [migrate, web, account],
        "base/plain.yaml": config_map({"name": "plain"}, {"X": "1"}),
        "prod/kustomization.yaml": {
            "resources": ["../base"],
            "namePrefix": "prod-",
            "configMapGenerator": [{"name": "migrate-config", "literals": [f"TARGET={target_literal}"]}],
        },
    }


def _overlay(tmp_path: Path, literal: str, transformers: bool) -> Path:
    tree = _base(literal)
    if transformers:
        tree["prod/kustomization.yaml"]["transformers"] = list(fn_files())
        tree.update({f"prod/{k}": v for k, v in fn_files().items()})
    return write_tree(tmp_path / f"{literal}-{transformers}", tree) / "prod"


@pytest.mark.e2e
def test_overlay_functions_see_through_name_prefix_and_generator_hash(tmp_path: Path) -> None:
    """Issue 16 item 1: the Job's name follows the generated ConfigMap, the plain ConfigMap is found."""
    first = kustomize(_overlay(tmp_path, "v1", transformers=True))
    second = kustomize(_overlay(tmp_path, "v2", transformers=True))
    outputs = {}
    for label, stream in (("v1", first), ("v2", second)):
        found = by_kind_name(stream)
        migrate = one(stream, "Job")
        refs = [
            e["configMapRef"]["name"] for e in migrate["spec"]["template"]["spec"]["containers"][0]["envFrom"]
        ]
        assert all(("ConfigMap", ref) in found for ref in refs), refs
        for workload in (migrate, one(stream, "Deployment")):
            assert CHECKSUM in workload["spec"]["template"]["metadata"]["annotations"], workload
        outputs[label] = migrate
    assert outputs["v1"]["metadata"]["name"] != outputs["v2"]["metadata"]["name"]
    assert outputs["v1"]["metadata"]["name"].startswith("prod-migrate-")
    web = {label: one(stream, "Deployment") for label, stream in (("v1", first), ("v2", second))}
    assert web["v1"] == web["v2"], "the Deployment reads only the unchanged ConfigMap"


@pytest.mark.e2e
def test_transformers_and_a_pipe_after_the_build_agree(tmp_path: Path) -> None:
    inside = kustomize(_overlay(tmp_path, "v1", transformers=True))
    after = pipe(kustomize(_overlay(tmp_path, "v1", transformers=False)))
    assert normalized(inside) == normalized(after)


@pytest.mark.e2e
def test_hashing_in_base_and_overlay_replaces_the_hash(tmp_path: Path) -> None:
    """Issue 16 item 2: hashed in a base, prefixed and suffixed by an overlay, hashed again: one hash."""
    tree = _base()
    tree["base/kustomization.yaml"]["transformers"] = list(fn_files())
    tree["prod/kustomization.yaml"].update(nameSuffix="-eu", transformers=list(fn_files()))
    tree.update({f"base/{k}": v for k, v in fn_files().items()})
    tree.update({f"prod/{k}": v for k, v in fn_files().items()})
    twice = kustomize(write_tree(tmp_path / "twice", tree) / "prod")
    name = one(twice, "Job")["metadata"]["name"]
    assert name.startswith("prod-migrate-eu-") and len(name) == len("prod-migrate-eu-") + 8, name
    clean = _base()
    clean["prod/kustomization.yaml"]["nameSuffix"] = "-eu"
    once = pipe(kustomize(write_tree(tmp_path / "once", clean) / "prod"))
    assert one(once, "Job")["metadata"]["name"] == name


def test_selectors_match_a_name_an_overlay_renamed() -> None:
    """Config written against a base keeps selecting the object inside an overlay's kustomization."""
    from krmfn.sdk.selector import Selector

    prefixed = job(
        "prod-migrate",
        "app",
        **{
            k.replace("ConfigMap", "Job"): v.replace("ConfigMap", "Job").replace("app", "migrate")
            for k, v in PREFIXED.items()
        },
    )
    assert Selector(name="migrate").matches(prefixed)
    assert Selector(name="prod-migrate").matches(prefixed)
    assert not Selector(name="other").matches(prefixed)


def test_rewrites_agrees_with_the_fields_kustomize_rewrites() -> None:
    """``rewrites(obj, field)`` is ``field in rewritten_fields(obj)`` without the walk, for every reference
    a pod template makes (krmfn/k8s/podtemplates.py) in every workload kind, and for the deprecated
    ``serviceAccount`` field and ephemeral containers, which kustomize leaves alone."""
    from test_set_steps_ordering import USES, WORKLOADS, _copy, workload

    from krmfn.k8s.kustomize_name_fields import rewrites, rewritten_fields
    from krmfn.k8s.podtemplates import pod_templates, pod_uses

    extra = {"serviceAccount": "old", "ephemeralContainers": [{"name": "e", "envFrom": [
        {"configMapRef": {"name": "x"}}]}]}  # fmt: skip
    objs = [workload(kind, {**_copy(spec), **_copy(more)})
            for kind in WORKLOADS for _, spec, _ in USES.values() for more in ({}, extra)]  # fmt: skip
    pod_v2 = workload("Pod", _copy(extra))
    pod_v2["apiVersion"] = "v2"
    sets = {"spec": {"template": {"spec": {"serviceAccountName": "a"}}}, "template": {"spec": {
        "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "c"}}]}]}}}  # fmt: skip
    objs += [
        pod_v2,
        *({"apiVersion": "v1", "kind": k, **_copy(sets)} for k in ("ReplicationController", "PodTemplate")),
    ]
    objs.append({"apiVersion": "apps/v1", "kind": "ReplicaSet", **_copy(sets)})
    checked = 0
    for obj in objs:
        paths = [u.field for t in pod_templates(obj) for u in pod_uses(t, "")]
        for field in paths:
            assert rewrites(obj, field) == (field in rewritten_fields(obj)), (obj["kind"], field)
            checked += 1
    assert checked > 200
