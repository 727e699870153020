"""`krmfn apply` and a Job's triggers (``krmfn.dev/hash-from``) on the real API server: a new image of the
web app and an unrelated change of the migration Job (an env var) keep the migration's name, so the live
Job that completed for the same triggers is `skipped`, with why, while the Deployment rolls; a change of
a trigger (the schema ConfigMap) names a new Job, which runs, and the old one is pruned. The API server's
own `field is immutable` is what the runner answers here: tests/test_runner_job_triggers.py pins the rest
on a fake."""

from __future__ import annotations

from typing import Any

from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job

from krmfn.functions.hash_job_names import FUNCTION as HASH_JOB_NAMES
from krmfn.yaml.io import _load_fast, dump_fast

from .objects import meta, pod_spec, status_of
from .runner_fixtures import Apply, configmap, deployment, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

Doc = dict[str, Any]
TRIGGERS = {"krmfn.dev/hash-from": "image,configmap/db-schema"}


def rendered(web_image: str, log_level: str, schema: str) -> list[Doc]:
    """The schema ConfigMap and the migration Job in step 0, the web app in step 1, the Job named by
    hash-job-names as a render names it."""
    migration = job("db-migration", 0, image="migrate:1", annotations=dict(TRIGGERS))
    container = migration["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "LOG_LEVEL", "value": log_level}]
    container["envFrom"] = [{"configMapRef": {"name": "db-schema"}}]
    items = [configmap("db-schema", 0, version=schema), migration, deployment("web", 1, image=web_image)]
    text, code = HASH_JOB_NAMES.process(
        dump_fast({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items})
    )
    assert code == 0, text
    return list(_load_fast(text)["items"])


def job_name(docs: list[Doc]) -> str:
    return str(next(d for d in docs if d["kind"] == "Job")["metadata"]["name"])


def test_a_job_runs_again_only_when_its_trigger_changed(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    first = rendered("app:1", "info", "v1")
    out = apply(first, "--wait")
    assert out.code == 0, out.error
    name = job_name(first)
    ran = kube_client.get(Job, name, namespace=namespace)
    assert status_of(ran).succeeded == 1

    # The web app's new image and an env var of the migration: no trigger changed, so neither its name.
    second = rendered("app:2", "debug", "v1")
    assert job_name(second) == name
    out = apply(second, "--wait")
    assert out.code == 0, out.error
    [skipped] = [e for e in out.of("apply") if e["object"] == f"Job.batch {namespace}/{name}"]
    assert skipped["action"] == "skipped"
    assert skipped["detail"].startswith(
        "completed under this name for the same triggers (krmfn.dev/hash-from: configmap/db-schema,image)"
    )
    assert out.actions()[f"Deployment.apps {namespace}/web"] == "configured"
    assert pod_spec(kube_client.get(Deployment, "web", namespace=namespace)).containers[0].image == "app:2"
    kept = kube_client.get(Job, name, namespace=namespace)
    assert meta(kept).uid == meta(ran).uid  # not re-created: the pod template is the first run's
    assert [(e.name, e.value) for e in pod_spec(kept).containers[0].env or []] == [("LOG_LEVEL", "info")]
    assert out.of("prune") == []

    # The schema changed: a trigger, so a new name and a new run; the old Job is pruned after success.
    third = rendered("app:2", "debug", "v2")
    assert job_name(third) != name
    out = apply(third, "--wait")
    assert out.code == 0, out.error
    assert out.actions()[f"Job.batch {namespace}/{job_name(third)}"] == "created"
    assert status_of(kube_client.get(Job, job_name(third), namespace=namespace)).succeeded == 1
    assert [(e["object"], e["action"]) for e in out.of("prune")] == [
        (f"Job.batch {namespace}/{name}", "deleted")
    ]
