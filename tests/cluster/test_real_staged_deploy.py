"""examples/staged-deploy-real end to end on the real node (node.py): PostgreSQL as a Deployment, the
migration Job really connecting and creating its schema, the web Deployment Available only through a
readiness probe that queries that schema, the warm-up Job calling the web Service through kube-proxy.
A new tag runs exactly one new migration (the old one is not run again: its second run would fail on
its own row); an unchanged re-run runs nothing. What ran, and in what order, is read from the pods'
logs, exit codes and timestamps and from the database itself (kubectl exec through the kubelet)."""

from __future__ import annotations

import io
import re
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from e2e import ROOT, derive_source, tool
from lightkube import Client
from lightkube.resources.core_v1 import Pod

from krmfn.render import main as render_main
from krmfn.yaml.io import load_all_fast

from .node import RealNode
from .objects import present
from .runner_fixtures import Apply, Doc, Outcome
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

EXAMPLE = ROOT / "examples" / "staged-deploy-real"
APPLYSET = ("--applyset", "staged-deploy-real")
STEPS = [(step, "healthy") for step in ("database", "pre-deploy", "deploy", "post-deploy")]


@pytest.fixture
def namespace(real_namespace: str) -> str:
    return real_namespace


@pytest.fixture
def source(real_node: RealNode, tmp_path: Path) -> Path:
    """The example's source; the node's images under the names the example uses."""
    real_node.tag("postgres", "localhost/krmfn-node-postgres:15")
    for tag in ("1.0.0", "1.1.0", "9.9.9"):
        real_node.tag("app", f"localhost/krmfn-node-app:{tag}")
    return derive_source(EXAMPLE, tmp_path / "repo")


def release(source: Path, tag: str) -> list[Doc]:
    """The rendered objects of ``source`` for image tag ``tag`` (the one input a release changes)."""
    inputs = source / "fn-render-inputs.yaml"
    inputs.write_text(re.sub(r"(?m)^  tag: .*$", f"  tag: {tag}", inputs.read_text()))
    out, err = io.StringIO(), io.StringIO()
    assert render_main(["render", str(source)], stdout=out, stderr=err) == 0, err.getvalue()
    return [d for d in load_all_fast(out.getvalue()) if d]


def logs(client: Client, pod: Pod) -> list[str]:
    meta = present(pod.metadata, "pod metadata")
    return [line.rstrip("\n") for line in client.log(str(meta.name), namespace=meta.namespace)]


def pods(client: Client, namespace: str, **labels: str) -> list[Pod]:
    selector: dict[str, Any] = dict(labels)
    return list(client.list(Pod, namespace=namespace, labels=selector))


def exit_code(pod: Pod) -> int:
    [status] = present(present(pod.status, "pod status").containerStatuses, "container statuses")
    return present(present(status.state, "state").terminated, "terminated state").exitCode


def finished(pod: Pod) -> datetime:
    [status] = present(present(pod.status, "pod status").containerStatuses, "container statuses")
    return present(present(present(status.state, "state").terminated, "terminated").finishedAt, "finishedAt")


def started(pod: Pod) -> datetime:
    [status] = present(present(pod.status, "pod status").containerStatuses, "container statuses")
    state = present(status.state, "state")
    running = state.running.startedAt if state.running else None
    return present(running or present(state.terminated, "terminated").startedAt, "startedAt")


def ready_since(pod: Pod) -> datetime:
    conditions = present(present(pod.status, "pod status").conditions, "conditions")
    [ready] = [c for c in conditions if c.type == "Ready" and c.status == "True"]
    return present(ready.lastTransitionTime, "Ready's lastTransitionTime")


def sql(kubeconfig: Path, namespace: str, query: str) -> list[str]:
    """``query``'s rows, run by psql inside the database's pod: kubectl exec, through the kubelet."""
    argv = [tool("kubectl"), "--kubeconfig", str(kubeconfig), "exec", "-n", namespace, "deploy/db", "--",
            "psql", "--host=/tmp", "--username=postgres", "-X", "-t", "-A", "-c", query]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def job_pods(client: Client, namespace: str, base_name: str) -> list[Pod]:
    """Pods of the Jobs named ``base_name-<hash>``."""
    return [
        pod
        for pod in client.list(Pod, namespace=namespace)
        if base((present(pod.metadata, "").labels or {}).get("batch.kubernetes.io/job-name", "")) == base_name
    ]


def created_jobs(out: Outcome) -> list[str]:
    return sorted(e["object"].split("/")[-1] for e in out.of("apply") if e["object"].startswith("Job.batch")
                  and e["action"] == "created")  # fmt: skip


