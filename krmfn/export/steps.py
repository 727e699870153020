"""Grouping a rendered stream into its steps, from the annotations set-steps writes. Pure.

The rules are the runner's (krmfn/runner/plan.py), so every engine runs the same order: steps in
``krmfn.dev/step-index`` order, objects without the annotation in one step named ``default`` that goes
first, and the final step health-checked only when one of its objects says ``krmfn.dev/wait: "true"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from krmfn.duration import parse_duration
from krmfn.errors import InputError
from krmfn.kobj import Obj, annotations_of, ref_of
from krmfn.runner.plan import STEP, STEP_INDEX, STEP_TIMEOUT, UNSTEPPED, WAIT

STEP_ANNOTATIONS = (STEP, STEP_INDEX, STEP_TIMEOUT, WAIT)


@dataclass
class Step:
    index: int | None
    """The ``krmfn.dev/step-index`` value; None for the objects that have none."""
    name: str
    timeout: str | None
    """The longest ``krmfn.dev/step-timeout`` of the step as written (a Go duration); None if absent."""
    items: list[Obj] = field(default_factory=list)


@dataclass
class Steps:
    steps: list[Step]
    wait: bool
    """Whether the final step is health-checked too (earlier steps always are)."""

    @property
    def first(self) -> Step:
        return self.steps[0]

    @property
    def last(self) -> Step:
        return self.steps[-1]


def describe(obj: Obj) -> str:
    ref = ref_of(obj)
    return f"{ref.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.kind} {ref.name}"


def group(objects: Iterable[Obj]) -> Steps:
    by_index: dict[int | None, list[Obj]] = {}
    seen: dict[tuple[str, str, str, str], Obj] = {}
    for obj in objects:
        ref = ref_of(obj)
        key = (ref.group, ref.kind, ref.namespace, ref.name)
        if key in seen:
            raise InputError(f"{describe(obj)} appears twice in the input")
        seen[key] = obj
        by_index.setdefault(_index(obj), []).append(obj)
    if not by_index:
        raise InputError("the input holds no resources")
    steps = [
        Step(index, _name(items, index), _timeout(items), items)
        for index, items in sorted(by_index.items(), key=lambda kv: -1 if kv[0] is None else kv[0])
    ]
    _check_unique_names(steps)
    wait = any(str(annotations_of(obj).get(WAIT, "")) == "true" for obj in steps[-1].items)
    return Steps(steps, wait)


def _index(obj: Obj) -> int | None:
    raw = annotations_of(obj).get(STEP_INDEX)
    if raw is None:
        return None
    text = str(raw)
    if not text.isdigit():
        raise InputError(f"{describe(obj)}: annotation {STEP_INDEX} must be a whole number, got {text!r}")
    return int(text)


def _name(items: list[Obj], index: int | None) -> str:
    if index is None:
        return UNSTEPPED
    names = sorted({str(annotations_of(obj)[STEP]) for obj in items if annotations_of(obj).get(STEP)})
    if len(names) > 1:
        raise InputError(
            f"step index {index} has more than one {STEP} name ({', '.join(names)}); "
            "re-run set-steps on the whole stream"
        )
    return names[0] if names else f"step-{index}"


def _timeout(items: list[Obj]) -> str | None:
    longest: tuple[int, str] | None = None
    for obj in items:
        raw = annotations_of(obj).get(STEP_TIMEOUT)
        if raw is None:
            continue
        text = str(raw)
        try:
            nanos = parse_duration(text)
        except ValueError as err:
            raise InputError(f"{describe(obj)}: annotation {STEP_TIMEOUT}: {err}") from None
        if nanos <= 0:
            raise InputError(f"{describe(obj)}: annotation {STEP_TIMEOUT} must be positive, got {text!r}")
        if longest is None or nanos > longest[0]:
            longest = (nanos, text)
    return None if longest is None else longest[1]


def _check_unique_names(steps: list[Step]) -> None:
    first_index: dict[str, int | None] = {}
    for step in steps:
        if step.name in first_index:
            where = ", ".join(
                "no step-index" if i is None else f"step-index {i}"
                for i in (first_index[step.name], step.index)
            )
            raise InputError(f"two steps are named {step.name!r} ({where}); step names must be unique")
        first_index[step.name] = step.index
