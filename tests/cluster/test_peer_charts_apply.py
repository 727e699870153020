"""Real charts and manifest sets of other tools applied by ``krmfn apply`` on the test control plane in
their tools' order (issue 35), observed on the cluster, not in the plan: Gatekeeper's Helm chart (v3.23.1,
``helm template --include-crds`` with Helm 3) through ``krmfn-render`` with ``orderFrom: helm``, and
Argo CD's own end-to-end sync-wave and hook sets (v3.5.7) with ``orderFrom: argocd``, and kapp's
change-group example (v0.66.0, examples/resource-ordering) with ``orderFrom: kapp``. They are fetched by
scripts/fetch-peer-manifests.sh into the cache (tests/peer_manifests.py); if they cannot be, every test
here fails.

The order each tool would follow is computed from the objects' annotations by the tool's documented rule
(tests/peer_manifests.py, independently of krmfn's reader), and the API server's record must show it: every
object of a group ready (a Job Complete, a Deployment's replicas available, a Pod Ready) at an etcd
revision below the creation of any object of the next group (tests/cluster/creation_order.py).

A second apply with nothing changed must create, recreate or re-run nothing (every object's and pod's uid
the same): krmfn's semantics, where Helm re-runs every hook Job at each upgrade and Argo CD re-creates its
hooks at each sync.

What the test bed changes, and why: Gatekeeper is rendered with ``disableValidatingWebhook=true`` and
``disableMutation=true``, since its webhooks would point at a server that never runs here (kwok runs no
container), and its namespace-label webhook fails closed, which would block every namespace write of the
session. Its images never pull: kwok makes every pod Running and Ready, and a Job's pods Succeeded after
about a second (tests/cluster/stages.yaml), so the hooks "run" but do not label or upgrade anything. Argo
CD's ``syncwaves-prune-order`` Pod carries a finalizer that its preStop hook removes on a real kubelet;
kwok runs no preStop, so the test removes it when it is done, as that hook would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import ApiError, Client
from peer_manifests import (
    argo_set,
    argo_sync_order,
    docs_of,
    gatekeeper,
    helm_install_order,
    kapp_change_order,
    kapp_set,
    key,
    notes_of,
    run,
)

from .cluster import Cluster
from .creation_order import Timeline, cluster_scoped, kinds_of, live_uids, placed, resource, revision_now
from .objects import meta
from .patience import STEP_TIMEOUT
from .runner_fixtures import Apply, Doc
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

RENDER = """\
apiVersion: fn.krmfn.dev/v1alpha1
kind: Render
metadata: {name: peers}
setConfigChecksum: {}
hashJobNames: {}
setSteps:
  orderFrom: TOOL
  defaultStep: deploy
  steps: [{name: deploy, timeout: STEP_TIMEOUT}]
"""
GATEKEEPER_VALUES = ("disableValidatingWebhook=true", "disableMutation=true")


def rendered(tool_name: str, stream: str, tmp_path: Path, namespace: str) -> list[Doc]:
    """``stream`` as ``krmfn apply`` takes it: through ``krmfn-render`` with set-steps' ``orderFrom``."""
    config = tmp_path / "render.yaml"
    config.write_text(RENDER.replace("TOOL", tool_name).replace("STEP_TIMEOUT", STEP_TIMEOUT))
    return placed(docs_of(run(["krmfn-render", "--fn-config", str(config)], stdin=stream).stdout), namespace)


@pytest.fixture
def watcher(cluster: Cluster) -> Iterator[Client]:
    """A client of the test's own for its Timeline's watches, closed after it: the watches end with it,
    not with the session, so they hold no connection of the session's client."""
    client = cluster.client()
    yield client
    client.close()


