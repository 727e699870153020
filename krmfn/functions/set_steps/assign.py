"""Which step each resource belongs to: a user's pin (``krmfn.dev/step-pin``) first, then selectors, then
the default step.

``krmfn.dev/step`` is set-steps' own output, never an input: after ``kpt fn render`` writes it back into
the package, the next render still follows the config, so changing a selector moves the resource. Only
``krmfn.dev/step-pin``, which set-steps never writes, keeps a resource in a step against the selectors.
"""

from __future__ import annotations

from collections.abc import Iterable

from krmfn.functions.set_steps.config import SetStepsConfig, StepConfig
from krmfn.k8s.annotations import STEP, STEP_PIN
from krmfn.k8s.kobj import Obj, annotations_of, is_local_config
from krmfn.sdk.results import Results
from krmfn.sdk.selector import matches_any


def assign(
    items: Iterable[Obj], config: SetStepsConfig, results: Results, placed: dict[int, str] | None = None
) -> list[list[Obj]]:
    """Resources grouped by step index, the ``onFailure`` then ``onDelete`` steps' after the steps'
    (``config.steps`` first, then ``config.on_failure``, then ``config.on_delete``, one group each);
    every resource that fits no single step gets an error result. ``placed``: the step of each object
    another tool's annotations order (by ``id``), after a pin and before the selectors (tools.py)."""
    placed = placed or {}
    steps = [*config.steps, *config.on_failure, *config.on_delete]
    index_of = {step.name: i for i, step in enumerate(steps)}
    names = ", ".join(index_of)
    groups: list[list[Obj]] = [[] for _ in steps]
    for obj in items:
        if is_local_config(obj):
            continue
        notes = annotations_of(obj)
        if STEP_PIN in notes:
            pinned = str(notes[STEP_PIN])
            if pinned in index_of:
                groups[index_of[pinned]].append(obj)
            else:
                results.error(
                    f"unknown step {pinned!r}; steps: {names}",
                    obj,
                    field=f"metadata.annotations.{STEP_PIN}",
                    current_value=pinned,
                )
            continue
        before = len(results)
        if id(obj) in placed:
            groups[index_of[placed[id(obj)]]].append(obj)
            _note_move(obj, notes, groups, steps, results)
            continue
        matched = [i for i, step in enumerate(steps) if matches_any(step.selectors, obj)]
        if len(matched) > 1:
            both = " and ".join(repr(steps[i].name) for i in matched)
            results.error(
                f"matches the selectors of steps {both}; narrow the selectors or pin the resource "
                f"with the annotation {STEP_PIN}",
                obj,
                field="metadata",
            )
        elif matched:
            groups[matched[0]].append(obj)
        elif config.default_step:
            groups[index_of[config.default_step]].append(obj)
        else:
            results.error(
                f"matches no step's selectors and defaultStep is not set; set defaultStep, add a "
                f"selector, or pin the resource with the annotation {STEP_PIN}",
                obj,
                field="metadata",
            )
        if len(results) == before:
            _note_move(obj, notes, groups, steps, results)
    return groups


def _note_move(
    obj: Obj, notes: dict[str, object], groups: list[list[Obj]], steps: list[StepConfig], results: Results
) -> None:
    """An info result when the config moves a resource out of the step an earlier render wrote: that
    annotation is set-steps' own, so it follows the config (a user keeps a step with the pin)."""
    earlier = notes.get(STEP)
    now = next(steps[i].name for i, group in enumerate(groups) if group and group[-1] is obj)
    if earlier is not None and str(earlier) != now:
        results.info(
            f"moves from step {str(earlier)!r} (an earlier render) to {now!r}, as the config says; "
            f"to keep a resource in a step whatever the selectors say, annotate it {STEP_PIN}",
            obj,
            field=f"metadata.annotations.{STEP}",
        )
