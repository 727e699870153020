"""The bounds every value an expression builds is held to, and the render's budget of work and output.

The ground under the engine (engine.py) and its filters (filters.py), which both charge and check
through here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from krmfn.errors import KrmfnError
from krmfn.limits import ENV, Limits

MAX_STRING = 256 * 1024
"""The largest value an expression may build or read, in characters of its text (JSON for collections,
counted with repeated references expanded); every operator and filter checks it before it builds."""
MAX_DEPTH = 50
"""How deeply a value an expression builds may nest (the resource it lands in has its own depth)."""

OPERATION_STEPS = 1000
"""Work charged for each operator or filter, whatever it builds (about a microsecond each)."""
COMPILE_STEPS = 8000
"""Work charged per character of an expression compiled (Jinja compiles to Python: ~8 µs a character)."""


class BudgetExceeded(KrmfnError):
    """A render's expressions built or worked past its budget: the render stops there. Not a
    RenderError, so no expression's own error handling turns it into one result per expression."""


@dataclass
class Budget:
    """What one render may build: ``output`` characters into the manifests, ``work`` steps in all."""

    output_limit: int
    work_limit: int
    output: int = 0
    work: int = 0

    def built(self, size: int) -> None:
        self.work += size + OPERATION_STEPS
        if self.work > self.work_limit:
            raise BudgetExceeded(
                f"the render's expressions take more than {self.work_limit} steps of work in total "
                f"({Limits.RENDER_STEPS_PER_BYTE} per character of {ENV['max_render_bytes']})"
            )

    def compiled(self, size: int) -> None:
        self.built(size * COMPILE_STEPS)

    def emitted(self, size: int) -> None:
        self.output += size
        if self.output > self.output_limit:
            raise BudgetExceeded(
                f"the render's expressions build more than {self.output_limit} characters in total "
                f"({ENV['max_render_bytes']})"
            )


BUDGET: ContextVar[Budget | None] = ContextVar("render_budget", default=None)


@contextmanager
def budget(limits: Limits) -> Iterator[Budget]:
    """The budget of the render in progress, or a new one for a render that starts here."""
    current = BUDGET.get()
    if current is not None:
        yield current
        return
    opened = Budget(limits.max_render_bytes, limits.max_render_bytes * Limits.RENDER_STEPS_PER_BYTE)
    token = BUDGET.set(opened)
    try:
        yield opened
    finally:
        BUDGET.reset(token)


def charge(steps: int) -> None:
    """Charge ``steps`` of work to the render in progress (a filter slower than a character a step)."""
    spent = BUDGET.get()
    if spent is not None:
        spent.built(steps)


class RenderError(Exception):
    """An expression that cannot be rendered. ``str()`` names the expression and the reason; ``reason``
    may quote tokens of the expression (a filter name, an attribute); ``secret_reason`` quotes nothing
    from it or from the inputs, for an expression that is a Secret's value."""

    def __init__(self, reason: str, expression: str = "", secret_reason: str = "") -> None:
        super().__init__(f"{expression}: {reason}" if expression else reason)
        self.reason = reason
        self.expression = expression
        self.secret_reason = secret_reason or reason


def native(value: Any, source: str) -> Any:
    if isinstance(value, str):
        return str(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): native(v, source) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [native(v, source) for v in value]
    raise RenderError(f"gives a {type(value).__name__}, not data", source)


def to_text(value: Any, source: str = "") -> str:
    """How a value reads inside a longer string: scalars as YAML writes them, collections as JSON.
    Refuses a value over MAX_STRING before writing it (every filter reads its input through here)."""
    check_defined(value)
    if isinstance(value, str):
        check_room(len(value))
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return str(value)
    import json

    check_room(size_of(value))
    try:
        return json.dumps(native(value, source), sort_keys=True, separators=(",", ":"))
    except RenderError:
        raise RenderError(f"gives a {type(value).__name__}, not data") from None


def size_of(value: Any, limit: int = MAX_STRING) -> int:
    """The characters of ``value`` written out (JSON for collections, one more per separator), a
    reference repeated in a list counted each time: what writing it would build. Counting stops once
    past ``limit``, so measuring costs at most ``limit`` steps whatever the value. Refuses nesting
    deeper than MAX_DEPTH."""
    total = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and total <= limit:
        item, depth = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 2  # a decimal digit holds over 3 bits
        elif isinstance(item, (Mapping, list, tuple)):
            if depth >= MAX_DEPTH:
                raise RenderError(f"a value nesting deeper than {MAX_DEPTH} levels")
            entries = list(item.items()) if isinstance(item, Mapping) else item
            total += 2 + len(entries)
            for entry in entries:
                if isinstance(entry, tuple) and isinstance(item, Mapping):
                    stack.extend((part, depth + 1) for part in entry)
                else:
                    stack.append((entry, depth + 1))
                if len(stack) > limit:
                    return limit + 1
        else:
            total += 24  # floats and anything else: short
    return total


def check_room(size: int, spend: bool = True) -> None:
    """Refuse before building a result that would be over the limit; charge it to the render."""
    if size > MAX_STRING:
        raise RenderError(f"a value of over {MAX_STRING} characters")
    if spend:
        charge(size)


def check_defined(value: Any) -> None:
    from jinja2 import Undefined

    if isinstance(value, Undefined):
        value._fail_with_undefined_error()
