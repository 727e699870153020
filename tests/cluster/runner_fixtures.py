"""Helpers for the `krmfn apply` cluster tests: manifest builders, runner fixtures, inventory checks.

    from .runner_fixtures import apply, job, deployment, configmap   # noqa: F401 (apply is a fixture)

``apply(docs, *flags)`` writes ``docs`` to a file and runs ``krmfn apply -f FILE -n <test namespace>
-o json`` against the test cluster, returning the exit code and the decoded events.
``spawn(docs, *flags)`` runs the same command as a child process (to kill it, or to run two at once)
and returns a ``Background`` to read its events one by one. ``inventory_problems`` lists what is
incoherent in an ApplySet parent.
"""

from __future__ import annotations

import contextlib
import io
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.resource import NamespacedResource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.rbac_v1 import PolicyRule, RoleRef, Subject
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Secret
from lightkube.resources.rbac_authorization_v1 import Role, RoleBinding

from krmfn.runner.commands.cli import main
from krmfn.runner.inventory.applyset import GROUP_KINDS, ID_LABEL, NAMESPACES, OUTCOMES, PART_OF, applyset_id
from krmfn.runner.reserved import JOB_RECORDS, LOCK
from krmfn.yaml.io import dump_all_fast

from .cluster import Cluster
from .objects import meta
from .patience import EVENT_WAIT, STEP_TIMEOUT

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
    timeout: str | None = STEP_TIMEOUT,
    ttl: int | None = None,
    restart_policy: str = "Never",
    backoff_limit: int = 0,
    **spec_fields: Any,
) -> Doc:
    """A Job whose pod completes after ~1s (kwok stages); ``fail`` makes it exit 3, ``slow`` delays it.
    ``spec_fields`` are set on the Job's spec as given (``suspend=True``, ``completionMode="Indexed"``)."""
    labels = {}
    if fail:
        labels["test.krmfn.dev/fail"] = "3"
    if slow:
        labels["test.krmfn.dev/slow"] = slow
    template: Doc = {
        "spec": {"restartPolicy": restart_policy, "containers": [{"name": "main", "image": image}]}
    }
    if labels:
        template["metadata"] = {"labels": labels}
    spec: Doc = {"backoffLimit": backoff_limit, "template": template, **spec_fields}
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
        "metadata": _meta(name, step, None, STEP_TIMEOUT),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def runs(doc: Doc, image: str, script: str, container: str = "main") -> Doc:
    """``doc`` (a Job or Deployment from the builders above) with its container running ``sh -c script``
    in ``image``, a local image of the real node (imagePullPolicy Never: there is no registry)."""
    spec = doc["spec"]["template"]["spec"]
    spec["containers"][0].update(name=container, image=image, imagePullPolicy="Never",
                                 command=["sh", "-c", script])  # fmt: skip
    return doc


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
        return [(e["stepName"], e["result"]) for e in self.of("step-done")]


Apply = Callable[..., Outcome]


def _inventory(docs: list[Doc], flags: tuple[str, ...]) -> list[str]:
    """``--applyset krmfn`` (the inventory inventory_problems reads) unless the test names the app itself,
    with the flag or with krmfn.dev/app on its objects."""
    named = any("krmfn.dev/app" in (d["metadata"].get("annotations") or {}) for d in docs)
    return [] if named or any(f.startswith("--applyset") for f in flags) else ["--applyset", "krmfn"]


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
            *_inventory(docs, flags),
            *flags,
        ]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        return Outcome(code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue())

    return run


@dataclass
class Background:
    """A ``krmfn apply -o json`` child process whose events are read as they come."""

    proc: subprocess.Popen[str]
    events: list[Doc] = field(default_factory=list)
    _lines: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def until(self, predicate: Callable[[Doc], bool], timeout: float = EVENT_WAIT) -> Doc:
        """Reads events until one satisfies ``predicate``; returns it."""
        while True:
            line = self._lines.get(timeout=timeout)
            assert line is not None, f"the run ended first: {self.events}"
            event: Doc = json.loads(line)
            self.events.append(event)
            if predicate(event):
                return event

    def kill(self) -> None:
        """SIGKILL, and reap the process (a zombie would still look alive to kill(pid, 0))."""
        self.proc.kill()
        self.proc.wait(10)

    def finish(self, timeout: float = EVENT_WAIT) -> Outcome:
        code = self.proc.wait(timeout)
        while (line := self._lines.get(timeout=5)) is not None:
            self.events.append(json.loads(line))
        assert self.proc.stderr is not None
        return Outcome(code, self.events, self.proc.stderr.read())


