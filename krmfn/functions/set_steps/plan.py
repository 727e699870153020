"""Which step each resource belongs to: a pinned ``krmfn.dev/step`` first, then selectors, then default."""

from __future__ import annotations

from collections.abc import Iterable

from krmfn.functions.set_steps.config import SetStepsConfig
from krmfn.kobj import Obj, annotations_of, is_local_config
from krmfn.results import Results
from krmfn.selector import matches_any

STEP = "krmfn.dev/step"


def assign(items: Iterable[Obj], config: SetStepsConfig, results: Results) -> list[list[Obj]]:
    """Resources grouped by step index; every resource that fits no single step gets an error result."""
    index_of = {step.name: i for i, step in enumerate(config.steps)}
    names = ", ".join(index_of)
    groups: list[list[Obj]] = [[] for _ in config.steps]
    for obj in items:
        if is_local_config(obj):
            continue
        notes = annotations_of(obj)
        if STEP in notes:
            pinned = str(notes[STEP])
            if pinned in index_of:
                groups[index_of[pinned]].append(obj)
            else:
                results.error(
                    f"unknown step {pinned!r}; steps: {names}",
                    obj,
                    field=f"metadata.annotations.{STEP}",
                    current_value=pinned,
                )
            continue
        matched = [i for i, step in enumerate(config.steps) if matches_any(step.selectors, obj)]
        if len(matched) > 1:
            both = " and ".join(repr(config.steps[i].name) for i in matched)
            results.error(
                f"matches the selectors of steps {both}; narrow the selectors or pin the resource "
                f"with the annotation {STEP}",
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
                f"selector, or pin the resource with the annotation {STEP}",
                obj,
                field="metadata",
            )
    return groups