@pytest.fixture
def cleanup(kube_client: Client) -> Iterator[list[Doc]]:
    """Docs whose cluster-scoped objects (the namespace fixture deletes the rest) are deleted after the
    test, and whose Pods' finalizers are removed first, as their preStop hook would on a real kubelet."""
    docs: list[Doc] = []
    yield docs
    for doc in docs:
        res, name, namespace = (
            resource(doc["kind"]),
            doc["metadata"]["name"],
            doc["metadata"].get("namespace"),
        )
        where = {"namespace": namespace} if namespace else {}
        try:
            if doc["kind"] == "Pod" and doc["metadata"].get("finalizers"):
                kube_client.patch(res, name, {"metadata": {"finalizers": None}}, **where)
            if cluster_scoped(doc["kind"]):
                kube_client.delete(res, name)
        except ApiError as err:
            if err.status.code != 404:
                raise


def apply_in_order(
    apply: Apply, watcher: Client, namespace: str, docs: list[Doc], expected: list[set[str]]
) -> tuple[Any, Timeline]:
    """``krmfn apply`` of ``docs``; asserts the cluster saw ``expected``'s groups in order."""
    timeline = Timeline(watcher, kinds_of(docs), since=revision_now(watcher, namespace))
    out = apply(docs, "--applyset", "peers")
    assert out.code == 0, (out.error, out.stderr)
    timeline.assert_in_order(expected)
    return out, timeline


def assert_nothing_runs_again(apply: Apply, kube_client: Client, docs: list[Doc]) -> list[str]:
    """A second apply, nothing changed: no object created, recreated or re-run; every Job unchanged (the
    Jobs returned)."""
    before = live_uids(kube_client, docs)
    again = apply(docs, "--applyset", "peers")
    assert again.code == 0, (again.error, again.stderr)
    assert live_uids(kube_client, docs) == before
    jobs = [e for e in again.of("apply") if e["object"].startswith("Job.batch ")]
    assert all(e["action"] == "unchanged" for e in jobs), jobs
    return [e["object"] for e in jobs]


def test_gatekeepers_chart_installs_in_helms_order_on_the_cluster_and_runs_no_hook_twice(
    *, apply: Apply, kube_client: Client, namespace: str, tmp_path: Path, cleanup: list[Doc], watcher: Client
) -> None:
    chart = gatekeeper(*GATEKEEPER_VALUES, namespace=namespace, include_crds=True)
    docs = rendered("helm", chart, tmp_path, namespace)
    cleanup.extend(docs)
    expected = helm_install_order(docs)
    jobs = {
        d["metadata"]["annotations"]["krmfn.dev/job-base-name"]: key(d) for d in docs if d["kind"] == "Job"
    }
    pre, post = jobs["gatekeeper-update-crds-hook"], jobs["gatekeeper-update-namespace-label"]
    deployments = {key(d) for d in docs if d["kind"] == "Deployment"}
    assert deployments == {f"Deployment {namespace}/gatekeeper-{n}" for n in ("audit", "controller-manager")}
    # What the chart holds, so that a change of the fetched chart cannot empty the test: the CRD-upgrade
    # hook and its RBAC first, the release (its CRDs too: the limit in docs/helm.md), the label hook last.
    assert expected[0] == {pre, f"ServiceAccount {namespace}/gatekeeper-admin-upgrade-crds",
                           "ClusterRole /gatekeeper-admin-upgrade-crds",
                           "ClusterRoleBinding /gatekeeper-admin-upgrade-crds"}  # fmt: skip
    assert (
        deployments | {"CustomResourceDefinition /constrainttemplates.templates.gatekeeper.sh"} <= expected[1]
    )
    assert post in expected[2] and len(expected) == 3

    out, timeline = apply_in_order(apply, watcher, namespace, docs, expected)

    assert [name for name, _ in out.step_results()] == ["helm-pre-1", "deploy", "helm-post-minus5"]
    # The two orders the chart relies on, by name: the pre-install Job completed before the release's
    # Deployments were created, and the post-install Job created once both were available.
    assert timeline.ready[pre] < min(timeline.added[d] for d in deployments)
    assert max(timeline.ready[d] for d in deployments) < timeline.added[post]
    assert timeline.ready[post] > timeline.added[post]  # it ran: Complete after it was created

    unchanged = assert_nothing_runs_again(apply, kube_client, docs)
    assert sorted(unchanged) == sorted(f"Job.batch {j.split()[1]}" for j in (pre, post))


