"""Rewriting references to renamed Jobs: ``config.kubernetes.io/depends-on`` entries, read and written by
the one codec set-steps uses (krmfn/k8s/dependson.py); a Job is ``batch/namespaces/<ns>/Job/<name>``. No krmfn
annotation names a Job today; one that does (same syntax) belongs in REFERENCE_ANNOTATIONS.
"""

from __future__ import annotations

from typing import Any

from krmfn.functions.hash_job_names.naming import derived_from
from krmfn.k8s.dependson import ANNOTATION, ObjRef, parse_ref
from krmfn.k8s.kobj import Obj, annotations_of, set_annotation

REFERENCE_ANNOTATIONS = (ANNOTATION,)


class Renames:
    """Renamed Jobs; a reference matches by the old name, the base name or any hashed form of the base."""

    def __init__(self) -> None:
        self._exact: dict[tuple[str, str], str] = {}
        self._bases: list[tuple[str, str, str]] = []

    def add(self, namespace: str, old: str, base: str, new: str) -> None:
        self._exact[(namespace, old)] = new
        self._bases.append((namespace, base, new))

    def __len__(self) -> int:
        return len(self._bases)

    def get(self, namespace: str, name: str) -> str | None:
        found = self._exact.get((namespace, name))
        if found is not None:
            return found
        for ns, base, new in self._bases:
            if ns == namespace and derived_from(name, base):
                return new
        return None


def _rewrite_entry(entry: str, renames: Renames) -> str:
    try:
        ref = parse_ref(entry)
    except ValueError:
        return entry  # not a reference cli-utils would read: left as it is (set-steps reports it)
    new = renames.get(ref.namespace, ref.name) if (ref.group, ref.kind) == ("batch", "Job") else None
    if new is None or new == ref.name:
        return entry
    stripped = entry.strip()
    return entry.replace(stripped, ObjRef(ref.group, ref.kind, new, ref.namespace).format())


def rewrite_value(value: str, renames: Renames) -> str:
    return ",".join(_rewrite_entry(entry, renames) for entry in value.split(","))


def rewrite_references(obj: Obj, renames: Renames) -> int:
    """Rewrite the reference annotations of ``obj``; returns how many annotations changed."""
    changed = 0
    notes: dict[str, Any] = annotations_of(obj)
    for key in REFERENCE_ANNOTATIONS:
        value = notes.get(key)
        if isinstance(value, str):
            updated = rewrite_value(value, renames)
            if updated != value:
                changed += set_annotation(obj, key, updated)
    return changed
