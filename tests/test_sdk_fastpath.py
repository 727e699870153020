"""The event-driven fast path (krmfn.yaml.fast) against PyYAML's own loader and dumper as the oracle.

The oracle is PyYAML's SafeLoader/SafeDumper machinery configured with the same schema; the fast path
must build equal documents from any YAML and write byte-identical text for any plain document
(anchors aside: the fast dumper expands shared objects instead of writing aliases).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from yaml.cyaml import CParser  # type: ignore[attr-defined]

from krmfn.errors import DuplicateKeyError
from krmfn.yaml import fast as yamlfast
from krmfn.yaml import fast_dump
from krmfn.yaml.io import _FastDumper

ROOT = Path(__file__).resolve().parent.parent
T = "tag:yaml.org,2002:"


class OracleResolver(yaml.resolver.BaseResolver):
    pass


for tag, regexp, first in (
    ("bool", yamlfast._BOOL, "tTfF"),
    ("null", yamlfast._NULL, ["~", "n", "N"]),
    ("null", __import__("re").compile(r"^$"), [""]),
    ("int", yamlfast.INT, "-+0123456789"),
    ("float", yamlfast.FLOAT, "-+0123456789."),
    ("merge", __import__("re").compile(r"^<<$"), "<"),
):
    OracleResolver.add_implicit_resolver(T + tag, regexp, list(first))


class OracleConstructor(yaml.constructor.SafeConstructor):
    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        return yamlfast.go_int(str(self.construct_scalar(node)))

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        return yamlfast._float(str(self.construct_scalar(node)))


OracleConstructor.add_constructor(T + "int", OracleConstructor.construct_yaml_int)  # type: ignore[type-var]
OracleConstructor.add_constructor(T + "float", OracleConstructor.construct_yaml_float)  # type: ignore[type-var]
OracleConstructor.add_constructor(T + "timestamp", yaml.constructor.SafeConstructor.construct_yaml_str)  # type: ignore[type-var]


class OracleLoader(CParser, OracleConstructor, OracleResolver):  # type: ignore[misc]
    def __init__(self, stream: str) -> None:
        CParser.__init__(self, stream)
        OracleConstructor.__init__(self)
        OracleResolver.__init__(self)


def oracle_load_all(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=OracleLoader))


def oracle_dump(doc: Any) -> str:
    return str(yaml.dump(doc, Dumper=_FastDumper, width=1 << 30))


def same(a: Any, b: Any) -> bool:
    """Equality that treats NaN as equal to itself."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


REPO_YAML = sorted(p for p in ROOT.glob("**/*.yaml") if ".venv" not in p.parts and "build" not in p.parts)
EDGE_CASES = [
    "a: 1\nb: [1, 2.5, -3, 0x1f, 0o17, 0755, 1_000, .inf, -.inf, .nan, 1e3]\n",
    "a: [true, True, FALSE, yes, no, on, off, y, n, ~, null, Null, '', \"\"]\n",
    "a: !!str 12\nb: !!int '12'\nc: !!float '1'\nd: !!bool yes\ne: !!null ''\ng: !!timestamp 2024-01-01\n",
    "bin: !!binary aGVsbG8=\n",
    "base: &b {x: 1, y: 2}\nmore: &m {y: 5, z: 6}\none: {<<: *b, y: 3}\nmany: {<<: [*b, *m], w: 0}\n",
    "x: &a [1, &s two, {k: *s}]\ny: *a\n",
    "? complex\n: value\n'quoted key': 1\n\"1\": one\n1: int key\n",
    "s: |\n  line one\n  line two\nf: >\n  folded\n  text\n",
    "---\na: 1\n---\n---\nb: 2\n...\n",
    "",
    "just a scalar\n",
    "- a\n- - b\n  - c\n- {d: [e, {f: g}]}\n",
]


@pytest.mark.parametrize("text", EDGE_CASES, ids=[f"edge-{i}" for i in range(len(EDGE_CASES))])
def test_edge_cases_load_like_pyyaml(text: str) -> None:
    ours = list(yamlfast.load_all(text))
    theirs = oracle_load_all(text)
    assert same(ours, theirs), (ours, theirs)


@pytest.mark.parametrize("path", REPO_YAML, ids=[str(p.relative_to(ROOT)) for p in REPO_YAML])
def test_every_yaml_file_in_the_repository_loads_like_pyyaml(path: Path) -> None:
    text = path.read_text()
    try:
        theirs = oracle_load_all(text)
    except yaml.YAMLError:
        with pytest.raises(yaml.YAMLError):
            list(yamlfast.load_all(text))
        return
    assert same(list(yamlfast.load_all(text)), theirs)


def test_the_non_specific_tag_makes_a_string_as_the_yaml_spec_says() -> None:
    # PyYAML resolves `! 12` to an int; the spec (and go-yaml) make it a string. Deliberate difference.
    assert yamlfast.load_single("a: ! 12\n") == {"a": "12"}


def test_duplicate_keys_are_refused_with_their_position() -> None:
    with pytest.raises(DuplicateKeyError, match=r"duplicate key 'a' at line 3, column 1"):
        yamlfast.load_single("a: 1\nb: 2\na: 3\n")


def test_an_undefined_alias_is_a_yaml_error() -> None:
    with pytest.raises(yaml.YAMLError, match="undefined alias"):
        yamlfast.load_single("a: *nope\n")


def test_unknown_tags_are_yaml_errors_as_in_pyyaml() -> None:
    with pytest.raises(yaml.YAMLError, match="could not determine a constructor"):
        yamlfast.load_single("a: !Custom x\n")


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),  # go-yaml's range
    st.floats(allow_nan=False), st.text(max_size=30),
    st.sampled_from(["yes", "no", "on", "y", "N", "0X1F", "1_0", "0755", "1_000", "1e3", "2024-01-01", "null",
                     "~", "", " x ", "a\nb", "tail \n", "#c", "- x", "a: b", "'q'", '"q"', "@x", "`x", "*x",
                     "&x", "!x", "%x"]),
)  # fmt: skip
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(documents)
def test_dumps_byte_identical_to_pyyaml_and_loads_back(doc: Any) -> None:
    text = fast_dump.dump(doc)
    assert text == oracle_dump(doc)
    assert same(yamlfast.load_single(text), doc)


def test_shared_objects_are_written_as_anchors_and_aliases_like_pyyaml() -> None:
    shared = {"app": "web", "tier": ["a", "b"]}
    doc = {"one": shared, "two": [shared, shared["tier"]], "three": shared}
    text = fast_dump.dump(doc)
    assert text == oracle_dump(doc)
    assert "&id001" in str(text)
    assert yamlfast.load_single(str(text)) == doc
