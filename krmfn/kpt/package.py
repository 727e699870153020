"""Read and write a kpt package's resources the way ``kpt fn render`` does, for ``krmfn render``.

Reading: every ``*.yaml``, ``*.yml`` and ``Kptfile`` under the package directory in ``filepath.Walk``
order (hidden directories included, ``.git`` excluded), minus what ``.krmignore`` lists and minus
nested packages (directories with their own Kptfile), which are read as packages of their own. Each
object gets kpt's bookkeeping annotations (path, index, package-path, seqindent, ids) so a function
sees exactly what it would see under kpt.

Writing: the objects of each file, in index order, with the bookkeeping annotations removed, one
``---``-separated document each, every sequence indented as the document was (kpt's ``seqindent``);
files left without objects are removed and new objects go to ``<kind>_<name>.yaml``, as kpt does.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from krmfn.errors import KrmfnError, PipelineError
from krmfn.k8s.kobj import Obj, annotations_of, is_kustomization, ref_of
from krmfn.kpt import packagefs
from krmfn.kpt.annotations import (
    I_PATH,
    SEQINDENT,
    annotate,
    index_of,
    location,
    seq_indent,
    strip,
)
from krmfn.kpt.layout import as_kpt_writes, laid_out_as_kpt_writes
from krmfn.kpt.packagefs import Parts, Tree, UnsafePackagePath
from krmfn.limits import Limits
from krmfn.sdk.resourcelist import item_problem
from krmfn.yaml import edit as yamledit
from krmfn.yaml.io import Mode, check_size, dump_fast, load_all_fast

KPTFILE = packagefs.KPTFILE
SUFFIXES = packagefs.RESOURCE_SUFFIXES


@dataclass
class Package:
    directory: Path
    kptfile: Obj
    files: list[str] = field(default_factory=list)
    """The resource files read, relative to the package, so write-back can remove emptied ones."""
    items: list[Obj] = field(default_factory=list)
    subpackages: list[Package] = field(default_factory=list)
    sources: dict[str, yamledit.Source] = field(default_factory=dict)
    """Each file's text as read (fidelity mode), so write-back edits it instead of re-emitting it."""
    tree: Tree | None = None
    """The files of the top package, every read and write of the tree goes through (krmfn.kpt.packagefs)."""
    prefix: Parts = ()
    """Where this package sits in the tree: its directory's components below the top package."""


def read(directory: Path, mode: Mode, limits: Limits | None = None) -> Package:
    """The package at ``directory`` with its nested packages; a Kptfile is required at the top."""
    if not directory.is_dir():  # the operator's path: followed like any command-line argument
        raise PipelineError(f"{directory}: no Kptfile; krmfn render runs a kpt package's pipeline")
    return _read(Tree(directory.resolve()), (), mode, limits or Limits())


def _read(tree: Tree, prefix: Parts, mode: Mode, limits: Limits) -> Package:
    directory = Path(tree.root, *prefix)
    if _kind(tree, (*prefix, KPTFILE)) != "file":
        raise PipelineError(f"{directory}: no Kptfile; krmfn render runs a kpt package's pipeline")
    package = Package(directory, {}, tree=tree, prefix=prefix)
    for relative, is_package in _walk(tree, prefix, (), _Ignore.of(tree, prefix)):
        if is_package:
            package.subpackages.append(_read(tree, (*prefix, *relative.split("/")), mode, limits))
            continue
        package.files.append(relative)
        package.items.extend(_read_file(package, relative, mode, limits))
    kptfiles = [o for o in package.items if annotations_of(o).get(I_PATH) == KPTFILE]
    if len(kptfiles) != 1 or kptfiles[0].get("kind") != KPTFILE:
        raise PipelineError(f"{directory / KPTFILE}: expected exactly one object of kind Kptfile")
    package.kptfile = kptfiles[0]
    return package


def scan(directory: Path) -> tuple[list[str], list[str]]:
    """The resource files of the package at ``directory`` and its direct nested packages, unread."""
    files: list[str] = []
    nested: list[str] = []
    tree = Tree(directory.resolve())
    for relative, is_package in _walk(tree, (), (), _Ignore.of(tree, ())):
        (nested if is_package else files).append(relative)
    return files, nested


def all_items(package: Package) -> list[Obj]:
    """What kpt passes to a package's pipeline: its subpackages' (rendered) items first, then its own."""
    return [item for sub in package.subpackages for item in all_items(sub)] + package.items


