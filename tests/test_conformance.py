"""The standing conformance suite: generated kustomize trees and kpt packages through the real binaries.

A case is a tree: a base (a migration Job, a Deployment, a worker Deployment, a ServiceAccount and a
ConfigMap) and an overlay with any of namePrefix, nameSuffix, namespace, a configMapGenerator (hash
suffix or ``disableNameSuffixHash``) or a secretGenerator the Job reads, a component, a patch,
replacements and labels; the functions (set-config-checksum, hash-job-names, and validate-jobs as a
validator) sit in the overlay, in the base and the overlay, or in a pipe after ``kustomize build``.
The same content also runs as kpt packages (with and without a kustomization.yaml, with the config in
a subpackage) through ``kpt fn render``.

Invariants on every output:

- every reference kustomize resolves (pod-spec names of ConfigMaps, Secrets, ServiceAccounts) names an
  object in the output, in the same namespace;
- the functions inside kustomize give exactly what the pipe after the build gives (the placement
  ``overlay`` against ``pipe``);
- a checksum changes exactly when referenced data changes (the generator literal: yes; the web image,
  the unreferenced config: no);
- a Job's name changes exactly when its spec or referenced data changes;
- running the functions again over the output changes nothing;
- the output passes ``kubectl apply --dry-run=server`` on the test control plane (one cluster test).

The quick profile (in the normal suite) is eight cases that cover every value of every dimension, four
kpt packages and the cluster check; ``KRMFN_CONFORMANCE=full`` runs the whole matrix (1,536 trees).
"""

from __future__ import annotations

import copy
import functools
import itertools
import os
import subprocess
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import pytest
from e2e import run, tool
from kustomize_trees import fn_config, kustomize, normalized, objects, pipe, write_tree

from krmfn.k8s.kustomize_name_fields import name_fields
from krmfn.yaml.io import dump_all_fast, dump_fast

pytestmark = pytest.mark.e2e
FULL = os.environ.get("KRMFN_CONFORMANCE") == "full"
CHECKSUM = "krmfn.dev/config-checksum"
NAMESPACE = "krmfn-conformance"


@dataclass(frozen=True)
class Case:
    prefix: bool = False
    suffix: bool = False
    namespace: bool = False
    generator: str = "none"  # none | hashed | unhashed | secret
    component: bool = False
    patch: bool = False
    replacements: bool = False
    labels: bool = False
    placement: str = "overlay"  # overlay | base-and-overlay | pipe

    @property
    def id(self) -> str:
        flags = [f.name for f in fields(self) if getattr(self, f.name) is True]
        return "-".join([self.placement, f"gen:{self.generator}", *flags])


CHOICES: dict[str, tuple[Any, ...]] = {
    "prefix": (False, True),
    "suffix": (False, True),
    "namespace": (False, True),
    "generator": ("none", "hashed", "unhashed", "secret"),
    "component": (False, True),
    "patch": (False, True),
    "replacements": (False, True),
    "labels": (False, True),
    "placement": ("overlay", "base-and-overlay", "pipe"),
}
MATRIX = [Case(*values) for values in itertools.product(*CHOICES.values())]


def quick_profile() -> list[Case]:
    """Eight cases that between them take every value of every dimension (and each flag both ways)."""
    return [
        Case(prefix=True, suffix=True, namespace=True, generator="hashed", labels=True, placement="overlay"),
        Case(prefix=True, generator="hashed", component=True, patch=True, placement="base-and-overlay"),
        Case(
            prefix=True, namespace=True, generator="secret", replacements=True, labels=True, placement="pipe"
        ),
        Case(suffix=True, generator="unhashed", patch=True, replacements=True, placement="overlay"),
        Case(generator="none", component=True, placement="pipe"),
        Case(suffix=True, namespace=True, generator="secret", labels=True, placement="base-and-overlay"),
        Case(
            prefix=True, generator="none", component=True, patch=True, replacements=True, placement="overlay"
        ),
        Case(prefix=True, suffix=True, namespace=True, generator="unhashed", patch=True, placement="pipe"),
    ]


CASES = MATRIX if FULL else quick_profile()

# --- trees ------------------------------------------------------------------------------------------


