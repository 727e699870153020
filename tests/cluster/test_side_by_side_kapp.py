"""krmfn next to kapp on the same control plane (issue 35): docs/peers.md's behaviour rows for kapp, each a
test. The same rendered staged deploy (tests/testdata/export-staged-deploy: a migration Job, the app, a
warm-up Job) goes through kapp (``kapp deploy``, krmfn's steps written as kapp change groups and
``upsert after upserting`` rules by tests/cluster/engines.kapp_package) in its own namespace, and, where
krmfn's side of the row is not checked elsewhere, through ``krmfn apply`` in another; each test then asks
the cluster what each tool did. The package's Job names are not hashed (it runs set-steps only), so a new
image changes a Job's spec, never its name. Orders are read from the API server: every watch event
carries the etcd revision of its write, one counter for every kind (tests/cluster/test_delete.py). kapp
v0.66.0 is built from the Go module proxy by tests/cluster/build-kapp.sh; without it these tests fail."""

from __future__ import annotations

import json
import re
import secrets
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from e2e import tool
from lightkube import ApiError, Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Namespace, Pod, Service

from .cluster import create_namespace, wait_until
from .creation_order import ready, revision_now
from .engines import kapp_deploy, kapp_package, render
from .objects import exists, meta, name_of, pod_spec, present, status_of
from .patience import EVENT_WAIT
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


Kind = type[ConfigMap] | type[Deployment] | type[Job] | type[Pod] | type[Service]
KINDS: tuple[Kind, ...] = (ConfigMap, Deployment, Job, Pod, Service)
ORIGINAL = "kapp.k14s.io/original"  # kapp's copy of what it applied, on each object: the base of its diff
OLD, NEW, NEWER = (f"registry.example/krmfn/noop:{tag}" for tag in "123")
TIME = re.compile(r"^\d{1,2}:\d\d:\d\d[AP]M: ")


