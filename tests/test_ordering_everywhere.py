"""One ordering check (krmfn/k8s/ordering.py) on every path: set-steps when rendering, ``krmfn
plan|apply|diff`` on a rendered stream, ``krmfn export`` on the same. A stream whose steps would hang a
cluster (a pod template before what it uses, an object before its Namespace, a custom resource before its
CRD) is refused by each, naming both objects and both steps; a stream rendered elsewhere (by hand, by an older
set-steps, with set-steps in a base) is checked too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from krmfn.export import main as export_main
from krmfn.functions.set_steps import FUNCTION
from krmfn.runner.commands.cli import main as runner_main
from krmfn.yaml.io import _load_fast, dump_all_fast

Doc = dict[str, Any]
STEPS = ("pre-deploy", "deploy")


def at(doc: Doc, step: int) -> Doc:
    doc["metadata"].setdefault("annotations", {}).update(
        {"krmfn.dev/step": STEPS[step], "krmfn.dev/step-index": str(step), "krmfn.dev/step-pin": STEPS[step]}
    )
    return doc


def job(**pod_spec: Any) -> Doc:
    spec = {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x", **pod_spec.pop("c", {})}]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "apps"},
        "spec": {"template": {"spec": {**spec, **pod_spec}}},
    }


def core(kind: str, name: str, namespace: str | None = "apps") -> Doc:
    meta: Doc = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}},
}
WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "apps"}}

# name -> (the object that comes too early, what it needs, the words of the error)
LAYOUTS: dict[str, tuple[Doc, Doc, str]] = {
    "configMap": (job(c={"envFrom": [{"configMapRef": {"name": "cfg"}}]}), core("ConfigMap", "cfg"),
                  "its pod template uses ConfigMap apps/cfg"),
    "secret": (job(c={"env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "s", "key": "p"}}}]}),
               core("Secret", "s"), "its pod template uses Secret apps/s"),
    "serviceAccount": (job(serviceAccountName="runner"), core("ServiceAccount", "runner"),
                       "its pod template uses ServiceAccount apps/runner"),
    "pvc": (job(volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]),
            core("PersistentVolumeClaim", "data"), "its pod template uses PersistentVolumeClaim apps/data"),
    "namespace": (core("ConfigMap", "cfg"), core("Namespace", "apps", None), "it lives in Namespace apps"),
    "crd": (WIDGET, CRD, "its kind is defined by CustomResourceDefinition widgets.example.com"),
}  # fmt: skip


def stream(layout: str, early: int, late: int) -> list[Doc]:
    first, needed, _ = LAYOUTS[layout]
    return [at(_load_fast(dump_all_fast([first])), early), at(_load_fast(dump_all_fast([needed])), late)]


def set_steps(docs: list[Doc]) -> tuple[int, list[str]]:
    cfg = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "SetSteps", "metadata": {"name": "s"},
           "steps": [{"name": name} for name in STEPS]}  # fmt: skip
    outcome = FUNCTION.outcome(dump_all_fast(docs), None, cfg)
    return outcome.code, [r.message for r in outcome.results if r.severity == "error"]


def plan(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = runner_main(["plan", "-f", str(path), "-n", "apps"])
    return code, capsys.readouterr().err


def export(path: Path, engine: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    extra = ["--name", "shop", "-n", "apps", "--allow-secrets"] if engine == "resourceset" else []
    code = export_main(["export", engine, "-f", str(path), *extra])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("order", ["too-early", "same-step", "after"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_path_refuses_the_same_layouts(
    layout: str, order: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    early, late = {"too-early": (0, 1), "same-step": (1, 1), "after": (1, 0)}[order]
    docs = stream(layout, early, late)
    words = LAYOUTS[layout][2]
    path = tmp_path / "rendered.yaml"
    path.write_text(dump_all_fast(docs))
    code, messages = set_steps(docs)
    outcomes = {
        "set-steps": (code, "\n".join(messages)),
        "plan": plan(path, capsys),
        "argocd": export(path, "argocd", capsys),
        "resourceset": export(path, "resourceset", capsys),
    }
    if order != "too-early":
        assert {k: c for k, (c, _) in outcomes.items()} == dict.fromkeys(outcomes, 0), outcomes
        return
    codes = {k: c for k, (c, _) in outcomes.items()}
    assert codes == {"set-steps": 1, "plan": 2, "argocd": 1, "resourceset": 1}
    for where, (_, text) in outcomes.items():
        assert f"in step 'pre-deploy', but {words}, in the later step 'deploy'" in text, (where, text)
        assert text.count("\n") <= (0 if where == "set-steps" else 1), text  # one line on stderr