def _pod(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": containers, **spec}}


def base_objects(web_image: str = "ghcr.io/acme/web:1.0") -> list[dict[str, Any]]:
    migrate = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate"},
        "spec": {
            "backoffLimit": 1,
            "template": _pod(
                [
                    {
                        "name": "m",
                        "image": "ghcr.io/acme/migrate:1.0",
                        "envFrom": [{"configMapRef": {"name": "migrate-config"}}],
                    }
                ],
                restartPolicy="Never",
                serviceAccountName="runner",
            ),
        },
    }
    web = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                **_pod(
                    [{"name": "w", "image": web_image, "envFrom": [{"configMapRef": {"name": "shared"}}]}]
                ),
            },
        },
    }
    worker = copy.deepcopy(web)
    worker["metadata"]["name"] = "worker"
    worker["spec"]["selector"]["matchLabels"]["app"] = "worker"
    worker["spec"]["template"]["metadata"]["labels"]["app"] = "worker"
    worker["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"configMapRef": {"name": "migrate-config"}}
    ]
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner"}}
    shared = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "shared"},
        "data": {"LEVEL": "info"},
    }
    return [migrate, web, worker, account, shared]


FUNCTIONS = ("set-config-checksum", "hash-job-names")


def _functions(tree: dict[str, Any], directory: str) -> dict[str, Any]:
    kustomization = tree[f"{directory}/kustomization.yaml"]
    kustomization["transformers"] = [f"fn-{name}.yaml" for name in FUNCTIONS]
    kustomization["validators"] = ["fn-validate-jobs.yaml"]
    for name in (*FUNCTIONS, "validate-jobs"):
        tree[f"{directory}/fn-{name}.yaml"] = fn_config(name)
    return tree


def tree_of(
    case: Case, literal: str = "v1", web_image: str = "ghcr.io/acme/web:1.0", unused: str = "a"
) -> dict[str, Any]:
    """The files of ``case``: ``literal`` is the data the Job and the worker read, ``unused`` data
    nothing reads."""
    objs = base_objects(web_image)
    base_config: list[dict[str, Any]] = []
    overlay: dict[str, Any] = {"resources": ["../base"]}
    if case.generator == "none":
        base_config.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "migrate-config"},
                "data": {"TARGET": literal},
            }
        )
    elif case.generator == "secret":
        overlay["secretGenerator"] = [{"name": "migrate-config", "literals": [f"TARGET={literal}"]}]
        for obj in (objs[0], objs[2]):
            container = (obj["spec"]["template"]["spec"])["containers"][0]
            container["envFrom"] = [{"secretRef": {"name": "migrate-config"}}]
    else:
        entry: dict[str, Any] = {"name": "migrate-config", "literals": [f"TARGET={literal}"]}
        if case.generator == "unhashed":
            entry["options"] = {"disableNameSuffixHash": True}
        overlay["configMapGenerator"] = [entry]
    base_config.append(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unused"}, "data": {"X": unused}}
    )
    tree: dict[str, Any] = {
        "base/kustomization.yaml": {"resources": ["objects.yaml"]},
        "base/objects.yaml": objs + base_config,
        "prod/kustomization.yaml": overlay,
    }
    if case.prefix:
        overlay["namePrefix"] = "prod-"
    if case.suffix:
        overlay["nameSuffix"] = "-eu"
    if case.namespace:
        overlay["namespace"] = NAMESPACE
    if case.labels:
        overlay["labels"] = [{"pairs": {"tier": "backend"}, "includeTemplates": True}]
    if case.patch:
        overlay["patches"] = [
            {
                "target": {"kind": "Job", "name": "migrate"},
                "patch": "- op: replace\n  path: /spec/backoffLimit\n  value: 3\n",
            }
        ]
    if case.replacements:
        overlay["replacements"] = [
            {
                "source": {"kind": "ConfigMap", "name": "shared", "fieldPath": "data.LEVEL"},
                "targets": [
                    {
                        "select": {"kind": "Deployment", "name": "web"},
                        "fieldPaths": ["spec.template.metadata.annotations.level"],
                        "options": {"create": True},
                    }
                ],
            }
        ]
    if case.component:
        overlay["components"] = ["../component"]
        tree["component/kustomization.yaml"] = {
            "apiVersion": "kustomize.config.k8s.io/v1alpha1",
            "kind": "Component",
            "patches": [
                {
                    "target": {"kind": "Deployment", "name": "worker"},
                    "patch": "- op: add\n  path: /spec/replicas\n  value: 2\n",
                }
            ],
        }
    if case.placement in ("overlay", "base-and-overlay"):
        _functions(tree, "prod")
    if case.placement == "base-and-overlay":
        _functions(tree, "base")
    return tree