def _kind(tree: Tree, parts: Parts) -> str | None:
    try:
        return tree.kind(parts)
    except (UnsafePackagePath, OSError) as err:
        raise PipelineError(f"{Path(tree.root, *parts)}: cannot read: {_why(err)}") from None


def _why(err: Exception) -> str:
    return str(err) if isinstance(err, UnsafePackagePath) else getattr(err, "strerror", None) or str(err)


def _walk(
    tree: Tree, prefix: Parts, relative: Parts, ignore: _Ignore, ignored: bool = False
) -> Iterator[tuple[str, bool]]:
    """(path relative to the package, is a nested package) in Go's filepath.Walk order.

    Like kpt, .krmignore hides files and directories from this package's resources but not the nested
    packages below an ignored directory. Listed through directory descriptors (krmfn.kpt.packagefs), so a
    directory swapped for a symlink after the listing is refused, never followed.
    """
    try:
        entries = tree.entries((*prefix, *relative))
    except (UnsafePackagePath, OSError) as err:
        raise PipelineError(f"{Path(tree.root, *prefix, *relative)}: cannot read: {_why(err)}") from None
    for name, kind in sorted(entries, key=lambda e: e[0].encode("utf-8", "surrogateescape")):
        parts = (*relative, name)
        path = "/".join(parts)
        if kind == "link":
            # kpt skips symlinked directories (and krmfn symlinked files too): one could point at a
            # Secret outside the package, which would then be printed, or rewritten in place.
            continue
        if kind == "dir":
            if name == ".git":
                continue
            if _kind(tree, (*prefix, *parts, KPTFILE)) == "file":
                yield path, True
            else:
                yield from _walk(tree, prefix, parts, ignore, ignored or ignore.ignored(path, True))
            continue
        if ignored or ignore.ignored(path, False):
            continue
        if name == KPTFILE or name.endswith(SUFFIXES):
            if kind != "file":  # a FIFO would block the read, a device is no package file
                raise PipelineError(f"{Path(tree.root, *prefix, *parts)}: not a regular file")
            yield path, False
        elif name.endswith(".json"):
            raise PipelineError(
                f"{Path(tree.root, *prefix, *parts)}: JSON resource files are not supported by krmfn "
                "render; use `kpt fn render` or convert the file to YAML"
            )


@dataclass(frozen=True)
class _Ignore:
    """The gitignore subset kpt packages use in ``.krmignore``: globs, ``dir/``, ``/anchored``."""

    patterns: tuple[tuple[str, bool, bool], ...]

    @classmethod
    def of(cls, tree: Tree, prefix: Parts) -> _Ignore:
        parts = (*prefix, ".krmignore")
        path = Path(tree.root, *parts)
        text = _read_text(tree, parts, Limits()) if _kind(tree, parts) == "file" else ""
        patterns = []
        for line in (text or "").splitlines():
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if text.startswith("!"):
                raise PipelineError(f"{path}: negated patterns ({text}) are not supported by krmfn render")
            dir_only = text.endswith("/")
            text = text.strip("/")
            anchored = "/" in text or line.strip().startswith("/")
            patterns.append((text, dir_only, anchored))
        return cls(tuple(patterns))

    def ignored(self, relative: str, is_dir: bool) -> bool:
        parts = relative.split("/")
        for pattern, dir_only, anchored in self.patterns:
            if dir_only and not is_dir:
                continue
            if anchored:
                if fnmatch.fnmatchcase(relative, pattern):
                    return True
            elif fnmatch.fnmatchcase(parts[-1], pattern):
                return True
        return False


