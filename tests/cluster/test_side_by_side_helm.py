"""krmfn next to Helm on the same control plane (issue 35): the rows of docs/peers.md's behaviour table,
each a test. The same chart (tests/testdata/helm/shop: a migration hook before the release, a warm-up
hook after it, a reindex Job of the release itself) goes once through Helm (``helm upgrade --install
--wait``, Helm runs its hooks) and once through krmfn (``helm template`` into ``krmfn-render``, then
``krmfn apply``), as two releases in one
namespace; each test then asks the cluster what each tool did."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from lightkube import ApiError, Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job

from .cluster import wait_until
from .objects import meta, status_of
from .runner_fixtures import Apply
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)
from .shop_chart import FAIL_MIGRATION, HOOK_JOBS, helm_status, helm_upgrade, helm_upgrade_args, rendered


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


def test_an_image_bump_helm_runs_every_hook_again_and_fails_on_its_own_job_and_krmfn_runs_each_once(
    apply: Apply, kube_client: Client, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    assert (installed := helm_upgrade(kubeconfig, namespace, "app:1")).returncode == 0, installed.stderr
    hooks = _uids(kube_client, namespace, "shop")
    bumped = helm_upgrade(kubeconfig, namespace, "app:2")
    # the hooks ran again, then the release's own Job (shop-reindex, not a hook) could not be patched
    assert bumped.returncode == 1, bumped.stderr
    assert 'cannot patch "shop-reindex" with kind Job' in bumped.stderr, bumped.stderr
    assert "field is immutable" in bumped.stderr, bumped.stderr
    assert _uids(kube_client, namespace, "shop")["db-migration"] != hooks["db-migration"]
    assert helm_status(kubeconfig, namespace) == "failed"

    assert (out := apply(rendered(tmp_path, "app:1", release="peer"), "--applyset", "peer")).code == 0, (
        out.error
    )
    out = apply(rendered(tmp_path, "app:2", release="peer"), "--applyset", "peer")
    assert out.code == 0, out.error
    jobs = _krmfn_jobs(out.actions())
    # every Job carries the image, so each is a new hashed name, run once; the old ones are pruned
    assert sorted(jobs.values()) == ["created"] * 3, jobs
    pruned = {
        obj for obj, action in ((e["object"], e["action"]) for e in out.of("prune")) if action == "deleted"
    }
    assert len({o for o in pruned if o.startswith("Job.batch ")}) == 3, pruned
    assert _image(kube_client, "peer", namespace) == "app:2"


SLOW_MIGRATION = ("--set-string", r"migrationPodLabels.test\.krmfn\.dev/slow=30s")
"""Values that keep the migration's pod running 30 s on kwok (tests/cluster/stages.yaml)."""


def test_an_upgrade_interrupted_mid_hook_is_marked_failed_and_the_next_one_runs_every_hook_again(
    kube_client: Client, kubeconfig: Path, namespace: str
) -> None:
    assert (installed := helm_upgrade(kubeconfig, namespace, "app:1")).returncode == 0, installed.stderr
    before = _uids(kube_client, namespace, "shop")["db-migration"]
    # the same image, so the release's own objects do not change: only the hook waits
    proc = subprocess.Popen(
        helm_upgrade_args(kubeconfig, namespace, "app:1", *SLOW_MIGRATION),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    try:
        wait_until("Helm's pre-upgrade hook Job to run", lambda: _running(kube_client, namespace, before), 60)
    except BaseException:
        proc.kill()
        raise
    interrupted = meta(kube_client.get(Job, "shop-db-migration", namespace=namespace)).uid
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    # Helm cancels its context: exit 1, not 130; the release is recorded as failed
    assert proc.returncode == 1, (out, err)
    assert "Release shop has been cancelled." in out and "UPGRADE FAILED: context canceled" in err, (out, err)
    assert helm_status(kubeconfig, namespace) == "failed"

    assert _running(kube_client, namespace, before)  # the interrupted migration still runs (30 s)
    again = helm_upgrade(kubeconfig, namespace, "app:1")
    assert again.returncode == 0, again.stderr
    assert helm_status(kubeconfig, namespace) == "deployed"
    # before-hook-creation deleted the interrupted hook Job mid-run and ran a new one (krmfn's next run
    # waits for the same Job instead: test_apply_sequence.py)
    after = _uids(kube_client, namespace, "shop")["db-migration"]
    assert len({before, interrupted, after}) == 3, (before, interrupted, after)


def _running(client: Client, namespace: str, other_than: str | None) -> bool:
    """Whether the migration hook Job is a new one (not the uid ``other_than``) and its pod runs."""
    try:
        job = client.get(Job, "shop-db-migration", namespace=namespace)
    except ApiError as err:
        if err.status.code == 404:  # Helm deleted the old one (before-hook-creation), the new one not yet
            return False
        raise
    return meta(job).uid != other_than and bool(status_of(job).active)
