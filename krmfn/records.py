"""Value classes for the records every function's start creates, without ``dataclasses``.

``@dataclass`` writes each class's methods as source and compiles it when the module is imported: 2-3
million instructions a class, about 0.5 ms (a frozen one twice a plain one), and a function's path
defined over a dozen of them before doing any work. The records on that path subclass ``Record``
instead and write their own ``__init__``; ``__repr__`` and ``__eq__`` come from ``_fields`` as
dataclass made them (``FrozenRecord`` adds ``__hash__``, for the ones that were frozen). Config classes
stay dataclasses: krmfn.sdk.config reads their fields.
"""

from __future__ import annotations

from functools import total_ordering
from typing import ClassVar


class Record:  # noqa: PLW1641  # unhashable on purpose: the mutable records
    """``__repr__`` and ``__eq__`` over ``_fields``, in dataclass's form; unhashable (defining ``__eq__``
    unsets ``__hash__``), as a mutable dataclass is."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()


class FrozenRecord(Record):
    """A ``Record`` hashed by its fields, as a frozen dataclass is (not enforced: do not assign)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._values())


@total_ordering
class OrderedRecord(FrozenRecord):
    """A ``FrozenRecord`` ordered by its fields, as ``@dataclass(order=True)`` orders."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() < other._values()
