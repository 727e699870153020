"""Every function example package, end to end under the real kpt and kustomize (kpt-catalog style).

For ``functions/<fn>/examples/<example>/``: ``kpt fn render --allow-exec`` in a scratch git repo must
produce ``.expected/diff.patch`` and ``.expected/results.yaml``, and a second render must change nothing.
The same resources and function configs run under ``kustomize build --enable-alpha-plugins
--enable-exec`` must give the same objects. ``.expected/config.yaml`` may set ``exitCode: 1``.
KRMFN_UPDATE_FIXTURES=1 rewrites the expected files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from e2e import (
    ROOT,
    by_identity,
    git_diff,
    git_snapshot,
    kustomization_for,
    package_objects,
    run,
    strip_bookkeeping,
    tool,
)

from krmfn.yamlio import dump_fast, load_all_fast

UPDATE = bool(os.environ.get("KRMFN_UPDATE_FIXTURES"))
PACKAGES = sorted(p.parent for p in ROOT.glob("functions/*/examples/*/Kptfile"))
RESULT_KEYS = ("message", "severity", "resourceRef", "field", "file", "tags")

pytestmark = pytest.mark.e2e


def _expected(package: Path) -> dict[str, Any]:
    path = package / ".expected" / "config.yaml"
    return next(load_all_fast(path.read_text())) if path.exists() else {}


def _kpt_results(results_dir: Path) -> list[dict[str, Any]]:
    path = results_dir / "results.yaml"
    if not path.exists():
        return []
    doc = next(load_all_fast(path.read_text()))
    return [
        {k: r[k] for k in RESULT_KEYS if k in r}
        for item in doc.get("items") or []
        for r in item.get("results") or []
    ]


def _check(path: Path, actual: str) -> None:
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual)
    assert path.exists(), f"missing {path.relative_to(ROOT)} (KRMFN_UPDATE_FIXTURES=1 writes it)"
    assert actual == path.read_text(), f"{path.relative_to(ROOT)} differs"


@pytest.mark.parametrize("package", PACKAGES, ids=[f"{p.parent.parent.name}/{p.name}" for p in PACKAGES])
def test_example_under_kpt_and_kustomize(package: Path, tmp_path: Path) -> None:
    kpt = tool("kpt")
    want_code = int(_expected(package).get("exitCode", 0))
    repo = tmp_path / "repo"
    pkg = repo / package.name
    shutil.copytree(package, pkg, ignore=shutil.ignore_patterns(".expected"))
    run(["git", "init", "-q"], repo)
    git_snapshot(repo)

    results_dir = tmp_path / "results"
    first = run(
        [kpt, "fn", "render", "--allow-exec", "--results-dir", str(results_dir), package.name], repo, False
    )
    assert first.returncode == want_code, f"kpt exited {first.returncode}:\n{first.stdout}\n{first.stderr}"
    _check(package / ".expected" / "diff.patch", git_diff(repo))
    _check(package / ".expected" / "results.yaml", dump_fast(_kpt_results(results_dir)))
    if want_code:
        return

    git_snapshot(repo)
    run([kpt, "fn", "render", "--allow-exec", package.name], repo)
    assert git_diff(repo) == "", "a second kpt render changed the package: the pipeline is not idempotent"

    kustomize = tool("kustomize")
    target = kustomization_for(package, tmp_path)
    built = run([kustomize, "build", "--enable-alpha-plugins", "--enable-exec", str(target)], tmp_path)
    from_kustomize = by_identity([strip_bookkeeping(o) for o in load_all_fast(built.stdout) if o])
    from_kpt = by_identity(package_objects(pkg))
    assert from_kustomize == from_kpt, "kustomize and kpt rendered different objects"


def test_every_function_has_an_example_package() -> None:
    from krmfn.registry import CANONICAL_ORDER

    with_examples = {p.parent.parent.name for p in PACKAGES}
    missing = [n for n, module in CANONICAL_ORDER.items() if module.split(".")[1] not in with_examples]
    assert not missing, f"functions without an example package: {missing}"
