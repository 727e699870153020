"""`krmfn apply` and Jobs: force re-creation (of any kind), recreate-on-failure, hash-named re-runs with
prune, the inventory's Job records (TTL-deleted Jobs, completed, failed or never seen finishing, are not
run again), changes applied in place, and true failure reasons."""

from __future__ import annotations

import copy

from lightkube import ApiError, Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Secret

from krmfn.runner.reserved import JOB_RECORDS

from .cluster import wait_until
from .objects import annotations_of, meta, pod_spec, present, status_of
from .runner_fixtures import Apply, deployment, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

FORCE = {"krmfn.dev/force": "enabled"}


def get_job(client: Client, name: str, namespace: str) -> Job | None:
    try:
        return client.get(Job, name, namespace=namespace)
    except ApiError as err:
        if err.status.code == 404:
            return None
        raise


def test_changed_job_with_force_is_deleted_and_recreated(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply([job("db-migration", 0, annotations=FORCE), deployment("web", 1)]).code == 0
    old = kube_client.get(Job, "db-migration", namespace=namespace)
    out = apply(
        [job("db-migration", 0, image="app:2", annotations=FORCE), deployment("web", 1, image="app:2")]
    )
    assert out.code == 0, out.error
    assert out.actions()[f"Job.batch {namespace}/db-migration"] == "recreated"
    new = kube_client.get(Job, "db-migration", namespace=namespace)
    assert meta(new).uid != meta(old).uid
    assert pod_spec(new).containers[0].image == "app:2"
    assert status_of(new).succeeded == 1


def test_flux_force_annotation_is_accepted(apply: Apply, kube_client: Client, namespace: str) -> None:
    flux = {"fluxcd.controlplane.io/force": "enabled"}
    assert apply([job("migrate", 0, annotations=flux)]).code == 0
    out = apply([job("migrate", 0, image="app:2", annotations=flux)])
    assert out.code == 0, out.error
    assert out.actions()[f"Job.batch {namespace}/migrate"] == "recreated"


def test_changed_job_without_force_fails_and_points_at_the_fixes(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply([job("db-migration", 0), deployment("web", 1)]).code == 0
    uid = meta(kube_client.get(Job, "db-migration", namespace=namespace)).uid
    out = apply([job("db-migration", 0, image="app:2"), deployment("web", 1, image="app:2")])
    assert out.code == 1
    assert out.error.startswith(
        f"Job.batch {namespace}/db-migration: the rendered spec differs from the live Job's"
    )
    assert "hash-job-names" in out.error
    assert "krmfn.dev/force: enabled" in out.error
    assert meta(kube_client.get(Job, "db-migration", namespace=namespace)).uid == uid
    web = kube_client.get(Deployment, "web", namespace=namespace)
    assert pod_spec(web).containers[0].image == "app:1"  # the later step was not applied


def test_failed_job_with_recreate_on_failure_is_recreated_before_the_step(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    retry = {"krmfn.dev/recreate-on-failure": "enabled"}
    first = apply([job("flaky", 0, fail=True, annotations=retry)], "--wait")
    assert first.code == 1
    failed_uid = meta(kube_client.get(Job, "flaky", namespace=namespace)).uid
    second = apply([job("flaky", 0, fail=True, annotations=retry)], "--wait")
    deletions = [e for e in second.of("apply") if e["action"] == "deleted"]
    assert [e["detail"] for e in deletions] == ["failed; re-created (recreate-on-failure)"]
    assert second.actions()[f"Job.batch {namespace}/flaky"] == "created"
    assert meta(kube_client.get(Job, "flaky", namespace=namespace)).uid != failed_uid
    assert second.code == 1  # the same spec fails again; the point is that it ran again


def test_failed_job_without_recreate_on_failure_stays_failed(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply([job("once", 0, fail=True)], "--wait").code == 1
    uid = meta(kube_client.get(Job, "once", namespace=namespace)).uid
    again = apply([job("once", 0, fail=True)], "--wait")
    assert again.code == 1
    assert again.actions()[f"Job.batch {namespace}/once"] == "unchanged"
    assert "BackoffLimitExceeded" in again.error
    assert meta(kube_client.get(Job, "once", namespace=namespace)).uid == uid


def hashed(tag: str, *, fail: bool = False) -> list[dict[str, object]]:
    """What hash-job-names renders: the Job name carries a hash of its spec."""
    migration = job(f"db-migration-{tag}0000000", 0, image=f"app:{tag}", fail=fail,
                    annotations={"krmfn.dev/job-base-name": "db-migration"})  # fmt: skip
    return [migration, deployment("web", 1, image=f"app:{tag}")]


def test_new_tag_runs_a_new_migration_and_prunes_the_old_job_after_success(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply(hashed("1")).code == 0
    out = apply(hashed("2"))
    assert out.code == 0, out.error
    assert out.actions()[f"Job.batch {namespace}/db-migration-20000000"] == "created"
    assert [(e["object"], e["action"]) for e in out.of("prune")] == [
        (f"Job.batch {namespace}/db-migration-10000000", "deleted")
    ]
    # prune comes after the last step
    types = [e["type"] for e in out.events]
    assert types.index("prune") > max(i for i, t in enumerate(types) if t == "step-done")
    assert status_of(kube_client.get(Job, "db-migration-20000000", namespace=namespace)).succeeded == 1
    assert get_job(kube_client, "db-migration-10000000", namespace) is None or (
        meta(kube_client.get(Job, "db-migration-10000000", namespace=namespace)).deletionTimestamp
    )


def test_nothing_is_pruned_after_a_failed_migration(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply(hashed("1")).code == 0
    out = apply(hashed("2", fail=True))
    assert out.code == 1
    assert out.of("prune") == []
    assert get_job(kube_client, "db-migration-10000000", namespace) is not None
    web = kube_client.get(Deployment, "web", namespace=namespace)
    assert pod_spec(web).containers[0].image == "app:1"


def test_completed_job_deleted_by_ttl_is_not_run_again(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    docs = [job("db-migration-a1b2c3d4", 0, ttl=0, annotations={"krmfn.dev/job-base-name": "db-migration"}),
            deployment("web", 1)]  # fmt: skip
    assert apply(docs).code == 0
    wait_gone(kube_client, "db-migration-a1b2c3d4", namespace)
    assert records(kube_client, namespace)[f"{namespace}/db-migration-a1b2c3d4"].endswith(":completed")
    out = apply(docs)
    assert out.code == 0, out.error
    assert out.actions()[f"Job.batch {namespace}/db-migration-a1b2c3d4"] == "skipped"
    assert get_job(kube_client, "db-migration-a1b2c3d4", namespace) is None


def wait_gone(client: Client, name: str, namespace: str) -> None:
    wait_until(
        f"the TTL controller to delete Job {name}", lambda: get_job(client, name, namespace) is None, 0
    )


def records(client: Client, namespace: str) -> dict[str, str]:
    """namespace/name -> "<run hash>:<outcome>" from the inventory's Job records."""
    notes = annotations_of(client.get(Secret, "krmfn", namespace=namespace))
    return dict(entry.split("=", 1) for entry in notes.get(JOB_RECORDS, "").split(",") if entry)


def test_failed_job_deleted_by_ttl_is_not_run_again(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    # backoffLimit 0, TTL 2s: the next apply used to say "created" and run it again.
    docs = [job("once", 0, fail=True, ttl=2)]
    first = apply(docs, "--wait")
    assert first.code == 1
    assert records(kube_client, namespace)[f"{namespace}/once"].endswith(":failed")
    wait_gone(kube_client, "once", namespace)
    again = apply(docs, "--wait")
    assert again.code == 1
    assert again.actions()[f"Job.batch {namespace}/once"] == "skipped"
    assert "failed before and deleted since (ttlSecondsAfterFinished); not run again" in again.error
    assert get_job(kube_client, "once", namespace) is None
    retried = apply(
        [job("once", 0, fail=True, ttl=2, annotations={"krmfn.dev/recreate-on-failure": "enabled"})]
    )
    assert retried.actions()[f"Job.batch {namespace}/once"] == "created"


def test_job_of_a_final_step_that_does_not_wait_is_not_run_again(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    # Flux's default: the final step is not waited for, so the Job's completion was never seen.
    docs = [deployment("web", 0), job("warm-up", 1, ttl=1)]
    assert apply(docs).code == 0
    assert records(kube_client, namespace)[f"{namespace}/warm-up"].endswith(":started")
    wait_gone(kube_client, "warm-up", namespace)
    again = apply(docs)
    assert again.code == 0, again.error
    assert again.actions()[f"Job.batch {namespace}/warm-up"] == "skipped"
    assert get_job(kube_client, "warm-up", namespace) is None


def test_fields_a_live_job_may_change_are_applied_in_place(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply([job("migrate", 0), deployment("web", 1)]).code == 0
    uid = meta(kube_client.get(Job, "migrate", namespace=namespace)).uid
    changed = job("migrate", 0, ttl=3600, backoff_limit=2, activeDeadlineSeconds=600, parallelism=1,
                  annotations={"example.com/owner": "db-team"})  # fmt: skip
    changed["metadata"]["labels"] = {"team": "db"}
    out = apply([changed, deployment("web", 1)])
    assert out.code == 0, out.error
    assert out.actions()[f"Job.batch {namespace}/migrate"] == "configured"
    live = kube_client.get(Job, "migrate", namespace=namespace)
    assert meta(live).uid == uid  # not run again
    spec = present(live.spec, "spec")
    assert (spec.ttlSecondsAfterFinished, spec.backoffLimit, spec.activeDeadlineSeconds) == (3600, 2, 600)
    assert (meta(live).labels or {})["team"] == "db"
    assert apply([changed, deployment("web", 1)]).actions()[f"Job.batch {namespace}/migrate"] == "unchanged"


def test_prune_disabled_added_later_to_a_completed_job_is_honoured(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply([job("seed", 0), deployment("web", 1)]).code == 0
    kept = job("seed", 0, annotations={"krmfn.dev/prune": "disabled"})
    assert apply([kept, deployment("web", 1)]).actions()[f"Job.batch {namespace}/seed"] == "configured"
    out = apply([deployment("web", 1)])
    assert out.code == 0, out.error
    assert (f"Job.batch {namespace}/seed", "kept") in [(e["object"], e["action"]) for e in out.of("prune")]
    assert get_job(kube_client, "seed", namespace) is not None


def test_force_recreates_any_kind_on_an_immutable_field(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    web = deployment("web", 0)
    web["metadata"]["annotations"]["krmfn.dev/force"] = "enabled"
    assert apply([web]).code == 0
    uid = meta(kube_client.get(Deployment, "web", namespace=namespace)).uid
    moved = copy.deepcopy(web)
    moved["spec"]["selector"] = {"matchLabels": {"app": "web2"}}
    moved["spec"]["template"]["metadata"]["labels"] = {"app": "web2"}
    out = apply([moved])
    assert out.code == 0, out.error
    assert out.actions()[f"Deployment.apps {namespace}/web"] == "recreated"
    assert "field is immutable" in next(e["detail"] for e in out.of("apply") if e["action"] == "recreated")
    live = kube_client.get(Deployment, "web", namespace=namespace)
    assert meta(live).uid != uid
    # without force, the API server's refusal is the error
    unforced = copy.deepcopy(moved)
    del unforced["metadata"]["annotations"]["krmfn.dev/force"]
    unforced["spec"]["selector"] = web["spec"]["selector"]
    unforced["spec"]["template"]["metadata"]["labels"] = {"app": "web"}
    refused = apply([unforced])
    assert refused.code == 1
    assert "field is immutable" in refused.error


def test_job_rendered_suspended_fails_its_step_at_once(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    out = apply([job("held", 0, suspend=True), deployment("web", 1)])
    assert out.code == 1
    # At once: the step's own reason, not its timeout (STEP_TIMEOUT, minutes) said for it.
    assert "suspended (spec.suspend: true as rendered)" in out.error
    assert out.step_results() == [("step0", "failed")]
    resumed = apply([job("held", 0, suspend=False), deployment("web", 1)])
    assert resumed.code == 0, resumed.error
    assert resumed.actions()[f"Job.batch {namespace}/held"] == "configured"  # resumed in place
