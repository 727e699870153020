"""One reader for ``krmfn apply|plan -f`` and ``krmfn export -f`` (krmfn/k8s/manifest_files.py): the same
directory gives both the same files, in the same order, whatever it holds."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from krmfn.export.stream import read_sources
from krmfn.k8s.manifest_files import StreamError
from krmfn.runner.errors import SourceError
from krmfn.runner.source import read_files
from krmfn.yaml.io import dump_fast


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


# Every kind of entry a rendered directory can hold, with whether it is read.
ENTRIES = {
    "a.yaml": True,
    "b.yml": True,
    "c.json": True,
    "sub/d.yaml": True,  # a subpackage
    "sub/deeper/e.yaml": True,
    ".expected/f.yaml": False,  # hidden: test data
    "sub/.git/g.yaml": False,
    "kustomization.yaml": False,  # describes a build
    "sub/Kustomization": False,
    "notes.txt": False,
}


def write(root: Path, relative: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    name = relative.replace("/", "-").replace(".", "-").strip("-")
    text = json.dumps(configmap(name)) if relative.endswith(".json") else dump_fast(configmap(name))
    path.write_text(text)


@pytest.mark.parametrize("size", [1, 3, len(ENTRIES)])
def test_apply_and_export_read_the_same_objects_from_a_directory(tmp_path: Path, size: int) -> None:
    for n, subset in enumerate(itertools.combinations(sorted(ENTRIES), size)):
        root = tmp_path / f"case-{n}"
        root.mkdir()
        for relative in subset:
            write(root, relative)
        expected = [r for r in sorted(subset, key=lambda r: str(root / r)) if ENTRIES[r]]
        if not expected:
            with pytest.raises(SourceError, match=r"no \.yaml, \.yml or \.json files"):
                read_files([str(root)])
            with pytest.raises(StreamError, match=r"no \.yaml, \.yml or \.json files"):
                read_sources([str(root)])
            continue
        names = [relative.replace("/", "-").replace(".", "-").strip("-") for relative in expected]
        assert [d["metadata"]["name"] for d in read_files([str(root)])] == names, subset
        assert [d["metadata"]["name"] for d in read_sources([str(root)])] == names, subset


def test_a_missing_source_is_one_error_naming_it_for_both(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(SourceError, match="nope: no such file or directory"):
        read_files([missing])
    with pytest.raises(StreamError, match="nope: no such file or directory"):
        read_sources([missing])
