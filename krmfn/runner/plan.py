"""The plan: which objects are applied in which step, in which order. Pure: no cluster access.

Steps come from ``krmfn.dev/step-index`` (written by set-steps); items without it form one step that
runs first. Within a step, objects are ordered by kind (things others depend on first, Jobs last), then
namespace and name, the way cli-utils and kustomize order an apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from krmfn.duration import SECOND, format_duration, parse_duration
from krmfn.kobj import is_local_config
from krmfn.runner.errors import SourceError
from krmfn.yamlio import plain

STEP = "krmfn.dev/step"
STEP_INDEX = "krmfn.dev/step-index"
STEP_TIMEOUT = "krmfn.dev/step-timeout"
WAIT = "krmfn.dev/wait"
UNSTEPPED = "default"

# Apply order inside a step. Kinds not listed (custom resources, most other built-ins) sit between
# the workloads and the webhook configurations; Jobs come last so they see everything they may use.
_ORDER = [
    "Namespace", "ResourceQuota", "LimitRange", "StorageClass", "PriorityClass", "RuntimeClass",
    "CustomResourceDefinition", "ServiceAccount", "PodSecurityPolicy", "ClusterRole", "ClusterRoleBinding",
    "Role", "RoleBinding", "ConfigMap", "Secret", "PersistentVolume", "PersistentVolumeClaim", "Service",
    "Endpoints", "EndpointSlice", "IngressClass", "Ingress", "NetworkPolicy", "PodDisruptionBudget",
    "HorizontalPodAutoscaler", "DaemonSet", "Deployment", "ReplicaSet", "ReplicationController",
    "StatefulSet", "Pod", "CronJob",
]  # fmt: skip
_LATE = ["APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Job"]
_RANK = {kind: i for i, kind in enumerate(_ORDER)}
_OTHER_RANK = len(_ORDER)
_RANK.update({kind: _OTHER_RANK + 1 + i for i, kind in enumerate(_LATE)})

# Built-in kinds that have no namespace; anything else without one gets the default namespace unless
# discovery (at apply time) or a CRD in the same stream says it is cluster-scoped.
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "StorageClass", "PriorityClass", "RuntimeClass",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "IngressClass", "APIService",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "CSIDriver", "CSINode", "VolumeAttachment",
    "CertificateSigningRequest", "FlowSchema", "PriorityLevelConfiguration",
})  # fmt: skip


def kind_rank(kind: str) -> int:
    return _RANK.get(kind, _OTHER_RANK)


@dataclass(frozen=True, order=True)
class Key:
    """Identity of an object across versions: group, kind, namespace, name."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{kind} {self.namespace}/{self.name}" if self.namespace else f"{kind} {self.name}"

    @property
    def group_kind(self) -> str:
        """``Kind.group`` (``Kind`` for the core group), the ApplySet spelling."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return Key(
        group_of(str(obj.get("apiVersion", ""))),
        str(obj.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


@dataclass
class Item:
    obj: dict[str, Any]

    @property
    def key(self) -> Key:
        return key_of(self.obj)

    @property
    def api_version(self) -> str:
        return str(self.obj["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def annotations(self) -> dict[str, Any]:
        found = self.obj.get("metadata", {}).get("annotations")
        return found if isinstance(found, dict) else {}


@dataclass
class Step:
    index: int
    """Position in the plan (0-based); ``step_index`` is the annotation value it came from."""
    name: str
    timeout: float
    """Seconds."""
    wait: bool
    items: list[Item] = field(default_factory=list)
    step_index: int | None = None

    @property
    def timeout_text(self) -> str:
        return format_duration(round(self.timeout * SECOND))


@dataclass
class Plan:
    steps: list[Step]

    @property
    def items(self) -> list[Item]:
        return [item for step in self.steps for item in step.items]


def build_plan(
    objects: Iterable[Any],
    *,
    namespace: str,
    default_timeout: float,
    wait: bool | None = None,
) -> Plan:
    """Groups, orders and defaults ``objects``. ``wait`` overrides ``krmfn.dev/wait`` for the last step."""
    flat = [plain(obj) for obj in _flatten(objects)]
    cluster_kinds = set(CLUSTER_SCOPED) | _cluster_scoped_crds(flat)
    groups: dict[int | None, list[Item]] = {}
    seen: dict[Key, int] = {}
    for position, obj in enumerate(flat):
        _check_object(obj, position)
        if is_local_config(obj):
            continue
        meta = obj["metadata"]
        if obj["kind"] in cluster_kinds:
            meta.pop("namespace", None)
        elif not meta.get("namespace"):
            meta["namespace"] = namespace
        key = key_of(obj)
        if key in seen:
            raise SourceError(
                f"{key} appears twice in the input (documents {seen[key] + 1} and {position + 1})"
            )
        seen[key] = position
        groups.setdefault(_step_index(obj, key), []).append(Item(obj))
    ordered = sorted(groups.items(), key=lambda kv: -1 if kv[0] is None else kv[0])
    steps = []
    for position, (step_index, items) in enumerate(ordered):
        items.sort(key=lambda it: (kind_rank(it.kind), it.key.namespace, it.key.name, it.key.group))
        steps.append(
            Step(
                index=position,
                name=_step_name(items, step_index),
                timeout=_step_timeout(items, default_timeout),
                wait=True,
                items=items,
                step_index=step_index,
            )
        )
    if steps:
        last = steps[-1]
        last.wait = wait if wait is not None else any(it.annotations.get(WAIT) == "true" for it in last.items)
    return Plan(steps)


def _flatten(objects: Iterable[Any]) -> Iterable[Any]:
    for obj in objects:
        if obj is None:
            continue  # empty documents between `---` separators
        if isinstance(obj, dict) and str(obj.get("kind", "")).endswith("List") and "items" in obj:
            yield from _flatten(obj.get("items") or [])
        else:
            yield obj


def _check_object(obj: Any, position: int) -> None:
    where = f"document {position + 1}"
    if not isinstance(obj, dict):
        raise SourceError(f"{where}: not a Kubernetes object (a {type(obj).__name__})")
    for required in ("apiVersion", "kind"):
        if not isinstance(obj.get(required), str) or not obj[required]:
            raise SourceError(f"{where}: missing {required}")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise SourceError(f"{where}: {obj['kind']} without metadata.name (generateName cannot be applied)")


def _cluster_scoped_crds(objs: list[Any]) -> set[str]:
    kinds = set()
    for obj in objs:
        if isinstance(obj, dict) and obj.get("kind") == "CustomResourceDefinition":
            spec = obj.get("spec") or {}
            if spec.get("scope") == "Cluster":
                kinds.add(str((spec.get("names") or {}).get("kind", "")))
    return kinds


def _step_index(obj: dict[str, Any], key: Key) -> int | None:
    raw = (obj["metadata"].get("annotations") or {}).get(STEP_INDEX)
    if raw is None:
        return None
    try:
        return int(str(raw))
    except ValueError:
        raise SourceError(f"{key}: {STEP_INDEX} must be an integer, got {raw!r}") from None


def _step_name(items: list[Item], step_index: int | None) -> str:
    names = sorted({str(it.annotations[STEP]) for it in items if it.annotations.get(STEP)})
    if names:
        return names[0]
    return UNSTEPPED if step_index is None else f"step-{step_index}"


def _step_timeout(items: list[Item], default: float) -> float:
    """The longest ``krmfn.dev/step-timeout`` of the step's items (set-steps writes one value per step)."""
    found = []
    for item in items:
        raw = item.annotations.get(STEP_TIMEOUT)
        if raw is None:
            continue
        try:
            nanos = parse_duration(str(raw))
        except ValueError as err:
            raise SourceError(f"{item.key}: {STEP_TIMEOUT}: {err}") from None
        if nanos <= 0:
            raise SourceError(f"{item.key}: {STEP_TIMEOUT} must be positive, got {raw!r}")
        found.append(nanos / SECOND)
    return max(found) if found else default
