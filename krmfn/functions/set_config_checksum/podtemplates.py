"""Where pod templates live in the kinds that have one, and in kinds the functionConfig names."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from krmfn.kobj import Obj, ref_of

# (API group, kind) -> dotted path of the pod template; "" means the object is the pod itself.
BUILTIN_PATHS: dict[tuple[str, str], str] = {
    ("apps", "Deployment"): "spec.template",
    ("extensions", "Deployment"): "spec.template",
    ("apps", "StatefulSet"): "spec.template",
    ("apps", "DaemonSet"): "spec.template",
    ("apps", "ReplicaSet"): "spec.template",
    ("", "ReplicationController"): "spec.template",
    ("batch", "Job"): "spec.template",
    ("batch", "CronJob"): "spec.jobTemplate.spec.template",
    ("", "PodTemplate"): "template",
    ("", "Pod"): "",
}


@dataclass(frozen=True)
class TemplatePath:
    """A pod template at ``path`` in objects of ``kind`` (and ``api_version`` when given)."""

    kind: str
    path: str
    api_version: str = ""

    def applies_to(self, obj: Obj) -> bool:
        if obj.get("kind") != self.kind:
            return False
        return not self.api_version or obj.get("apiVersion") == self.api_version


@dataclass(frozen=True)
class PodTemplate:
    template: dict[str, Any]
    """The mapping whose ``metadata.annotations`` receive the checksum (the Pod itself for a Pod)."""
    path: str
    """Dotted path of ``template`` inside its object, "" for a Pod."""

    def field(self, rest: str) -> str:
        return f"{self.path}.{rest}" if self.path else rest

    @property
    def spec(self) -> dict[str, Any]:
        found = self.template.get("spec")
        return found if isinstance(found, dict) else {}


def paths_for(obj: Obj, extra: Iterable[TemplatePath]) -> list[str]:
    found: list[str] = []
    builtin = BUILTIN_PATHS.get((ref_of(obj).group, str(obj.get("kind", ""))))
    if builtin is not None:
        found.append(builtin)
    for entry in extra:
        if entry.applies_to(obj) and entry.path not in found:
            found.append(entry.path)
    return found


def pod_templates(obj: Obj, extra: Iterable[TemplatePath] = ()) -> Iterator[PodTemplate]:
    """Every pod template of ``obj``; a path that is absent or not a mapping is simply not a template."""
    for path in paths_for(obj, extra):
        node: Any = obj
        for part in path.split(".") if path else []:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            yield PodTemplate(node, path)
