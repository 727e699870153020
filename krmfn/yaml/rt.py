"""The fidelity path's ruamel.yaml round-trip instance, configured to read scalars as the fast path does.

Imported only when the fidelity path is used: ruamel costs ~25 ms to import.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor
from ruamel.yaml.emitter import Emitter
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scalarfloat import ScalarFloat
from ruamel.yaml.scalarstring import FoldedScalarString, PlainScalarString

from krmfn.errors import DuplicateKeyError
from krmfn.yaml import fast as yamlfast
from krmfn.yaml.fast_dump import needs_quotes

_INT_TAG = "tag:yaml.org,2002:int"
_GO_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")
_HEAD_MARK = "#krmfn-item-head:"
# Plain scalars ruamel writes in flow collections that go-yaml's emitter (kpt, kustomize) quotes, as
# libyaml's does: any ``:`` or ``?`` (``{port: :8080}`` and ``[?x]`` they cannot even read plain).
_FLOW_UNSAFE = re.compile(r"[:?]")


class GoOctalInt(int):
    """``0644`` read as Go and Kubernetes read it (420), written back as it was written."""

    text: str

    def __new__(cls, text: str) -> GoOctalInt:
        digits = text.replace("_", "")
        value = super().__new__(cls, int(digits.lstrip("+-"), 8) * (-1 if digits.startswith("-") else 1))
        value.text = text
        return value


class _Resolver(VersionedResolver):
    """Dates stay strings, as on the fast path (Kubernetes has no timestamp type)."""

    def add_version_implicit_resolver(self, version: Any, tag: Any, regexp: Any, first: Any) -> None:
        if tag != "tag:yaml.org,2002:timestamp":
            super().add_version_implicit_resolver(version, tag, regexp, first)


class _Constructor(RoundTripConstructor):
    def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
        # ruamel's own message quotes both values (a Secret's) and str()s them, expanding aliases: a
        # few KB of billion laughs under a duplicate key took 16 s and 3.5 GB to describe.
        if key in mapping:
            raise _duplicate(key, key_node)
        return True

    def check_set_key(self, node: Any, key_node: Any, setting: Any, key: Any) -> None:
        if key in setting:
            raise _duplicate(key, key_node)

    def construct_yaml_str(self, node: Any) -> Any:
        # A plain scalar that some reader (YAML 1.1, go-yaml v2) would take for another type stays
        # plain, as kpt keeps it; text a function writes is a plain ``str`` and gets quoted.
        value = super().construct_yaml_str(node)
        if type(value) is str and node.style is None and value and needs_quotes(value):
            return PlainScalarString(value)
        return value

    def construct_text(self, node: Any) -> Any:
        return str(self.construct_scalar(node))

    def construct_yaml_int(self, node: Any) -> Any:
        if isinstance(node.value, str):
            try:
                yamlfast.go_int(node.value)  # go-yaml's 64-bit range, checked before Python converts
            except yamlfast.IntRangeError:
                raise ConstructorError(None, None, yamlfast.INT_RANGE_PROBLEM, node.start_mark) from None
            except ValueError:
                pass  # ruamel's own forms; its errors are reworded by _tag_problems_without_values
            if _GO_OCTAL.match(node.value) and len(node.value.lstrip("+-")) > 1:
                return GoOctalInt(node.value)
        return super().construct_yaml_int(node)


def _without_value(name: str, construct: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``construct`` with every error reworded to the tag and the position: ruamel's own messages quote
    the value (``invalid literal for int() with base 10: 'hunter2'``), which may be a Secret's."""

    def checked(self: Any, node: Any) -> Any:
        try:
            return construct(self, node)
        except ConstructorError as err:
            if err.problem == yamlfast.INT_RANGE_PROBLEM:
                raise
            raise ConstructorError(None, None, yamlfast.invalid_tag_problem(name), node.start_mark) from None
        except Exception:
            raise ConstructorError(None, None, yamlfast.invalid_tag_problem(name), node.start_mark) from None

    return checked


def _duplicate(key: Any, key_node: Any) -> DuplicateKeyError:
    mark = key_node.start_mark
    name = key if isinstance(key, (str, int, float, bool)) or key is None else type(key).__name__
    return DuplicateKeyError(f"duplicate key {name!r} at line {mark.line + 1}, column {mark.column + 1}")


_Constructor.add_constructor(_INT_TAG, _Constructor.construct_yaml_int)
_Constructor.add_constructor("tag:yaml.org,2002:str", _Constructor.construct_yaml_str)
# Kubernetes has no timestamp type: an explicit !!timestamp keeps its text, whatever it is, as on the fast
# path (ruamel built a datetime, which hashing and JSON cannot take, or an error quoting the value).
_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _Constructor.construct_text)
for _name in ("int", "float", "bool", "null", "binary"):
    _tag = "tag:yaml.org,2002:" + _name
    _Constructor.add_constructor(_tag, _without_value(_name, _Constructor.yaml_constructors[_tag]))


