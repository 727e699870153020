"""Ordering mistakes a step layout can make, found before a real cluster hangs on them. Pure; one
implementation for set-steps (at render time), ``krmfn plan|apply|diff`` (krmfn/runner/plan.py) and
``krmfn export`` (krmfn/export/steps.py), so every path refuses the same layouts:

- a pod template (Job, Deployment, CronJob, ...) that uses a ConfigMap, Secret, ServiceAccount or
  PersistentVolumeClaim of a later step: its pods wait (CreateContainerConfigError, a missing service
  account, an unbound claim) until the step times out, so the later step never comes. References marked
  ``optional: true`` do not block a pod and are not reported;
- an object in a namespace whose Namespace is applied in a later step (the API server refuses it);
- a custom resource whose CustomResourceDefinition is applied in a later step (the kind is not served).

References are resolved by krmfn/k8s/kustomize_names.py, the resolver set-config-checksum and hash-job-names
use: inside a kustomize build a pod template still says ``web-config`` while the ConfigMap is already
``prod-web-config`` (a namePrefix) and will end as ``prod-web-config-<hash>`` (a generator); after the
build every name is final and the same calls compare names as written.

Objects of one step are applied in kind order (krmfn/runner/plan.py: Namespaces, CRDs, then config,
then workloads, Jobs last), so a step never has these problems within itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from krmfn.k8s.annotations import STEP_PIN
from krmfn.k8s.kobj import Obj, get_path, ref_of
from krmfn.k8s.kustomize_name_fields import CONFIGMAP, PVC, SECRET, SERVICE_ACCOUNT, Target, rewrites
from krmfn.k8s.kustomize_names import Names
from krmfn.k8s.podtemplates import pod_templates, pod_uses
from krmfn.k8s.scopes import Scopes

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
NAMESPACE = Target("Namespace", "v1")
TARGETS = {t.kind: t for t in (CONFIGMAP, SECRET, SERVICE_ACCOUNT, PVC)}


@dataclass(frozen=True)
class Misorder:
    """``obj`` (in step ``step``) needs ``needed``, which a later step applies."""

    obj: Obj
    step: int
    needed: Obj
    needed_step: int
    field: str
    """Where ``obj`` says what it needs, as results name a field."""
    why: str
    effect: str

    def message(self, step_names: Sequence[str]) -> str:
        mine, theirs, needed = step_names[self.step], step_names[self.needed_step], ref_of(self.needed)
        return (
            f"in step {mine!r}, but {self.why} {needed}, in the later step {theirs!r}: {self.effect}; "
            f"move {needed} to step {mine!r} or earlier (a selector or the annotation {STEP_PIN}), or this "
            f"object to step {theirs!r} or later"
        )


def misorders(groups: Sequence[Sequence[Obj]], scopes: Scopes) -> list[Misorder]:
    """Every object of ``groups`` (objects by step, in step order) that needs an object of a later step."""
    step_of: dict[int, int] = {id(obj): index for index, group in enumerate(groups) for obj in group}
    everything = [obj for group in groups for obj in group]
    names = Names(everything)
    crds: dict[tuple[str, str], Obj] = {}
    for obj in everything:
        if obj.get("kind") == CRD[1] and ref_of(obj).group == CRD[0]:
            group_name, kind = get_path(obj, "spec.group"), get_path(obj, "spec.names.kind")
            crds.setdefault((str(group_name or ""), str(kind or "")), obj)
    found: list[Misorder] = []

    def later(obj: Obj, needed: Obj | None, field: str, why: str, effect: str) -> None:
        if needed is not None and step_of.get(id(needed), -1) > step_of[id(obj)]:
            found.append(Misorder(obj, step_of[id(obj)], needed, step_of[id(needed)], field, why, effect))

    for obj in everything:
        ref = ref_of(obj)
        for template in pod_templates(obj):
            for used in pod_uses(template, ref.namespace):
                if used.optional:
                    continue
                needed = names.resolve(obj, TARGETS[used.kind], used.name, rewrites(obj, used.field))
                later(
                    obj, needed, used.field, "its pod template uses",
                    "its pods cannot start until then, so this step waits until it times out",
                )  # fmt: skip
        if ref.namespace and not scopes.cluster_scoped(ref.group, ref.kind):
            later(
                obj, names.resolve(obj, NAMESPACE, ref.namespace, rewritten=False), "metadata.namespace",
                "it lives in", f"the API server refuses it while namespace {ref.namespace} does not exist",
            )  # fmt: skip
        later(
            obj, crds.get((ref.group, ref.kind)), "apiVersion", "its kind is defined by",
            f"the cluster does not serve {ref.kind} until then",
        )  # fmt: skip
    return found


def describe(found: Sequence[Misorder], step_names: Sequence[str], who: Callable[[Obj], str]) -> str:
    """One line for a command's error: the first mistake, and how many more there are."""
    first = found[0]
    more = f" (and {len(found) - 1} more such mistake(s))" if len(found) > 1 else ""
    return f"{who(first.obj)}: {first.field}: {first.message(step_names)}{more}"
