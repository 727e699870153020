"""The one argument parser style for the commands: argparse, with a usage error as one line.

argparse prints its usage block and exits; krmfn's commands report a usage error as one line on stderr
and exit 2 (like every other input error), so ``Parser.error`` raises ``UsageError`` for the caller to
print. Abbreviated flags are off: ``--in`` must not silently mean ``--in-place``.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


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
