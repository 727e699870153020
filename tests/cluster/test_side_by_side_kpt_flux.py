"""kpt live apply and the Flux Operator on the same control plane: docs/peers.md's behaviour rows for them,
each a test. The same package as tests/cluster/test_export_engines.py (tests/testdata/export-staged-deploy:
a migration Job, the app, a warm-up Job), rendered by real ``kpt fn render`` (krmfn's set-steps, with
``emit: [depends-on]``) into a fresh namespace per test, goes through ``kpt live apply`` (depends-on
ordering, a ResourceGroup inventory) or, exported by ``krmfn export resourceset``, through the Flux
Operator (ResourceSet steps, ``spec.wait``); each test then asks the cluster what the tool did. The
package's pipeline has no hash-job-names: the migration Job is ``db-migration`` whatever the app's image,
and its spec has its own image. krmfn's column of the table is tested by the files it names.

The Job controller's Events (``SuccessfulCreate``, ``Completed``) outlive the Jobs they are about, so the
Jobs a TTL deleted are counted by uid from them. The Flux Operator is v0.58.1, built from the Go module
proxy by build-flux-operator.sh (fixture ``flux_operator``); kpt is the machine's (1.0.0-beta.56 here).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Event, Pod
from lightkube.types import CascadeType

from .cluster import Cluster, wait_until
from .engines import (
    BIN,
    FIELD_MANAGER,
    PACKAGE,
    ResourceSet,
    condition,
    export_resourceset,
    get_rset,
    kpt,
    kpt_live_apply,
    render,
    request_reconcile,
    run,
    wait_ready,
    wait_settled,
)
from .objects import exists, meta, pod_spec, status_of

pytestmark = pytest.mark.cluster

Doc = dict[str, Any]
JOBS = ("db-migration", "cache-warmup")
MIGRATION = "db-migration"
APP_IMAGE = "image: registry.example/krmfn/noop:1"  # the Deployment's, the only image in app.yaml
NEW_APP_IMAGE = "image: registry.example/krmfn/noop:2"
KPT_APPLY = ("live", "apply", "--output", "json", "--reconcile-timeout", "2m")
APPLY_EVENT_KEYS = {"group", "kind", "name", "namespace", "status", "timestamp", "type"}
STAGED = [  # kpt's apply events for the package, in its order: the same for every run
    ("Job", "db-migration", "Successful"),
    ("ConfigMap", "warmup-script", "Successful"),
    ("Service", "app", "Successful"),
    ("Deployment", "app", "Successful"),
    ("Job", "cache-warmup", "Successful"),
]


# --- helpers ------------------------------------------------------------------------------------------


def _uids(client: Client, namespace: str) -> dict[str, str | None]:
    return {name: meta(client.get(Job, name, namespace=namespace)).uid for name in JOBS}


def _pods(client: Client, namespace: str, job: str) -> int:
    """How many pods the Job controller made for the Jobs named ``job`` that still exist."""
    return len(list(client.list(Pod, namespace=namespace, labels={"batch.kubernetes.io/job-name": job})))


def _runs(client: Client, namespace: str, job: str = MIGRATION) -> dict[str, set[str]]:
    """uid -> the reasons of the Job controller's Events, for every Job named ``job`` there was."""
    runs: dict[str, set[str]] = {}
    events = client.list(
        Event, namespace=namespace, fields={"involvedObject.kind": "Job", "involvedObject.name": job}
    )
    for event in events:
        runs.setdefault(str(event.involvedObject.uid), set()).add(str(event.reason))
    return runs


def _completed(client: Client, namespace: str, count: int) -> dict[str, set[str]]:
    """The migration's runs, once ``count`` Jobs of that name have completed (by their Events)."""
    seen: dict[str, set[str]] = {}

    def done() -> bool:
        nonlocal seen
        seen = _runs(client, namespace)
        return sum("Completed" in reasons for reasons in seen.values()) >= count

    wait_until(f"{count} completed {MIGRATION} Job(s) in {namespace}", done, 120)
    return seen


def _has_succeeded(client: Client, namespace: str, name: str) -> bool:
    return bool(status_of(client.get(Job, name, namespace=namespace)).succeeded)


def _succeeded(client: Client, namespace: str, *names: str) -> None:
    for name in names:
        done = functools.partial(_has_succeeded, client, namespace, name)
        wait_until(f"Job {namespace}/{name} to complete", done, 120)


