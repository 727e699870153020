"""A Helm chart's hooks applied by ``krmfn apply`` in Helm's order (issue 35): ``helm template`` of
tests/testdata/helm/shop through ``krmfn-render`` with set-steps' ``orderFrom: helm``, on the test
control plane. With krmfn's semantics, not Helm's: an unchanged hook Job is not run again (Helm re-runs
every hook at every upgrade), and an image bump runs each changed hook once, under a new name."""

from __future__ import annotations

from pathlib import Path

from lightkube import Client
from lightkube.resources.batch_v1 import Job

from .objects import meta, status_of
from .runner_fixtures import Apply
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)
from .shop_chart import rendered


def test_a_charts_hooks_run_in_helms_order_and_an_unchanged_hook_job_never_again(
    apply: Apply, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    docs = rendered(tmp_path, "app:1")
    jobs = {d["metadata"]["annotations"]["krmfn.dev/job-base-name"]: d["metadata"]["name"] for d in docs
            if d["kind"] == "Job"}  # fmt: skip
    first = apply(docs, "--applyset", "shop")
    assert first.code == 0, first.error
    assert [name for name, _ in first.step_results()] == [
        "helm-pre-minus5",
        "helm-pre-0",
        "deploy",
        "helm-post-5",
    ]
    order = [e["object"] for e in first.of("apply")]
    migration = f"Job.batch {namespace}/{jobs['shop-db-migration']}"
    warmup = f"Job.batch {namespace}/{jobs['shop-cache-warmup']}"
    assert order.index(f"ServiceAccount {namespace}/shop-migrate") < order.index(migration)
    assert order.index(migration) < order.index(f"Deployment.apps {namespace}/shop") < order.index(warmup)
    ran = {name: meta(kube_client.get(Job, name, namespace=namespace)).uid for name in jobs.values()}
    assert all(status_of(kube_client.get(Job, n, namespace=namespace)).succeeded == 1 for n in ran)

    again = apply(docs, "--applyset", "shop")
    assert again.code == 0, again.error
    assert {again.actions()[f"Job.batch {namespace}/{n}"] for n in ran} == {"unchanged"}
    assert {n: meta(kube_client.get(Job, n, namespace=namespace)).uid for n in ran} == ran

    bumped = rendered(tmp_path, "app:2")
    new = {d["metadata"]["name"] for d in bumped if d["kind"] == "Job"}
    assert not new & set(ran)  # every Job's spec has the image: each gets a new name, and runs once
    third = apply(bumped, "--applyset", "shop")
    assert third.code == 0, third.error
    assert {third.actions()[f"Job.batch {namespace}/{n}"] for n in new} == {"created"}
