"""`krmfn apply` under faults: the API server restarted mid-wait, the runner SIGKILLed and re-run, a step
refused by the server (conflict, 403, 422, unknown kind, missing namespace), two runs on one inventory.

After each fault: the error names the object, nothing after the failed step is applied, no Job runs
twice, and the ApplySet parent stays coherent (``inventory_problems``).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.rbac_v1 import PolicyRule
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Pod, Secret
from lightkube.types import PatchType

from krmfn.runner.cluster.kube import HttpApi, load_config
from krmfn.runner.engine.engine import Options, Result, Runner
from krmfn.runner.events import Event
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import LOCK

from .cluster import Cluster
from .objects import annotations_of, exists, meta, status_of
from .patience import STEP_TIMEOUT_SECONDS
from .runner_fixtures import (
    Apply,
    Background,
    Doc,
    Spawn,
    configmap,
    deployer_kubeconfig,
    deployment,
    final_wait,
    inventory_problems,
    job,
)
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)
from .runner_fixtures import spawn as spawn  # noqa: PLC0414 (re-exported fixture)


def runs_of(client: Client, name: str, namespace: str) -> tuple[str, int, int]:
    """(Job UID, pods it ever had, status.succeeded): one run means one pod and succeeded == 1."""
    found = client.get(Job, name, namespace=namespace)
    pods = list(client.list(Pod, namespace=namespace, labels={"batch.kubernetes.io/job-name": name}))
    return str(meta(found).uid), len(pods), status_of(found).succeeded or 0


def waiting_in(step: int) -> Callable[[Doc], bool]:
    return lambda e: e["type"] == "wait" and e["step"] == step


def lock_of(client: Client, namespace: str) -> dict[str, str] | None:
    raw = (meta(client.get(Secret, "krmfn", namespace=namespace)).annotations or {}).get(LOCK)
    return json.loads(raw) if raw else None


def first_run_holding_the_lock(
    spawn: Spawn, client: Client, namespace: str
) -> tuple[list[Doc], Background, dict[str, str]]:
    """A run waiting for its 3 s migration, so it holds the lock: its documents, the run, its lease."""
    docs = [job("db-migration", 0, slow="3s"), configmap("after", 1)]
    first = spawn(docs)
    first.until(waiting_in(0))
    holder = lock_of(client, namespace)
    assert holder is not None
    return docs, first, holder


# --- the API server restarts --------------------------------------------------------------------------


def test_api_server_restart_during_a_wait_is_survived(
    cluster: Cluster, kube_client: Client, namespace: str, spawn: Spawn
) -> None:
    run = spawn([job("db-migration", 0, slow="4s"), final_wait(job("warmup", 1))])
    run.until(waiting_in(0))
    uid, _, succeeded = runs_of(kube_client, "db-migration", namespace)
    assert succeeded == 0, "the restart must fall inside the wait"
    down = cluster.restart_apiserver()
    assert down > 0.5
    out = run.finish()
    assert out.code == 0, out.error + out.stderr
    assert out.step_results() == [("step0", "healthy"), ("step1", "healthy")]
    assert runs_of(kube_client, "db-migration", namespace) == (uid, 1, 1)
    assert runs_of(kube_client, "warmup", namespace)[1:] == (1, 1)
    assert inventory_problems(kube_client, namespace) == []


# --- the runner is killed --------------------------------------------------------------------------------


def test_runner_killed_twice_then_rerun_completes_and_no_job_runs_twice(
    apply: Apply, kube_client: Client, namespace: str, spawn: Spawn
) -> None:
    docs = [job("db-migration", 0, slow="3s"), deployment("web", 1),
            final_wait(job("warmup", 2, slow="2s"))]  # fmt: skip
    first = spawn(docs)
    first.until(waiting_in(0))
    first.kill()  # mid-wait of the migration, holding the inventory lock
    migration = runs_of(kube_client, "db-migration", namespace)[0]
    assert lock_of(kube_client, namespace) is not None

    second = spawn(docs)
    second.until(waiting_in(2))
    second.kill()  # mid-wait of the warm-up, after the migration and the rollout
    warmup = runs_of(kube_client, "warmup", namespace)[0]
    first_event = next(e for e in second.events if e["type"] != "inventory")
    assert first_event["type"] == "lock"
    assert first_event["action"] == "taken-over"
    assert first_event["detail"] == "its process no longer exists"

    out = apply(docs)
    assert out.code == 0, out.error
    assert [e["action"] for e in out.of("lock")] == ["taken-over"]
    assert out.actions() == {
        f"Job.batch {namespace}/db-migration": "unchanged",
        f"Deployment.apps {namespace}/web": "unchanged",
        f"Job.batch {namespace}/warmup": "unchanged",
    }
    assert runs_of(kube_client, "db-migration", namespace) == (migration, 1, 1)
    assert runs_of(kube_client, "warmup", namespace) == (warmup, 1, 1)
    assert inventory_problems(kube_client, namespace) == []


# --- the server refuses a step ---------------------------------------------------------------------------


def restricted_kubeconfig(cluster: Cluster, namespace: str, path: Path) -> Path:
    """A ServiceAccount that may manage ConfigMaps and the inventory Secret, and nothing else."""
    verbs = ["get", "list", "create", "update", "patch", "delete"]
    rules = [PolicyRule(apiGroups=[""], resources=["configmaps", "secrets"], verbs=verbs)]
    return deployer_kubeconfig(cluster, namespace, path, rules)


@dataclass
class Scene:
    """What a fault's set-up may use."""

    cluster: Cluster
    client: Client
    namespace: str
    tmp_path: Path


