"""Real charts and manifest sets of other tools ordered through set-steps' ``orderFrom`` (issue 35): the
Gatekeeper Helm chart (v3.23.1, rendered by ``helm template`` with Helm 3) under ``orderFrom: helm``,
Argo CD's own end-to-end sync-wave and hook sets (v3.5.7) under ``orderFrom: argocd``, and kapp's
change-group example (v0.66.0, examples/resource-ordering) under ``orderFrom: kapp``. All are
fetched from the Go module proxy into the cache by scripts/fetch-peer-manifests.sh (checksums pinned,
licence files beside them), never copied into this repository; a missing Go, Helm or kustomize fails.

Each expected order is computed here from the objects' annotations by the tool's own documented rule,
independently of krmfn's reader: Helm installs pre-install hooks by ascending weight, then the release,
then post-install hooks by ascending weight (and never runs a pre-delete hook at install); Argo CD syncs
by phase (PreSync, Sync, PostSync) and, within a phase, by ascending wave; kapp upserts an object after
every member of the change groups its ``upsert after upserting`` rules name. krmfn's steps must group the
objects exactly so, in that order.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from peer_manifests import (
    argo_set,
    argo_sync_order,
    docs_of,
    gatekeeper,
    helm_install_order,
    helm_pre_delete_order,
    kapp_change_order,
    kapp_set,
    key,
    krmfn_steps,
    notes_of,
    set_steps,
)

pytestmark = pytest.mark.e2e


def test_gatekeepers_hooks_run_in_helms_install_order(tmp_path: Path) -> None:
    chart = gatekeeper()
    out = set_steps("helm", chart, tmp_path)
    steps = krmfn_steps(out.stdout)
    expected = helm_install_order(docs_of(chart))
    assert [objects for _, objects in steps] == expected
    assert [name for name, _ in steps] == ["helm-pre-1", "deploy", "helm-post-minus5"]
    # What the chart really holds, so a change of the fetched chart cannot empty the test:
    assert steps[0][1] == {
        "ServiceAccount gatekeeper-system/gatekeeper-admin-upgrade-crds",
        "ClusterRole /gatekeeper-admin-upgrade-crds",
        "ClusterRoleBinding /gatekeeper-admin-upgrade-crds",
        "Job gatekeeper-system/gatekeeper-update-crds-hook",
    }
    assert "Deployment gatekeeper-system/gatekeeper-controller-manager" in steps[1][1]
    assert "Job gatekeeper-system/gatekeeper-update-namespace-label" in steps[2][1]


def test_gatekeepers_pre_delete_hooks_become_on_delete_steps_in_helms_order(tmp_path: Path) -> None:
    chart = gatekeeper("preUninstall.deleteWebhookConfigurations.enabled=true")
    pre_delete = {key(d) for d in docs_of(chart) if "pre-delete" in notes_of(d).get("helm.sh/hook", "")}
    assert pre_delete, "the chart rendered no pre-delete hook"
    out = set_steps("helm", chart, tmp_path)
    assert [objects for _, objects in krmfn_steps(out.stdout)] == helm_install_order(docs_of(chart))
    deleting = krmfn_steps(out.stdout, on_delete=True)
    assert [objects for _, objects in deleting] == helm_pre_delete_order(docs_of(chart))
    assert set().union(*(objects for _, objects in deleting)) == pre_delete
    assert all(name.startswith("helm-predelete-") for name, _ in deleting)


@pytest.mark.parametrize(
    ("name", "steps"),
    [
        ("sync-waves", ["argocd-wave-1", "argocd-wave-2"]),
        ("syncwaves-prune-order", ["deploy", "argocd-wave-1", "argocd-wave-2"]),
        ("hook-custom-health", ["argocd-presync-0", "deploy"]),
        ("multi-namespace-hook", ["deploy", "argocd-postsync-0"]),
    ],
)
def test_argo_cds_sets_sync_in_argo_cds_order(name: str, steps: list[str], tmp_path: Path) -> None:
    stream = argo_set(name)
    out = set_steps("argocd", stream, tmp_path)
    found = krmfn_steps(out.stdout)
    assert [objects for _, objects in found] == argo_sync_order(docs_of(stream))
    assert [step for step, _ in found] == steps


def test_kapps_resource_ordering_example_upserts_in_kapps_order(tmp_path: Path) -> None:
    stream = kapp_set("resource-ordering")
    docs = docs_of(stream)
    expected = kapp_change_order(docs)
    # The set as it is (kapp's README shows this order), so that a change of the fetched set cannot
    # empty the test: the replica's Service has no rule and goes with the primary.
    assert expected == [
        {
            "Service default/redis-primary",
            "Deployment default/redis-primary",
            "Service default/redis-replica",
        },
        {"Deployment default/redis-replica"},
        {"Job default/sync-check"},
    ]
    out = set_steps("kapp", stream, tmp_path)
    found = krmfn_steps(out.stdout)
    assert [objects for _, objects in found] == expected
    assert [step for step, _ in found] == ["deploy", "kapp-after-1", "kapp-after-2"]
