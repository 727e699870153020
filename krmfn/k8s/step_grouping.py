"""The steps of a rendered stream, from the annotations set-steps writes. Pure; one implementation for
``krmfn apply``/``krmfn plan`` (krmfn/runner/plan.py) and ``krmfn export`` (krmfn/export/steps.py), so
both run the same order.

    group(objects, rules) -> Steps     objects in steps, steps in krmfn.dev/step-index order

The rules: ``krmfn.dev/step-index`` is a whole number (digits only, as set-steps writes it); objects
without one form a step that goes first. A step's name is its ``krmfn.dev/step`` (else ``step-N``, or
``default`` for the unindexed objects); one step has one name and two steps never share one, since a
stream that breaks either was not rendered by one set-steps run. Its timeout is the longest
``krmfn.dev/step-timeout``, which must be positive; the final step is health-checked only when one of
its objects says ``krmfn.dev/wait: "true"``.

Objects annotated ``krmfn.dev/on-failure: "true"`` (set-steps' ``onFailure:`` steps) are grouped the same
way into ``Steps.on_failure``, apart from the steps: ``krmfn apply`` applies them only when a step fails.
One name is one step across both lists.

Objects annotated ``krmfn.dev/on-delete: "true"`` (set-steps' ``onDelete:`` steps) are grouped likewise into
``Steps.on_delete``: ``krmfn apply`` never applies them; ``krmfn delete -f/-k`` applies them, in order and
each waited for, before the teardown starts (Helm's pre-delete hooks, Argo CD's PreDelete). One name is
one step across the three lists; an object in both an on-failure and an on-delete step is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from krmfn.duration import SECOND, parse_duration
from krmfn.errors import InputError, KrmfnError
from krmfn.k8s.annotations import ON_DELETE, ON_FAILURE, ON_TIMEOUT, STEP, STEP_INDEX, STEP_TIMEOUT, WAIT
from krmfn.k8s.kobj import Obj, annotations_of, ref_of
from krmfn.numbers import whole
from krmfn.terminal import cut

ON_TIMEOUT_VALUES = ("fail", "continue")
STEP_ANNOTATIONS = (STEP, STEP_INDEX, STEP_TIMEOUT, WAIT, ON_FAILURE, ON_DELETE)
MAX_STEP_INDEX = 2**31 - 1
"""The highest ``krmfn.dev/step-index`` (Argo CD reads the sync wave written from it as a Go int)."""
SHOWN = 80
"""Characters of an annotation's value quoted in an error (anyone may write 5,000 digits there)."""
UNSTEPPED = "default"
UNSTEPPED_ON_FAILURE = "on-failure"
UNSTEPPED_ON_DELETE = "on-delete"


@dataclass
class Step:
    index: int | None
    """The ``krmfn.dev/step-index`` value; None for the objects that have none."""
    name: str
    timeout: str | None
    """The longest ``krmfn.dev/step-timeout`` of the step as written (a Go duration); None if absent."""
    items: list[Obj] = field(default_factory=list)
    on_timeout: str = "fail"
    """``continue`` when an object of the step says so (``krmfn.dev/on-timeout``), else ``fail``."""

    @property
    def timeout_seconds(self) -> float | None:
        return None if self.timeout is None else parse_duration(self.timeout) / SECOND


@dataclass
class Steps:
    steps: list[Step]
    wait: bool
    """Whether the final step is health-checked too (earlier steps always are)."""
    on_failure: list[Step] = field(default_factory=list)
    """The steps applied, in order and each waited for, only when a step fails."""
    on_delete: list[Step] = field(default_factory=list)
    """The steps ``krmfn delete`` applies, in order and each waited for, before the teardown; never
    applied by ``krmfn apply``."""

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
    failing: dict[int | None, list[Obj]] = {}
    deleting: dict[int | None, list[Obj]] = {}
    for obj in objects:
        on_failure, on_delete = is_on_failure(obj, who, error), is_on_delete(obj, who, error)
        if on_failure and on_delete:
            raise error(f"{who(obj)}: annotations {ON_FAILURE} and {ON_DELETE} are both \"true\"; an object "
                        "is in one kind of step; re-run set-steps on the whole stream")  # fmt: skip
        where = failing if on_failure else deleting if on_delete else by_index
        where.setdefault(_index(obj, who, error), []).append(obj)
    steps = _steps(by_index, order, who, error, UNSTEPPED)
    on_failure_steps = _steps(failing, order, who, error, UNSTEPPED_ON_FAILURE)
    on_delete_steps = _steps(deleting, order, who, error, UNSTEPPED_ON_DELETE)
    _check_unique_names(steps + on_failure_steps + on_delete_steps, error)
    wait = bool(steps) and any(str(annotations_of(obj).get(WAIT, "")) == "true" for obj in steps[-1].items)
    return Steps(steps, wait, on_failure_steps, on_delete_steps)


