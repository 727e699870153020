"""``krmfn delete``'s teardown order (delete.py), pure: generated over steps x kinds x guards.

The order must be apply's reversed: later steps first, the unindexed objects (apply's first step) last,
and within a step the kinds in reverse of their apply rank. What prune would keep stays, the parent is
never a step, and a Namespace holding the parent goes after it.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest

from krmfn.k8s.step_grouping import index_of
from krmfn.runner.engine.delete import teardown
from krmfn.runner.inventory.applyset import ID_LABEL, Parent
from krmfn.runner.inventory.runs import RunRecord, parse_runs, render_runs
from krmfn.runner.plan import Key, key_of, kind_rank

KINDS = [
    ("v1", "ConfigMap"),
    ("v1", "ServiceAccount"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("example.com/v1", "Widget"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("v1", "Namespace"),
]
STEPS: list[int | None] = [None, 0, 1, 2, 7]
PARENT = Parent("shop", "prod", "1")


def member(api_version: str, kind: str, step: int | None, n: int, **notes: str) -> dict[str, Any]:
    cluster_scoped = kind in ("Namespace", "CustomResourceDefinition")
    meta: dict[str, Any] = {"name": f"{kind.lower()}-{step}-{n}", "uid": f"u-{kind}-{step}-{n}"}
    if not cluster_scoped:
        meta["namespace"] = "prod"
    annotations = dict(notes)
    if step is not None:
        annotations |= {"krmfn.dev/step-index": str(step), "krmfn.dev/step": f"s{step}"}
    meta["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def flags(namespaces: bool, crds: bool) -> Any:
    return SimpleNamespace(prune_namespaces=namespaces, prune_crds=crds)


@pytest.mark.parametrize(("namespaces", "crds"), list(itertools.product([False, True], repeat=2)))
def test_reverse_step_order_then_reverse_kind_rank(namespaces: bool, crds: bool) -> None:
    members = [member(v, k, s, n) for (v, k), s, n in itertools.product(KINDS, STEPS, range(2))]
    plan = teardown(members, PARENT, flags(namespaces, crds))
    order = [(step.index, [str(o["kind"]) for o in group]) for step in plan.steps for group in step.groups]
    indices = [index for index, _ in order]
    # Steps: descending, the unindexed last, each one contiguous.
    expected_steps = [7, 2, 1, 0, None]
    assert [step.index for step in plan.steps] == expected_steps
    assert indices == sorted(indices, key=lambda i: 1 if i is None else -i)
    for step in plan.steps:
        ranks = [kind_rank(str(group[0]["kind"])) for group in step.groups]
        assert ranks == sorted(ranks, reverse=True), step.name
        for group in step.groups:
            assert len({kind_rank(str(o["kind"])) for o in group}) == 1
            assert all(index_of(o) == step.index for o in group)
        assert step.name == ("default" if step.index is None else f"s{step.index}")
    deleted = {key_of(o) for step in plan.steps for o in step.members}
    kept = {k.key for k in plan.kept}
    assert deleted.isdisjoint(kept) and len(deleted) + len(kept) == len(members)
    for obj in members:
        key = key_of(obj)
        guarded = (key.kind == "Namespace" and not namespaces) or (
            key.kind == "CustomResourceDefinition" and not crds
        )
        assert (key in kept) == guarded, key
    assert plan.inventory_stays == (not (namespaces and crds))


def test_opted_out_members_stay_without_holding_the_inventory() -> None:
    members = [
        member("v1", "ConfigMap", 1, 0, **{"krmfn.dev/prune": "disabled"}),
        member("v1", "ConfigMap", 1, 1),
    ]
    plan = teardown(members, PARENT, flags(False, False))
    assert [str(key_of(o)) for o in plan.steps[0].members] == ["ConfigMap prod/configmap-1-1"]
    assert [(str(k.key), k.holds_inventory) for k in plan.kept] == [("ConfigMap prod/configmap-1-0", False)]
    assert not plan.inventory_stays


def test_parents_are_never_a_step_and_the_parents_namespace_goes_after_it() -> None:
    own = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "shop", "namespace": "prod", "uid": "p"},
    }
    other = member("v1", "Secret", 0, 0)
    other["metadata"]["labels"] = {ID_LABEL: "applyset-other-v1"}
    home = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "prod", "uid": "n", "annotations": {"krmfn.dev/step-index": "0"}},
    }
    elsewhere = member("v1", "Namespace", 0, 0)
    plan = teardown(
        [own, other, home, elsewhere, member("v1", "ConfigMap", 0, 1)], PARENT, flags(True, False)
    )
    in_steps = [key_of(o) for step in plan.steps for o in step.members]
    assert Key("", "Secret", "prod", "shop") not in in_steps and key_of(other) not in in_steps
    assert [k.key for k in plan.kept] == [key_of(other)]
    assert [key_of(o) for o in plan.after_parent] == [Key("", "Namespace", "", "prod")]
    assert key_of(elsewhere) in in_steps


def test_a_run_record_says_it_was_a_delete_and_older_records_read_as_apply() -> None:
    records = [
        RunRecord("a", "2026-12-02T18:00:00Z", result="succeeded"),
        RunRecord("b", "2026-12-02T18:01:00Z", result="failed", command="delete"),
    ]
    text = render_runs(records)
    assert '"command":"delete"' in text and text.count('"command"') == 1
    assert [r.command for r in parse_runs(text)] == ["apply", "delete"]
    assert [r.command for r in parse_runs(text.replace('"delete"', '"rm -rf"'))] == ["apply", "apply"]


def test_the_parents_namespace_stays_when_the_inventory_does() -> None:
    home = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "uid": "n"}}
    crd = member("apiextensions.k8s.io/v1", "CustomResourceDefinition", 0, 0)
    plan = teardown([home, crd], PARENT, flags(True, False))
    assert plan.inventory_stays and not plan.after_parent and not plan.steps
    assert sorted(str(k.key) for k in plan.kept if k.holds_inventory) == [
        "CustomResourceDefinition.apiextensions.k8s.io customresourcedefinition-0-0",
        "Namespace prod",
    ]
