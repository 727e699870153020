"""Regression tests for SDK bugs the robustness suite found."""

from __future__ import annotations

import pytest

from krmfn.limits import Limits
from krmfn.yamlio import dump, load


@pytest.mark.parametrize(
    "text", ["x: -1.879604605013197e+16\n", "x: 123456789.123456789\n", "x: 0.30000000000000004\n"]
)
def test_fidelity_path_never_changes_an_untouched_float(text: str) -> None:
    # ruamel truncated the mantissa when re-creating the text: -1.879604605013197e+16 came back ...196e+16.
    doc = load(text, "fidelity", Limits())
    again = load(dump(doc, "fidelity"), "fidelity", Limits())
    assert float(again["x"]) == float(doc["x"]) == float(load(text, "fast", Limits())["x"])


def test_fidelity_path_keeps_the_text_of_ordinary_floats() -> None:
    text = "a: 0.1\nb: 3.0e+5\nc: 1.\nd: .5\ne: -.inf\n"
    assert dump(load(text, "fidelity", Limits()), "fidelity") == text
