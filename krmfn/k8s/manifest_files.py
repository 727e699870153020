"""The one reader of a rendered stream, for ``krmfn apply|plan -f`` and ``krmfn export -f``.

A source is ``-`` (stdin), a file, or a directory: its ``.yaml``, ``.yml`` and ``.json`` files,
recursively, in path order, leaving out hidden paths (``.expected/``, ``.git/``: test data and tool
state) and kustomization files (they describe a build, they are not resources). Recursive because a
rendered kpt package keeps its subpackages in subdirectories; ``kubectl apply -f DIR -R`` reads it alike.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from krmfn.errors import InputError, LimitExceededError
from krmfn.limits import Limits
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
    """The manifest files under ``directory``, in path order. An entry that cannot be read is an error,
    never left out: a missing manifest would be pruned (pathlib's glob passes over unreadable
    directories, and ``is_file`` over broken links, without a word)."""

    def fail(err: OSError) -> None:
        raise StreamError(f"{err.filename}: cannot list the directory: {_reason(err)}")

    found: list[Path] = []
    for root, dirs, files in os.walk(directory, onerror=fail):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # hidden: test data, tool state
        for name in files:
            path = Path(root) / name
            if name.startswith(".") or path.suffix not in SUFFIXES or name in BUILD_FILES:
                continue
            what = path_kind(path)
            if what != REGULAR:
                raise StreamError(f"{path}: {what}, not a manifest file; remove it or point -f at the files")
            found.append(path)
    return sorted(found)


REGULAR = "a regular file"
DIRECTORY = "a directory"
_STREAMS = ("a named pipe (FIFO)", "a character device")
"""Read as a stream, once: process substitution (``-f <(kustomize build)``), ``/dev/stdin``, ``/dev/null``."""


def path_kind(path: Path) -> str:
    """What ``path`` is, in words (``a regular file``, ``a socket``, ``a symbolic link to 'x', which does
    not exist``, ``no such file or directory`` ...), for messages that must say why it cannot be read."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)!r}, which does not exist"
        return "no such file or directory"
    except NotADirectoryError:
        return "no such file or directory (a part of the path before the last is not a directory)"
    except OSError as err:  # a loop of links, a directory on the way that may not be searched
        return f"not reachable: {_reason(err)}"
    for test, words in (
        (stat.S_ISREG, REGULAR),
        (stat.S_ISDIR, DIRECTORY),
        (stat.S_ISFIFO, _STREAMS[0]),
        (stat.S_ISCHR, _STREAMS[1]),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def _texts(source: str) -> Iterator[tuple[str, str]]:
    if source == "-":
        yield "<stdin>", sys.stdin.read()
        return
    path = Path(source)
    what = path_kind(path)
    if what == DIRECTORY:
        files = files_of(path)
        if not files:
            raise StreamError(f"{source}: no .yaml, .yml or .json files in the directory")
        for file in files:
            yield str(file), _read(file)
    elif what == REGULAR or what in _STREAMS:
        yield source, _read(path)
    elif missing(what):
        raise StreamError(f"{source}: {what}")
    else:
        raise StreamError(f"{source}: {what}, not a file or directory of manifests")


def _reason(err: OSError) -> str:
    return (err.strerror or type(err).__name__).lower()


def _read(path: Path) -> str:
    """The text of ``path``, read at most to the input limit: a character device or a pipe may never end
    (``/dev/zero``)."""
    try:
        limit = Limits.from_env().max_bytes
        with path.open("rb") as file:
            data = file.read(limit + 1)
    except OSError as err:
        raise StreamError(f"{path}: cannot read: {_reason(err)}") from None
    except LimitExceededError as err:
        raise StreamError(f"{path}: {err}") from None
    if len(data) > limit:
        raise StreamError(f"{path}: over the limit of {limit} bytes (KRMFN_MAX_INPUT_BYTES)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise StreamError(f"{path}: not UTF-8 text") from None


def no_objects(named: str) -> str:
    """What every command says of an input without objects (``named``: ``describe(sources)``, or the
    command that gave it), the output of a failed render in a pipe without ``set -o pipefail``."""
    return (
        f"the input ({named}) is empty: it has no objects to deploy; did the command that rendered it fail? "
        "(set -o pipefail makes a pipe fail with it)"
    )


def describe(sources: Iterable[str]) -> str:
    """The sources as messages name them; a pipe or device says so (``/dev/null, a character device``)."""
    return ", ".join(_named(source) for source in sources)


def _named(source: str) -> str:
    if source == "-":
        return "standard input"
    what = path_kind(Path(source))
    return f"{source}, {what}" if what in _STREAMS else source


def missing(what: str) -> bool:
    """Whether ``path_kind``'s answer says the path is not there (rather than something else)."""
    return what.startswith(("no such", "not reachable", "a symbolic link"))