def _steps(
    by_index: dict[int | None, list[Obj]],
    order: Callable[[Obj], Any] | None,
    who: Callable[[Obj], str],
    error: type[KrmfnError],
    unstepped: str,
) -> list[Step]:
    steps = []
    for index, items in sorted(by_index.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        if order is not None:
            items.sort(key=order)
        steps.append(Step(index, _name(items, index, error, unstepped), _timeout(items, who, error), items,
                          _on_timeout(items, who, error)))  # fmt: skip
    return steps


def is_on_failure(
    obj: Obj, who: Callable[[Obj], str] = describe, error: type[KrmfnError] = InputError
) -> bool:
    """Whether ``obj`` belongs to an on-failure step: ``krmfn.dev/on-failure: "true"``; any other value
    but ``"false"`` is an error (a typo would silently apply a failure step on every run)."""
    raw = annotations_of(obj).get(ON_FAILURE)
    if raw is None or str(raw) == "false":
        return False
    if str(raw) == "true":
        return True
    raise error(f'{who(obj)}: annotation {ON_FAILURE} must be "true" or "false", got {str(raw)!r}')


def is_on_delete(
    obj: Obj, who: Callable[[Obj], str] = describe, error: type[KrmfnError] = InputError
) -> bool:
    """Whether ``obj`` belongs to an on-delete step: ``krmfn.dev/on-delete: "true"``; any other value but
    ``"false"`` is an error (a typo would apply a teardown Job, a drain, on every apply)."""
    raw = annotations_of(obj).get(ON_DELETE)
    if raw is None or str(raw) == "false":
        return False
    if str(raw) == "true":
        return True
    raise error(f'{who(obj)}: annotation {ON_DELETE} must be "true" or "false", got {cut(str(raw), SHOWN)!r}')


def index_of(obj: Obj) -> int | None:
    """The object's ``krmfn.dev/step-index``; None when it has none or it is not a whole number from 0 to
    ``MAX_STEP_INDEX`` (the plan refuses such an object; prune orders a member with one as unindexed)."""
    return whole(str(annotations_of(obj).get(STEP_INDEX, "")), MAX_STEP_INDEX)


def _index(obj: Obj, who: Callable[[Obj], str], error: type[KrmfnError]) -> int | None:
    index, raw = index_of(obj), annotations_of(obj).get(STEP_INDEX)
    if index is None and raw is not None:
        raise error(
            f"{who(obj)}: annotation {STEP_INDEX} must be a whole number from 0 to {MAX_STEP_INDEX}, got "
            f"{cut(str(raw), SHOWN)!r}"
        )
    return index


def _name(items: list[Obj], index: int | None, error: type[KrmfnError], unstepped: str) -> str:
    names = sorted({str(annotations_of(obj)[STEP]) for obj in items if annotations_of(obj).get(STEP)})
    if len(names) > 1:
        where = "the objects without a step-index" if index is None else f"the objects of step-index {index}"
        raise error(
            f"{where} carry more than one {STEP} name ({', '.join(names)}); "
            "re-run set-steps on the whole stream"
        )
    if names:
        return names[0]
    return unstepped if index is None else f"step-{index}"


def _on_timeout(items: list[Obj], who: Callable[[Obj], str], error: type[KrmfnError]) -> str:
    found = "fail"
    for obj in items:
        raw = annotations_of(obj).get(ON_TIMEOUT)
        if raw is None:
            continue
        if str(raw) not in ON_TIMEOUT_VALUES:
            raise error(f'{who(obj)}: annotation {ON_TIMEOUT} must be "fail" or "continue", got '
                        f"{cut(str(raw), SHOWN)!r}")  # fmt: skip
        if str(raw) == "continue":
            found = "continue"
    return found


def _timeout(items: list[Obj], who: Callable[[Obj], str], error: type[KrmfnError]) -> str | None:
    longest: tuple[int, str] | None = None
    for obj in items:
        raw = annotations_of(obj).get(STEP_TIMEOUT)
        if raw is None:
            continue
        text = str(raw)
        try:
            nanos = parse_duration(text)
        except ValueError as err:
            raise error(f"{who(obj)}: annotation {STEP_TIMEOUT}: {cut(str(err), 2 * SHOWN)}") from None
        if nanos <= 0:
            raise error(f"{who(obj)}: annotation {STEP_TIMEOUT} must be positive, got {cut(text, SHOWN)!r}")
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
