"""Runs every fixture case (see fixture_harness) on both YAML paths, and twice for idempotence."""

from __future__ import annotations

import os
import re

import pytest
from fixture_harness import Case, discover, load_function, resource_list_text

from krmfn.yaml.io import _load_fast, load_all_fast

CASES = discover()
UPDATE = bool(os.environ.get("KRMFN_UPDATE_FIXTURES"))


def _strip_results(text: str) -> dict:
    doc = _load_fast(text)
    doc.pop("results", None)
    return doc


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fixture(case: Case) -> None:
    function = load_function(case.function)
    text = resource_list_text(case)
    mode_file = case.path / "mode"
    modes = [mode_file.read_text().strip()] if mode_file.exists() else ["fast", "fidelity"]
    outcomes = {mode: function.outcome(text, mode) for mode in modes}
    first = outcomes[modes[0]]
    for mode, outcome in outcomes.items():
        assert _load_fast(outcome.text) == _load_fast(first.text), f"{mode} path disagrees with {modes[0]}"

    errors = case.path / "errors.txt"
    if errors.exists():
        assert first.code == 1, f"expected exit code 1, got {first.code}:\n{first.text}"
        seen = first.text + "\n".join(r.describe() for r in first.results)
        for pattern in filter(None, (line.strip() for line in errors.read_text().splitlines())):
            assert re.search(pattern, seen), f"/{pattern}/ not found in:\n{seen}"
        return

    expected = case.path / "expected.yaml"
    fast_text = function.outcome(text, "fast").text if "fast" not in outcomes else outcomes["fast"].text
    if UPDATE:
        expected.write_text(fast_text)
    assert expected.exists(), (
        f"{case.id}: add expected.yaml or errors.txt (KRMFN_UPDATE_FIXTURES=1 writes it)"
    )
    assert fast_text == expected.read_text()
    assert first.code == 0, f"exit code {first.code}:\n{first.text}"

    again = function.outcome(first.text, modes[0])
    assert _strip_results(again.text) == _strip_results(first.text), "not idempotent: f(f(x)) != f(x)"


def _stream_cases() -> list[Case]:
    """Cases whose input is a plain stream read on the fast path: each also runs as a pipe would."""
    cases = []
    for case in CASES:
        mode_file = case.path / "mode"
        if mode_file.exists() and mode_file.read_text().strip() != "fast":
            continue
        docs = [d for d in load_all_fast((case.path / "input.yaml").read_text()) if d is not None]
        if docs and all(isinstance(d, dict) and d.get("kind") != "ResourceList" for d in docs):
            cases.append(case)
    return cases


STREAM_CASES = _stream_cases()


@pytest.mark.parametrize("case", STREAM_CASES, ids=[c.id for c in STREAM_CASES])
def test_fixture_as_a_plain_stream_matches_the_resource_list(case: Case) -> None:
    function = load_function(case.function)
    config_path = case.path / "config.yaml"
    fn_config = next(iter(load_all_fast(config_path.read_text()))) if config_path.exists() else None
    as_list = function.outcome(resource_list_text(case), "fast")
    as_stream = function.outcome((case.path / "input.yaml").read_text(), None, fn_config)
    assert as_stream.code == as_list.code
    assert [r.to_dict() for r in as_stream.results] == [r.to_dict() for r in as_list.results]
    if as_list.code:
        assert as_stream.text == "", "a refused stream must not reach stdout"
    else:
        assert list(load_all_fast(as_stream.text)) == _load_fast(as_list.text)["items"]
