"""krmfn next to Helm on the same control plane (issue 35): the rows of docs/peers.md's behaviour table,
each a test. The same chart (tests/testdata/helm/shop: a migration hook before the release, a warm-up
hook after it) goes once through Helm (``helm upgrade --install --wait``, Helm runs its hooks) and once
through krmfn (``helm template`` into ``krmfn-render``, then ``krmfn apply``), as two releases in one
namespace; each test then asks the cluster what each tool did."""

from __future__ import annotations

from pathlib import Path

from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job

from .objects import meta, status_of
from .runner_fixtures import Apply
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)
from .shop_chart import FAIL_MIGRATION, HOOK_JOBS, helm_upgrade, rendered


def _uids(client: Client, namespace: str, release: str) -> dict[str, str | None]:
    return {base: meta(client.get(Job, f"{release}-{base}", namespace=namespace)).uid for base in HOOK_JOBS}


def _image(client: Client, name: str, namespace: str) -> str | None:
    template = client.get(Deployment, name, namespace=namespace).spec.template
    return template.spec.containers[0].image  # type: ignore[union-attr]


def _krmfn_jobs(outcome_actions: dict[str, str]) -> dict[str, str]:
    return {obj: action for obj, action in outcome_actions.items() if obj.startswith("Job.batch ")}


def test_an_upgrade_with_nothing_changed_helm_runs_every_hook_job_again_and_krmfn_none(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    first = helm_upgrade(kubeconfig, namespace, "app:1")
    assert first.returncode == 0, first.stderr
    installed = _uids(kube_client, namespace, "shop")
    again = helm_upgrade(kubeconfig, namespace, "app:1")
    assert again.returncode == 0, again.stderr
    upgraded = _uids(kube_client, namespace, "shop")
    # before-hook-creation (Helm's default policy) deleted each hook Job and created it anew: both ran again
    assert all(installed[base] != upgraded[base] for base in HOOK_JOBS), (installed, upgraded)
    assert all(
        status_of(kube_client.get(Job, f"shop-{b}", namespace=namespace)).succeeded == 1 for b in HOOK_JOBS
    )

    docs = rendered(tmp_path, "app:1", release="peer")
    assert (out := apply(docs, "--applyset", "peer")).code == 0, out.error
    assert set(_krmfn_jobs(out.actions()).values()) == {"created"}
    out = apply(docs, "--applyset", "peer")
    assert out.code == 0, out.error
    assert set(_krmfn_jobs(out.actions()).values()) == {"unchanged"}  # nothing changed: no Job runs


def test_a_failing_migration_stops_both_before_the_rollout_and_each_says_so(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    assert (installed := helm_upgrade(kubeconfig, namespace, "app:1")).returncode == 0, installed.stderr
    failed = helm_upgrade(kubeconfig, namespace, "app:2", *FAIL_MIGRATION)
    assert failed.returncode == 1, failed.stderr
    assert "pre-upgrade hooks failed" in failed.stderr, failed.stderr
    assert _image(kube_client, "shop", namespace) == "app:1"  # the release's objects were not applied
    left = status_of(kube_client.get(Job, "shop-db-migration", namespace=namespace))
    assert left.failed and not left.succeeded  # Helm leaves the failed hook Job for the user to read

    assert (out := apply(rendered(tmp_path, "app:1", release="peer"), "--applyset", "peer")).code == 0, (
        out.error
    )
    out = apply(rendered(tmp_path, "app:2", *FAIL_MIGRATION, release="peer"), "--applyset", "peer")
    assert out.code == 1
    assert out.step_results()[-1] == ("helm-pre-0", "failed"), out.step_results()
    assert "peer-db-migration-" in out.error and "failed" in out.error, out.error
    assert _image(kube_client, "peer", namespace) == "app:1"  # the rollout never started
