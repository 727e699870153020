"""What the kernel saw happen to files: inotify, to prove a run opened, read or wrote nothing somewhere.

A test cannot tell from a file's bytes that it was read, and as root no permission stops a read; the
kernel's own notifications can. ``Watch`` watches directories (not recursively: each one named), and
``events()`` returns every open, read, write, create, delete and move seen since, as (directory, name,
what). Linux only; a machine without inotify fails the test that needs it, loudly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
from pathlib import Path
from types import TracebackType

IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x1, 0x2, 0x4, 0x8
IN_OPEN, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x20, 0x40, 0x80, 0x100, 0x200
IN_ISDIR = 0x40000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
EVERYTHING = IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_OPEN | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
NAMES = {
    IN_ACCESS: "read", IN_MODIFY: "write", IN_ATTRIB: "attrib", IN_OPEN: "open", IN_MOVED_FROM: "move-from",
    IN_MOVED_TO: "move-to", IN_CREATE: "create", IN_DELETE: "delete",
}  # fmt: skip
_HEADER = struct.Struct("iIII")

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class Watch:
    def __init__(self, directories: list[Path]) -> None:
        self.fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed: this test needs Linux inotify")
        self.dirs: dict[int, Path] = {}
        for directory in directories:
            wd = _libc.inotify_add_watch(self.fd, os.fsencode(directory), EVERYTHING)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {directory} failed")
            self.dirs[wd] = directory

    def events(self) -> list[tuple[Path, str, str]]:
        found: list[tuple[Path, str, str]] = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except OSError as err:
                if err.errno == errno.EAGAIN:
                    return found
                raise
            at = 0
            while at < len(data):
                wd, mask, _, length = _HEADER.unpack_from(data, at)
                name = (
                    data[at + _HEADER.size : at + _HEADER.size + length]
                    .rstrip(b"\0")
                    .decode(errors="replace")
                )
                at += _HEADER.size + length
                what = ",".join(text for bit, text in NAMES.items() if mask & bit)
                if what:
                    found.append((self.dirs.get(wd, Path("?")), name, what))

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
