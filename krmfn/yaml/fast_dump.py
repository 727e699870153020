"""The fast path's writer: plain dicts and lists straight to libyaml's emitter events, every string that
some reader in the chain (YAML 1.1 and 1.2, go-yaml v2 and v3, ruamel) would take for something else
quoted; a value it does not handle falls back to PyYAML's own dumper (krmfn.yaml.io). The reader is
fast.py's.
"""

from __future__ import annotations

import io
from typing import Any

import yaml
from yaml.cyaml import CEmitter  # type: ignore[attr-defined]
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

from krmfn.patterns import deferred
from krmfn.yaml.fast import FLOAT, INT, TAG


class QuotingResolver(yaml.resolver.Resolver):
    """YAML 1.1 plus 1.2 core: a string either kind of reader would take for something else is quoted."""


for _tag, _regexp, _first in (("int", INT, "-+0123456789"), ("float", FLOAT, "-+0123456789.")):
    QuotingResolver.add_implicit_resolver(TAG + _tag, _regexp, list(_first))

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
    return resolved == TAG + "str"


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
