"""The order ``krmfn delete`` tears an app down in: pure, from the inventory's members as listed.

Each member carries the step it was applied in: the ``krmfn.dev/step-index`` and ``krmfn.dev/step``
annotations set-steps put on it are applied with it, so the live objects say the order without the render
(as ``kapp delete -a`` and ``kpt live destroy`` need none). The order is apply's reversed: the last step
first, the objects without a step index (apply's first step) last; within a step, the kinds in reverse
of their apply order (a custom resource before its CRD, a Deployment before its ServiceAccount), one group
of a kind rank at a time. Prune's rules decide what stays (prune.kept_because): Namespaces and CRDs only
with ``--prune-namespaces``/``--prune-crds``, and a member annotated ``krmfn.dev/prune: disabled`` is left
in place. Another inventory's parent is never deleted; a Namespace that holds this app's parent is
deleted after the parent (deleting it first would delete the parent, and with it the lock and the record
of the teardown, while steps are still running).

The on-delete steps' objects (``krmfn.dev/on-delete: "true"``: applied by ``krmfn delete -f/-k`` just
before, so members like any other) are deleted first, the last on-delete step first: they were applied
last, and they did their work before the teardown started.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from krmfn.duration import SECOND, format_duration
from krmfn.k8s.annotations import ON_DELETE, STEP
from krmfn.k8s.kobj import annotations_of
from krmfn.k8s.step_grouping import UNSTEPPED, UNSTEPPED_ON_DELETE, index_of
from krmfn.runner.errors import Interrupted, StepTimeout
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.inventory.prune import GUARDED, PARENT_KEPT, is_parent, kept_because
from krmfn.runner.plan import Key, key_of, kind_rank

Member = dict[str, Any]


@dataclass
class DeleteStep:
    """One step of the teardown: its objects in groups of one kind rank, each group gone before the next."""

    index: int | None
    """The step's ``krmfn.dev/step-index``; None for the objects without one (apply's first step)."""
    name: str
    groups: list[list[Member]] = field(default_factory=list)
    on_delete: bool = False
    """The objects of an on-delete step (``krmfn.dev/on-delete``), deleted before the app's."""

    @property
    def members(self) -> list[Member]:
        return [obj for group in self.groups for obj in group]


@dataclass
class Kept:
    key: Key
    why: str
    holds_inventory: bool
    """Kept for want of a flag (a Namespace, a CRD): the inventory stays, listing it, so that a later
    ``krmfn delete`` with the flag can still find it. A member that opted out (``krmfn.dev/prune:
    disabled``) is left in place without an inventory."""


@dataclass
class Teardown:
    steps: list[DeleteStep] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    after_parent: list[Member] = field(default_factory=list)
    """Namespaces holding the parent: deleted once the parent is gone."""

    @property
    def inventory_stays(self) -> bool:
        return any(k.holds_inventory for k in self.kept)

    def count(self) -> int:
        return sum(len(step.members) for step in self.steps) + len(self.after_parent)


def step_name(obj: Member) -> str:
    """The step's name as set-steps wrote it (as ``krmfn status`` shows it)."""
    index = index_of(obj)
    unstepped = UNSTEPPED_ON_DELETE if is_on_delete(obj) else UNSTEPPED
    return str(annotations_of(obj).get(STEP) or (unstepped if index is None else f"step-{index}"))


def is_on_delete(obj: Member) -> bool:
    """A member of an on-delete step; read from the cluster, so any value but ``"true"`` is not."""
    return str(annotations_of(obj).get(ON_DELETE, "")) == "true"


def teardown(members: list[Member], parent: Parent, options: Any) -> Teardown:
    """The teardown of ``members`` (the inventory's, as listed), as ``options`` allow (``prune_namespaces``,
    ``prune_crds``). Pure: ``krmfn delete --dry-run`` prints exactly this."""
    plan = Teardown()
    by_step: dict[int | None, list[Member]] = {}
    by_delete_step: dict[int | None, list[Member]] = {}
    seen: set[Key] = set()
    for obj in sorted(members, key=key_of):
        key = key_of(obj)
        if key in seen:
            continue  # a kind listed twice (two versions of one group): one object
        seen.add(key)
        if is_parent(obj, parent):
            if key != Key("", "Secret", parent.namespace, parent.name):
                plan.kept.append(Kept(key, PARENT_KEPT, holds_inventory=False))
            continue
        why = kept_because(obj, options)
        if why is not None:
            guarded = (key.group, key.kind) in GUARDED
            plan.kept.append(Kept(key, why.replace("no longer rendered, but ", ""), holds_inventory=guarded))
            continue
        if (key.group, key.kind) == ("", "Namespace") and key.name == parent.namespace:
            plan.after_parent.append(obj)
            continue
        (by_delete_step if is_on_delete(obj) else by_step).setdefault(index_of(obj), []).append(obj)
    if plan.inventory_stays:  # the parent stays, so the Namespace it lives in must too
        why = "it holds the inventory, which stays for the members kept"
        plan.kept += [Kept(key_of(obj), why, holds_inventory=True) for obj in plan.after_parent]
        plan.after_parent = []
    plan.steps = _steps(by_delete_step, on_delete=True) + _steps(by_step, on_delete=False)
    return plan


def _steps(by_step: dict[int | None, list[Member]], *, on_delete: bool) -> list[DeleteStep]:
    """Later steps first; the unindexed objects (apply's first step) last."""
    found = []
    for index in sorted(by_step, key=lambda i: 1 if i is None else -i):
        objs = by_step[index]
        names = sorted({step_name(obj) for obj in objs})
        step = DeleteStep(index, names[0] if len(names) == 1 else ",".join(names), on_delete=on_delete)
        ranks: dict[int, list[Member]] = {}
        for obj in objs:
            ranks.setdefault(kind_rank(str(obj.get("kind"))), []).append(obj)
        step.groups = [sorted(ranks[rank], key=key_of) for rank in sorted(ranks, reverse=True)]
        found.append(step)
    return found


def waiting_for(obj: Member | None) -> str:
    """What a member being deleted still waits for, from its live state (cluster text: the caller escapes)."""
    meta = (obj or {}).get("metadata") or {}
    finalizers = [str(f) for f in meta.get("finalizers") or []][:5]
    if not meta.get("deletionTimestamp"):
        return "deletion requested"
    if finalizers:
        return "deleting; finalizers: " + ", ".join(finalizers)
    return "deleting"


class DeleteTimeout(StepTimeout):
    """A step's objects were not gone in time (a finalizer that holds, most often)."""

    def __init__(self, step: str, timeout: float, pending: list[tuple[str, str]]) -> None:
        super().__init__(step, format_duration(round(timeout * SECOND)), pending)
        detail = "; ".join(f"{ref}: {message}" for ref, message in pending)
        self.args = (
            f"step {step}: not gone after {format_duration(round(timeout * SECOND))}: {detail}; the "
            "inventory still lists what is left: run krmfn delete again to continue",
        )


class DeleteInterrupted(Interrupted):
    def __init__(self, signum: int, during: str) -> None:
        super().__init__(signum, during)
        self.args = (str(self).replace("nothing was pruned; ", "the inventory lists what is left; "),)
