"""``config.kubernetes.io/depends-on`` references in the syntax of cli-utils (kpt live apply).

One reference is ``<group>/namespaces/<namespace>/<kind>/<name>`` for a namespaced object and
``<group>/<kind>/<name>`` for a cluster-scoped one; the core group is the empty string, so a ConfigMap
reads ``/namespaces/apps/ConfigMap/settings``. References are joined with ``,``. This mirrors
``FormatObjMetadata`` and ``ParseObjMetadata`` in cli-utils' pkg/object/dependson.
"""

from __future__ import annotations

from collections.abc import Iterable

from krmfn.records import OrderedRecord

__all__ = ["ANNOTATION", "ObjRef", "format_set", "parse_ref", "parse_set"]

ANNOTATION = "config.kubernetes.io/depends-on"


class ObjRef(OrderedRecord):
    """One object a depends-on entry names, as cli-utils writes it."""

    __slots__ = _fields = ("group", "kind", "name", "namespace")

    def __init__(self, group: str, kind: str, name: str, namespace: str = "") -> None:
        self.group = group
        self.kind = kind
        self.name = name
        self.namespace = namespace

    def format(self) -> str:
        if self.namespace:
            return f"{self.group}/namespaces/{self.namespace}/{self.kind}/{self.name}"
        return f"{self.group}/{self.kind}/{self.name}"


def parse_ref(text: str) -> ObjRef:
    """One reference; ValueError with the reason cli-utils would give."""
    text = text.strip()
    fields = text.split("/")
    if len(fields) == 3:
        group, kind, name = fields
        namespace = ""
    elif len(fields) == 5:
        if fields[1] != "namespaces":
            raise ValueError(f'missing "namespaces" field: {text!r}')
        group, _, namespace, kind, name = fields
    else:
        raise ValueError(f"expected 3 or 5 '/'-separated fields, got {len(fields)}: {text!r}")
    if not kind:
        raise ValueError(f"kind is empty: {text!r}")
    if not name:
        raise ValueError(f"name is empty: {text!r}")
    return ObjRef(group, kind, name, namespace)


def parse_set(text: str) -> list[ObjRef]:
    return [parse_ref(part) for part in text.split(",")]


def format_set(refs: Iterable[ObjRef]) -> str:
    return ",".join(ref.format() for ref in refs)
