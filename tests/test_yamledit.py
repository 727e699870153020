"""The faithful writer (krmfn.yaml.edit) against the fast path and ruamel as oracles, on a generated corpus.

Quick profile in the suite; ``KRMFN_FIDELITY_EXAMPLES=2000 pytest tests/test_yamledit.py`` for a long run.
"""

from __future__ import annotations

import copy
import difflib
import os
import random
import re
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from yaml_corpus import kpt_list, mutate, nodes, stream

from krmfn.errors import InputError
from krmfn.limits import Limits
from krmfn.yaml import edit as yamledit
from krmfn.yaml import fast as yamlfast
from krmfn.yaml.edit.scalars import needs_quotes, scalar
from krmfn.yaml.edit.splice import same
from krmfn.yaml.io import load_documents

EXAMPLES = int(os.environ.get("KRMFN_FIDELITY_EXAMPLES", "120"))
SEEDS = st.integers(0, 2**32 - 1)
PROFILE = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def write(text: str, values: list[Any]) -> tuple[list[str], yamledit.Writer]:
    source = yamledit.load(text, Limits())
    writer = yamledit.Writer(source)
    return [writer.document(i, v) for i, v in enumerate(values)], writer


def read(text: str) -> list[Any]:
    return [d.value for d in yamledit.load(text, Limits()).documents]


@given(SEEDS)
@PROFILE
def test_the_corpus_reads_as_the_fast_path_reads_it(seed: int) -> None:
    text = stream(random.Random(seed))
    assert same(read(text), load_documents(text, Limits()))


@given(SEEDS)
@PROFILE
def test_untouched_documents_come_back_byte_for_byte(seed: int) -> None:
    text = stream(random.Random(seed))
    out, writer = write(text, read(text))
    assert "".join(out) == text
    assert writer.fallbacks == 0


@given(SEEDS)
@PROFILE
def test_edited_documents_read_back_as_the_edited_objects(seed: int) -> None:
    rnd = random.Random(seed)
    text = stream(rnd)
    values = read(text)
    originals = copy.deepcopy(values)
    touched = [rnd.random() < 0.7 for _ in values]
    for value, edit in zip(values, touched, strict=True):
        if edit:
            mutate(rnd, value, rnd.randrange(1, 4))
    out, _ = write(text, values)
    pieces = read(text)
    assert len(pieces) == len(values)
    for number, (piece, value) in enumerate(zip(out, values, strict=True)):
        assert same(list(yamlfast.load_all(piece)), [value]), piece
        if same(value, originals[number]):
            source = yamledit.load(text, Limits())
            start, end = source.documents[number].region
            assert piece == text[start:end]
    assert same(list(yamlfast.load_all("".join(out))), values)


def test_the_corpus_is_edited_in_place_almost_always() -> None:
    """The fast dumper is a last resort: it must stay rare on the corpus."""
    documents = fallbacks = 0
    for seed in range(300):
        rnd = random.Random(seed)
        text = stream(rnd)
        values = read(text)
        for value in values:
            mutate(rnd, value, 2)
        _, writer = write(text, values)
        documents += len(values)
        fallbacks += writer.fallbacks
    assert fallbacks / documents < 0.05, f"{fallbacks} of {documents} documents re-emitted whole"


@given(SEEDS)
@PROFILE
def test_a_resource_list_as_kpt_sends_it_is_edited_in_place(seed: int) -> None:
    """kpt writes an object's head comment after the item's dash (issue 30: set-steps' annotations on
    such items re-emitted the whole list, every file of the package): each item is read back on its
    own and none is written anew."""
    rnd = random.Random(seed)
    text = kpt_list(rnd)
    values = read(text)
    edited = {rnd.randrange(len(values[0]["items"])) for _ in range(2)}
    for number in edited:
        item = values[0]["items"][number]
        item["metadata"]["annotations"] = {"krmfn.dev/step": "deploy", "krmfn.dev/step-index": "1"}
        if rnd.random() < 0.5:
            mutate(rnd, item["spec"], 1)
    out, writer = write(text, values)
    assert writer.fallbacks == 0
    assert same(list(yamlfast.load_all(out[0])), values)
    comments = re.findall(r"(?m)^- # item \d+$|^  # more$", text)
    assert all(c in out[0] for c in comments), "an item's head comment was lost"


