"""The key order of an object's mappings kept across a function, as kpt keeps it (kyaml's SyncOrder):
a snapshot before, keys restored to it after, the keys the function added last."""

from __future__ import annotations

from typing import Any

from krmfn.k8s.kobj import Obj, annotations_of
from krmfn.kpt.annotations import IDS

Shape = tuple[list[Any], dict[Any, "Shape"]] | list["Shape"] | None


def shape(value: Any) -> Shape:
    """The key order of every mapping in ``value``, to restore it after a function ran."""
    if isinstance(value, dict):
        return (list(value), {k: shape(v) for k, v in value.items() if isinstance(v, (dict, list))})
    if isinstance(value, list):
        return [shape(v) for v in value]
    return None


def sync_order(value: Any, before: Shape) -> None:
    """kyaml's SyncOrder, which kpt applies after every function: keys keep their previous order,
    keys the function added follow them; list elements are matched by position."""
    if isinstance(value, dict) and isinstance(before, tuple):
        keys, children = before
        current = list(value)
        known = set(keys)
        wanted = [k for k in keys if k in value] + [k for k in current if k not in known]
        if wanted != current:
            mover = getattr(value, "move_to_end", None)
            if callable(mover):  # ruamel's CommentedMap: comments are stored by key and survive a move
                for key in wanted:
                    mover(key)
            else:
                entries = [(k, value[k]) for k in wanted]
                value.clear()
                value.update(entries)
        for key, child in children.items():
            if key in value:
                sync_order(value[key], child)
    elif isinstance(value, list) and isinstance(before, list):
        for element, child in zip(value, before, strict=False):
            sync_order(element, child)


def snapshot(items: list[Obj]) -> dict[str, Shape]:
    return {str(annotations_of(o).get(IDS[2])): shape(o) for o in items if annotations_of(o).get(IDS[2])}


def restore_order(items: list[Obj], shapes: dict[str, Shape]) -> None:
    for obj in items:
        found = shapes.get(str(annotations_of(obj).get(IDS[2])))
        if found is not None:
            sync_order(obj, found)