def _plan(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """``Kind name`` -> op (create, update, delete) of kapp's change table as ``--tty=false`` prints it:
    one tab-separated row per change, namespace first."""
    rows = [[cell.strip() for cell in line.split("\t")] for line in done.stdout.splitlines() if "\t" in line]
    return {f"{row[2]} {row[1]}": row[4] for row in rows}


def _kapp(kubeconfig: Path, *args: str) -> list[str]:
    """``kapp ARGS --yes`` with kapp's full (TTY-like) output, which logs each change as it applies and
    waits for it; the argv, for subprocess."""
    return [tool("kapp"), *args, "--yes", "--wait-timeout", "5m", "--kubeconfig", str(kubeconfig)]


def _log(out: str) -> list[str]:
    """kapp's progress lines (``4:02:42AM: delete job/db-migration ...``) without their clock."""
    return [TIME.sub("", line) for line in out.splitlines() if TIME.match(line)]


def _set(app: Path, change: Callable[[Doc], None]) -> list[Doc]:
    """Applies ``change`` to each object of the kapp package ``app`` and writes it back; its objects."""
    docs = [d for d in yaml.safe_load_all((app / "app.yaml").read_text()) if d]
    for doc in docs:
        change(doc)
    (app / "app.yaml").write_text(yaml.safe_dump_all(docs))
    return docs


def _image(image: str, *kinds: str) -> Callable[[Doc], None]:
    def set_image(doc: Doc) -> None:
        if doc["kind"] in kinds:
            doc["spec"]["template"]["spec"]["containers"][0]["image"] = image

    return set_image


def _image_of(workload: Job | Deployment) -> str | None:
    return pod_spec(workload).containers[0].image


def _live(client: Client, namespace: str, docs: list[Doc]) -> dict[str, str | None]:
    """``Kind name`` -> uid of each of ``docs`` on the cluster now."""
    kinds = {res.__name__: res for res in KINDS}
    live = {}
    for doc in docs:
        kind, name = doc["kind"], doc["metadata"]["name"]
        live[f"{kind} {name}"] = meta(client.get(kinds[kind], name, namespace=namespace)).uid
    return live


class Write(NamedTuple):
    revision: int  # the etcd revision of the write: one counter for every kind
    type: str  # ADDED, MODIFIED, DELETED
    kind: str
    name: str
    uid: str
    ready: bool  # what kapp (and krmfn) waits for: a Job complete, a Deployment available (creation_order)


class Writes:
    """Every write to ``KINDS`` in a namespace since it was created, from watches that start at its
    creation revision: they miss nothing however late they connect."""

    def __init__(self, client: Client, namespace: str) -> None:
        self._seen: list[Write] = []
        self._errors: list[str] = []
        self._changed = threading.Condition()
        since = revision_now(client, namespace)
        for res in KINDS:
            threading.Thread(target=self._watch, args=(client, res, namespace, since), daemon=True).start()

    def _watch(self, client: Client, res: Kind, namespace: str, since: str) -> None:
        obj: Any
        try:
            for op, obj in client.watch(res, namespace=namespace, resource_version=since):
                revision = int(meta(obj).resourceVersion or 0)
                write = Write(revision, op, res.__name__, name_of(obj), str(meta(obj).uid), ready(obj))
                with self._changed:
                    self._seen.append(write)
                    self._changed.notify_all()
        except Exception as err:  # the watch outlives its test: the cluster stops under it
            with self._changed:
                self._errors.append(f"{res.__name__} watch ended: {err!r}")

    def once(self, what: str, check: Callable[[list[Write]], bool]) -> list[Write]:
        """The writes in etcd order, once ``check`` holds for them (the watches may lag the cluster)."""
        with self._changed:
            held = self._changed.wait_for(lambda: check(sorted(self._seen)), EVENT_WAIT)
            seen = sorted(self._seen)
            assert held, f"never seen: {what}; {self._errors}; seen {seen}"
            return seen


def _runs(writes: list[Write], name: str) -> dict[str, bool]:
    """uid -> whether it was seen complete, of each Job ``name`` created, in creation order."""
    runs: dict[str, bool] = {}
    for w in writes:
        if (w.kind, w.name) == ("Job", name) and w.type != "DELETED":
            runs[w.uid] = runs.get(w.uid, False) or w.ready
    return runs


def _deleted(writes: list[Write], kind: str, name: str) -> bool:
    return any((w.kind, w.name, w.type) == (kind, name, "DELETED") for w in writes)


def _first(writes: list[Write], kind: str, name: str, *, ready: bool) -> int:
    """The revision of the first write to ``kind name`` (``ready``: the first that saw it ready)."""
    return min(w.revision for w in writes if (w.kind, w.name) == (kind, name) and (w.ready or not ready))


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


def test_a_new_image_of_the_app_only_runs_no_job_and_kapp_cannot_change_a_jobs_image(
    *, apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, theirs: str, tmp_path: Path
) -> None:
    app = kapp_package(render(tmp_path, theirs))
    assert (first := kapp_deploy(app, "shop", theirs, kubeconfig)).returncode == 0, first.stderr
    ran = _uids(kube_client, theirs)
    # The Deployment's image only (each object names its image itself): kapp updates the Deployment alone
    _set(app, _image(NEW, "Deployment"))
    bumped = kapp_deploy(app, "shop", theirs, kubeconfig)
    assert bumped.returncode == 0, bumped.stdout + bumped.stderr
    assert _plan(bumped) == {"Deployment app": "update"}, bumped.stdout
    assert _uids(kube_client, theirs) == ran  # no Job ran again
    assert _image_of(kube_client.get(Deployment, "app", namespace=theirs)) == NEW
    # The image reaching the Jobs too (a chart whose migration runs the app's image): kapp updates a Job in
    # place, the API server refuses (a Job's pod template is immutable), and kapp stops before the rollout
    _set(app, _image(NEWER, "Deployment", "Job"))
    refused = kapp_deploy(app, "shop", theirs, kubeconfig)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = refused.stderr
    assert said.startswith("kapp: Error: update job/db-migration") and "field is immutable" in said, said
    assert _uids(kube_client, theirs) == ran
    assert _image_of(kube_client.get(Job, "db-migration", namespace=theirs)) == OLD
    assert _image_of(kube_client.get(Deployment, "app", namespace=theirs)) == NEW

    docs = _docs(render(tmp_path, namespace, name="ours"))
    assert (out := apply(docs)).code == 0, out.error
    for doc in docs:
        _image(NEW, "Deployment")(doc)
    out = apply(docs)
    assert out.code == 0, out.error
    jobs = {o: a for o, a in out.actions().items() if o.startswith("Job.batch ")}
    assert set(jobs.values()) == {"unchanged"}, jobs
    assert out.actions()[f"Deployment.apps {namespace}/app"] == "configured"


def test_a_completed_job_deleted_by_its_ttl_is_created_and_run_again_by_kapp(
    *, kube_client: Client, kubeconfig: Path, theirs: str, tmp_path: Path
) -> None:
    package = render(tmp_path, theirs)
    migration = yaml.safe_load((package / "db-migration.yaml").read_text())
    # Long enough for kapp to see the Job complete: it checks every 3 s (with 0 the Job was gone at its
    # next check, and kapp failed: Job "not found")
    migration["spec"]["ttlSecondsAfterFinished"] = 10
    (package / "db-migration.yaml").write_text(yaml.safe_dump(migration))
    app = kapp_package(package)
    writes = Writes(kube_client, theirs)
    first = kapp_deploy(app, "shop", theirs, kubeconfig)
    assert first.returncode == 0, first.stdout + first.stderr
    seen = writes.once(
        "the TTL controller delete Job db-migration", lambda ws: _deleted(ws, "Job", "db-migration")
    )
    ran = _runs(seen, "db-migration")
    assert list(ran.values()) == [True], ran

    again = kapp_deploy(app, "shop", theirs, kubeconfig)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _plan(again) == {"Job db-migration": "create"}, again.stdout  # kapp sees it missing: creates it
    twice = [True, True]
    seen = writes.once(
        "a second Job db-migration complete", lambda ws: [*_runs(ws, "db-migration").values()] == twice
    )
    runs = _runs(seen, "db-migration")
    assert runs.keys() > ran.keys() and len(runs) == 2, runs  # a new uid, completed: the migration ran again
    assert len(_runs(seen, "cache-warmup")) == 1  # the Job without a TTL was left as it is


def _cart(app: Path) -> list[Doc]:
    """The kapp package ``app`` as a second app's: each object's name prefixed ``cart-``, the app's pods
    labelled ``cart``."""

    def rename(doc: Doc) -> None:
        doc["metadata"]["name"] = f"cart-{doc['metadata']['name']}"
        if doc["kind"] == "Deployment":
            doc["spec"]["selector"]["matchLabels"] = {"app.kubernetes.io/name": "cart"}
            doc["spec"]["template"]["metadata"]["labels"] = {"app.kubernetes.io/name": "cart"}
        if doc["kind"] == "Service":
            doc["spec"]["selector"] = {"app.kubernetes.io/name": "cart"}

    return _set(app, rename)


def test_a_second_kapp_app_in_the_namespace_leaves_the_first_alone_and_prunes_only_its_own(
    *, kube_client: Client, kubeconfig: Path, theirs: str, tmp_path: Path
) -> None:
    shop = kapp_package(render(tmp_path, theirs))
    shop_docs = [d for d in yaml.safe_load_all((shop / "app.yaml").read_text()) if d]
    cart = kapp_package(render(tmp_path, theirs, name="cart"))
    cart_docs = _cart(cart)
    assert (first := kapp_deploy(shop, "shop", theirs, kubeconfig)).returncode == 0, first.stderr
    before = _live(kube_client, theirs, shop_docs)

    second = kapp_deploy(cart, "cart", theirs, kubeconfig)
    assert second.returncode == 0, second.stdout + second.stderr
    assert _plan(second) == {f"{d['kind']} {d['metadata']['name']}": "create" for d in cart_docs}
    assert _live(kube_client, theirs, shop_docs) == before

    fewer = [d for d in cart_docs if d["kind"] != "Service"]
    (cart / "app.yaml").write_text(yaml.safe_dump_all(fewer))
    pruned = kapp_deploy(cart, "cart", theirs, kubeconfig)
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert _plan(pruned) == {"Service cart-app": "delete"}, pruned.stdout
    assert not exists(kube_client, Service, "cart-app", theirs)
    assert _live(kube_client, theirs, shop_docs) == before  # shop's Service "app" among them
    assert len(_live(kube_client, theirs, fewer)) == 4  # cart's other objects are there


def test_kapp_delete_deletes_every_step_at_once_waits_for_the_pods_then_its_record(
    *, kube_client: Client, kubeconfig: Path, theirs: str, tmp_path: Path
) -> None:
    app = kapp_package(render(tmp_path, theirs))
    docs = [d for d in yaml.safe_load_all((app / "app.yaml").read_text()) if d]
    assert (first := kapp_deploy(app, "shop", theirs, kubeconfig)).returncode == 0, first.stderr
    writes = Writes(kube_client, theirs)
    pods = [name_of(p) for p in kube_client.list(Pod, namespace=theirs)]
    assert len(pods) == 4  # the app's two and each Job's one

    delete = _kapp(kubeconfig, "delete", "-a", "shop", "-n", theirs)
    done = subprocess.run(delete, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("Succeeded"), done.stdout
    log = _log(done.stdout)
    # One batch: kapp issues every delete before it waits for any; the change groups order upserts only
    waiting = next(i for i, line in enumerate(log) if line.startswith("---- waiting on"))
    deletes = {line.split(" (")[0] for line in log[:waiting] if line.startswith("delete ")}
    assert deletes == {f"delete {d['kind'].lower()}/{d['metadata']['name']}" for d in docs}, log
    # It waited for what the objects own (their pods) to be gone, then deleted its record of the app
    for res in (Deployment, Job, Pod, Service):
        assert not list(kube_client.list(res, namespace=theirs)), res.__name__
    seen = writes.once("kapp delete its record ConfigMap shop", lambda ws: _deleted(ws, "ConfigMap", "shop"))
    gone = {(w.kind, w.name): w.revision for w in seen if w.type == "DELETED"}
    objects = {(d["kind"], d["metadata"]["name"]) for d in docs} | {("Pod", p) for p in pods}
    assert objects <= gone.keys(), gone
    assert max(gone[o] for o in objects) < gone[("ConfigMap", "shop")]
    assert [name_of(c) for c in kube_client.list(ConfigMap, namespace=theirs)] == ["kube-root-ca.crt"]

    again = subprocess.run(delete, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"App 'shop' (namespace: {theirs}) does not exist" in again.stdout, again.stdout


def _waiting(proc: subprocess.Popen[str], client: Client, namespace: str) -> bool:
    """Whether kapp waits for the migration Job: the Job is there with kapp's record of what it applied
    (``kapp.k14s.io/original``, written by a second request right after the create). Or kapp ended."""
    if proc.poll() is not None:
        return True
    try:
        migration = client.get(Job, "db-migration", namespace=namespace)
    except ApiError as err:
        if err.status.code == 404:
            return False
        raise
    return ORIGINAL in (meta(migration).annotations or {})


def test_kapp_interrupted_mid_wait_dies_of_sigint_and_its_rerun_rolls_out_before_the_migration_ends(
    *, kube_client: Client, kubeconfig: Path, theirs: str, tmp_path: Path
) -> None:
    # Interrupted between kapp's create of the Job and its record on it instead (4 of 26 tries here with the
    # signal sent as soon as the Job existed), the rerun diffs the Job against the live object, whose
    # defaulted fields are not in the package: it plans an update, the API server refuses it (field is
    # immutable), and kapp exits 1, the app never rolled out.
    app = kapp_package(render(tmp_path, theirs, migration_runs_for="20s"))
    writes = Writes(kube_client, theirs)
    argv = _kapp(kubeconfig, "deploy", "-a", "shop", "-n", theirs, "-f", str(app))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until("kapp to wait for Job db-migration", lambda: _waiting(proc, kube_client, theirs), 0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # a failed test must not leave kapp behind
            proc.kill()
            proc.wait(10)
    assert proc.returncode == -signal.SIGINT, (proc.returncode, out, err)  # Go's default: killed by it
    # It says nothing of it: its plan, its progress up to the signal (the migration's group applying, or
    # already waited for), no error, nothing on stderr
    assert err == "" and "---- applying 1 changes [0/5 done] ----" in _log(out), out + err
    assert "Succeeded" not in out and "rror" not in out, out
    assert not exists(kube_client, Deployment, "app", theirs)
    record = json.loads(
        present(kube_client.get(ConfigMap, "shop", namespace=theirs).data, "kapp's record")["spec"]
    )
    assert "successful" not in record["lastChange"], record  # kapp's record: a change begun, never ended
    uid = meta(kube_client.get(Job, "db-migration", namespace=theirs)).uid

    rerun = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    migration = kube_client.get(Job, "db-migration", namespace=theirs)
    assert meta(migration).uid == uid and status_of(migration).succeeded == 1  # not run again
    # The running Job is a noop for kapp: its group has nothing to upsert, so the app's group goes at once
    log = _log(rerun.stdout)
    assert "noop job/db-migration (batch/v1) namespace: " + theirs in log, log
    created = log.index(f"create deployment/app (apps/v1) namespace: {theirs}")
    assert created < log.index(f"ok: reconcile job/db-migration (batch/v1) namespace: {theirs}"), log
    seen = writes.once("the migration complete", lambda ws: [*_runs(ws, "db-migration").values()] == [True])
    assert _first(seen, "Deployment", "app", ready=False) < _first(seen, "Job", "db-migration", ready=True)
