"""The fields kustomize's name-reference step rewrites: its built-in nameReference table restricted to pod
specs, per referrer kind and target kind, and each such field of an object as a ``NameField`` to read or
rewrite (kustomize_names.py resolves what the name will point to)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from krmfn.k8s.kobj import Obj
from krmfn.records import FrozenRecord


class Target(FrozenRecord):
    """The kind a reference field names (kustomize's ReferralTarget); empty group/version match any."""

    __slots__ = _fields = ("kind", "version", "group")

    def __init__(self, kind: str, version: str = "", group: str = "") -> None:
        self.kind = kind
        self.version = version
        self.group = group

    def selects(self, api_version: str, kind: str) -> bool:
        group, _, version = api_version.rpartition("/")
        return (
            kind == self.kind
            and (not self.group or group == self.group)
            and (not self.version or version == self.version)
        )


CONFIGMAP = Target("ConfigMap", "v1")
SECRET = Target("Secret", "v1")
SERVICE_ACCOUNT = Target("ServiceAccount", "v1")
PVC = Target("PersistentVolumeClaim", "v1")
PRIORITY_CLASS = Target("PriorityClass", "v1", "scheduling.k8s.io")

# Name-reference fields inside a pod spec, per target kind: kustomize's built-in nameReference
# configuration restricted to pod specs (paths relative to the pod spec; a list on the way is walked
# element by element, as kustomize's field specs are).
_POD_SPEC_FIELDS: dict[Target, tuple[str, ...]] = {
    CONFIGMAP: (
        "volumes/configMap/name",
        "containers/env/valueFrom/configMapKeyRef/name",
        "initContainers/env/valueFrom/configMapKeyRef/name",
        "containers/envFrom/configMapRef/name",
        "initContainers/envFrom/configMapRef/name",
        "volumes/projected/sources/configMap/name",
    ),
    SECRET: (
        "volumes/secret/secretName",
        "containers/env/valueFrom/secretKeyRef/name",
        "initContainers/env/valueFrom/secretKeyRef/name",
        "containers/envFrom/secretRef/name",
        "initContainers/envFrom/secretRef/name",
        "imagePullSecrets/name",
        "volumes/projected/sources/secret/name",
    ),
    SERVICE_ACCOUNT: ("serviceAccountName",),
    PVC: ("volumes/persistentVolumeClaim/claimName",),
    PRIORITY_CLASS: ("priorityClassName",),
}
_CONFIG = (CONFIGMAP, SECRET)
_WORKLOAD = (SERVICE_ACCOUNT, PVC, PRIORITY_CLASS)
# Referrer kind -> (path of its pod spec, the targets kustomize rewrites there). kustomize's table is
# not uniform: a ReplicationController's ConfigMap references are not rewritten, a ReplicaSet's
# serviceAccountName is not, and only a Pod of version v1 counts as a Pod.
_POD_SPECS: dict[str, tuple[str, tuple[Target, ...]]] = {
    "Pod": ("spec", (*_CONFIG, *_WORKLOAD)),
    "PodTemplate": ("template/spec", _CONFIG),
    "Deployment": ("spec/template/spec", (*_CONFIG, *_WORKLOAD)),
    "ReplicaSet": ("spec/template/spec", _CONFIG),
    "DaemonSet": ("spec/template/spec", (*_CONFIG, *_WORKLOAD)),
    "StatefulSet": ("spec/template/spec", (*_CONFIG, *_WORKLOAD)),
    "ReplicationController": ("spec/template/spec", _WORKLOAD),
    "Job": ("spec/template/spec", (*_CONFIG, *_WORKLOAD)),
    "CronJob": ("spec/jobTemplate/spec/template/spec", (*_CONFIG, *_WORKLOAD)),
}


class NameField(FrozenRecord):
    """One name-reference field of an object: ``parent[key]`` holds the name of a ``target``."""

    __slots__ = _fields = ("target", "parent", "key", "field")

    def __init__(self, target: Target, parent: Any, key: Any, field: str) -> None:
        self.target = target
        self.parent = parent
        self.key = key
        self.field = field
        """Dotted path with list indices (``spec.template.spec.volumes[0].configMap.name``), as results
        use."""

    @property
    def value(self) -> str:
        found = self.parent[self.key]
        return found if isinstance(found, str) else ""


def name_fields(obj: Obj) -> list[NameField]:
    """The pod-spec fields of ``obj`` that kustomize's name-reference step rewrites, in document order."""
    kind = str(obj.get("kind", ""))
    spec = _POD_SPECS.get(kind)
    if spec is None or (kind == "Pod" and obj.get("apiVersion") != "v1"):
        return []
    prefix, targets = spec
    found: list[NameField] = []
    for target in targets:
        for path in _POD_SPEC_FIELDS[target]:
            found.extend(_walk(obj, [*prefix.split("/"), *path.split("/")], target, ""))
    return found


def _walk(node: Any, parts: list[str], target: Target, at: str) -> Iterator[NameField]:
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, parts, target, f"{at}[{index}]")
        return
    if not isinstance(node, dict) or parts[0] not in node:
        return
    field = f"{at}.{parts[0]}" if at else parts[0]
    if len(parts) == 1:
        if isinstance(node[parts[0]], str):
            yield NameField(target, node, parts[0], field)
        return
    yield from _walk(node[parts[0]], parts[1:], target, field)


_INDEX = re.compile(r"\[\d+\]")
_REWRITTEN: dict[str, frozenset[str]] = {
    kind: frozenset(
        ".".join([*prefix.split("/"), *path.split("/")])
        for target in targets
        for path in _POD_SPEC_FIELDS[target]
    )
    for kind, (prefix, targets) in _POD_SPECS.items()
}


def rewrites(obj: Obj, field: str) -> bool:
    """Whether kustomize rewrites the name at ``field`` of ``obj`` (a dotted path with list indices, as
    ``NameField.field``): ``field in rewritten_fields(obj)`` without walking the object."""
    kind = str(obj.get("kind", ""))
    if kind == "Pod" and obj.get("apiVersion") != "v1":
        return False
    return _INDEX.sub("", field) in _REWRITTEN.get(kind, frozenset())


def rewritten_fields(obj: Obj) -> frozenset[str]:
    """The dotted paths of ``name_fields(obj)``: a reference elsewhere keeps the name it was written with."""
    return frozenset(f.field for f in name_fields(obj))
