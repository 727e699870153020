"""The plan: which objects are applied in which step, in which order. Pure: no cluster access.

Steps are grouped by krmfn.k8s.step_grouping, the code ``krmfn export`` uses too, so both read one order.
Around that, this module drops what is not applied (empty documents, local config), defaults namespaces and
rejects duplicates, and orders the objects of a step by kind (things others depend on first, Jobs
last), then namespace and name, the way cli-utils and kustomize order an apply. A stream whose steps
would hang a cluster (krmfn/k8s/ordering.py: a Job before its ConfigMap, an object before its Namespace) is
refused, as set-steps refuses it when rendering.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from krmfn.duration import SECOND, format_duration
from krmfn.k8s import ordering, step_grouping
from krmfn.k8s.cluster_objects import flatten, identity_problem
from krmfn.k8s.jobtriggers import FIELD as HASH_FROM_FIELD
from krmfn.k8s.jobtriggers import HASH_FROM, Triggered, TriggerError, of_job
from krmfn.k8s.kobj import annotations_of, is_local_config, labels_of
from krmfn.k8s.kustomize_names import Names
from krmfn.k8s.names import name_problem, namespace_problem
from krmfn.k8s.scopes import Scopes
from krmfn.runner.errors import SourceError
from krmfn.runner.reserved import APPLYSET_PREFIX, INVENTORY, MAX_JOB_RECORDS
from krmfn.runner.settle_annotations import KINDS as SETTLED_KINDS
from krmfn.runner.settle_annotations import BadAnnotation, budget_of, window_of
from krmfn.yaml.io import plain

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
    _key: Key | None = field(default=None, init=False, repr=False, compare=False)
    triggered: Triggered | None = field(default=None, init=False, repr=False, compare=False)
    """A Job's ``krmfn.dev/hash-from`` triggers and their hashes (krmfn/k8s/jobtriggers.py), over the
    stream."""

    @property
    def key(self) -> Key:
        """Computed once: the engine asks for it many times per object (a big step is thousands)."""
        if self._key is None:
            self._key = key_of(self.obj)
        return self._key

    def drop_namespace(self) -> None:
        """For a kind the cluster serves cluster-scoped, which the plan could not know."""
        self.obj["metadata"].pop("namespace", None)
        self._key = None

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
    on_timeout: str = "fail"
    """``continue``: a timeout of this step is recorded and the run goes on (``krmfn.dev/on-timeout``)."""

    @property
    def timeout_text(self) -> str:
        return format_duration(round(self.timeout * SECOND))


@dataclass
class Plan:
    steps: list[Step]
    on_failure: list[Step] = field(default_factory=list)
    """Applied only when a step fails (``krmfn.dev/on-failure``), numbered after the steps."""
    on_delete: list[Step] = field(default_factory=list)
    """Applied only by ``krmfn delete -f/-k``, before the teardown (``krmfn.dev/on-delete``), numbered
    after the on-failure steps. Not in ``items``: they are not part of the deployed app."""

    @property
    def items(self) -> list[Item]:
        """Every rendered object, the on-failure steps' too: all are the app's (discovery, the
        inventory's kinds, prune), though those are applied only after a failure. Not the on-delete
        steps': apply never applies them, so they are neither looked up nor kept from a prune."""
        return [item for step in self.steps + self.on_failure for item in step.items]


def build_plan(
    objects: Iterable[Any],
    *,
    namespace: str,
    default_timeout: float,
    wait: bool | None = None,
) -> Plan:
    """Groups, orders and defaults ``objects``. ``wait`` overrides ``krmfn.dev/wait`` for the last step."""
    flat = [plain(obj) for obj in flatten(objects)]
    grouped = step_grouping.group(
        _applied(flat, namespace, Scopes(flat)),
        who=_who,
        error=SourceError,
        order=_apply_order,
    )
    plan = Plan(
        [
            Step(
                index=position,
                name=found.name,
                timeout=default_timeout if found.timeout_seconds is None else found.timeout_seconds,
                wait=True,
                items=[Item(obj) for obj in found.items],
                step_index=found.index,
                on_timeout=found.on_timeout,
            )
            for position, found in enumerate(grouped.steps + grouped.on_failure + grouped.on_delete)
        ]
    )
    first_delete = len(grouped.steps) + len(grouped.on_failure)
    plan.steps, plan.on_failure, plan.on_delete = (
        plan.steps[: len(grouped.steps)],
        plan.steps[len(grouped.steps) : first_delete],
        plan.steps[first_delete:],
    )
    if plan.steps:
        plan.steps[-1].wait = grouped.wait if wait is None else wait
    misordered = ordering.misorders([step.items for step in grouped.steps], Scopes(flat))
    if misordered:
        raise SourceError(ordering.describe(misordered, [step.name for step in grouped.steps], _who))
    for item in plan.items + [item for step in plan.on_delete for item in step.items]:
        if (item.key.group, item.kind) in SETTLED_KINDS:
            try:
                window_of(item.annotations), budget_of(item.annotations)
            except BadAnnotation as err:
                raise SourceError(f"{item.key}: {err}") from None
    _triggers(plan)
    jobs = sum(item.key.group == "batch" and item.kind == "Job" for item in plan.items)
    if jobs > MAX_JOB_RECORDS:
        raise SourceError(
            f"{jobs} Jobs: the inventory remembers at most {MAX_JOB_RECORDS} Jobs per ApplySet (so that "
            "none deleted by its TTL runs twice); split the stream into several ApplySets (--applyset)"
        )
    return plan


def _triggers(plan: Plan) -> None:
    """Each Job's triggers, hashed over the applied stream as hash-job-names hashed them: the run a Job
    stands for is its trigger values (a ConfigMap a trigger names must be in the stream)."""
    names: Names | None = None
    for item in plan.items:
        if item.key.group != "batch" or item.kind != "Job" or HASH_FROM not in item.annotations:
            continue
        names = names or Names(it.obj for it in plan.items)
        try:
            item.triggered = of_job(item.obj, names)
        except TriggerError as err:
            raise SourceError(f"{item.key}: {HASH_FROM_FIELD}: {err}") from None


def _applied(flat: list[Any], namespace: str, scopes: Scopes) -> Iterator[dict[str, Any]]:
    """The objects to apply, namespaced as they will be (krmfn/k8s/scopes.py: built-in cluster-scoped kinds
    and the CRDs in the stream; anything else gets ``namespace`` unless it has one). Lazy:
    ``step_grouping.group`` reads each object's step index as it is yielded, so input errors are reported in
    stream order."""
    seen: dict[Key, int] = {}
    for position, obj in enumerate(flat):
        _check_object(obj, position)
        if is_local_config(obj):
            continue
        meta = obj["metadata"]
        if scopes.cluster_scoped(str(obj["apiVersion"]).rpartition("/")[0], obj["kind"]):
            meta.pop("namespace", None)
        elif not meta.get("namespace"):
            meta["namespace"] = namespace
        _check_namespace(obj, position)
        key = key_of(obj)
        if key in seen:
            raise SourceError(
                f"{key} appears twice in the input (documents {seen[key] + 1} and {position + 1})"
            )
        seen[key] = position
        yield obj


def _who(obj: dict[str, Any]) -> str:
    return str(key_of(obj))


def _apply_order(obj: dict[str, Any]) -> tuple[int, str, str, str]:
    key = key_of(obj)
    return (kind_rank(key.kind), key.namespace, key.name, key.group)


def _check_object(obj: Any, position: int) -> None:
    where = f"document {position + 1}"
    problem = identity_problem(obj)
    if problem is not None:
        raise SourceError(f"{where}: {problem}")
    _check_inventory_keys(obj, where)


def _check_inventory_keys(obj: dict[str, Any], where: str) -> None:
    """Only the runner writes ApplySet labels and inventory annotations: a rendered object carrying
    them could pass for a parent or a member of another set, or rewrite this set's record."""
    meta = obj["metadata"]
    for field_name, keys in (("labels", labels_of(obj)), ("annotations", annotations_of(obj))):
        for key in keys:
            if str(key).startswith(APPLYSET_PREFIX) or (field_name == "annotations" and key in INVENTORY):
                raise SourceError(
                    f"{where}: {obj['kind']} {meta['name']}: metadata.{field_name} has {key!r}, which "
                    "only krmfn apply writes (the ApplySet inventory); remove it from the manifests"
                )


def check_applyset(plan: Plan, name: str, namespace: str | None) -> None:
    """The ApplySet parent ``namespace/name`` is a valid Secret name and is not in the plan: applied
    from the stream, it would lose its record (and take the members' label, so a prune deletes it).
    ``namespace`` None: not known yet (the kubeconfig's), only the name is checked."""
    problem = name_problem("", "Secret", name)
    if problem is not None:
        raise SourceError(f"--applyset {name!r} is not a valid Secret name: {problem}")
    if namespace is None:
        return
    problem = namespace_problem(namespace)
    if problem is not None:
        raise SourceError(f"namespace {namespace!r} of the ApplySet parent is invalid: {problem}")
    parent = Key("", "Secret", namespace, name)
    # The on-delete steps' objects too: applied by krmfn delete, such a Secret would overwrite the parent.
    if any(item.key == parent for item in plan.items + [it for step in plan.on_delete for it in step.items]):
        raise SourceError(
            f"{parent} is the ApplySet parent (the inventory of this apply) and may not be in the "
            "manifests; rename that Secret, or choose another parent name with --applyset"
        )


def _check_namespace(obj: dict[str, Any], position: int) -> None:
    """The namespace as it will be sent (after defaulting), so ``-n`` and the kubeconfig's are checked
    too: it becomes a segment of every request path about the object."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    if namespace is None:
        return
    problem = namespace_problem(namespace)
    if problem is not None:
        raise SourceError(
            f"document {position + 1}: {obj['kind']} {meta['name']}: metadata.namespace {namespace!r} "
            f"is invalid: {problem}"
        )
