"""Every package under examples/ is committed rendered and renders from its source three ways.

As for the function examples (see test_examples.py), ``.expected/diff.patch`` is the diff rendering
applied to the source, and the source is derived by reverse-applying it. The derived source renders to
the committed files with ``kpt fn render --allow-exec`` and with ``krmfn render --in-place`` (in-process,
no kpt or kustomize), to the committed objects with ``kustomize build --enable-alpha-plugins
--enable-exec`` through the package's own kustomization.yaml; rendering the committed package again
changes nothing, and ``krmfn render`` prints its objects.

KRMFN_UPDATE_FIXTURES=1 writes diff.patch and the rendered files from kpt's render of the derived source.
"""

from __future__ import annotations

import io
import shutil
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
    package_files,
    run,
    strip_bookkeeping,
    tool,
)

from krmfn.k8s.kobj import is_local_config
from krmfn.kpt import annotations as kpt_annotations
from krmfn.kpt import package as pkg
from krmfn.render import main as render_main
from krmfn.yaml.io import load_all_fast

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
    return by_identity([kpt_annotations.strip(o) for o in found if not is_local_config(o)])


def source_of(example: Path, tmp_path: Path) -> Path:
    """The example's source (templates, unhashed names), derived from the committed rendered package."""
    return derive_source(example, tmp_path / "source")


def test_there_are_three_examples() -> None:
    assert {p.name for p in EXAMPLES} >= {"staged-deploy", "config-rollout", "nightly-backup"}


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_krmignore_keeps_expected_and_the_kustomization_out(example: Path) -> None:
    lines = (example / ".krmignore").read_text().splitlines()
    assert ".expected/" in lines and "kustomization.yaml" in lines


@pytest.mark.e2e
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_kpt_renders_the_source_to_the_committed_package(example: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    source = derive_source(example, repo)
    run([tool("kpt"), "fn", "render", "--allow-exec", example.name], repo)
    check_expected(example / ".expected" / "diff.patch", git_diff(repo))
    check_committed(example, source)
    rendered = [data for name, data in package_files(example).items() if name.endswith(".yaml")]
    assert not any(b"<< inputs." in data for data in rendered), "an input expression was left unrendered"

    git_snapshot(repo)
    run([tool("kpt"), "fn", "render", "--allow-exec", example.name], repo)
    assert git_diff(repo) == "", "a second kpt render changed the package"


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_krmfn_render_of_the_source_gives_the_committed_package(example: Path, tmp_path: Path) -> None:
    source = source_of(example, tmp_path)
    assert objects(krmfn_render(source)) == package_objects(example), "krmfn render printed other objects"
    krmfn_render(source, "--in-place")
    assert package_files(source) == package_files(example), "krmfn render --in-place wrote other files"


@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_rendering_the_committed_package_again_changes_nothing(example: Path, tmp_path: Path) -> None:
    assert objects(krmfn_render(example)) == package_objects(example), "krmfn render printed other objects"
    target = tmp_path / example.name
    shutil.copytree(example, target)
    krmfn_render(target, "--in-place")
    assert package_files(target) == package_files(example)


@pytest.mark.e2e
@pytest.mark.parametrize("example", EXAMPLES, ids=IDS)
def test_kustomize_builds_the_committed_objects_from_the_source(example: Path, tmp_path: Path) -> None:
    source = source_of(example, tmp_path)
    built = run(
        [tool("kustomize"), "build", "--enable-alpha-plugins", "--enable-exec", str(source)], tmp_path
    )
    assert objects(built.stdout) == package_objects(example), "kustomize build gave other objects"


def test_config_change_rolls_the_deployment_and_reruns_the_job(tmp_path: Path) -> None:
    source = source_of(ROOT / "examples" / "config-rollout", tmp_path)
    before = objects(krmfn_render(source))
    settings = source / "settings.yaml"
    settings.write_text(settings.read_text().replace("SEARCH_LANGUAGE: en", "SEARCH_LANGUAGE: de"))
    after = objects(krmfn_render(source))

    def checksum(obj: dict[str, Any]) -> str:
        value: str = obj["spec"]["template"]["metadata"]["annotations"]["krmfn.dev/config-checksum"]
        return value

    web = ("Deployment", "shop", "web")
    assert checksum(after[web]) != checksum(before[web]), "the Deployment would not roll"
    jobs = {k[2] for k in after if k[0] == "Job"}
    old_jobs = {k[2] for k in before if k[0] == "Job"}
    assert len(jobs) == 1 and jobs.isdisjoint(old_jobs), "the Job would not run again under a new name"
    assert next(iter(jobs)).startswith("search-reindex-")


def test_staged_deploy_runs_in_three_steps_with_one_tag(tmp_path: Path) -> None:
    source = source_of(ROOT / "examples" / "staged-deploy", tmp_path)
    assert "<< inputs.tag >>" in (source / "deployment.yaml").read_text(), "the source holds the template"
    rendered = objects(krmfn_render(source))
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
