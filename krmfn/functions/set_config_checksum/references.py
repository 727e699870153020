"""The checksum-from annotations: ConfigMaps and Secrets named explicitly, beyond the pod spec's own
references (krmfn/k8s/podtemplates.py finds those)."""

from __future__ import annotations

from typing import Any

from krmfn.k8s.podtemplates import ConfigRef

CHECKSUM_FROM = "krmfn.dev/checksum-from"
FLUX_CHECKSUM_FROM = "fluxcd.controlplane.io/checksumFrom"
EXPLICIT_ANNOTATIONS = (CHECKSUM_FROM, FLUX_CHECKSUM_FROM)
KINDS = ("ConfigMap", "Secret")


class AnnotationError(ValueError):
    """An entry of a checksum-from annotation that is not ``Kind/name`` or ``Kind/namespace/name``."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def parse_checksum_from(value: str, namespace: str, field: str) -> list[ConfigRef]:
    """``ConfigMap/name,Secret/other-ns/name``; raises AnnotationError on a malformed entry."""
    refs: list[ConfigRef] = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        parts = entry.split("/")
        if len(parts) not in (2, 3) or not all(parts) or parts[0] not in KINDS:
            raise AnnotationError(
                f"entry {entry!r} is not ConfigMap/<name>, Secret/<name>, "
                "ConfigMap/<namespace>/<name> or Secret/<namespace>/<name>",
                field,
            )
        kind, ns, name = (parts[0], namespace, parts[1]) if len(parts) == 2 else tuple(parts)
        refs.append(ConfigRef(kind, ns, name, False, field))
    return refs


def annotation_refs(annotations: dict[str, Any], namespace: str, prefix: str) -> list[ConfigRef]:
    refs: list[ConfigRef] = []
    for key in EXPLICIT_ANNOTATIONS:
        value = annotations.get(key)
        if value is None:
            continue
        field = f"{prefix}metadata.annotations.{key}"
        if not isinstance(value, str):
            raise AnnotationError("expected a comma-separated string", field)
        refs.extend(parse_checksum_from(value, namespace, field))
    return refs


def merge(refs: list[ConfigRef]) -> list[ConfigRef]:
    """One reference per object, in document order: optional only when every mention is."""
    merged: dict[tuple[str, str, str], ConfigRef] = {}
    for ref in refs:
        seen = merged.get(ref.key)
        if seen is None or (seen.optional and not ref.optional):
            merged[ref.key] = ref
    return list(merged.values())
