"""The members of an ApplySet on the server, and whether an inventory is another app's.

One implementation for ``krmfn apply`` (what an apply is compared with, what the adoption guard reads),
``krmfn diff`` (what the next apply would prune) and ``krmfn status`` (what the inventory holds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from krmfn.runner.cluster.api import Api, NoSuchKind, Resource
from krmfn.runner.inventory.applyset import PART_OF, Parent
from krmfn.runner.plan import Key

Call = Callable[..., Any]
SHARED_KINDS = frozenset({("", "Namespace"), ("apiextensions.k8s.io", "CustomResourceDefinition")})
"""Kinds two apps often both render: sharing one of them does not make an inventory this app's."""


def list_members(
    api: Api, parent: Parent, kinds: Iterable[str], namespaces: Iterable[str], *, call: Call,
    check_stop: Callable[[], None] = lambda: None,
) -> list[tuple[dict[str, Any], Resource]]:  # fmt: skip
    """Every object labelled a member of ``parent`` in ``kinds`` (``Kind.group``) and, for namespaced
    kinds, ``namespaces``; kinds the cluster no longer serves are skipped (their objects went with their
    CRD). ``call(key, request, *args)`` makes each request and names ``key`` in its errors."""
    found: list[tuple[dict[str, Any], Resource]] = []
    if not parent.exists:
        return found
    for group_kind in sorted(kinds):
        kind, _, group = group_kind.partition(".")
        try:
            res = api.resource_for_group_kind(group, kind)
        except NoSuchKind:
            continue
        for namespace in sorted(namespaces) if res.namespaced else [""]:
            check_stop()
            key = Key(group, kind, namespace, "")
            listed = call(key, api.list, res, namespace, f"{PART_OF}={parent.id}")
            found.extend((obj, res) for obj in listed)
    return found


def foreign_inventory(parent: Parent, source: str, planned: set[Key], members: Iterable[Key]) -> str | None:
    """Why the inventory looks like another app's (none of its members but Namespaces and CRDs is
    planned, and it has members the plan does not), or None. With prune on, applying this plan would
    delete that app's objects: apply refuses unless ``--adopt``, and diff refuses as apply does."""
    members = set(members)
    if not members or any(k in planned for k in members if (k.group, k.kind) not in SHARED_KINDS):
        return None
    foreign = sorted(k for k in members if k not in planned)
    if not foreign:
        return None
    shown = ", ".join(str(k) for k in foreign[:5]) + (
        f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
    )
    if not planned:
        # Not another app's: an empty render (a failed one, most likely). --adopt would delete it all.
        return (
            f"this render has no objects, so applying it would prune all {len(foreign)} member(s) of the "
            f"inventory {parent.namespace}/{parent.name} ({source}): {shown}. Check the command that "
            "rendered it"
        )
    return (
        f"the inventory {parent.namespace}/{parent.name} ({source}) holds {len(foreign)} object(s) this "
        f"render does not have ({shown}) and none of the objects it applies, so it looks like another "
        "app's: pruning would delete them. Give this app its own inventory (--applyset NAME, or app: in "
        "set-steps' config), or, if this render replaces that app, pass --adopt to take the inventory "
        "over and prune them"
    )
