"""Prune: delete the inventory's members that are no longer rendered, later steps first.

The decision is pure and shared (``kept_because``): ``krmfn apply`` deletes what it decides, ``krmfn
diff`` lists the same objects as deletions. Every delete carries the UID of the object listed
(``uid_of``), so it can never reach another object of the same name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from krmfn.k8s.kobj import annotations_of, labels_of
from krmfn.k8s.names import name_problem
from krmfn.k8s.step_grouping import index_of
from krmfn.runner.cluster.api import Api, NoSuchKind, Resource
from krmfn.runner.errors import InventoryError, ObjectError
from krmfn.runner.events import Event, Prune
from krmfn.runner.inventory.applyset import ID_LABEL, PART_OF, Parent
from krmfn.runner.plan import Key, Plan, key_of, kind_rank

PRUNE = "krmfn.dev/prune"
"""``disabled`` on a member: never pruned when it leaves the rendered set (docs/annotations.md)."""

# Kinds whose deletion deletes much more than themselves: pruned only when asked for by name.
GUARDED = {
    ("", "Namespace"): (
        "prune_namespaces", "--prune-namespaces", "deleting a Namespace deletes everything in it"
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (
        "prune_crds", "--prune-crds", "deleting a CRD deletes every custom resource of its kind"
    ),
}  # fmt: skip
PARENT_KEPT = "an ApplySet parent is never pruned"


@dataclass
class Pruned:
    deleted: list[str] = field(default_factory=list)
    remaining: list[Key] = field(default_factory=list)
    """Members not rendered that stay (opted out, guarded, already gone)."""


def is_parent(obj: dict[str, Any], parent: Parent) -> bool:
    """A parent (this one, given the member label by an older run, or another set's) holds an inventory:
    deleting it would orphan every member for good."""
    return key_of(obj) == Key("", "Secret", parent.namespace, parent.name) or ID_LABEL in labels_of(obj)


def kept_because(obj: dict[str, Any], options: Any) -> str | None:
    """Why a member no longer rendered is kept, or None when it is pruned. ``options``: the run's
    (``prune_namespaces``, ``prune_crds``)."""
    key = key_of(obj)
    if str(annotations_of(obj).get(PRUNE, "")).lower() == "disabled":
        return f"{PRUNE}: disabled"
    guard = GUARDED.get((key.group, key.kind))
    if guard is not None and not getattr(options, guard[0]):
        return f"no longer rendered, but {guard[2]}: pass {guard[1]} to prune it"
    return None


def deletion_order(obj: dict[str, Any]) -> tuple[int, int, Key]:
    """Later steps first (the unindexed first step last), then later kinds first."""
    index = index_of(obj)
    return (1 if index is None else -index, -kind_rank(str(obj.get("kind"))), key_of(obj))


def uid_of(key: Key, live: dict[str, Any]) -> str:
    """The UID a delete of ``key`` is conditioned on, from ``live`` only if ``live`` is that object: a
    delete must never reach an object other than the one whose name and namespace were checked."""
    meta = live.get("metadata") or {}
    if (str(meta.get("name", "")), str(meta.get("namespace") or "")) != (key.name, key.namespace):
        raise ObjectError(str(key), "the API server answered with another object; not deleting anything")
    uid = str(meta.get("uid") or "")
    if not uid:
        raise ObjectError(str(key), "the live object has no uid; not deleting it without one")
    return uid


def prune(
    api: Api, plan: Plan, parent: Parent, options: Any, *, emit: Callable[[Event], None],
    call: Callable[..., Any], check_stop: Callable[[], None],
) -> Pruned:  # fmt: skip
    """Deletes the members of ``parent`` that ``plan`` no longer renders, as ``options`` allow
    (``dry_run`` reports them only). ``call(key, request, *args)`` makes each request naming ``key``."""
    current = {it.key for it in plan.items}
    namespaces = sorted(parent.namespaces | {parent.namespace})
    found: list[tuple[dict[str, Any], Resource]] = []
    for group_kind in sorted(parent.group_kinds):
        kind, _, group = group_kind.partition(".")
        try:
            res = api.resource_for_group_kind(group, kind)
        except NoSuchKind:
            continue  # the kind is gone (CRD deleted), and its objects with it
        for namespace in namespaces if res.namespaced else [""]:
            check_stop()
            key = Key(group, kind, namespace, "")
            for obj in call(key, api.list, res, namespace, f"{PART_OF}={parent.id}"):
                found_key = key_of(obj)
                if found_key in current:
                    continue
                if is_parent(obj, parent):
                    emit(Prune(str(found_key), "kept", PARENT_KEPT))
                    continue
                if found_key.namespace != namespace or name_problem(group, kind, found_key.name):
                    raise InventoryError(
                        f"listing {key.group_kind} in {namespace or 'the cluster'} returned "
                        f"{found_key}, which is not an object of that listing; nothing was pruned"
                    )
                found.append((obj, res))
    done = Pruned()
    for obj, res in sorted(found, key=lambda entry: deletion_order(entry[0])):
        key = key_of(obj)
        kept = kept_because(obj, options)
        if kept is not None:
            emit(Prune(str(key), "kept", kept))
            done.remaining.append(key)
            continue
        if options.dry_run:
            emit(Prune(str(key), "deleted", dry_run=True))
            done.deleted.append(str(key))
            continue
        check_stop()
        deleted = call(
            key, api.delete, res, key.name, key.namespace, uid=uid_of(key, obj), propagation="Background"
        )
        if not deleted:
            emit(Prune(str(key), "skipped", "already gone, or replaced by a newer object"))
            done.remaining.append(key)
            continue
        emit(Prune(str(key), "deleted"))
        done.deleted.append(str(key))
    return done
