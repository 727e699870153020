"""Ordering mistakes a step layout can make, found when rendering rather than when a real node hangs.

Each is reported on the object that comes too early, naming the object it needs and both steps:

- a pod template (Job, Deployment, CronJob, ...) that uses a ConfigMap, Secret, ServiceAccount or
  PersistentVolumeClaim of a later step: its pods wait (CreateContainerConfigError, a missing service
  account, an unbound claim) until the step times out, so the later step never comes. References marked
  ``optional: true`` do not block a pod and are not reported;
- an object in a namespace whose Namespace is applied in a later step (the API server refuses it);
- a custom resource whose CustomResourceDefinition is applied in a later step (the kind is not served).

Objects of one step are applied in kind order (krmfn/runner/plan.py: Namespaces, CRDs, then config,
then workloads, Jobs last), so a step never has these problems within itself.

A selector that matches nothing is a warning listing the names it may have meant (a kustomize
namePrefix, a typo), since a step that silently loses its resource is an ordering mistake too.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from krmfn.functions.set_steps.config import SetStepsConfig
from krmfn.kobj import Obj, Ref, annotations_of, get_path, is_local_config, ref_of
from krmfn.podtemplates import pod_templates, pod_uses
from krmfn.results import Results
from krmfn.scopes import Scopes
from krmfn.selector import JOB_BASE_NAME, Selector

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
NEAR_NAMES = 3


def check(groups: list[list[Obj]], config: SetStepsConfig, scopes: Scopes, results: Results) -> None:
    step_of: dict[int, int] = {id(obj): index for index, group in enumerate(groups) for obj in group}
    by_name: dict[tuple[str, str, str], Obj] = {}
    namespaces: dict[str, Obj] = {}
    crds: dict[tuple[str, str], Obj] = {}
    for group in groups:
        for obj in group:
            ref = ref_of(obj)
            by_name.setdefault((ref.kind, ref.namespace, ref.name), obj)
            if (ref.group, ref.kind) == ("", "Namespace"):
                namespaces.setdefault(ref.name, obj)
            elif (ref.group, ref.kind) == CRD:
                group_name, kind = get_path(obj, "spec.group"), get_path(obj, "spec.names.kind")
                crds.setdefault((str(group_name or ""), str(kind or "")), obj)

    def later(obj: Obj, needed: Obj, why: str, field: str, fix: str) -> None:
        mine, theirs = config.steps[step_of[id(obj)]].name, config.steps[step_of[id(needed)]].name
        results.error(
            f"in step {mine!r}, but {why} {ref_of(needed)}, in the later step {theirs!r}: {fix}; "
            f"move {ref_of(needed)} to step {mine!r} or earlier (a selector or the annotation "
            f"krmfn.dev/step-pin), or this object to step {theirs!r} or later",
            obj,
            field=field,
        )

    for group in groups:
        for obj in group:
            ref = ref_of(obj)
            here = step_of[id(obj)]
            for template in pod_templates(obj):
                for used in pod_uses(template, ref.namespace):
                    needed = by_name.get((used.kind, used.namespace, used.name))
                    if used.optional or needed is None or step_of[id(needed)] <= here:
                        continue
                    later(
                        obj, needed, "its pod template uses", used.field,
                        "its pods cannot start until then, so this step waits until it times out",
                    )  # fmt: skip
            namespace = namespaces.get(ref.namespace) if ref.namespace else None
            if namespace is not None and step_of[id(namespace)] > here and not _cluster_scoped(ref, scopes):
                later(
                    obj, namespace, "it lives in", "metadata.namespace",
                    f"the API server refuses it while namespace {ref.namespace} does not exist",
                )  # fmt: skip
            crd = crds.get((ref.group, ref.kind))
            if crd is not None and step_of[id(crd)] > here:
                later(
                    obj, crd, "its kind is defined by", "apiVersion",
                    f"the cluster does not serve {ref.kind} until then",
                )  # fmt: skip


def _cluster_scoped(ref: Ref, scopes: Scopes) -> bool:
    return scopes.cluster_scoped(ref.group, ref.kind)


def unmatched_selectors(items: Iterable[Obj], config: SetStepsConfig, results: Results) -> None:
    """A warning for every selector that matches no resource at all, with the names it may have meant."""
    objects = [obj for obj in items if not is_local_config(obj)]
    for where, steps in (("steps", config.steps), ("onFailure", config.on_failure)):
        for i, step in enumerate(steps):
            for j, selector in enumerate(step.selectors):
                if any(selector.matches(obj) for obj in objects):
                    continue
                near = _near_names(selector, objects)
                hint = f"; names it may mean: {', '.join(near)}" if near else ""
                results.warning(
                    f"step {step.name!r}: this selector matches no resource{hint}",
                    field=f"functionConfig.{where}[{i}].selectors[{j}]",
                )


def _near_names(selector: Selector, objects: list[Obj]) -> list[str]:
    """Objects of the selector's kind (any kind when it names none) whose name contains the selector's
    name (a namePrefix or nameSuffix), then names close to it (a typo)."""
    if not selector.name:
        return []
    candidates: dict[str, str] = {}
    for obj in objects:
        ref = ref_of(obj)
        if selector.kind and ref.kind != selector.kind:
            continue
        for name in (ref.name, str(annotations_of(obj).get(JOB_BASE_NAME, ""))):
            if name:
                candidates.setdefault(name, str(ref))
    containing = sorted(n for n in candidates if selector.name in n)
    close = difflib.get_close_matches(selector.name, list(candidates), n=NEAR_NAMES, cutoff=0.6)
    found = list(dict.fromkeys(containing + close))[:NEAR_NAMES]
    return [candidates[name] for name in found]
