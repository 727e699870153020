"""Property-based tests: every function on arbitrary valid packages and valid configs.

For each function and generated (package, config, YAML path):
- the output is a valid ResourceList whose exit code agrees with its results, and no bug surfaces as an
  "internal error" result;
- running again on the output changes no item (idempotence, as kpt's in-place render needs);
- running again on the same input gives the same bytes;
- items the function does not target, and items it leaves semantically unchanged, come back byte for byte
  on the fidelity path (quotes, flow style, comments);
- local-config items are never changed;
- the CLI gives the same bytes under different PYTHONHASHSEED values.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.k8s.kobj import is_local_config, ref_of
from krmfn.limits import Limits
from krmfn.sdk.resourcelist import parse
from krmfn.yaml.io import dump, dump_fast, plain
from robustness.budget import examples
from robustness.functions import SPECS as BY_NAME
from robustness.functions import Spec
from robustness.harness import items_of, output_problems, run_cli_many
from robustness.strategies import resource_list, styled_text

SPECS = list(BY_NAME.values())
IDS = [spec.name for spec in SPECS]


@st.composite
def cases(draw: st.DrawFn, spec: Spec) -> tuple[str, str]:
    """(ResourceList text, mode): fidelity input carries random styles, fast input is plain block YAML."""
    root = resource_list(draw(spec.items), draw(spec.configs))
    mode = draw(st.sampled_from(("fast", "fidelity")))
    if mode == "fidelity":
        return styled_text(root, draw(st.integers(0, 2**32))), mode
    return dump_fast(root), mode


def _fidelity_items(text: str) -> list[Any]:
    return list(parse(text, "fidelity", Limits()).items)


def _identity(obj: Any) -> tuple[str, str, str]:
    ref = ref_of(obj)
    return ref.kind, ref.namespace, ref.name


def check_properties(spec: Spec, text: str, mode: str) -> None:
    function = spec.function
    out, code = function.process(text, mode)
    assert not output_problems(out, code), (output_problems(out, code), out)
    assert function.process(text, mode) == (out, code), "two runs on the same input differ"

    again, _ = function.process(out, mode)
    assert items_of(again) == items_of(out), "not idempotent: a second run changed items"

    before = items_of(text)
    after = items_of(out)
    assert len(after) == len(before), "items were added or removed"
    for old, new in zip(before, after, strict=True):
        if is_local_config(old):
            assert new == old, f"local-config item changed: {_identity(old)}"
        if spec.untargeted(old):
            assert new == old, f"{spec.name} changed an item it does not target: {_identity(old)}"

    if mode == "fidelity":
        for old, new in zip(_fidelity_items(text), _fidelity_items(out), strict=True):
            if spec.untargeted(old) or plain(old) == plain(new):
                assert dump(new, "fidelity") == dump(old, "fidelity"), (
                    f"fidelity lost on an unchanged item {_identity(old)}"
                )


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_valid_idempotent_deterministic_and_faithful(spec: Spec) -> None:
    @settings(max_examples=examples(20))
    @given(cases(spec))
    def prop(case: tuple[str, str]) -> None:
        check_properties(spec, *case)

    prop()


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_cli_output_is_byte_identical_across_hash_seeds(spec: Spec) -> None:
    collected: list[tuple[str, str]] = []

    @settings(max_examples=examples(3))
    @given(cases(spec))
    def collect(case: tuple[str, str]) -> None:
        collected.append(case)

    collect()
    jobs = [
        (spec.name, text.encode(), ("--yaml", mode), {"PYTHONHASHSEED": seed})
        for text, mode in collected
        for seed in ("0", "12345")
    ]
    runs = run_cli_many(jobs)
    for index, (text, mode) in enumerate(collected):
        first, second = runs[2 * index], runs[2 * index + 1]
        assert first.stdout == second.stdout, f"output depends on the hash seed ({mode} path):\n{text}"
        assert first.code == second.code
        in_process, code = spec.function.process(text, mode)
        assert first.stdout.decode() == in_process
        assert first.code == code