def render(case: Case, root: Path, **variant: str) -> str:
    label = "-".join(f"{k}={v}" for k, v in sorted(variant.items())) or "default"
    directory = write_tree(root / label, tree_of(case, **variant)) / "prod"
    built = kustomize(directory)
    return pipe(built, (*FUNCTIONS, "validate-jobs")) if case.placement == "pipe" else built


# --- invariants ---------------------------------------------------------------------------------------


def _named(stream: str, kind: str, base: str) -> dict[str, Any]:
    found = [o for o in objects(stream) if o["kind"] == kind and base in o["metadata"]["name"]]
    assert len(found) == 1, f"{kind} {base}: {[o['metadata']['name'] for o in found]}"
    return found[0]


def _checksum(obj: dict[str, Any]) -> str:
    return ((obj["spec"]["template"].get("metadata") or {}).get("annotations") or {}).get(CHECKSUM, "")


def dangling_references(stream: str) -> list[str]:
    present = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects(stream)
    }
    missing = []
    for obj in objects(stream):
        namespace = obj["metadata"].get("namespace", "")
        for field in name_fields(obj):
            if (field.target.kind, namespace, field.value) not in present:
                missing.append(f"{obj['kind']} {obj['metadata']['name']}: {field.field} -> {field.value}")
    return missing


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance(case: Case, tmp_path: Path) -> None:
    first = render(case, tmp_path)
    assert dangling_references(first) == []
    job, web, worker = (
        _named(first, k, n) for k, n in (("Job", "migrate"), ("Deployment", "web"), ("Deployment", "worker"))
    )
    assert job["metadata"]["name"] != "migrate" and _checksum(job) and _checksum(worker) and _checksum(web)

    changed = render(case, tmp_path, literal="v2")  # the data the Job and the worker read
    assert _named(changed, "Job", "migrate")["metadata"]["name"] != job["metadata"]["name"]
    assert _checksum(_named(changed, "Deployment", "worker")) != _checksum(worker)
    assert _checksum(_named(changed, "Deployment", "web")) == _checksum(web)

    unrelated = render(case, tmp_path, web_image="ghcr.io/acme/web:2.0", unused="b")
    assert _named(unrelated, "Job", "migrate") == job
    assert _checksum(_named(unrelated, "Deployment", "web")) == _checksum(web)

    assert normalized(pipe(first, (*FUNCTIONS, "validate-jobs"))) == normalized(first), (
        "a second render changed it"
    )
    if case.placement != "pipe":
        assert normalized(first) == normalized(render(replace(case, placement="pipe"), tmp_path / "pipe"))
    OUTPUTS[case.id] = first


OUTPUTS: dict[str, str] = {}


def test_a_mutating_function_as_a_validator_fails_the_build(tmp_path: Path) -> None:
    """What docs/kustomize.md says about validators in kustomize 5.8."""
    tree = tree_of(Case())
    _functions(tree, "prod")
    tree["prod/kustomization.yaml"]["validators"] = ["fn-hash-job-names.yaml"]
    del tree["prod/kustomization.yaml"]["transformers"]  # so the validator has a Job to rename
    directory = write_tree(tmp_path, tree) / "prod"
    done = run(
        [tool("kustomize"), "build", "--enable-alpha-plugins", "--enable-exec", str(directory)],
        directory,
        check=False,
    )
    assert done.returncode != 0 and "validator shouldn't modify the resource map" in done.stderr


# --- kpt -------------------------------------------------------------------------------------------------

KPTFILE = {
    "apiVersion": "kpt.dev/v1",
    "kind": "Kptfile",
    "metadata": {"name": "app"},
    "pipeline": {
        "mutators": [{"exec": "krmfn-set-config-checksum"}, {"exec": "krmfn-hash-job-names"}],
        "validators": [{"exec": "krmfn-validate-jobs"}],
    },
}
KPT_CASES = [(k, s) for k in (False, True) for s in (False, True)]


