"""A kpt package's files, opened so that the path checked is the path opened.

Paths come from the objects (``config.kubernetes.io/path``, ``internal.config.kubernetes.io/path``,
``internal.config.kubernetes.io/package-path``), and functions rewrite them: render-inputs renders a
file named ``<< inputs.f >>.yaml`` into whatever an input says. A path is hostile. Checking
``normpath(root / path)`` and then opening ``root / path`` let ``link/../x.yaml`` (``link -> ..``) pass
the check as ``root/x.yaml`` while the kernel followed ``link`` out of the package.

So a path is first cut into components (``parts``: relative, no ``..``, no NUL, only names the reader
reads), and then every open walks those components from the package root's descriptor, each directory
opened ``O_DIRECTORY | O_NOFOLLOW`` and the file ``O_NOFOLLOW``: the kernel itself refuses a symlink
anywhere on the way, so no check can disagree with the open that follows it, and a directory swapped
for a symlink between the two fails the open instead of being followed. Reads, writes, listings and
removals all go through here; nothing in the package is ever opened by a path string.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

Parts = tuple[str, ...]

RESOURCE_SUFFIXES = (".yaml", ".yml")
KPTFILE = "Kptfile"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_MAX_NAME = 255


class UnsafePackagePath(ValueError):
    """A path krmfn render will not open; ``str()`` says why, without quoting the path."""


class Tree:
    """The files under one package root (the directory ``krmfn render`` was given, resolved)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def kind(self, parts: Parts) -> str | None:
        """``"dir"``, ``"file"`` (regular), ``"link"``, ``"other"``, or None when absent. Directories on
        the way must be real directories (UnsafePackagePath otherwise)."""
        if not parts:
            return "dir"
        with self._directory(parts[:-1]) as fd:
            if fd is None:
                return None
            try:
                found = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
        return _kind(found.st_mode)

    def entries(self, parts: Parts) -> list[tuple[str, str]]:
        """(name, kind) of each entry of directory ``parts``, listed through its descriptor."""
        with self._directory(parts) as fd:
            if fd is None:
                raise FileNotFoundError(errno.ENOENT, "no such directory")
            with os.scandir(fd) as listing:
                return [(entry.name, _entry_kind(entry)) for entry in listing]

    def read_bytes(self, parts: Parts, max_bytes: int) -> bytes | None:
        """At most ``max_bytes + 1`` bytes of regular file ``parts`` (more than ``max_bytes``: the file is
        larger), or None when it is absent."""
        with self._directory(parts[:-1]) as directory:
            if directory is None:
                return None
            try:
                fd = os.open(
                    parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory
                )
            except FileNotFoundError:
                return None
            except OSError as err:
                raise _refused(err) from None
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # a FIFO named x.yaml: a read would block
                raise UnsafePackagePath("not a regular file")
            return file.read(max_bytes + 1)

    def write_text(self, parts: Parts, text: str) -> None:
        """Write regular file ``parts``, creating its directories; a symlink on the way is refused."""
        with self._directory(parts[:-1], create=True) as directory:
            assert directory is not None
            try:
                fd = os.open(parts[-1], _WRITE_FLAGS, 0o666, dir_fd=directory)
            except OSError as err:
                raise _refused(err) from None
        with os.fdopen(fd, "wb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise UnsafePackagePath("not a regular file")
            file.write(text.encode("utf-8"))

    def unlink(self, parts: Parts) -> bool:
        """Remove file ``parts`` (unlink never follows the last component); whether it was there."""
        with self._directory(parts[:-1]) as directory:
            if directory is None:
                return False
            try:
                os.unlink(parts[-1], dir_fd=directory)
            except FileNotFoundError:
                return False
        return True

    @contextmanager
    def _directory(self, parts: Parts, create: bool = False) -> Iterator[int | None]:
        """A descriptor of directory ``parts`` reached from the root without following a symlink; None
        when a component is absent (and ``create`` is false)."""
        fd = os.open(self.root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the root itself is the operator's choice
        try:
            for name in parts:
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        yield None
                        return
                    os.mkdir(name, 0o777, dir_fd=fd)
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as err:
                    raise _refused(err) from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)


def _refused(err: OSError) -> UnsafePackagePath | OSError:
    if err.errno in (errno.ELOOP, errno.ENOTDIR):  # O_NOFOLLOW met a symlink, or a file on the way
        return UnsafePackagePath("through a symlink or a file that is not a directory")
    if err.errno == errno.EISDIR:
        return UnsafePackagePath("a directory")
    return err


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def _entry_kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def parts_of(path: str) -> Parts:
    """The components of a path relative to a package, or UnsafePackagePath: absolute paths, ``..``, NUL and
    names no file system takes are refused; ``.`` and empty components (``a//b``) are dropped, so one
    file has one spelling."""
    if "\x00" in path:
        raise UnsafePackagePath("it holds a NUL character")
    if path.startswith("/"):
        raise UnsafePackagePath("it is absolute")
    parts = tuple(part for part in path.split("/") if part not in ("", "."))
    if not parts:
        raise UnsafePackagePath("it names no file")
    if ".." in parts:
        raise UnsafePackagePath("it climbs with ..")
    if any(len(part.encode("utf-8", "surrogateescape")) > _MAX_NAME for part in parts):
        raise UnsafePackagePath(f"a component is over {_MAX_NAME} bytes")
    return parts


def writable(parts: Parts) -> None:
    """Only what the reader reads may be written: a ``*.yaml``, ``*.yml`` or ``Kptfile``, outside
    ``.git`` (a hook there is a script git runs)."""
    if ".git" in parts:
        raise UnsafePackagePath("it is inside .git")
    name = parts[-1]
    if name != KPTFILE and not name.endswith(RESOURCE_SUFFIXES):
        raise UnsafePackagePath("krmfn render writes only *.yaml, *.yml and Kptfile files")


def under(root: Path, package: Path) -> Parts:
    """``package`` (a package-path annotation) as components below ``root``, or UnsafePackagePath."""
    if not package.is_absolute():
        raise UnsafePackagePath("its package path is not absolute")
    if package == root:
        return ()
    if not package.is_relative_to(root):
        raise UnsafePackagePath("its package path is outside the package")
    return parts_of(package.relative_to(root).as_posix())
