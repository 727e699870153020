"""The fast path: libyaml's event stream straight into dicts and lists, and back out again.

PyYAML's own loader composes a node graph and walks it with generators, and its dumper represents and
serializes through two more layers; for a 3,000-item ResourceList that was 1.6 s of a 1.8 s load and
most of a 0.9 s dump, while libyaml itself needs 0.13 s. One tight loop per direction does the same
work in a fraction of the time. Semantics are PyYAML SafeLoader/SafeDumper's with the YAML 1.2 core
schema described in ``krmfn.yaml.io``; tests/test_sdk_fastpath.py holds them equal to PyYAML's.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.cyaml import CEmitter, CParser  # type: ignore[attr-defined]
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from krmfn.errors import DuplicateKeyError, LimitExceededError
from krmfn.patterns import deferred

_T = "tag:yaml.org,2002:"
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
    if not tag.startswith(_T):
        if tag == "!":
            return text
        raise event_problem(f"could not determine a constructor for the tag {tag!r}", event)
    name = tag[len(_T) :]
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
            if event.value == "<<" and event.implicit[0] and event.tag in (None, _T + "merge"):
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


# --- dumping -------------------------------------------------------------------------------------


class QuotingResolver(yaml.resolver.Resolver):
    """YAML 1.1 plus 1.2 core: a string either kind of reader would take for something else is quoted."""


for _tag, _regexp, _first in (("int", INT, "-+0123456789"), ("float", FLOAT, "-+0123456789.")):
    QuotingResolver.add_implicit_resolver(_T + _tag, _regexp, list(_first))

_RESOLVER = QuotingResolver()
_FLOAT_REPR = yaml.representer.SafeRepresenter()


class _Unsupported(Exception):
    """A value the event dumper does not handle; the caller falls back to PyYAML's own dumper."""


# go-yaml v2 (kubectl, through sigs.k8s.io/yaml) reads y/Y/n/N as booleans too; PyYAML does not.
# The patterns below serve only strings that start with a digit, a sign or a dot: compiled then.
_GO_WORDS = frozenset({"y", "Y", "n", "N"})
# go-yaml v2 and v3 drop every "_" of a number-like plain scalar, then try Go's ParseInt with base
# prefixes (0x, 0o, 0b in either case; a leading 0 is octal) and a float pattern; a plain scalar that
# starts with a digit or a sign and reads as a date is a timestamp.
_GO_INT = deferred(r"^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|[0-9]+)$")
_GO_FLOAT = deferred(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_GO_TIMESTAMP = deferred(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}.*)?$")
# ruamel's YAML 1.2 numbers: underscores anywhere, also ``+_`` or ``1__`` (which it then fails to
# convert: an error for whoever reads the output with ruamel).
_RUAMEL_INT = deferred(r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$")
_RUAMEL_FLOAT = deferred(
    r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
    r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?)$"
)
_AMBIGUOUS_FIRST = frozenset(QuotingResolver.yaml_implicit_resolvers) | {"y", "Y", "n", "N"}


def _number_like(text: str) -> bool:
    """go-yaml v2/v3 or ruamel would read this plain scalar as a number, a boolean or a timestamp."""
    if text in _GO_WORDS:
        return True
    if text[0] not in "-+.0123456789":
        return False
    digits = text.replace("_", "")
    if _RUAMEL_INT.match(text) or _RUAMEL_FLOAT.match(text):
        return True
    return bool(_GO_INT.match(digits) or _GO_FLOAT.match(digits) or _GO_TIMESTAMP.match(text))


def _plain_ok(text: str) -> bool:
    if text and text[0] not in _AMBIGUOUS_FIRST:  # most strings: no implicit type starts this way
        return True
    if not text or _number_like(text):
        return False
    resolved: str = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return resolved == _T + "str"


def needs_quotes(text: str) -> bool:
    """Whether some reader in the chain would take ``text``, written plain, for something other than
    this string: PyYAML (YAML 1.1: yes/on/off, 0755, 1:20, dates, ``=``, ``<<``), go-yaml v2 as kubectl
    reads it (also y/n, ``0X1F``, ``1e1_0``), go-yaml v3 and ruamel (YAML 1.2: ``0o17``, ``1e3``).
    tests/test_yaml_types.py holds this against all of them, the Go readers built from source."""
    return not _plain_ok(text)


class _Writer:
    """Turns a document into emitter events, each emitted as soon as it is made (a list of them cost
    ~250 bytes per value, 90 times the input for a flow list of empty mappings). A container met a
    second time (a YAML alias in the input) becomes an alias again: a first pass finds the shared
    ones, so their start events carry an anchor, as PyYAML's serializer does, and output stays as
    small as the input however often an anchor is used."""

    def __init__(self, emit: Any, shared: set[int]) -> None:
        self.emit = emit
        self.shared = shared
        self.anchors: dict[int, str] = {}

    def write(self, value: Any) -> None:
        emit = self.emit
        kind = type(value)
        if kind is str or isinstance(value, str):
            text = str(value)
            style = "|" if "\n" in text else None
            emit(ScalarEvent(None, None, (_plain_ok(text), True), text, style=style))
        elif isinstance(value, (dict, list)):
            self._collection(value)
        elif value is None:
            emit(ScalarEvent(None, None, (True, False), "null"))
        elif kind is bool or type(value).__name__ == "ScalarBoolean":  # ruamel's booleans subclass int
            emit(ScalarEvent(None, None, (True, False), "true" if value else "false"))
        elif isinstance(value, int):
            emit(ScalarEvent(None, None, (True, False), str(int(value))))
        elif isinstance(value, float):
            emit(ScalarEvent(None, None, (True, False), _FLOAT_REPR.represent_float(float(value)).value))
        else:
            raise _Unsupported(type(value).__name__)

    def _collection(self, value: dict[Any, Any] | list[Any]) -> None:
        anchor = None
        if id(value) in self.shared:
            if id(value) in self.anchors:
                self.emit(AliasEvent(self.anchors[id(value)]))
                return
            anchor = self.anchors[id(value)] = f"id{len(self.anchors) + 1:03d}"
        if isinstance(value, dict):
            self.emit(MappingStartEvent(anchor, None, True, flow_style=False))
            for key, item in value.items():
                self.write(key)
                self.write(item)
            self.emit(MappingEndEvent())
        else:
            self.emit(SequenceStartEvent(anchor, None, True, flow_style=False))
            for item in value:
                self.write(item)
            self.emit(SequenceEndEvent())


def _shared(doc: Any) -> set[int] | None:
    """The ids of containers reachable more than once (each descended into once), or None when the
    document holds a type the writer does not handle."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, (dict, list)):
            if id(value) in seen:
                shared.add(id(value))
                continue
            seen.add(id(value))
            if isinstance(value, dict):
                stack.extend(value.keys())
                stack.extend(value.values())
            else:
                stack.extend(value)
        elif not (isinstance(value, (str, int, float)) or value is None):
            return None
    return shared


def dump(doc: Any, explicit_start: bool = False) -> str | None:
    """The document as block YAML, or None when it holds a type only PyYAML's dumper knows."""
    shared = _shared(doc)
    if shared is None:
        return None
    stream = io.StringIO()
    emitter = CEmitter(stream, width=1 << 30, allow_unicode=True)
    try:
        emitter.emit(StreamStartEvent())
        emitter.emit(DocumentStartEvent(explicit=explicit_start))
        _Writer(emitter.emit, shared).write(doc)
        emitter.emit(DocumentEndEvent(explicit=False))
        emitter.emit(StreamEndEvent())
    finally:
        emitter.dispose()
    return stream.getvalue()
