"""The fast path: libyaml's event stream straight into dicts and lists (fast_dump.py writes them back).

PyYAML's own loader composes a node graph and walks it with generators, and its dumper represents and
serializes through two more layers; for a 3,000-item ResourceList that was 1.6 s of a 1.8 s load and
most of a 0.9 s dump, while libyaml itself needs 0.13 s. One tight loop per direction does the same
work in a fraction of the time. Semantics are PyYAML SafeLoader/SafeDumper's with the YAML 1.2 core
schema described in ``krmfn.yaml.io``; tests/test_sdk_fastpath.py holds them equal to PyYAML's.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.cyaml import CParser  # type: ignore[attr-defined]
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from krmfn.errors import DuplicateKeyError, LimitExceededError

TAG = "tag:yaml.org,2002:"
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL)$")
# go-yaml v3 (kustomize, kpt) strips underscores and parses with Go's base prefixes, 0755 included.
INT = re.compile(r"^(?:[-+]?[0-9][0-9_]*|[-+]?0o[0-7_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+)$")
FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_BOOL_WORDS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}


INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1
"""go-yaml v3 reads an int as int64, else uint64; krmfn refuses what neither holds (see IntRangeError)."""
INT_RANGE_PROBLEM = (
    "an integer out of the 64-bit range (kpt and kustomize read it as a float or a string; quote it)"
)


class IntRangeError(ValueError):
    """An int outside go-yaml's int64/uint64. Python would read any length (4,000 digits and more, then
    fail to print it past 4,300), where go-yaml falls back to a float or a string: refused at parse time."""


def go_int(text: str) -> int:
    """An int as go-yaml v3 and Kubernetes read it: underscores dropped, 0x/0o/0b and leading-0 octal.
    Raises IntRangeError outside ``INT_MIN..INT_MAX`` (checked on the digits, before converting)."""
    text = text.replace("_", "")
    sign = -1 if text.startswith("-") else 1
    digits, base = text.lstrip("+-"), 10
    for prefix, prefix_base in (("0o", 8), ("0x", 16), ("0b", 2)):
        if digits.startswith(prefix):
            digits, base = digits[2:], prefix_base
            break
    else:
        if len(digits) > 1 and digits.startswith("0") and set(digits) <= set("01234567"):
            base = 8
    significant = digits.lstrip("0")
    if len(significant) > 64:  # 64 binary digits is the longest in range: no need to convert
        raise IntRangeError(INT_RANGE_PROBLEM)
    value = sign * int(significant or digits, base)
    if not INT_MIN <= value <= INT_MAX:
        raise IntRangeError(INT_RANGE_PROBLEM)
    return value


def _float(text: str) -> float:
    lowered = text.lower().replace("_", "")
    if lowered.endswith(".inf"):
        return -math.inf if lowered.startswith("-") else math.inf
    if lowered == ".nan":
        return math.nan
    return float(lowered)


def resolve_plain(text: str) -> Any:
    """The value of an untagged plain scalar (YAML 1.2 core schema)."""
    if not text:
        return None
    first = text[0]
    if first in "~nN" and _NULL.match(text):
        return None
    if first in "tTfF" and _BOOL.match(text):
        return first in "tT"
    if first in "-+0123456789.":
        if INT.match(text):
            return go_int(text)
        if FLOAT.match(text):
            return _float(text)
    return text


def event_problem(message: str, event: Any) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, message, event.start_mark)


def _tagged(tag: str, text: str, event: Any) -> Any:
    if not tag.startswith(TAG):
        if tag == "!":
            return text
        raise event_problem(f"could not determine a constructor for the tag {tag!r}", event)
    name = tag[len(TAG) :]
    try:
        if name in ("str", "timestamp"):  # Kubernetes has no timestamp type: keep the text
            return text
        if name == "int":
            return go_int(text)
        if name == "float":
            return _float(text)
        if name == "bool":
            return _BOOL_WORDS[text.lower()]
        if name == "null":
            return None
        if name == "binary":
            return base64.decodebytes(text.encode("ascii"))
    except IntRangeError:
        raise event_problem(INT_RANGE_PROBLEM, event) from None
    except (ValueError, KeyError, UnicodeEncodeError, binascii.Error):
        # The tag and the position, never the value: it may be a Secret's.
        raise event_problem(invalid_tag_problem(name), event) from None
    raise event_problem(f"could not determine a constructor for the tag {tag!r}", event)


def invalid_tag_problem(name: str) -> str:
    """The message for a value its explicit tag cannot hold, on both YAML paths."""
    return f"the value is not a valid !!{name}"


def scalar_value(event: ScalarEvent) -> Any:
    tag = event.tag
    if tag is None:  # libyaml marks an untagged plain scalar as implicit[0]; quoted ones as implicit[1]
        if not event.implicit[0]:
            return event.value
        try:
            return resolve_plain(event.value)
        except IntRangeError:
            raise event_problem(INT_RANGE_PROBLEM, event) from None
    return _tagged(tag, event.value, event)


class MappingFrame:
    """A mapping under construction: its dict, the pending key and the merges to apply at its end."""

    __slots__ = ("key", "merges", "target", "want_key")

    def __init__(self, target: dict[Any, Any]) -> None:
        self.target = target
        self.want_key = True
        self.key: Any = None
        self.merges: list[tuple[Any, Any]] | None = None
        """(value, event) of each ``<<``; a merged list is only complete at the mapping's end."""

    def finish(self) -> None:
        """Apply the merges: merged keys first, explicit keys override them (PyYAML's order)."""
        if not self.merges:
            return
        merged = [pair for value, event in self.merges for pair in _merge_pairs(value, event)]
        explicit = list(self.target.items())
        self.target.clear()
        self.target.update(merged)
        self.target.update(explicit)


