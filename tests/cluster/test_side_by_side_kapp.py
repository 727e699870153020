"""krmfn next to kapp on the same control plane (issue 35): docs/peers.md's behaviour rows for kapp, each a
test. The same rendered staged deploy (tests/testdata/export-staged-deploy: a migration Job, the app, a
warm-up Job) goes once through kapp (``kapp deploy``, krmfn's steps written as kapp change groups and
``upsert after upserting`` rules by tests/cluster/engines.kapp_package) and once through ``krmfn apply``,
as two apps in two namespaces; each test then asks the cluster what each tool did. kapp v0.66.0 is built
from the Go module proxy by tests/cluster/build-kapp.sh; without it these tests fail."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Namespace

from .cluster import create_namespace
from .engines import kapp_deploy, kapp_package, render
from .objects import meta, status_of
from .runner_fixtures import Apply, Doc
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

JOBS = ("db-migration", "cache-warmup")


@pytest.fixture
def theirs(kube_client: Client) -> Iterator[str]:
    """kapp's namespace, beside krmfn's (``namespace``): a short name, since kapp puts each namespace in
    a change group ``change-groups.kapp.k14s.io/namespaces-<name>`` whose name part must fit 63 bytes."""
    name = f"kapp-{secrets.token_hex(4)}"
    yield create_namespace(kube_client, name, labels={"test.krmfn.dev/namespace": "true"})
    kube_client.delete(Namespace, name)


def _docs(package: Path) -> list[Doc]:
    docs = [d for f in sorted(package.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    return [
        d
        for d in docs
        if d["kind"] != "Kptfile"
        and "config.kubernetes.io/local-config" not in (d["metadata"].get("annotations") or {})
    ]


def _uids(client: Client, namespace: str) -> dict[str, str | None]:
    return {name: meta(client.get(Job, name, namespace=namespace)).uid for name in JOBS}


def test_a_deploy_with_nothing_changed_neither_kapp_nor_krmfn_runs_a_job_again(
    *, apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, theirs: str, tmp_path: Path
) -> None:
    app = kapp_package(render(tmp_path, theirs))
    first = kapp_deploy(app, "shop", theirs, kubeconfig)
    assert first.returncode == 0, first.stdout + first.stderr
    ran = _uids(kube_client, theirs)
    assert all(status_of(kube_client.get(Job, j, namespace=theirs)).succeeded == 1 for j in JOBS)
    again = kapp_deploy(app, "shop", theirs, kubeconfig)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _uids(kube_client, theirs) == ran  # as krmfn: a Job whose spec did not change is not run again

    docs = _docs(render(tmp_path, namespace, name="ours"))
    assert (out := apply(docs)).code == 0, out.error
    assert {a for o, a in out.actions().items() if o.startswith("Job.batch ")} == {"created"}
    out = apply(docs)
    assert out.code == 0, out.error
    assert {a for o, a in out.actions().items() if o.startswith("Job.batch ")} == {"unchanged"}


def test_a_failing_migration_stops_both_before_the_rollout_and_each_says_so(
    *, apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, theirs: str, tmp_path: Path
) -> None:
    app = kapp_package(render(tmp_path, theirs, migration_fails=True))
    failed = kapp_deploy(app, "shop", theirs, kubeconfig)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    said = failed.stdout + failed.stderr
    # kapp names the Job and its condition's reason; not the exit code, not a log line
    assert "waiting on reconcile job/db-migration" in said and "BackoffLimitExceeded" in said, said
    # kapp stopped at the change rule: the app's Deployment was never created, the failed Job is left
    assert not list(kube_client.list(Deployment, namespace=theirs))
    left = status_of(kube_client.get(Job, "db-migration", namespace=theirs))
    assert left.failed and not left.succeeded

    docs = _docs(render(tmp_path, namespace, migration_fails=True, name="ours"))
    out = apply(docs)
    assert out.code == 1
    assert out.step_results()[0] == ("pre-deploy", "failed"), out.step_results()
    assert "db-migration" in out.error and "exit code 3" in out.error, out.error
    assert not list(kube_client.list(Deployment, namespace=namespace))