@pytest.mark.parametrize(
    ("name", "groups", "steps"),
    [
        pytest.param(
            "sync-waves",
            [{"ConfigMap cm-1"}, {"ConfigMap cm-2"}],
            ["argocd-wave-1", "argocd-wave-2"],
            id="sync-waves",
        ),
        pytest.param(
            "syncwaves-prune-order",
            [
                {"ServiceAccount modify-pods-sa", "Role modify-pods-role"},
                {"RoleBinding modify-pods-rolebinding"},
                {"Pod pod-with-finalizers"},
            ],
            ["deploy", "argocd-wave-1", "argocd-wave-2"],
            id="syncwaves-prune-order",
        ),
        pytest.param(
            "hook-custom-health",
            [{"ConfigMap my-map"}, {"Deployment guestbook-ui", "Service guestbook-ui"}],
            ["argocd-presync-0", "deploy"],
            id="hook-custom-health-presync",
        ),
        pytest.param(
            "multi-namespace-hook",
            [{"Namespace test-multi-ns-hook-second", "Deployment nginx-deployment"}, {"Pod my-hook"}],
            ["deploy", "argocd-postsync-0"],
            id="multi-namespace-hook-postsync",
        ),
    ],
)
def test_argo_cds_sets_sync_in_argo_cds_order_on_the_cluster_and_no_hook_runs_twice(
    name: str,
    groups: list[set[str]],
    steps: list[str],
    *,
    apply: Apply,
    kube_client: Client,
    namespace: str,
    tmp_path: Path,
    cleanup: list[Doc],
    watcher: Client,
) -> None:
    docs = rendered("argocd", argo_set(name), tmp_path, namespace)
    cleanup.extend(docs)
    expected = argo_sync_order(docs)
    # The set as it is, so that a change of the fetched set cannot empty the test (kind and name; the
    # namespaces are the test's, and test-multi-ns-hook-second's second hook Pod).
    assert [{" ".join((k.split()[0], k.rsplit("/", 1)[1])) for k in group} for group in expected] == groups
    hooks = [key(d) for d in docs if "argocd.argoproj.io/hook" in notes_of(d)]
    assert bool(hooks) == name.startswith(("hook-", "multi-")), hooks

    out, _ = apply_in_order(apply, watcher, namespace, docs, expected)

    # krmfn's own steps too: where the kinds' order within one step would already create them in this
    # order (ConfigMaps, RBAC before a Pod), the run must still have waited step by step.
    assert [step for step, _ in out.step_results()] == steps
    assert_nothing_runs_again(apply, kube_client, docs)
    if name == "multi-namespace-hook":  # the PostSync hook Pod of the other namespace ran there, once
        pod = kube_client.get(resource("Pod"), "my-hook", namespace="test-multi-ns-hook-second")
        assert meta(pod).namespace == "test-multi-ns-hook-second"


def test_kapps_resource_ordering_example_deploys_in_kapps_order_on_the_cluster_and_runs_no_job_twice(
    *, apply: Apply, kube_client: Client, namespace: str, tmp_path: Path, cleanup: list[Doc], watcher: Client
) -> None:
    docs = rendered("kapp", kapp_set("resource-ordering"), tmp_path, namespace)
    cleanup.extend(docs)
    expected = kapp_change_order(docs)
    names = [{k.split()[0] + " " + k.rsplit("/", 1)[1] for k in group} for group in expected]
    (job,) = [key(d) for d in docs if d["kind"] == "Job"]
    assert names[:2] == [
        {"Service redis-primary", "Deployment redis-primary", "Service redis-replica"},
        {"Deployment redis-replica"},
    ]
    assert expected[2] == {job} and len(expected) == 3

    out, timeline = apply_in_order(apply, watcher, namespace, docs, expected)

    assert [step for step, _ in out.step_results()] == ["deploy", "kapp-after-1", "kapp-after-2"]
    assert timeline.ready[job] > timeline.added[job]  # the sync check ran: Complete after it was created
    # kapp fills its nonce anew at each deploy and so re-runs the check every time; krmfn does not
    assert assert_nothing_runs_again(apply, kube_client, docs) == [f"Job.batch {job.split()[1]}"]
