"""Reading a rendered stream: ``-f FILE``, ``-f DIR`` (its YAML files, recursively, by name) or ``-f -``.

Lists (``v1/List``, a kpt ``ResourceList``) are unwrapped, empty documents dropped, and local-config
objects (Kptfile, functionConfigs, kpt inventory files) left out: none of them belongs in a cluster.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from krmfn.errors import InputError
from krmfn.kobj import Obj, is_local_config
from krmfn.yamlio import load_all_fast

_SUFFIXES = (".yaml", ".yml")


def read_sources(sources: Iterable[str]) -> list[Obj]:
    objects: list[Obj] = []
    for source in sources:
        for name, text in _texts(source):
            try:
                objects.extend(_objects(load_all_fast(text), name))
            except InputError as err:
                if str(err).startswith(f"{name}: "):
                    raise
                raise type(err)(f"{name}: {err}") from None
    return objects


def _texts(source: str) -> Iterator[tuple[str, str]]:
    if source == "-":
        yield "<stdin>", sys.stdin.read()
        return
    path = Path(source)
    if path.is_dir():
        files = sorted(
            p
            for p in path.rglob("*")
            if p.suffix in _SUFFIXES and p.is_file() and not _hidden(p.relative_to(path))
        )
        if not files:
            raise InputError(f"{source}: no .yaml or .yml files in this directory")
        for file in files:
            yield str(file), _read(file)
    else:
        yield source, _read(path)


def _hidden(relative: Path) -> bool:
    # .expected/, .git/ and the like hold test data or tooling state, never resources.
    return any(part.startswith(".") for part in relative.parts)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"{path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None


def _objects(docs: Iterable[Any], where: str) -> Iterator[Obj]:
    for position, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(
                f"{where}: document {position} is a {type(doc).__name__}, not a Kubernetes object"
            )
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            yield from _objects(doc["items"], f"{where}: document {position}")
            continue
        for required in ("apiVersion", "kind"):
            if not isinstance(doc.get(required), str) or not doc[required]:
                raise InputError(f"{where}: document {position} has no {required}")
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise InputError(f"{where}: document {position} ({doc['kind']}) has no metadata.name")
        if not is_local_config(doc):
            yield doc
