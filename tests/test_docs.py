"""The reference docs keep up with the code: annotation keys, per-function catalog pages and metadata."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from e2e import ROOT

import krmfn
from krmfn.kpt.pipeline import COMBINED
from krmfn.registry import CANONICAL_ORDER
from krmfn.yaml.io import load_all_fast

KEY = re.compile(r"krmfn\.dev/[A-Za-z0-9._/-]*[A-Za-z0-9]")
FUNCTION_DIRS = sorted(
    ROOT / "krmfn" / "functions" / module.split(".")[2]
    for module in [*CANONICAL_ORDER.values(), *COMBINED.values()]
)
METADATA_KEYS = ("image", "description", "tags", "sourceURL", "examplePackageURLs", "emails", "license")
SECTIONS = ("Overview", "Usage", "FunctionConfig", "Target resources", "Examples")


def test_every_annotation_key_in_the_code_is_documented() -> None:
    keys = {key for path in (ROOT / "krmfn").rglob("*.py") for key in KEY.findall(path.read_text())}
    assert "krmfn.dev/step" in keys, "the scan finds the keys"
    reference = (ROOT / "docs" / "annotations.md").read_text()
    missing = sorted(k for k in keys if f"`{k}`" not in reference and f"fn.{k}" not in reference)
    assert not missing, f"add these to docs/annotations.md: {missing}"


@pytest.mark.parametrize("folder", FUNCTION_DIRS, ids=[p.name for p in FUNCTION_DIRS])
def test_metadata_has_the_catalog_keys(folder: Path) -> None:
    metadata = next(load_all_fast((folder / "metadata.yaml").read_text()))
    missing = [k for k in METADATA_KEYS if k not in metadata]
    assert not missing, f"{folder.name}/metadata.yaml lacks {missing}"
    assert metadata["license"] == "Apache-2.0"
    assert isinstance(metadata["emails"], list) and metadata["tags"] and metadata["description"]
    assert metadata["examplePackageURLs"] and isinstance(metadata["examplePackageURLs"], list)
    assert str(metadata["sourceURL"]).endswith(f"krmfn/functions/{folder.name}")
    # pyproject.toml is the one source of the version; the image tag follows it
    assert metadata["image"] == f"krmfn-{folder.name.replace('_', '-')}:{krmfn.__version__}"


@pytest.mark.parametrize("folder", FUNCTION_DIRS, ids=[p.name for p in FUNCTION_DIRS])
def test_readme_has_the_catalog_sections(folder: Path) -> None:
    headings = re.findall(r"^## (.+?)\s*$", (folder / "README.md").read_text(), flags=re.MULTILINE)
    assert [h for h in headings if h in SECTIONS] == list(SECTIONS), f"{folder.name}: {headings}"


@pytest.mark.parametrize("folder", FUNCTION_DIRS, ids=[p.name for p in FUNCTION_DIRS])
def test_readme_usage_covers_kustomize_kpt_and_a_pipe(folder: Path) -> None:
    text = (folder / "README.md").read_text()
    usage = text.split("## Usage", 1)[1].split("\n## ", 1)[0]
    name = folder.name.replace("_", "-")
    for needle in ("config.kubernetes.io/function", f"exec: krmfn-{name}", f"krmfn-{name}"):
        assert needle in usage, f"{folder.name} Usage lacks {needle!r}"
    assert "kpt fn" in usage and "|" in usage, f"{folder.name} Usage lacks a kpt fn eval or a pipe"


def test_migration_table_covers_each_tool() -> None:
    text = (ROOT / "docs" / "migration.md").read_text()
    for tool in ("ResourceSet", "dependsOn", "Argo CD", "Helm"):
        assert "## From" in text and tool in text
    for mapped in ("set-steps", "hash-job-names", "set-config-checksum", "render-inputs", "set-image"):
        assert mapped in text


def test_architecture_names_every_module() -> None:
    """ARCHITECTURE.md stays true: every module of the package and of the runner is named in it."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    package = ROOT / "krmfn"
    modules = [p.name for p in package.glob("*.py") if p.name != "__init__.py"]
    modules += [p.name + "/" for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    modules += [p.name for p in (package / "runner").glob("*.py") if p.name != "__init__.py"]
    missing = sorted(m for m in modules if f"`{m}" not in text and f"{m}`" not in text)
    assert missing == [], f"ARCHITECTURE.md does not name: {missing}"


@pytest.mark.parametrize("name", list(CANONICAL_ORDER))
def test_every_function_has_the_one_layout(name: str) -> None:
    """CONTRIBUTING.md's layout: ``__init__.py`` declares the Function, ``config.py`` holds its config,
    ``transform.py`` its transform."""
    from krmfn.registry import load

    function = load(name)
    package = f"krmfn.functions.{name.replace('-', '_')}"
    assert function.config.__module__ == f"{package}.config"
    assert function.transform.__module__ == f"{package}.transform"