def _gone(client: Client, namespace: str, name: str = MIGRATION) -> None:
    wait_until(f"Job {namespace}/{name} to be deleted", lambda: not exists(client, Job, name, namespace), 120)


def _with_ttl_zero(tmp_path: Path) -> Path:
    """A copy of the package whose migration Job has ``ttlSecondsAfterFinished: 0``, to be rendered."""
    source = tmp_path / "ttl-source"
    shutil.copytree(PACKAGE, source)
    job_file = source / "db-migration.yaml"
    job = yaml.safe_load(job_file.read_text())
    job["spec"]["ttlSecondsAfterFinished"] = 0
    job_file.write_text(yaml.safe_dump(job))
    return source


def _new_app_image(package: Path) -> None:
    """The app's Deployment given a new image in ``package``'s app.yaml; nothing else changes."""
    app = package / "app.yaml"
    text = app.read_text()
    assert text.count(APP_IMAGE) == 1, text
    app.write_text(text.replace(APP_IMAGE, NEW_APP_IMAGE))


def _image(client: Client, namespace: str) -> str:
    return pod_spec(client.get(Deployment, "app", namespace=namespace)).containers[0].image or ""


def _rolled_out_with_the_same_jobs(client: Client, namespace: str, ran: dict[str, str | None]) -> None:
    """The app has its new image; the migration Job's name and spec did not change, so it is the same Job
    (uid ``ran``), run once, and nothing was pruned."""
    assert _image(client, namespace) == NEW_APP_IMAGE.removeprefix("image: ")
    assert _uids(client, namespace) == ran
    assert sorted(meta(j).name or "" for j in client.list(Job, namespace=namespace)) == sorted(JOBS)
    assert _pods(client, namespace, MIGRATION) == 1
    assert list(_runs(client, namespace)) == [ran[MIGRATION]]


def _env(kubeconfig: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "KUBECONFIG": str(kubeconfig)}


def _kpt_apply_again(package: Path, kubeconfig: Path) -> list[Doc]:
    """``kpt live apply`` of a package ``kpt live init`` already gave an inventory; kpt's JSON events."""
    out = run([kpt(), *KPT_APPLY], package, kubeconfig)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _applied(events: list[Doc]) -> list[tuple[str, str, str]]:
    return [(e["kind"], e["name"], e["status"]) for e in events if e["type"] == "apply"]


def _deploy_rset(client: Client, package: Path, namespace: str, tmp_path: Path) -> None:
    rset = export_resourceset(package, namespace, tmp_path)
    client.apply(ResourceSet.from_dict(rset), field_manager=FIELD_MANAGER)


def _deployed_by_flux(client: Client, namespace: str, tmp_path: Path) -> dict[str, str | None]:
    """The package deployed by a ResourceSet ``app``, once Ready; the uids of its Jobs."""
    _deploy_rset(client, render(tmp_path, namespace), namespace, tmp_path)
    wait_ready(client, "app", namespace)
    return _uids(client, namespace)


def _reconcile_again(client: Client, namespace: str) -> Doc:
    """Requests a reconciliation of the ResourceSet ``app`` and returns it once the operator handled it."""
    token = request_reconcile(client, "app", namespace)

    def handled() -> bool:
        return (get_rset(client, "app", namespace).get("status") or {}).get("lastHandledReconcileAt") == token

    wait_until("the requested reconciliation", handled, 120, interval=0.1)
    return wait_ready(client, "app", namespace)


def _operator_applied(client: Client, namespace: str, reconciliations: int) -> set[str]:
    """The messages of the operator's ``ApplySucceeded`` Events about the ResourceSets in ``namespace`` (one
    per step that changed something, naming each object and what the apply did), once ``reconciliations``
    of them have succeeded (each ends with a ``ReconciliationSucceeded`` Event)."""
    applied: set[str] = set()

    def flushed() -> bool:
        nonlocal applied
        events = list(client.list(Event, namespace=namespace, fields={"involvedObject.kind": "ResourceSet"}))
        applied = {str(e.message).strip() for e in events if e.reason == "ApplySucceeded"}
        return sum(e.count or 1 for e in events if e.reason == "ReconciliationSucceeded") >= reconciliations

    wait_until(f"the operator's Events of {reconciliations} reconciliation(s)", flushed, 60)
    return applied


