"""Order is never silently lost under kustomize's name transformations (issue 34), with the real kustomize.

A case is a tree: a base (a Namespace, a CRD and one of its custom resources, a migration Job that uses a
ConfigMap, a Secret, a ServiceAccount and a PersistentVolumeClaim, a Deployment) and the overlay that is
built, with any of namePrefix, nameSuffix, namespace, a configMapGenerator (with or without the hash
suffix), a second overlay level between base and overlay (its own namePrefix) and a component that
generates the Secret. The chain (hash-job-names, set-steps, in krmfn-render) runs either inside the build
(an exec transformer) or in a pipe after it (``kustomize build | krmfn-render --fn-config``), and a case
checks one of:

- ``ordering``: the Job's step comes before everything it needs: the build or the pipe fails, naming every
  such object (the ConfigMap, the Secret, the ServiceAccount, the claim, the Namespace, the CRD); the right
  layout passes and puts them in the Job's step;
- ``selectors``: selectors written against the base's names (``name: db-migrate``) put the Job and what it
  needs before the Deployment inside the build; in the pipe, where those names are gone, the run fails
  unless no name changed, and each error suggests a selector; with the suggested selectors both
  placements put everything in place, and still do in the next release (new data, new image: new
  hashes). A generator's hash alone changes nothing: the functions see through it in the pipe too.
  ``unmatchedSelectors: warning`` is the only way to a zero exit with the order lost.

The quick profile (in the normal suite) is eight cases that cover every value of every dimension;
``KRMFN_CONFORMANCE=full`` runs the whole matrix (384 trees), as in tests/test_conformance.py.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
from e2e import env, tool
from kustomize_trees import deployment, objects, write_tree

from krmfn.yaml.io import dump_fast, load_all_fast

pytestmark = pytest.mark.e2e
FULL = os.environ.get("KRMFN_CONFORMANCE") == "full"
COMPONENT = "app.kubernetes.io/component"
NEEDED = (
    "Namespace",
    "CustomResourceDefinition",
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "PersistentVolumeClaim",
)
FIRST = ("Job", "Widget", *NEEDED)  # what the migration step must hold


@dataclass(frozen=True)
class Case:
    prefix: bool = False
    suffix: bool = False
    namespace: bool = False
    generator: str = "none"  # none | hashed | unhashed
    levels: int = 1  # 2: base -> mid (namePrefix eu-) -> prod
    component: bool = False  # the Secret comes from a component's secretGenerator
    check: str = "ordering"  # ordering | selectors
    placement: str = "exec"  # exec | pipe

    @property
    def id(self) -> str:
        flags = [f.name for f in fields(self) if getattr(self, f.name) is True]
        return "-".join(
            [self.check, self.placement, f"gen:{self.generator}", f"levels:{self.levels}", *flags]
        )

    @property
    def renames(self) -> bool:
        """Whether a name in the build output differs from the base's by more than a generator's hash
        (which the functions see through: ``web-config`` selects ``web-config-89g4tffbfk``)."""
        return self.prefix or self.suffix or self.namespace or self.levels == 2


CHOICES: dict[str, tuple[Any, ...]] = {
    "prefix": (False, True),
    "suffix": (False, True),
    "namespace": (False, True),
    "generator": ("none", "hashed", "unhashed"),
    "levels": (1, 2),
    "component": (False, True),
    "check": ("ordering", "selectors"),
    "placement": ("exec", "pipe"),
}
MATRIX = [Case(*values) for values in itertools.product(*CHOICES.values())]


def quick_profile() -> list[Case]:
    """Eight cases that between them take every value of every dimension."""
    return [
        Case(prefix=True, generator="hashed", check="ordering", placement="exec"),
        Case(prefix=True, suffix=True, namespace=True, generator="hashed", levels=2, component=True,
             check="selectors", placement="pipe"),
        Case(suffix=True, generator="unhashed", component=True, check="ordering", placement="pipe"),
        Case(namespace=True, levels=2, check="selectors", placement="exec"),
        Case(check="selectors", placement="pipe"),
        Case(prefix=True, namespace=True, levels=2, component=True, check="ordering", placement="exec"),
        Case(prefix=True, generator="hashed", check="selectors", placement="exec"),
        Case(prefix=True, suffix=True, generator="unhashed", levels=2, check="ordering", placement="pipe"),
    ]  # fmt: skip


CASES = MATRIX if FULL else quick_profile()

# --- trees -------------------------------------------------------------------------------------------


def base_objects(case: Case, image: str) -> list[dict[str, Any]]:
    def meta(name: str, **labels: str) -> dict[str, Any]:
        found: dict[str, Any] = {"name": name, "namespace": "apps"}
        if labels:
            found["labels"] = labels
        return found

    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta("db-migrate", **{COMPONENT: "migration"}),
        "spec": {
            "backoffLimit": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": "runner",
                    "containers": [
                        {
                            "name": "m",
                            "image": image,
                            "envFrom": [{"configMapRef": {"name": "web-config"}}],
                            "env": [
                                {
                                    "name": "PASSWORD",
                                    "valueFrom": {
                                        "secretKeyRef": {"name": "db-credentials", "key": "password"}
                                    },
                                }
                            ],
                        }
                    ],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
                }
            },
        },
    }
    web = deployment("web", "web-config", "web:1", namespace="apps")
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    found: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}},
        crd,
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta("w", **{COMPONENT: "migration"})},
        job,
        web,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("runner")},
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta("data"),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    ]
    if case.generator == "none":
        found.append(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("web-config"), "data": {"A": "1"}}
        )
    if not case.component:
        found.append({"apiVersion": "v1", "kind": "Secret", "metadata": meta("db-credentials"),
                      "stringData": {"password": "p"}})  # fmt: skip
    return found


def render_config(steps: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "Render", "metadata": {"name": "render"},
            "hashJobNames": {}, "setSteps": steps}  # fmt: skip


def tree_of(
    case: Case, steps: dict[str, Any], literal: str = "1", image: str = "migrate:1"
) -> dict[str, Any]:
    tree: dict[str, Any] = {
        "base/kustomization.yaml": {"resources": ["objects.yaml"]},
        "base/objects.yaml": base_objects(case, image),
    }
    overlay: dict[str, Any] = {"resources": ["../base"]}
    if case.levels == 2:
        tree["mid/kustomization.yaml"] = {"resources": ["../base"], "namePrefix": "eu-"}
        overlay["resources"] = ["../mid"]
    if case.prefix:
        overlay["namePrefix"] = "prod-"
    if case.suffix:
        overlay["nameSuffix"] = "-v2"
    if case.namespace:
        overlay["namespace"] = "shop"
    if case.generator != "none":
        entry: dict[str, Any] = {"name": "web-config", "namespace": "apps", "literals": [f"A={literal}"]}
        if case.generator == "unhashed":
            entry["options"] = {"disableNameSuffixHash": True}
        overlay["configMapGenerator"] = [entry]
    elif literal != "1":
        objs = tree["base/objects.yaml"]
        next(o for o in objs if o["kind"] == "ConfigMap")["data"]["A"] = literal
    if case.component:
        overlay["components"] = ["../component"]
        tree["component/kustomization.yaml"] = {
            "apiVersion": "kustomize.config.k8s.io/v1alpha1",
            "kind": "Component",
            "secretGenerator": [
                {"name": "db-credentials", "namespace": "apps", "literals": [f"password={literal}"]}
            ],
        }
    config = render_config(steps)
    tree["render.yaml"] = config
    if case.placement == "exec":
        config = {**config, "metadata": {"name": "render", "annotations": {
            "config.kubernetes.io/function": "exec:\n  path: krmfn-render\n"}}}  # fmt: skip
        tree["prod/fn-render.yaml"] = config
        overlay["transformers"] = ["fn-render.yaml"]
    tree["prod/kustomization.yaml"] = overlay
    return tree


@dataclass
class Outcome:
    code: int
    errors: list[str]
    warnings: list[str]
    steps: dict[str, str]
    """kind -> krmfn.dev/step of its one object (empty when the run failed)."""
    names: dict[str, str]
    """kind -> name of its one object in the output."""
    objects: list[dict[str, Any]]


def _run(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, input=stdin, cwd=cwd, env=env(), capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip


def build(root: Path, case: Case, placement: str, steps: dict[str, Any], **variant: str) -> Outcome:
    """The tree of ``case`` built with the chain in ``placement`` (exec or pipe)."""
    directory = root / f"{placement}-{len(list(root.glob('*'))) if root.exists() else 0}"
    write_tree(directory, tree_of(Case(**{**case.__dict__, "placement": placement}), steps, **variant))
    kustomize = [tool("kustomize"), "build", "--enable-alpha-plugins", "--enable-exec", "prod"]
    done = _run(kustomize if placement == "exec" else [*kustomize[:2], "prod"], directory)
    stderr = done.stderr
    if placement == "pipe" and done.returncode == 0:
        done = _run(["krmfn-render", "--fn-config", "render.yaml"], directory, done.stdout)
        stderr += done.stderr
    lines = stderr.splitlines()
    errors = [line for line in lines if line.startswith("krmfn-render: error: ")]
    warnings = [line for line in lines if line.startswith("krmfn-render: warning: ")]
    assert done.returncode == 0 or errors, f"failed without a krmfn error:\n{stderr}"
    out = objects(done.stdout) if done.returncode == 0 else []
    steps_of = {o["kind"]: str((o["metadata"].get("annotations") or {}).get("krmfn.dev/step")) for o in out}
    names = {o["kind"]: o["metadata"]["name"] for o in out}
    assert len(steps_of) == len(out), "one object per kind"
    return Outcome(done.returncode, errors, warnings, steps_of, names, out)


def in_place(outcome: Outcome) -> bool:
    return (
        outcome.code == 0
        and all(outcome.steps[k] == "pre-deploy" for k in FIRST)
        and (outcome.steps["Deployment"] == "deploy")
    )


def layout(*selectors: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"defaultStep": "deploy", "steps": [{"name": "pre-deploy", "selectors": list(selectors)},
                                               {"name": "deploy"}], **extra}  # fmt: skip


BY_LABEL = {"labels": {COMPONENT: "migration"}}
BASE_NAMES = (
    {"kind": "Job", "name": "db-migrate"},
    {"kind": "Widget", "name": "w"},
    {"kind": "Namespace", "name": "apps"},
    {"kind": "CustomResourceDefinition", "name": "widgets.example.com"},
    {"kind": "ConfigMap", "name": "web-config"},
    {"kind": "Secret", "name": "db-credentials"},
    {"kind": "ServiceAccount", "name": "runner"},
    {"kind": "PersistentVolumeClaim", "name": "data"},
)
MISORDERS = (
    *(
        f"its pod template uses {kind} "
        for kind in ("ConfigMap", "Secret", "ServiceAccount", "PersistentVolumeClaim")
    ),
    "it lives in Namespace ",
    "its kind is defined by CustomResourceDefinition widgets.example.com",
)
SUGGESTION = re.compile(r"; it may mean ([^:]+(?:: [^:]+)*?): select (\{[^{}]*\})")

# --- the checks ----------------------------------------------------------------------------------------


def check_ordering(case: Case, root: Path) -> None:
    wrong = build(root, case, case.placement, layout(BY_LABEL))
    assert wrong.code != 0, "a Job before everything it needs passed"
    for words in MISORDERS:
        found = [e for e in wrong.errors if words in e and "in the later step 'deploy'" in e]
        assert found, f"no error says {words!r}:\n" + "\n".join(wrong.errors)
    right = build(
        root, case, case.placement, layout(BY_LABEL, *({"kind": k} for k in NEEDED), emit=["depends-on"])
    )
    assert in_place(right), right
    assert dangling_depends_on(right.objects) == []


def dangling_depends_on(objs: list[dict[str, Any]]) -> list[str]:
    """kpt live's references (set-steps ``emit: [depends-on]``) that name no object of the output: inside a
    build a generated ConfigMap has no hash suffix yet when set-steps writes them."""
    present = {
        (
            o["apiVersion"].rpartition("/")[0],
            o["kind"],
            o["metadata"].get("namespace", ""),
            o["metadata"]["name"],
        )
        for o in objs
    }
    missing = []
    for obj in objs:
        text = (obj["metadata"].get("annotations") or {}).get("config.kubernetes.io/depends-on", "")
        for entry in filter(None, text.split(",")):
            parts = entry.split("/")
            group, kind, namespace, name = (
                (parts[0], parts[3], parts[2], parts[4])
                if len(parts) == 5
                else (parts[0], parts[1], "", parts[2])
            )
            if (group, kind, namespace, name) not in present:
                missing.append(f"{obj['kind']} {obj['metadata']['name']}: {entry}")
    return missing


def check_selectors(case: Case, root: Path) -> None:
    based = build(root, case, case.placement, layout(*BASE_NAMES))
    if case.placement == "exec" or not case.renames:
        assert in_place(based), based  # kustomize's build annotations keep the base names, or nothing changed
        if case.placement == "exec":
            return
    if case.renames:
        assert based.code != 0, "base names matched nothing and the run passed"
        accepted = build(root, case, "pipe", layout(*BASE_NAMES, unmatchedSelectors="warning"))
        # Accepted: warnings and a zero exit, unless what fell behind is needed earlier (the ordering
        # check is never opted out of).
        assert accepted.warnings or accepted.code != 0, accepted
        assert accepted.code == 0 or all(
            ", but " in e and "in the later step" in e for e in accepted.errors
        ), accepted
    built = build(root, case, "exec", layout(*BASE_NAMES))  # the same names as the pipe's output
    hashed = {
        "Job",
        *(["ConfigMap"] if case.generator == "hashed" else []),
        *(["Secret"] if case.component else []),
    }
    suggested = []
    for index, selector in enumerate(BASE_NAMES):
        errors = [e for e in based.errors if f".selectors[{index}]: " in e]
        if not errors:
            suggested.append(selector)  # it matched in the pipe too
            continue
        (error,) = errors
        match = SUGGESTION.search(error)
        assert match, error
        shown = match.group(1).split(", ")
        assert len(shown) == len(set(shown)), f"an object named twice: {error}"
        (choice,) = load_all_fast(match.group(2))
        if selector["kind"] in hashed:
            assert choice["name"] != built.names[selector["kind"]], f"a hashed name suggested: {error}"
        suggested.append(choice)
    for placement in ("exec", "pipe"):
        assert in_place(build(root, case, placement, layout(*suggested))), (placement, suggested)
        # The next release: new data and a new image, so new generator and Job hashes.
        assert in_place(build(root, case, placement, layout(*suggested), literal="2", image="migrate:2")), (
            placement, "next release", suggested
        )  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_order_is_never_silently_lost(case: Case, tmp_path: Path) -> None:
    (check_ordering if case.check == "ordering" else check_selectors)(case, tmp_path)


def test_matrix_size_and_quick_profile() -> None:
    assert len(MATRIX) == 2 * 2 * 2 * 3 * 2 * 2 * 2 * 2 == 384
    quick = quick_profile()
    assert len(quick) == len(set(quick)) == 8
    for name, values in CHOICES.items():
        assert {getattr(c, name) for c in quick} == set(values), name
    assert dump_fast({}) == "{}\n"
