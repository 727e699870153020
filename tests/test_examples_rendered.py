"""Every package under examples/ renders to its committed ``.expected/rendered.yaml`` three ways:
``krmfn render`` (in-process, no kpt or kustomize), ``kpt fn render --allow-exec`` and ``kustomize build
--enable-alpha-plugins --enable-exec`` with the package's own kustomization.yaml.

KRMFN_UPDATE_FIXTURES=1 rewrites rendered.yaml from ``krmfn render``'s output.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from e2e import ROOT, by_identity, run, strip_bookkeeping, tool

from krmfn import package as pkg
from krmfn.kobj import is_local_config
from krmfn.render import main as render_main
from krmfn.yamlio import load_all_fast

UPDATE = bool(os.environ.get("KRMFN_UPDATE_FIXTURES"))
EXAMPLES = sorted(p.parent for p in ROOT.glob("examples/*/Kptfile"))
IDS = [p.name for p in EXAMPLES]


def krmfn_render(directory: Path, *flags: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = render_main(["render", str(directory), *flags], stdout=out, stderr=err)
    assert code == 0, f"krmfn render {directory} exited {code}:\n{err.getvalue()}"
    return out.getvalue()


def objects(text: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    return by_identity([strip_bookkeeping(o) for o in load_all_fast(text) if o])


def package_objects(directory: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    """A rendered package's objects read the way kpt reads them (.krmignore honoured), local config out."""
    found = pkg.all_items(pkg.read(directory, "fast"))
    return by_identity([pkg.strip(o) for o in found if not is_local_config(o)])


def copy(example: Path, target: Path) -> Path:
    shutil.copytree(example, target, ignore=shutil.ignore_patterns(".expected"))
    return target


def test_there_are_three_examples() -> None:
    assert {p.name for p in EXAMPLES} >= {"staged-deploy", "config-rollout", "nightly-backup"}


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_krmfn_render_prints_the_committed_output(example: Path) -> None:
    rendered = krmfn_render(example)
    expected = example / ".expected" / "rendered.yaml"
    if UPDATE:
        expected.parent.mkdir(exist_ok=True)
        expected.write_text(rendered)
    assert expected.exists(), f"missing {expected.relative_to(ROOT)} (KRMFN_UPDATE_FIXTURES=1 writes it)"
    assert rendered == expected.read_text()
    assert "<<" not in rendered, "an input expression was left unrendered"


@pytest.mark.e2e
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_kpt_and_kustomize_render_the_same_objects(example: Path, tmp_path: Path) -> None:
    expected = objects((example / ".expected" / "rendered.yaml").read_text())

    by_kpt = copy(example, tmp_path / "kpt" / example.name)
    run([tool("kpt"), "fn", "render", "--allow-exec", str(by_kpt)], tmp_path)
    assert package_objects(by_kpt) == expected, "kpt fn render gave other objects"

    by_kustomize = copy(example, tmp_path / "kustomize" / example.name)
    built = run(
        [tool("kustomize"), "build", "--enable-alpha-plugins", "--enable-exec", str(by_kustomize)], tmp_path
    )
    assert objects(built.stdout) == expected, "kustomize build gave other objects"


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_in_place_render_is_idempotent(example: Path, tmp_path: Path) -> None:
    target = copy(example, tmp_path / example.name)
    krmfn_render(target, "--in-place")
    first = {p: p.read_bytes() for p in sorted(target.rglob("*")) if p.is_file()}
    krmfn_render(target, "--in-place")
    assert {p: p.read_bytes() for p in sorted(target.rglob("*")) if p.is_file()} == first
    assert package_objects(target) == objects((example / ".expected" / "rendered.yaml").read_text())


def test_config_change_rolls_the_deployment_and_reruns_the_job(tmp_path: Path) -> None:
    example = ROOT / "examples" / "config-rollout"
    before = objects(krmfn_render(example))
    target = copy(example, tmp_path / example.name)
    settings = target / "settings.yaml"
    settings.write_text(settings.read_text().replace("SEARCH_LANGUAGE: en", "SEARCH_LANGUAGE: de"))
    after = objects(krmfn_render(target))

    def checksum(obj: dict[str, Any]) -> str:
        value: str = obj["spec"]["template"]["metadata"]["annotations"]["krmfn.dev/config-checksum"]
        return value

    web = ("Deployment", "shop", "web")
    assert checksum(after[web]) != checksum(before[web]), "the Deployment would not roll"
    jobs = {k[2] for k in after if k[0] == "Job"}
    old_jobs = {k[2] for k in before if k[0] == "Job"}
    assert len(jobs) == 1 and jobs.isdisjoint(old_jobs), "the Job would not run again under a new name"
    assert next(iter(jobs)).startswith("search-reindex-")


def test_staged_deploy_runs_in_three_steps_with_one_tag() -> None:
    rendered = objects(krmfn_render(ROOT / "examples" / "staged-deploy"))
    steps = {
        key[2].rsplit("-", 1)[0] if key[0] == "Job" else key[2]: (
            obj["metadata"]["annotations"]["krmfn.dev/step"],
            obj["metadata"]["annotations"]["krmfn.dev/step-index"],
        )
        for key, obj in rendered.items()
        if key[0] in ("Job", "Deployment")
    }
    assert steps == {
        "db-migration": ("pre-deploy", "0"),
        "podinfo": ("deploy", "1"),
        "cache-warmup": ("post-deploy", "2"),
    }
    images = {
        c["image"]
        for obj in rendered.values()
        if obj["kind"] in ("Job", "Deployment")
        for c in obj["spec"]["template"]["spec"]["containers"]
    }
    assert images == {"ghcr.io/stefanprodan/podinfo:6.7.0", "curlimages/curl:8.11.1"}
