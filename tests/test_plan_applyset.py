"""``krmfn plan`` takes ``--applyset`` as ``krmfn apply`` does (issue 35: a plan command line copied from
an apply one was refused), and checks it the same way, before printing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from krmfn.runner.commands.cli import main

STREAM = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: apps}
---
apiVersion: v1
kind: Secret
metadata: {name: taken, namespace: apps}
"""


def test_plan_accepts_the_applyset_apply_takes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stream = tmp_path / "stream.yaml"
    stream.write_text(STREAM)
    assert main(["plan", "-f", str(stream), "-n", "apps", "--applyset", "shop"]) == 0
    assert "ConfigMap apps/settings" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "says"),
    [("Bad_Name", "is not a valid Secret name"), ("taken", "rename that Secret")],
)
def test_plan_refuses_an_applyset_apply_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, says: str
) -> None:
    stream = tmp_path / "stream.yaml"
    stream.write_text(STREAM)
    assert main(["plan", "-f", str(stream), "-n", "apps", "--applyset", name]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    (line,) = out.err.splitlines()
    assert line.startswith("krmfn plan: ") and says in line
