"""The two YAML paths: fast (libyaml through PyYAML) and fidelity (ruamel.yaml round-trip).

Both load into ``dict``/``list``/scalars (ruamel's round-trip types subclass them), so functions never
know which path is in use, and both give semantically identical documents.

Scalars are resolved with the YAML 1.2 core schema that kustomize and kpt (go-yaml v3) use, so ``yes``,
``on`` and ``2024-01-01`` stay strings; octal ``0755`` is still read as Kubernetes reads it. The fast
dumper quotes every string a YAML 1.1 reader would take for something else, so output is safe for
both kinds of reader.
"""

from __future__ import annotations

import base64
import contextlib
import re
import warnings
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from typing import Any, Literal

import yaml
from yaml.cyaml import CEmitter, CParser  # type: ignore[attr-defined]

from krmfn.errors import DuplicateKeyError, LimitExceededError, YAMLSyntaxError
from krmfn.limits import Limits
from krmfn.yaml import fast as yamlfast
from krmfn.yaml import fast_dump
from krmfn.yaml.fast import too_deep
from krmfn.yaml.fast_dump import QuotingResolver, needs_quotes

Mode = Literal["fast", "fidelity"]


class _FastDumper(CEmitter, yaml.representer.SafeRepresenter, QuotingResolver):
    """PyYAML's own dumper, for the rare document holding a type the event dumper does not handle."""

    def __init__(self, stream: Any, **kwargs: Any) -> None:
        CEmitter.__init__(
            self,
            stream,
            width=kwargs.get("width"),
            allow_unicode=True,
            explicit_start=kwargs.get("explicit_start"),
        )
        yaml.representer.SafeRepresenter.__init__(self, default_flow_style=False, sort_keys=False)
        QuotingResolver.__init__(self)


def _represent_str(dumper: yaml.representer.SafeRepresenter, value: str) -> yaml.ScalarNode:
    # Literal blocks keep scripts and embedded files readable; libyaml falls back to quoting when a
    # string cannot be a block (trailing spaces, tabs).
    # The same quoting rule as the fast dumper (needs_quotes: every reader in the chain, YAML
    # 1.1's y/n and go-yaml's numbers included), so a document that falls back here (shared objects,
    # written as anchors) is read back as the same strings.
    style = "|" if "\n" in value else ("'" if value and needs_quotes(value) else None)
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_FastDumper.add_representer(str, _represent_str)


def check_size(text: str, limits: Limits, mode: Mode = "fast") -> None:
    if len(text) > limits.max_bytes:
        raise LimitExceededError(
            f"input is {len(text)} bytes, over the limit of {limits.max_bytes} (KRMFN_MAX_INPUT_BYTES)"
        )
    if mode == "fidelity" and len(text) > limits.max_fidelity_bytes:
        raise LimitExceededError(
            f"input is {len(text)} bytes, over the fidelity path's limit of {limits.max_fidelity_bytes} "
            "(KRMFN_MAX_FIDELITY_BYTES; the fast path reads up to KRMFN_MAX_INPUT_BYTES)"
        )


def check_expanded(doc: Any, limits: Limits, aliases_possible: bool = True) -> None:
    """Bound depth and the number of values a consumer would see with aliases expanded (billion laughs).

    Shared subtrees are measured once (memoized by identity), so a hostile document costs no more to
    check than its text is long.
    """
    if not aliases_possible:
        _check_depth(doc, limits)
        return
    measured: dict[int, tuple[int, int]] = {}
    active: set[int] = set()
    written = 0  # values as written in the text, each shared subtree counted once

    def measure(value: Any) -> tuple[int, int]:
        nonlocal written
        if not isinstance(value, (dict, list)):
            return 1, 0
        key = id(value)
        if key in measured:
            return measured[key]
        if key in active:
            raise LimitExceededError("input contains a recursive YAML alias")
        active.add(key)
        children = value.values() if isinstance(value, dict) else value
        written += len(children) + 1
        size, height = 1, 0
        for child in children:
            child_size, child_height = measure(child)
            size += child_size
            height = max(height, child_height + 1)
            if height > limits.max_depth:
                raise LimitExceededError(
                    f"input nests deeper than {limits.max_depth} levels (KRMFN_MAX_DEPTH)"
                )
            if size > limits.max_nodes:
                raise LimitExceededError(
                    f"input expands to more than {limits.max_nodes} values through aliases (KRMFN_MAX_NODES)"
                )
        active.discard(key)
        measured[key] = (size, height)
        return size, height

    size, _ = measure(doc)
    # kpt and kustomize (go-yaml v3) refuse documents that are mostly alias expansions; so does krmfn,
    # since every consumer would walk the expanded values.
    if size > _ALIAS_FLOOR and size > _ALIAS_RATIO * written:
        raise LimitExceededError(
            f"input contains excessive aliasing: {written} values as written expand to {size}"
        )


_ALIAS_FLOOR = 100_000
_ALIAS_RATIO = 10


def _check_depth(doc: Any, limits: Limits) -> None:
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > limits.max_depth:
            raise LimitExceededError(f"input nests deeper than {limits.max_depth} levels (KRMFN_MAX_DEPTH)")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))


def aliases_possible(text: str) -> bool:
    return "&" in text and "*" in text


def load(text: str, mode: Mode, limits: Limits) -> Any:
    """Parse exactly one YAML document."""
    return _parse(text, mode, limits, single=True)[0]