_MERGE = object()

DEFAULT_MAX_DEPTH = 200
"""The depth a reader allows when its caller names none: the deepest KRMFN_MAX_DEPTH may be set."""


def too_deep(max_depth: int) -> LimitExceededError:
    return LimitExceededError(f"input nests deeper than {max_depth} levels (KRMFN_MAX_DEPTH)")


class DepthBound:
    """Nesting bounded while a document is built, before anything walks it (every walker of a value,
    the limit checks' own included, may recurse): a collection opened past the limit, or an alias whose
    anchored collection would reach past it where the alias sits, is refused on the spot. An alias to a
    collection still being built is a recursive alias, refused too. The depth counted is
    ``KRMFN_MAX_DEPTH``'s: the document's root is at depth 0, so ``max_depth + 1`` collections may be
    open at once (an alias that is a merge key's value is counted one level deeper than its keys land).
    Heights of anchored values are measured once, without recursion, and remembered by identity."""

    __slots__ = ("heights", "limit", "max_depth", "open")

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.limit = max_depth + 1
        self.heights: dict[int, int] = {}
        self.open: set[int] = set()
        """Anchored collections not finished yet: an alias to one is recursive."""

    def reset(self) -> None:
        self.heights.clear()
        self.open.clear()

    def alias(self, value: Any, depth: int) -> None:
        """An alias to ``value`` placed with ``depth`` collections open around it."""
        if type(value) is not dict and type(value) is not list:
            return
        height = self.heights.get(id(value))
        if height is None:
            if id(value) in self.open:
                raise LimitExceededError("input contains a recursive YAML alias")
            height = self.height(value)
        if depth + height > self.limit:
            raise too_deep(self.max_depth)

    def height(self, value: Any) -> int:
        """Collections on the longest path down from ``value`` (a finished collection), itself included."""
        memo = self.heights
        stack: list[tuple[Any, bool]] = [(value, False)]
        while stack:
            item, done = stack.pop()
            if id(item) in memo:
                continue
            children = [c for c in (item.values() if type(item) is dict else item) if type(c) in _COLLECTIONS]
            if done:
                memo[id(item)] = 1 + max((memo[id(c)] for c in children), default=0)
            else:
                stack.append((item, True))
                stack.extend((c, False) for c in children if id(c) not in memo)
        return memo[id(value)]


