"""A field the API server would refuse (``Problem``), in its words: the phrasings its validation shares
(an unsupported value, a number out of bounds), for api.py and job_policies.py alike."""

from __future__ import annotations

from typing import Any

from krmfn.records import FrozenRecord


class Problem(FrozenRecord):
    """A field the API server would refuse, in its words."""

    __slots__ = _fields = ("field", "message", "value")

    def __init__(self, field: str, message: str, value: Any = None) -> None:
        self.field = field
        self.message = message
        self.value = value


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def quoted(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def supported(path: str, value: Any, allowed: tuple[str, ...]) -> Problem:
    listed = ", ".join(f'"{a}"' for a in allowed)
    return Problem(path, f"Unsupported value: {quoted(value)}: supported values: {listed}", value)


def at_most(path: str, value: int, limit: str) -> Problem:
    """The API server's words for a number above its bound (``limit``: the bound, and when it holds)."""
    return Problem(path, f"Invalid value: {value}: must be less than or equal to {limit}", value)


def at_least_zero(path: str, value: int) -> Problem:
    return Problem(path, f"Invalid value: {value}: must be greater than or equal to 0", value)
