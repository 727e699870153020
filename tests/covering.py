"""Covering arrays for test matrices: every pair of values of any two dimensions in at least one row.

``pairwise(choices, valid)`` builds one greedily (AETG): each new row starts from a pair not yet
covered and takes, dimension by dimension, the value that covers most uncovered pairs. ``valid`` judges
partial rows too (a missing dimension is not a reason to refuse), so the constraints it expresses are
between the dimensions a row already has: a pair it refuses is one no row may hold. Deterministic: the
same choices give the same rows.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any

Row = dict[str, Any]
Pair = tuple[tuple[str, Any], tuple[str, Any]]
Valid = Callable[[Row], bool]


def product(choices: dict[str, tuple[Any, ...]], valid: Valid) -> list[Row]:
    """Every valid row: the full matrix."""
    rows = (dict(zip(choices, values, strict=True)) for values in itertools.product(*choices.values()))
    return [row for row in rows if valid(row)]


def pairs_of(row: Row) -> Iterator[Pair]:
    for a, b in itertools.combinations(sorted(row), 2):
        yield (a, row[a]), (b, row[b])


def wanted_pairs(choices: dict[str, tuple[Any, ...]], valid: Valid) -> set[Pair]:
    return {
        ((a, va), (b, vb))
        for a, b in itertools.combinations(sorted(choices), 2)
        for va in choices[a]
        for vb in choices[b]
        if valid({a: va, b: vb})
    }


def pairwise(
    choices: dict[str, tuple[Any, ...]], valid: Valid, seed: int = 0, candidates: int = 50
) -> list[Row]:
    """A small set of valid rows covering every pair ``valid`` allows."""
    uncovered = wanted_pairs(choices, valid)
    rnd = random.Random(seed)
    rows: list[Row] = []
    while uncovered:
        best: Row = {}
        best_gain = -1
        for _ in range(candidates):
            (a, va), (b, vb) = rnd.choice(sorted(uncovered, key=repr))
            row: Row = {a: va, b: vb}
            order = [n for n in choices if n not in row]
            rnd.shuffle(order)
            for name in order:
                scored = [
                    (sum(_pair(name, value, k, v) in uncovered for k, v in row.items()), rnd.random(), value)
                    for value in choices[name]
                    if valid({**row, name: value})
                ]
                row[name] = max(scored)[2]
            gain = sum(pair in uncovered for pair in pairs_of(row))
            if gain > best_gain:
                best, best_gain = row, gain
        assert valid(best)
        rows.append({n: best[n] for n in choices})
        uncovered -= set(pairs_of(best))
    return rows


def _pair(a: str, va: Any, b: str, vb: Any) -> Pair:
    return ((a, va), (b, vb)) if a < b else ((b, vb), (a, va))


def uncovered_pairs(rows: list[Row], choices: dict[str, tuple[Any, ...]], valid: Valid) -> set[Pair]:
    """The pairs ``valid`` allows that none of ``rows`` holds (empty for a covering array)."""
    return wanted_pairs(choices, valid) - {pair for row in rows for pair in pairs_of(row)}