def test_an_item_the_splice_cannot_place_is_written_anew_alone() -> None:
    """The fast dumper writes just that item (a key only the explicit ``? key`` form can hold) and a
    ``Fallback`` says which and why; its neighbours keep their text."""
    text = (
        "items:\n- # the first\n  kind: A  # kept\n  metadata: {name: a}\n"
        "- kind: B  # kept too\n  metadata:\n    name: b\n"
    )
    values = read(text)
    values[0]["items"][0]["metadata"]["annotations"] = {"k" * 1001: "x"}
    values[0]["items"][1]["metadata"]["labels"] = {"l": "v"}
    out, writer = write(text, values)
    assert same(list(yamlfast.load_all(out[0])), values)
    assert [(f.value["kind"], f.item, f.reason) for f in writer.fallen] == [
        ("A", True, "a key that needs an explicit-key entry")
    ]
    assert "- # the first\n" in out[0] and "- kind: B  # kept too\n" in out[0] and "    labels:\n" in out[0]
    assert writer.fallen[0].message.startswith("written anew, its comments and styles lost: ")


def _single_line_paths(value: Any) -> list[tuple[Any, ...]]:
    found = []
    for path in nodes(value):
        if not path:
            continue
        item = value
        for step in path:
            item = item[step]
        if isinstance(item, str) and "\n" not in item and len(item) < 200:
            found.append(path)
    return found


@given(SEEDS, st.sampled_from(["v2", "yes", "0755", "a: b", "it's", "tab\t", "1.5", "é"]))
@PROFILE
def test_a_one_field_change_is_a_one_line_diff(seed: int, new: str) -> None:
    rnd = random.Random(seed)
    text = stream(rnd)
    values = read(text)
    composed = list(yaml.compose_all(text.lstrip("\ufeff")))
    candidates = [
        (n, p) for n, v in enumerate(values) for p in _single_line_paths(v) if _one_line(composed[n], p)
    ]
    if "<<" in text or "*a" in text or not candidates:
        return  # an alias of a changed anchor must change too: two lines by nature
    number, path = rnd.choice(candidates)
    target = values[number]
    for step in path[:-1]:
        target = target[step]
    if target[path[-1]] == new:
        return
    target[path[-1]] = new
    out, writer = write(text, values)
    assert writer.fallbacks == 0
    before, after = text.splitlines(), "".join(out).splitlines()
    changed = [line for line in difflib.ndiff(before, after) if line[:1] in "+-"]
    assert len(before) == len(after) and len(changed) == 2, "\n".join(changed)


def _one_line(node: Any, path: tuple[Any, ...]) -> bool:
    """Whether the scalar at ``path`` is written on one line (not a block scalar, not folded over lines)."""
    for step in path:
        if isinstance(node, yaml.MappingNode):
            matches = [v for k, v in node.value if k.value == step]
            if len(matches) != 1:
                return False  # merged keys
            node = matches[0]
        else:
            node = node.value[step]
    return (
        isinstance(node, yaml.ScalarNode)
        and node.start_mark.line == node.end_mark.line
        and node.style not in ("|", ">")
    )


@given(SEEDS)
@PROFILE
def test_the_text_equals_ruamels_wherever_ruamel_keeps_the_style(seed: int) -> None:
    from krmfn.yaml import rt as yamlrt

    rnd = random.Random(seed)
    text = stream(rnd).lstrip("\ufeff").replace("\r\n", "\n")
    docs = list(yaml.compose_all(text))
    if len(docs) != 1 or "&" in text or "<<" in text:
        return
    rt = yamlrt.instance()
    if yamlrt.dump(rt.load(text)) != text:
        return  # ruamel restyles this text itself: no oracle
    values = read(text)
    paths = [p for p in _single_line_paths(values[0]) if not isinstance(p[-1], int)]
    if not paths:
        return
    path = rnd.choice(paths)
    new = rnd.choice(["v2", "nginx:1.27.0", "ghcr.io/acme/app2"])
    oracle = rt.load(text)
    target, mine = oracle, values[0]
    for step in path[:-1]:
        target, mine = target[step], mine[step]
    if (
        not isinstance(target[path[-1]], str)
        or target[path[-1]] == new
        or type(target[path[-1]]).__name__ != "str"
    ):
        return  # quoted scalars are ruamel types that keep their quotes only while unchanged
    target[path[-1]] = new
    mine[path[-1]] = new
    out, _ = write(text, values)
    # ruamel moves a trailing comment to keep its column when the value before it changes length; the
    # writer keeps the spaces as written. Everything else must be the same text.
    assert _comment_gaps(out[0]) == _comment_gaps(yamlrt.dump(oracle))


