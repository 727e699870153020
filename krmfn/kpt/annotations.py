"""kpt's bookkeeping annotations on each object of a package: set as kpt sets them when a file is read
(path, index, package-path, the file's sequence indentation, the ids each pipeline numbers), read back to
place an object when it is written (a function may have moved it), and stripped before it is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from krmfn.k8s.kobj import MAX_INDEX, Obj, annotations_of, is_kustomization, metadata
from krmfn.numbers import whole

PATH = "config.kubernetes.io/path"
INDEX = "config.kubernetes.io/index"
INTERNAL = "internal.config.kubernetes.io/"
I_PATH = INTERNAL + "path"
I_INDEX = INTERNAL + "index"
PACKAGE_PATH = INTERNAL + "package-path"
SEQINDENT = INTERNAL + "seqindent"
IDS = (INTERNAL + "annotations-migration-resource-id", INTERNAL + "id", "config.k8s.io/id")
BOOKKEEPING = (PATH, INDEX, I_PATH, I_INDEX, PACKAGE_PATH, SEQINDENT, *IDS)


def seq_indent(text: str) -> str:
    """kyaml's DeriveSeqIndentStyle: how the first block sequence under a key is indented."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        before, dash, _ = line.partition("- ")
        if not dash or before.strip(" "):
            continue
        key_line = _key_line_before(lines, i)
        if not key_line:
            continue
        key_indent = len(key_line) - len(key_line.lstrip(" "))
        trimmed = key_line.strip(" ")
        if trimmed.count(":") != 1 or not trimmed.endswith(":"):
            continue  # a wrapped string that happens to hold "- ", not a sequence
        if len(before) == key_indent:
            return "compact"
        if len(before) - key_indent == 2:
            return "wide"
    return "compact"


def _key_line_before(lines: list[str], index: int) -> str:
    for line in reversed(lines[:index]):
        if line.strip(" ").startswith("#"):
            continue
        return line.partition("#")[0]
    return ""


def annotate(obj: Obj, relative: str, index: int, package_dir: Path, indent: str) -> None:
    notes = metadata(obj).get("annotations")
    if not isinstance(notes, dict):
        notes = _mapping_like(obj)
        metadata(obj)["annotations"] = notes
    values = {
        INDEX: str(index),
        PATH: relative,
        I_INDEX: str(index),
        PACKAGE_PATH: str(package_dir),
        I_PATH: relative,
        SEQINDENT: indent,
    }
    for key, value in values.items():
        notes[key] = value


def assign_ids(items: list[Obj]) -> None:
    """kpt numbers the objects it passes to each pipeline; functions may rely on the ids being there."""
    for number, obj in enumerate(items):
        notes = metadata(obj).setdefault("annotations", _mapping_like(obj))
        for key, value in zip(IDS, (str(number), str(number + 1), str(number + 1)), strict=True):
            notes[key] = value


def _mapping_like(obj: Obj) -> dict[str, Any]:
    return type(obj)() if type(obj) is not dict else {}


def strip(obj: Obj) -> Obj:
    """Remove kpt's bookkeeping annotations (and an annotations mapping they leave empty)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        notes = meta.get("annotations")
        if isinstance(notes, dict):
            for key in BOOKKEEPING:
                notes.pop(key, None)
            if not notes:
                del meta["annotations"]
        if not meta and is_kustomization(obj):  # kpt gave a kustomization a metadata it did not have
            del obj["metadata"]
    return obj


def location(obj: Obj, default_package: Path) -> tuple[Path, str, int]:
    """(package directory, file, index) an object is written to; a function may have moved it."""
    notes = annotations_of(obj)
    package = Path(str(notes.get(PACKAGE_PATH) or default_package))
    path, internal = notes.get(PATH), notes.get(I_PATH)
    # kpt accepts a change to either annotation; when both are present and differ, the legacy one won.
    chosen = str(path if path is not None else internal or "")
    index_text = str(notes.get(INDEX, notes.get(I_INDEX, "0")))
    index = whole(index_text, MAX_INDEX) or 0
    if not chosen:
        meta = obj.get("metadata") or {}
        chosen = f"{str(obj.get('kind', '')).lower()}_{meta.get('name', '')}.yaml"
        namespace = meta.get("namespace")
        if namespace:
            chosen = f"{namespace}/{chosen}"
    return package, chosen, index


def index_of(obj: Obj) -> int:
    return location(obj, Path())[2]
