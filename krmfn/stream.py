"""The one reader of a rendered stream, for ``krmfn apply|plan -f`` and ``krmfn export -f``.

A source is ``-`` (stdin), a file, or a directory: its ``.yaml``, ``.yml`` and ``.json`` files,
recursively, in path order, leaving out hidden paths (``.expected/``, ``.git/``: test data and tool
state) and kustomization files (they describe a build, they are not resources). Recursive because a
rendered kpt package keeps its subpackages in subdirectories; ``kubectl apply -f DIR -R`` reads it alike.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from krmfn.errors import InputError
from krmfn.yaml.io import load_all_fast

SUFFIXES = (".yaml", ".yml", ".json")
BUILD_FILES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})


class StreamError(InputError):
    """A source that cannot be read or parsed; the message starts with the file (or ``<stdin>``)."""


def read_documents(sources: Iterable[str]) -> Iterator[tuple[str, list[Any]]]:
    """``(where, documents)`` for every file of every source, in order."""
    for source in sources:
        for where, text in _texts(source):
            try:
                yield where, list(load_all_fast(text))
            except InputError as err:
                raise StreamError(f"{where}: {err}") from None


def files_of(directory: Path) -> list[Path]:
    return sorted(
        path
        for path in directory.rglob("*")
        if path.suffix in SUFFIXES
        and path.name not in BUILD_FILES
        and not _hidden(path.relative_to(directory))
        and path.is_file()
    )


def _texts(source: str) -> Iterator[tuple[str, str]]:
    if source == "-":
        yield "<stdin>", sys.stdin.read()
        return
    path = Path(source)
    if path.is_dir():
        files = files_of(path)
        if not files:
            raise StreamError(f"{source}: no .yaml, .yml or .json files in the directory")
        for file in files:
            yield str(file), _read(file)
    elif path.is_file():
        yield source, _read(path)
    else:
        raise StreamError(f"{source}: no such file or directory")


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise StreamError(f"{path}: cannot read: {err.strerror or type(err).__name__}") from None
    except UnicodeDecodeError:
        raise StreamError(f"{path}: not UTF-8 text") from None
