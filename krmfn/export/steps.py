"""The steps ``krmfn export`` hands to another engine: krmfn.k8s.step_grouping' grouping, as ``krmfn apply``
reads it.

The grouping is the one ``krmfn apply`` uses, so every engine runs the same order: steps in
``krmfn.dev/step-index`` order, objects without the annotation in one step named ``default`` that goes
first, and the final step health-checked only when one of its objects says ``krmfn.dev/wait: "true"``.
What only export checks is here: an object given twice, and a stream with nothing to hand over; a
layout that would hang (krmfn/k8s/ordering.py) is refused as krmfn apply refuses it.
Namespaces are taken as written (the engines apply objects as written), so they are part of identity.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from krmfn.errors import InputError
from krmfn.k8s import manifest_files, ordering, step_grouping
from krmfn.k8s.kobj import Obj, ref_of
from krmfn.k8s.scopes import Scopes
from krmfn.k8s.step_grouping import Steps, describe


def group(objects: Iterable[Obj], sources: Iterable[str] = ("-",), allow_empty: bool = False) -> Steps:
    """The steps of ``objects`` (read from ``sources``); no objects at all is an error unless
    ``allow_empty`` (an engine given nothing deletes what it applied before)."""
    objects = list(objects)
    found = step_grouping.group(_once(objects))
    if not found.steps and not found.on_failure and not found.on_delete and not allow_empty:
        named = manifest_files.describe(sources)
        raise InputError(
            f"{manifest_files.no_objects(named)}; if an app without objects is meant, pass --allow-empty"
        )
    misordered = ordering.misorders([step.items for step in found.steps], Scopes(objects))
    if misordered:
        raise InputError(ordering.describe(misordered, [step.name for step in found.steps], describe))
    return found


def _once(objects: Iterable[Obj]) -> Iterator[Obj]:
    # Lazy: step_grouping.group reads each object's step index as it is yielded, so errors keep stream order.
    seen: set[tuple[str, str, str, str]] = set()
    for obj in objects:
        ref = ref_of(obj)
        key = (ref.group, ref.kind, ref.namespace, ref.name)
        if key in seen:
            raise InputError(f"{describe(obj)} appears twice in the input")
        seen.add(key)
        yield obj
