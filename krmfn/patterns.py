"""Regular expressions compiled when first used, not when their module is imported.

A function's start imports every module on its path. A pattern the run never needs (a Go number form
when no written string starts with a digit, PyYAML's reader's when libyaml reads) should not cost its
compile: most cost tens of microseconds, some a millisecond, PyYAML's reader's twelve.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, cast


class Deferred:
    """Stands for ``re.compile(pattern, flags)`` and compiles it on the first call."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            # UNICODE is implied for a str pattern: the same pattern, under a key of re's cache that no
            # stand-in holds (krmfn.yaml puts one there while PyYAML is imported).
            flags = self.flags if self.flags & re.ASCII else self.flags | re.UNICODE
            self._compiled = re.compile(self.pattern, flags)
        return self._compiled

    def match(self, text: str, *args: int) -> re.Match[str] | None:
        return self.compiled().match(text, *args)

    def fullmatch(self, text: str, *args: int) -> re.Match[str] | None:
        return self.compiled().fullmatch(text, *args)

    def search(self, text: str, *args: int) -> re.Match[str] | None:
        return self.compiled().search(text, *args)

    def finditer(self, text: str, *args: int) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(text, *args)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self.compiled().sub(repl, text, count)

    def __getattr__(self, name: str) -> Any:  # the rest of re.Pattern's interface
        return getattr(self.compiled(), name)


def deferred(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern with ``re.Pattern``'s interface, compiled on first use."""
    return cast("re.Pattern[str]", Deferred(pattern, flags))
