"""Runs every fixture case (see fixture_harness) on both YAML paths, and twice for idempotence."""

from __future__ import annotations

import os
import re

import pytest
from fixture_harness import Case, discover, load_function, resource_list_text

from krmfn.yamlio import _load_fast

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