def kpt_package(
    root: Path,
    kustomization: bool,
    subpackage: bool,
    literal: str = "v1",
    web_image: str = "ghcr.io/acme/web:1.0",
) -> Path:
    objs = base_objects(web_image)
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "migrate-config"},
        "data": {"TARGET": literal},
    }
    files: dict[str, Any] = {"Kptfile": KPTFILE, "objects.yaml": objs}
    if subpackage:
        files["config/Kptfile"] = {**KPTFILE, "metadata": {"name": "config"}, "pipeline": {}}
        files["config/config.yaml"] = config
    else:
        files["config.yaml"] = config
    if kustomization:
        files["kustomization.yaml"] = "resources:\n- objects.yaml\n- config.yaml\nnamePrefix: prod-\n"
    return write_tree(root, files)


def kpt_render(directory: Path) -> str:
    run([tool("kpt"), "fn", "render", "--allow-exec", str(directory)], directory)
    docs = [
        o
        for p in sorted(directory.rglob("*.yaml"))
        if "kustomization" not in p.name
        for o in objects(p.read_text())
    ]
    return dump_all_fast([d for d in docs if d.get("kind") != "Kptfile"])


@pytest.mark.parametrize(
    ("kustomization", "subpackage"),
    KPT_CASES,
    ids=[f"kustomization={k}-subpackage={s}" for k, s in KPT_CASES],
)
def test_kpt_conformance(tmp_path: Path, kustomization: bool, subpackage: bool) -> None:
    directory = kpt_package(tmp_path / "first", kustomization, subpackage)
    first = kpt_render(directory)
    assert dangling_references(first) == []
    job, web, worker = (
        _named(first, k, n) for k, n in (("Job", "migrate"), ("Deployment", "web"), ("Deployment", "worker"))
    )
    assert _checksum(job) and _checksum(worker) and _checksum(web)
    again = {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()}
    kpt_render(directory)
    assert {p: p.read_bytes() for p in directory.rglob("*") if p.is_file()} == again, (
        "a second render changed files"
    )
    changed = kpt_render(kpt_package(tmp_path / "changed", kustomization, subpackage, literal="v2"))
    assert _named(changed, "Job", "migrate")["metadata"]["name"] != job["metadata"]["name"]
    assert _checksum(_named(changed, "Deployment", "web")) == _checksum(web)
    unrelated = kpt_render(
        kpt_package(tmp_path / "unrelated", kustomization, subpackage, web_image="ghcr.io/acme/web:2.0")
    )
    assert _named(unrelated, "Job", "migrate")["metadata"]["name"] == job["metadata"]["name"]
    if kustomization:
        assert (directory / "kustomization.yaml").read_text().startswith("resources:\n- objects.yaml")
    OUTPUTS[f"kpt-{kustomization}-{subpackage}"] = first


# --- the control plane ------------------------------------------------------------------------------------


@functools.cache
def _all_outputs(root: Path) -> dict[str, str]:
    """The quick profile's outputs, rendered again when the cases did not run in this session."""
    found = dict(OUTPUTS)
    for case in quick_profile():
        if case.id not in found:
            found[case.id] = render(case, root / case.id.replace(":", "_"))
    for kustomization, subpackage in KPT_CASES:
        key = f"kpt-{kustomization}-{subpackage}"
        if key not in found:
            found[key] = kpt_render(kpt_package(root / key, kustomization, subpackage))
    return found


def test_outputs_apply_with_server_side_dry_run(kubeconfig: Path, namespace: str, tmp_path: Path) -> None:
    outputs = _all_outputs(tmp_path)
    assert len(outputs) >= len(quick_profile()) + len(KPT_CASES)
    failures = []
    for key, stream in outputs.items():
        docs = objects(stream)
        for doc in docs:
            doc["metadata"]["namespace"] = namespace  # the fixture's fresh namespace stands for each tree's
        proc = subprocess.run(
            [tool("kubectl"), "--kubeconfig", str(kubeconfig), "apply", "--dry-run=server", "-f", "-"],
            input=dump_all_fast(docs),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            failures.append(f"{key}: {proc.stderr.strip()}")
    assert not failures, "\n".join(failures)


def test_matrix_size_is_what_the_docs_say() -> None:
    assert len(MATRIX) == 2 * 2 * 2 * 4 * 2 * 2 * 2 * 2 * 3 == 1536
    quick = quick_profile()
    assert len(quick) == len(set(quick)) == 8
    for name, values in CHOICES.items():
        assert {getattr(c, name) for c in quick} == set(values), name
    assert dump_fast({}) == "{}\n"
