"""Nesting depth is bounded once, where YAML is read, before anything walks it: aliases included.

Generated documents nest lists, mappings or both, in flow or block style, past ``KRMFN_MAX_DEPTH``
(100): directly, beside an unrelated alias (the finding), through an alias whose anchor is shallow
enough on its own but lands deep where the alias sits, through merge keys (``<<: *x``) and through a
recursive alias. Each goes through every function (its CLI edge, as a ResourceList and as a plain
stream, on both YAML paths), through ``--fn-config`` and through ``krmfn render``: the answer is the
limit error (exit 1 with one stderr line naming the limit, and for a ResourceList a result naming
it), never ``internal error: RecursionError``
(which a 990-level value with an ``&x``/``*x`` pair gave on the faithful path).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from krmfn.registry import CANONICAL_ORDER, load
from krmfn.render import main as render_main
from krmfn.yaml.io import Mode, load_all_fast
from robustness.budget import examples

LIMIT_WORDS = ("KRMFN_MAX_DEPTH", "recursive YAML alias")
FUNCTIONS = list(CANONICAL_ORDER)
VIAS = ("plain", "pair", "alias", "merge", "recursive")


@dataclass(frozen=True)
class Deep:
    shape: str  # list, map, mixed
    style: str  # flow, block
    via: str  # plain, pair (plain and an unrelated alias), alias, merge, recursive
    depth: int
    where: str  # item, config


def nest(shape: str, style: str, depth: int, core: str, indent: int) -> str:
    """A value ``depth`` collections deep around ``core`` (a scalar or an alias), as YAML text that
    starts on its key's line; ``indent`` is the key's column (block style)."""
    if style == "flow" or depth == 0:
        text = core
        for level in range(depth):
            as_map = shape == "map" or (shape == "mixed" and level % 2)
            text = f"{{k: {text}}}" if as_map else f"[{text}]"
        return text
    lines, column = [], indent + 2
    for level in range(depth):
        as_map = shape == "map" or (shape == "mixed" and level % 2)
        lines.append(" " * column + ("k:" if as_map else "-"))
        column += 2
    lines[-1] += " " + core
    return "\n" + "\n".join(lines)


def document(case: Deep, stream: bool) -> str:
    """A ConfigMap (and the function's config) with the deep value under ``data`` or the config."""
    # Block style indents each level: 1,200 levels are 1.4 MB of text, 5,000 would pass the size limit.
    depth = case.depth if case.style == "flow" else min(case.depth, 1200)
    half = depth // 2 + 2  # each half within the limit, together past it
    if case.via == "plain":
        extra = f"deep: {nest(case.shape, case.style, depth, 'x', 4)}"
    elif case.via == "pair":  # the finding: any &y/*y pair made the check recurse down the deep value
        extra = f"name: &y v\n    copy: *y\n    deep: {nest(case.shape, case.style, depth, 'x', 4)}"
    elif case.via == "alias":
        anchored = nest(case.shape, "flow", half, "x", 4)
        extra = f"shallow: &x {anchored}\n    deep: {nest(case.shape, case.style, half, '*x', 4)}"
    elif case.via == "merge":
        anchored = nest("map", "flow", half, "x", 4)
        extra = f"shallow: &x {{k: {anchored}}}\n    deep: {nest('map', 'flow', half, '{<<: *x}', 4)}"
    else:
        extra = f"deep: {nest(case.shape, 'flow', depth, '&r [1, *r]', 4)}"
    data = f"  data:\n    {extra}\n" if case.where == "item" else "  data: {a: b}\n"
    config = f"  extra:\n    {extra}\n" if case.where == "config" else ""
    item = f"- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: c\n{data}"
    if stream:
        return item[2:].replace("\n  ", "\n")
    return (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        + item
        + "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: f\n"
        + config
    )


def run_function(name: str, text: str, mode: Mode, args: tuple[str, ...] = ()) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = load(name).main(["--yaml", mode, *args], io.StringIO(text), out, err)
    return code, out.getvalue(), err.getvalue()


def check_limit_error(code: int, out: str, err: str, resource_list: bool) -> None:
    lines = err.splitlines()
    assert code == 1, (code, err)
    assert len(lines) == 1 and any(word in lines[0] for word in LIMIT_WORDS), err
    assert "internal error" not in out + err and "Traceback" not in err, err
    if resource_list:
        (rl,) = list(load_all_fast(out))
        messages = [r["message"] for r in rl.get("results") or []]
        assert any(word in m for m in messages for word in LIMIT_WORDS), messages
    else:
        assert out == "", "a plain stream that cannot be read writes nothing"


cases = st.builds(
    Deep,
    st.sampled_from(("list", "map", "mixed")),
    st.sampled_from(("flow", "block")),
    st.sampled_from(VIAS),
    st.sampled_from((101, 102, 150, 600, 990, 1001, 5000)),
    st.sampled_from(("item", "config")),
)
FINDING = Deep("list", "flow", "pair", 990, "item")


@settings(max_examples=examples(60), deadline=None)
@given(cases, st.sampled_from(FUNCTIONS), st.sampled_from(("fast", "fidelity")), st.booleans())
@example(FINDING, "set-image", "fidelity", False)
@example(FINDING, "set-image", "fast", False)
@example(Deep("map", "block", "merge", 990, "item"), "render-inputs", "fidelity", True)
@example(Deep("mixed", "block", "alias", 150, "config"), "validate-jobs", "fidelity", False)
def test_deep_values_are_the_limit_error_for_every_function(
    case: Deep, name: str, mode: Mode, stream: bool
) -> None:
    if stream and case.where == "config":
        case = Deep(case.shape, case.style, case.via, case.depth, "item")
    code, out, err = run_function(name, document(case, stream), mode)
    check_limit_error(code, out, err, resource_list=not stream)


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_function_reads_990_levels_through_each_construction_as_the_limit(name: str, via: str) -> None:
    for mode in ("fast", "fidelity"):
        for stream in (False, True):
            code, out, err = run_function(
                name, document(Deep("list", "flow", via, 990, "item"), stream), mode
            )
            check_limit_error(code, out, err, resource_list=not stream)


@pytest.mark.parametrize("via", VIAS)
def test_fn_config_file_nested_too_deep_is_one_usage_line(via: str, tmp_path: Path) -> None:
    config = tmp_path / "fn.yaml"
    text = document(Deep("list", "flow", via, 990, "config"), stream=False)
    config.write_text(text.split("functionConfig:\n", 1)[1].replace("\n  ", "\n").removeprefix("  "))
    code, out, err = run_function("set-steps", "kind: ConfigMap\n", "fidelity", ("--fn-config", str(config)))
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1 and any(word in err for word in LIMIT_WORDS), err


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_render_reads_a_package_file_nested_too_deep_as_the_limit(
    via: str, mode: str, tmp_path: Path
) -> None:
    (tmp_path / "Kptfile").write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n")
    (tmp_path / "deep.yaml").write_text(document(Deep("mixed", "block", via, 990, "item"), stream=True))
    out, err = io.StringIO(), io.StringIO()
    code = render_main(["render", str(tmp_path), "--yaml", mode], stdout=out, stderr=err)
    assert code == 1 and out.getvalue() == "", err.getvalue()
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and any(word in lines[0] for word in LIMIT_WORDS), lines
    assert "deep.yaml" in lines[0]
