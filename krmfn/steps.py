"""The steps of a rendered stream, from the annotations set-steps writes. Pure; one implementation for
``krmfn apply``/``krmfn plan`` (krmfn/runner/plan.py) and ``krmfn export`` (krmfn/export/steps.py), so
both run the same order.

    group(objects, rules) -> Steps     objects in steps, steps in krmfn.dev/step-index order

Shared: objects without a step index form one step that goes first; a step's name is its
``krmfn.dev/step`` (else ``step-N``, or ``default`` for the unindexed objects); its timeout the longest
``krmfn.dev/step-timeout``, which must be positive; the final step is health-checked only when one of
its objects says ``krmfn.dev/wait: "true"``. Where the two commands have always read the annotations
differently, ``Rules`` says how, and RUNNER and EXPORT keep each command's reading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from krmfn.duration import SECOND, parse_duration
from krmfn.errors import InputError, KrmfnError
from krmfn.kobj import Obj, annotations_of, ref_of

STEP = "krmfn.dev/step"
STEP_INDEX = "krmfn.dev/step-index"
STEP_TIMEOUT = "krmfn.dev/step-timeout"
WAIT = "krmfn.dev/wait"
STEP_ANNOTATIONS = (STEP, STEP_INDEX, STEP_TIMEOUT, WAIT)
UNSTEPPED = "default"


@dataclass(frozen=True)
class Rules:
    whole_index: bool
    """``krmfn.dev/step-index`` must be digits only. Otherwise anything ``int()`` reads is an index: a
    sign, surrounding spaces, ``1_0``. A negative index sorts before the unindexed step, except -1,
    which ties with it (the one met first in the stream goes first)."""
    name_unstepped: bool
    """The unindexed objects' step takes a ``krmfn.dev/step`` name like any other; otherwise it is
    always ``default``."""
    strict_names: bool
    """Two ``krmfn.dev/step`` names in one step, or one name on two steps, are errors. Otherwise the
    alphabetically first name of a step wins and two steps may share a name."""
    label: str
    """Written before an annotation key in error messages."""
    quote_text: bool
    """Error messages quote a bad value as text (``'0'``); otherwise as loaded (``0`` for a YAML int)."""

    def show(self, raw: Any) -> str:
        return repr(str(raw)) if self.quote_text else repr(raw)


# The two readings as each command shipped them; aligning them would change what one command accepts
# or prints, so it is a decision of its own, not a refactoring.
RUNNER = Rules(whole_index=False, name_unstepped=True, strict_names=False, label="", quote_text=False)
EXPORT = Rules(
    whole_index=True, name_unstepped=False, strict_names=True, label="annotation ", quote_text=True
)


@dataclass
class Step:
    index: int | None
    """The ``krmfn.dev/step-index`` value; None for the objects that have none."""
    name: str
    timeout: str | None
    """The longest ``krmfn.dev/step-timeout`` of the step as written (a Go duration); None if absent."""
    items: list[Obj] = field(default_factory=list)

    @property
    def timeout_seconds(self) -> float | None:
        return None if self.timeout is None else parse_duration(self.timeout) / SECOND


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


def group(
    objects: Iterable[Obj],
    rules: Rules,
    *,
    who: Callable[[Obj], str] = describe,
    error: type[KrmfnError] = InputError,
    order: Callable[[Obj], Any] | None = None,
) -> Steps:
    """``objects`` in their steps; the items are the objects themselves, not copies.

    ``objects`` is read one at a time, so a generator that checks each object (duplicates, say) reports
    its errors in stream order, interleaved with the index errors raised here. ``who`` names an object
    in messages, ``error`` is the class raised. ``order`` sorts each step's items (stable; stream order
    without it) before names and timeouts are read, so it also decides which bad timeout is reported.
    """
    by_index: dict[int | None, list[Obj]] = {}
    for obj in objects:
        by_index.setdefault(_index(obj, rules, who, error), []).append(obj)
    steps = []
    for index, items in sorted(by_index.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        if order is not None:
            items.sort(key=order)
        name = _name(items, index, rules, error)
        steps.append(Step(index, name, _timeout(items, rules, who, error), items))
    if rules.strict_names:
        _check_unique_names(steps, error)
    wait = bool(steps) and any(str(annotations_of(obj).get(WAIT, "")) == "true" for obj in steps[-1].items)
    return Steps(steps, wait)


def _index(obj: Obj, rules: Rules, who: Callable[[Obj], str], error: type[KrmfnError]) -> int | None:
    raw = annotations_of(obj).get(STEP_INDEX)
    if raw is None:
        return None
    text = str(raw)
    if rules.whole_index:
        if text.isdigit():
            return int(text)
    else:
        try:
            return int(text)
        except ValueError:
            pass
    number = "a whole number" if rules.whole_index else "an integer"
    raise error(f"{who(obj)}: {rules.label}{STEP_INDEX} must be {number}, got {rules.show(raw)}")


def _name(items: list[Obj], index: int | None, rules: Rules, error: type[KrmfnError]) -> str:
    if index is None and not rules.name_unstepped:
        return UNSTEPPED
    names = sorted({str(annotations_of(obj)[STEP]) for obj in items if annotations_of(obj).get(STEP)})
    if rules.strict_names and len(names) > 1:
        raise error(
            f"step index {index} has more than one {STEP} name ({', '.join(names)}); "
            "re-run set-steps on the whole stream"
        )
    if names:
        return names[0]
    return UNSTEPPED if index is None else f"step-{index}"


def _timeout(
    items: list[Obj], rules: Rules, who: Callable[[Obj], str], error: type[KrmfnError]
) -> str | None:
    longest: tuple[int, str] | None = None
    for obj in items:
        raw = annotations_of(obj).get(STEP_TIMEOUT)
        if raw is None:
            continue
        text = str(raw)
        try:
            nanos = parse_duration(text)
        except ValueError as err:
            raise error(f"{who(obj)}: {rules.label}{STEP_TIMEOUT}: {err}") from None
        if nanos <= 0:
            raise error(f"{who(obj)}: {rules.label}{STEP_TIMEOUT} must be positive, got {rules.show(raw)}")
        if longest is None or nanos > longest[0]:
            longest = (nanos, text)
    return None if longest is None else longest[1]


def _check_unique_names(steps: list[Step], error: type[KrmfnError]) -> None:
    first_index: dict[str, int | None] = {}
    for step in steps:
        if step.name in first_index:
            where = ", ".join(
                "no step-index" if i is None else f"step-index {i}"
                for i in (first_index[step.name], step.index)
            )
            raise error(f"two steps are named {step.name!r} ({where}); step names must be unique")
        first_index[step.name] = step.index