_COLLECTIONS = (dict, list)


def _documents(parser: Any, max_depth: int = DEFAULT_MAX_DEPTH) -> Iterator[Any]:  # noqa: PLR0915  # the hot loop
    """Every document of the stream, built from events (aliases share objects, as PyYAML's do), its
    nesting bounded as it is built (``DepthBound``)."""
    anchors: dict[str, Any] = {}
    stack: list[Any] = []  # MappingFrame frames and lists
    root: list[Any] = []
    bound = DepthBound(max_depth)
    limit, building = bound.limit, bound.open
    while parser.check_event():
        event = parser.get_event()
        kind = type(event)
        if kind is ScalarEvent:
            value = scalar_value(event)
            if event.anchor is not None:
                anchors[event.anchor] = value
        elif kind is MappingStartEvent:
            value = {}
            if event.anchor is not None:
                anchors[event.anchor] = value
                building.add(id(value))
            add_value(stack, root, value, event)
            stack.append(MappingFrame(value))
            if len(stack) > limit:
                raise too_deep(max_depth)
            continue
        elif kind is SequenceStartEvent:
            value = []
            if event.anchor is not None:
                anchors[event.anchor] = value
                building.add(id(value))
            add_value(stack, root, value, event)
            stack.append(value)
            if len(stack) > limit:
                raise too_deep(max_depth)
            continue
        elif kind is MappingEndEvent:
            frame = stack.pop()
            frame.finish()
            if building:
                building.discard(id(frame.target))
            continue
        elif kind is SequenceEndEvent:
            done = stack.pop()
            if building:
                building.discard(id(done))
            continue
        elif kind is AliasEvent:
            if event.anchor not in anchors:
                raise event_problem(f"found undefined alias {event.anchor!r}", event)
            value = anchors[event.anchor]
            bound.alias(value, len(stack))
        elif kind is DocumentStartEvent:
            anchors.clear()
            root.clear()
            bound.reset()
            continue
        elif kind is DocumentEndEvent:
            yield root[0] if root else None
            continue
        else:  # StreamStart/StreamEnd
            continue
        add_value(stack, root, value, event)


def add_value(stack: list[Any], root: list[Any], value: Any, event: Any) -> None:
    if not stack:
        root.append(value)
        return
    frame = stack[-1]
    if type(frame) is list:
        frame.append(value)
        return
    if frame.want_key:
        if type(event) is ScalarEvent:
            if event.value == "<<" and event.implicit[0] and event.tag in (None, TAG + "merge"):
                frame.key = _MERGE
            else:
                if value in frame.target:  # merged keys arrive at the mapping's end: only explicit ones here
                    mark = event.start_mark
                    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
                    raise DuplicateKeyError(f"duplicate key {event.value!r}{where}")
                frame.key = value
        elif isinstance(value, (dict, list)):
            raise event_problem("found unhashable key", event)
        else:
            frame.key = value
        frame.want_key = False
        return
    frame.want_key = True
    if frame.key is _MERGE:
        frame.merges = frame.merges or []
        frame.merges.append((value, event))
    else:
        frame.target[frame.key] = value


def _merge_pairs(value: Any, event: Any) -> list[tuple[Any, Any]]:
    # Earlier mappings of a merge list win, and keys keep the order they first appear in (as PyYAML).
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        merged: dict[Any, Any] = {}
        for source in value:
            for key, item in source.items():
                merged.setdefault(key, item)
        return list(merged.items())
    raise event_problem("expected a mapping or list of mappings for merging", event)


def load_single(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    parser = CParser(text)
    try:
        docs = _documents(parser, max_depth)
        first = next(docs, None)
        for _ in docs:
            raise yaml.composer.ComposerError(
                "expected a single document in the stream", None, "but found another document", None
            )
        return first
    finally:
        parser.dispose()


def load_all(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Iterator[Any]:
    parser = CParser(text)
    try:
        yield from _documents(parser, max_depth)
    finally:
        parser.dispose()