@contextlib.contextmanager
def parse_errors(text: str, limits: Limits) -> Iterator[None]:
    """What a parser raises, as the errors krmfn reports: its own limit and duplicate-key errors as they
    are, deep recursion as the depth limit, anything else (libyaml and the constructors raise many
    types) as one YAMLSyntaxError. Every reader of YAML text parses inside it."""
    try:
        yield
    except (DuplicateKeyError, LimitExceededError):
        raise
    except RecursionError:
        raise too_deep(limits.max_depth) from None
    except Exception as err:
        if "nesting depth" in str(getattr(err, "problem", "")):  # libyaml's own bound (1000 flow levels),
            raise too_deep(limits.max_depth) from None  # met while scanning ahead: the same limit
        raise YAMLSyntaxError(not_utf8(text) or describe_yaml_error(err)) from None


def load_documents(text: str, limits: Limits) -> list[Any]:
    """Parse every document of a stream on the fast path, each checked as ``load`` checks one."""
    return _parse(text, "fast", limits, single=False)


def _parse(text: str, mode: Mode, limits: Limits, single: bool) -> list[Any]:
    check_size(text, limits, mode)
    with parse_errors(text, limits):
        if mode == "fast":
            docs = (
                [_load_fast(text, limits.max_depth)]
                if single
                else list(yamlfast.load_all(text, limits.max_depth))
            )
        else:
            _check_flow_depth(text, limits)
            docs = [_load_fidelity(text)] if single else _load_fidelity(text, every_document=True)
    aliases = aliases_possible(text)
    if mode == "fast" and not aliases:
        return docs  # built within the depth limit (yamlfast.DepthBound); nothing is shared to count
    try:
        for doc in docs:
            check_expanded(doc, limits, aliases)
    except RecursionError:  # ruamel's documents (tests only) are depth-checked without their aliases
        raise too_deep(limits.max_depth) from None
    return docs


_OPEN_EVENTS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE_EVENTS = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_flow_depth(text: str, limits: Limits) -> None:
    """Refuse deep nesting before ruamel sees it: its pure-Python scanner is quadratic in flow nesting
    (``[[[[...`` costs seconds in a few KB). libyaml's events cost ~3% of a ruamel load."""
    parser = CParser(text)
    depth = 0
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, _OPEN_EVENTS):
                depth += 1
                if depth > limits.max_depth + 1:  # +1: an empty innermost collection adds no height
                    raise LimitExceededError(
                        f"input nests deeper than {limits.max_depth} levels (KRMFN_MAX_DEPTH)"
                    )
            elif isinstance(event, _CLOSE_EVENTS):
                depth -= 1
    except yaml.YAMLError as err:
        if "nesting depth" in str(getattr(err, "problem", "")):  # libyaml's own bound (1000)
            raise LimitExceededError(
                f"input nests deeper than {limits.max_depth} levels (KRMFN_MAX_DEPTH)"
            ) from None
        return  # ruamel reports other syntax errors in its own words
    except UnicodeError:
        return
    finally:
        parser.dispose()


def not_utf8(text: str) -> str:
    """The message for text decoded with surrogateescape (how Python reads non-UTF-8 stdin)."""
    found = _SURROGATE.search(text)
    if found is None:
        return ""
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    code = ord(found.group())
    what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"lone surrogate U+{code:04X}"
    return f"input is not valid UTF-8: {what} at line {line}, column {column}"


def _load_fast(text: str, max_depth: int = yamlfast.DEFAULT_MAX_DEPTH) -> Any:
    return yamlfast.load_single(text, max_depth)


def _load_fidelity(text: str, every_document: bool = False) -> Any:
    from ruamel.yaml.constructor import DuplicateKeyError as RuamelDuplicateKeyError

    from krmfn.yaml import rt as yamlrt

    try:
        # ruamel warns on stderr, quoting input lines (a Secret's, say), e.g. for a re-used anchor, which
        # YAML 1.2 and libyaml allow.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return yamlrt.load_all(text) if every_document else yamlrt.load(text)
    except RuamelDuplicateKeyError as err:
        raise DuplicateKeyError(describe_yaml_error(err)) from None


def describe_yaml_error(err: Exception) -> str:
    problem = getattr(err, "problem", None)
    mark = getattr(err, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    first_line = str(err).strip().splitlines()
    return first_line[0] if first_line else type(err).__name__


def dump(doc: Any, mode: Mode) -> str:
    if mode == "fidelity":
        from krmfn.yaml import rt as yamlrt

        return yamlrt.dump(doc)
    return dump_fast(doc)


def dump_fast(doc: Any, explicit_start: bool = False) -> str:
    fast = fast_dump.dump(doc, explicit_start)
    if fast is not None:
        return fast
    text: str = yaml.dump(doc, Dumper=_FastDumper, width=1 << 30, explicit_start=explicit_start)
    return text


def load_all_fast(text: str, limits: Limits | None = None) -> Iterator[Any]:
    """Parse a multi-document stream (manifests on disk or from ``kustomize build``), within ``limits``
    or the ``KRMFN_MAX_*`` variables' (so a larger stream can be allowed where memory allows)."""
    yield from load_documents(text, limits or Limits.from_env())


def dump_all_fast(docs: list[Any]) -> str:
    return "".join(dump_fast(doc, explicit_start=i > 0) for i, doc in enumerate(docs))


def plain(value: Any) -> Any:
    """A deep copy made of built-in types only (drops ruamel's comments and styles)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    # Explicit YAML tags: !!binary, !!set (both paths) and unknown tags (fidelity path, as ruamel keeps
    # them). Kubernetes has none of these types; hashing and JSON need plain values, in a stable order.
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    if isinstance(value, AbstractSet):
        return sorted((plain(v) for v in value), key=repr)
    if type(value).__name__ == "TaggedScalar":
        return plain(getattr(value, "value", None))
    return value
