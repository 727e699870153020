"""Values compared as the splice compares them (``same``: equal and of the same types all the way down),
and a sequence's original items matched with its new ones (``align``), so a function that inserts or
removes items keeps the others' text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from krmfn.yaml.edit.tree import ALIAS, Nodes


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (``1``, ``1.0`` and ``True`` differ here)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(k in b and same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:  # noqa: PLR0124  # NaN
        return bool(b != b)  # noqa: PLR0124
    return bool(a == b)


def fingerprint(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return ("object", id(value))
    try:
        hash(value)
    except TypeError:
        return ("unhashable", id(value))
    return (type(value), value)


def runs(numbers: list[int]) -> Iterator[tuple[int, int]]:
    """Consecutive stretches of sorted numbers as (first, last)."""
    if not numbers:
        return
    first = last = numbers[0]
    for number in numbers[1:]:
        if number != last + 1:
            yield first, last
            first = number
        last = number
    yield first, last


def align(
    n: Nodes, items: list[int], v: list[Any]
) -> tuple[list[tuple[int, Any]], list[int], dict[int, list[Any]]]:
    """Match original items with new ones: identical objects first (a function that removes or
    inserts items keeps the others), then equal scalars; the rest pair up by position."""
    from difflib import SequenceMatcher  # only for lists that changed length

    old = [fingerprint(n.value[n.value[x]] if n.kind[x] == ALIAS else n.value[x]) for x in items]
    new = [fingerprint(x) for x in v]
    pairs: list[tuple[int, Any]] = []
    removed: list[int] = []
    added: dict[int, list[Any]] = {}
    for tag, a0, a1, b0, b1 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        common = min(a1 - a0, b1 - b0) if tag == "replace" else (a1 - a0 if tag == "equal" else 0)
        pairs.extend((items[a0 + k], v[b0 + k]) for k in range(common))
        removed.extend(range(a0 + common, a1))
        if b1 > b0 + common:
            added.setdefault(a0 + common - 1 if a1 == a0 + common else a1 - 1, []).extend(v[b0 + common : b1])
    return pairs, removed, added
