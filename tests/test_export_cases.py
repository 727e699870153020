"""Golden cases for ``krmfn export``: tests/testdata/export/<case-name>/.

Each case has ``args`` (the command line after ``krmfn export``; ``-f input.yaml`` is added), ``input.yaml``,
and either ``expected.yaml`` (the whole output) or ``error.txt`` (one regex per line, all must match
stderr; the exit code must be 1). Regenerate expected.yaml with ``KRMFN_UPDATE_FIXTURES=1`` and review it.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from krmfn.export import main

CASES = Path(__file__).parent / "testdata" / "export"
UPDATE = os.environ.get("KRMFN_UPDATE_FIXTURES") == "1"


def _cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_export_case(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = shlex.split((case / "args").read_text())
    code = main(["export", *args, "-f", str(case / "input.yaml")])
    out, err = capsys.readouterr()
    errors = case / "error.txt"
    if errors.exists():
        assert code == 1, out
        assert out == ""
        for pattern in errors.read_text().splitlines():
            assert re.search(pattern, err), f"{pattern!r} not in stderr: {err}"
        return
    assert code == 0, err
    assert err == ""
    expected = case / "expected.yaml"
    if UPDATE:
        expected.write_text(out)
    assert out == expected.read_text()


def test_every_case_checks_an_outcome() -> None:
    for case in _cases():
        outcomes = [name for name in ("expected.yaml", "error.txt") if (case / name).exists()]
        assert len(outcomes) == 1, f"{case.name}: needs exactly one of expected.yaml, error.txt"