@pytest.fixture
def scene(cluster: Cluster, kube_client: Client, namespace: str, tmp_path: Path) -> Scene:
    return Scene(cluster, kube_client, namespace, tmp_path)


def conflict(scene: Scene) -> tuple[Doc, list[str]]:
    theirs = ConfigMap(metadata=ObjectMeta(name="shared", namespace=scene.namespace), data={"k": "theirs"})
    scene.client.apply(theirs, field_manager="someone-else")
    return configmap("shared", 1, k="ours"), []


def forbidden(scene: Scene) -> tuple[Doc, list[str]]:
    kubeconfig = restricted_kubeconfig(scene.cluster, scene.namespace, scene.tmp_path / "deployer.kubeconfig")
    return deployment("web", 1), ["--kubeconfig", str(kubeconfig)]


def invalid(scene: Scene) -> tuple[Doc, list[str]]:
    bad = deployment("web", 1)
    bad["spec"]["replicas"] = -1
    return bad, []


def unknown_kind(scene: Scene) -> tuple[Doc, list[str]]:
    widget: Doc = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    widget["metadata"]["annotations"] = {"krmfn.dev/step-index": "1"}
    return widget, []


def missing_namespace(scene: Scene) -> tuple[Doc, list[str]]:
    elsewhere = configmap("elsewhere", 1)
    elsewhere["metadata"]["namespace"] = f"missing-{secrets.token_hex(3)}"
    return elsewhere, []