def _read_text(tree: Tree, parts: Parts, limits: Limits) -> str | None:
    """A file's text, None when absent. Read by descriptor (krmfn.kpt.packagefs); at most 4 bytes a
    character (UTF-8's most) of the input limit are read, check_size then counts characters."""
    path = Path(tree.root, *parts)
    try:
        data = tree.read_bytes(parts, 4 * limits.max_bytes)
    except (UnsafePackagePath, OSError) as err:
        raise PipelineError(f"{path}: cannot read: {_why(err)}") from None
    if data is None:
        return None
    if len(data) > 4 * limits.max_bytes:
        raise PipelineError(
            f"{path}: over {limits.max_bytes} characters, the input limit (KRMFN_MAX_INPUT_BYTES)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise PipelineError(f"{path}: not valid UTF-8: byte 0x{data[err.start]:02x} on line {line}") from None


def _holds(tree: Tree, parts: Parts, text: str) -> bool:
    """Whether file ``parts`` holds exactly ``text`` (a larger file does not; nothing past it is read)."""
    data = text.encode("utf-8")
    try:
        return tree.read_bytes(parts, len(data)) == data
    except (UnsafePackagePath, OSError) as err:
        raise PipelineError(f"{Path(tree.root, *parts)}: cannot read: {_why(err)}") from None


def _read_file(package: Package, relative: str, mode: Mode, limits: Limits) -> list[Obj]:
    package_dir = package.directory
    path = package_dir / relative
    assert package.tree is not None
    text = _read_text(package.tree, (*package.prefix, *relative.split("/")), limits)
    if text is None:
        raise PipelineError(f"{path}: cannot read: it went away while the package was read")
    try:
        check_size(text, limits)  # the faithful writer reads at the fast path's cost: one limit
    except KrmfnError as err:
        raise PipelineError(f"{path}: {err}") from None
    chunks = _documents(text)
    try:
        if mode == "fast":
            docs = list(load_all_fast(text, limits))
        else:
            source = yamledit.load(text, limits)
            package.sources[relative] = source
            docs = [d.value for d in source.documents]
    except (KrmfnError, PipelineError) as err:
        raise PipelineError(f"{path}: {err}") from None
    items: list[Obj] = []
    present = [d for d in docs if d is not None]
    for index, doc in enumerate(present):
        # kpt reads every YAML document; one that is not a KRM object (kustomization.yaml) is kept as is.
        problem = "" if is_kustomization(doc) else item_problem(doc)
        if problem:
            raise PipelineError(f"{path}: document {index}: {problem}")
        chunk = chunks[index] if len(chunks) == len(present) else text
        annotate(doc, relative, index, package_dir, seq_indent(chunk))
        items.append(doc)
    return items


def _documents(text: str) -> list[str]:
    """The non-empty documents of a stream as text, to measure each one's sequence indentation."""
    chunks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("---"):
            chunks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    chunks.append("\n".join(current))
    return [c for c in chunks if any(ln.strip() and not ln.lstrip().startswith("#") for ln in c.splitlines())]


Warn = Callable[[str], None]


def write(root: Package, items: list[Obj], mode: Mode, warn: Warn | None = None) -> list[Path]:
    """Write ``items`` back into the package tree; returns the files written or removed. Every target
    is checked before anything is written: inside the package root, through no symlink, a file the
    reader would read; and each is then opened by that same checked path (krmfn.kpt.packagefs).

    In fidelity mode a file whose objects were read from it is its own text with only the changes
    spliced in (see ``krmfn.yaml.edit``): untouched files and documents stay byte for byte. A
    document the splice could not edit is written anew, and ``warn`` gets a line naming it."""
    tree = root.tree or Tree(root.directory)
    files: dict[Parts, list[tuple[int, str, Obj]]] = {}
    for obj in items:
        target = _target(tree, root.directory, obj)
        indent = str(annotations_of(obj).get(SEQINDENT) or "compact")
        files.setdefault(target, []).append((index_of(obj), indent, obj))
    origins = _origins(root) if mode == "fidelity" else {}
    touched: list[Path] = []
    for target, entries in files.items():
        entries.sort(key=lambda e: e[0])
        objects = [(indent, obj, origins.get(id(obj))) for _, indent, obj in entries]
        for _, obj, _ in objects:
            strip(obj)
        if mode == "fidelity":
            text = _file_text(objects, kpt_format=True, warn=warn, file="/".join(target))
        else:
            text = "---\n".join(dump_one(obj, indent, mode) for indent, obj, _ in objects)
        if not _holds(tree, target, text):
            _apply(tree, target, functools.partial(tree.write_text, target, text))
            touched.append(Path(tree.root, *target))
    for read_package in _packages(root):
        for relative in read_package.files:
            parts = (*read_package.prefix, *relative.split("/"))
            if parts not in files:
                _apply(tree, parts, functools.partial(tree.unlink, parts))
                touched.append(Path(tree.root, *parts))
    return touched


def _apply(tree: Tree, parts: Parts, action: Callable[[], object]) -> None:
    try:
        action()
    except (UnsafePackagePath, OSError) as err:
        raise PipelineError(f"{Path(tree.root, *parts)}: cannot write: {_why(err)}") from None


def _target(tree: Tree, root: Path, obj: Obj) -> Parts:
    """The components below the top package of the file an object goes to. The path and package-path
    annotations come from the objects, which functions may rewrite: a target outside the root, through
    a symlink (which kpt never reads), or that the reader would not read is refused."""
    package, relative, _ = location(obj, root)
    try:
        parts = (*packagefs.under(root, package), *packagefs.parts_of(relative))
        packagefs.writable(parts)
        # Every directory on the way must be one, the file a regular file or absent.
        for depth in range(1, len(parts) + 1):
            kind = tree.kind(parts[:depth])
            if kind is None:
                break
            if kind == "link":
                raise UnsafePackagePath("through a symlink")
            if kind != ("file" if depth == len(parts) else "dir"):
                raise UnsafePackagePath("through something that is not a directory or not a regular file")
    except (UnsafePackagePath, OSError) as err:
        raise PipelineError(
            f"{str(ref_of(obj)).strip()}: its file {relative!r} is refused ({_why(err)}); krmfn render "
            f"writes only inside the package {root}, never through symlinks"
        ) from None
    return parts


Origin = tuple[yamledit.Source, int]


def _origins(root: Package) -> dict[int, Origin]:
    """Each object read in fidelity mode -> (its file's source, its document number), by identity:
    functions edit the objects they are given in place."""
    found: dict[int, Origin] = {}
    for package in _packages(root):
        for source in package.sources.values():
            for number, doc in enumerate(source.documents):
                if isinstance(doc.value, dict):
                    found[id(doc.value)] = (source, number)
    return found


def _file_text(
    objects: list[tuple[str, Obj, Origin | None]],
    *,
    kpt_format: bool = False,
    warn: Warn | None = None,
    file: str = "",
) -> str:
    """A file's new text: each object's own document edited, new objects written in the file's style.

    ``kpt_format``: as ``kpt fn render`` writes the file. kpt re-emits every document of a package
    through go-yaml v3, untouched ones too: one space before a line comment, ``- x`` for ``-   x``,
    head comments at the next node's indentation. ``krmfn render --in-place`` promises kpt's bytes, so
    each document is passed through the round-trip emitter configured as kpt writes (krmfn.yaml.rt):
    the splice keeps what changed minimal, the emitter lays it out as kpt would."""
    writers: dict[int, yamledit.Writer] = {}
    texts: list[str] = []
    used: set[tuple[int, int]] = set()
    for indent, obj, origin in objects:
        spliced = False
        if origin is not None and (id(origin[0]), origin[1]) not in used:
            used.add((id(origin[0]), origin[1]))
            writer = writers.setdefault(id(origin[0]), yamledit.Writer(origin[0]))
            text = writer.document(origin[1], obj)
            spliced = True
        else:
            text = yamledit.dump_new(obj, wide=indent == "wide")
        if kpt_format:
            # go-yaml writes "\n" line breaks whatever the file had (YAML reads "\r\n" as one break).
            text = text.replace("\r\n", "\n")
            # A spliced document keeps its file's layout: where that is already kpt's (a package kpt or
            # krmfn rendered before), the slow round-trip emitter is skipped.
            if spliced and laid_out_as_kpt_writes(text):
                first, _, rest = text.partition("\n")
                text = rest if first.rstrip() == "---" else text  # the files are joined with "---" below
            else:
                text = as_kpt_writes(text, indent)
        texts.append(text)
    for writer in writers.values():
        for fallback in writer.fallen:
            if warn is not None:
                where = f"{file}: " if file else ""
                warn(f"{where}{str(ref_of(fallback.value)).strip()}: {fallback.message}")
    return "---\n".join(texts) if kpt_format else yamledit.join(texts)


def stream_text(root: Package, objects: list[Obj], warn: Warn | None = None) -> str:
    """Objects (bookkeeping stripped) as one stream, each in its own document's text where it has one."""
    origins = _origins(root)
    return _file_text([("compact", obj, origins.get(id(obj))) for obj in objects], warn=warn)


def _packages(root: Package) -> Iterator[Package]:
    yield root
    for sub in root.subpackages:
        yield from _packages(sub)


def dump_one(doc: Obj, indent: str, mode: Mode) -> str:
    """One object written anew (the fast path; fidelity mode writes objects from their own text)."""
    if mode == "fast":
        return dump_fast(doc)
    return yamledit.dump_new(doc, wide=indent == "wide")