def test_the_staged_deploy_runs_for_real_and_a_new_tag_runs_exactly_one_new_migration(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, source: Path
) -> None:
    first = apply(release(source, "1.0.0"), *APPLYSET)
    assert first.code == 0, first.error
    assert first.step_results() == STEPS
    [migration] = job_pods(kube_client, namespace, "db-migration")
    [warmup] = job_pods(kube_client, namespace, "cache-warmup")
    web = pods(kube_client, namespace, **{"app.kubernetes.io/name": "web"})
    assert (exit_code(migration), exit_code(warmup), len(web)) == (0, 0, 2)
    assert logs(kube_client, migration)[-1] == "migration to schema 1.0.0: applied; schemas now 1.0.0"
    # In order: the schema, then the web pods' readiness (their probe queries it), then the warm-up.
    assert all(finished(migration) <= ready_since(pod) for pod in web)
    assert all(ready_since(pod) <= started(warmup) for pod in web)
    web_logs = {present(p.metadata, "").name: logs(kube_client, p) for p in web}
    assert all("ready: schema 1.0.0 present" in lines for lines in web_logs.values()), web_logs
    [answer] = logs(kube_client, warmup)
    assert re.fullmatch(r"warm-up: http://10\.96\.\d+\.\d+:80/warmup: 200 warmed schema 1\.0\.0", answer)
    served = [n for n, lines in web_logs.items() if any("recorded for schema 1.0.0" in x for x in lines)]
    assert len(served) == 1, web_logs  # the Service sent the warm-up to one of the two pods
    assert sql(kubeconfig, namespace, "SELECT version FROM schema_migrations") == ["1.0.0"]
    assert sql(kubeconfig, namespace, "SELECT version FROM warmups") == ["1.0.0"]

    second = apply(release(source, "1.1.0"), *APPLYSET)
    assert second.code == 0, second.error
    assert second.step_results() == STEPS
    # Exactly one new migration (and the warm-up, whose image follows the tag); the old ones are pruned.
    assert [base(name) for name in created_jobs(second)] == ["cache-warmup", "db-migration"]
    assert not set(created_jobs(second)) & set(created_jobs(first))
    pruned = sorted(e["object"].split("/")[-1] for e in second.of("prune") if e["action"] == "deleted")
    assert pruned == created_jobs(first), second.of("prune")
    # The old migration did not run again: its INSERT of 1.0.0 would have failed the step.
    assert sql(kubeconfig, namespace, "SELECT version FROM schema_migrations ORDER BY applied_at") == [
        "1.0.0",
        "1.1.0",
    ]
    assert sql(kubeconfig, namespace, "SELECT version FROM warmups ORDER BY at") == ["1.0.0", "1.1.0"]
    web = [p for p in pods(kube_client, namespace, **{"app.kubernetes.io/name": "web"}) if is_current(p)]
    assert len(web) == 2
    assert all("ready: schema 1.1.0 present" in logs(kube_client, p) for p in web)

    before = {present(p.metadata, "").uid for p in kube_client.list(Pod, namespace=namespace)}
    third = apply(release(source, "1.1.0"), *APPLYSET)
    assert third.code == 0, third.error
    assert created_jobs(third) == []
    assert {e["action"] for e in third.of("apply")} <= {"unchanged"}, third.of("apply")
    assert {present(p.metadata, "").uid for p in kube_client.list(Pod, namespace=namespace)} == before
    assert sql(kubeconfig, namespace, "SELECT count(*) FROM warmups") == ["2"]


def base(job_name: str) -> str:
    """``db-migration`` of ``db-migration-1a2b3c4d`` (hash-job-names' suffix)."""
    return job_name.rsplit("-", 1)[0]


def is_current(pod: Pod) -> bool:
    return present(pod.metadata, "pod metadata").deletionTimestamp is None


def test_a_release_whose_schema_is_missing_never_becomes_available(
    apply: Apply, kube_client: Client, namespace: str, source: Path
) -> None:
    # Tag 9.9.9 without its migration: the web pods run, but their readiness probe finds no schema 9.9.9.
    docs = [d for d in release(source, "9.9.9") if d["kind"] != "Job"]
    for doc in docs:
        notes = doc["metadata"]["annotations"]
        if notes["krmfn.dev/step"] == "deploy":
            notes["krmfn.dev/step-timeout"] = "15s"  # timeout under test
    out = apply(docs, *APPLYSET, "--wait")  # the deploy step is the last one now
    assert out.code == 1
    assert out.step_results() == [("database", "healthy"), ("pre-deploy", "healthy"), ("deploy", "timeout")]
    assert f"Deployment.apps {namespace}/web" in out.error
    web = pods(kube_client, namespace, **{"app.kubernetes.io/name": "web"})
    assert web and all(
        any(line.startswith("not ready: schema 9.9.9 missing") for line in logs(kube_client, p)) for p in web
    )