def _comment_gaps(text: str) -> str:
    return re.sub(r" +#", " #", text)


@given(
    st.one_of(
        st.text(),
        st.integers(yamlfast.INT_MIN, yamlfast.INT_MAX),
        st.floats(allow_nan=False),
        st.booleans(),
        st.none(),
    )
)
@settings(max_examples=EXAMPLES * 5, deadline=None)
def test_every_scalar_reads_back_as_itself_in_any_context(value: Any) -> None:
    block = scalar(value, False, "", "    ")
    for text in (
        f"k: {block}\n",
        f"- {block}\n",
        f"k: {block}  # c\n" if "\n" not in block else f"k: {block}\n",
    ):
        assert same(yamlfast.load_single(text), {"k": value} if text.startswith("k") else [value]), text
    inline = scalar(value, True)
    assert same(yamlfast.load_single(f"[{inline}, x]"), [value, "x"])
    assert same(yamlfast.load_single(f"{{k: {inline}, j: x}}"), {"k": value, "j": "x"})
    if isinstance(value, str) and "\r" not in value and "\x85" not in value and "\u2028" not in value:
        # a YAML 1.1 reader (PyYAML) reads every string back as the same string
        assert yaml.safe_load(f"k: {block}\n") == {"k": value}


@pytest.mark.parametrize(
    "text",
    [
        "y",
        "Y",
        "n",
        "NO",
        "yes",
        "on",
        "Off",
        "true",
        "~",
        "null",
        "",
        "0755",
        "0o17",
        "0x1F",
        "0b101",
        "1_000",
        "+12",
        "-3",
        "1:20",
        "190:20:30.15",
        "1e3",
        "1.5",
        ".5",
        "-.inf",
        ".NaN",
        "2024-01-01",
        "2001-12-14t21:59:43.10-05:00",
        "<<",
        "=",
    ],
)
def test_scalars_any_reader_takes_for_another_type_are_quoted(text: str) -> None:
    assert needs_quotes(text)
    assert scalar(text, False)[0] in "'\""


@pytest.mark.parametrize(
    "text", ["nginx", "1.27.0", "app-1", "v1", "yesterday", "0.0.0.0", "10Mi", "1e", "Off-peak"]
)
def test_ordinary_strings_stay_plain(text: str) -> None:
    assert not needs_quotes(text)
    assert scalar(text, False) == text


HOSTILE = {
    "duplicate key": "a: 1\na: 2\n",
    "unknown tag": "a: !custom x\n",
    "bad int": "a: !!int x\n",
    "undefined alias": "a: *nope\n",
    "recursive alias": "a: &a [*a]\n",
    "alias bomb": "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
    + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=False)
    ),
    "too deep": "a: " + "[" * 150 + "]" * 150 + "\n",
    "syntax": "a: [\n",
    "integer out of range": "a: 1\nb: 99999999999999999999999\n",
    "tagged integer out of range": "a: !!int 0x1FFFFFFFFFFFFFFFFFF\n",
    "not utf-8": "a: \udcff\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_refuses_what_the_fast_path_refuses_with_the_same_message(name: str) -> None:
    text = HOSTILE[name]
    with pytest.raises(InputError) as fast:
        load_documents(text, Limits())
    with pytest.raises(InputError) as faithful:
        yamledit.load(text, Limits())
    assert (type(faithful.value), str(faithful.value)) == (type(fast.value), str(fast.value))


def test_size_limit_is_the_fast_paths() -> None:
    with pytest.raises(InputError) as fast:
        load_documents("a: 1\n", Limits(max_bytes=3))
    with pytest.raises(InputError) as faithful:
        yamledit.load("a: 1\n", Limits(max_bytes=3))
    assert str(faithful.value) == str(fast.value)
