"""The one argument parser style for the commands: argparse, with a usage error as one line.

argparse prints its usage block and exits; krmfn's commands report a usage error as one line on stderr
and exit 2 (like every other input error), so ``Parser.error`` raises ``UsageError`` for the caller to
print. Abbreviated flags are off: ``--in`` must not silently mean ``--in-place``.

argparse is built only when there are arguments to parse: kpt and kustomize start a function with none,
and argparse (with gettext, and shutil for its help formatter) costs ~6 ms of every start. With no
arguments every destination takes its default, exactly what argparse gives (tests/test_function_cli_args.py
checks both ways agree for every parser).

``CommandParser`` is argparse as the runner and ``krmfn export`` use it (its usage block and help
pages), with everything argparse prints written through ``terminal.write_lines``: a usage error quotes
the command line (``invalid choice: '...'``), which CI often builds from branch or tag names. It is
built on first use too, so importing this module does not import argparse.
"""

from __future__ import annotations

import contextlib
import sys
from functools import cache
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn

from krmfn.terminal import Stream, write_line, write_lines

if TYPE_CHECKING:
    import argparse


class UsageError(Exception):
    """A command line argparse refused; the message is one line."""


class Parser:
    def __init__(self, prog: str) -> None:
        self.prog = prog
        self.arguments: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.add_argument("-h", "--help", action="store_true")

    def add_argument(self, *names: str, **options: Any) -> None:
        self.arguments.append((names, options))

    def parse(self, args: list[str]) -> SimpleNamespace:
        """Like ``parse_args``, with an unknown argument named as such."""
        if not args:
            return SimpleNamespace(**{_dest(n, o): _default(o) for n, o in self.arguments})
        parsed, unknown = self.argparse().parse_known_args(args)
        if unknown:
            raise UsageError(f"unknown argument {unknown[0]!r}")
        return SimpleNamespace(**vars(parsed))

    def argparse(self) -> argparse.ArgumentParser:
        import argparse

        class _Parser(argparse.ArgumentParser):
            def error(self, message: str) -> NoReturn:
                raise UsageError(message.replace("\n", " "))

        parser = _Parser(prog=self.prog, add_help=False, allow_abbrev=False)
        for names, options in self.arguments:
            parser.add_argument(*names, **options)
        return parser


def _dest(names: tuple[str, ...], options: dict[str, Any]) -> str:
    if "dest" in options:
        return str(options["dest"])
    longs = [n for n in names if n.startswith("--")]
    return (longs or list(names))[0].lstrip("-").replace("-", "_")


def _default(options: dict[str, Any]) -> Any:
    if "default" in options:
        return options["default"]
    if options.get("action") == "store_true":
        return False
    return [] if options.get("nargs") == "*" else None


def CommandParser(**options: Any) -> argparse.ArgumentParser:  # named as the class it builds
    """argparse, every line it prints (usage, errors, help) escaped; the error is one line, whatever line
    breaks the arguments it quotes hold."""
    return _command_parser()(**options)


@cache
def _command_parser() -> type[argparse.ArgumentParser]:
    import argparse

    class _CommandParser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            self.print_usage(sys.stderr)
            write_line(sys.stderr, f"{self.prog}: error: {message}")
            raise SystemExit(2)

        def _print_message(self, message: str, file: Stream | None = None) -> None:
            if message:
                with contextlib.suppress(AttributeError, OSError):  # as argparse: no stderr to write to
                    write_lines(file or sys.stderr, message)

    return _CommandParser
