"""``krmfn export argocd``: the steps as Argo CD sync waves, and optionally the edge Jobs as hooks.

Argo CD applies wave by wave and waits for each wave to be healthy before the next, so the step index
is the wave. Objects without a step go first, as in ``krmfn apply``: they get wave -1 unless they
already name a wave. With hooks, the Jobs of the first step run as ``PreSync`` and those of the last
step as ``PostSync``; ``BeforeHookCreation`` deletes the previous run's Job so a new sync can run it
again (Job specs are immutable). Non-hook objects marked ``krmfn.dev/force: enabled`` (or Flux's
alias) get Argo CD's ``Force=true,Replace=true`` sync options, its way to recreate what it cannot patch.

The objects of the on-failure steps (``krmfn.dev/on-failure``) become ``SyncFail`` hooks, Argo CD's
steps run when a sync fails, their order kept as their wave; without ``--hooks`` there is no way to say
"only when it fails", so they are refused rather than applied on every sync.

The objects of the on-delete steps (``krmfn.dev/on-delete``) become ``PreDelete`` hooks (Argo CD 3.x), run
before the Application's resources are deleted and only then, their order kept as their wave; with
``drop_on_delete`` they are left out. The teardown order needs nothing more: Argo CD orders deletions by
wave, the highest first (its sync-waves documentation; pruning during a sync goes wave by wave so), the
reverse of the steps, as ``krmfn delete`` does (docs/runner.md#exports-of-the-teardown says what is tested).
"""

from __future__ import annotations

from krmfn.errors import InputError
from krmfn.k8s.annotations import FORCES, enabled
from krmfn.k8s.kobj import Obj, annotations_of, set_annotation
from krmfn.k8s.step_grouping import Step, Steps, describe

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
HOOK = "argocd.argoproj.io/hook"
HOOK_DELETE_POLICY = "argocd.argoproj.io/hook-delete-policy"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
UNSTEPPED_WAVE = "-1"
_FORCE_OPTIONS = ("Force=true", "Replace=true")


def annotate(steps: Steps, hooks: bool, drop_on_delete: bool = False) -> list[Obj]:
    """Annotates the objects in place; returns them in input step order (the on-delete steps' last)."""
    hook_of: dict[int, str] = {}
    if hooks and len(steps.steps) > 1:
        hook_of[id(steps.first)] = "PreSync"
        hook_of[id(steps.last)] = "PostSync"
    out: list[Obj] = []
    for step in steps.steps:
        for obj in step.items:
            _set_wave(obj, step)
            hook = hook_of.get(id(step)) if obj.get("kind") == "Job" else None
            if hook:
                set_annotation(obj, HOOK, hook)
                set_annotation(obj, HOOK_DELETE_POLICY, "BeforeHookCreation")
            elif enabled(annotations_of(obj), FORCES):
                _add_sync_options(obj, _FORCE_OPTIONS)
            out.append(obj)
    for step in steps.on_failure:
        for obj in step.items:
            if not hooks:
                raise InputError(
                    f"{describe(obj)} is in the on-failure step {step.name!r} (krmfn.dev/on-failure), "
                    "which Argo CD runs only as a SyncFail hook: pass --hooks"
                )
            _set_wave(obj, step)
            set_annotation(obj, HOOK, "SyncFail")
            set_annotation(obj, HOOK_DELETE_POLICY, "BeforeHookCreation")
            out.append(obj)
    for step in [] if drop_on_delete else steps.on_delete:
        for obj in step.items:
            _set_wave(obj, step)
            set_annotation(obj, HOOK, "PreDelete")
            set_annotation(obj, HOOK_DELETE_POLICY, "BeforeHookCreation")
            out.append(obj)
    return out


def _set_wave(obj: Obj, step: Step) -> None:
    if step.index is not None:
        set_annotation(obj, SYNC_WAVE, str(step.index))
    elif SYNC_WAVE not in annotations_of(obj):
        set_annotation(obj, SYNC_WAVE, UNSTEPPED_WAVE)


def _add_sync_options(obj: Obj, wanted: tuple[str, ...]) -> None:
    current = [o.strip() for o in str(annotations_of(obj).get(SYNC_OPTIONS, "")).split(",") if o.strip()]
    names = {o.split("=", 1)[0] for o in current}
    merged = current + [o for o in wanted if o.split("=", 1)[0] not in names]
    set_annotation(obj, SYNC_OPTIONS, ",".join(merged))
