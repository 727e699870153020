"""The repository root is a kpt package: ``kpt fn render --allow-exec`` there is a no-op (issue 8's CI check).

kpt renders every nested directory holding a Kptfile, ignored or hidden ones included, and reads hidden
directories for resources, so the check runs on a copy of every tracked file: the example packages are
committed rendered (see test_examples.py), each keeps its ``.expected/`` out with its own .krmignore,
and the root pipeline's validator must pass over them all.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from e2e import ROOT, run, tool
from test_render_cli import files, render


def tracked() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name]


def tracked_copy(target: Path) -> Path:
    """What a checkout holds: every tracked file (one deleted in the working tree is left out)."""
    for name in tracked():
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def unchanged(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    added = [f"new {n}" for n in sorted(after.keys() - before.keys())]
    removed = [f"removed {n}" for n in sorted(before.keys() - after.keys())]
    changed = [f"changed {n}" for n in sorted(before.keys() & after.keys()) if before[n] != after[n]]
    return added + removed + changed


@pytest.mark.e2e
def test_kpt_root_render_changes_no_file(tmp_path: Path) -> None:
    tree = tracked_copy(tmp_path / "tree")
    before = files(tree)
    assert "Kptfile" in before and ".krmignore" in before
    kpt = run([tool("kpt"), "fn", "render", "--allow-exec", "."], tree, check=False)
    assert kpt.returncode == 0, f"kpt fn render at the root exited {kpt.returncode}:\n{kpt.stderr}"
    assert unchanged(before, files(tree)) == []


def test_krmfn_root_render_changes_no_file(tmp_path: Path) -> None:
    tree = tracked_copy(tmp_path / "tree")
    before = files(tree)
    code, _, err = render(str(tree), "--in-place")
    assert code == 0, err
    assert unchanged(before, files(tree)) == []


def test_every_nested_package_keeps_its_expected_directory_out() -> None:
    names = tracked()
    nested = sorted(str(Path(n).parent) for n in names if Path(n).name == "Kptfile" and n != "Kptfile")
    assert len(nested) >= 10, nested
    for package in nested:
        if any(n.startswith(f"{package}/.expected/") for n in names):
            ignore = ROOT / package / ".krmignore"
            lines = ignore.read_text().splitlines() if ignore.exists() else []
            assert ".expected/" in lines, f"{package}/.krmignore must list .expected/"


def test_root_krmignore_keeps_everything_but_examples_out() -> None:
    from krmfn.kpt import package as pkg

    own, found = pkg.scan(ROOT)
    assert own == ["Kptfile"], f"the root package's own resources: {own}"
    nested = set(found)
    assert {f"examples/{name}" for name in ("staged-deploy", "config-rollout", "nightly-backup")} <= nested
    # kpt renders nested packages even below an ignored directory, and so does krmfn render
    assert any(name.startswith("krmfn/functions/") for name in nested)
