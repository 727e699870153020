"""The ConfigMaps and Secrets a pod template references, each with the field that references it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from krmfn.functions.set_config_checksum.podtemplates import PodTemplate

CHECKSUM_FROM = "krmfn.dev/checksum-from"
FLUX_CHECKSUM_FROM = "fluxcd.controlplane.io/checksumFrom"
EXPLICIT_ANNOTATIONS = (CHECKSUM_FROM, FLUX_CHECKSUM_FROM)
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
KINDS = ("ConfigMap", "Secret")


@dataclass(frozen=True)
class ConfigRef:
    kind: str
    namespace: str
    name: str
    optional: bool
    field: str
    """Where the reference is, relative to the referencing object."""

    @property
    def key(self) -> tuple[str, str, str]:
        return self.kind, self.namespace, self.name

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


class AnnotationError(ValueError):
    """An entry of a checksum-from annotation that is not ``Kind/name`` or ``Kind/namespace/name``."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _ref(kind: str, source: Any, name_key: str, namespace: str, field: str) -> Iterator[ConfigRef]:
    source = _map(source)
    name = source.get(name_key)
    if isinstance(name, str) and name:
        yield ConfigRef(kind, namespace, name, source.get("optional") is True, f"{field}.{name_key}")


def _container_refs(container: dict[str, Any], namespace: str, at: str) -> Iterator[ConfigRef]:
    for j, raw in enumerate(_list(container.get("envFrom"))):
        source = _map(raw)
        yield from _ref(
            "ConfigMap", source.get("configMapRef"), "name", namespace, f"{at}.envFrom[{j}].configMapRef"
        )
        yield from _ref("Secret", source.get("secretRef"), "name", namespace, f"{at}.envFrom[{j}].secretRef")
    for j, env in enumerate(_list(container.get("env"))):
        value_from = _map(_map(env).get("valueFrom"))
        base = f"{at}.env[{j}].valueFrom"
        yield from _ref(
            "ConfigMap", value_from.get("configMapKeyRef"), "name", namespace, f"{base}.configMapKeyRef"
        )
        yield from _ref("Secret", value_from.get("secretKeyRef"), "name", namespace, f"{base}.secretKeyRef")


def _volume_refs(volume: dict[str, Any], namespace: str, at: str) -> Iterator[ConfigRef]:
    yield from _ref("ConfigMap", volume.get("configMap"), "name", namespace, f"{at}.configMap")
    yield from _ref("Secret", volume.get("secret"), "secretName", namespace, f"{at}.secret")
    for m, raw in enumerate(_list(_map(volume.get("projected")).get("sources"))):
        source = _map(raw)
        base = f"{at}.projected.sources[{m}]"
        yield from _ref("ConfigMap", source.get("configMap"), "name", namespace, f"{base}.configMap")
        yield from _ref("Secret", source.get("secret"), "name", namespace, f"{base}.secret")


def spec_refs(template: PodTemplate, namespace: str) -> Iterator[ConfigRef]:
    """References in the pod spec, in document order."""
    spec = template.spec
    for group in CONTAINER_LISTS:
        for i, container in enumerate(_list(spec.get(group))):
            yield from _container_refs(_map(container), namespace, template.field(f"spec.{group}[{i}]"))
    for k, volume in enumerate(_list(spec.get("volumes"))):
        yield from _volume_refs(_map(volume), namespace, template.field(f"spec.volumes[{k}]"))


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
