"""The repository root is a kpt package whose nested packages are examples/*.

``kpt fn render --allow-exec`` at the root renders every nested package (kpt does not apply a parent's
.krmignore to nested packages), so the scratch copy holds what the root package is made of: its Kptfile,
its .krmignore and examples/. The function example packages under functions/*/examples/ are kpt-catalog
style packages (committed unrendered, some failing on purpose) and are tested by test_examples.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from e2e import ROOT, run, tool
from test_examples_rendered import objects, package_objects
from test_render_cli import files, render

ROOT_PACKAGE = ("Kptfile", ".krmignore", "examples/")


def root_copy(target: Path) -> Path:
    tracked = subprocess.run(
        ["git", "ls-files", *ROOT_PACKAGE], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "Kptfile" in tracked and ".krmignore" in tracked
    for path in tracked:
        if (ROOT / path).is_file():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, target / path)
    for expected in target.glob("examples/*/.expected"):
        assert (expected.parent / ".krmignore").read_text().count(".expected/") == 1
    return target


@pytest.mark.e2e
def test_root_render_gives_the_committed_outputs_and_then_changes_nothing(tmp_path: Path) -> None:
    by_kpt = root_copy(tmp_path / "kpt")
    by_krmfn = root_copy(tmp_path / "krmfn")
    run([tool("kpt"), "fn", "render", "--allow-exec", "."], by_kpt)
    code, _, err = render(str(by_krmfn), "--in-place")
    assert code == 0, err
    assert files(by_krmfn) == files(by_kpt), "krmfn render and kpt wrote different files"

    for example in sorted(by_kpt.glob("examples/*/Kptfile")):
        rendered = example.parent / ".expected" / "rendered.yaml"
        assert package_objects(example.parent) == objects(rendered.read_text()), example.parent.name

    once = files(by_kpt)
    run([tool("kpt"), "fn", "render", "--allow-exec", "."], by_kpt)
    assert files(by_kpt) == once, "a second root render changed the tree"


def test_root_krmignore_keeps_everything_but_examples_out() -> None:
    from krmfn import package as pkg

    own, found = pkg.scan(ROOT)
    assert own == ["Kptfile"], f"the root package's own resources: {own}"
    nested = set(found)
    assert {f"examples/{name}" for name in ("staged-deploy", "config-rollout", "nightly-backup")} <= nested
    # kpt renders nested packages even below an ignored directory, and so does krmfn render
    assert any(name.startswith("functions/") for name in nested)