Spawn = Callable[..., Background]


@pytest.fixture
def spawn(kubeconfig: Path, namespace: str, tmp_path: Path) -> Iterator[Spawn]:
    counter = iter(range(1000))
    started: list[Background] = []

    def run(docs: list[Doc], *flags: str) -> Background:
        path = tmp_path / f"spawned-{next(counter)}.yaml"
        path.write_text(dump_all_fast(docs))
        argv = [str(Path(sys.executable).parent / "krmfn"), "apply", "-f", str(path), "-n", namespace,
                "--kubeconfig", str(kubeconfig), "-o", "json", *_inventory(docs, flags), *flags]  # fmt: skip
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(Background(proc))
        return started[-1]

    yield run
    for bg in started:  # a failed test must not leave a runner behind
        if bg.proc.poll() is None:
            bg.kill()


Member = ConfigMap | Deployment | Job | Secret
MEMBER_KINDS: list[type[Member]] = [ConfigMap, Deployment, Job, Secret]
"""The kinds the runner tests apply; inventory_problems looks for members among them."""


def _group_kind(res: type[NamespacedResource]) -> str:
    info = res._api_info.resource  # lightkube's (group, version, kind) of the class
    return f"{info.kind}.{info.group}" if info.group else info.kind


def inventory_problems(client: Client, namespace: str, applyset: str = "krmfn") -> list[str]:
    """What is incoherent in the ApplySet parent ``namespace/applyset``: a member whose kind or namespace
    the parent does not list (a later prune would miss it), a lock left behind, a malformed annotation."""
    set_id = applyset_id(applyset, namespace)
    parent = client.get(Secret, applyset, namespace=namespace)
    problems = []
    if (meta(parent).labels or {}).get(ID_LABEL) != set_id:
        problems.append(f"parent label {ID_LABEL} is not {set_id}")
    notes = meta(parent).annotations or {}
    if LOCK in notes:
        problems.append(f"lock left behind: {notes[LOCK]}")
    kinds = {k for k in notes.get(GROUP_KINDS, "").split(",") if k}
    namespaces = {namespace} | {n for n in notes.get(NAMESPACES, "").split(",") if n}
    for res in MEMBER_KINDS:
        for member in client.list(res, namespace="*", labels={PART_OF: set_id}):
            where = f"{_group_kind(res)} {meta(member).namespace}/{meta(member).name}"
            if _group_kind(res) not in kinds:
                problems.append(f"{where} is a member but {GROUP_KINDS} is {sorted(kinds)}")
            if meta(member).namespace not in namespaces:
                problems.append(f"{where} is a member in a namespace the parent does not list")
    for entry in filter(None, notes.get(JOB_RECORDS, "").split(",")):
        job_ref, sep, record = entry.partition("=")
        spec_hash, _, outcome = record.partition(":")
        if not sep or job_ref.count("/") != 1 or len(spec_hash) != 32 or outcome not in OUTCOMES:
            problems.append(f"malformed Job record {entry!r}")
    return problems


def deployer_kubeconfig(cluster: Cluster, namespace: str, path: Path, rules: list[PolicyRule]) -> Path:
    """A kubeconfig at ``path`` for the ServiceAccount ``deployer`` of ``namespace``, allowed ``rules``
    there and nothing else."""
    client = cluster.client()
    client.create(Role(metadata=ObjectMeta(name="deployer", namespace=namespace), rules=rules))
    client.create(RoleBinding(
        metadata=ObjectMeta(name="deployer", namespace=namespace),
        roleRef=RoleRef(apiGroup="rbac.authorization.k8s.io", kind="Role", name="deployer"),
        subjects=[Subject(kind="ServiceAccount", name="deployer", namespace=namespace)],
    ))  # fmt: skip
    return cluster.service_account_kubeconfig(namespace, "deployer", path)
