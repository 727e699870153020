"""Helpers for the `krmfn apply` cluster tests: manifest builders and an in-process runner fixture.

    from .runner_fixtures import apply, job, deployment, configmap   # noqa: F401 (apply is a fixture)

``apply(docs, *flags)`` writes ``docs`` to a file and runs ``krmfn apply -f FILE -n <test namespace>
-o json`` against the test cluster, returning the exit code and the decoded events.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from krmfn.runner.cli import main
from krmfn.yamlio import dump_all_fast

Doc = dict[str, Any]


def _meta(name: str, step: int | None, annotations: dict[str, str] | None, timeout: str | None) -> Doc:
    notes = dict(annotations or {})
    if step is not None:
        notes.setdefault("krmfn.dev/step-index", str(step))
        notes.setdefault("krmfn.dev/step", f"step{step}")
    if timeout:
        notes["krmfn.dev/step-timeout"] = timeout
    meta: Doc = {"name": name}
    if notes:
        meta["annotations"] = notes
    return meta


def job(
    name: str,
    step: int | None = None,
    *,
    image: str = "app:1",
    fail: bool = False,
    slow: str | None = None,
    annotations: dict[str, str] | None = None,
    timeout: str | None = "30s",
    ttl: int | None = None,
) -> Doc:
    """A Job whose pod completes after ~1s (kwok stages); ``fail`` makes it exit 3, ``slow`` delays it."""
    labels = {}
    if fail:
        labels["test.krmfn.dev/fail"] = "3"
    if slow:
        labels["test.krmfn.dev/slow"] = slow
    template: Doc = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": image}]}}
    if labels:
        template["metadata"] = {"labels": labels}
    spec: Doc = {"backoffLimit": 0, "template": template}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(name, step, annotations, timeout),
        "spec": spec,
    }


def deployment(name: str, step: int | None = None, *, image: str = "app:1", replicas: int = 2) -> Doc:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, step, None, "30s"),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def configmap(
    name: str, step: int | None = None, annotations: dict[str, str] | None = None, **data: str
) -> Doc:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(name, step, annotations, None),
        "data": data,
    }


def final_wait(doc: Doc) -> Doc:
    doc["metadata"].setdefault("annotations", {})["krmfn.dev/wait"] = "true"
    return doc


@dataclass
class Outcome:
    code: int
    events: list[Doc]
    stderr: str

    def of(self, kind: str) -> list[Doc]:
        return [e for e in self.events if e["type"] == kind]

    def actions(self) -> dict[str, str]:
        """object -> the last apply action reported for it."""
        return {e["object"]: e["action"] for e in self.of("apply")}

    @property
    def error(self) -> str:
        errors = self.of("error")
        return str(errors[-1]["message"]) if errors else ""

    @property
    def result(self) -> Doc:
        return self.of("result")[-1]

    def step_results(self) -> list[tuple[str, str]]:
        return [(e["name"], e["result"]) for e in self.of("step-done")]


Apply = Callable[..., Outcome]


@pytest.fixture
def apply(kubeconfig: Path, namespace: str, tmp_path: Path) -> Apply:
    counter = iter(range(1000))

    def run(docs: list[Doc], *flags: str) -> Outcome:
        path = tmp_path / f"manifests-{next(counter)}.yaml"
        path.write_text(dump_all_fast(docs))
        out, err = io.StringIO(), io.StringIO()
        argv = [
            "apply",
            "-f",
            str(path),
            "-n",
            namespace,
            "--kubeconfig",
            str(kubeconfig),
            "-o",
            "json",
            *flags,
        ]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        return Outcome(code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue())

    return run
