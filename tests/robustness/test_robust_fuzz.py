"""A short fuzz of the parser and every function's entry point (``bench/fuzz.py`` runs long ones).

For any bytes, every target returns within a time bound, writes a valid ResourceList, exits 0 only without
error results and 1 only with one, and never shows a traceback (see robustness.fuzzing.check).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustness.budget import examples
from robustness.fuzzing import MUTATIONS, check, mutate, seed_text, targets
from robustness.harness import output_problems, run_cli_many

TARGETS = targets()
SEEDS = {name: seed_text(function).encode() for name, function in TARGETS.items()}
MODES = st.sampled_from((None, "fast", "fidelity"))


def _assert_clean(name: str, data: bytes, mode: str | None) -> None:
    findings = check(name, TARGETS[name], data, mode)
    assert not findings, "\n".join(f"{f.kind}: {f.detail}" for f in findings)


@pytest.mark.parametrize("name", list(TARGETS))
def test_seed_inputs_are_accepted(name: str) -> None:
    out, code = TARGETS[name].process(SEEDS[name].decode())
    assert not output_problems(out, code, "fidelity")
    assert "internal error" not in out


@settings(max_examples=examples(40))
@given(name=st.sampled_from(list(TARGETS)), data=st.binary(max_size=400), mode=MODES)
def test_arbitrary_bytes(name: str, data: bytes, mode: str | None) -> None:
    _assert_clean(name, data, mode)


@settings(max_examples=examples(40))
@given(name=st.sampled_from(list(TARGETS)), text=st.text(max_size=300), mode=MODES)
def test_arbitrary_text(name: str, text: str, mode: str | None) -> None:
    _assert_clean(name, text.encode("utf-8", "surrogatepass"), mode)


@settings(max_examples=examples(40))
@given(
    name=st.sampled_from(list(TARGETS)),
    prefix=st.sampled_from(("", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n")),
    text=st.text(st.sampled_from("abc:-[]{}&*!|>'\"#?,\n \t%@`<>=0123456789."), max_size=200),
    mode=MODES,
)
def test_yaml_shaped_text(name: str, prefix: str, text: str, mode: str | None) -> None:
    _assert_clean(name, (prefix + text).encode(), mode)


@settings(max_examples=examples(80))
@given(name=st.sampled_from(list(TARGETS)), seed=st.integers(0, 2**32), mode=MODES)
def test_mutated_resource_lists(name: str, seed: int, mode: str | None) -> None:
    data, _ = mutate(random.Random(seed), SEEDS[name])
    _assert_clean(name, data, mode)


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_each_mutation_on_each_target(mutation: str) -> None:
    rnd = random.Random(mutation)
    for name in TARGETS:
        data = MUTATIONS[mutation](rnd, SEEDS[name])
        _assert_clean(name, data, rnd.choice((None, "fast", "fidelity")))


RAW_INPUTS = {
    "latin-1 byte": b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- name: caf\xe9\n",
    "invalid start byte": b"\xff\xfeapiVersion: v1\n",
    "truncated sequence": b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nx: \xe2\x82",
    "encoded surrogate": b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nx: \xed\xa0\x80\n",
    "utf-16": "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n".encode("utf-16"),
}


@pytest.mark.parametrize("env", [{}, {"PYTHONUTF8": "1"}, {"LC_ALL": "C"}], ids=["default", "utf8-mode", "c"])
def test_cli_reports_bytes_that_are_not_utf8(env: dict[str, str]) -> None:
    """Raw bytes on stdin of the real CLI: an error result that says UTF-8, exit 1, no traceback."""
    jobs = [(name, data, (), env) for data in RAW_INPUTS.values() for name in ("set-image", "validate-jobs")]
    for (name, data, _, _), run in zip(jobs, run_cli_many(jobs), strict=True):
        stderr = run.stderr.decode("utf-8", "replace")
        assert run.code == 1, (name, data, stderr)
        assert "Traceback" not in stderr
        assert "UTF-8" in stderr or "utf-8" in stderr, stderr
        assert not output_problems(run.stdout.decode(), run.code, source=data)
