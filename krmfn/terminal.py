"""Text made safe for a terminal or a CI log: the one writer every text line krmfn prints goes through.

Messages carry strings krmfn does not control: a pod's termination message and log lines, the API
server's error messages, an object's conditions, names and annotations from the manifests, a kustomize
error. Printed raw, such a string can move the cursor or rewrite the screen (escape sequences), start a
new line that looks like krmfn's own, hide text (bidirectional overrides), or run a CI workflow command
(GitHub's ``::add-mask::``, ``::stop-commands::``, Azure's ``##vso[...]``, TeamCity's ``##teamcity[``).

``safe_line`` keeps printable text as it is and writes everything else as a visible escape:

- control characters (C0, DEL, C1), Unicode format characters (bidi overrides, zero-width), line and
  paragraph separators and lone surrogates become ``\\n``, ``\\t``, ``\\xNN`` or ``\\uNNNN``;
- ``::`` and ``##`` become ``:\\x3a`` and ``#\\x23``, so no workflow command can form, wherever a CI
  system looks for one.

The escapes are for reading, not for parsing back (a backslash is not doubled). ``-o json`` needs none
of this: JSON escapes control characters itself, and a JSON line starts with ``{``.

``write_line`` (one message) and ``write_lines`` (a block: a usage text, a plan, a report) are how every
command writes text for a person, on stderr or stdout: the functions' results and errors, ``krmfn
render``, ``export``, ``schema``, ``version``, the top-level CLI, argparse's usage errors
(``cliargs.CommandParser``) and the runner's printers. The only other writes to a terminal are the
machine-readable outputs (the YAML stream or ResourceList, ``-o json`` lines), constant help pages, and
the live view's own cursor movement (``clear_lines``); tests/test_terminal_writer.py lists them and
fails on any new one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Protocol


class Stream(Protocol):
    """Where a line goes: a text file, stderr, a StringIO."""

    def write(self, text: str, /) -> object: ...


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_COMMAND_MARKS = re.compile(r"::|##")


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe_line(text: str) -> str:
    """``text`` as one line that cannot control the terminal or a CI runner."""
    if text.isprintable() and "::" not in text and "##" not in text:
        return text  # the common case, without a look at each character
    out = "".join(
        _escape(char) if unicodedata.category(char) in _UNSAFE_CATEGORIES else char for char in text
    )
    return _COMMAND_MARKS.sub(lambda m: m.group()[0] + _escape(m.group()[1]), out)


def write_line(stream: Stream, text: str, prefix: str = "", suffix: str = "") -> None:
    """Write ``text`` escaped, as exactly one line. ``prefix``/``suffix`` are krmfn's own terminal
    sequences around it (a diff's colours), never text from anywhere else."""
    stream.write(prefix + safe_line(text) + suffix + "\n")


def lines_text(lines: Iterable[str]) -> str:
    """Each of ``lines`` escaped and ended: a block whose line breaks are krmfn's own."""
    return "".join(safe_line(line) + "\n" for line in lines)


def write_lines(stream: Stream, text: str | Iterable[str]) -> None:
    """Write a block (a usage text, a plan, a report) line by line, each line escaped. A string is cut
    at ``\n`` only: any other line break in it (``\r``, U+2028) is escaped like the rest."""
    lines = text.removesuffix("\n").split("\n") if isinstance(text, str) else text
    stream.write(lines_text(lines))


def clear_lines(stream: Stream, count: int) -> None:
    """Move the cursor up ``count`` lines and clear to the end of the screen (the live view's redraw)."""
    if count:
        stream.write(f"\x1b[{count}F\x1b[J")


def cut(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters, ``...`` ending one that was longer: for a text from the
    cluster shown in a line (a record, a holder), whose length nothing else bounds."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def fit(text: str, columns: int) -> str:
    """``text`` cut to fill at most ``columns`` terminal cells (a wide character takes two), ending
    ``...`` when cut: a line redrawn in place must not wrap, or the cursor moves up fewer lines than
    were drawn and every redraw leaves a copy behind."""
    if len(text) * 2 <= columns:
        return text  # fits even if every character is wide
    widths = [2 if unicodedata.east_asian_width(char) in ("W", "F") else 1 for char in text]
    if sum(widths) <= columns:
        return text
    room, used, end = columns - 3, 0, 0
    while end < len(text) and used + widths[end] <= room:
        used += widths[end]
        end += 1
    return text[:end] + "..." if columns >= 3 else ""
