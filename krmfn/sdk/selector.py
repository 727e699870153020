"""Declarative resource selection shared by every function.

Within one selector every given field must match (AND); a list of selectors matches when any does (OR);
``exclude`` removes what its selectors match. ``name`` also matches a hashed Job by its base name
(``krmfn.dev/job-base-name``), so config written before hash-job-names keeps working, and any name an
object had before a kustomize overlay renamed it (``internal.config.kubernetes.io/previousNames``), so
config written against a base keeps working in the overlay, and a generated ConfigMap's or Secret's name
without the hash kustomize appended (in a pipe after the build the previous names are gone, that suffix
is still recognisable).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from krmfn.k8s.annotations import JOB_BASE_NAME
from krmfn.k8s.kobj import Obj, annotations_of, get_path, is_local_config, labels_of
from krmfn.k8s.kustomize_names import names_of


@dataclass(frozen=True)
class Selector:
    """Which resources a function touches; every given field must match."""

    api_version: str = field(default="", metadata={"help": "exact apiVersion", "example": "batch/v1"})
    kind: str = field(default="", metadata={"help": "exact kind", "example": "Job"})
    name: str = field(
        default="",
        metadata={
            "help": "exact metadata.name (or a hashed Job's base name, or a name kustomize renamed it from)",
            "example": "db-migration",
        },
    )
    namespace: str = field(default="", metadata={"help": "exact metadata.namespace", "example": "apps"})
    labels: dict[str, str] = field(default_factory=dict, metadata={"help": "labels that must all be present"})
    annotations: dict[str, str] = field(
        default_factory=dict, metadata={"help": "annotations that must all be present"}
    )

    def matches(self, obj: Obj) -> bool:
        if self.api_version and obj.get("apiVersion") != self.api_version:
            return False
        if self.kind and obj.get("kind") != self.kind:
            return False
        if self.namespace and (get_path(obj, "metadata.namespace") or "") != self.namespace:
            return False
        notes = annotations_of(obj)
        if self.name and self.name != notes.get(JOB_BASE_NAME) and self.name not in names_of(obj):
            return False
        found_labels = labels_of(obj)
        if any(found_labels.get(k) != v for k, v in self.labels.items()):
            return False
        return all(notes.get(k) == v for k, v in self.annotations.items())


def matches_any(selectors: Iterable[Selector], obj: Obj) -> bool:
    return any(s.matches(obj) for s in selectors)


def select(
    items: Iterable[Obj],
    selectors: Iterable[Selector] = (),
    exclude: Iterable[Selector] = (),
    include_local: bool = False,
) -> Iterator[Obj]:
    """Items matching any selector (all when there are none) and no exclusion; local config never."""
    wanted = list(selectors)
    unwanted = list(exclude)
    for obj in items:
        if not include_local and is_local_config(obj):
            continue
        if wanted and not matches_any(wanted, obj):
            continue
        if unwanted and matches_any(unwanted, obj):
            continue
        yield obj


def is_gvk(api_version: str = "", kind: str = "") -> Selector:
    """``select(items, [is_gvk(kind="Job")])`` reads like the kpt SDK's ``items.where(is_gvk(...))``."""
    return Selector(api_version=api_version, kind=kind)
