"""Where pod templates live in the kinds that have one (and in kinds a functionConfig names), and what a
pod template uses by name: ConfigMaps and Secrets (set-config-checksum hashes them), a ServiceAccount and
PersistentVolumeClaims (set-steps checks they are applied no later than the template that needs them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from krmfn.k8s.kobj import Obj, ref_of
from krmfn.records import FrozenRecord

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
"""Every list of containers in a pod spec, in the order the kubelet starts them: the one table of them
(set-config-checksum, set-image, validate-jobs and krmfn diff read it)."""
TEMPLATE_CONTAINER_LISTS = CONTAINER_LISTS[:2]
"""The lists a pod template may hold: ephemeral containers are only ever added to a running pod."""

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


class TemplatePath(FrozenRecord):
    """A pod template at ``path`` in objects of ``kind`` (and ``api_version`` when given)."""

    __slots__ = _fields = ("kind", "path", "api_version")

    def __init__(self, kind: str, path: str, api_version: str = "") -> None:
        self.kind = kind
        self.path = path
        self.api_version = api_version

    def applies_to(self, obj: Obj) -> bool:
        if obj.get("kind") != self.kind:
            return False
        return not self.api_version or obj.get("apiVersion") == self.api_version


class PodTemplate(FrozenRecord):
    """A pod template found in an object, with where it sits."""

    __slots__ = _fields = ("template", "path")

    def __init__(self, template: dict[str, Any], path: str) -> None:
        self.template = template
        """The mapping whose ``metadata.annotations`` receive the checksum (the Pod itself for a Pod)."""
        self.path = path
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


class ConfigRef(FrozenRecord):
    """A ConfigMap or Secret a pod template uses."""

    __slots__ = _fields = ("kind", "namespace", "name", "optional", "field")

    def __init__(self, kind: str, namespace: str, name: str, optional: bool, field: str) -> None:
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.optional = optional
        self.field = field
        """Where the reference is, relative to the referencing object."""

    @property
    def key(self) -> tuple[str, str, str]:
        return self.kind, self.namespace, self.name

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


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


def pod_uses(template: PodTemplate, namespace: str) -> Iterator[ConfigRef]:
    """Everything the pod needs to exist before its containers start: the ConfigMaps and Secrets of
    ``spec_refs``, then its ServiceAccount, image pull Secrets and PersistentVolumeClaims."""
    yield from spec_refs(template, namespace)
    spec = template.spec
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(account, str) and account:
        field = "serviceAccountName" if spec.get("serviceAccountName") else "serviceAccount"
        yield ConfigRef("ServiceAccount", namespace, account, False, template.field(f"spec.{field}"))
    for i, raw in enumerate(_list(spec.get("imagePullSecrets"))):
        yield from _ref("Secret", raw, "name", namespace, template.field(f"spec.imagePullSecrets[{i}]"))
    for k, volume in enumerate(_list(spec.get("volumes"))):
        yield from _ref(
            "PersistentVolumeClaim", _map(volume).get("persistentVolumeClaim"), "claimName", namespace,
            template.field(f"spec.volumes[{k}].persistentVolumeClaim"),
        )  # fmt: skip