@contextlib.contextmanager
def _job_controller_held(cluster: Cluster) -> Iterator[None]:
    """kube-controller-manager stopped (SIGSTOP) inside the block and resumed (SIGCONT) after it: a new Job
    gets no ``status.startTime`` meanwhile, so kpt, which counts a Job Current once it has started, stays
    in its wait for it."""
    pid = cluster.pids()["kube-controller-manager"]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


# --- upgrade with nothing changed ---------------------------------------------------------------------


def test_kpt_live_apply_again_with_nothing_changed_runs_no_job_again_and_says_successful_for_each_object(
    kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    package = render(tmp_path, namespace)
    first = kpt_live_apply(package, namespace, kubeconfig)
    _succeeded(kube_client, namespace, *JOBS)  # kpt's own wait ended when each Job started
    ran = _uids(kube_client, namespace)

    again = _kpt_apply_again(package, kubeconfig)
    assert _uids(kube_client, namespace) == ran  # the same Jobs, left as they were: nothing ran again
    for name in JOBS:
        assert status_of(kube_client.get(Job, name, namespace=namespace)).succeeded == 1
        assert _pods(kube_client, namespace, name) == 1
    # kpt's events do not tell created from unchanged: each object "Successful" in both runs, and no
    # field says what the apply did.
    assert _applied(first) == _applied(again) == STAGED
    assert all(set(e) == APPLY_EVENT_KEYS for e in first + again if e["type"] == "apply")
    summary = [(e["action"], e["successful"], e["failed"]) for e in again if e["type"] == "summary"]
    assert summary == [("Apply", 5, 0), ("Wait", 5, 0)]


def test_the_flux_operator_reconciling_again_with_nothing_changed_runs_no_job_again(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    ran = _deployed_by_flux(kube_client, namespace, tmp_path)
    applied = _operator_applied(kube_client, namespace, 1)
    assert len(applied) == 3 and all(m.endswith(" created") for m in applied), applied  # one per step

    got = _reconcile_again(kube_client, namespace)
    assert _uids(kube_client, namespace) == ran
    for name in JOBS:
        assert status_of(kube_client.get(Job, name, namespace=namespace)).succeeded == 1
        assert _pods(kube_client, namespace, name) == 1
    [history] = got["status"]["history"]  # one entry per digest of the applied objects: the same one
    assert history["totalReconciliations"] == 2, history
    # Nothing applied the second time: no new ApplySucceeded Event, only "Reconciliation finished".
    assert _operator_applied(kube_client, namespace, 2) == applied


# --- new image of the app only ------------------------------------------------------------------------


def test_kpt_live_apply_of_a_new_app_image_leaves_the_migration_job_as_it_is(
    kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    package = render(tmp_path, namespace)
    kpt_live_apply(package, namespace, kubeconfig)
    _succeeded(kube_client, namespace, *JOBS)
    ran = _uids(kube_client, namespace)

    _new_app_image(package)  # in the copy kpt live init gave its inventory, rendered again
    run([kpt(), "fn", "render", "--allow-exec"], package)
    events = _kpt_apply_again(package, kubeconfig)
    assert _applied(events) == STAGED
    assert not [e for e in events if e["type"] == "prune"]
    _rolled_out_with_the_same_jobs(kube_client, namespace, ran)


def test_the_flux_operator_given_a_new_app_image_leaves_the_migration_job_as_it_is(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    ran = _deployed_by_flux(kube_client, namespace, tmp_path)

    source = tmp_path / "v2-source"
    shutil.copytree(PACKAGE, source)
    _new_app_image(source)
    applied = _operator_applied(kube_client, namespace, 1)
    _deploy_rset(kube_client, render(tmp_path, namespace, package=source, name="v2"), namespace, tmp_path)
    got = wait_settled(kube_client, "app", namespace)
    assert condition(got)["status"] == "True", condition(got)
    assert got["metadata"]["generation"] == 2
    again = _operator_applied(kube_client, namespace, 2)
    assert again - applied == {f'step "deploy": Deployment/{namespace}/app configured'}
    _rolled_out_with_the_same_jobs(kube_client, namespace, ran)


# --- a completed Job deleted by its TTL, next run ------------------------------------------------------


def test_kpt_live_apply_creates_and_runs_again_a_migration_job_its_ttl_deleted(
    kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    package = render(tmp_path, namespace, package=_with_ttl_zero(tmp_path))
    kpt_live_apply(package, namespace, kubeconfig)
    [first] = _completed(kube_client, namespace, 1)
    _gone(kube_client, namespace)  # by the TTL controller

    events = _kpt_apply_again(package, kubeconfig)
    assert _applied(events) == STAGED  # kpt's events read as they did for the first run
    runs = _completed(kube_client, namespace, 2)
    assert len(runs) == 2 and first in runs, runs  # a new Job, which ran to completion
    assert all({"SuccessfulCreate", "Completed"} <= reasons for reasons in runs.values()), runs


def test_the_flux_operator_fails_the_step_of_a_migration_job_its_ttl_deleted_and_its_retry_runs_it_again(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    # krmfn export warns that the operator re-creates such a Job; here, what it does with one.
    package = render(tmp_path, namespace, package=_with_ttl_zero(tmp_path))
    _deploy_rset(kube_client, package, namespace, tmp_path)
    [first] = _completed(kube_client, namespace, 1)
    # The Job completed and the TTL controller deleted it before the operator's health check saw it
    # complete: the check waits for the missing Job until the step's timeout (1m, from the package).
    failed = wait_settled(kube_client, "app", namespace)
    ready = condition(failed)
    assert ready["status"] == "False", ready
    assert ready["reason"] == "ReconciliationFailed"
    assert 'step "pre-deploy" health check failed: timeout waiting for' in ready["message"]
    assert f"Job/{namespace}/{MIGRATION} status: 'NotFound'" in ready["message"]
    assert not exists(kube_client, Deployment, "app", namespace)
    # The operator's retry applies the step again: a new migration Job, which runs to completion.
    runs = _completed(kube_client, namespace, 2)
    assert first in runs and len(runs) >= 2, runs


def test_the_flux_operator_creates_and_runs_again_a_completed_migration_job_deleted_after_the_deploy(
    flux_operator: Cluster, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    # With the TTL itself the step fails (the test above): the Job is deleted here by a client instead.
    first = _deployed_by_flux(kube_client, namespace, tmp_path)[MIGRATION]
    kube_client.delete(Job, MIGRATION, namespace=namespace, cascade=CascadeType.BACKGROUND)
    _gone(kube_client, namespace)

    _reconcile_again(kube_client, namespace)
    again = kube_client.get(Job, MIGRATION, namespace=namespace)
    assert meta(again).uid != first
    assert status_of(again).succeeded == 1
    assert set(_runs(kube_client, namespace)) == {first, meta(again).uid}


# --- interrupted mid-wait (SIGINT), then run again -----------------------------------------------------


def test_kpt_live_apply_killed_by_sigint_in_its_wait_and_run_again_runs_the_job_once(
    cluster: Cluster, kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    package = render(tmp_path, namespace, migration_runs_for="20s")
    run([kpt(), "live", "init", "--namespace", namespace], package, kubeconfig)
    args = [kpt(), *KPT_APPLY, "--install-resource-group"]
    # kpt's wait for a Job ends once the Job has started, milliseconds after its creation: the Job
    # controller is held so that the interrupt lands in that wait, as it would with a slower controller.
    with _job_controller_held(cluster):
        proc = subprocess.Popen(
            args, cwd=package, env=_env(kubeconfig), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            created = functools.partial(exists, kube_client, Job, MIGRATION, namespace)
            wait_until("kpt to create the migration Job", created, 120)
            assert not status_of(kube_client.get(Job, MIGRATION, namespace=namespace)).startTime
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        interrupted = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        # No handler: Go's default for SIGINT, the process killed by the signal (a shell says 130).
        assert proc.returncode == -signal.SIGINT, (proc.returncode, out, err)
        assert err.removeprefix("installing inventory ResourceGroup CRD.\n") == ""  # nothing about the signal
        assert _applied(interrupted) == [("Job", MIGRATION, "Successful")]
        assert [e["type"] for e in interrupted][-1] in ("group", "wait"), interrupted
        assert not [e for e in interrupted if e["type"] == "summary"]
        assert not exists(kube_client, Deployment, "app", namespace)
    ran = meta(kube_client.get(Job, MIGRATION, namespace=namespace)).uid

    again = _kpt_apply_again(package, kubeconfig)  # exit 0 (run checks it)
    assert _applied(again) == STAGED
    assert meta(kube_client.get(Job, MIGRATION, namespace=namespace)).uid == ran
    _succeeded(kube_client, namespace, *JOBS)
    assert _pods(kube_client, namespace, MIGRATION) == 1
    assert list(_runs(kube_client, namespace)) == [ran]
    assert status_of(kube_client.get(Deployment, "app", namespace=namespace)).availableReplicas == 2
