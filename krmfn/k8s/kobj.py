"""Small, pure helpers for reading and editing KRM objects held as plain mappings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from krmfn.numbers import whole
from krmfn.records import OrderedRecord

Obj = dict[str, Any]

LOCAL_CONFIG = "config.kubernetes.io/local-config"
# Bookkeeping annotations of kpt and kustomize: never written by krmfn, never part of a hash.
PRESERVED_PREFIXES = ("internal.config.kubernetes.io/", "config.k8s.io/id")
PRESERVED_KEYS = frozenset({"config.kubernetes.io/path", "config.kubernetes.io/index"})
MAX_INDEX = 2**31 - 1
"""The highest ``config.kubernetes.io/index`` read (a document's position in its file); another is none."""


class Ref(OrderedRecord):
    """apiVersion/kind/namespace/name of an object, as the spec's ``resourceRef``; ordered by its fields."""

    __slots__ = _fields = ("api_version", "kind", "name", "namespace")

    def __init__(self, api_version: str, kind: str, name: str, namespace: str = "") -> None:
        self.api_version = api_version
        self.kind = kind
        self.name = name
        self.namespace = namespace

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"

    def as_result(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        return ref

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


def ref_of(obj: Obj) -> Ref:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):  # invalid items are described in error messages too
        meta = {}
    name = meta.get("name") or meta.get("generateName") or ""
    return Ref(
        str(obj.get("apiVersion", "")), str(obj.get("kind", "")), str(name), str(meta.get("namespace") or "")
    )


def metadata(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def annotations_of(obj: Obj) -> dict[str, Any]:
    """The annotations mapping, read-only view semantics: empty dict when absent."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        found = meta.get("annotations")
        if isinstance(found, dict):
            return found
    return {}


def labels_of(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        found = meta.get("labels")
        if isinstance(found, dict):
            return found
    return {}


def set_annotation(obj: Obj, key: str, value: str) -> bool:
    """Set an annotation; returns whether anything changed. Keeps the existing quoting style."""
    meta = metadata(obj)
    current = meta.get("annotations")
    if not isinstance(current, dict):
        current = {}
        meta["annotations"] = current
    return set_scalar(current, key, value)


def remove_annotation(obj: Obj, key: str) -> bool:
    current = annotations_of(obj)
    if key in current:
        del current[key]
        return True
    return False


def set_scalar(mapping: dict[str, Any], key: str, value: Any) -> bool:
    """Assign ``mapping[key] = value`` unless equal; a string keeps the old value's quoting style."""
    old = mapping.get(key)
    if key in mapping and old == value and type(old) is not bool and type(value) is not bool:
        return False
    if key in mapping and old is value:
        return False
    if isinstance(value, str) and isinstance(old, str) and getattr(type(old), "style", "") != "":
        value = type(old)(value)  # ruamel's quoted-string subclasses remember ' or " (not plain: new text
        # is quoted when a reader would take it for another type)
    mapping[key] = value
    return True


def is_kustomization(item: Any) -> bool:
    """A kustomization (or component) file as kpt hands it to functions: ``kustomize.config.k8s.io``
    apiVersion, or the short form without apiVersion and kind.

    kpt passes every YAML file of a package, ``kustomization.yaml`` included; like kpt's own functions,
    krmfn passes these through untouched (as local config). Anything else without apiVersion, kind
    or name is still an error.
    """
    if not isinstance(item, dict):
        return False
    api_version = item.get("apiVersion")
    if api_version is None and item.get("kind") is None:
        return True
    return isinstance(api_version, str) and api_version.startswith("kustomize.config.k8s.io/")


def is_local_config(obj: Obj) -> bool:
    """Never deployed, so never modified: local-config objects, kpt's own, and kustomizations."""
    if str(annotations_of(obj).get(LOCAL_CONFIG, "")).lower() == "true":
        return True
    if is_kustomization(obj):
        return True
    api_version = str(obj.get("apiVersion", ""))
    return obj.get("kind") == "Kptfile" or api_version.startswith(("kpt.dev/", "fn.krmfn.dev/"))


def get_path(obj: Any, path: str | list[str]) -> Any:
    """Follow a dotted path (``spec.template.spec``); None when any step is missing."""
    parts = path.split(".") if isinstance(path, str) else path
    for part in parts:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def walk_strings(value: Any, path: str = "") -> Iterator[tuple[Any, Any, str]]:
    """Yield (container, key, dotted path) for every string leaf, so callers can replace it in place."""
    if isinstance(value, dict):
        for key in list(value):
            child = value[key]
            child_path = f"{path}.{key}" if path else str(key)
            if isinstance(child, str):
                yield value, key, child_path
            else:
                yield from walk_strings(child, child_path)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            child_path = f"{path}[{index}]"
            if isinstance(child, str):
                yield value, index, child_path
            else:
                yield from walk_strings(child, child_path)


def file_of(obj: Obj) -> dict[str, Any] | None:
    """The ``file`` of a result: where kpt or kustomize read the object from, when known."""
    notes = annotations_of(obj)
    path = notes.get("internal.config.kubernetes.io/path") or notes.get("config.kubernetes.io/path")
    if not path:
        return None
    found: dict[str, Any] = {"path": str(path)}
    index = notes.get("internal.config.kubernetes.io/index") or notes.get("config.kubernetes.io/index")
    position = whole(str(index), MAX_INDEX) if index is not None else None
    if position is not None:
        found["index"] = position
    return found


def is_list_kind(doc: Any) -> bool:
    """A ``v1 List`` or ``<Kind>List`` wrapper (``kubectl get -o yaml``), whose items are the objects."""
    return (
        isinstance(doc, dict)
        and str(doc.get("kind", "")).endswith("List")
        and isinstance(doc.get("items"), list)
    )
