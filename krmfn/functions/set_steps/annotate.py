"""Writing the step annotations, and the optional depends-on and sync-wave interop annotations."""

from __future__ import annotations

from krmfn.functions.set_steps.config import SetStepsConfig, normalized_timeout
from krmfn.k8s import dependson
from krmfn.k8s.annotations import ON_DELETE, ON_FAILURE, ON_TIMEOUT, STEP, STEP_INDEX, STEP_TIMEOUT, WAIT
from krmfn.k8s.kobj import Obj, annotations_of, ref_of, remove_annotation, set_annotation
from krmfn.k8s.kustomize_names import final_name
from krmfn.k8s.scopes import Scopes
from krmfn.sdk.results import Results

ARGO_HOOK = "argocd.argoproj.io/hook"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"


def write_steps(groups: list[list[Obj]], config: SetStepsConfig) -> None:
    # The runner treats the highest step index present as final, so an empty last step is skipped here.
    final = max((i for i, group in enumerate(groups) if group), default=-1)
    for index, group in enumerate(groups):
        step = config.steps[index]
        timeout = normalized_timeout(step.timeout)
        for obj in group:
            _place(obj, step.name, index, timeout)
            if index == final:
                set_annotation(obj, WAIT, "true" if config.wait else "false")
            else:
                remove_annotation(obj, WAIT)
            if "argocd" in config.emit:
                set_annotation(obj, SYNC_WAVE, str(index))
            remove_annotation(obj, ON_FAILURE)  # an earlier render's onFailure step, since moved
            remove_annotation(obj, ON_DELETE)  # likewise an onDelete step
            if step.on_timeout == "continue":
                set_annotation(obj, ON_TIMEOUT, "continue")
            else:
                remove_annotation(obj, ON_TIMEOUT)  # the default: the runner fails the run


def write_on_failure_steps(groups: list[list[Obj]], config: SetStepsConfig) -> None:
    """The onFailure steps: named, numbered among themselves, timed, and marked ``krmfn.dev/on-failure``
    (always waited for, so no ``krmfn.dev/wait``; no sync wave: ``krmfn export argocd --hooks`` makes
    them SyncFail hooks)."""
    for index, group in enumerate(groups):
        step = config.on_failure[index]
        timeout = normalized_timeout(step.timeout)
        for obj in group:
            _place(obj, step.name, index, timeout)
            set_annotation(obj, ON_FAILURE, "true")
            remove_annotation(obj, ON_DELETE)
            remove_annotation(obj, ON_TIMEOUT)  # an on-failure step's timeout always fails the run
            remove_annotation(obj, WAIT)
            remove_annotation(obj, SYNC_WAVE)


def write_on_delete_steps(groups: list[list[Obj]], config: SetStepsConfig) -> None:
    """The onDelete steps: named, numbered among themselves, timed, and marked ``krmfn.dev/on-delete``
    (always waited for, so no ``krmfn.dev/wait``). With ``emit: [argocd]`` they are Argo CD's PreDelete
    hooks, their order kept as their wave, as ``krmfn export argocd`` writes them; kpt live has no such
    step, so the config refuses onDelete with ``emit: [depends-on]``."""
    for index, group in enumerate(groups):
        step = config.on_delete[index]
        timeout = normalized_timeout(step.timeout)
        for obj in group:
            _place(obj, step.name, index, timeout)
            set_annotation(obj, ON_DELETE, "true")
            remove_annotation(obj, ON_FAILURE)
            remove_annotation(obj, ON_TIMEOUT)  # an on-delete step's timeout always fails the run
            remove_annotation(obj, WAIT)
            if "argocd" in config.emit:
                set_annotation(obj, ARGO_HOOK, "PreDelete")
                set_annotation(obj, SYNC_WAVE, str(index))
            else:
                remove_annotation(obj, SYNC_WAVE)


def plan_depends_on(groups: list[list[Obj]], scopes: Scopes, results: Results) -> list[tuple[Obj, str]]:
    """(resource, new annotation value) for every resource of a step after the first non-empty one.

    Each resource depends on every resource of the nearest earlier non-empty step; entries already in
    the annotation are kept first, in their order, and new ones follow sorted.
    """
    refs: dict[int, dependson.ObjRef] = {}
    step_of: dict[dependson.ObjRef, int] = {}
    for index, group in enumerate(groups):
        for obj in group:
            ref = _ref(obj, scopes)
            refs[id(obj)] = ref
            step_of[ref] = index
    planned: list[tuple[Obj, str]] = []
    previous: list[Obj] = []
    for index, group in enumerate(groups):
        if not group:
            continue
        needed = sorted({refs[id(o)] for o in previous})
        for ref in needed:
            if not ref.namespace and not scopes.cluster_scoped(ref.group, ref.kind):
                results.error(
                    f"{ref.kind} {ref.name} has no metadata.namespace, so no depends-on reference "
                    "can name it; set its namespace (a kustomize namespace: works), or list the "
                    "kind in clusterScopedKinds if it is cluster-scoped",
                    _find(previous, ref, refs),
                    field="metadata.namespace",
                )
        for obj in group:
            existing = _existing(obj, results)
            if existing is None:
                continue
            for entry in existing:
                if step_of.get(entry, -1) > index:
                    results.error(
                        f"depends on {entry.format()}, which is in the later step {step_of[entry]}: "
                        "kpt live would find a cycle; remove that entry",
                        obj,
                        field=f"metadata.annotations.{dependson.ANNOTATION}",
                    )
            merged = existing + [ref for ref in needed if ref not in existing]
            if merged:
                planned.append((obj, dependson.format_set(merged)))
        previous = group
    return planned


def _ref(obj: Obj, scopes: Scopes) -> dependson.ObjRef:
    """The reference kpt live will resolve: by the name the object has in the build output (inside a
    kustomize build a generated ConfigMap does not have its hash suffix yet; kustomize never rewrites
    an annotation)."""
    ref = ref_of(obj)
    namespace = "" if scopes.cluster_scoped(ref.group, ref.kind) else ref.namespace
    return dependson.ObjRef(ref.group, ref.kind, final_name(obj), namespace)


def _existing(obj: Obj, results: Results) -> list[dependson.ObjRef] | None:
    text = annotations_of(obj).get(dependson.ANNOTATION)
    if text is None or text == "":
        return []
    try:
        found = dependson.parse_set(str(text))
    except ValueError as err:
        results.error(
            f"cannot read the existing annotation: {err}",
            obj,
            field=f"metadata.annotations.{dependson.ANNOTATION}",
            current_value=str(text),
        )
        return None
    return list(dict.fromkeys(found))


def _find(group: list[Obj], ref: dependson.ObjRef, refs: dict[int, dependson.ObjRef]) -> Obj:
    return next(obj for obj in group if refs[id(obj)] == ref)


def _place(obj: Obj, name: str, index: int, timeout: str) -> None:
    """The step annotations every placed object carries: its step's name, index and timeout."""
    set_annotation(obj, STEP, name)
    set_annotation(obj, STEP_INDEX, str(index))
    set_annotation(obj, STEP_TIMEOUT, timeout)
