"""The one argument parser style for the commands: argparse, with a usage error as one line.

argparse prints its usage block and exits; krmfn's commands report a usage error as one line on stderr
and exit 2 (like every other input error), so ``Parser.error`` raises ``UsageError`` for the caller to
print. Abbreviated flags are off: ``--in`` must not silently mean ``--in-place``.

``CommandParser`` is argparse as the runner and ``krmfn export`` use it (its usage block and help
pages), with everything argparse prints written through ``terminal.write_lines``: a usage error quotes
the command line (``invalid choice: '...'``), which CI often builds from branch or tag names.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import NoReturn

from krmfn.terminal import Stream, write_line, write_lines


class UsageError(Exception):
    """A command line argparse refused; the message is one line."""


class Parser(argparse.ArgumentParser):
    def __init__(self, prog: str) -> None:
        super().__init__(prog=prog, add_help=False, allow_abbrev=False)
        self.add_argument("-h", "--help", action="store_true")

    def error(self, message: str) -> NoReturn:
        raise UsageError(message.replace("\n", " "))

    def parse(self, args: list[str]) -> argparse.Namespace:
        """Like ``parse_args``, with an unknown argument named as such."""
        parsed, unknown = self.parse_known_args(args)
        if unknown:
            raise UsageError(f"unknown argument {unknown[0]!r}")
        return parsed


class CommandParser(argparse.ArgumentParser):
    """argparse, every line it prints (usage, errors, help) escaped; the error is one line, whatever line
    breaks the arguments it quotes hold."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        write_line(sys.stderr, f"{self.prog}: error: {message}")
        raise SystemExit(2)

    def _print_message(self, message: str, file: Stream | None = None) -> None:
        if message:
            with contextlib.suppress(AttributeError, OSError):  # as argparse: no stderr to write to
                write_lines(file or sys.stderr, message)