class _Representer(RoundTripRepresenter):
    def represent_go_octal(self, data: GoOctalInt) -> Any:
        return self.represent_scalar(_INT_TAG, data.text)

    def represent_quoted_if_ambiguous(self, data: str) -> Any:
        if needs_quotes(data):
            return self.represent_scalar("tag:yaml.org,2002:str", data, style="'")  # as ruamel quotes
        return self.represent_str(data)

    def represent_folded(self, data: FoldedScalarString) -> Any:
        # go-yaml v3 (kpt) writes a folded block scalar (``>``) as a double-quoted string of its value
        return self.represent_scalar("tag:yaml.org,2002:str", str(data), style='"')

    def represent_exact_float(self, data: ScalarFloat) -> Any:
        # ruamel rebuilds a float's text from the width it was read with and truncates the mantissa, so
        # an untouched 17-digit value could come back as another number; then write Python's exact repr.
        node = self.represent_scalar_float(data)
        if not math.isfinite(data) or _float_text(str(node.value)) == float(data):
            return node
        return self.represent_scalar(
            "tag:yaml.org,2002:float", repr(float(data)), anchor=data.yaml_anchor(any=True)
        )


def _float_text(text: str) -> float | None:
    try:
        return float(text.replace("_", ""))
    except ValueError:
        return None


_Representer.add_representer(GoOctalInt, _Representer.represent_go_octal)
_Representer.add_representer(ScalarFloat, _Representer.represent_exact_float)
_Representer.add_representer(str, _Representer.represent_quoted_if_ambiguous)
_Representer.add_representer(FoldedScalarString, _Representer.represent_folded)


class _Emitter(Emitter):
    def write_comment(self, comment: Any, pre: bool = False) -> None:
        # go-yaml (kpt) writes a comment that ends a line one space after the value, wherever it was.
        if not pre and self.column and str(comment.value).startswith("#"):
            comment = SimpleNamespace(value=comment.value, start_mark=SimpleNamespace(column=self.column + 1))
        super().write_comment(comment, pre)

    def choose_scalar_style(self) -> Any:
        style = super().choose_scalar_style()
        if style == "" and self.flow_level and _FLOW_UNSAFE.search(self.event.value):
            return "'" if self.analysis.allow_single_quoted else '"'
        return style


_INSTANCE: YAML | None = None


def instance() -> YAML:
    global _INSTANCE  # noqa: PLW0603  # one configured instance per process; building it costs ~5 ms
    if _INSTANCE is None:
        rt = YAML(typ="rt")
        rt.Resolver = _Resolver
        rt.Constructor = _Constructor
        rt.Representer = _Representer
        rt.Emitter = _Emitter
        rt.preserve_quotes = True
        rt.width = 1 << 30  # never fold long strings: folding is churn in a kpt diff
        # `[{containerPort: 80}]` stays as written (ruamel would drop the braces of a one-key mapping).
        rt.brace_single_entry_mapping_in_flow_sequence = True
        rt.indent(mapping=2, sequence=2, offset=0)
        rt.allow_duplicate_keys = False
        _INSTANCE = rt
    return _INSTANCE


@contextlib.contextmanager
def _discarded_on_failure() -> Iterator[None]:
    """Forget the shared instance when a load or dump is interrupted (an error, a signal): ruamel keeps
    its emitter's state machine on the instance, and a half-written document made every later dump in
    the process fail with "expected NodeEvent, but got DocumentStartEvent"."""
    global _INSTANCE  # noqa: PLW0603
    try:
        yield
    except BaseException:
        _INSTANCE = None
        raise


def load(text: str) -> Any:
    """One document or stream head through the shared instance (see ``_discarded_on_failure``)."""
    with _discarded_on_failure():
        return instance().load(text)


def dump(doc: Any) -> str:
    """ruamel, plus one repair: a comment heading a ResourceList item stays after its ``- ``.

    kpt sends a file's leading comment as ``- # comment`` on the item. ruamel writes such comments on
    the line above the dash, where kpt reads them as the previous item's foot comment and copies them
    into the previous file on every render. The comments are marked before dumping and moved back.
    """
    items = doc.get("items") if isinstance(doc, dict) else None
    entries = getattr(getattr(items, "ca", None), "items", {}).values()
    heads = [tok for entry in entries if len(entry) > 1 for tok in entry[1] or () if hasattr(tok, "value")]
    originals = [tok.value for tok in heads]
    for tok in heads:
        tok.value = _HEAD_MARK + tok.value
    out = io.StringIO()
    try:
        with _discarded_on_failure():
            instance().dump(doc, out)
    finally:
        for tok, value in zip(heads, originals, strict=True):
            tok.value = value
    text = out.getvalue()
    return _unmark_item_heads(text) if heads else text


def _unmark_item_heads(text: str) -> str:
    out: list[str] = []
    pending: list[str] = []
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        if stripped.startswith(_HEAD_MARK):
            pending.extend(stripped[len(_HEAD_MARK) :].split("\n"))
            continue
        if pending and line.startswith("- "):
            comments = [c.strip() for c in pending if c.strip()]
            out.append("- " + comments[0] if comments else "-")
            out.extend("  " + c for c in comments[1:])
            out.append("  " + line[2:])
            pending = []
            continue
        out.extend("  " + c.strip() if c.strip() else "" for c in pending)
        pending = []
        out.append(line)
    return "\n".join(out)


def load_all(text: str) -> list[Any]:
    """Every document of a multi-document file (a kpt package's), read as ``load`` reads one."""
    with _discarded_on_failure():
        return list(instance().load_all(text))


def dump_document(doc: Any, indent: str = "compact") -> str:
    """One document of a package file; ``wide`` indents sequences under their key, as kpt's
    ``seqindent`` annotation records for the file (``compact``: the dash at the key's column)."""
    rt = instance()
    out = io.StringIO()
    if indent == "wide":
        rt.indent(mapping=2, sequence=4, offset=2)
    try:
        with _discarded_on_failure():
            rt.dump(doc, out)
    finally:
        rt.indent(mapping=2, sequence=2, offset=0)
    return out.getvalue()
