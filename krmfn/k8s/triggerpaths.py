"""The field paths a Job's ``krmfn.dev/hash-from`` may name (``field:<path>``): a small syntax, strictly
checked, because a path that silently matched nothing would freeze the Job's name forever.

    path     = "spec" segment*
    segment  = "." key | "[" index "]" | "[" key "=" value "]"
    key      = a letter or "_", then letters, digits, "_" or "-"  (Kubernetes field names: camelCase)
    index    = a whole number without leading zeros
    value    = letters, digits, ".", "_" or "-"  (a container's, an env var's, a volume's name)

``spec.template.spec.containers[name=migrate].args`` is the ``args`` of the container named ``migrate``,
wherever it sits in the list. Evaluating a path against a Job gives the value found there; a missing
last key gives None (the field is unset: setting it later changes the value), but every step before it
must exist and a ``[key=value]`` must match exactly one element: a typo fails instead of hashing nothing.
"""

from __future__ import annotations

from typing import Any

from krmfn.patterns import Deferred
from krmfn.records import FrozenRecord

MAX_PATH = 256
MAX_SEGMENTS = 24
_SEGMENT = Deferred(
    r"\.(?P<key>[A-Za-z_][A-Za-z0-9_-]{0,62})"
    r"|\[(?P<index>0|[1-9][0-9]{0,5})\]"
    r"|\[(?P<match>[A-Za-z_][A-Za-z0-9_-]{0,62})=(?P<value>[A-Za-z0-9._-]{1,253})\]"
)
SYNTAX = "spec followed by .field, [index] or [field=value] segments"


class PathError(ValueError):
    """A path that does not follow the syntax, or that does not lead anywhere in the Job."""


class Segment(FrozenRecord):
    """One step of a path: a mapping key, a list index, or the one list element whose ``key`` is ``value``."""

    __slots__ = _fields = ("key", "index", "value")

    def __init__(self, key: str = "", index: int | None = None, value: str | None = None) -> None:
        self.key = key
        self.index = index
        self.value = value

    def __str__(self) -> str:
        if self.index is not None:
            return f"[{self.index}]"
        if self.value is not None:
            return f"[{self.key}={self.value}]"
        return f".{self.key}"


def parse_path(text: str) -> tuple[Segment, ...]:
    """The segments after ``spec``; raises PathError naming the first character that does not fit."""
    if len(text) > MAX_PATH:
        raise PathError(f"is longer than {MAX_PATH} characters")
    if not text.startswith("spec") or (len(text) > 4 and text[4] not in ".["):
        raise PathError(f"must start at spec (the Job's spec: {SYNTAX})")
    found: list[Segment] = []
    at = 4
    while at < len(text):
        match = _SEGMENT.match(text, at)
        if match is None:
            raise PathError(
                f"cannot be read at character {at + 1} ({text[at : at + 12]!r}): expected {SYNTAX}"
            )
        if match["key"] is not None:
            found.append(Segment(match["key"]))
        elif match["index"] is not None:
            found.append(Segment(index=int(match["index"])))
        else:
            found.append(Segment(match["match"], value=match["value"]))
        at = match.end()
        if len(found) > MAX_SEGMENTS:
            raise PathError(f"has more than {MAX_SEGMENTS} segments")
    return tuple(found)


def format_path(segments: tuple[Segment, ...]) -> str:
    return "spec" + "".join(str(s) for s in segments)


def evaluate(spec: Any, segments: tuple[Segment, ...]) -> Any:
    """The value at the path inside ``spec`` (plain data), None for an unset last field."""
    node, at = spec, "spec"
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment.index is None and segment.value is None:
            if not isinstance(node, dict):
                raise PathError(f"{at} is not a mapping, so it has no field {segment.key!r}")
            if segment.key not in node:
                if last:
                    return None
                raise PathError(f"{at}{segment} is not in the Job")
            node = node[segment.key]
        elif segment.index is not None:
            if not isinstance(node, list):
                raise PathError(f"{at} is not a list, so it has no element {segment.index}")
            if segment.index >= len(node):
                raise PathError(f"{at} has {len(node)} element(s), not an element {segment.index}")
            node = node[segment.index]
        else:
            if not isinstance(node, list):
                raise PathError(f"{at} is not a list, so {segment} selects nothing")
            chosen = [e for e in node if isinstance(e, dict) and e.get(segment.key) == segment.value]
            if len(chosen) != 1:
                count = "no element" if not chosen else f"{len(chosen)} elements"
                raise PathError(f"{at}{segment} matches {count} (it must match exactly one)")
            node = chosen[0]
        at += str(segment)
    return node
