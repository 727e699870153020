"""`krmfn apply` and on-failure steps (set-steps' ``onFailure:``, ``krmfn.dev/on-failure``), on the real
control plane: not applied when every step succeeds, applied and waited for when one fails (the run still
exits 1 naming the failed step), run again on the next failure, never pruned while rendered."""

from __future__ import annotations

from lightkube import ApiError, Client
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap

from .objects import meta, status_of
from .runner_fixtures import Apply, Doc, configmap, final_wait, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

ON_FAILURE = {"krmfn.dev/on-failure": "true", "krmfn.dev/step": "notify", "krmfn.dev/step-index": "0"}


def notify(**kwargs: object) -> Doc:
    return job("notify", annotations=dict(ON_FAILURE), **kwargs)  # type: ignore[arg-type]


def stream(fail: bool, **notify_args: object) -> list[Doc]:
    return [job("migrate", 0, fail=fail), final_wait(configmap("after", 1)), notify(**notify_args)]


def get(client: Client, kind: type[Job] | type[ConfigMap], name: str, namespace: str) -> object | None:
    try:
        return client.get(kind, name, namespace=namespace)
    except ApiError as err:
        if err.status.code == 404:
            return None
        raise


def test_on_success_the_on_failure_step_is_not_applied(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    out = apply(stream(fail=False))
    assert out.code == 0, out.error
    assert f"Job.batch {namespace}/notify" not in out.actions()
    assert [name for name, _ in out.step_results()] == ["step0", "step1"]
    assert get(kube_client, Job, "notify", namespace) is None


def test_a_failed_step_runs_the_on_failure_step_and_still_fails(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    out = apply(stream(fail=True))
    assert out.code == 1
    assert out.step_results() == [("step0", "failed"), ("notify", "healthy")]
    assert out.error.startswith(f"step step0: Job.batch {namespace}/migrate failed:"), out.error
    assert out.result["failedStepName"] == "step0" and out.result["failedStep"] == 0
    assert out.of("error")[-1]["stepName"] == "step0"
    assert out.actions()[f"Job.batch {namespace}/notify"] == "created"
    done = status_of(kube_client.get(Job, "notify", namespace=namespace))
    uncounted = done.uncountedTerminatedPods  # the Job controller may not have counted its pod yet
    assert (done.succeeded or 0) + len((uncounted and uncounted.succeeded) or []) == 1
    assert get(kube_client, ConfigMap, "after", namespace) is None  # later steps still not applied

    # The next run succeeds: the notification Job stays (it is rendered: no prune) and does not run.
    uid = meta(kube_client.get(Job, "notify", namespace=namespace)).uid
    again = apply([job("migrate-2", 0), final_wait(configmap("after", 1)), notify()])
    assert again.code == 0, again.error
    assert f"Job.batch {namespace}/notify" not in again.actions()
    assert not [e for e in again.of("prune") if "notify" in e["object"]]
    assert meta(kube_client.get(Job, "notify", namespace=namespace)).uid == uid


def test_every_failure_runs_the_on_failure_jobs_again(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    assert apply(stream(fail=True)).code == 1
    first = meta(kube_client.get(Job, "notify", namespace=namespace)).uid
    again = apply([job("migrate-2", 0, fail=True), final_wait(configmap("after", 1)), notify()])
    assert again.code == 1
    assert [e["action"] for e in again.of("apply") if e["object"].endswith("/notify")] == [
        "deleted",
        "created",
    ]
    assert meta(kube_client.get(Job, "notify", namespace=namespace)).uid != first


def test_a_failing_on_failure_step_is_added_to_the_error(apply: Apply, namespace: str) -> None:
    out = apply([job("migrate", 0, fail=True), notify(fail=True)], "--wait")
    assert out.code == 1
    assert out.step_results() == [("step0", "failed"), ("notify", "failed")]
    assert out.error.startswith(f"step step0: Job.batch {namespace}/migrate failed:")
    assert (
        f"; then the on-failure step notify failed too: step notify: Job.batch {namespace}/notify failed:"
        in (out.error)
    )
    assert out.result["failedStepName"] == "step0"