FAULTS: dict[str, tuple[Callable[[Scene], tuple[Doc, list[str]]], str]] = {
    # name: (set-up returning the object of step 1 and extra flags, what the error says after the object)
    "conflict": (conflict, 'conflict with "someone-else"'),
    "forbidden": (forbidden, "forbidden: "),
    "invalid": (invalid, "invalid: "),
    "unknown-kind": (unknown_kind, "the cluster does not serve example.com/v1 (is its CRD installed?)"),
    "missing-namespace": (missing_namespace, "does not exist; add the Namespace to this step or an earlier"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_refused_step_names_the_object_stops_the_run_and_keeps_the_inventory_coherent(
    fault: str, apply: Apply, scene: Scene
) -> None:
    client, namespace = scene.client, scene.namespace
    assert apply([configmap("first", 0), configmap("retired", 0)]).code == 0
    setup, says = FAULTS[fault]
    refused, flags = setup(scene)
    ref_namespace = refused["metadata"].get("namespace", namespace)
    group = refused["apiVersion"].rpartition("/")[0]
    ref = f"{refused['kind']}{'.' + group if group else ''} {ref_namespace}/{refused['metadata']['name']}"

    out = apply([configmap("first", 0, x="2"), refused, configmap("later", 2)], *flags)
    assert out.code == 1
    assert out.error.startswith(f"{ref}: ")
    assert says in out.error
    assert not exists(client, ConfigMap, "later", namespace)  # nothing after the failed step
    assert out.of("prune") == []
    assert exists(client, ConfigMap, "retired", namespace)
    first = client.get(ConfigMap, "first", namespace=namespace)
    # An unknown kind fails at discovery, before anything; otherwise the step before the fault ran.
    assert (first.data or {}) == ({} if fault == "unknown-kind" else {"x": "2"})
    assert inventory_problems(client, namespace) == []


@pytest.mark.parametrize("concurrency", ["1", "16"])
def test_refused_object_among_many_applied_concurrently_stops_the_step(
    concurrency: str, apply: Apply, kube_client: Client, namespace: str
) -> None:
    """Under concurrency the first failure in plan order is the error, named; what was in flight may be
    applied, nothing is started after it, no later step runs, and every applied object is a member the
    parent lists."""
    crowd = [configmap(f"crowd-{i:02}", 1, k=str(i)) for i in range(60)]
    crowd[30]["data"] = {"bad key!": "x"}  # a ConfigMap key may not hold a space: 422
    out = apply([configmap("first", 0), *crowd, configmap("later", 2)], "--concurrency", concurrency)
    assert out.code == 1
    assert out.error.startswith(f"ConfigMap {namespace}/crowd-30: invalid: "), out.error
    assert out.result["failedStepName"] == "step1"
    applied = [e["object"] for e in out.of("apply")]
    assert applied[0] == f"ConfigMap {namespace}/first"
    assert applied[1:] == sorted(applied[1:]) and f"ConfigMap {namespace}/crowd-30" not in applied
    assert all(f"ConfigMap {namespace}/crowd-{i:02}" in applied for i in range(30))
    assert len(applied) <= 1 + 30 + int(concurrency) - 1
    live = {str(meta(cm).name) for cm in kube_client.list(ConfigMap, namespace=namespace)}
    assert "later" not in live and "crowd-30" not in live
    assert {f"ConfigMap {namespace}/{name}" for name in live if name.startswith("crowd-")} == {
        a for a in applied if "crowd-" in a
    }, "every object applied was reported"
    assert inventory_problems(kube_client, namespace) == []


# --- two runs on one inventory ---------------------------------------------------------------------------


def test_second_run_refuses_while_the_first_holds_the_lock(
    apply: Apply, kube_client: Client, namespace: str, spawn: Spawn
) -> None:
    docs, first, holder = first_run_holding_the_lock(spawn, kube_client, namespace)
    second = apply(docs)
    assert second.code == 1
    assert second.error.startswith(
        f"ApplySet {namespace}/krmfn is locked by another run: {holder['holder']} (run {holder['run']} since "
    )
    assert second.error.endswith("; pass --wait-for-lock DURATION to wait for it")
    assert second.of("apply") == []
    assert first.finish().code == 0
    assert runs_of(kube_client, "db-migration", namespace)[1:] == (1, 1)
    assert inventory_problems(kube_client, namespace) == []


def test_second_run_with_wait_for_lock_runs_after_the_first(
    apply: Apply, kube_client: Client, namespace: str, spawn: Spawn
) -> None:
    docs, first, holder = first_run_holding_the_lock(spawn, kube_client, namespace)
    second = apply(docs, "--wait-for-lock", "30s")
    assert second.code == 0, second.error
    assert [(e["action"], e["holder"]) for e in second.of("lock")] == [
        ("waiting", holder["holder"]),
        ("acquired", holder["holder"]),
    ]
    assert first.finish().code == 0
    assert second.actions()[f"Job.batch {namespace}/db-migration"] == "unchanged"
    assert runs_of(kube_client, "db-migration", namespace)[1:] == (1, 1)
    assert inventory_problems(kube_client, namespace) == []


def test_two_runs_started_together_one_wins_the_other_refuses(
    kube_client: Client, namespace: str, spawn: Spawn
) -> None:
    docs = [job("db-migration", 0, slow="2s"), configmap("after", 1)]
    runs = [spawn(docs), spawn(docs)]
    outcomes = sorted((run.finish() for run in runs), key=lambda out: out.code)
    assert [out.code for out in outcomes] == [0, 1]
    assert "is locked by another run" in outcomes[1].error
    assert outcomes[1].of("apply") == []
    assert runs_of(kube_client, "db-migration", namespace)[1:] == (1, 1)
    assert inventory_problems(kube_client, namespace) == []


def foreign_lease(expires_in: float) -> str:
    now = datetime.now(UTC)
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return json.dumps({"holder": "another-host/4242", "run": "0badc0de", "since": now.strftime(stamp),
                       "expires": (now + timedelta(seconds=expires_in)).strftime(stamp)})  # fmt: skip


def set_lock(client: Client, namespace: str, value: str) -> None:
    patch = {"metadata": {"annotations": {LOCK: value}}}
    client.patch(Secret, "krmfn", patch, namespace=namespace, patch_type=PatchType.MERGE)


def test_live_lock_of_another_host_refuses_and_an_expired_one_is_taken_over(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply([configmap("a", 0)]).code == 0
    set_lock(kube_client, namespace, foreign_lease(60))
    refused = apply([configmap("a", 0, x="1")])
    assert refused.code == 1
    assert "locked by another run: another-host/4242 (run 0badc0de since " in refused.error
    set_lock(kube_client, namespace, foreign_lease(-1))
    out = apply([configmap("a", 0, x="1")])
    assert out.code == 0, out.error
    [taken] = out.of("lock")
    assert (taken["action"], taken["holder"]) == ("taken-over", "another-host/4242")
    assert taken["detail"].startswith("its lease expired at ")
    assert inventory_problems(kube_client, namespace) == []


def test_run_that_lost_its_lock_stops_without_overwriting_the_new_holder(
    kube_client: Client, namespace: str, spawn: Spawn
) -> None:
    run = spawn([job("db-migration", 0, slow="2s"), configmap("middle", 1), configmap("last", 2)])
    run.until(waiting_in(0))
    usurper = foreign_lease(60)  # as if this run's lease had expired and another run had taken over
    set_lock(kube_client, namespace, usurper)
    out = run.finish()
    assert out.code == 1
    assert out.error.startswith(
        f"lost the lock of ApplySet {namespace}/krmfn: the parent Secret was changed by another run; "
        "now held by another-host/4242"
    )
    assert not exists(kube_client, ConfigMap, "last", namespace)
    notes = annotations_of(kube_client.get(Secret, "krmfn", namespace=namespace))
    assert notes[LOCK] == usurper


def test_lease_is_renewed_while_a_step_outlasts_it(
    kubeconfig: Path, kube_client: Client, namespace: str
) -> None:
    seen: list[str] = []

    def emit(event: Event) -> None:
        lock = lock_of(kube_client, namespace) if event.type == "status" else None
        if lock is not None:
            seen.append(lock["expires"])

    api = HttpApi(load_config(str(kubeconfig), None))
    plan = build_plan([job("db-migration", 0, slow="5s"), configmap("after", 1)], namespace=namespace,
                      default_timeout=STEP_TIMEOUT_SECONDS)  # fmt: skip
    try:
        # Without renewals, a 2s lease would stop the run at the first wait tick after 2s.
        result = Runner(api, Options(namespace=namespace, lock_lease=2.0), emit).run(plan)
    finally:
        api.close()
    assert result.ok, result.error
    assert len(set(seen)) >= 2, f"the lease was not renewed: {seen}"
    assert inventory_problems(kube_client, namespace) == []


def test_run_cut_off_for_longer_than_its_lease_stops(
    cluster: Cluster, kubeconfig: Path, kube_client: Client, namespace: str
) -> None:
    waiting = threading.Event()

    def emit(event: Event) -> None:
        if event.type == "wait":
            waiting.set()

    api = HttpApi(load_config(str(kubeconfig), None))
    plan = build_plan([job("db-migration", 0, slow="6s"), configmap("after", 1)], namespace=namespace,
                      default_timeout=STEP_TIMEOUT_SECONDS)  # fmt: skip
    results: list[Result] = []
    runner = Runner(api, Options(namespace=namespace, lock_lease=1.0), emit)
    thread = threading.Thread(target=lambda: results.append(runner.run(plan)))
    thread.start()
    try:
        assert waiting.wait(20)
        # Down twice the lease: the run's checks (every 0.2 s) must see it unrenewed for 0.75 s.
        assert (
            cluster.restart_apiserver(down_for=2.0) > 1.0
        )  # longer than the lease minus one renewal interval
        thread.join(30)
    finally:
        api.close()
    [result] = results
    assert not result.ok
    assert str(result.error).startswith(f"could not renew the lock of ApplySet {namespace}/krmfn for ")
    assert not exists(kube_client, ConfigMap, "after", namespace)
    assert inventory_problems(kube_client, namespace) == []  # released once the server was back
