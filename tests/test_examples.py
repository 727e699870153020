"""Every function example package, end to end under the real kpt and kustomize (kpt-catalog style).

An example package ``krmfn/functions/<fn>/examples/<example>/`` is committed in its rendered state, as a real
kpt repository would hold it, so ``kpt fn render --allow-exec`` at the repository root changes nothing.
``.expected/diff.patch`` is the diff that rendering applied to the source: the test derives the source by
reverse-applying it (``git apply -R`` in a scratch git repository), renders that with kpt and checks
that the diff equals ``.expected/diff.patch``, the results equal ``.expected/results.yaml``, the
rendered files equal the committed ones and a second render changes nothing. The derived source also
runs under ``kustomize build --enable-alpha-plugins --enable-exec`` (generated kustomization) and as a
plain pipe (``kustomize build | krmfn-<name> --fn-config FILE | ...``), and both must give the same
objects. Every package has a ``.krmignore`` listing ``.expected/``: kpt reads hidden
directories too. A pipeline that fails on purpose is a fixture case under tests/fixtures/, not an
example: a failing package would fail the root render.

KRMFN_UPDATE_FIXTURES=1 derives the source from the committed package, renders it and writes the new
diff.patch and results.yaml and the rendered files into the package. A new example is written as its
source, without diff.patch; the update run renders it in place. To change an existing one, edit the
committed files outside the rendered lines and run the update.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e import (
    ROOT,
    by_identity,
    check_committed,
    check_expected,
    derive_source,
    git_diff,
    git_snapshot,
    kustomization_for,
    kustomize_then_pipe,
    package_objects,
    run,
    strip_bookkeeping,
    tool,
)

from krmfn.yaml.io import dump_fast, load_all_fast

PACKAGES = sorted(p.parent for p in ROOT.glob("krmfn/functions/*/examples/*/Kptfile"))
RESULT_KEYS = ("message", "severity", "resourceRef", "field", "file", "tags")

pytestmark = pytest.mark.e2e


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


@pytest.mark.parametrize("package", PACKAGES, ids=[f"{p.parent.parent.name}/{p.name}" for p in PACKAGES])
def test_example_under_kpt_and_kustomize(package: Path, tmp_path: Path) -> None:
    kpt = tool("kpt")
    repo = tmp_path / "repo"
    source = derive_source(package, repo)
    target = kustomization_for(source, tmp_path)

    results_dir = tmp_path / "results"
    run([kpt, "fn", "render", "--allow-exec", "--results-dir", str(results_dir), package.name], repo)
    check_expected(package / ".expected" / "diff.patch", git_diff(repo))
    check_expected(package / ".expected" / "results.yaml", dump_fast(_kpt_results(results_dir)))
    check_committed(package, source)

    git_snapshot(repo)
    run([kpt, "fn", "render", "--allow-exec", package.name], repo)
    assert git_diff(repo) == "", "a second kpt render changed the package: the pipeline is not idempotent"

    kustomize = tool("kustomize")
    built = run([kustomize, "build", "--enable-alpha-plugins", "--enable-exec", str(target)], tmp_path)
    from_kustomize = by_identity([strip_bookkeeping(o) for o in load_all_fast(built.stdout) if o])
    from_kpt = by_identity(package_objects(source))
    assert from_kustomize == from_kpt, "kustomize and kpt rendered different objects"

    piped = kustomize_then_pipe(target, kustomize)
    from_pipe = by_identity([o for o in load_all_fast(piped) if o])
    assert from_pipe == from_kpt, "kustomize build | functions rendered different objects than kpt"


def test_every_example_package_ignores_its_expected_directory() -> None:
    for package in PACKAGES:
        ignore = package / ".krmignore"
        lines = ignore.read_text().splitlines() if ignore.exists() else []
        assert ".expected/" in lines, f"{package.relative_to(ROOT)}/.krmignore must list .expected/"


def test_every_function_has_an_example_package() -> None:
    from krmfn.registry import CANONICAL_ORDER

    with_examples = {p.parent.parent.name for p in PACKAGES}
    missing = [n for n, module in CANONICAL_ORDER.items() if module.rsplit(".", 1)[-1] not in with_examples]
    assert not missing, f"functions without an example package: {missing}"
